package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

func get(c *Config, patterns ...string) map[string]string {
	bs := make([][]byte, len(patterns))
	for i, p := range patterns {
		bs[i] = []byte(p)
	}
	m := map[string]string{}
	for _, kv := range c.Get(bs...) {
		m[kv[0]] = kv[1]
	}
	return m
}

func TestGetRedisDefaults(t *testing.T) {
	// Values read from a real redis-server 7.0.15 (CONFIG GET), except
	// save, which Spillway defaults to "".
	want := map[string]string{
		"save": "", "appendonly": "no", "maxmemory-policy": "noeviction", "maxmemory-samples": "5",
		"tcp-keepalive": "300", "slowlog-log-slower-than": "10000", "slowlog-max-len": "128",
		"notify-keyspace-events": "", "hz": "10", "lua-time-limit": "5000", "busy-reply-threshold": "5000",
		"cluster-enabled": "no", "daemonize": "no", "supervised": "no", "pidfile": "", "dbfilename": "dump.rdb",
		"replica-read-only": "yes", "slave-read-only": "yes", "protected-mode": "yes", "io-threads": "1",
		"latency-tracking": "yes", "activedefrag": "no", "lazyfree-lazy-eviction": "no",
		"lazyfree-lazy-expire": "no", "lazyfree-lazy-server-del": "no", "lazyfree-lazy-user-del": "no",
		"lazyfree-lazy-user-flush": "no", "list-max-listpack-size": "-2", "list-max-ziplist-size": "-2",
		"list-compress-depth":       "0",
		"hash-max-listpack-entries": "512", "hash-max-ziplist-entries": "512",
		"hash-max-listpack-value": "64", "hash-max-ziplist-value": "64", "set-max-intset-entries": "512",
		"zset-max-listpack-entries": "128", "zset-max-ziplist-entries": "128",
		"zset-max-listpack-value": "64", "zset-max-ziplist-value": "64",
		"appendfsync": "everysec", "requirepass": "", "databases": "16", "loglevel": "notice", "logfile": "",
		"maxclients": "10000", "timeout": "0", "proto-max-bulk-len": "536870912",
		"client-query-buffer-limit": "1073741824", "port": "6380", "bind": "127.0.0.1",
		"promote-min-hits": "2", "cold-read-max-bytes": "1048576", "block-cache": "0",
		"expire-sweep-keys-per-tick": "1000", "upstream": "",
	}
	c := Default()
	all := get(c, "*")
	for k, v := range want {
		got, ok := all[k]
		if !ok || got != v {
			t.Errorf("CONFIG GET %s = %q (present %v), want %q", k, got, ok, v)
		}
	}
	hidden := 0
	for _, s := range registry {
		if s.hidden {
			hidden++
		}
	}
	if len(all) != len(names)-hidden {
		t.Errorf("CONFIG GET * returned %d names, want %d", len(all), len(names)-hidden)
	}
}

func TestGetPatterns(t *testing.T) {
	c := Default()
	tests := []struct {
		patterns []string
		want     []string // names, sorted
	}{
		{[]string{"maxmemory"}, []string{"maxmemory"}},
		{[]string{"MAXMEMORY"}, []string{"MAXMEMORY"}}, // a name is reported as given
		{[]string{"MAXMEMORY", "maxmemory"}, []string{"MAXMEMORY"}},
		{[]string{"key-load-delay"}, []string{"key-load-delay"}}, // hidden: by name only
		{[]string{"key-load-*"}, nil},
		{[]string{"*of", "slaveof"}, []string{"replicaof", "slaveof"}},
		{[]string{"slave-read-only"}, []string{"slave-read-only"}},
		{[]string{"nosuch"}, nil},
		{[]string{"nosuch*"}, nil},
		{[]string{"maxmem*"}, []string{"maxmemory", "maxmemory-clients", "maxmemory-eviction-tenacity",
			"maxmemory-policy", "maxmemory-samples"}},
		{[]string{"maxmem*", "maxmemory", "MAXMEM*"}, []string{"maxmemory", "maxmemory-clients",
			"maxmemory-eviction-tenacity", "maxmemory-policy", "maxmemory-samples"}},
		{[]string{"port", "databases"}, []string{"databases", "port"}},
		{[]string{"*read-only*"}, []string{"replica-read-only", "slave-read-only"}},
		{[]string{"*ziplist*"}, []string{"hash-max-ziplist-entries", "hash-max-ziplist-value",
			"list-max-ziplist-size", "zset-max-ziplist-entries", "zset-max-ziplist-value"}},
		{[]string{"hash-max-*"}, []string{"hash-max-listpack-entries", "hash-max-listpack-value",
			"hash-max-ziplist-entries", "hash-max-ziplist-value"}},
		{[]string{"lazyfree-lazy-user-*"}, []string{"lazyfree-lazy-user-del", "lazyfree-lazy-user-flush"}},
		{[]string{"?ort"}, []string{"port"}},
		{[]string{"[bp]*[dt]"}, []string{"bgsave_cpulist", "bind", "bio_cpulist", "busy-reply-threshold", "port"}},
	}
	for _, tc := range tests {
		bs := make([][]byte, len(tc.patterns))
		for i, p := range tc.patterns {
			bs[i] = []byte(p)
		}
		var got []string
		for _, kv := range c.Get(bs...) {
			got = append(got, kv[0])
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Get(%q) = %q, want %q", tc.patterns, got, tc.want)
		}
	}
}

