package upstream

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/proxy/replica"
)

// REPLICAOF and SLAVEOF in upstream mode: Spillway (never its upstream,
// which stays a master Spillway writes to) becomes a replica of another
// server, with proxy/replica's link: the master's RDB is loaded into the
// upstream as RESTOREs (restoreRDB below) once the upstream and the store
// are emptied (the master client's FLUSHALL), and the master's stream is
// applied through this front as the master client, its writes forwarded
// (a cold key is reloaded first, as for any write). While Spillway is a
// replica its own replicas are not served: REPLICAOF disconnects them, as
// Redis does, and their SYNC is refused until REPLICAOF NO ONE (the relay
// follows the upstream's stream, whose offsets are not the master's).

// errReplicaSync refuses Spillway's own replicas while it is a replica.
const errReplicaSync = "ERR Spillway in upstream mode serves no replicas while it is a replica itself (REPLICAOF)"

// errClusterReplicaOf: Redis Cluster refuses REPLICAOF.
const errClusterReplicaOf = "ERR REPLICAOF not allowed in cluster mode."

// useReplicaLoader makes the replica side's full resynchronizations load
// into the upstream (Enable).
func (f *Front) useReplicaLoader() {
	f.srv.Replica().UseLoader(&replica.Loader{Load: f.loadMasterRDB, NoRecord: true})
}

// loadMasterRDB loads a master's RDB into the upstream (replica.Loader).
func (f *Front) loadMasterRDB(r io.Reader, _ int64, stop <-chan struct{}) (int64, error) {
	p := &loadPacer{budget: f.cfg.MaxMemory, used: f.upstreamUsedMemory,
		relieve: f.demoter.Kick, every: 1 << 20, poll: 10 * time.Millisecond, stall: 30 * time.Second,
		stop: stop, log: f.log}
	if b := f.cfg.MaxMemory() / 16; b > 0 && b < p.every {
		p.every = max(b, 64<<10)
	}
	st, err := restoreRDB(r, f.ctlDo, p.restored)
	f.log.Info("the master's RDB is loaded into the upstream", "keys", st.Keys, "functions", st.Functions,
		"bytes", st.Bytes, "pauses", p.pauses, "err", err)
	return st.Keys, err
}

// upstreamUsedMemory polls the upstream's used_memory.
func (f *Front) upstreamUsedMemory() (int64, error) {
	r, err := f.ctlDo(0, [][]byte{[]byte("INFO"), []byte("memory")})
	if err != nil {
		return 0, err
	}
	const field = "used_memory:"
	s := string(r)
	for i := 0; i+len(field) <= len(s); i++ {
		if s[i:i+len(field)] == field && (i == 0 || s[i-1] == '\n') {
			j := i + len(field)
			k := j
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			return strconv.ParseInt(s[j:k], 10, 64)
		}
	}
	return 0, errors.New("no used_memory in the upstream's INFO memory")
}

// upReplicaOf is REPLICAOF and SLAVEOF. Inside MULTI it is queued as
// Spillway's other local commands (multilocal.go) and runs at EXEC, after
// the upstream's transaction, its reply in its slot; its before hook
// (replicaOfBeforeExec) disconnects Spillway's replicas before the
// upstream's EXEC, so nothing of the transaction reaches them.
func upReplicaOf(c *client, args [][]byte) {
	if c.f.cluster.Load() {
		c.Err(errClusterReplicaOf)
		return
	}
	if msg, ok := c.f.replicaOf(c, args[1], args[2], c.txRelayLocked); !ok {
		c.Err(msg)
	} else {
		c.w.Simple(msg)
	}
}

// replicaOfBeforeExec is a queued REPLICAOF's before hook (queuedLocal):
// when it will make Spillway a replica (REPLICAOF host port that
// replicaOf accepts), Spillway's replicas are disconnected before the
// upstream's EXEC, once they got everything before the transaction, and
// no relay starts until the transaction's REPLICAOFs ran: the relay's
// startMu is held (c.txRelayLocked) until upEndTx releases it.
func replicaOfBeforeExec(c *client, args [][]byte) {
	if c.txRelayLocked || c.f.cluster.Load() || noOne(args[1], args[2]) {
		return
	}
	if _, refusal := replicaOfPort(c, args[2]); refusal != "" {
		return
	}
	c.f.relay.startMu.Lock()
	c.txRelayLocked = true
	c.f.stopRelay(c, "REPLICAOF in a transaction")
}

// noOne reports whether REPLICAOF's arguments are NO ONE.
func noOne(host, port []byte) bool {
	return cstr.EqualFold(host, "no") && cstr.EqualFold(port, "one")
}

