package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// ACL users against a real redis-server 7.0 and the spillway binary, side
// by side: authentication, NOPERM refusals (top level, inside MULTI, at
// EXEC after the rules changed, in scripts), ACL LOG entries, the clients
// of a deleted user or of one whose channels are taken away being
// disconnected, the default user following requirepass, CLIENT LIST's
// user= and CLIENT KILL USER. The observations of both servers must be
// identical.

// aclObserve runs the scenario on srv and returns what it observed.
func aclObserve(t *testing.T, srv *harness.Server) []string {
	t.Helper()
	var obs []string
	note := func(who string, r harness.Reply) {
		obs = append(obs, fmt.Sprintf("%s: %q", who, r.Raw))
	}
	admin := srv.Conn(t)
	bob := srv.Conn(t)
	sub := srv.Conn(t)
	do := func(who string, c *harness.Conn, args ...string) {
		note(who+" "+strings.Join(args, " "), c.Do(args...))
	}
	closed := func(who string, c *harness.Conn) {
		_, gone := c.ReadAll(5 * time.Second) // a bound for a stuck server
		obs = append(obs, fmt.Sprintf("%s closed: %v", who, gone))
	}

	do("admin", admin, "ACL", "SETUSER", "bob", "on", ">pw", "~a*", "&news", "+@all", "-flushall")
	do("bob", bob, "GET", "b1") // not authenticated as bob yet: default user
	do("bob", bob, "AUTH", "bob", "wrong")
	do("bob", bob, "AUTH", "bob", "pw")
	do("bob", bob, "ACL", "WHOAMI")
	do("bob", bob, "SET", "a1", "v")
	do("bob", bob, "GET", "b1")
	do("bob", bob, "FLUSHALL")
	do("bob", bob, "PUBLISH", "news", "x")
	do("bob", bob, "PUBLISH", "other", "x")
	do("bob", bob, "EVAL", "return redis.call('get', 'b2')", "0")
	do("bob", bob, "EVAL", "return redis.acl_check_cmd('get', 'b2')", "0")
	do("bob", bob, "EVAL", "return redis.acl_check_cmd('get', 'a2')", "0")
	// A refusal inside MULTI fails the transaction.
	do("bob", bob, "MULTI")
	do("bob", bob, "GET", "b1")
	do("bob", bob, "EXEC")
	// Rules changed between queueing and EXEC.
	do("bob", bob, "MULTI")
	do("bob", bob, "GET", "a1")
	do("bob", bob, "PING")
	do("admin", admin, "ACL", "SETUSER", "bob", "resetkeys", "~b*")
	do("bob", bob, "EXEC")
	do("bob", bob, "GET", "b1")

	// ACL LOG: everything but the age and the client's line (whose
	// addresses and memory differ), of which the user, command, flags,
	// database, transaction and argument size are kept.
	log := admin.Do("ACL", "LOG")
	for _, e := range log.Elems {
		var fields []string
		for i := 0; i+1 < len(e.Elems); i += 2 {
			k, v := e.Elems[i].Str, e.Elems[i+1]
			switch k {
			case "age-seconds":
				continue
			case "client-info":
				f := strings.Fields(v.Str)
				var keep []string
				for _, kv := range f {
					if strings.HasPrefix(kv, "user=") || strings.HasPrefix(kv, "cmd=") || strings.HasPrefix(kv, "flags=") ||
						strings.HasPrefix(kv, "argv-mem=") || strings.HasPrefix(kv, "multi=") || strings.HasPrefix(kv, "db=") {
						keep = append(keep, kv)
					}
				}
				fields = append(fields, k+"="+strings.Join(keep, ","))
			default:
				fields = append(fields, k+"="+v.Str)
			}
		}
		obs = append(obs, "log: "+strings.Join(fields, " "))
	}
	do("admin", admin, "ACL", "LOG", "RESET")
	do("admin", admin, "ACL", "LOG")

	// CLIENT LIST's user= and CLIENT KILL USER.
	do("admin", admin, "CLIENT", "SETNAME", "admin")
	do("bob", bob, "CLIENT", "SETNAME", "bobconn")
	line := admin.Do("CLIENT", "LIST")
	for _, l := range strings.Split(line.Str, "\n") {
		if strings.Contains(l, "name=bobconn") || strings.Contains(l, "name=admin") {
			for _, kv := range strings.Fields(l) {
				if strings.HasPrefix(kv, "user=") || strings.HasPrefix(kv, "name=") {
					obs = append(obs, "client list: "+kv)
				}
			}
		}
	}
	do("admin", admin, "CLIENT", "KILL", "USER", "nosuch")
	do("admin", admin, "CLIENT", "KILL", "USER", "bob")
	closed("bob", bob)

	// Taking a channel away from a user disconnects its subscribers to it.
	do("sub", sub, "AUTH", "bob", "pw")
	do("sub", sub, "MULTI")
	do("sub", sub, "SUBSCRIBE", "news", "other")
	do("sub", sub, "PSUBSCRIBE", "news*")
	do("sub", sub, "DISCARD")
	do("sub", sub, "SSUBSCRIBE", "other")
	do("sub", sub, "SUBSCRIBE", "news")
	do("admin", admin, "ACL", "SETUSER", "bob", "&more")
	do("admin", admin, "PUBLISH", "news", "still-subscribed")
	note("sub message", sub.Read())
	do("admin", admin, "ACL", "SETUSER", "bob", "resetchannels", "&more")
	closed("sub", sub)

	// Deleting a user disconnects its clients.
	bob2 := srv.Conn(t)
	do("bob2", bob2, "AUTH", "bob", "pw")
	do("admin", admin, "ACL", "DELUSER", "bob", "nosuch")
	closed("bob2", bob2)

	// The default user follows requirepass.
	do("admin", admin, "CONFIG", "SET", "requirepass", "secret")
	anon := srv.Conn(t)
	do("anon", anon, "GET", "x")
	do("anon", anon, "AUTH", "nosecret")
	do("anon", anon, "AUTH", "secret")
	do("anon", anon, "ACL", "WHOAMI")
	do("anon", anon, "RESET")
	do("anon", anon, "GET", "x")
	do("anon", anon, "HELLO", "2", "AUTH", "default", "secret", "SETNAME", "x y")
	do("anon", anon, "GET", "x")
	do("admin", admin, "ACL", "GETUSER", "default")
	do("admin", admin, "CONFIG", "SET", "requirepass", "")
	anon2 := srv.Conn(t)
	do("anon2", anon2, "GET", "x")
	do("admin", admin, "ACL", "GETUSER", "default")
	return obs
}