func TestSetErrors(t *testing.T) {
	failed := func(arg, reason string) string {
		return fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", arg, reason)
	}
	tests := []struct {
		pairs [][2]string
		want  string
	}{
		{[][2]string{{"foo", "bar"}}, "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"},
		{[][2]string{{"maxmemory", "abc"}, {"foo", "bar"}}, "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"},
		{[][2]string{{"maxmemory", "abc"}}, failed("maxmemory", "argument must be a memory value")},
		{[][2]string{{"maxmemory", "-1"}}, failed("maxmemory", "argument must be a memory value")},
		{[][2]string{{"maxmemory", "1.5mb"}}, failed("maxmemory", "argument must be a memory value")},
		{[][2]string{{"hz", "abc"}}, failed("hz", "argument couldn't be parsed into an integer")},
		{[][2]string{{"hz", "-1"}}, failed("hz", "argument must be between 0 and 2147483647 inclusive")},
		{[][2]string{{"timeout", "-1"}}, failed("timeout", "argument must be between 0 and 2147483647 inclusive")},
		{[][2]string{{"maxclients", "0"}}, failed("maxclients", "argument must be between 1 and 4294967295 inclusive")},
		{[][2]string{{"slowlog-log-slower-than", "-5"}},
			failed("slowlog-log-slower-than", "argument must be between -1 and 9223372036854775807 inclusive")},
		{[][2]string{{"proto-max-bulk-len", "1"}},
			failed("proto-max-bulk-len", "argument must be between 1048576 and 9223372036854775807 inclusive")},
		{[][2]string{{"hash-max-listpack-value", "99999999999999999999"}},
			failed("hash-max-listpack-value", "argument must be between 0 and 9223372036854775807 inclusive")},
		{[][2]string{{"set-max-intset-entries", "1gb"}}, failed("set-max-intset-entries", "argument couldn't be parsed into an integer")},
		{[][2]string{{"appendfsync", "foo"}},
			failed("appendfsync", "argument(s) must be one of the following: everysec, always, no")},
		{[][2]string{{"appendfsync", ""}},
			failed("appendfsync", "argument(s) must be one of the following: everysec, always, no")},
		{[][2]string{{"loglevel", "foo"}},
			failed("loglevel", "argument(s) must be one of the following: debug, verbose, notice, warning")},
		{[][2]string{{"maxmemory-policy", "foo"}}, failed("maxmemory-policy", "argument(s) must be one of the following: "+
			"volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction")},
		{[][2]string{{"appendonly", "1"}}, failed("appendonly", "argument must be 'yes' or 'no'")},
		{[][2]string{{"activedefrag", "yes"}}, failed("activedefrag", "Active defragmentation cannot be enabled: it requires "+
			"a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution")},
		{[][2]string{{"notify-keyspace-events", "xyz"}},
			failed("notify-keyspace-events", "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")},
		{[][2]string{{"save", "abc"}}, failed("save", "Invalid save parameters")},
		{[][2]string{{"save", "900"}}, failed("save", "Invalid save parameters")},
		{[][2]string{{"save", "1 -1"}}, failed("save", "Invalid save parameters")},
		{[][2]string{{"port", "65536"}}, failed("port", "argument must be between 0 and 65535 inclusive")},
		{[][2]string{{"bind", strings.TrimSpace(strings.Repeat("a ", 17))}}, failed("bind", "Too many bind addresses specified.")},
		{[][2]string{{"upstream-connections", "2"}}, failed("upstream-connections", "can't set immutable config")},
		{[][2]string{{"maxmemory-clients", "101%"}}, failed("maxmemory-clients", "percentage argument must be less or equal to 100")},
		{[][2]string{{"maxmemory-clients", "x%"}}, failed("maxmemory-clients", "argument must be a memory or percent value")},
		{[][2]string{{"unixsocketperm", "777"}}, failed("unixsocketperm", "can't set immutable config")},
		{[][2]string{{"slaveof", "no one"}}, failed("slaveof", "can't set immutable config")},
		{[][2]string{{"shutdown-on-sigint", "save nosave"}},
			failed("shutdown-on-sigint", "shutdown options SAVE and NOSAVE can't be used simultaneously")},
		{[][2]string{{"shutdown-on-sigint", ""}},
			failed("shutdown-on-sigint", "argument(s) must be one of the following: default, save, nosave, now, force")},
		{[][2]string{{"oom-score-adj-values", "1 2"}}, failed("oom-score-adj-values", "wrong number of arguments")},
		{[][2]string{{"oom-score-adj-values", "1 2 2001"}},
			failed("oom-score-adj-values", "Invalid oom-score-adj-values, elements must be between -2000 and 2000.")},
		{[][2]string{{"latency-tracking-info-percentiles", "50 101"}},
			failed("latency-tracking-info-percentiles", "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")},
		{[][2]string{{"latency-tracking-info-percentiles", "50 x"}},
			failed("latency-tracking-info-percentiles", "Invalid latency-tracking-info-percentiles parameters")},
		{[][2]string{{"proc-title-template", "{nosuch}"}},
			failed("proc-title-template", "template format is invalid or contains unknown variables")},
		{[][2]string{{"proc-title-template", "{title} {server-mode}"}},
			failed("proc-title-template", "template format is invalid or contains unknown variables")},
		{[][2]string{{"cluster-announce-hostname", "a_b"}},
			failed("cluster-announce-hostname", "Hostnames may only contain alphanumeric characters, hyphens or dots")},
		{[][2]string{{"save", "1  0"}}, failed("save", "Invalid save parameters")},
		{[][2]string{{"maxmemory", "10"}, {"maxmemory-clients", "200%"}, {"client-query-buffer-limit", "invalid"}},
			failed("maxmemory-clients", "percentage argument must be less or equal to 100")},
		{[][2]string{{"databases", "3"}}, failed("databases", "can't set immutable config")},
		{[][2]string{{"upstream", "redis://h:1"}}, failed("upstream", "can't set immutable config")},
		{[][2]string{{"logfile", "/tmp/x"}}, failed("logfile", "can't set immutable config")},
		{[][2]string{{"daemonize", "yes"}}, failed("daemonize", "can't set immutable config")},
		{[][2]string{{"io-threads", "1"}}, failed("io-threads", "can't set immutable config")},
		{[][2]string{{"dir", "/tmp"}}, failed("dir", "can't set protected config")},
		{[][2]string{{"dbfilename", "x.rdb"}}, failed("dbfilename", "can't set protected config")},
		{[][2]string{{"maxmemory", "abc"}, {"databases", "3"}}, failed("databases", "can't set immutable config")},
		{[][2]string{{"databases", "3"}, {"foo", "bar"}}, failed("databases", "can't set immutable config")},
		{[][2]string{{"maxmemory", "1"}, {"maxmemory", "2"}}, failed("maxmemory", "duplicate parameter")},
		{[][2]string{{"maxmemory", "abc"}, {"maxmemory", "1mb"}}, failed("maxmemory", "duplicate parameter")},
		{[][2]string{{"maxmemory", "1mb"}, {"MAXMEMORY", "1mb"}}, failed("MAXMEMORY", "duplicate parameter")},
		{[][2]string{{"MaxMemory", "x"}}, failed("maxmemory", "argument must be a memory value")}, // the setting's name
		{[][2]string{{"SLAVE-read-only", "x"}}, failed("slave-read-only", "argument must be 'yes' or 'no'")},
		{[][2]string{{"maxmemory", "1mb"}, {"hz", "x"}}, failed("hz", "argument couldn't be parsed into an integer")},
		{nil, "ERR wrong number of arguments for 'config|set' command"},
	}
	for _, tc := range tests {
		c := Default()
		before := get(c, "*")
		err := c.Set(tc.pairs)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Set(%q) = %v\nwant %s", tc.pairs, err, tc.want)
		}
		if after := get(c, "*"); !reflect.DeepEqual(before, after) {
			t.Errorf("Set(%q) failed but changed settings", tc.pairs)
		}
	}
}

