package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The layout rules of ARCHITECTURE.md, checked: which project packages each
// package may import, and the size limits (hand-written files of at most
// 800 lines, folders of at most 25 non-test Go files).

const module = "github.com/spillway/spillway/"

// importRules maps a package (or, ending in "/...", a tree) to the project
// packages it may import, as prefixes; "" allows nothing of the project.
var importRules = map[string][]string{
	"codec":            {""},
	"coldstore":        {"codec"},
	"tiering/...":      {"codec", "coldstore", "tiering"},
	"proxy/cstr":       {""},
	"proxy/rawio":      {""},
	"proxy/rdb":        {""},
	"proxy/hll":        {""},
	"proxy/geohash":    {""},
	"proxy/slowlog":    {""},
	"proxy/latency":    {""},
	"proxy/resp":       {"proxy/cstr"},
	"proxy/strops":     {"proxy/cstr", "proxy/resp"},
	"proxy/cmdtable":   {"proxy/cstr", "proxy/resp"},
	"proxy/config":     {"proxy/cstr"},
	"proxy/pubsub":     {"proxy/cstr"},
	"proxy/tracking":   {"proxy/cstr"},
	"proxy/acl":        {"proxy/cmdtable", "proxy/cstr"},
	"proxy/tlsconf":    {"proxy/config", "proxy/cstr"},
	"proxy/metrics":    {"coldstore"},
	"proxy/script/...": {"proxy/script", "proxy/cmdtable", "proxy/cstr", "proxy/rdb", "proxy/resp"},
	// Upstream mode's script users: ACL rules out, upstream connections.
	"proxy/upstream/aclmirror": {"proxy/acl", "proxy/upstream/link"},
	// RDB files: the snapshot in, the value encodings of proxy/rdb.
	"proxy/rdbfile": {"codec", "tiering", "proxy/rdb", "proxy/cstr"},
	// Replication's master state: the stream as bytes, no server, no engine.
	"proxy/repl": {"proxy/rdb", "proxy/cstr"},
	// Replication's replica side: the master state it relays, RDB loading,
	// the engine; the server is reached through its Host functions.
	"proxy/replica": {"proxy/repl", "proxy/rdbfile", "tiering"},
	// The command library sees the handler contract and the engine, never
	// a front's internals or upstream mode.
	"proxy/commands": {"proxy/server", "proxy/acl", "proxy/resp", "proxy/cstr", "proxy/strops", "proxy/cmdtable", "proxy/hll", "proxy/geohash", "proxy/rdb", "proxy/streams", "codec", "tiering"},
	// The stream commands: the command library's rules, for one family.
	"proxy/streams": {"proxy/server", "proxy/resp", "proxy/cstr", "proxy/strops", "proxy/rdb", "proxy/rdbfile", "codec", "tiering"},
}

// forbidden lists imports no package of a tree may have.
var forbidden = map[string][]string{
	// The embedded server knows neither the command library nor
	// upstream mode: cmd/spillway wires them to it.
	"proxy/server/...": {"proxy/commands", "proxy/upstream"},
	// The upstream connection code moves bytes; it knows no front.
	"proxy/upstream/link": {"proxy/server", "proxy/commands"},
	"tiering/...":         {"proxy", "cmd", "integration"},
}

func projectImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		var imps []string
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				imps = append(imps, strings.TrimPrefix(imp, module))
			}
		}
		pkgs[strings.TrimPrefix(f[0], module)] = imps
	}
	return pkgs
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// covers reports whether rule (a package, or a tree ending in "/...")
// covers pkg.
func covers(rule, pkg string) bool {
	if tree, ok := strings.CutSuffix(rule, "/..."); ok {
		return pkg == tree || strings.HasPrefix(pkg, tree+"/")
	}
	return pkg == rule
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

func TestImportRules(t *testing.T) {
	pkgs := projectImports(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for pkg, imps := range pkgs {
		for rule, allowed := range importRules {
			if !covers(rule, pkg) {
				continue
			}
			for _, imp := range imps {
				ok := false
				for _, a := range allowed {
					ok = ok || (a != "" && under(imp, a))
				}
				if !ok {
					t.Errorf("%s imports %s; ARCHITECTURE.md allows it only %v", pkg, imp, allowed)
				}
			}
		}
		for rule, denied := range forbidden {
			if !covers(rule, pkg) {
				continue
			}
			for _, imp := range imps {
				for _, d := range denied {
					if under(imp, d) {
						t.Errorf("%s imports %s, which ARCHITECTURE.md forbids", pkg, imp)
					}
				}
			}
		}
	}
}

// TestCoversRule keeps the rule matcher honest: a rule that matched
// nothing would make TestImportRules pass vacuously.
func TestCoversRule(t *testing.T) {
	pkgs := projectImports(t)
	for rule := range importRules {
		n := 0
		for pkg := range pkgs {
			if covers(rule, pkg) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("import rule %q covers no package", rule)
		}
	}
}

const (
	maxFileLines  = 800
	maxDirSources = 25
)

func TestSizeLimits(t *testing.T) {
	root := repoRoot(t)
	sources := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "data") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if !strings.HasSuffix(path, "_test.go") {
			sources[filepath.Dir(rel)]++
		}
		if bytes.Contains(b[:min(len(b), 512)], []byte("Code generated")) {
			return nil // generated: exempt
		}
		if n := bytes.Count(b, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines; hand-written files stay under %d", rel, n, maxFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) == 0 {
		t.Fatal("no Go sources found")
	}
	for dir, n := range sources {
		if n > maxDirSources {
			t.Errorf("%s has %d non-test Go files; a package folder holds at most %d", dir, n, maxDirSources)
		}
	}
}
