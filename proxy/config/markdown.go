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
	b.WriteString("\nEvery setting of Redis 7.0.15 is accepted in a config file, on the command line and by " +
		"CONFIG SET/GET, with Redis's names, aliases, types, bounds, defaults and error messages " +
		"(checked against a real redis-server by TestRegistryMatchesRedis). Defaults differ from Redis's " +
		"only where a row says so. Hidden settings are returned by CONFIG GET only when named exactly. " +
		"A config file setting one of the settings with no effect is accepted; Spillway lists them in " +
		"one log line at start.\n")
	section := func(title string, keep func(*setting) bool) {
		b.WriteString("\n### " + title + "\n\n")
		b.WriteString("| Setting | Default | CONFIG SET | Meaning |\n")
		b.WriteString("| --- | --- | --- | --- |\n")
		for _, s := range registry {
			if !keep(s) {
				continue
			}
			name := "`" + s.name + "`"
			if s.alias != "" {
				name += " (alias `" + s.alias + "`)"
			}
			if s.hidden {
				name += " (hidden)"
			}
			def := "`" + s.def + "`"
			switch {
			case s.name == "maxmemory":
				def = "¼ of physical memory"
			case s.name == "replicaof":
				def = `""`
			case s.def == "":
				def = `""`
			}
			set := "yes"
			switch s.mut {
			case immutable:
				set = "no"
			case protected:
				set = "no (protected)"
			case fixed:
				set = "current value only"
			}
			b.WriteString("| " + name + " | " + def + " | " + set + " | " +
				strings.ReplaceAll(s.doc, "|", `\|`) + " |\n")
		}
	}
	section("Spillway settings", func(s *setting) bool { return s.spillway })
	section("Redis settings Spillway acts on", func(s *setting) bool { return !s.spillway && s.effect })
	section("Redis settings stored and reported, with no effect",
		func(s *setting) bool { return !s.spillway && !s.effect })
	b.WriteString("\nMemory values take Redis's units: b, k (1000), kb (1024), m, mb, g, gb, case-insensitive. " +
		"CONFIG GET reports them in bytes.\n")
	return b.String()
}