func TestSet(t *testing.T) {
	tests := []struct {
		pairs [][2]string
		want  map[string]string
	}{
		{[][2]string{{"maxmemory", "10kb"}}, map[string]string{"maxmemory": "10240"}},
		{[][2]string{{"maxmemory", "1MB"}, {"hz", "20"}}, map[string]string{"maxmemory": "1048576", "hz": "20"}},
		{[][2]string{{"maxmemory", ""}}, map[string]string{"maxmemory": "0"}},
		{[][2]string{{"maxmemory", "18446744073709551615"}}, map[string]string{"maxmemory": "18446744073709551615"}},
		{[][2]string{{"hz", "0"}}, map[string]string{"hz": "1"}},
		{[][2]string{{"hz", "1000"}}, map[string]string{"hz": "500"}},
		{[][2]string{{"appendfsync", "ALWAYS"}}, map[string]string{"appendfsync": "always"}},
		{[][2]string{{"appendonly", "YES"}}, map[string]string{"appendonly": "yes"}},
		{[][2]string{{"loglevel", "WARNING"}}, map[string]string{"loglevel": "warning"}},
		{[][2]string{{"notify-keyspace-events", "KEA"}}, map[string]string{"notify-keyspace-events": "AKE"}},
		{[][2]string{{"notify-keyspace-events", "Exn"}}, map[string]string{"notify-keyspace-events": "xnE"}},
		{[][2]string{{"notify-keyspace-events", "Anm"}}, map[string]string{"notify-keyspace-events": "Am"}},
		{[][2]string{{"notify-keyspace-events", "g$lshzxetdK"}}, map[string]string{"notify-keyspace-events": "AK"}},
		{[][2]string{{"notify-keyspace-events", "nd$"}}, map[string]string{"notify-keyspace-events": "$dn"}},
		{[][2]string{{"notify-keyspace-events", "mK"}}, map[string]string{"notify-keyspace-events": "Km"}},
		{[][2]string{{"save", "900 1 300 10"}}, map[string]string{"save": "900 1 300 10"}},
		{[][2]string{{"save", "1 0"}}, map[string]string{"save": "1 0"}},
		{[][2]string{{"port", "7000"}, {"bind", "* -::*"}}, map[string]string{"port": "7000", "bind": "* -::*"}},
		{[][2]string{{"bind", ""}}, map[string]string{"bind": ""}},
		{[][2]string{{"maxmemory-clients", "5%"}}, map[string]string{"maxmemory-clients": "5%"}},
		{[][2]string{{"maxmemory-clients", "18446744073709551615"}}, map[string]string{"maxmemory-clients": "1%"}},
		{[][2]string{{"maxmemory-clients", "1kb"}}, map[string]string{"maxmemory-clients": "1024"}},
		{[][2]string{{"oom-score-adj", "relative"}}, map[string]string{"oom-score-adj": "yes"}},
		{[][2]string{{"shutdown-on-sigint", "now save"}}, map[string]string{"shutdown-on-sigint": "save now"}},
		{[][2]string{{"shutdown-on-sigterm", "default NOW"}}, map[string]string{"shutdown-on-sigterm": "now"}},
		{[][2]string{{"latency-tracking-info-percentiles", "50 99.90 1e2"}},
			map[string]string{"latency-tracking-info-percentiles": "50 99.9 100"}},
		{[][2]string{{"latency-tracking-info-percentiles", ""}}, map[string]string{"latency-tracking-info-percentiles": ""}},
		{[][2]string{{"upstream-connections", "1"}, {"upstream", ""}}, map[string]string{"upstream-connections": "1"}},
		{[][2]string{{"list-compress-depth", "2"}, {"repl-ping-slave-period", "5"}, {"key-load-delay", "-1"}},
			map[string]string{"list-compress-depth": "2", "repl-ping-replica-period": "5"}},
		{[][2]string{{"proc-title-template", "{{x {port}"}}, map[string]string{"proc-title-template": "{{x {port}"}},
		{[][2]string{{"save", ""}}, map[string]string{"save": ""}},
		{[][2]string{{"requirepass", "a b"}}, map[string]string{"requirepass": "a b"}},
		{[][2]string{{"activedefrag", "no"}}, map[string]string{"activedefrag": "no"}},
		{[][2]string{{"slave-read-only", "no"}}, map[string]string{"replica-read-only": "no", "slave-read-only": "no"}},
		{[][2]string{{"hash-max-ziplist-entries", "100"}, {"hash-max-listpack-entries", "200"}},
			map[string]string{"hash-max-listpack-entries": "200"}},
		{[][2]string{{"hash-max-listpack-value", "1kb"}}, map[string]string{"hash-max-ziplist-value": "1024"}},
		{[][2]string{{"list-max-listpack-size", "-6"}}, map[string]string{"list-max-listpack-size": "-6"}},
		{[][2]string{{"maxmemory-policy", "allkeys-lru"}}, map[string]string{"maxmemory-policy": "allkeys-lru"}},
		{[][2]string{{"promote-min-hits", "5"}, {"cold-read-max-bytes", "4mb"}, {"block-cache", "1gb"},
			{"expire-sweep-keys-per-tick", "50"}}, map[string]string{"promote-min-hits": "5",
			"cold-read-max-bytes": "4194304", "block-cache": "1073741824", "expire-sweep-keys-per-tick": "50"}},
	}
	for _, tc := range tests {
		c := Default()
		if err := c.Set(tc.pairs); err != nil {
			t.Errorf("Set(%q) = %v", tc.pairs, err)
			continue
		}
		got := get(c, "*")
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("after Set(%q): %s = %q, want %q", tc.pairs, k, got[k], v)
			}
		}
	}
}

