// Package config holds Spillway's settings, read and changed the way
// redis-server reads and changes its own: a redis.conf-style file, command
// line overrides (`spillway [configfile] [--name value ...]`), and CONFIG
// GET / SET / REWRITE at run time with Redis 7.0's replies.
//
// Every setting of Redis 7.0.15 is known (registry.go, redis_settings.go:
// names, aliases, types, bounds, defaults, mutability, hidden), with
// Spillway's own; those Spillway does not act on are stored and reported.
// CONFIG SET validates every value before storing any, then runs the apply
// hooks of what changed (RegisterApply), restoring everything if one fails.
//
// A Config is safe for concurrent use. Typed accessors (MaxMemory,
// RequirePass, ...) are one atomic load each and never block.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spillway/spillway/proxy/cstr"
)

// Config is the live configuration of one server.
type Config struct {
	file string // absolute path of the config file, "" if none
	// users are the user directives (Users).
	users [][]string
	// userLines gives CONFIG REWRITE the ACL users (SetUserLines).
	userLines func() []string

	// setMu serialises writers (Set, Rewrite) from validation to the end
	// of their apply hooks.
	setMu sync.Mutex
	// mu gives Get a consistent view: writers swap values under it.
	mu   sync.RWMutex
	vals []atomic.Pointer[value]

	cbMu      sync.Mutex
	callbacks [][]func(string)
	hooks     [][]*applyHook // per setting, the apply hooks of RegisterApply

	// inert lists the settings the config file or command line set that
	// Spillway stores without acting on them.
	inert []string
}

// defaults holds each setting's parsed default. It is computed per Config
// because dir's default is made absolute against the current directory.
func defaultValues() ([]*value, error) {
	vals := make([]*value, numSettings)
	for i, s := range registry {
		v, err := s.parseSet(defaultText(i))
		if err != nil {
			return vals, fmt.Errorf("config: bad default for %s: %w", s.name, err)
		}
		if s.merge != nil {
			v = s.merge(nil, v)
		}
		vals[i] = v
	}
	return vals, nil
}

// defaultText is the default of setting i in CONFIG SET syntax.
func defaultText(i int) string {
	if i == idxMaxMemory {
		return strconv.FormatUint(DefaultMaxMemory(), 10)
	}
	return registry[i].def
}

// Default returns a Config holding every default, with no config file.
func Default() *Config {
	c, err := newConfig("", nil)
	if err != nil { // defaults are constants checked by tests
		panic(err)
	}
	return c
}

func newConfig(file string, vals []*value) (*Config, error) {
	if vals == nil {
		d, err := defaultValues()
		if err != nil {
			return nil, err
		}
		vals = d
	}
	c := &Config{
		file:      file,
		vals:      make([]atomic.Pointer[value], numSettings),
		callbacks: make([][]func(string), numSettings),
		hooks:     make([][]*applyHook, numSettings),
	}
	for i, v := range vals {
		c.vals[i].Store(v)
	}
	return c, nil
}

// ErrHelp and ErrVersion are returned by Parse for `-h`/`--help` and
// `-v`/`--version` given alone, so the caller can print usage or version.
var (
	ErrHelp    = errors.New("config: help requested")
	ErrVersion = errors.New("config: version requested")
)

// ParseError reports a bad directive in the config file or on the command
// line. Its text names the source, line, directive and reason, e.g.
//
//	config: spillway.conf: line 3: maxmemory "abc": argument must be a memory value
type ParseError struct {
	File      string // config file, or "" for the command line
	Line      int    // 1-based line in File; 0 for the command line
	Directive string // the directive as read, arguments quoted
	Err       error  // the reason
}

