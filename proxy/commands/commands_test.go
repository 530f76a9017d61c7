package commands_test

// Data-driven command tests: every file testdata/<family>.txt is a list
// of commands and the replies Redis 7.0 gives them, run in process
// against the command layer (server.Local: no socket) in three tiering
// modes, which must all give the expected replies:
//
//   - hot: a hot budget big enough for everything;
//   - tiny: a hot budget of a few KB, so keys are demoted by the LRU;
//   - cold: the tiny budget, and every key demoted after every command,
//     so each command finds its keys in the cold store.
//
// `go test ./proxy/commands -run TestCommands -update` starts a real
// redis-server (on PATH) and rewrites the expected replies from its
// answers, then checks Spillway against them.
//
// File format (line by line):
//
//	# a comment                   kept as is
//	(a blank line)                kept as is; ends a case (as do a
//	                              comment and the next command)
//	proto 3                       HELLO 3 (or 2) on both sides, reply unchecked
//	> SET k "a b" 'c d'           a command, split as redis-cli does
//	> @sort SMEMBERS s            @modifiers first; see sortSpec
//	+OK                           the expected reply, one line per element
//
// A reply is rendered one element per line, aggregates' elements indented
// by two spaces under their header:
//
//	+simple  -error  :integer  $"bulk"  $nil  *nil  _  ,double  #t  (bignum
//	=txt "verbatim"  !"blob error"  *N / %N / ~N / >N / |N  (aggregates)
//
// Bulk strings are quoted as redis-cli quotes them (\n, \r, \t, \", \\,
// \xHH for other bytes).

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/integration/harness"
	"github.com/spillway/spillway/proxy/commands"
	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/tiering"
)

var update = flag.Bool("update", false, "rewrite testdata's expected replies from a real redis-server")

// tinyBudget is the hot budget of the tiny and cold modes.
const tinyBudget = 4 << 10

type mode struct {
	name   string
	budget int64
	// demoteAll: every key is demoted after every command.
	demoteAll bool
}

var modes = []mode{
	{"hot", 64 << 20, false},
	{"tiny", tinyBudget, false},
	{"cold", tinyBudget, true},
}

// item is one part of a file: verbatim lines (comments, blank lines,
// directives) or a case.
type item struct {
	verbatim string // the line, when not a case
	proto    int    // a proto directive's version (0: none)
	c        *tcase
}

type tcase struct {
	line   int    // the command's line number
	src    string // the command line as written
	args   [][]byte
	sort   sortSpec
	expect []string
}

// sortSpec says which aggregate of a reply Redis leaves in no particular
// order: @sort (the reply's elements), @sort[i] (element i's), with /2
// after either to sort pairs (a flat field/value list). Maps and
// attributes are always sorted by pairs.
type sortSpec struct {
	on    bool
	path  int // -1: the reply itself; i: its element i
	group int
}

func parseSort(mod string) (sortSpec, error) {
	s := sortSpec{on: true, path: -1, group: 1}
	rest := strings.TrimPrefix(mod, "@sort")
	if g, ok := strings.CutSuffix(rest, "/2"); ok {
		s.group, rest = 2, g
	}
	if rest != "" {
		if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
			return s, fmt.Errorf("bad modifier %q", mod)
		}
		i, err := strconv.Atoi(rest[1 : len(rest)-1])
		if err != nil {
			return s, fmt.Errorf("bad modifier %q", mod)
		}
		s.path = i
	}
	return s, nil
}

