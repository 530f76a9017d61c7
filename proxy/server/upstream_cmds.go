package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/proxy/upstream"
)

// upLocal holds the commands Spillway answers itself in upstream mode (or
// handles before forwarding): connection state, its own configuration and
// clients, and the commands that must see both tiers.
// It is built from the server's table when upstream mode is enabled.
func upLocalTable(t *Table) map[*cmdtable.Command]Handler {
	upLocal := map[*cmdtable.Command]Handler{}
	lookup := func(name string) *cmdtable.Command {
		c := cmdtable.LookupFullName([]byte(name))
		if c == nil {
			panic("proxy: upstream mode: no command " + name)
		}
		return c
	}
	local := func(name string, h handlerFunc) { upLocal[lookup(name)] = clientHandler(h) }
	// Spillway's own connection, configuration and client list.
	for _, name := range []string{"auth", "quit", "shutdown"} {
		upLocal[lookup(name)] = t.Handler(lookup(name))
	}
	for _, parent := range []string{"client", "command", "config"} {
		for _, sub := range lookup(parent).Subcommands {
			if h := t.Handler(sub); h != nil {
				upLocal[sub] = h
			}
		}
	}
	for _, name := range []string{"client|tracking", "client|caching", "client|getredir", "client|trackinginfo"} {
		delete(upLocal, lookup(name))
	}
	local("client|tracking", upPassthroughCommand)
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
	local("dbsize", upDBSize)
	local("keys", upKeys)
	local("scan", upScan)
	local("randomkey", upRandomKey)
	local("flushdb", upFlush)
	local("flushall", upFlush)
	local("swapdb", upSwapDB)
	local("move", upMove)
	local("copy", upCopy)
	if os.Getenv("SPILLWAY_TEST_HOOKS") == "1" {
		local("debug", upDebug)
	}
	return upLocal
}

// forwardNow forwards one command and waits for its reply.
func (c *Client) forwardNow(args [][]byte) {
	if !c.up.inMulti && !c.up.passthrough {
		c.enterGate()
	}
	c.enqueue(args)
	c.flushForwards()
}

// replyOK reports whether the reply appended at mark is +OK.
func (c *Client) replyOK(mark int) bool {
	return bytes.HasPrefix(c.w.Buf[mark:], []byte("+OK"))
}

func upHello(c *Client, args [][]byte) {
	before := c.w.Proto
	cmdHello(c, args)
	u := c.up
	if c.w.Proto == before || u.pinned == nil {
		return
	}
	if u.passthrough || u.inMulti {
		return // the subscription or transaction keeps its protocol
	}
	// Switch the pinned connection too; its HELLO reply is Spillway's own.
	if r, err := u.pinned.Do("HELLO", strconv.Itoa(c.w.Proto)); err != nil || upstream.IsError(r) {
		c.dropPinned()
		return
	}
	u.pinned.Proto = c.w.Proto
}

func upReset(c *Client, args [][]byte) {
	u := c.up
	c.unprotectAll()
	if u.pinned != nil {
		u.ptClosing.Store(true)
		u.pinned.Close()
		u.pinned = nil
	}
	u.inMulti, u.watching, u.passthrough = false, false, false
	cmdReset(c, args)
	c.db = c.s.up.defaultDB
	c.dbShown.Store(int32(c.db))
}

