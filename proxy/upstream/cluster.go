package upstream

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/upstream/link"
)

// Redis Cluster: Spillway as a sidecar in front of one cluster node.
//
// The deployment: the node announces the sidecar's address as its own
// (cluster-announce-ip and cluster-announce-port) and its real bus port
// (cluster-announce-bus-port), so the nodes gossip with each other directly
// while CLUSTER SLOTS/SHARDS/NODES, -MOVED and -ASK name sidecars only, and
// are relayed verbatim. acceptCluster admits a cluster node only when it is
// deployed so. The front then adds what the node cannot know of:
//
//   - ASKING is a connection's flag for its next command: on a shared
//     connection another client's command could consume it, so the front
//     keeps the flag per client and sends ASKING glued to that command;
//   - CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT count and list the cold
//     keys of the slot too;
//   - MIGRATE moves cold keys itself: it sends each one's RESTORE payload,
//     built from the store, to the target (RESTORE-ASKING) and drops it
//     here, then forwards MIGRATE for the keys the node holds. Reloading a
//     cold key into the node first would not do: in a MIGRATING slot, the
//     node answers -ASK to a RESTORE of a key it does not have.

// acceptCluster is the pool's check of a cluster-mode upstream: the node's
// own entry in CLUSTER NODES must announce this Spillway's address (its
// port, and an address Spillway listens on), else clients would be handed
// the node's address and bypass Spillway and its cold keys.
func (f *Front) acceptCluster(c *link.Conn, addr string) error {
	r, err := c.Do("CLUSTER", "NODES")
	if err != nil {
		return fmt.Errorf("%w: %s: %v", link.ErrUnavailable, addr, err)
	}
	if link.IsError(r) {
		return fmt.Errorf("%w: %s: CLUSTER NODES: %s", link.ErrClusterUpstream, addr, link.ReplyText(r))
	}
	ip, port, ok := myselfAddr(bulkBody(r))
	if !ok {
		return fmt.Errorf("%w: %s: no address in CLUSTER NODES's myself entry", link.ErrClusterUpstream, addr)
	}
	if port != strconv.Itoa(f.cfg.Port()) || !f.ownIP(ip) {
		return fmt.Errorf("%w: %s announces itself as %s:%s, not as this Spillway (port %d): "+
			"set the node's cluster-announce-ip and cluster-announce-port to Spillway's address and "+
			"cluster-announce-bus-port to the node's bus port (README: Redis Cluster (sidecars))",
			link.ErrClusterUpstream, addr, ip, port, f.cfg.Port())
	}
	if !f.cluster.Swap(true) {
		f.log.Info("upstream is a Redis Cluster node announcing this Spillway's address", "upstream", addr, "announced", ip+":"+port)
	}
	f.follow.start() // the node's role decides the cold feed (cluster_follow.go)
	return nil
}

// bulkBody returns the text of a bulk or verbatim string reply.
func bulkBody(r []byte) []byte {
	i := bytes.Index(r, []byte("\r\n"))
	if i < 0 || len(r) < i+4 {
		return nil
	}
	b := r[i+2 : len(r)-2]
	if r[0] == '=' && len(b) >= 4 {
		b = b[4:] // "txt:"
	}
	return b
}

// myselfAddr finds the node's own line in CLUSTER NODES ("<id>
// <ip>:<port>@<bus>[,<hostname>] <flags> ...", flags holding "myself") and
// returns its ip and port.
func myselfAddr(nodes []byte) (ip, port string, ok bool) {
	for _, line := range strings.Split(string(nodes), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || !strings.Contains(","+fields[2]+",", ",myself,") {
			continue
		}
		a := fields[1]
		if i := strings.IndexAny(a, "@,"); i >= 0 {
			a = a[:i]
		}
		i := strings.LastIndexByte(a, ':')
		if i < 0 {
			return "", "", false
		}
		return a[:i], a[i+1:], i > 0
	}
	return "", "", false
}

