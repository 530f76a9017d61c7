package repl

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A Spillway that is itself a replica relays its master's stream to its
// own replicas verbatim, as Redis does (replicationFeedStreamFromMasterStream):
// the replication ID and offsets are its master's, the backlog holds the
// master's bytes, and the server's own propagation (Feed, the cron's PINGs,
// WAIT's GETACKs) is dropped. The replica side (proxy/replica) drives it
// with the methods below.

// SetProxy turns relaying on (the server became a replica: REPLICAOF
// host port) or off. Turning it on disconnects the attached replicas, so
// that they resynchronize with the stream that follows (Redis's
// disconnectSlaves in replicationSetMaster).
func (m *Master) SetProxy(on bool) {
	m.mu.Lock()
	m.proxy = on
	if !on {
		m.seldb = -1 // our own stream starts with a SELECT
	}
	rs := append([]*Replica(nil), m.replicas...)
	m.mu.Unlock()
	if on {
		for _, r := range rs {
			r.close()
		}
	}
}

// Proxying reports whether the master relays its master's stream.
func (m *Master) Proxying() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proxy
}

// SetLocalSink makes Feed, while the master relays (SetProxy), hand each
// command it is given to fn (its database and its RESP bytes, valid only
// during the call) instead of dropping it: a relay that merges the
// server's own changes into another server's stream (upstream mode's
// cold keys) orders them itself. fn is called with the engine's lock held
// and must not block; nil removes it.
func (m *Master) SetLocalSink(fn func(db int, cmd []byte)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sink = fn
}

// Restart moves the start of r, a replica Attach registered for a full
// resynchronization and not yet Run, back to start, an offset of the stream
// its RDB was taken at (a relay learns it only after Attach): +FULLRESYNC
// names it and the stream is sent from start+1. It fails if the backlog no
// longer holds that byte.
func (m *Master) Restart(r *Replica, start int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !r.full || m.bl == nil || start > m.offset || start+1 < m.firstByte() || len(r.spill) > 0 {
		return fmt.Errorf("repl: offset %d is no longer in the backlog (%d..%d)", start, m.firstByte(), m.offset)
	}
	r.next, r.start = start+1, start
	if r.reply != "" {
		r.reply = "+FULLRESYNC " + r.startID + " " + strconv.FormatInt(start, 10) + "\r\n"
	}
	return nil
}

// Adopt takes the replication ID and offset of a dataset just loaded from
// the master (a full resynchronization, or the durable state found at a
// restart): the backlog is created (or emptied) to hold the stream from
// offset on, the previous ID is forgotten and the attached replicas are
// disconnected, since their data is not this one.
func (m *Master) Adopt(id string, offset int64) {
	if id == "" {
		id = randomID()
	}
	m.mu.Lock()
	m.id, m.id2, m.secondOffset, m.offset = id, zeroID, -1, offset
	m.seldb = -1
	if m.bl == nil {
		m.bl = &backlog{buf: make([]byte, m.backlogSize())}
		m.active.Store(true)
		m.loops = 1
		m.ticker = time.NewTicker(time.Second)
		go m.cron(m.ticker)
	} else {
		m.bl.histlen = 0
	}
	rs := append([]*Replica(nil), m.replicas...)
	m.wake()
	m.mu.Unlock()
	for _, r := range rs {
		r.close()
	}
}

// ShiftID makes id the replication ID, keeping the current one as the
// previous ID, valid up to the current offset (Redis's shiftReplicationId):
// replicas that followed the old ID can still resynchronize partially.
// An empty id means a new random one (a promotion, REPLICAOF NO ONE). The
// attached replicas are disconnected, to learn the new ID when they
// reconnect (+CONTINUE <id>).
func (m *Master) ShiftID(id string) {
	if id == "" {
		id = randomID()
	}
	m.mu.Lock()
	if id == m.id {
		m.mu.Unlock()
		return
	}
	m.id2, m.secondOffset, m.id = m.id, m.offset+1, id
	rs := append([]*Replica(nil), m.replicas...)
	m.mu.Unlock()
	for _, r := range rs {
		r.close()
	}
}

// FeedRaw appends p, bytes of the master's stream the replica applied, to
// the stream as they are, and advances the offset by their length even
// without a backlog (master_repl_offset follows the master's). It returns
// the offset after p. It does nothing unless the master relays
// (SetProxy).
func (m *Master) FeedRaw(p []byte) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.proxy {
		return m.offset // promoted meanwhile: the server propagates itself
	}
	if m.bl == nil {
		m.offset += int64(len(p))
		return m.offset
	}
	m.appendLocked(p)
	return m.offset
}

// SetRoleInfo replaces INFO replication's "role:master" line with what fn
// writes (a replica's fields); nil restores it. fn is called with the
// master's lock held and must not call the Master.
func (m *Master) SetRoleInfo(fn func(sb *strings.Builder)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roleInfo = fn
}

// waitFirstAck waits until a replica that received a diskless RDB sends
// its first REPLCONF ACK (ackOff leaves -1), as Redis waits before it
// streams to such a replica (repl_put_online_on_ack): the replica finds
// the end of the RDB by its last 40 bytes being the EOF mark, so no byte
// of the stream may follow the mark before it has read it. A relaying
// master's stream never pauses, which made this visible. It reports
// false if the replica left, or sent no ACK within repl-timeout.
func (m *Master) waitFirstAck(r *Replica) bool {
	t := time.NewTimer(time.Duration(max(m.settingInt("repl-timeout", 60), 1)) * time.Second)
	defer t.Stop()
	for {
		m.mu.Lock()
		ch := m.changed
		m.mu.Unlock()
		if r.ackOff.Load() != -1 {
			return true
		}
		select {
		case <-ch:
		case <-r.done:
			return false
		case <-t.C:
			m.opts.Log.Warn("no REPLCONF ACK from a replica after its diskless RDB", "replica", r.addr())
			return false
		}
	}
}

// DisconnectReplicas disconnects every attached replica.
func (m *Master) DisconnectReplicas() {
	m.mu.Lock()
	rs := append([]*Replica(nil), m.replicas...)
	m.mu.Unlock()
	for _, r := range rs {
		r.close()
	}
}
