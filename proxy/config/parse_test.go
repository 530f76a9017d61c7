package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// writeConf writes a config file into a temporary directory.
func writeConf(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "spillway.conf")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustValue(t *testing.T, c *Config, name string) string {
	t.Helper()
	v, ok := c.Value(name)
	if !ok {
		t.Fatalf("no setting %q", name)
	}
	return v
}

func TestDefaults(t *testing.T) {
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Port() != 6380 || !reflect.DeepEqual(c.Bind(), []string{"127.0.0.1"}) {
		t.Errorf("port/bind = %d %v", c.Port(), c.Bind())
	}
	wantDir, _ := filepath.Abs("./data")
	if c.Dir() != wantDir {
		t.Errorf("dir = %q, want %q", c.Dir(), wantDir)
	}
	if c.MaxMemory() != int64(DefaultMaxMemory()) || c.MaxMemory() <= 0 {
		t.Errorf("maxmemory = %d, DefaultMaxMemory = %d", c.MaxMemory(), DefaultMaxMemory())
	}
	if c.AppendFsync() != FsyncEverySec || c.AppendFsync().String() != "everysec" {
		t.Errorf("appendfsync = %v", c.AppendFsync())
	}
	if c.RequirePass() != "" || c.Databases() != 16 || c.LogFile() != "" || c.Upstream() != "" {
		t.Errorf("requirepass/databases/logfile/upstream = %q %d %q %q",
			c.RequirePass(), c.Databases(), c.LogFile(), c.Upstream())
	}
	if c.MaxClients() != 10000 || c.Timeout() != 0 || c.Hz() != 10 {
		t.Errorf("maxclients/timeout/hz = %d %v %d", c.MaxClients(), c.Timeout(), c.Hz())
	}
	if c.ProtoMaxBulkLen() != 512<<20 || c.ClientQueryBufferLimit() != 1<<30 {
		t.Errorf("proto-max-bulk-len/client-query-buffer-limit = %d %d",
			c.ProtoMaxBulkLen(), c.ClientQueryBufferLimit())
	}
	if c.PromoteMinHits() != 2 || c.ColdReadMaxBytes() != 1<<20 || c.ExpireSweepKeysPerTick() != 1000 {
		t.Errorf("tiering knobs = %d %d %d", c.PromoteMinHits(), c.ColdReadMaxBytes(), c.ExpireSweepKeysPerTick())
	}
	if c.BlockCache() != c.MaxMemory()/8 {
		t.Errorf("block-cache = %d, want maxmemory/8 = %d", c.BlockCache(), c.MaxMemory()/8)
	}
	if _, ok := c.UpstreamTarget(); ok {
		t.Error("UpstreamTarget ok in embedded mode")
	}
	if c.File() != "" {
		t.Errorf("File = %q", c.File())
	}
}

