package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/commands"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering"
)

// forwardNow forwards one command and waits for its reply.
func (c *client) forwardNow(args [][]byte) {
	if !c.inMulti && !c.passthrough {
		c.enterGate()
	}
	c.enqueue(args)
	c.flushForwards()
}

// replyOK reports whether the reply appended at mark is +OK.
func (c *client) replyOK(mark int) bool {
	return bytes.HasPrefix(c.w.Buf[mark:], []byte("+OK"))
}

func upHello(c *client, args [][]byte) {
	before := c.w.Proto
	c.Call(c.f.hello, args)
	if c.w.Proto == before || c.pinned == nil {
		return
	}
	if c.inMulti {
		return // the transaction keeps its protocol
	}
	if c.passthrough {
		// The relay reads this connection: HELLO goes through it, and the
		// relay drops the upstream's reply (the client has Spillway's),
		// the first frame of the new protocol's map (RESP3) or array
		// (RESP2) type. Until then frames are the old protocol's, whose
		// pushes, messages and MONITOR lines are never of that type.
		want := byte('%')
		if c.w.Proto == 2 {
			want = '*'
		}
		c.ptFixes.add(relayFix{first: want})
		c.enqueue([][]byte{[]byte("HELLO"), []byte(strconv.Itoa(c.w.Proto))})
		c.flushForwards()
		if c.pinned != nil {
			c.pinned.Proto = c.w.Proto
		}
		return
	}
	// Switch the pinned connection too; its HELLO reply is Spillway's own.
	if r, err := c.pinned.Do("HELLO", strconv.Itoa(c.w.Proto)); err != nil || link.IsError(r) {
		c.dropPinned()
		return
	}
	c.pinned.Proto = c.w.Proto
}

func upReset(c *client, args [][]byte) {
	c.f.monitors.remove(c)
	c.unprotectAll()
	if c.pinned != nil {
		c.ptClosing.Store(true)
		c.pinned.Close()
		c.pinned = nil
	}
	c.inMulti, c.watching, c.passthrough, c.subscribed, c.txRefused = false, false, false, false, false
	c.localQ, c.multiQueued = nil, 0 // multilocal.go
	c.Call(c.f.reset, args)
	c.SetDB(c.f.defaultDB)
}

func upSelect(c *client, args [][]byte) {
	if c.inMulti {
		// Queued: the upstream switches at EXEC, and so does the client
		// (upEndTx); commands queued after it are on that database.
		mark := c.w.Len()
		c.forwardNow(args)
		if db, ok := cstr.ParseInt(args[1]); ok && db >= 0 && db < int64(c.f.engine.Databases()) &&
			bytes.HasPrefix(c.w.Buf[mark:], []byte("+QUEUED")) {
			c.queueDB = int(db)
		}
		return
	}
	old := c.DB()
	mark := c.w.Len()
	c.Call(c.f.sel, args)
	if c.DB() == old {
		return
	}
	if c.pinned != nil {
		// The pinned connection (watch, subscription) follows.
		c.w.Truncate(mark)
		c.forwardNow(args)
		if !c.replyOK(mark) {
			c.SetDB(old)
			return
		}
		if c.pinned != nil {
			c.pinned.DB = c.DB()
		}
		c.maybeUnpin()
		return
	}
	if c.DB() != c.f.defaultDB && !c.pin() {
		c.w.Truncate(mark)
		c.Err(link.ErrorReply(fmt.Errorf("%w: cannot open a connection for SELECT", link.ErrUnavailable)))
		c.SetDB(old)
	}
}

func upMulti(c *client, args [][]byte) {
	if !c.pin() || !c.fitPinnedLogin() {
		c.maybeUnpin()
		return
	}
	mark := c.w.Len()
	c.forwardNow(args)
	if c.replyOK(mark) {
		c.inMulti = true
		c.queueDB = c.DB()
		// What a transaction ended otherwise (RESET, a lost connection)
		// noted is not this one's.
		c.txNotStale, c.txWrite = false, false
	}
	c.maybeUnpin()
}