// ownIP reports whether Spillway listens on ip: one of its bind addresses,
// or, when it binds a wildcard, an address of one of the host's interfaces.
func (f *Front) ownIP(ip string) bool {
	want := net.ParseIP(ip)
	if want == nil {
		return false
	}
	wildcard := false
	binds := f.cfg.Bind()
	for _, b := range binds {
		b = strings.TrimPrefix(b, "-")
		switch b {
		case "*", "::*", "0.0.0.0", "::":
			wildcard = true
			continue
		}
		if got := net.ParseIP(b); got != nil && got.Equal(want) {
			return true
		}
	}
	if !wildcard && len(binds) > 0 {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(want) {
			return true
		}
	}
	return false
}

// clusterTable adds the commands the front handles itself in front of a
// cluster node; in front of a standalone Redis each is forwarded (or run)
// as before.
func (f *Front) clusterTable(lookup func(string) *cmdtable.Command, local func(string, localHandler)) {
	for _, name := range []string{"asking", "readonly", "readwrite"} {
		cmd := lookup(name)
		local(name, func(c *client, args [][]byte) { upClusterFlag(c, cmd, args) })
	}
	migrate := lookup("migrate")
	local("migrate", func(c *client, args [][]byte) { upMigrate(c, migrate, args) })
	for _, name := range []string{"cluster|countkeysinslot", "cluster|getkeysinslot"} {
		cmd := lookup(name)
		local(name, func(c *client, args [][]byte) { upKeysInSlot(c, cmd, args) })
	}
}

// nodeInCluster returns h for a front in front of a plain Redis, and the
// node's own answer in front of a cluster node: a sidecar's replicas are
// the node's (spliced, cluster_repl.go), so ROLE and WAIT are the node's.
func nodeInCluster(cmd *cmdtable.Command, h localHandler) localHandler {
	return func(c *client, args [][]byte) {
		if c.f.cluster.Load() {
			c.upRouteNow(cmd, args)
			return
		}
		h(c, args)
	}
}

// upClusterFlag handles ASKING, READONLY and READWRITE, which set a flag on
// the connection they come on. On a pinned connection, the client's own,
// they are forwarded. Otherwise ASKING is kept for the client's next
// command (upAskingForward), and READONLY/READWRITE are answered +OK
// without effect: they matter to a replica only, and a sidecar fronts a
// primary, which serves its slots either way.
func upClusterFlag(c *client, cmd *cmdtable.Command, args [][]byte) {
	if !c.f.cluster.Load() || c.pinned != nil || c.inMulti || c.passthrough {
		c.upRouteNow(cmd, args)
		return
	}
	c.asking = cmd.Name == "asking"
	c.w.OK()
}

// upAskingForward forwards the command that follows ASKING with ASKING
// before it, in one batch on the shared connection, and relays the
// command's reply only. A command meeting a cold key takes the usual path
// (the cold key is this node's, whatever the slot's state).
func (c *client) upAskingForward(cmd *cmdtable.Command, args [][]byte) {
	c.flushForwards()
	c.enterGate()
	idx := c.f.index(c.DB())
	if idx.Len() > 0 {
		keys, _ := cmd.KeyPositions(args, c.keyBuf[:0])
		c.keyBuf = keys
		for _, p := range keys {
			if idx.Has(codec.KeyHash(args[p])) {
				c.leaveGate()
				c.upForward(cmd, args)
				return
			}
		}
	}
	reqs := link.AppendCommandStrings(nil, []string{"ASKING"})
	reqs = link.AppendCommand(reqs, args)
	m, err := c.f.pool.Shared(c.w.Proto, c.id)
	if err == nil {
		call := c.ctlCall
		call.Replies = call.Replies[:0]
		err = m.Do(call, reqs, 2)
		if err == nil {
			r := call.Replies
			if bytes.HasPrefix(r, []byte("+OK\r\n")) {
				r = r[5:]
			}
			c.w.Raw(r)
		}
	}
	c.leaveGate()
	if err != nil {
		c.Err(link.ErrorReply(err))
	}
}

