package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// Upstream mode's scripts run as the calling client's ACL user: a
// restricted Spillway user's EVAL, EVALSHA, FCALL and FCALL_RO run on the
// upstream as its mirror user (proxy/upstream/aclmirror), so redis.call
// and redis.acl_check_cmd answer as a redis-server configured with the
// same user does. The scenario runs on a plain redis-server and on
// Spillway in front of another one; the observations must be identical.

const aclScriptLib = "#!lua name=acllib\n" +
	"redis.register_function('getarg', function(keys, args) return redis.call('get', args[1]) end)\n" +
	"redis.register_function{function_name='getro', callback=function(keys, args) return redis.call('get', args[1]) end, flags={'no-writes'}}\n" +
	"redis.register_function('check', function(keys, args) return redis.acl_check_cmd(unpack(args)) end)"

// aclScriptObserve runs the scenario on srv and returns what it observed.
func aclScriptObserve(t *testing.T, srv *harness.Server) []string {
	t.Helper()
	var obs []string
	admin := srv.Conn(t)
	bob := srv.Conn(t)
	do := func(who string, c *harness.Conn, args ...string) string {
		r := c.Do(args...)
		obs = append(obs, fmt.Sprintf("%s %s: %q", who, strings.Join(args, " "), r.Raw))
		return r.Str
	}
	do("admin", admin, "ACL", "SETUSER", "bob", "on", ">pw", "~x*", "+@scripting", "+get", "+set")
	do("admin", admin, "SET", "secret", "s")
	do("admin", admin, "SET", "x1", "v1")
	do("admin", admin, "FUNCTION", "LOAD", aclScriptLib)
	// The default user's scripts are unchanged.
	do("admin", admin, "EVAL", "return redis.call('get', 'secret')", "0")
	do("bob", bob, "AUTH", "bob", "pw")

	get := "return redis.call('get', ARGV[1])"
	do("bob", bob, "EVAL", get, "0", "x1")
	do("bob", bob, "EVAL", get, "0", "secret")
	do("bob", bob, "EVAL", "return redis.call('hset', 'x2', 'f', 'v')", "0")
	do("bob", bob, "EVAL", "return redis.call('set', 'x3', 'v')", "0")
	do("bob", bob, "EVAL_RO", get, "0", "secret")
	// redis.acl_check_cmd answers for bob (the suite's "Script ACL check").
	for _, check := range [][]string{{"set", "xx", "1"}, {"hset", "xx", "f", "1"}, {"set", "yy", "1"}} {
		do("bob", bob, append([]string{"EVAL", "return redis.acl_check_cmd(unpack(ARGV))", "0"}, check...)...)
		do("bob", bob, append([]string{"FCALL", "check", "0"}, check...)...)
	}
	sha := do("bob", bob, "SCRIPT", "LOAD", get)
	do("bob", bob, "EVALSHA", sha, "0", "x1")
	do("bob", bob, "EVALSHA", sha, "0", "secret")
	do("bob", bob, "EVALSHA_RO", sha, "0", "secret")
	// Spillway's own check of the declared keys stays.
	do("bob", bob, "EVAL", "return redis.call('get', KEYS[1])", "1", "secret")
	do("bob", bob, "FCALL", "getarg", "0", "x1")
	do("bob", bob, "FCALL", "getarg", "0", "secret")
	do("bob", bob, "FCALL_RO", "getro", "0", "secret")

	// A change of bob's rules applies to its next script.
	do("admin", admin, "ACL", "SETUSER", "bob", "~secret")
	do("bob", bob, "EVAL", get, "0", "secret")
	do("bob", bob, "FCALL", "getarg", "0", "secret")
	do("admin", admin, "ACL", "SETUSER", "bob", "resetkeys", "~x*", "-set")
	do("bob", bob, "EVAL", get, "0", "secret")
	do("bob", bob, "EVAL", "return redis.call('set', 'x3', 'v')", "0")
	do("bob", bob, "EVAL", "return redis.acl_check_cmd('set', 'x3', 'v')", "0")

	// RESP3.
	bob.Do("HELLO", "3") // its reply holds the client id
	do("bob", bob, "EVAL", get, "0", "x1")
	do("bob", bob, "EVAL", get, "0", "secret")
	do("admin", admin, "EVAL", "return redis.call('get', 'x3')", "0")
	return obs
}

