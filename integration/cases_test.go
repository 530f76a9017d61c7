package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// A case file (testdata/diff/*.txt) holds one command per line in
// redis-cli quoting. Blank lines and lines starting with '#' are ignored.
// A line may start with directives:
//
//	@lists CMD ...   run only when the subject has lists
//	@zsets CMD ...   run only when the subject has sorted sets
//	@resp2 CMD ...   run only over RESP2 (@resp3 likewise)
//	@sleep MS        pause MS milliseconds (lets short expiries pass)
//
// Each file runs on a fresh, flushed connection pair, once over RESP2 and
// once over RESP3, and every reply is compared as in the random runs.
type caseLine struct {
	file  string
	line  int
	args  []string
	lists bool
	zsets bool
	proto int // 0: both
	sleep time.Duration
}

func loadCaseFile(path string) ([]caseLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open case file: %w", err)
	}
	defer f.Close()
	var out []caseLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cl := caseLine{file: filepath.Base(path), line: n}
		for strings.HasPrefix(text, "@") {
			word, rest, _ := strings.Cut(text, " ")
			rest = strings.TrimSpace(rest)
			switch word {
			case "@lists":
				cl.lists = true
			case "@zsets":
				cl.zsets = true
			case "@resp2":
				cl.proto = 2
			case "@resp3":
				cl.proto = 3
			case "@sleep":
				ms, err := strconv.Atoi(rest)
				if err != nil || ms <= 0 || ms > 2000 {
					return nil, fmt.Errorf("%s:%d: bad @sleep %q", path, n, rest)
				}
				cl.sleep = time.Duration(ms) * time.Millisecond
				rest = ""
			default:
				return nil, fmt.Errorf("%s:%d: unknown directive %s", path, n, word)
			}
			text = rest
		}
		if cl.sleep == 0 {
			args, err := splitArgs(text)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			if len(args) == 0 {
				return nil, fmt.Errorf("%s:%d: directive without a command", path, n)
			}
			cl.args = args
		}
		out = append(out, cl)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

func caseFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "diff", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files in testdata/diff (err %v)", err)
	}
	return files
}

// TestDiffCasesRedisVsRedis runs the hand-written cases against two
// redis-servers: it checks the files parse and that each case is
// deterministic (same bytes from two servers).
func TestDiffCasesRedisVsRedis(t *testing.T) {
	a, b := harness.StartRedis(t), harness.StartRedis(t)
	runCaseFiles(t, a.Addr(), b.Addr(), "redis-2", true, true)
}

// TestDiffCasesSpillway runs the hand-written cases against Redis and
// Spillway.
func TestDiffCasesSpillway(t *testing.T) {
	ref := harness.StartRedis(t)
	addr, name := subject(t)
	runCaseFiles(t, ref.Addr(), addr, name, listsForSpillway(t), zsetsForSpillway(t))
}

func runCaseFiles(t *testing.T, refAddr, subAddr, subName string, lists, zsets bool) {
	for _, path := range caseFiles(t) {
		lines, err := loadCaseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/resp%d", filepath.Base(path), proto), func(t *testing.T) {
				runCases(t, refAddr, subAddr, subName, proto, lists, zsets, lines)
			})
		}
	}
}

func runCases(t *testing.T, refAddr, subAddr, subName string, proto int, lists, zsets bool, lines []caseLine) {
	ref := harness.MustDial(t, refAddr)
	sub := harness.MustDial(t, subAddr)
	setupPair(t, ref, sub, proto)
	hist := &history{max: 20}
	transcript := os.Getenv("SPILLWAY_CASES_LOG") == "1"
	ran := 0
	for _, cl := range lines {
		if (cl.lists && !lists) || (cl.zsets && !zsets) || (cl.proto != 0 && cl.proto != proto) {
			continue
		}
		if cl.sleep > 0 {
			pause(cl.sleep)
			continue
		}
		a, b := exchange(ref, sub, cl.args)
		if ok, why := compareReplies(cl.args, a, b); !ok {
			t.Fatalf("case mismatch (%s) at %s:%d (resp%d)\ncommand:  %s\nredis:    %s\n%-9s %s\n"+
				"redis reply:\n%s\n%s reply:\n%s\nearlier lines:\n%s",
				why, cl.file, cl.line, proto, fmtArgs(cl.args), errOr(a), subName+":", errOr(b),
				a.String(), subName, b.String(), hist)
		}
		hist.add("%s:%d %s -> %s", cl.file, cl.line, fmtArgs(cl.args), fmtRaw(a.Raw))
		if transcript {
			t.Logf("%s:%d %s -> %s", cl.file, cl.line, fmtArgs(cl.args), fmtRaw(a.Raw))
		}
		ran++
	}
	if ran == 0 {
		t.Fatal("no case ran")
	}
}

// TestSplitArgs pins the redis-cli quoting the case files use.
func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{in: `SET a b`, want: []string{"SET", "a", "b"}},
		{in: `  SET   a  `, want: []string{"SET", "a"}},
		{in: `SET "a b" 'c d'`, want: []string{"SET", "a b", "c d"}},
		{in: `SET "\x41\x00z" "\n\r\t\"\\"`, want: []string{"SET", "A\x00z", "\n\r\t\"\\"}},
		{in: `SET 'it\'s' ""`, want: []string{"SET", "it's", ""}},
		{in: `SET 'a\nb'`, want: []string{"SET", `a\nb`}},
		{in: `SET a"b"`, want: []string{"SET", "ab"}},
		{in: `SET "a`, err: true},
		{in: `SET 'a`, err: true},
		{in: `SET "a"b`, err: true},
	}
	for _, tt := range tests {
		got, err := splitArgs(tt.in)
		if tt.err {
			if err == nil {
				t.Errorf("splitArgs(%q) = %q, want error", tt.in, got)
			}
			continue
		}
		if err != nil || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestRefusalCases runs testdata/refusals (OOM, NOREPLICAS) against Redis
// and a Spillway of its own (the cases change maxmemory and
// min-replicas-to-write, which the shared subject of the other case files
// must keep).
func TestRefusalCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "refusals", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files in testdata/refusals (err %v)", err)
	}
	ref := harness.StartRedis(t)
	sub := harness.StartSpillway(t, "", "--loglevel", "warning")
	for _, path := range files {
		lines, err := loadCaseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/resp%d", filepath.Base(path), proto), func(t *testing.T) {
				runCases(t, ref.Addr(), sub.Addr(), "spillway", proto, true, true, lines)
			})
		}
	}
}