func (e *ParseError) Error() string {
	where := "command line"
	if e.File != "" {
		where = fmt.Sprintf("%s: line %d", e.File, e.Line)
	}
	return fmt.Sprintf("config: %s: %s: %v", where, e.Directive, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Parse builds a Config from redis-server style arguments (without the
// program name): an optional config file first (any argument not starting
// with '-'), then `--name value...` options that are applied after the file
// and so override it. An option takes every following argument up to the
// next `--name`; the argument right after `--name` is always its value, even
// if it starts with "--" (as in redis-server), except that a bare `--save`
// followed by another option, or last, means `save ""`. One argument holding
// "--name value" is split like a config line.
func Parse(args []string) (*Config, error) {
	if len(args) == 1 {
		switch args[0] {
		case "-h", "--help":
			return nil, ErrHelp
		case "-v", "--version":
			return nil, ErrVersion
		}
	}
	vals, err := defaultValues()
	if err != nil {
		return nil, err
	}
	ld := loader{vals: vals, seen: make([]bool, numSettings)}
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file = args[0]
		args = args[1:]
		if err := ld.loadFile(file); err != nil {
			return nil, err
		}
		if abs, err := filepath.Abs(file); err == nil {
			file = abs
		}
	}
	dirs, err := splitCommandLine(args)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := ld.apply("", 0, d); err != nil {
			return nil, err
		}
	}
	c, err := newConfig(file, vals)
	if err != nil {
		return nil, err
	}
	c.users = ld.users
	for i, seen := range ld.seen {
		if seen && !registry[i].effect {
			c.inert = append(c.inert, registry[i].name)
		}
	}
	return c, nil
}

// Inert returns the names of the settings the config file or command line
// set that Spillway stores and reports without acting on them, in registry
// order, for the start-up log.
func (c *Config) Inert() []string { return c.inert }

// splitCommandLine groups `--name v1 v2 --name2 v` into directives.
func splitCommandLine(args []string) ([][]string, error) {
	var dirs [][]string
	needValue := false // right after a bare --name
	for j, a := range args {
		isName := strings.HasPrefix(a, "--") && len(a) > 2
		switch {
		case a == "-":
			return nil, errors.New("config: reading the configuration from standard input is not supported")
		case isName && needValue && strings.EqualFold(dirs[len(dirs)-1][0], "save"):
			dirs[len(dirs)-1] = append(dirs[len(dirs)-1], "")
			fallthrough
		case isName && !needValue:
			parts, err := splitArgs(a[2:])
			if err != nil || len(parts) == 0 {
				return nil, fmt.Errorf("config: command line: bad option %q", a)
			}
			dirs = append(dirs, parts)
			needValue = len(parts) == 1
		default:
			if len(dirs) == 0 {
				return nil, fmt.Errorf("config: command line: argument %q does not follow a --name", a)
			}
			dirs[len(dirs)-1] = append(dirs[len(dirs)-1], a)
			needValue = false
		}
		if j == len(args)-1 && needValue && strings.EqualFold(dirs[len(dirs)-1][0], "save") {
			dirs[len(dirs)-1] = append(dirs[len(dirs)-1], "")
		}
	}
	return dirs, nil
}

// loader applies directives, in order, to a set of values.
type loader struct {
	vals     []*value
	seen     []bool     // settings a directive set
	saveSeen bool       // save lines accumulate after the first one
	users    [][]string // user directives: name and rules each
	depth    int        // include nesting
}

// maxIncludeDepth bounds include nesting (a file including itself).
const maxIncludeDepth = 16

func (ld *loader) loadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: can't open config file: %w", err)
	}
	ld.depth++
	defer func() { ld.depth-- }()
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.Trim(line, " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		args, err := splitArgs(line)
		if err != nil {
			return &ParseError{File: path, Line: i + 1, Directive: line, Err: err}
		}
		if err := ld.apply(path, i+1, args); err != nil {
			return err
		}
	}
	return nil
}

func (ld *loader) apply(file string, line int, args []string) error {
	name := strings.ToLower(args[0])
	fail := func(err error) error {
		return &ParseError{File: file, Line: line, Directive: directiveString(name, args[1:]), Err: err}
	}
	e, ok := lookup(name)
	switch {
	case ok:
	case name == "include" && len(args) == 2:
		if ld.depth >= maxIncludeDepth {
			return fail(errors.New("includes nested too deeply"))
		}
		return ld.loadFile(args[1])
	case name == "user" && len(args) >= 2:
		// ACL users: the server parses the rules (proxy/acl) at start.
		ld.users = append(ld.users, append([]string(nil), args[1:]...))
		return nil
	case deprecatedDirectives[name] && len(args) == 2:
		return nil // accepted and ignored, as Redis 7.0 does
	case unsupportedDirectives[name] != "":
		return fail(errors.New(unsupportedDirectives[name]))
	default:
		return fail(errors.New("Bad directive or wrong number of arguments"))
	}
	ld.seen[e.idx] = true
	s := registry[e.idx]
	vals := args[1:]
	if s.kind.multiArg() && len(vals) == 1 && vals[0] != "" {
		// One non-empty argument is split like a line, as Redis does
		// (`save "900 1 300 10"`, `--bind "127.0.0.1 -::1"`).
		split, err := splitArgs(vals[0])
		if err != nil {
			return fail(err)
		}
		vals = split
	}
	if e.idx == idxSave {
		// As in Redis, the first save line replaces the default and later
		// ones add to it; save "" clears.
		if ld.saveSeen && !(len(vals) == 1 && vals[0] == "") {
			vals = append(append([]string(nil), ld.vals[idxSave].list...), vals...)
		}
		ld.saveSeen = true
	}
	v, err := s.parseArgs(vals)
	if err != nil {
		return fail(err)
	}
	if m := s.merge; m != nil {
		v = m(ld.vals[e.idx], v)
	}
	ld.vals[e.idx] = v
	return nil
}