// upstreamMirrors lists the mirror users on the upstream.
func upstreamMirrors(t *testing.T, up *harness.Conn) []string {
	t.Helper()
	var out []string
	for _, e := range up.Do("ACL", "USERS").Elems {
		if strings.HasPrefix(e.Str, "spillway:") {
			out = append(out, e.Str)
		}
	}
	return out
}

func TestACLScriptsUpstream(t *testing.T) {
	ref := harness.StartRedis(t)
	want := aclScriptObserve(t, ref)

	up := harness.StartRedis(t)
	sp := harness.StartSpillway(t, "", "--upstream", "redis://"+up.Addr())
	got := aclScriptObserve(t, sp)
	if len(got) != len(want) {
		t.Fatalf("%d observations, redis-server had %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("observation %d:\n spillway: %s\n    redis: %s", i, got[i], want[i])
		}
	}

	// bob's mirror is on the upstream, with bob's rules; ACL DELUSER
	// removes it.
	upc := up.Conn(t)
	if m := upstreamMirrors(t, upc); len(m) != 1 || m[0] != "spillway:bob" {
		t.Fatalf("upstream mirror users %q, want [spillway:bob]", m)
	}
	admin := sp.Conn(t)
	mirror := strings.TrimPrefix(upc.Do("ACL", "LIST").Elems[0].Str, "user spillway:bob ")
	bobRules := admin.Do("ACL", "GETUSER", "bob")
	upRules := upc.Do("ACL", "GETUSER", "spillway:bob")
	for _, field := range []string{"commands", "keys", "channels"} {
		if a, b := replyField(bobRules, field), replyField(upRules, field); a != b {
			t.Errorf("mirror's %s %q, bob's %q (mirror %s)", field, b, a, mirror)
		}
	}
	if r := admin.Do("ACL", "DELUSER", "bob"); r.Int != 1 {
		t.Fatalf("ACL DELUSER bob: %q", r.Raw)
	}
	if m := upstreamMirrors(t, upc); len(m) != 0 {
		t.Fatalf("upstream mirror users after ACL DELUSER: %q", m)
	}

}

// TestACLScriptsUpstreamNoACLRights: when Spillway's upstream user may not
// create users, a restricted user's script fails with a clear error and
// never runs with Spillway's rights.
func TestACLScriptsUpstreamNoACLRights(t *testing.T) {
	up := harness.StartRedis(t)
	upc := up.Conn(t)
	upc.Do("ACL", "SETUSER", "sp", "on", ">sppw", "~*", "&*", "+@all", "-acl")
	sp := harness.StartSpillway(t, "", "--upstream", "redis://sp:sppw@"+up.Addr())
	admin := sp.Conn(t)
	admin.Do("ACL", "SETUSER", "bob", "on", ">pw", "~x*", "+@all")
	if r := admin.Do("EVAL", "return redis.call('set', 'y0', '1')", "0"); r.Str != "OK" {
		t.Fatalf("default user's EVAL: %q", r.Raw)
	}
	bob := sp.Conn(t)
	bob.Do("AUTH", "bob", "pw")
	r := bob.Do("EVAL", "return redis.call('set', 'y1', '1')", "0")
	if !strings.Contains(r.Str, "refused the mirror of ACL user 'bob'") || !strings.Contains(r.Str, "NOPERM") {
		t.Fatalf("EVAL without ACL rights upstream: %q", r.Raw)
	}
	if r := upc.Do("EXISTS", "y1"); r.Int != 0 {
		t.Fatalf("the script ran although its user could not be mirrored")
	}
}