// upKeysInSlot runs CLUSTER COUNTKEYSINSLOT or GETKEYSINSLOT upstream (which
// checks the arguments) and adds the slot's cold keys from the slot
// directory: their count, or as many of them as the count asks for after
// the node's own. Like DBSIZE, it holds the census, so a key moving
// between tiers is seen once.
func upKeysInSlot(c *client, cmd *cmdtable.Command, args [][]byte) {
	if !c.f.cluster.Load() || c.inMulti || c.passthrough {
		c.upRouteNow(cmd, args)
		return
	}
	c.f.census.Lock()
	defer c.f.census.Unlock()
	r, err := c.ctlDo(c.DB(), args)
	if err != nil {
		c.Err(link.ErrorReply(err))
		return
	}
	if link.IsError(r) || len(args) < 3 {
		c.w.Raw(r)
		return
	}
	slot, err := strconv.Atoi(string(args[2]))
	if err != nil {
		c.w.Raw(r)
		return
	}
	if strings.HasSuffix(cmd.Name, "countkeysinslot") {
		n, ok := link.IntReply(r)
		if !ok {
			c.w.Raw(r)
			return
		}
		err := c.f.slots.Keys(c.DB(), slot, func([]byte) bool { n++; return true })
		if err != nil {
			c.ReplyError(err)
			return
		}
		c.w.Int(n)
		return
	}
	if len(args) < 4 {
		c.w.Raw(r)
		return
	}
	hot, err := link.ParseBulks(r)
	want, err2 := strconv.ParseInt(string(args[3]), 10, 64)
	if err != nil || err2 != nil {
		c.w.Raw(r)
		return
	}
	keys := hot
	if int64(len(keys)) < want {
		err = c.f.slots.Keys(c.DB(), slot, func(k []byte) bool {
			keys = append(keys, k)
			return int64(len(keys)) < want
		})
		if err != nil {
			c.ReplyError(err)
			return
		}
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
}

// migratingReloadError is the reply to a command whose cold key could not
// be reloaded because the node is a replica (its -MOVED, relayed) or the
// key's slot is being migrated away (the node answered
// the RESTORE with -ASK: it does not have the key, so it sends the client
// to the target, which does not have it yet either). The key is still
// this sidecar's: the reshard's MIGRATE moves it soon, so the client is
// told to retry (-TRYAGAIN, which cluster clients retry), and then finds
// it at the target.
func migratingReloadError(key []byte, err error) (string, bool) {
	if strings.HasPrefix(err.Error(), "MOVED ") {
		// A replica's sidecar (the node refused the RESTORE): the
		// client is sent to the slot's primary, as the node would.
		return link.FirstLine(err.Error()), true
	}
	if !strings.HasPrefix(err.Error(), "ASK ") {
		return "", false
	}
	return "TRYAGAIN cold key '" + cstr.ErrArg(key) + "' is in a slot being migrated; try again", true
}

// upRouteNow runs a command the front handles only in front of a cluster
// node as any other command (upRoute), its reply in by the time it
// returns, as a local handler's must be.
func (c *client) upRouteNow(cmd *cmdtable.Command, args [][]byte) {
	c.upRoute(cmd, args)
	c.flushForwards()
}

// announceSettings are the node's settings that choose the address the
// cluster gives clients for it (CLUSTER SLOTS/NODES, -MOVED, -ASK).
var announceSettings = map[string]bool{
	"cluster-announce-ip": true, "cluster-announce-port": true, "cluster-announce-tls-port": true,
	"cluster-announce-bus-port": true, "cluster-announce-hostname": true, "cluster-preferred-endpoint-type": true,
}

// clusterConfigRefusal refuses, in front of a cluster node, a CONFIG SET of
// a setting that would change the address the node announces: through its
// sidecar, it could hand clients the node's own address. It is changed on
// the node itself (and the sidecar then checks it again when it
// reconnects).
func (f *Front) clusterConfigRefusal(args [][]byte) (string, bool) {
	if !f.cluster.Load() {
		return "", false
	}
	for i := 2; i < len(args); i += 2 {
		if name := strings.ToLower(string(args[i])); announceSettings[name] {
			return "ERR Spillway fronts this Redis Cluster node as its sidecar: CONFIG SET " + name +
				" would change the address the cluster gives clients for it; set it on the node itself", true
		}
	}
	return "", false
}