func TestACLMatchesRedis(t *testing.T) {
	targets := clientTargets(t)
	want := aclObserve(t, targets[0].srv)
	got := aclObserve(t, targets[1].srv)
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("observation %d:\n redis:    %s\n spillway: %s", i, w, g)
		}
	}
}

// Users defined at start (user directives) work as in Redis, the default
// user's included ("ACL from config file and config rewrite").
func TestACLConfigUsersMatchRedis(t *testing.T) {
	args := []string{"--user", "default", "on", "nopass", "~*", "&*", "+@all", "-flushdb",
		"--user", "alice", "on", ">pw", "~a*", "+get"}
	var obs [2][]string
	for i, srv := range []*harness.Server{harness.StartRedis(t, args...), harness.StartSpillway(t, "", args...)} {
		c := srv.Conn(t)
		for _, cmd := range [][]string{
			{"FLUSHDB"}, {"ACL", "LIST"}, {"AUTH", "alice", "pw"}, {"GET", "a1"}, {"GET", "b1"}, {"ACL", "WHOAMI"},
		} {
			obs[i] = append(obs[i], fmt.Sprintf("%s: %q", strings.Join(cmd, " "), c.Do(cmd...).Raw))
		}
	}
	for i := range obs[0] {
		if obs[0][i] != obs[1][i] {
			t.Errorf("redis:    %s\nspillway: %s", obs[0][i], obs[1][i])
		}
	}
}
