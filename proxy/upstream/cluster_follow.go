package upstream

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering/uptier"
)

// The cold feed: a cluster replica's sidecar follows its primary's
// sidecar's cold store, so that the cold data of a shard moves with it
// when the cluster promotes the replica.
//
// The replica's sidecar (the follower) dials the address its node
// replicates from (the primary's sidecar, the leader) and sends REPLCONF
// SPILLWAY-COLD; the connection is then the feed, frames from the leader
// (RESP arrays of bulk strings) and acknowledgements back (":seq"):
//
//	RESET                          a full copy starts
//	END                            the full copy ended: drop every cold key
//	                               it did not name
//	SET db key expireAt payload    the key's cold copy (a RESTORE payload)
//	DEL db key                     the key has no cold copy any more
//	DELAFTER db key offset         the key was reloaded into the node: drop
//	                               its copy once the replica node's
//	                               replication offset reached offset
//	FLUSH db                       drop db's cold keys (-1: all)
//	MARK seq                       sync the store, then acknowledge seq
//
// The feed is state-based: the leader records which keys changed (in
// order) and sends each one's state as its store holds it when sent, so a
// key changing again meanwhile is sent in its final state. A full copy is
// every cold key sent so, after RESET, with the changes recorded during
// the copy sent after it.
//
// The ordering that loses nothing: the demoter removes keys from the node
// only after each attached follower acknowledged their cold copies
// (beforeUnlink); while the node has a replica and no follower is
// attached, demotion pauses (the node keeps its keys, as a Redis with no
// Spillway would). A reloaded key's copy is dropped by the follower only
// once the replica node holds the RESTORE (DELAFTER), so until then one of
// the two has it. A key hot on the replica and cold on its sidecar is the
// node's (hot wins): on promotion the sidecar drops such copies.

// coldFollowOption is the REPLCONF option that opens a cold feed.
const coldFollowOption = "spillway-cold"

// Timing of the feed and of the role watch.
const (
	rolePoll       = 200 * time.Millisecond
	followAckWait  = 5 * time.Second
	feedMaxPending = 1 << 20 // changes queued before the feed falls back to a full copy
)

type feedOp uint8

const (
	opKey   feedOp = iota // a key's state (DEL after a reload when reload is set)
	opFlush               // FLUSH db
	opMark                // MARK seq
)

type feedEvent struct {
	op     feedOp
	db     int
	reload bool
	key    string
	seq    uint64
}

// coldFeed is one attached follower, on the leader.
type coldFeed struct {
	mu      sync.Mutex
	events  []feedEvent
	full    bool   // a full copy is due
	seq     uint64 // last MARK queued
	acked   uint64
	ackWait chan struct{} // closed at each acknowledgement
	wake    chan struct{}
	gone    chan struct{}
}

// clusterFollow is a sidecar's side of the cold feed, both roles.
type clusterFollow struct {
	f  *Front
	mu sync.Mutex
	// feeds are the attached followers (leader role).
	feeds map[*coldFeed]struct{}
	// polled is set once the node's role is known; replica while it is a
	// replica; replicas is how many replicas it has as a primary.
	polled, replica bool
	replicas        int
	// spliced counts the replica connections relayed now (cluster_repl.go):
	// a replica attached since the last poll counts at once.
	spliced int
	// leader is the address followed (follower role) and stopFollow ends
	// that follow.
	leader     string
	stopFollow chan struct{}
	// pending are the DELAFTER drops not yet due, by key: a later SET or
	// DEL of the key cancels its drop (a newer copy, or none).
	pending map[dbKey]int64
	// copied are the keys a full copy under way has named (nil when none
	// is): the copy replaces the store only at its END, so a follower
	// promoted in the middle of one keeps what it had.
	copied map[dbKey]struct{}
	// The role watch runs (started) once the upstream is a cluster node
	// (wanted) and the front is ready (isReady), until closed.
	wanted, isReady, started, closed bool
	stop                             chan struct{}
	wg                               sync.WaitGroup
}