// deprecatedDirectives are directives Redis 7.0 accepts with one argument
// and ignores.
var deprecatedDirectives = map[string]bool{
	"list-max-ziplist-entries": true, "list-max-ziplist-value": true, "lua-replicate-commands": true,
}

// unsupportedDirectives are Redis directives that are not settings and
// that Spillway refuses, with the reason.
var unsupportedDirectives = map[string]string{
	"rename-command": "rename-command is not supported by Spillway",
	"loadmodule":     "loadmodule is not supported by Spillway (no modules)",
	"sentinel":       "sentinel is not supported by Spillway",
}

// Users returns the config's user directives, in order: each the user's
// name then its ACL rules, as written (the server validates them).
func (c *Config) Users() [][]string { return c.users }

// File returns the absolute path of the config file, or "" if none.
func (c *Config) File() string { return c.file }

// OnChange registers fn to be called with the new CONFIG GET form of the
// named setting (name or alias) after a Set changes it. Callbacks cannot
// fail: a change that can is an apply hook (RegisterApply). They run
// synchronously in the goroutine calling Set (or SetDeferred's notify
// function), once every apply hook has succeeded, outside any lock of the
// config, in the order the settings were given to Set; a Set that fails
// calls none.
func (c *Config) OnChange(name string, fn func(value string)) error {
	e, ok := lookup(name)
	if !ok {
		return fmt.Errorf("config: OnChange: unknown setting %q", name)
	}
	c.cbMu.Lock()
	c.callbacks[e.idx] = append(c.callbacks[e.idx], fn)
	c.cbMu.Unlock()
	return nil
}

// Value returns the CONFIG GET form of a setting by name or alias.
func (c *Config) Value(name string) (string, bool) {
	e, ok := lookup(name)
	if !ok {
		return "", false
	}
	return c.vals[e.idx].Load().text, true
}

// Get answers CONFIG GET: the name and value of every setting (aliases
// included, as in Redis 7.0) whose name matches at least one of the glob
// patterns, case-insensitively, each setting name once. A pattern without
// '*', '?' or '[' is a name looked up exactly, reported as given (Redis
// replies with the argument), and the only way to read a hidden setting.
// The order is the arguments', then the registry's within a pattern
// (Redis's own order is a hash table's, so clients must not rely on it).
func (c *Config) Get(patterns ...[]byte) [][2]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out [][2]string
	seen := make([]uint8, numSettings) // bit 0: name, bit 1: alias
	add := func(e nameEntry, key string) {
		bit := uint8(1)
		if e.alias {
			bit = 2
		}
		if seen[e.idx]&bit != 0 {
			return
		}
		seen[e.idx] |= bit
		out = append(out, [2]string{key, c.vals[e.idx].Load().text})
	}
	for _, p := range patterns {
		if isLiteralName(p) {
			if e, ok := lookup(string(p)); ok {
				add(e, string(p))
			}
			continue
		}
		for i, s := range registry {
			if s.hidden {
				continue
			}
			if cstr.Match(p, nameBytes[i][0], true) {
				add(nameEntry{idx: i}, s.name)
			}
			if a := nameBytes[i][1]; a != nil && cstr.Match(p, a, true) {
				add(nameEntry{idx: i, alias: true}, s.alias)
			}
		}
	}
	return out
}

// isLiteralName reports whether a CONFIG GET argument is a plain name:
// Redis treats it as a pattern only if it holds '*', '?' or '['.
func isLiteralName(p []byte) bool {
	for _, c := range p {
		if c == '*' || c == '?' || c == '[' {
			return false
		}
	}
	return true
}
