package upstream

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/spillway/spillway/proxy/rdbfile"
)

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