// discardUpstream discards the upstream's transaction (its reply at mark,
// for the caller to replace). A mirror user may lack DISCARD (its client
// never sent one): the connection is then dropped, which discards it.
func (c *client) discardUpstream(mark int) {
	c.forwardNow([][]byte{[]byte("DISCARD")})
	if c.pinned != nil && c.w.Len() > mark && c.w.Buf[mark] == '-' {
		c.dropPinned()
	}
}

// upEndTx is EXEC and DISCARD: the transaction's protection ends with it.
func upEndTx(c *client, args [][]byte) {
	mark := c.w.Len()
	exec := cstr.EqualFold(args[0], "exec")
	if exec && c.inMulti && c.pinnedAs != nil {
		// The queued scripts run for the user's rules as EXEC finds them
		// (Redis checks them then): its mirror follows a change first.
		if _, _, err := c.f.mirrors.Login(c.pinnedAs); err != nil {
			c.f.log.Warn("EXEC: the ACL user's upstream mirror could not follow its rules", "user", c.pinnedAs.Name(), "err", err)
		}
	}
	if why := c.execRefusal(); exec && c.inMulti && why != "" {
		c.discardUpstream(mark)
		c.w.Truncate(mark)
		c.Err("EXECABORT Transaction discarded because of: " + why)
	} else if c.txRefused && exec {
		// The upstream queued everything but what Spillway refused.
		c.discardUpstream(mark)
		c.w.Truncate(mark)
		c.w.Error("EXECABORT Transaction discarded because of previous errors.")
	} else {
		if exec && c.inMulti {
			c.beforeExec() // multilocal.go
		}
		c.forwardNow(args)
	}
	c.runQueuedLocal(mark, exec) // multilocal.go
	if c.txRelayLocked {
		c.txRelayLocked = false
		c.f.relay.startMu.Unlock()
	}
	c.txRefused, c.txNotStale, c.txWrite = false, false, false
	// An EXEC that ran (an array reply) ran its queued SELECTs too.
	if c.inMulti && c.queueDB != c.DB() && cstr.EqualFold(args[0], "exec") &&
		bytes.HasPrefix(c.w.Buf[mark:], []byte("*")) && !bytes.HasPrefix(c.w.Buf[mark:], []byte("*-1")) {
		c.SetDB(c.queueDB)
		if c.pinned != nil {
			c.pinned.DB = c.DB()
		}
	}
	c.inMulti, c.watching = false, false
	c.unprotectAll()
	c.maybeUnpin()
}

func upWatch(c *client, args [][]byte) {
	if c.inMulti {
		c.forwardNow(args) // the upstream answers the error
		return
	}
	keys := make([]int, 0, len(args)-1)
	for i := 1; i < len(args); i++ {
		keys = append(keys, i)
	}
	if !c.pin() || !c.prepareKeys(c.DB(), args, keys, true) {
		c.maybeUnpin()
		return
	}
	mark := c.w.Len()
	c.forwardNow(args)
	if c.replyOK(mark) {
		c.watching = true
	}
	if !c.watching && !c.inMulti {
		c.unprotectAll()
	}
	c.maybeUnpin()
}

func upUnwatch(c *client, args [][]byte) {
	if c.pinned == nil {
		c.w.OK()
		return
	}
	c.forwardNow(args)
	if !c.inMulti {
		c.watching = false
		c.unprotectAll()
		c.maybeUnpin()
	}
}

// upPassthroughCommand starts pub/sub, MONITOR or CLIENT TRACKING: the
// client keeps a dedicated connection whose frames are relayed as they
// come.
func upPassthroughCommand(c *client, args [][]byte) {
	if !c.startPassthrough() {
		return
	}
	if cstr.EqualFold(args[0], "subscribe") || cstr.EqualFold(args[0], "psubscribe") || cstr.EqualFold(args[0], "ssubscribe") {
		c.subscribed = true
	}
	if isMonitor(args) {
		c.f.monitors.add(c)
	}
	c.enqueue(args)
	c.flushForwards()
}