func upSelect(c *Client, args [][]byte) {
	u := c.up
	if u.inMulti {
		// Queued: the upstream switches at EXEC, and so does the client
		// (upEndTx); commands queued after it are on that database.
		mark := c.w.Len()
		c.forwardNow(args)
		if db, ok := cstr.ParseInt(args[1]); ok && db >= 0 && db < int64(c.s.engine.Databases()) &&
			bytes.HasPrefix(c.w.Buf[mark:], []byte("+QUEUED")) {
			u.queueDB = int(db)
		}
		return
	}
	old := c.db
	mark := c.w.Len()
	cmdSelect(c, args)
	if c.db == old {
		return
	}
	if u.pinned != nil {
		// The pinned connection (watch, subscription) follows.
		c.w.Truncate(mark)
		c.forwardNow(args)
		if !c.replyOK(mark) {
			c.db = old
			c.dbShown.Store(int32(old))
			return
		}
		if u.pinned != nil {
			u.pinned.DB = c.db
		}
		c.maybeUnpin()
		return
	}
	if c.db != c.s.up.defaultDB && !c.pin() {
		c.w.Truncate(mark)
		c.err(upstream.ErrorReply(fmt.Errorf("%w: cannot open a connection for SELECT", upstream.ErrUnavailable)))
		c.db = old
		c.dbShown.Store(int32(old))
	}
}

func upMulti(c *Client, args [][]byte) {
	if !c.pin() {
		return
	}
	mark := c.w.Len()
	c.forwardNow(args)
	if c.replyOK(mark) {
		c.up.inMulti = true
		c.up.queueDB = c.db
	}
	c.maybeUnpin()
}

// upEndTx is EXEC and DISCARD: the transaction's protection ends with it.
func upEndTx(c *Client, args [][]byte) {
	mark := c.w.Len()
	c.forwardNow(args)
	u := c.up
	// An EXEC that ran (an array reply) ran its queued SELECTs too.
	if u.inMulti && u.queueDB != c.db && eqFold(args[0], "exec") &&
		bytes.HasPrefix(c.w.Buf[mark:], []byte("*")) && !bytes.HasPrefix(c.w.Buf[mark:], []byte("*-1")) {
		c.db = u.queueDB
		c.dbShown.Store(int32(c.db))
		if u.pinned != nil {
			u.pinned.DB = c.db
		}
	}
	u.inMulti, u.watching = false, false
	c.unprotectAll()
	c.maybeUnpin()
}

func upWatch(c *Client, args [][]byte) {
	if c.up.inMulti {
		c.forwardNow(args) // the upstream answers the error
		return
	}
	keys := make([]int, 0, len(args)-1)
	for i := 1; i < len(args); i++ {
		keys = append(keys, i)
	}
	if !c.pin() || !c.prepareKeys(c.db, args, keys, true) {
		c.maybeUnpin()
		return
	}
	mark := c.w.Len()
	c.forwardNow(args)
	if c.replyOK(mark) {
		c.up.watching = true
	}
	if !c.up.watching && !c.up.inMulti {
		c.unprotectAll()
	}
	c.maybeUnpin()
}

func upUnwatch(c *Client, args [][]byte) {
	if c.up.pinned == nil {
		c.w.OK()
		return
	}
	c.forwardNow(args)
	if !c.up.inMulti {
		c.up.watching = false
		c.unprotectAll()
		c.maybeUnpin()
	}
}

// upPassthroughCommand starts pub/sub, MONITOR or CLIENT TRACKING: the
// client keeps a dedicated connection whose frames are relayed as they
// come.
func upPassthroughCommand(c *Client, args [][]byte) {
	if !c.startPassthrough() {
		return
	}
	c.enqueue(args)
	c.flushForwards()
}

// upInt runs a command returning an integer on the client's database
// upstream.
func (c *Client) upInt(args ...string) (int64, bool) {
	a := make([][]byte, len(args))
	for i, s := range args {
		a[i] = []byte(s)
	}
	r, err := c.ctlDo(c.db, a)
	if err != nil {
		c.err(upstream.ErrorReply(err))
		return 0, false
	}
	if upstream.IsError(r) {
		c.w.Raw(r)
		return 0, false
	}
	n, ok := upstream.IntReply(r)
	if !ok {
		c.err("ERR upstream: unexpected reply to " + args[0])
	}
	return n, ok
}

// coldDBSize is how many keys db has in the cold store.
func (s *Server) coldDBSize(db int) int64 {
	tx := s.engine.Begin()
	defer tx.Abort()
	return tx.DBSize(db)
}