func parseFile(path string) ([]item, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var items []item
	var cur *tcase
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		n := i + 1
		switch {
		case strings.HasPrefix(line, ">"):
			args, err := splitArgs(strings.TrimSpace(line[1:]))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			c := &tcase{line: n, src: line}
			for len(args) > 0 && strings.HasPrefix(string(args[0]), "@") {
				if !strings.HasPrefix(string(args[0]), "@sort") {
					return nil, fmt.Errorf("%s:%d: unknown modifier %q", path, n, args[0])
				}
				if c.sort, err = parseSort(string(args[0])); err != nil {
					return nil, fmt.Errorf("%s:%d: %v", path, n, err)
				}
				args = args[1:]
			}
			if len(args) == 0 {
				return nil, fmt.Errorf("%s:%d: no command", path, n)
			}
			c.args = args
			cur = c
			items = append(items, item{c: c})
		case line == "" || strings.HasPrefix(line, "#"):
			cur = nil
			items = append(items, item{verbatim: line})
		case strings.HasPrefix(line, "proto "):
			cur = nil
			v, err := strconv.Atoi(strings.TrimSpace(line[len("proto "):]))
			if err != nil || (v != 2 && v != 3) {
				return nil, fmt.Errorf("%s:%d: bad directive %q", path, n, line)
			}
			items = append(items, item{verbatim: line, proto: v})
		case cur != nil:
			cur.expect = append(cur.expect, line)
		default:
			return nil, fmt.Errorf("%s:%d: a reply line outside a case: %q", path, n, line)
		}
	}
	return items, nil
}

func writeFile(path string, items []item) error {
	var b strings.Builder
	for _, it := range items {
		if it.c == nil {
			b.WriteString(it.verbatim + "\n")
			continue
		}
		b.WriteString(it.c.src + "\n")
		for _, l := range it.c.expect {
			b.WriteString(l + "\n")
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// splitArgs splits a command line as redis-cli does (Redis's
// sdssplitargs, cstr.SplitArgsInPlace).
func splitArgs(line string) ([][]byte, error) {
	args, ok := cstr.SplitArgsInPlace([]byte(line), nil)
	if !ok {
		return nil, errors.New("unbalanced quotes, or a closing quote not followed by a space")
	}
	return args, nil
}

// node is a parsed RESP reply.
type node struct {
	typ  byte
	text string // the line after the type byte, or a bulk's bytes
	null bool
	kids []node
}

// readReply reads one RESP2 or RESP3 reply.
func readReply(r *bufio.Reader) (node, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return node{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return node{}, fmt.Errorf("bad reply line %q", line)
	}
	n := node{typ: line[0], text: line[1 : len(line)-2]}
	switch n.typ {
	case '+', '-', ':', ',', '#', '(', '_':
		return n, nil
	case '$', '!', '=':
		size, err := strconv.Atoi(n.text)
		if err != nil {
			return n, fmt.Errorf("bad length %q", line)
		}
		if size < 0 {
			n.null, n.text = true, ""
			return n, nil
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return n, err
		}
		n.text = string(buf[:size])
		return n, nil
	case '*', '%', '~', '>', '|':
		count, err := strconv.Atoi(n.text)
		if err != nil {
			return n, fmt.Errorf("bad count %q", line)
		}
		if count < 0 {
			n.null = true
			return n, nil
		}
		if n.typ == '%' || n.typ == '|' {
			count *= 2
		}
		for range count {
			k, err := readReply(r)
			if err != nil {
				return n, err
			}
			n.kids = append(n.kids, k)
		}
		if n.typ == '|' { // an attribute precedes the reply it is about
			k, err := readReply(r)
			if err != nil {
				return n, err
			}
			n.kids = append(n.kids, k)
		}
		return n, nil
	}
	return n, fmt.Errorf("unknown reply type %q", line)
}

// quote renders b as redis-cli does (sdscatrepr).
func quote(b string) string {
	var s strings.Builder
	s.WriteByte('"')
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '\\', '"':
			s.WriteByte('\\')
			s.WriteByte(c)
		case '\n':
			s.WriteString(`\n`)
		case '\r':
			s.WriteString(`\r`)
		case '\t':
			s.WriteString(`\t`)
		case '\a':
			s.WriteString(`\a`)
		case '\b':
			s.WriteString(`\b`)
		default:
			if c >= 0x20 && c < 0x7f {
				s.WriteByte(c)
			} else {
				fmt.Fprintf(&s, `\x%02x`, c)
			}
		}
	}
	s.WriteByte('"')
	return s.String()
}

// render returns n's lines, indented by indent.
func render(n node, indent string) []string {
	switch n.typ {
	case '$', '!':
		if n.null {
			return []string{indent + string(n.typ) + "nil"}
		}
		return []string{indent + string(n.typ) + quote(n.text)}
	case '=':
		format, body, _ := strings.Cut(n.text, ":")
		return []string{indent + "=" + format + " " + quote(body)}
	case '*', '%', '~', '>', '|':
		if n.null {
			return []string{indent + string(n.typ) + "nil"}
		}
		count := len(n.kids)
		if n.typ == '%' {
			count /= 2
		}
		if n.typ == '|' {
			count = (count - 1) / 2
		}
		out := []string{indent + string(n.typ) + strconv.Itoa(count)}
		for _, k := range n.kids {
			out = append(out, render(k, indent+"  ")...)
		}
		return out
	}
	return []string{indent + string(n.typ) + n.text}
}

// sortKids orders n's elements (in groups of group) by their rendering.
func sortKids(n *node, group int) {
	if n.typ == '%' {
		group = 2
	}
	if len(n.kids)%group != 0 {
		return
	}
	type g struct {
		key  string
		kids []node
	}
	var gs []g
	for i := 0; i < len(n.kids); i += group {
		var lines []string
		for _, k := range n.kids[i : i+group] {
			lines = append(lines, render(k, "")...)
		}
		gs = append(gs, g{strings.Join(lines, "\n"), n.kids[i : i+group]})
	}
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].key < gs[j].key })
	kids := make([]node, 0, len(n.kids))
	for _, x := range gs {
		kids = append(kids, x.kids...)
	}
	n.kids = kids
}