func TestDefaultMaxMemory(t *testing.T) {
	m := DefaultMaxMemory()
	avail := availableMemory()
	if avail == 0 {
		avail = fallbackMemory
	}
	if m != avail/4 || m == 0 {
		t.Fatalf("DefaultMaxMemory = %d, want %d", m, avail/4)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		file string // "" means no config file
		args []string
		want map[string]string // CONFIG GET values
	}{
		{"file only", "port 7000\nmaxmemory 64mb\n", nil,
			map[string]string{"port": "7000", "maxmemory": "67108864"}},
		{"args override file", "port 7000\nmaxmemory 64mb\n", []string{"--port", "7001", "--maxmemory", "1gb"},
			map[string]string{"port": "7001", "maxmemory": "1073741824"}},
		{"comments and blanks", "# a comment\n\n   \t\n  # indented\r\nhz 20\r\n", nil,
			map[string]string{"hz": "20"}},
		{"directive case", "MAXMEMORY 1MB\nAppendFsync ALWAYS\n", nil,
			map[string]string{"maxmemory": "1048576", "appendfsync": "always"}},
		{"double quotes", `requirepass "a b\"c\x41\n"` + "\n", nil,
			map[string]string{"requirepass": "a b\"cA\n"}},
		{"single quotes", `requirepass 'it\'s "x"'` + "\n", nil,
			map[string]string{"requirepass": `it's "x"`}},
		{"empty string", `logfile ""` + "\n", nil, map[string]string{"logfile": ""}},
		{"alias", "slave-read-only no\nhash-max-ziplist-entries 7\n", nil,
			map[string]string{"replica-read-only": "no", "hash-max-listpack-entries": "7"}},
		{"bind several", "bind 127.0.0.1 ::1\n", nil, map[string]string{"bind": "127.0.0.1 ::1"}},
		{"last wins", "port 1\nport 2\n", nil, map[string]string{"port": "2"}},
		{"save accumulates", "save 900 1\nsave 300 10\n", nil, map[string]string{"save": "900 1 300 10"}},
		{"save args add to file", "save 900 1\n", []string{"--save", "60", "1"},
			map[string]string{"save": "900 1 60 1"}},
		{"save empty resets", "save 900 1\n", []string{"--save", ""}, map[string]string{"save": ""}},
		{"save reset then add", "save \"\"\nsave 5 5\n", nil, map[string]string{"save": "5 5"}},
		{"bare save last", "", []string{"--port", "1", "--save"}, map[string]string{"save": "", "port": "1"}},
		{"bare save then option", "", []string{"--save", "--port", "2"}, map[string]string{"save": "", "port": "2"}},
		{"option and value in one arg", "", []string{"--port 7002", "--bind", "a", "b"},
			map[string]string{"port": "7002", "bind": "a b"}},
		{"value starting with --", "", []string{"--requirepass", "--secret"},
			map[string]string{"requirepass": "--secret"}},
		{"units", "", []string{"--maxmemory", "10k", "--cold-read-max-bytes", "10KB", "--block-cache", "2G"},
			map[string]string{"maxmemory": "10000", "cold-read-max-bytes": "10240", "block-cache": "2000000000"}},
		{"hz clamped", "", []string{"--hz", "0"}, map[string]string{"hz": "1"}},
		{"hz clamped high", "", []string{"--hz", "1000"}, map[string]string{"hz": "500"}},
		{"notify canonical", "notify-keyspace-events KEA\n", nil,
			map[string]string{"notify-keyspace-events": "AKE"}},
		{"upstream", "", []string{"--upstream", "redis://u:p@10.0.0.1:6379/2"},
			map[string]string{"upstream": "redis://u:p@10.0.0.1:6379/2"}},
		{"lua-time-limit alias", "lua-time-limit 100\n", nil,
			map[string]string{"busy-reply-threshold": "100", "lua-time-limit": "100"}},
		{"no trailing newline", "port 9", nil, map[string]string{"port": "9"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{writeConf(t, tc.file)}, args...)
			}
			c, err := Parse(args)
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.want {
				if got := mustValue(t, c, k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestParseTyped(t *testing.T) {
	c, err := Parse([]string{"--upstream", "redis://alice:s3cret@[::1]:7000/3", "--loglevel", "verbose",
		"--timeout", "30", "--block-cache", "1mb", "--appendfsync", "no"})
	if err != nil {
		t.Fatal(err)
	}
	u, ok := c.UpstreamTarget()
	if !ok || u != (Upstream{Addr: "[::1]:7000", Username: "alice", Password: "s3cret", DB: 3, Host: "::1"}) {
		t.Errorf("UpstreamTarget = %+v %v", u, ok)
	}
	if c.LogLevel() != LevelVerbose || c.Timeout().Seconds() != 30 || c.BlockCache() != 1<<20 ||
		c.AppendFsync() != FsyncNo {
		t.Errorf("loglevel/timeout/block-cache/appendfsync = %v %v %d %v",
			c.LogLevel(), c.Timeout(), c.BlockCache(), c.AppendFsync())
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		args []string
		want string // substring of the error; {file} stands for the file path
	}{
		{"exact text", "# c\n\nmaxmemory abc\n", nil,
			`config: {file}: line 3: maxmemory "abc": argument must be a memory value`},
		{"unknown directive", "port 1\nfoo bar\n", nil, `config: {file}: line 2: foo "bar": Bad directive or wrong number of arguments`},
		{"include missing", "include /nonexistent/x.conf\n", nil, `can't open config file`},
		{"rename-command", "rename-command flushall \"\"\n", nil, `rename-command is not supported by Spillway`},
		{"include args", "include a b\n", nil, `line 1: include "a" "b": Bad directive or wrong number of arguments`},
		{"replicaof port", "replicaof h 70000\n", nil, `Invalid master port`},
		{"unbalanced double", "maxmemory \"abc\n", nil, `line 1: maxmemory "abc: Unbalanced quotes`},
		{"quote then text", "maxmemory 'abc'x\n", nil, `line 1: maxmemory 'abc'x: Unbalanced quotes`},
		{"no argument", "maxmemory\n", nil, `line 1: maxmemory: wrong number of arguments`},
		{"two arguments", "maxmemory 1mb 2\n", nil, `maxmemory "1mb" "2": wrong number of arguments`},
		{"int", "port x\n", nil, `port "x": argument couldn't be parsed into an integer`},
		{"int plus", "port +1\n", nil, `port "+1": argument couldn't be parsed into an integer`},
		{"int leading zero", "timeout 01\n", nil, `timeout "01": argument couldn't be parsed`},
		{"int range", "port 70000\n", nil, `port "70000": argument must be between 0 and 65535 inclusive`},
		{"databases range", "databases 0\n", nil, `databases "0": argument must be between 1 and 256 inclusive`},
		{"databases high", "databases 257\n", nil, `argument must be between 1 and 256 inclusive`},
		{"maxclients", "maxclients 0\n", nil, `maxclients "0": argument must be between 1 and 4294967295 inclusive`},
		{"promote-min-hits", "promote-min-hits 0\n", nil, `promote-min-hits "0": argument must be between 1`},
		{"sweep", "expire-sweep-keys-per-tick -1\n", nil, `expire-sweep-keys-per-tick "-1": argument must be between 1`},
		{"memory negative", "maxmemory -1\n", nil, `maxmemory "-1": argument must be a memory value`},
		{"memory fraction", "cold-read-max-bytes 1.5mb\n", nil, `cold-read-max-bytes "1.5mb": argument must be a memory value`},
		{"memory unit", "block-cache 1tb\n", nil, `block-cache "1tb": argument must be a memory value`},
		{"memory range", "proto-max-bulk-len 1000k\n", nil,
			`proto-max-bulk-len "1000k": argument must be between 1048576 and 9223372036854775807 inclusive`},
		{"query buffer range", "client-query-buffer-limit 10\n", nil, `client-query-buffer-limit "10": argument must be between`},
		{"bool", "appendonly maybe\n", nil, `appendonly "maybe": argument must be 'yes' or 'no'`},
		{"enum", "appendfsync sometimes\n", nil,
			`appendfsync "sometimes": argument(s) must be one of the following: everysec, always, no`},
		{"loglevel", "loglevel loud\n", nil,
			`loglevel "loud": argument(s) must be one of the following: debug, verbose, notice, warning`},
		{"policy", "maxmemory-policy lru\n", nil, `maxmemory-policy "lru": argument(s) must be one of the following: volatile-lru,`},
		{"supervised", "supervised foo\n", nil, `must be one of the following: upstart, systemd, auto, no`},
		{"upstream scheme", "upstream http://x:1\n", nil, `upstream "http://x:1": argument must be a redis[s]://[user:password@]host:port[/db] URL`},
		{"upstream port", "upstream redis://x:0\n", nil, `upstream "redis://x:0": argument must be a redis[s]://`},
		{"upstream db", "upstream redis://x:1/a\n", nil, `(bad db number)`},
		{"upstream host", "upstream redis://:1\n", nil, `(missing host)`},
		{"bind too many", "bind 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n", nil, `Too many bind addresses specified.`},
		{"bind many", "bind" + strings.Repeat(" 127.0.0.1", 17) + "\n", nil, `Too many bind addresses specified.`},
		{"save odd", "save 1 2 3\n", nil, `save "1" "2" "3": Invalid save parameters`},
		{"save zero seconds", "save 0 1\n", nil, `Invalid save parameters`},
		{"notify", "notify-keyspace-events xyz\n", nil,
			`notify-keyspace-events "xyz": Invalid event class character. Use 'Ag$lshzxeKEtmdn'.`},
		{"dbfilename", "dbfilename a/b\n", nil, `dbfilename "a/b": dbfilename can't be a path, just a filename`},
		{"activedefrag", "activedefrag yes\n", nil, `activedefrag "yes": Active defragmentation cannot be enabled`},
		{"dir empty", "dir \"\"\n", nil, `dir "": dir can't be empty`},
		{"io-threads", "io-threads 200\n", nil, `io-threads "200": argument must be between 1 and 128 inclusive`},
		{"list size", "list-max-listpack-size 9999999999\n", nil, `argument must be between -2147483648 and 2147483647 inclusive`},
		{"hz negative", "hz -1\n", nil, `hz "-1": argument must be between 0 and 2147483647 inclusive`},
		{"arg error", "", []string{"--maxmemory", "abc"},
			`config: command line: maxmemory "abc": argument must be a memory value`},
		{"arg unknown", "", []string{"--nosuch", "1"}, `config: command line: nosuch "1": Bad directive or wrong number of arguments`},
		{"arg missing value", "", []string{"--port"}, `command line: port: wrong number of arguments`},
		{"stray argument", "", []string{"--port", "1", "2"}, `port "1" "2": wrong number of arguments`},
		{"value without name", "port 1\n", []string{"7000"}, `argument "7000" does not follow a --name`},
		{"stdin", "", []string{"-"}, `standard input is not supported`},
		{"arg overrides bad file", "port x\n", []string{"--port", "1"}, `line 1: port "x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			path := ""
			if tc.file != "" {
				path = writeConf(t, tc.file)
				args = append([]string{path}, args...)
			}
			_, err := Parse(args)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want error %q", args, tc.want)
			}
			want := strings.ReplaceAll(tc.want, "{file}", path)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error = %q\nwant it to contain %q", err, want)
			}
		})
	}
}

func TestParseErrorType(t *testing.T) {
	p := writeConf(t, "port 1\nhz x\n")
	_, err := Parse([]string{p})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || pe.File != p || !errors.Is(err, errNotInteger) {
		t.Fatalf("err = %#v", err)
	}
	if _, err := Parse([]string{filepath.Join(t.TempDir(), "missing.conf")}); err == nil ||
		!strings.Contains(err.Error(), "can't open config file") {
		t.Fatalf("missing file: err = %v", err)
	}
	for _, a := range []string{"-h", "--help"} {
		if _, err := Parse([]string{a}); err != ErrHelp {
			t.Errorf("Parse(%q) = %v, want ErrHelp", a, err)
		}
	}
	for _, a := range []string{"-v", "--version"} {
		if _, err := Parse([]string{a}); err != ErrVersion {
			t.Errorf("Parse(%q) = %v, want ErrVersion", a, err)
		}
	}
}

func TestFileIsAbsolute(t *testing.T) {
	p := writeConf(t, "port 1\n")
	t.Chdir(filepath.Dir(p))
	c, err := Parse([]string{filepath.Base(p)})
	if err != nil {
		t.Fatal(err)
	}
	if c.File() != p {
		t.Fatalf("File = %q, want %q", c.File(), p)
	}
}

func TestParseMemory(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"", 0, true}, {"1", 1, true}, {"1b", 1, true}, {"1B", 1, true},
		{"1k", 1000, true}, {"1K", 1000, true}, {"1kb", 1024, true}, {"1kB", 1024, true}, {"1KB", 1024, true},
		{"1m", 1000000, true}, {"1mb", 1 << 20, true}, {"64mb", 64 << 20, true},
		{"1g", 1000000000, true}, {"1gb", 1 << 30, true}, {"1Gb", 1 << 30, true},
		{"18446744073709551615", 18446744073709551615, true},
		{"99999999999999999999", 18446744073709551615, true}, // saturates like strtoull
		{"10000000000gb", 10737418240000000000, true},
		{"-1", 0, false}, {"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1.5mb", 0, false},
		{"0x10", 0, false}, {"1tb", 0, false}, {"mb1", 0, false}, {"1bb", 0, false},
	}
	for _, tc := range tests {
		got, ok := ParseMemory(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFormatMemory(t *testing.T) {
	for in, want := range map[uint64]string{0: "0", 1: "1", 1000: "1000", 1024: "1kb", 3 << 20: "3mb",
		1 << 30: "1gb", 1<<30 + 1: "1073741825", 1536: "1536"} {
		if got := FormatMemory(in); got != want {
			t.Errorf("FormatMemory(%d) = %q, want %q", in, got, want)
		}
		if back, ok := ParseMemory(FormatMemory(in)); !ok || back != in {
			t.Errorf("ParseMemory(FormatMemory(%d)) = %d, %v", in, back, ok)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string // nil with ok=false means error
		ok   bool
	}{
		{"a b  c", []string{"a", "b", "c"}, true},
		{"  \t", nil, true},
		{`"a b" 'c d'`, []string{"a b", "c d"}, true},
		{`""`, []string{""}, true},
		{`"\n\r\t\b\a\\\"\x41\xzz"`, []string{"\n\r\t\b\a\\\"A" + "xzz"}, true},
		{`'a\'b\n'`, []string{`a'b\n`}, true},
		{`ab"cd"`, []string{"abcd"}, true},
		{`"abc`, nil, false},
		{`'abc`, nil, false},
		{`"abc"d`, nil, false},
		{`'abc'd`, nil, false},
	}
	for _, tc := range tests {
		got, err := splitArgs(tc.in)
		if (err == nil) != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestReprRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain", "a b", `q"uo\te`, "\x00\x01\xff\n\r\t\a\b", "é"} {
		r := repr(s)
		got, err := splitArgs(r)
		if err != nil || len(got) != 1 || got[0] != s {
			t.Errorf("splitArgs(repr(%q)=%s) = %q, %v", s, r, got, err)
		}
		b := bareOrRepr(s)
		got, err = splitArgs(b)
		if err != nil || len(got) != 1 || got[0] != s {
			t.Errorf("splitArgs(bareOrRepr(%q)=%s) = %q, %v", s, b, got, err)
		}
	}
	if got := repr("a\"\x7f"); got != `"a\"\x7f"` {
		t.Errorf("repr = %s", got)
	}
}

func TestParseUpstream(t *testing.T) {
	tests := []struct {
		in   string
		want Upstream
		ok   bool
	}{
		{"redis://h:1", Upstream{Addr: "h:1", Host: "h"}, true},
		{"redis://h", Upstream{Addr: "h:6379", Host: "h"}, true},
		{"redis://h:6379/", Upstream{Addr: "h:6379", Host: "h"}, true},
		{"redis://:pw@h:2/15", Upstream{Addr: "h:2", Host: "h", Password: "pw", DB: 15}, true},
		{"redis://u:p%40ss@127.0.0.1:3", Upstream{Addr: "127.0.0.1:3", Host: "127.0.0.1", Username: "u", Password: "p@ss"}, true},
		{"redis://[::1]:4", Upstream{Addr: "[::1]:4", Host: "::1"}, true},
		{"rediss://h:1", Upstream{Addr: "h:1", Host: "h", TLS: true}, true},
		{"rediss://:pw@h/2", Upstream{Addr: "h:6379", Host: "h", Password: "pw", DB: 2, TLS: true}, true},
		{"http://h:1", Upstream{}, false},
		{"h:1", Upstream{}, false},
		{"redis://h:", Upstream{}, false},
		{"redis://h:65536", Upstream{}, false},
		{"redis://h:1/-1", Upstream{}, false},
		{"redis://h:1/0/1", Upstream{}, false},
		{"redis://h:1?db=2", Upstream{}, false},
		{"redis:///0", Upstream{}, false},
	}
	for _, tc := range tests {
		got, err := ParseUpstream(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseUpstream(%q) = %+v, %v; want %+v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestDefaultsParse(t *testing.T) {
	// Every default must be a valid value of its own setting.
	for i, s := range registry {
		if _, err := s.parseSet(defaultText(i)); err != nil {
			t.Errorf("%s: default %q: %v", s.name, defaultText(i), err)
		}
		if s.name == "" || strings.ToLower(s.name) != s.name || s.doc == "" {
			t.Errorf("setting %d: bad name or doc: %+v", i, s)
		}
	}
	if got := strconv.Itoa(len(names)); got == "0" {
		t.Fatal("no names")
	}
}

func TestParseSentinelUpstream(t *testing.T) {
	u, err := ParseUpstream("sentinel://bob:p%40ss@10.0.0.1:26379,[::1],s3:26380/my-master/2?sentinel-password=sp&sentinel-username=su")
	if err != nil {
		t.Fatal(err)
	}
	s := u.Sentinel
	if u.Addr != "" || u.Username != "bob" || u.Password != "p@ss" || u.DB != 2 || s == nil ||
		strings.Join(s.Addrs, " ") != "10.0.0.1:26379 [::1]:26379 s3:26380" ||
		s.Master != "my-master" || s.Username != "su" || s.Password != "sp" {
		t.Errorf("ParseUpstream = %+v %+v", u, s)
	}
	u, err = ParseUpstream("sentinel://h:1/m")
	if err != nil || u.DB != 0 || u.Password != "" || u.Sentinel.Master != "m" {
		t.Errorf("ParseUpstream = %+v %v", u, err)
	}
	for _, bad := range []string{"sentinel://h:1", "sentinel://h:1/", "sentinel://,h:1/m", "sentinel://h:0/m",
		"sentinel://h:1/m/x", "sentinel://h:1/m?x=1", "sentinel://h:1/m#f", "sentinel:///m"} {
		if _, err := ParseUpstream(bad); err == nil || !strings.Contains(err.Error(), "sentinel://") {
			t.Errorf("ParseUpstream(%q) = %v, want a sentinel syntax error", bad, err)
		}
	}
}