func upDBSize(c *Client, _ [][]byte) {
	c.s.up.census.Lock()
	defer c.s.up.census.Unlock()
	n, ok := c.upInt("DBSIZE")
	if !ok {
		return
	}
	c.w.Int(n + c.s.coldDBSize(c.db))
}

func upKeys(c *Client, args [][]byte) {
	c.s.up.census.Lock()
	defer c.s.up.census.Unlock()
	r, err := c.ctlDo(c.db, args)
	if err != nil {
		c.err(upstream.ErrorReply(err))
		return
	}
	hot, err := upstream.ParseBulks(r)
	if err != nil {
		c.w.Raw(r)
		return
	}
	tx := c.s.engine.Begin()
	cold, err := tx.Keys(c.db, strops.Matcher(args[1]))
	tx.Abort()
	if err != nil {
		c.replyError(err)
		return
	}
	seen := make(map[string]bool, len(hot))
	for _, k := range hot {
		seen[string(k)] = true
	}
	for _, k := range cold {
		if !seen[string(k)] {
			hot = append(hot, k)
		}
	}
	c.w.Array(len(hot))
	for _, k := range hot {
		c.w.Bulk(k)
	}
}

// coldPhase marks SCAN cursors in the cold store's part of the walk; the
// cold cursor (a key hash) loses its lowest bit, so a walk may revisit a
// few keys but never skips one.
const coldPhase = 1 << 63

// upScan walks the upstream, then the cold store, with one cursor: below
// coldPhase it is the upstream's, above it the store's. When the
// upstream's walk ends, the same call goes on into the store, so a small
// keyspace is returned in one call, as Redis would.
func upScan(c *Client, args [][]byte) {
	cursor, ok := strops.ParseCursor(args[1])
	if !ok {
		c.err("ERR invalid cursor")
		return
	}
	a := append([][]byte(nil), args...)
	var items [][]byte
	if cursor < coldPhase {
		a[1] = strconv.AppendUint(nil, cursor, 10)
		r, err := c.ctlDo(c.db, a)
		if err != nil {
			c.err(upstream.ErrorReply(err))
			return
		}
		next, hot, err := upstream.ParseScan(r)
		if err != nil {
			c.w.Raw(r) // the upstream's error (bad options...)
			return
		}
		if next != 0 || c.s.coldDBSize(c.db) == 0 {
			writeScanReply(c, next, hot)
			return
		}
		items, cursor = hot, coldPhase
	}
	a[1] = strconv.AppendUint(nil, (cursor&^coldPhase)<<1, 10)
	mark := c.w.Len()
	c.call(c.s.table.Handler(cmdtable.LookupFullName([]byte("scan"))), a)
	next, cold, err := upstream.ParseScan(c.w.Buf[mark:])
	if err != nil {
		return // cmdScan's error reply stays
	}
	c.w.Truncate(mark)
	if next != 0 {
		next = coldPhase | next>>1
	}
	writeScanReply(c, next, append(items, cold...))
}

func writeScanReply(c *Client, next uint64, items [][]byte) {
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(len(items))
	for _, k := range items {
		c.w.Bulk(k)
	}
}

func upRandomKey(c *Client, args [][]byte) {
	cold := c.s.coldDBSize(c.db)
	hot, ok := c.upInt("DBSIZE")
	if !ok {
		return
	}
	if cold > 0 && (hot == 0 || rand.Int64N(hot+cold) < cold) {
		c.call(c.s.table.Handler(cmdtable.LookupFullName([]byte("randomkey"))), args)
		return
	}
	c.forwardNow(args)
}