// renderReply parses raw (exactly one reply) and renders it, sorted as s
// says.
func renderReply(raw []byte, s sortSpec) ([]string, error) {
	r := bufio.NewReader(bytes.NewReader(raw))
	n, err := readReply(r)
	if err != nil {
		return nil, fmt.Errorf("%v in %q", err, raw)
	}
	if r.Buffered() > 0 {
		rest, _ := io.ReadAll(r)
		return nil, fmt.Errorf("more than one reply: %q after the first", rest)
	}
	applySort(&n, s)
	return render(n, ""), nil
}

func applySort(n *node, s sortSpec) {
	if !s.on {
		return
	}
	if s.path >= 0 {
		if s.path < len(n.kids) {
			sortKids(&n.kids[s.path], s.group)
		}
		return
	}
	sortKids(n, s.group)
}

// runner runs commands somewhere and returns one raw reply per command.
type runner interface {
	do(args [][]byte) ([]byte, error)
}

type localRunner struct {
	l      *server.Local
	engine *tiering.Engine
	mode   mode
}

func (r *localRunner) do(args [][]byte) ([]byte, error) {
	out := r.l.Do(args...)
	if r.mode.demoteAll {
		r.engine.SetHotBudget(0) // demotes every key
		r.engine.SetHotBudget(r.mode.budget)
	}
	return out, nil
}

// redisRunner talks to a real redis-server.
type redisRunner struct {
	nc net.Conn
	r  *resp.ReplyReader
}

func (r *redisRunner) do(args [][]byte) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	r.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.nc.Write(b.Bytes()); err != nil {
		return nil, err
	}
	raw, err := r.r.Read()
	return bytes.Clone(raw), err
}

// hello switches a runner's protocol.
func hello(r runner, proto int) error {
	out, err := r.do([][]byte{[]byte("HELLO"), []byte(strconv.Itoa(proto))})
	if err != nil {
		return err
	}
	if len(out) == 0 || out[0] == '-' {
		return fmt.Errorf("HELLO %d: %q", proto, out)
	}
	return nil
}