// replicaOfPort checks REPLICAOF host port (not NO ONE) as Redis does
// before it acts: the master's port, or Redis's error reply refusing it.
func replicaOfPort(c *client, port []byte) (int64, string) {
	if _, isReplica := c.ReplHandshake(); isReplica {
		return 0, "ERR Command is not valid when client is a replica."
	}
	p, ok := cstr.ParseInt(port)
	if !ok || p < 0 || p > 65535 {
		return 0, "ERR Invalid master port"
	}
	return p, ""
}

// replicaOf applies REPLICAOF host port (or NO ONE): it returns the reply
// (a status, or an error when !ok). held: the caller holds the relay's
// startMu.
func (f *Front) replicaOf(c *client, host, port []byte, held bool) (string, bool) {
	rs := f.srv.Replica()
	if noOne(host, port) {
		rs.Stop()
		f.applyReplicas() // a master again: min-replicas-to-write applies (oom.go)
		return "OK", true
	}
	p, refusal := replicaOfPort(c, port)
	if refusal != "" {
		return refusal, false
	}
	// No relay starts between its stop and Start (relay.start checks
	// Active under startMu; in a transaction replicaOfBeforeExec holds it
	// already).
	if !held {
		f.relay.startMu.Lock()
		defer f.relay.startMu.Unlock()
	}
	f.stopRelay(c, "REPLICAOF") // Spillway's replicas are disconnected
	if !rs.Start(string(host), int(p)) {
		return "OK Already connected to specified master", true
	}
	f.applyReplicas() // a replica refuses nothing for want of replicas
	return "OK", true
}

// noteQueued records what a command queued in MULTI needs at EXEC time
// (upEndTx's refusals on a replica).
func (c *client) noteQueued(cmd *cmdtable.Command) {
	if !cmd.Is(cmdtable.FlagStale) {
		c.txNotStale = true
	}
	if cmd.Is(cmdtable.FlagWrite) {
		c.txWrite = true
	}
}

// queueRefusal is the refusal of a command queued in MULTI: one that may
// not run in a transaction (the no-multi flag), or, while Spillway is a
// replica, READONLY and MASTERDOWN (the server's dispatch leaves them to
// the front inside a forwarded transaction); "" if none. The
// refusal fails the transaction (refuse), as on Redis. Scripts are judged
// by their command's flags only.
func (c *client) queueRefusal(cmd *cmdtable.Command) string {
	if cmd.Is(cmdtable.FlagNoMulti) {
		// As the server's queueCommand (SHUTDOWN must not run).
		return "ERR Command not allowed inside a transaction"
	}
	rs := c.f.srv.Replica()
	if !rs.Active() || c.IsMaster() {
		return ""
	}
	if cmd.Is(cmdtable.FlagWrite) && cfgIs(c, "replica-read-only", "yes") {
		return "READONLY You can't write against a read only replica."
	}
	if !cmd.Is(cmdtable.FlagStale) && !rs.LinkUp() && cfgIs(c, "replica-serve-stale-data", "no") {
		return "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
	}
	return ""
}

// execRefusal is the reason EXEC is refused on a replica (Redis's
// processCommand checks of the queued commands' flags), or "".
func (c *client) execRefusal() string {
	rs := c.f.srv.Replica()
	if !rs.Active() || c.IsMaster() {
		return ""
	}
	if c.txWrite && cfgIs(c, "replica-read-only", "yes") {
		return "READONLY You can't write against a read only replica."
	}
	if c.txNotStale && !rs.LinkUp() && cfgIs(c, "replica-serve-stale-data", "no") {
		return "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
	}
	return ""
}

// cfgIs reports whether setting name is v.
func cfgIs(c *client, name, v string) bool {
	got, _ := c.f.cfg.Value(name)
	return got == v
}

// stopRelay stops the relay, if running (Spillway's replicas are
// disconnected), because of why, once its stream holds everything the
// upstream did so far (c's commands included: a replica of Redis gets
// the commands before REPLICAOF).
func (f *Front) stopRelay(c *client, why string) {
	if f.relay.active.Load() {
		if _, err := f.relay.offsetAfterUpstream(c); err != nil {
			f.log.Warn("the relay's stream may miss the upstream's last commands", "err", err)
		}
	}
	f.relay.mu.Lock()
	gen := f.relay.gen
	f.relay.mu.Unlock()
	f.relay.stop(gen, errors.New(why))
}