// Replication in upstream mode is Spillway's own (relay.go): SYNC, PSYNC
// and REPLCONF never reach the shared connections. REPLICAOF and SLAVEOF
// make Spillway a replica (replicaof.go); FAILOVER is refused, never
// forwarded: it would make the upstream a replica of another server.
const errNoReplicaOf = "ERR FAILOVER is not served in upstream mode: " +
	"it would make the upstream Redis, which holds Spillway's hot keys, a replica of another server"

// upRefuseReplicaOf answers FAILOVER. Inside MULTI it is queued, as
// Redis queues it, and runs at EXEC (multilocal.go): its slot in EXEC's
// reply is the refusal, the transaction's other commands run as on Redis.
func upRefuseReplicaOf(c *client, _ [][]byte) {
	c.Err(errNoReplicaOf)
}

// refuse answers msg to a command Spillway does not forward; inside MULTI
// it also fails the transaction (upEndTx).
func (c *client) refuse(msg string) {
	if c.inMulti {
		c.txRefused = true
	}
	c.w.Error(msg)
}

// upInt runs a command returning an integer on the client's database
// upstream.
func (c *client) upInt(args ...string) (int64, bool) {
	a := make([][]byte, len(args))
	for i, s := range args {
		a[i] = []byte(s)
	}
	r, err := c.ctlDo(c.DB(), a)
	if err != nil {
		c.Err(link.ErrorReply(err))
		return 0, false
	}
	if link.IsError(r) {
		c.w.Raw(r)
		return 0, false
	}
	n, ok := link.IntReply(r)
	if !ok {
		c.Err("ERR upstream: unexpected reply to " + args[0])
	}
	return n, ok
}

// coldDBSize is how many keys db has in the cold store.
func (f *Front) coldDBSize(db int) int64 {
	var n int64
	f.engine.View(func(tx *tiering.Tx) error {
		n = tx.DBSize(db)
		return nil
	})
	return n
}

func upDBSize(c *client, _ [][]byte) {
	c.f.census.Lock()
	defer c.f.census.Unlock()
	n, ok := c.upInt("DBSIZE")
	if !ok {
		return
	}
	c.w.Int(n + c.f.coldDBSize(c.DB()))
}