// upFlush is FLUSHDB and FLUSHALL: the upstream first, then the store.
func upFlush(c *Client, args [][]byte) {
	if c.up.inMulti {
		c.forwardNow(args)
		return
	}
	if err := parseFlushMode(args); err != nil {
		c.fail(err)
		return
	}
	mark := c.w.Len()
	c.forwardNow(args)
	if !c.replyOK(mark) {
		return
	}
	tx := c.s.engine.Begin()
	var err error
	all := strings.EqualFold(string(args[0]), "flushall")
	if all {
		err = tx.FlushAll()
	} else {
		err = tx.FlushDB(c.db)
	}
	if err != nil {
		tx.Abort()
		c.w.Truncate(mark)
		c.replyError(err)
		return
	}
	if _, err := tx.Commit(); err != nil {
		c.w.Truncate(mark)
		c.replyError(err)
		return
	}
	if all {
		for db := range c.s.up.indexes {
			c.s.up.index(db).Clear()
		}
	} else {
		c.s.up.index(c.db).Clear()
	}
}

func upSwapDB(c *Client, args [][]byte) {
	a, okA := cstr.ParseInt(args[1])
	b, okB := cstr.ParseInt(args[2])
	n := int64(c.s.engine.Databases())
	if c.up.inMulti || !okA || !okB || a < 0 || b < 0 || a >= n || b >= n {
		c.forwardNow(args) // the upstream answers, or queues
		return
	}
	mark := c.w.Len()
	c.forwardNow(args)
	if !c.replyOK(mark) {
		return
	}
	tx := c.s.engine.Begin()
	if err := tx.SwapDB(int(a), int(b)); err != nil {
		tx.Abort()
		c.replyError(err)
		return
	}
	if _, err := tx.Commit(); err != nil {
		c.replyError(err)
		return
	}
	up := c.s.up
	ia, ib := up.index(int(a)), up.index(int(b))
	up.indexes[a].Store(ib)
	up.indexes[b].Store(ia)
}

// upCopy reloads the destination in the target database first (COPY ...
// DB n), so that COPY finds it there as Redis would.
func upCopy(c *Client, args [][]byte) {
	cmd := cmdtable.LookupFullName([]byte("copy"))
	if c.up.inMulti {
		c.upQueue(cmd, args)
		return
	}
	for i := 3; i+1 < len(args); i++ {
		if !eqFold(args[i], "db") {
			continue
		}
		if db, ok := cstr.ParseInt(args[i+1]); ok && db >= 0 && db < int64(c.s.engine.Databases()) {
			if !c.prepareKeys(int(db), args, []int{2}, false) {
				return
			}
		}
		break
	}
	c.upForward(cmd, args)
}

// upMove reloads the key in the target database too, so that MOVE finds
// it there as Redis would.
func upMove(c *Client, args [][]byte) {
	if db, ok := cstr.ParseInt(args[2]); ok && db >= 0 && db < int64(c.s.engine.Databases()) && !c.up.inMulti {
		if !c.prepareKeys(int(db), args, []int{1}, false) {
			return
		}
	}
	cmd := cmdtable.LookupFullName([]byte("move"))
	if c.up.inMulti {
		c.upQueue(cmd, args)
		return
	}
	c.upForward(cmd, args)
}

// upDebug adds test hooks to DEBUG in upstream mode: DEBUG DEMOTE key...
// demotes those keys now, DEBUG DEMOTE-ALL every key of the database;
// both reply with how many moved. Other DEBUG commands are forwarded.
func upDebug(c *Client, args [][]byte) {
	switch {
	case len(args) >= 3 && eqFold(args[1], "demote"):
		n, err := c.s.up.demoter.DemoteNow(c.db, args[2:])
		if err != nil {
			c.replyError(err)
			return
		}
		c.w.Int(int64(n))
	case len(args) == 2 && eqFold(args[1], "demote-all"):
		n, err := c.s.up.demoter.DemoteAll(c.db)
		if err != nil {
			c.replyError(err)
			return
		}
		c.w.Int(int64(n))
	default:
		c.forwardNow(args)
	}
}