type dbKey struct {
	db  int
	key string
}

func newClusterFollow(f *Front) *clusterFollow {
	return &clusterFollow{f: f, feeds: map[*coldFeed]struct{}{}, pending: map[dbKey]int64{}, stop: make(chan struct{})}
}

// paused reports whether demotion must wait (DemoterOptions.Paused): the
// node is a replica, or its role is not known yet, or it has replicas and
// no follower.
func (cf *clusterFollow) paused() bool {
	if !cf.f.cluster.Load() {
		return false
	}
	cf.mu.Lock()
	defer cf.mu.Unlock()
	return !cf.polled || cf.replica || (cf.hasReplicas() && len(cf.feeds) == 0)
}

// hasReplicas reports whether the node has a replica, as last polled or
// relayed now; cf.mu is held.
func (cf *clusterFollow) hasReplicas() bool { return cf.replicas > 0 || cf.spliced > 0 }

// spliceRunning counts a relayed replica connection for its duration:
// call it with +1 when it starts and -1 when it ends.
func (cf *clusterFollow) spliceRunning(n int) {
	cf.mu.Lock()
	cf.spliced += n
	cf.mu.Unlock()
}

// replicaNode reports whether the node is a cluster replica, or a
// cluster node whose role is not known yet.
func (cf *clusterFollow) replicaNode() bool {
	if !cf.f.cluster.Load() {
		return false
	}
	cf.mu.Lock()
	defer cf.mu.Unlock()
	return !cf.polled || cf.replica
}

// beforeUnlink sends the demoted keys' cold copies to every follower and
// waits for their acknowledgement (DemoterOptions.BeforeUnlink).
func (cf *clusterFollow) beforeUnlink(db int, keys [][]byte) error {
	if !cf.f.cluster.Load() {
		return nil
	}
	cf.mu.Lock()
	if cf.replica {
		cf.mu.Unlock()
		return errors.New("upstream: the cluster node is a replica: no demotion")
	}
	if len(cf.feeds) == 0 {
		has := cf.hasReplicas()
		cf.mu.Unlock()
		if has {
			return errors.New("upstream: the cluster node has replicas and no cold follower is attached")
		}
		return nil
	}
	feeds := make([]*coldFeed, 0, len(cf.feeds))
	for fd := range cf.feeds {
		feeds = append(feeds, fd)
	}
	cf.mu.Unlock()
	for _, fd := range feeds {
		for _, k := range keys {
			fd.add(feedEvent{op: opKey, db: db, key: string(k)})
		}
	}
	return waitFeeds(feeds)
}

// waitFeeds queues a MARK on each feed and waits until each acknowledged
// it, or left, or followAckWait passed.
func waitFeeds(feeds []*coldFeed) error {
	deadline := time.NewTimer(followAckWait)
	defer deadline.Stop()
	for _, fd := range feeds {
		seq := fd.mark()
		for {
			fd.mu.Lock()
			ok, ch := fd.acked >= seq, fd.ackWait
			fd.mu.Unlock()
			if ok {
				break
			}
			select {
			case <-ch:
			case <-fd.gone:
				return errors.New("upstream: the cold follower left before acknowledging")
			case <-deadline.C:
				return errors.New("upstream: the cold follower did not acknowledge in time")
			}
		}
	}
	return nil
}

// changed records that key's cold copy changed outside a demotion
// (reload: it went back into the node).
func (cf *clusterFollow) changed(db int, key []byte, reload bool) {
	if !cf.f.cluster.Load() {
		return
	}
	cf.each(func(fd *coldFeed) { fd.add(feedEvent{op: opKey, db: db, key: string(key), reload: reload}) })
}

// dropped is DemoterOptions.Dropped.
func (cf *clusterFollow) dropped(db int, keys [][]byte) {
	for _, k := range keys {
		cf.changed(db, k, false)
	}
}

