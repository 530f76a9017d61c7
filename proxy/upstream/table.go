package upstream

import (
	"os"

	"github.com/spillway/spillway/proxy/cmdtable"
)

// localHandler is the form of the commands the front answers itself: it
// works on the client's upstream state and writes exactly one reply
// (forwarded ones included) by the time it returns.
type localHandler func(c *client, args [][]byte)

// localTable returns the commands Spillway answers itself in upstream
// mode (or handles before forwarding): connection state, its own
// configuration and clients, and the commands that must see both tiers.
// Spillway's own connection, configuration and client list are the
// server's handlers, run as the server runs them; the rest are the
// front's. Every other command is forwarded.
func (f *Front) localTable() map[*cmdtable.Command]localHandler {
	t := map[*cmdtable.Command]localHandler{}
	lookup := func(name string) *cmdtable.Command {
		c := cmdtable.LookupFullName([]byte(name))
		if c == nil {
			panic("proxy: upstream mode: no command " + name)
		}
		return c
	}
	serverHandler := func(cmd *cmdtable.Command) localHandler {
		h := f.srv.Handler(cmd)
		if h == nil {
			return nil
		}
		return func(c *client, args [][]byte) { c.Call(h, args) }
	}
	local := func(name string, h localHandler) { t[lookup(name)] = h }
	f.monitorLocal = map[*cmdtable.Command]bool{lookup("auth"): true, lookup("hello"): true}
	for _, name := range []string{"auth", "quit", "shutdown"} {
		t[lookup(name)] = serverHandler(lookup(name))
	}
	// ACL is Spillway's: it authenticates and authorizes clients itself
	// (AUTH, HELLO AUTH are local), and its connections to the upstream
	// log in with the URL's credentials.
	for _, parent := range []string{"client", "command", "config", "acl"} {
		for _, sub := range lookup(parent).Subcommands {
			if h := serverHandler(sub); h != nil {
				t[sub] = h
				f.monitorLocal[sub] = true
			}
		}
	}
	for _, name := range []string{"acl|deluser", "acl|load"} {
		// Users gone lose their scripts' mirrors upstream (aclmirror).
		h := t[lookup(name)]
		local(name, func(c *client, args [][]byte) {
			h(c, args)
			if err := c.f.mirrors.Sweep(c.ACL()); err != nil {
				c.f.log.Warn("ACL mirror users left on the upstream", "err", err)
			}
		})
	}
	for _, name := range []string{"client|tracking", "client|caching", "client|getredir", "client|trackinginfo"} {
		delete(t, lookup(name))
		delete(f.monitorLocal, lookup(name))
	}
	f.pauseTable(t, lookup) // pause.go
	f.configSet = f.srv.Handler(lookup("config|set"))
	f.configResetStat = f.srv.Handler(lookup("config|resetstat"))
	local("config|set", upConfigSet)
	local("config|get", upConfigGet)
	local("config|resetstat", upConfigResetStat)
	f.clientUnblock = f.srv.Handler(lookup("client|unblock"))
	local("client|unblock", upClientUnblock)
	f.hello = f.srv.Handler(lookup("hello"))
	f.reset = f.srv.Handler(lookup("reset"))
	f.sel = f.srv.Handler(lookup("select"))
	f.randomKey = f.srv.Handler(lookup("randomkey"))
	local("client|tracking", upClientTracking)
	for _, name := range []string{"sort", "sort_ro"} {
		cmd := lookup(name)
		local(name, func(c *client, args [][]byte) { upSort(c, cmd, args) })
	}
	for _, name := range []string{"client|getredir", "client|trackinginfo"} {
		cmd := lookup(name)
		local(name, func(c *client, args [][]byte) { upTrackingQuery(c, cmd, args) })
	}
	local("hello", upHello)
	local("reset", upReset)
	local("select", upSelect)
	local("multi", upMulti)
	local("exec", upEndTx)
	local("discard", upEndTx)
	local("watch", upWatch)
	local("unwatch", upUnwatch)
	for _, name := range []string{"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "monitor"} {
		local(name, upPassthroughCommand)
	}
	local("info", upInfo)
	f.latencyHistogram = f.srv.Handler(lookup("latency|histogram"))
	local("latency|histogram", upLatencyHistogram) // localstats.go
	f.slowlogTable(lookup, local)                  // slowlog.go
	local("dbsize", upDBSize)
	local("keys", upKeys)
	local("scan", upScan)
	local("randomkey", upRandomKey)
	local("flushdb", upFlush)
	local("flushall", upFlush)
	local("swapdb", upSwapDB)
	local("move", upMove)
	local("copy", upCopy)
	// Spillway's own replicas (relay.go); a cluster sidecar's path may
	// replace sync and psync in clusterTable.
	local("sync", upSync)
	local("psync", upSync)
	local("replconf", upReplconf(serverHandler(lookup("replconf"))))
	local("role", nodeInCluster(lookup("role"), serverHandler(lookup("role"))))
	local("wait", nodeInCluster(lookup("wait"), upWait))
	local("replicaof", upReplicaOf)
	local("slaveof", upReplicaOf)
	local("failover", upRefuseReplicaOf)
	f.clusterTable(lookup, local)
	if os.Getenv("SPILLWAY_TEST_HOOKS") == "1" {
		local("debug", upDebug)
	}
	return t
}
