package config

import (
	"strings"
)

// SettingsMarkdown returns a markdown table of every setting: name (and
// alias), default, whether CONFIG SET can change it, and its meaning.
// SETTINGS.md is this output (kept in sync by TestSettingsMarkdown).
func SettingsMarkdown() string {
	var b strings.Builder
	b.WriteString("<!-- Generated from proxy/config's registry: go test ./proxy/config -run TestSettingsMarkdown -update -->\n")
	section := func(title string, own bool) {
		b.WriteString("\n### " + title + "\n\n")
		b.WriteString("| Setting | Default | CONFIG SET | Meaning |\n")
		b.WriteString("| --- | --- | --- | --- |\n")
		for _, s := range registry {
			if s.spillway != own {
				continue
			}
			name := "`" + s.name + "`"
			if s.alias != "" {
				name += " (alias `" + s.alias + "`)"
			}
			def := "`" + s.def + "`"
			switch {
			case s.name == "maxmemory":
				def = "¼ of physical memory"
			case s.def == "":
				def = `""`
			}
			set := "yes"
			if s.mut != mutable {
				set = "no"
			}
			b.WriteString("| " + name + " | " + def + " | " + set + " | " +
				strings.ReplaceAll(s.doc, "|", `\|`) + " |\n")
		}
	}
	section("Spillway settings", true)
	section("Redis-compatible settings (stored and reported; most have no effect)", false)
	b.WriteString("\nMemory values take Redis's units: b, k (1000), kb (1024), m, mb, g, gb, case-insensitive. " +
		"CONFIG GET reports them in bytes.\n")
	return b.String()
}