// aclScriptPinnedObserve runs a restricted user's scripts inside MULTI
// and on a RESP3 subscribed connection on srv and returns what it
// observed.
func aclScriptPinnedObserve(t *testing.T, srv *harness.Server) []string {
	t.Helper()
	var obs []string
	admin := srv.Conn(t)
	dave := srv.Conn(t)
	do := func(who string, c *harness.Conn, args ...string) {
		r := c.Do(args...)
		obs = append(obs, fmt.Sprintf("%s %s: %q", who, strings.Join(args, " "), r.Raw))
	}
	do("admin", admin, "ACL", "SETUSER", "dave", "on", ">pw", "~x*", "&*", "+@scripting", "+get", "+set",
		"+multi", "+exec", "+discard", "+subscribe", "+unsubscribe", "+ping", "+hello")
	do("admin", admin, "SET", "secret", "s")
	do("admin", admin, "FUNCTION", "LOAD", aclScriptLib)
	do("dave", dave, "AUTH", "dave", "pw")
	get := "return redis.call('get', ARGV[1])"
	// EXEC with an allowed script, one denied by key pattern, one denied
	// by command, and functions.
	do("dave", dave, "MULTI")
	do("dave", dave, "EVAL", "return redis.call('set', 'x1', 'a')", "0")
	do("dave", dave, "EVAL", get, "0", "x1")
	do("dave", dave, "EVAL", get, "0", "secret")
	do("dave", dave, "EVAL", "return redis.call('hset', 'x2', 'f', 'v')", "0")
	do("dave", dave, "FCALL", "getarg", "0", "secret")
	do("dave", dave, "FCALL_RO", "getro", "0", "x1")
	do("dave", dave, "EVAL", "return redis.acl_check_cmd('set', 'secret', '1')", "0")
	do("dave", dave, "EXEC")
	// A declared key outside the user's patterns fails the transaction.
	do("dave", dave, "MULTI")
	do("dave", dave, "EVAL", "return redis.call('get', KEYS[1])", "1", "secret")
	do("dave", dave, "EVAL", get, "0", "x1")
	do("dave", dave, "EXEC")
	// The user's rules as EXEC finds them.
	do("dave", dave, "MULTI")
	do("dave", dave, "EVAL", get, "0", "x1")
	do("admin", admin, "ACL", "SETUSER", "dave", "resetkeys", "~secret")
	do("dave", dave, "EVAL", get, "0", "secret")
	do("dave", dave, "EXEC")
	do("admin", admin, "ACL", "SETUSER", "dave", "resetkeys", "~x*")
	// The default user's transaction is unchecked, as Redis's.
	do("admin", admin, "MULTI")
	do("admin", admin, "EVAL", get, "0", "secret")
	do("admin", admin, "EXEC")

	// A client pinned as the default user (SELECT) that logs in as dave,
	// then back (RESET).
	erin := srv.Conn(t)
	do("erin", erin, "SELECT", "1")
	do("erin", erin, "AUTH", "dave", "pw")
	do("erin", erin, "MULTI")
	do("erin", erin, "EVAL", get, "0", "secret")
	do("erin", erin, "EVAL", get, "0", "x1")
	do("erin", erin, "EXEC")
	do("erin", erin, "RESET")
	do("erin", erin, "MULTI")
	do("erin", erin, "EVAL", get, "0", "secret")
	do("erin", erin, "EXEC")

	// RESP3, subscribed.
	dave.Do("HELLO", "3") // its reply holds the client id
	do("dave", dave, "SUBSCRIBE", "ch")
	do("dave", dave, "EVAL", get, "0", "x1")
	do("dave", dave, "EVAL", get, "0", "secret")
	do("dave", dave, "EVAL", "return redis.call('hset', 'x2', 'f', 'v')", "0")
	do("dave", dave, "EVAL", "return redis.call('get', KEYS[1])", "1", "secret")
	do("dave", dave, "FCALL", "getarg", "0", "secret")
	do("dave", dave, "FCALL", "getarg", "0", "x1")
	do("admin", admin, "PUBLISH", "ch", "hello")
	obs = append(obs, fmt.Sprintf("dave message: %q", dave.Read().Raw))
	do("dave", dave, "EVAL", get, "0", "x1")
	do("dave", dave, "UNSUBSCRIBE", "ch")
	do("dave", dave, "EVAL", get, "0", "secret")
	do("admin", admin, "EXISTS", "x2")
	return obs
}

// TestACLScriptsPinnedUpstream: a restricted user's scripts inside MULTI
// and while subscribed (RESP3) run on the upstream as its mirror, answered
// as a redis-server holding the same user answers.
func TestACLScriptsPinnedUpstream(t *testing.T) {
	ref := harness.StartRedis(t)
	want := aclScriptPinnedObserve(t, ref)

	up := harness.StartRedis(t)
	sp := harness.StartSpillway(t, "", "--upstream", "redis://"+up.Addr())
	got := aclScriptPinnedObserve(t, sp)
	if len(got) != len(want) {
		t.Fatalf("%d observations, redis-server had %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("observation %d:\n spillway: %s\n    redis: %s", i, got[i], want[i])
		}
	}
}

// replyField returns the field of an ACL GETUSER reply (a flat map).
func replyField(r harness.Reply, name string) string {
	for i := 0; i+1 < len(r.Elems); i += 2 {
		if r.Elems[i].Str == name {
			return r.Elems[i+1].Str
		}
	}
	return ""
}