// runsInMulti reports whether cmd runs at once inside MULTI rather than
// being queued (the server's list: its own handling, never refused here).
func runsInMulti(cmd *cmdtable.Command) bool {
	switch cmd.Name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

// Upstream mode as a replica (REPLICAOF), full resynchronization: the
// master's RDB is loaded into the upstream, key by key, as RESTORE
// commands (each key's RDB value bytes are a DUMP payload body:
// rdbfile.Records adds the version and CRC footer), paced so that the
// demoter keeps the upstream under its budget: a dataset bigger than the
// budget loads, its coldest keys moving into the store as it goes.

// loadStats describe what restoreRDB loaded.
type loadStats struct {
	Keys, Functions int64
	// Bytes is the total size of the payloads restored.
	Bytes int64
}

// restoreRDB reads the RDB r and sends each of its keys to the upstream
// as RESTORE key <expiry> payload ABSTTL in the key's database, and each
// function library as FUNCTION LOAD REPLACE, through do (one command, its
// reply). The caller emptied the upstream and the store first: a key the
// upstream already holds is an error (-BUSYKEY), as any error reply is.
// A key whose expiry has passed is restored all the same (RESTORE then
// creates nothing, as a Redis replica that loaded it would show nothing
// of it: the master's DEL follows). pace, if not nil, is told the size of
// each payload sent and may hold the load (loadPacer.restored); its error
// ends the load. An error leaves the upstream with part of the RDB.
func restoreRDB(r io.Reader, do func(db int, args [][]byte) ([]byte, error), pace func(n int) error) (loadStats, error) {
	var st loadStats
	var ttl []byte
	err := rdbfile.Records(r, func(rec *rdbfile.Record) error {
		var args [][]byte
		if rec.Function != nil {
			args = [][]byte{[]byte("FUNCTION"), []byte("LOAD"), []byte("REPLACE"), rec.Function}
		} else {
			ttl = strconv.AppendInt(ttl[:0], rec.ExpireMS, 10)
			args = [][]byte{[]byte("RESTORE"), rec.Key, ttl, rec.Payload, []byte("ABSTTL")}
		}
		reply, err := do(rec.DB, args)
		if err != nil {
			return err
		}
		if len(reply) > 0 && reply[0] == '-' {
			if rec.Function != nil {
				return fmt.Errorf("FUNCTION LOAD of the master's library: %s", trimReply(reply))
			}
			return fmt.Errorf("RESTORE of the master's key %q (db %d): %s", rec.Key, rec.DB, trimReply(reply))
		}
		if rec.Function != nil {
			st.Functions++
			return nil
		}
		st.Keys++
		st.Bytes += int64(len(rec.Payload))
		if pace != nil {
			return pace(len(rec.Payload))
		}
		return nil
	})
	return st, err
}

// trimReply is an error reply's text without its '-' and CRLF.
func trimReply(r []byte) string {
	s := string(r)
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

// loadPacer holds a load while the upstream is over its budget: every
// `every` bytes of payloads restored, or every pollKeys keys (a payload
// may be compressed: the value it makes can be much bigger), it polls the upstream's used_memory and, while
// that is over the budget, asks for room (the demoter's Kick) and polls
// again. A wait that sees no progress for stall ends (logged): the load
// goes on rather than fail, the upstream's own maxmemory then applies.
type loadPacer struct {
	// budget is the upstream's budget (0: no pacing).
	budget func() int64
	// used polls the upstream's used_memory.
	used func() (int64, error)
	// relieve asks for the upstream to be brought under its budget.
	relieve func()
	// every is the number of bytes restored between polls (at least 1).
	every int64
	// poll is the wait between polls while over budget.
	poll time.Duration
	// stall bounds a wait that sees used_memory not decrease.
	stall time.Duration
	// stop, when closed, ends a wait with errStopped.
	stop <-chan struct{}
	log  *slog.Logger

	pending int64
	keys    int
	pauses  int64
}

// pollKeys is the most keys restored between two polls of used_memory.
const pollKeys = 128

// errLoadStopped: the load was abandoned (the link ended).
var errLoadStopped = fmt.Errorf("the load of the master's RDB was abandoned")

// restored counts one key of n payload bytes restored and, every p.every
// bytes or pollKeys keys, waits while the upstream is over its budget.
func (p *loadPacer) restored(n int) error {
	p.pending += int64(n)
	p.keys++
	if p.pending < p.every && p.keys < pollKeys {
		return nil
	}
	p.pending, p.keys = 0, 0
	budget := p.budget()
	if budget <= 0 {
		return nil
	}
	best := int64(-1)
	since := time.Now()
	waited := false
	for {
		used, err := p.used()
		if err != nil {
			return fmt.Errorf("poll the upstream's memory during the load: %w", err)
		}
		if used <= budget {
			return nil
		}
		if !waited {
			waited = true
			p.pauses++
		}
		if best < 0 || used < best {
			best, since = used, time.Now()
		} else if time.Since(since) > p.stall {
			p.log.Warn("the upstream stays over its budget while loading the master's RDB; loading on",
				"used_memory", used, "budget", budget)
			return nil
		}
		p.relieve()
		select {
		case <-p.stop:
			return errLoadStopped
		case <-time.After(p.poll):
		}
	}
}