// flushed records FLUSHDB (db) or FLUSHALL (-1).
func (cf *clusterFollow) flushed(db int) {
	if !cf.f.cluster.Load() {
		return
	}
	cf.each(func(fd *coldFeed) { fd.add(feedEvent{op: opFlush, db: db}) })
}

// sync waits until every follower has what was recorded so far.
func (cf *clusterFollow) sync() error {
	var feeds []*coldFeed
	cf.each(func(fd *coldFeed) { feeds = append(feeds, fd) })
	if len(feeds) == 0 {
		return nil
	}
	return waitFeeds(feeds)
}

func (cf *clusterFollow) each(fn func(*coldFeed)) {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	for fd := range cf.feeds {
		fn(fd)
	}
}

func (fd *coldFeed) add(ev feedEvent) {
	fd.mu.Lock()
	if !fd.full {
		fd.events = append(fd.events, ev)
		if len(fd.events) > feedMaxPending {
			fd.full, fd.events = true, nil
		}
	}
	fd.mu.Unlock()
	fd.poke()
}

func (fd *coldFeed) mark() uint64 {
	fd.mu.Lock()
	fd.seq++
	seq := fd.seq
	fd.events = append(fd.events, feedEvent{op: opMark, seq: seq})
	fd.mu.Unlock()
	fd.poke()
	return seq
}

func (fd *coldFeed) poke() {
	select {
	case fd.wake <- struct{}{}:
	default:
	}
}

// serveColdFollower runs the leader's side of a feed on a connection
// taken over from REPLCONF SPILLWAY-COLD, until it breaks.
func (f *Front) serveColdFollower(nc net.Conn) {
	nc.SetDeadline(time.Time{})
	fd := &coldFeed{full: true, ackWait: make(chan struct{}), wake: make(chan struct{}, 1), gone: make(chan struct{})}
	cf := f.follow
	cf.mu.Lock()
	cf.feeds[fd] = struct{}{}
	cf.mu.Unlock()
	f.log.Info("cold follower attached", "addr", nc.RemoteAddr().String())
	defer func() {
		cf.mu.Lock()
		delete(cf.feeds, fd)
		cf.mu.Unlock()
		nc.Close()
		f.log.Info("cold follower left", "addr", nc.RemoteAddr().String())
	}()
	go func() { // acknowledgements
		defer close(fd.gone)
		rd := resp.NewReplyReader(bufio.NewReader(nc))
		for {
			r, err := rd.Read()
			if err != nil {
				return
			}
			n, ok := link.IntReply(r)
			if !ok {
				return
			}
			fd.mu.Lock()
			if uint64(n) > fd.acked {
				fd.acked = uint64(n)
			}
			close(fd.ackWait)
			fd.ackWait = make(chan struct{})
			fd.mu.Unlock()
		}
	}()
	bw := bufio.NewWriterSize(nc, 64<<10)
	var d link.Dump
	var buf []byte
	for {
		fd.mu.Lock()
		full, evs := fd.full, fd.events
		fd.full, fd.events = false, nil
		fd.mu.Unlock()
		var err error
		if full {
			err = f.feedFullCopy(bw, &d, &buf, fd)
		}
		if err == nil {
			err = f.feedEvents(bw, &d, &buf, evs)
		}
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			f.log.Warn("cold feed stopped", "err", err)
			return
		}
		select {
		case <-fd.wake:
		case <-fd.gone:
			return
		case <-f.follow.stop:
			return
		}
	}
}