func TestSetTypedAccessors(t *testing.T) {
	c := Default()
	err := c.Set([][2]string{{"maxmemory", "64mb"}, {"requirepass", "pw"}, {"appendfsync", "always"},
		{"loglevel", "debug"}, {"block-cache", "0"}, {"maxmemory-policy", "noeviction"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxMemory() != 64<<20 || c.RequirePass() != "pw" || c.AppendFsync() != FsyncAlways ||
		c.BlockCache() != 8<<20 || c.LogLevel() != -4 {
		t.Errorf("maxmemory=%d requirepass=%q appendfsync=%v block-cache=%d loglevel=%v",
			c.MaxMemory(), c.RequirePass(), c.AppendFsync(), c.BlockCache(), c.LogLevel())
	}
	if err := c.Set([][2]string{{"maxmemory", "18446744073709551615"}}); err != nil || c.MaxMemory() != 1<<63-1 {
		t.Errorf("huge maxmemory: err=%v MaxMemory=%d", err, c.MaxMemory())
	}
}

func TestOnChange(t *testing.T) {
	c := Default()
	var got []string
	if err := c.OnChange("maxmemory", func(v string) { got = append(got, "maxmemory="+v) }); err != nil {
		t.Fatal(err)
	}
	if err := c.OnChange("SLAVE-read-only", func(v string) {
		// The new value is visible from a callback.
		got = append(got, "ro="+v+"/"+mustValue(t, c, "replica-read-only"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.OnChange("nosuch", func(string) {}); err == nil {
		t.Error("OnChange(nosuch) succeeded")
	}
	steps := [][][2]string{
		{{"maxmemory", "1mb"}, {"replica-read-only", "no"}},
		{{"maxmemory", "1048576"}},          // same value: no call
		{{"maxmemory", "2mb"}, {"hz", "x"}}, // failed: no call
		{{"maxmemory", "2mb"}, {"hz", "11"}},
	}
	for _, p := range steps {
		_ = c.Set(p)
	}
	want := []string{"maxmemory=1048576", "ro=no/no", "maxmemory=2097152"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("callbacks = %q, want %q", got, want)
	}
}

func TestConcurrentSetGet(t *testing.T) {
	c := Default()
	pairOf := map[string]string{"0": mustValue(t, c, "maxmemory"), "1": "1048576", "2": "2097152"}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				m := c.MaxMemory()
				if m != 1<<20 && m != 2<<20 && m != int64(DefaultMaxMemory()) {
					t.Errorf("torn maxmemory %d", m)
					return
				}
				// Set is atomic for Get: both values move together.
				kv := get(c, "maxmemory", "timeout")
				if pairOf[kv["timeout"]] != kv["maxmemory"] {
					t.Errorf("CONFIG GET saw a half-applied SET: %v", kv)
					return
				}
			}
		}()
	}
	for i := 0; i < 200; i++ {
		pairs := [][2]string{{"maxmemory", "1mb"}, {"timeout", "1"}}
		if i%2 == 1 {
			pairs = [][2]string{{"maxmemory", "2mb"}, {"timeout", "2"}}
		}
		if err := c.Set(pairs); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestNamesLowerCase(t *testing.T) {
	for n := range names {
		if n != strings.ToLower(n) {
			t.Errorf("name %q is not lower case", n)
		}
	}
}
