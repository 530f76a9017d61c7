package script

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/rdb"
)

// payload frames body as a FUNCTION DUMP payload with the given RDB version.
func payload(body []byte, version uint16) string {
	return string(rdb.AppendFooter(append([]byte(nil), body...), version))
}

func libRecord(code string) []byte {
	return appendRDBString([]byte{rdbOpcodeFunction2}, []byte(code))
}

// TestDiffDumpRestore compares FUNCTION DUMP payloads byte for byte with
// redis-server's, restores redis-server payloads in the Engine and Engine
// payloads in redis-server, and compares RESTORE's errors.
func TestDiffDumpRestore(t *testing.T) {
	d := newDiffer(t)
	rng := rand.New(rand.NewSource(7))
	noise := make([]byte, 300)
	for i := range noise {
		noise[i] = byte('a' + rng.Intn(26))
	}
	libs := []string{
		lib("small", "redis.register_function('sf', function() return 1 end)"),
		lib("long", strings.Repeat("-- a comment line that repeats itself over and over\n", 300)+"redis.register_function('lf', function() return 2 end)"),
		lib("noisy", "-- "+string(noise)+"\nredis.register_function('nf', function() return 3 end)"),
		lib("medium", "local function helper(x) return x * 2 end\nredis.register_function{function_name='mf', callback=function(keys, args) return helper(tonumber(args[1])) end, flags={'no-writes'}, description='doubles'}"),
	}
	for _, l := range libs {
		d.run(diffCase{name: "dump " + l[:20], steps: []step{{"FUNCTION", "LOAD", l}, {"FUNCTION", "DUMP"}}})
	}

	// A multi-library payload from redis restores in the Engine and vice versa.
	srv := d.srv
	real := srv.dial(t, 2)
	real.do("FUNCTION", "FLUSH")
	for _, l := range libs {
		real.do("FUNCTION", "LOAD", l)
	}
	redisDump := real.do("FUNCTION", "DUMP")
	redisPayload := bulkBody(t, redisDump)
	e := New(Options{})
	if got := string(engineDo(e, d.host, 2, toArgs(step{"FUNCTION", "RESTORE", redisPayload}))); got != "+OK\r\n" {
		t.Fatalf("restore of redis's payload: %q", got)
	}
	for _, name := range []string{"small", "long", "noisy", "medium"} {
		want := real.do("FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE")
		got := engineDo(e, d.host, 2, toArgs(step{"FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE"}))
		if !bytes.Equal(got, want) {
			t.Errorf("library %s after restoring redis's dump:\n redis: %q\n   ours: %q", name, want, got)
		}
	}
	if got := string(engineDo(e, d.host, 2, toArgs(step{"FCALL", "mf", "0", "21"}))); got != ":42\r\n" {
		t.Errorf("FCALL of a restored function = %q", got)
	}
	ourPayload := bulkBody(t, engineDo(e, d.host, 2, toArgs(step{"FUNCTION", "DUMP"})))
	if got := string(real.do("FUNCTION", "RESTORE", ourPayload, "FLUSH")); got != "+OK\r\n" {
		t.Fatalf("redis-server rejects our payload: %q", got)
	}
	for _, name := range []string{"small", "long", "noisy", "medium"} {
		want := real.do("FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE")
		got := engineDo(e, d.host, 2, toArgs(step{"FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE"}))
		if !bytes.Equal(got, want) {
			t.Errorf("library %s after redis restored our dump:\n redis: %q\n   ours: %q", name, want, got)
		}
	}

	// Libraries / LoadLibraries round trip.
	e2 := New(Options{})
	if err := e2.LoadLibraries(e.Libraries()); err != nil {
		t.Fatalf("LoadLibraries: %v", err)
	}
	if !bytes.Equal(e2.Libraries(), e.Libraries()) {
		t.Errorf("Libraries after LoadLibraries differ")
	}
	if err := e2.LoadLibraries([]byte("garbage")); err == nil {
		t.Errorf("LoadLibraries accepted garbage")
	}
	if err := e2.LoadLibraries(e.Libraries()[:0:0]); err == nil {
		t.Errorf("LoadLibraries accepted an empty payload")
	}

	// RESTORE errors and policies.
	l1 := lib("r1", "redis.register_function('rf1', function() return 1 end)")
	l1b := lib("r1", "redis.register_function('rf1b', function() return 11 end)")
	l2 := lib("r2", "redis.register_function('rf2', function() return 2 end)")
	l2clash := lib("r3", "redis.register_function('rf1', function() return 3 end)")
	good := payload(libRecord(l1), rdbVersion)
	cases := []step{
		{"FUNCTION", "RESTORE", good},
		{"FUNCTION", "RESTORE", good},
		{"FUNCTION", "RESTORE", good, "APPEND"},
		{"FUNCTION", "RESTORE", good, "replace"},
		{"FUNCTION", "RESTORE", payload(libRecord(l1b), rdbVersion), "REPLACE"},
		{"FCALL", "rf1b", "0"},
		{"FCALL", "rf1", "0"},
		{"FUNCTION", "RESTORE", payload(libRecord(l2clash), rdbVersion)},
		{"FUNCTION", "RESTORE", good, "FLUSH"},
		{"FUNCTION", "RESTORE", payload(append(libRecord(l2), libRecord(l2clash)...), rdbVersion)},
		{"FUNCTION", "RESTORE", payload(append(libRecord(l2), libRecord(l2)...), rdbVersion)},
		{"FUNCTION", "RESTORE", payload(libRecord(lib("bad", "return (")), rdbVersion)},
		{"FUNCTION", "RESTORE", payload(libRecord("no shebang"), rdbVersion)},
		{"FUNCTION", "RESTORE", payload([]byte{rdbOpcodeFunctionPreGA, 1, 2}, rdbVersion)},
		{"FUNCTION", "RESTORE", payload([]byte{1, 2, 3}, rdbVersion)},
		{"FUNCTION", "RESTORE", payload([]byte{rdbOpcodeFunction2, 0x10, 'a'}, rdbVersion)},
		{"FUNCTION", "RESTORE", payload([]byte{rdbOpcodeFunction2}, rdbVersion)},
		{"FUNCTION", "RESTORE", payload(libRecord(l2), rdbVersion+1)},
		{"FUNCTION", "RESTORE", payload(libRecord(l2), 9)},
		{"FUNCTION", "RESTORE", payload(nil, rdbVersion)},
		{"FUNCTION", "RESTORE", good[:len(good)-1] + "x"},
		{"FUNCTION", "RESTORE", good, "foo"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "r1"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "r2"},
		{"FUNCTION", "RESTORE", payload(append(appendRDBString(appendRDBString([]byte{rdbOpcodeFunctionPreGA}, []byte("pg")), []byte("LUA")), append([]byte{0}, appendRDBString(nil, []byte("redis.register_function('pg', function() return 1 end)"))...)...), rdbVersion)},
		{"FUNCTION", "RESTORE", payload(append(appendRDBString(appendRDBString([]byte{rdbOpcodeFunctionPreGA}, []byte("pg2")), []byte("LUA")), append([]byte{1}, appendRDBString(appendRDBString(nil, []byte("a description")), []byte("redis.register_function('pg2', function() return 2 end)"))...)...), rdbVersion)},
		{"FCALL", "pg2", "0"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "pg2", "WITHCODE"},
		{"FUNCTION", "RESTORE", payload(append(appendRDBString([]byte{rdbOpcodeFunctionPreGA}, []byte("pg3")), 0x10), rdbVersion)},
		{"FUNCTION", "RESTORE", payload(append(appendRDBString(appendRDBString([]byte{rdbOpcodeFunctionPreGA}, []byte("pg4")), []byte("LUA")), 0xC0), rdbVersion)},
		{"FUNCTION", "RESTORE", payload(append(appendRDBString(appendRDBString([]byte{rdbOpcodeFunctionPreGA}, []byte("pg5")), []byte("LUA")), 1), rdbVersion)},
		{"FUNCTION", "RESTORE", payload(append(libRecord(l2), libRecord(l1b)...), rdbVersion), "REPLACE"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "r2"},
		{"FCALL", "rf1b", "0"},
	}
	d.run(diffCase{name: "restore", proto: 2, steps: cases})
}

// bulkBody returns the payload of a bulk string reply.
func bulkBody(t *testing.T, reply []byte) string {
	t.Helper()
	i := bytes.Index(reply, []byte("\r\n"))
	if len(reply) == 0 || reply[0] != '$' || i < 0 {
		t.Fatalf("not a bulk string: %q", reply)
	}
	return string(reply[i+2 : len(reply)-2])
}