// runFile runs a file's cases on r; check, if set, is called with each
// case's rendered reply (or the error rendering it).
func runFile(r runner, items []item, check func(c *tcase, got []string, err error)) error {
	if _, err := r.do([][]byte{[]byte("FLUSHALL")}); err != nil {
		return err
	}
	for _, it := range items {
		if it.proto != 0 {
			if err := hello(r, it.proto); err != nil {
				return err
			}
		}
		if it.c == nil {
			continue
		}
		raw, err := r.do(it.c.args)
		if err != nil {
			return fmt.Errorf("line %d: %v", it.c.line, err)
		}
		got, err := renderReply(raw, it.c.sort)
		check(it.c, got, err)
	}
	return nil
}

// openLocal opens an engine in a temporary directory and a server over
// it with the command library, not listening.
func openLocal(t testing.TB, m mode) (*server.Server, *tiering.Engine) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cold, err := coldstore.Open(coldstore.Options{Dir: t.TempDir(), CacheBytes: 1 << 20, MemTableBytes: 1 << 20, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	e, err := tiering.Open(cold, tiering.Options{
		Databases:        cfg.Databases(),
		HotBudget:        m.budget,
		PromoteMinHits:   cfg.PromoteMinHits(),
		ColdReadMaxBytes: cfg.ColdReadMaxBytes(),
		Logger:           log,
	})
	if err != nil {
		cold.Close()
		t.Fatal(err)
	}
	s := server.NewServer(cfg, e, log, commands.Table())
	t.Cleanup(func() {
		s.Close()
		e.Close()
		cold.Close()
	})
	return s, e
}

func TestCommands(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	if *update {
		updateFiles(t, files)
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s, e := openLocal(t, m)
			for _, f := range files {
				name := strings.TrimSuffix(filepath.Base(f), ".txt")
				t.Run(name, func(t *testing.T) {
					items, err := parseFile(f)
					if err != nil {
						t.Fatal(err)
					}
					l := s.NewLocal()
					defer l.Close()
					n := 0
					start := time.Now()
					err = runFile(&localRunner{l: l, engine: e, mode: m}, items, func(c *tcase, got []string, err error) {
						n++
						if err != nil {
							t.Errorf("%s:%d: %s\n  %v", f, c.line, c.src, err)
							return
						}
						if strings.Join(got, "\n") != strings.Join(c.expect, "\n") {
							t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", f, c.line, c.src,
								indent(got), indent(c.expect))
						}
					})
					if err != nil {
						t.Fatal(err)
					}
					if n > 0 {
						d := time.Since(start)
						t.Logf("%d cases in %v, %v a case", n, d.Round(time.Microsecond), (d / time.Duration(n)).Round(100*time.Nanosecond))
					}
				})
			}
			t.Logf("engine: %d demotions, %d promotions, %d cold reads",
				e.Stats.Demotions.Load(), e.Stats.Promotions.Load(), e.Stats.ColdReads.Load())
		})
	}
}

func indent(lines []string) string {
	return "    " + strings.Join(lines, "\n    ")
}

// updateFiles rewrites every file's expected replies from a real
// redis-server's.
func updateFiles(t *testing.T, files []string) {
	rs := harness.StartRedis(t)
	for _, f := range files {
		items, err := parseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := net.Dial("tcp", rs.Addr())
		if err != nil {
			t.Fatal(err)
		}
		r := &redisRunner{nc: nc, r: resp.NewReplyReader(nc)}
		err = runFile(r, items, func(c *tcase, got []string, err error) {
			if err != nil {
				t.Fatalf("%s:%d: %s: %v", f, c.line, c.src, err)
			}
			c.expect = got
		})
		nc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := writeFile(f, items); err != nil {
			t.Fatal(err)
		}
	}
}