func upKeys(c *client, args [][]byte) {
	c.f.census.Lock()
	defer c.f.census.Unlock()
	r, err := c.ctlDo(c.DB(), args)
	if err != nil {
		c.Err(link.ErrorReply(err))
		return
	}
	hot, err := link.ParseBulks(r)
	if err != nil {
		c.w.Raw(r)
		return
	}
	var cold [][]byte
	err = c.f.engine.View(func(tx *tiering.Tx) error {
		var err error
		cold, err = tx.Keys(c.DB(), strops.Matcher(args[1]))
		return err
	})
	if err != nil {
		c.ReplyError(err)
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

// coldPhase marks SCAN cursors in the cold store's part of the walk: such a
// cursor is coldPhase plus the store's (below 2^tiering.ScanCursorBits),
// and every cursor stays below 2^53, as clients reading cursors as doubles
// need. The upstream's own cursors are below its hash table's size, far
// under coldPhase.
const coldPhase = 1 << tiering.ScanCursorBits

// upScan walks the upstream, then the cold store, with one cursor: below
// coldPhase it is the upstream's, at or above it the store's. When the
// upstream's walk ends, the same call goes on into the store, so a small
// keyspace is returned in one call, as Redis would.
func upScan(c *client, args [][]byte) {
	cursor, ok := strops.ParseCursor(args[1])
	if !ok {
		c.Err("ERR invalid cursor")
		return
	}
	a := append([][]byte(nil), args...)
	var items [][]byte
	if cursor < coldPhase {
		a[1] = strconv.AppendUint(nil, cursor, 10)
		r, err := c.ctlDo(c.DB(), a)
		if err != nil {
			c.Err(link.ErrorReply(err))
			return
		}
		next, hot, err := link.ParseScan(r)
		if err != nil {
			c.w.Raw(r) // the upstream's error (bad options...)
			return
		}
		if next != 0 || c.f.coldDBSize(c.DB()) == 0 {
			commands.WriteScanReply(c.w, next, hot)
			return
		}
		items, cursor = hot, coldPhase
	}
	opts, err := commands.ScanOptions(args[2:])
	if err != nil {
		c.Fail(err)
		return
	}
	start := cursor - coldPhase // 2^ScanCursorBits or more: ends the store's walk
	var cold [][]byte
	var next uint64
	_, err = c.f.engine.Update(func(tx *tiering.Tx) error {
		var err error
		cold, next, err = tx.Scan(c.DB(), start, opts, nil)
		return err
	})
	if err != nil {
		c.ReplyError(err)
		return
	}
	if next != 0 {
		next |= coldPhase
	}
	commands.WriteScanReply(c.w, next, append(items, cold...))
}

func upRandomKey(c *client, args [][]byte) {
	cold := c.f.coldDBSize(c.DB())
	hot, ok := c.upInt("DBSIZE")
	if !ok {
		return
	}
	if cold > 0 && (hot == 0 || rand.Int64N(hot+cold) < cold) {
		c.Call(c.f.randomKey, args)
		return
	}
	c.forwardNow(args)
}

// upFlush is FLUSHDB and FLUSHALL: the upstream first, then the store.
func upFlush(c *client, args [][]byte) {
	if c.inMulti {
		c.forwardNow(args)
		return
	}
	if err := server.ParseFlushMode(args); err != nil {
		c.Fail(err)
		return
	}
	// Both tiers are emptied under the census: a replica's RDB (relay.fetch)
	// sees the flush in both or in neither.
	c.f.census.Lock()
	defer c.f.census.Unlock()
	mark := c.w.Len()
	c.forwardNow(args)
	if !c.replyOK(mark) {
		return
	}
	all := strings.EqualFold(string(args[0]), "flushall")
	_, err := c.f.engine.Update(func(tx *tiering.Tx) error {
		if all {
			return tx.FlushAll()
		}
		return tx.FlushDB(c.DB())
	})
	if err != nil {
		c.w.Truncate(mark)
		c.ReplyError(err)
		return
	}
	if all {
		for db := range c.f.indexes {
			c.f.index(db).Clear()
		}
		c.f.follow.flushed(-1)
	} else {
		c.f.index(c.DB()).Clear()
		c.f.follow.flushed(c.DB())
	}
}

func upSwapDB(c *client, args [][]byte) {
	a, okA := cstr.ParseInt(args[1])
	b, okB := cstr.ParseInt(args[2])
	n := int64(c.f.engine.Databases())
	if c.inMulti || !okA || !okB || a < 0 || b < 0 || a >= n || b >= n {
		c.forwardNow(args) // the upstream answers, or queues
		return
	}
	c.f.census.Lock() // as upFlush
	defer c.f.census.Unlock()
	mark := c.w.Len()
	c.forwardNow(args)
	if !c.replyOK(mark) {
		return
	}
	if _, err := c.f.engine.Update(func(tx *tiering.Tx) error { return tx.SwapDB(int(a), int(b)) }); err != nil {
		c.ReplyError(err)
		return
	}
	ia, ib := c.f.index(int(a)), c.f.index(int(b))
	c.f.indexes[a].Store(ib)
	c.f.indexes[b].Store(ia)
}

// upCopy reloads the destination in the target database first (COPY ...
// DB n), so that COPY finds it there as Redis would.
func upCopy(c *client, args [][]byte) {
	cmd := cmdtable.LookupFullName([]byte("copy"))
	if c.inMulti {
		c.upQueue(cmd, args)
		return
	}
	for i := 3; i+1 < len(args); i++ {
		if !cstr.EqualFold(args[i], "db") {
			continue
		}
		if db, ok := cstr.ParseInt(args[i+1]); ok && db >= 0 && db < int64(c.f.engine.Databases()) {
			c.upForwardWith(cmd, args, int(db), 2)
			return
		}
		break
	}
	c.upForward(cmd, args)
}

// upMove reloads the key in the target database too, so that MOVE finds
// it there as Redis would.
func upMove(c *client, args [][]byte) {
	cmd := cmdtable.LookupFullName([]byte("move"))
	if c.inMulti {
		c.upQueue(cmd, args)
		return
	}
	if db, ok := cstr.ParseInt(args[2]); ok && db >= 0 && db < int64(c.f.engine.Databases()) {
		c.upForwardWith(cmd, args, int(db), 1)
		return
	}
	c.upForward(cmd, args)
}

// upDebug adds test hooks to DEBUG in upstream mode: DEBUG DEMOTE key...
// demotes those keys now, DEBUG DEMOTE-ALL every key of the database;
// both reply with how many moved. Other DEBUG commands are forwarded.
func upDebug(c *client, args [][]byte) {
	switch {
	case len(args) >= 3 && cstr.EqualFold(args[1], "demote"):
		n, err := c.f.demoter.DemoteNow(c.DB(), args[2:])
		if err != nil {
			c.ReplyError(err)
			return
		}
		c.w.Int(int64(n))
	case len(args) == 2 && cstr.EqualFold(args[1], "demote-all"):
		n, err := c.f.demoter.DemoteAll(c.DB())
		if err != nil {
			c.ReplyError(err)
			return
		}
		c.w.Int(int64(n))
	default:
		c.forwardNow(args)
	}
}

// upInfo is the upstream's INFO with the keyspace counting both tiers and
// Spillway's tiering section added.
func upInfo(c *client, args [][]byte) {
	c.f.census.Lock()
	defer c.f.census.Unlock()
	r, err := c.ctlDo(c.DB(), args)
	if err == nil && link.IsError(r) {
		c.w.Raw(r)
		return
	}
	c.w.Verbatim("txt", []byte(c.f.infoBody(r, err, args)))
}

// InfoText is INFO EVERYTHING as a client of the default database gets
// it, for the metrics endpoint.
func (f *Front) InfoText() string {
	args := [][]byte{[]byte("INFO"), []byte("everything")}
	f.census.Lock()
	defer f.census.Unlock()
	r, err := f.ctlDo(f.defaultDB, args)
	if err == nil && link.IsError(r) {
		err = errors.New(string(r))
	}
	return f.infoBody(r, err, args)
}

// infoBody makes the reply to INFO args out of the upstream's reply r (or
// err: unreachable).
func (f *Front) infoBody(r []byte, err error, args [][]byte) string {
	var body string
	if err == nil {
		body = string(link.BulkPayload(r))
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
		f.writeTiering(&tiering)
	}
	body = addBlockedClients(body, f.srv.PostponedClients())
	body = f.replicationSection(body)
	body = f.keyspaceStats(body) // localstats.go
	// The clients are Spillway's (CLIENT LIST and KILL are), not the
	// upstream's, whose are Spillway's own connections.
	body = setInfoField(body, "connected_clients", f.srv.ConnectedClients())
	ks := strings.Index(body, "# Keyspace\r\n")
	if ks >= 0 {
		if tiering.Len() > 0 {
			tiering.WriteString("\r\n")
		}
		body = body[:ks] + tiering.String() + f.mergedKeyspace(body[ks:])
	} else if tiering.Len() > 0 {
		if body != "" {
			body += "\r\n"
		}
		body += tiering.String()
	}
	return body
}

// mergedKeyspace adds the cold store's keys to an INFO keyspace section.
func (f *Front) mergedKeyspace(section string) string {
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
	f.engine.View(func(tx *tiering.Tx) error {
		for db := 0; db < f.engine.Databases(); db++ {
			h := hot[db]
			keys, exps := h.keys+tx.DBSize(db), h.expires+tx.Expires(db)
			if keys == 0 {
				continue
			}
			fmt.Fprintf(&sb, "db%d:keys=%d,expires=%d,avg_ttl=%d\r\n", db, keys, exps, h.avgTTL)
		}
		return nil
	})
	return sb.String()
}

func (f *Front) writeTiering(sb *strings.Builder) {
	d := f.demoter
	st := "up"
	if !f.pool.Up() {
		st = "down"
	}
	cold := f.engine.KeysOnDisk()
	sb.WriteString("# Tiering\r\n")
	server.InfoField(sb, "mode", "upstream")
	ls := f.pool.State()
	server.InfoField(sb, "upstream", ls.Addr)
	server.InfoField(sb, "upstream_status", st)
	server.InfoField(sb, "upstream_reconnects", ls.Reconnects)
	server.InfoField(sb, "upstream_pipeline_depth", f.pool.InFlight())
	server.InfoField(sb, "upstream_down_seconds", int64(ls.DownFor.Seconds()))
	server.InfoField(sb, "upstream_downtime_total_ms", ls.DownTotal.Milliseconds())
	server.InfoField(sb, "upstream_last_error", infoValue(ls.LastError))
	if s, ok := f.pool.SentinelInfo(); ok {
		server.InfoField(sb, "upstream_sentinel_master", infoValue(s.Master))
		server.InfoField(sb, "upstream_sentinels", s.Sentinels)
		server.InfoField(sb, "upstream_failovers", s.Failovers)
		server.InfoField(sb, "upstream_sentinel_last_error", infoValue(s.LastError))
	}
	server.InfoField(sb, "upstream_used_memory", d.UsedMemory.Load())
	server.InfoField(sb, "upstream_used_memory_peak", d.PeakUsed.Load())
	server.InfoField(sb, "maxmemory", f.cfg.MaxMemory())
	server.InfoField(sb, "cold_keys", cold)
	server.InfoField(sb, "cold_bytes_on_disk", f.engine.Cold().DiskUsage())
	server.InfoField(sb, "demotions", d.Demoted.Load())
	server.InfoField(sb, "demotion_aborts", d.Aborted.Load())
	server.InfoField(sb, "promotions", f.reloads.Load())
	server.InfoField(sb, "reload_conflicts", f.reloadConflicts.Load())
	server.InfoField(sb, "cold_reads", f.coldReads.Load())
	th := 0
	if d.Throttling() {
		th = 1
	}
	server.InfoField(sb, "throttling", th)
	server.InfoField(sb, "throttled_writes", d.ThrottledWrites.Load())
	rs := f.engine.Cold().ReadStats()
	server.InfoField(sb, "cold_store_gets", rs.Gets)
	server.InfoField(sb, "cold_store_iter_steps", rs.IterSteps)
}

// addBlockedClients adds n, the clients Spillway postpones under CLIENT
// PAUSE (which upstream mode runs itself), to the upstream's
// blocked_clients, as Redis counts paused clients there.
func addBlockedClients(body string, n int) string {
	start, end, ok := infoFieldSpan(body, "blocked_clients")
	if n == 0 || !ok {
		return body
	}
	v, err := strconv.Atoi(body[start:end])
	if err != nil {
		return body
	}
	return body[:start] + strconv.Itoa(v+n) + body[end:]
}

// setInfoField replaces field's value in an INFO body, if it is there.
func setInfoField(body, field string, v int) string {
	if start, end, ok := infoFieldSpan(body, field); ok {
		return body[:start] + strconv.Itoa(v) + body[end:]
	}
	return body
}

// infoFieldSpan returns where field's value is in an INFO body.
func infoFieldSpan(body, field string) (start, end int, ok bool) {
	key := "\r\n" + field + ":"
	i := strings.Index(body, key)
	if i < 0 {
		return 0, 0, false
	}
	start = i + len(key)
	n := strings.IndexByte(body[start:], '\r')
	if n < 0 {
		return 0, 0, false
	}
	return start, start + n, true
}