// feedFullCopy sends RESET and every cold key's state.
func (f *Front) feedFullCopy(bw *bufio.Writer, d *link.Dump, buf *[]byte, fd *coldFeed) error {
	*buf = link.AppendCommandStrings((*buf)[:0], []string{"RESET"})
	if _, err := bw.Write(*buf); err != nil {
		return err
	}
	for db := range f.indexes {
		var werr error
		err := uptier.ColdKeysInSlot(f.engine, db, -1, func(k []byte) bool {
			werr = f.feedKey(bw, d, buf, db, k, false, 0)
			return werr == nil
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return err
		}
		select {
		case <-fd.gone:
			return errors.New("follower gone")
		default:
		}
	}
	*buf = link.AppendCommandStrings((*buf)[:0], []string{"END"})
	_, err := bw.Write(*buf)
	return err
}

// feedEvents sends the recorded changes, in order.
func (f *Front) feedEvents(bw *bufio.Writer, d *link.Dump, buf *[]byte, evs []feedEvent) error {
	var offset int64 = -1
	for _, ev := range evs {
		var err error
		switch ev.op {
		case opFlush:
			*buf = link.AppendCommandStrings((*buf)[:0], []string{"FLUSH", strconv.Itoa(ev.db)})
			_, err = bw.Write(*buf)
		case opMark:
			*buf = link.AppendCommandStrings((*buf)[:0], []string{"MARK", strconv.FormatUint(ev.seq, 10)})
			if _, err = bw.Write(*buf); err == nil {
				err = bw.Flush()
			}
		case opKey:
			if ev.reload && offset < 0 {
				// One offset for the batch: every RESTORE recorded before
				// it was read is at or before it in the node's stream.
				if offset, err = f.nodeOffset(); err != nil {
					return err
				}
			}
			err = f.feedKey(bw, d, buf, ev.db, []byte(ev.key), ev.reload, offset)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// feedKey sends key's current state: SET with its payload, or DEL (or
// DELAFTER offset, for a reload) when it has no cold copy.
func (f *Front) feedKey(bw *bufio.Writer, d *link.Dump, buf *[]byte, db int, key []byte, reload bool, offset int64) error {
	exp, ok, err := link.DumpKey(f.engine, db, key, d)
	if err != nil {
		return err
	}
	dbs := []byte(strconv.Itoa(db))
	switch {
	case ok:
		*buf = link.AppendCommand((*buf)[:0], [][]byte{[]byte("SET"), dbs, key, strconv.AppendInt(nil, exp, 10), d.Finish()})
	case reload:
		*buf = link.AppendCommand((*buf)[:0], [][]byte{[]byte("DELAFTER"), dbs, key, strconv.AppendInt(nil, offset, 10)})
	default:
		*buf = link.AppendCommand((*buf)[:0], [][]byte{[]byte("DEL"), dbs, key})
	}
	_, err = bw.Write(*buf)
	return err
}

// nodeOffset is the node's replication offset (master_repl_offset).
func (f *Front) nodeOffset() (int64, error) {
	r, err := f.ctlDo(f.defaultDB, [][]byte{[]byte("INFO"), []byte("replication")})
	if err != nil {
		return 0, err
	}
	v, ok := link.InfoField(bulkBody(r), "master_repl_offset")
	if !ok {
		return 0, fmt.Errorf("upstream: no master_repl_offset in INFO replication")
	}
	return strconv.ParseInt(v, 10, 64)
}

// noteRole updates what the role watch found; see watchRole.
func (cf *clusterFollow) noteRole(info []byte) {
	role, _ := link.InfoField(info, "role")
	if role == "master" {
		n, _ := link.InfoField(info, "connected_slaves")
		replicas, _ := strconv.Atoi(n)
		off, _ := link.InfoField(info, "master_repl_offset")
		offset, _ := strconv.ParseInt(off, 10, 64)
		cf.mu.Lock()
		wasReplica := cf.replica && cf.polled
		cf.polled, cf.replica, cf.replicas = true, false, replicas
		stop := cf.stopFollow
		cf.stopFollow, cf.leader = nil, ""
		cf.mu.Unlock()
		if stop != nil {
			close(stop)
		}
		if wasReplica {
			cf.promoted(offset)
		}
		return
	}
	host, _ := link.InfoField(info, "master_host")
	port, _ := link.InfoField(info, "master_port")
	off, _ := link.InfoField(info, "slave_repl_offset")
	offset, _ := strconv.ParseInt(off, 10, 64)
	addr := net.JoinHostPort(host, port)
	cf.mu.Lock()
	cf.polled, cf.replica, cf.replicas = true, true, 0
	start := cf.leader != addr
	var old chan struct{}
	if start {
		old = cf.stopFollow
		cf.leader, cf.stopFollow = addr, make(chan struct{})
	}
	stop := cf.stopFollow
	cf.mu.Unlock()
	if old != nil {
		close(old)
	}
	if start {
		cf.wg.Add(1)
		go cf.followLoop(addr, stop)
	}
	cf.applyPending(offset, false)
}

// promoted runs when the node, a replica, became a primary: the copies of
// reloads the node holds are dropped, the rest are kept (the node never
// got their RESTORE: the cold copy is the key), and so are the copies of
// keys the node holds too (hot wins).
func (cf *clusterFollow) promoted(offset int64) {
	f := cf.f
	f.log.Info("the cluster promoted this sidecar's node: serving its cold store as the shard's", "offset", offset)
	cf.applyPending(offset, true)
	if err := f.reconcile(); err != nil {
		f.log.Warn("could not reconcile the tiers after the promotion; keys in both are resolved when touched", "err", err)
	}
	f.demoter.Kick()
}

// applyPending drops the DELAFTER copies the node's offset reached; with
// all, it forgets the others. Each drop re-checks, under the key's lock,
// that its DELAFTER is still pending: a SET of the key read from the feed
// meanwhile (the key demoted again) cancels it, and its new copy must not
// be dropped (that lost the key once the leader's UNLINK followed).
func (cf *clusterFollow) applyPending(offset int64, all bool) {
	cf.mu.Lock()
	var due []dbKey
	for k, off := range cf.pending {
		if off <= offset {
			due = append(due, k)
		} else if all {
			delete(cf.pending, k)
		}
	}
	cf.mu.Unlock()
	for _, p := range due {
		if err := cf.f.dropDue(cf, p, offset); err != nil {
			cf.f.log.Warn("cold follower: could not drop a reloaded key's copy", "key", p.key, "err", err)
		}
	}
}

// watchRole polls the node's role while it is a cluster node: a replica's
// sidecar follows the address the node replicates from; a primary's
// counts its replicas; a replica becoming primary is a promotion.
func (cf *clusterFollow) watchRole() {
	defer cf.wg.Done()
	t := time.NewTicker(rolePoll)
	defer t.Stop()
	for {
		select {
		case <-cf.stop:
			return
		case <-t.C:
		}
		if !cf.f.cluster.Load() {
			continue
		}
		r, err := cf.f.ctlDo(cf.f.defaultDB, [][]byte{[]byte("INFO"), []byte("replication")})
		if err != nil || link.IsError(r) {
			continue
		}
		cf.noteRole(bulkBody(r))
	}
}

// start starts the role watch once the upstream is known to be a
// cluster node (acceptCluster) and the front is ready (ready, called
// when Enable has started the demoter), whichever comes last.
func (cf *clusterFollow) start() {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	cf.wanted = true
	cf.launch()
}

// ready is start's other half: the front is ready.
func (cf *clusterFollow) ready() {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	cf.isReady = true
	cf.launch()
}

// launch starts the role watch if due; cf.mu is held.
func (cf *clusterFollow) launch() {
	if cf.started || cf.closed || !cf.wanted || !cf.isReady {
		return
	}
	cf.started = true
	cf.wg.Add(1)
	go cf.watchRole()
}

// close stops the role watch, the follow and the feeds.
func (cf *clusterFollow) close() {
	cf.mu.Lock()
	cf.closed = true
	cf.mu.Unlock()
	close(cf.stop)
	cf.mu.Lock()
	if cf.stopFollow != nil {
		close(cf.stopFollow)
		cf.stopFollow = nil
	}
	cf.mu.Unlock()
	cf.wg.Wait()
}