// upInfo is the upstream's INFO with the keyspace counting both tiers and
// Spillway's tiering section added.
func upInfo(c *Client, args [][]byte) {
	c.s.up.census.Lock()
	defer c.s.up.census.Unlock()
	r, err := c.ctlDo(c.db, args)
	if err == nil && upstream.IsError(r) {
		c.w.Raw(r)
		return
	}
	var body string
	if err == nil {
		body = string(upstream.BulkPayload(r))
	} else {
		// The upstream is unreachable: Spillway's own sections still answer
		// (upstream_status:down), and the keyspace counts the cold store.
		body = "# Keyspace\r\n"
	}
	want := len(args) == 1
	for _, a := range args[1:] {
		switch strings.ToLower(string(a)) {
		case "tiering", "default", "all", "everything":
			want = true
		}
	}
	var tiering strings.Builder
	if want {
		c.s.writeUpstreamTiering(&tiering)
	}
	ks := strings.Index(body, "# Keyspace\r\n")
	if ks >= 0 {
		if tiering.Len() > 0 {
			tiering.WriteString("\r\n")
		}
		body = body[:ks] + tiering.String() + c.s.mergedKeyspace(body[ks:])
	} else if tiering.Len() > 0 {
		if body != "" {
			body += "\r\n"
		}
		body += tiering.String()
	}
	c.w.Verbatim("txt", []byte(body))
}

// mergedKeyspace adds the cold store's keys to an INFO keyspace section.
func (s *Server) mergedKeyspace(section string) string {
	type counts struct{ keys, expires, avgTTL int64 }
	hot := map[int]counts{}
	for _, line := range strings.Split(section, "\r\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "db") {
			continue
		}
		db, err := strconv.Atoi(name[2:])
		if err != nil {
			continue
		}
		var k counts
		fmt.Sscanf(v, "keys=%d,expires=%d,avg_ttl=%d", &k.keys, &k.expires, &k.avgTTL)
		hot[db] = k
	}
	var sb strings.Builder
	sb.WriteString("# Keyspace\r\n")
	tx := s.engine.Begin()
	defer tx.Abort()
	for db := 0; db < s.engine.Databases(); db++ {
		h := hot[db]
		keys, exps := h.keys+tx.DBSize(db), h.expires+tx.Expires(db)
		if keys == 0 {
			continue
		}
		fmt.Fprintf(&sb, "db%d:keys=%d,expires=%d,avg_ttl=%d\r\n", db, keys, exps, h.avgTTL)
	}
	return sb.String()
}

func (s *Server) writeUpstreamTiering(sb *strings.Builder) {
	u := s.up
	d := u.demoter
	st := "up"
	if !u.pool.Up() {
		st = "down"
	}
	cold := s.engine.KeysOnDisk()
	sb.WriteString("# Tiering\r\n")
	field(sb, "mode", "upstream")
	field(sb, "upstream", u.pool.Target().Addr)
	field(sb, "upstream_status", st)
	field(sb, "upstream_reconnects", u.pool.Reconnects.Load())
	field(sb, "upstream_used_memory", d.UsedMemory.Load())
	field(sb, "upstream_used_memory_peak", d.PeakUsed.Load())
	field(sb, "maxmemory", s.cfg.MaxMemory())
	field(sb, "cold_keys", cold)
	field(sb, "cold_bytes_on_disk", s.engine.Cold().DiskUsage())
	field(sb, "demotions", d.Demoted.Load())
	field(sb, "demotion_aborts", d.Aborted.Load())
	field(sb, "promotions", u.reloads.Load())
	field(sb, "reload_conflicts", u.reloadConflicts.Load())
	field(sb, "cold_reads", u.coldReads.Load())
	th := 0
	if d.Throttling() {
		th = 1
	}
	field(sb, "throttling", th)
	field(sb, "throttled_writes", d.ThrottledWrites.Load())
	rs := s.engine.Cold().ReadStats()
	field(sb, "cold_store_gets", rs.Gets)
	field(sb, "cold_store_iter_steps", rs.IterSteps)
}
