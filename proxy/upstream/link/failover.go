package link

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/spillway/spillway/tiering/uptier"
)

// A key demoted shortly before a failover may still be on the new master:
// the old master ran the demotion's UNLINK, but replication is
// asynchronous and the replica promoted may not have received it. The cold
// copy is then the newer value (the demotion read the key under WATCH and
// unlinked it in the same EXEC, so nothing changed it on the old master in
// between), and the new master's copy is an older one that must not be
// served, nor win a reload. So, with Sentinel, the pool remembers the keys
// demoted during the last recentWindow, forgets those reloaded since
// (Forget), and on a failover unlinks the remembered ones from the new
// master before any client's command reaches it.

// recentWindow is how far back, before a failover, a demotion is assumed
// possibly unreplicated; recentMax bounds the keys remembered.
const (
	recentWindow = 60 * time.Second
	recentMax    = 1 << 20
)

// recentUnlinks are the keys demoted lately (with Sentinel), by database
// and key, with the time of their UNLINK.
type recentUnlinks struct {
	mu      sync.Mutex
	keys    map[string]int64 // db "\x00" key -> Unix ns
	pruned  time.Time
	dropped int64 // keys not remembered because recentMax was reached
}

func recentKey(db int, key []byte) string {
	return strconv.Itoa(db) + "\x00" + string(key)
}

// noteUnlinked remembers keys of db as demoted now.
func (p *Pool) noteUnlinked(db int, keys [][]byte) {
	if p.watch == nil {
		return
	}
	r := &p.recent
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[string]int64{}
	}
	if now.Sub(r.pruned) > time.Second {
		r.pruned = now
		old := now.Add(-recentWindow).UnixNano()
		for k, at := range r.keys {
			if at < old {
				delete(r.keys, k)
			}
		}
	}
	for _, k := range keys {
		if string(k) == uptier.DemotionMarker {
			continue
		}
		if len(r.keys) >= recentMax {
			r.dropped++
			continue
		}
		r.keys[recentKey(db, k)] = now.UnixNano()
	}
}

// Forget tells the pool that key of db was reloaded into the upstream (or
// found there): a failover must leave the new master's copy alone. It
// does nothing without Sentinel.
func (p *Pool) Forget(db int, key []byte) {
	if p.watch == nil {
		return
	}
	p.recent.mu.Lock()
	delete(p.recent.keys, recentKey(db, key))
	p.recent.mu.Unlock()
}

// takeRecent returns, by database, the keys demoted within recentWindow,
// and forgets them all.
func (p *Pool) takeRecent() map[int][][]byte {
	r := &p.recent
	r.mu.Lock()
	keys := r.keys
	r.keys = nil
	r.mu.Unlock()
	old := time.Now().Add(-recentWindow).UnixNano()
	out := map[int][][]byte{}
	for k, at := range keys {
		if at < old {
			continue
		}
		for i := 0; i < len(k); i++ {
			if k[i] == 0 {
				db, _ := strconv.Atoi(k[:i])
				out[db] = append(out[db], []byte(k[i+1:]))
				break
			}
		}
	}
	return out
}

// unlinkRecent removes from the new master (at the pool's target, while the
// pool is fenced: no client's command reaches it) the keys demoted within
// recentWindow. It returns how many the new master still held.
func (p *Pool) unlinkRecent() (int64, error) {
	var removed int64
	for db, keys := range p.takeRecent() {
		c, err := Dial(p.target(), 2, db, p.opts.DialTimeout)
		if err != nil {
			return removed, err
		}
		addr := c.LocalAddr()
		p.internal.Store(addr, struct{}{})
		c.SetDeadline(time.Now().Add(30 * time.Second))
		for len(keys) > 0 {
			n := min(len(keys), 1000)
			for _, k := range keys[:n] {
				// Marked as the demotion was (Spillway's replicas keep the key).
				c.SendArgs([][]byte{[]byte("UNLINK"), k, []byte(uptier.DemotionMarker)})
			}
			if err = c.Flush(); err != nil {
				break
			}
			for i := 0; i < n && err == nil; i++ {
				var r []byte
				if r, err = c.Read(); err == nil {
					if IsError(r) {
						err = fmt.Errorf("UNLINK: %s", ReplyText(r))
					} else if x, _ := IntReply(r); x > 0 {
						removed += x
					}
				}
			}
			if err != nil {
				break
			}
			keys = keys[n:]
		}
		c.Close()
		p.internal.Delete(addr)
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}
