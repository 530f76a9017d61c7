package upstream

import (
	"strings"

	"github.com/spillway/spillway/proxy/upstream/link"
)

// CONFIG in upstream mode. Spillway validates and stores every setting
// (its registry is Redis 7.0's, with Redis's errors), but most settings
// take effect where the data is: scripts run on the upstream (so
// busy-reply-threshold matters there), it publishes keyspace
// notifications, encodes values, keeps the slowlog and the latency
// monitor... A client configuring "its Redis" must reach it, or a
// CONFIG SET notify-keyspace-events silently does nothing. So CONFIG SET
// is applied by Spillway first (all or nothing, Redis's errors) and then
// forwarded for every setting but those below, and CONFIG GET reads
// those settings from the upstream.

// spillwayOnly are the settings that concern Spillway's own listener,
// clients, log, store and budget in upstream mode: never forwarded (the
// upstream's maxmemory, timeout or client limits apply to Spillway's own
// connections to it, and its password is in the upstream URL), and read
// from Spillway.
var spillwayOnly = map[string]bool{
	"port": true, "bind": true, "bind-source-addr": true, "unixsocket": true, "unixsocketperm": true,
	"tcp-backlog": true, "tcp-keepalive": true, "protected-mode": true, "requirepass": true,
	"maxclients": true, "timeout": true, "maxmemory-clients": true, "client-output-buffer-limit": true,
	"dir": true, "maxmemory": true, "appendfsync": true, "databases": true,
	"loglevel": true, "logfile": true, "syslog-enabled": true, "syslog-ident": true, "syslog-facility": true,
	"pidfile": true, "daemonize": true, "supervised": true, "io-threads": true, "io-threads-do-reads": true,
	"upstream": true, "upstream-connections": true, "promote-min-hits": true, "cold-read-max-bytes": true,
	"block-cache": true, "expire-sweep-keys-per-tick": true,
	// Spillway's replicas are counted (oom.go drives the upstream's).
	"min-replicas-to-write": true, "min-slaves-to-write": true,
	"min-replicas-max-lag": true, "min-slaves-max-lag": true,
}

// readLocally are the settings CONFIG GET reads from Spillway: its own,
// the request limits both apply (a bulk Spillway accepts must be one the
// upstream accepts, so they are set on both), and slowlog-max-len (the
// upstream holds more: applySlowlogLen).
func readLocally(name string) bool {
	return spillwayOnly[name] || name == "proto-max-bulk-len" || name == "client-query-buffer-limit" ||
		name == "slowlog-max-len"
}

// upConfigSet is CONFIG SET: Spillway's, then the upstream's for the
// settings it acts on. Once Spillway accepted the values the upstream
// accepts them too (the same validation), barring an upstream older than
// 7.0 or a setting it cannot apply; its error is then the reply.
func upConfigSet(c *client, args [][]byte) {
	if msg, refused := c.f.clusterConfigRefusal(args); refused {
		c.Err(msg)
		return
	}
	mark := c.w.Len()
	c.Call(c.f.configSet, args)
	if !c.replyOK(mark) || len(args)%2 != 0 {
		return
	}
	// The client's own words: the upstream's SLOWLOG and MONITOR show them.
	fwd := [][]byte{args[0], args[1]}
	slowlogLen := false // the upstream's own value follows (applySlowlogLen)
	for i := 2; i+1 < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		if !spillwayOnly[name] {
			fwd = append(fwd, args[i], args[i+1])
			slowlogLen = slowlogLen || name == "slowlog-max-len"
		}
	}
	if len(fwd) > 2 {
		c.alsoUpstream(mark, fwd)
		if slowlogLen && c.replyOK(mark) {
			c.f.applySlowlogLen()
		}
	}
}

// alsoUpstream runs args on the upstream after Spillway ran them with
// success (the reply at mark): an upstream failure replaces that reply.
func (c *client) alsoUpstream(mark int, args [][]byte) {
	r, err := c.f.ctlDo(c.f.defaultDB, args)
	c.upstreamVerdict(mark, r, err)
}

// upstreamVerdict settles a command Spillway ran with success (the reply
// at mark) and then sent upstream (reply r, or err): an upstream failure
// replaces the reply.
func (c *client) upstreamVerdict(mark int, r []byte, err error) {
	if err != nil || link.IsError(r) {
		c.w.Truncate(mark)
		if err != nil {
			c.Err(link.ErrorReply(err))
		} else {
			c.CountErrorReply()
			c.w.Raw(r)
		}
	}
}

// upConfigGet is CONFIG GET: the upstream's values of the settings it
// acts on (including those of a newer Redis that Spillway does not know),
// Spillway's for its own.
func upConfigGet(c *client, args [][]byte) {
	local := c.f.cfg.Get(args[2:]...)
	r, err := c.f.ctlDo(c.f.defaultDB, args)
	if err == nil && link.IsError(r) {
		c.CountErrorReply()
		c.w.Raw(r)
		return
	}
	var remote [][]byte
	if err == nil {
		remote, err = link.ParseBulks(r)
	}
	if err != nil {
		c.Err(link.ErrorReply(err))
		return
	}
	pairs := make([][2]string, 0, len(local)+len(remote)/2)
	for i := 0; i+1 < len(remote); i += 2 {
		if name := string(remote[i]); !readLocally(strings.ToLower(name)) {
			pairs = append(pairs, [2]string{name, string(remote[i+1])})
		}
	}
	for _, p := range local {
		if readLocally(strings.ToLower(p[0])) {
			pairs = append(pairs, p)
		}
	}
	c.w.Map(len(pairs))
	for _, p := range pairs {
		c.w.BulkString(p[0])
		c.w.BulkString(p[1])
	}
}

// upConfigResetStat is CONFIG RESETSTAT: Spillway's statistics and the
// upstream's (its command statistics are what INFO commandstats shows).
func upConfigResetStat(c *client, args [][]byte) {
	mark := c.w.Len()
	c.Call(c.f.configResetStat, args)
	if c.replyOK(mark) {
		c.alsoUpstream(mark, args)
		c.f.pool.OwnLookups().Reset() // with the upstream's (localstats.go)
	}
}
