package upstream

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering/uptier"
)

// The slow path of upstream mode: commands that meet a key in the cold
// index are answered from the cold copy, or have their keys reloaded into
// the upstream first (see upForward).
// metaCmds answer from a cold key's metadata without reloading it.
var metaCmds = map[string]bool{
	"type": true, "ttl": true, "pttl": true, "expiretime": true, "pexpiretime": true,
	"persist": true, "expire": true, "pexpire": true, "expireat": true, "pexpireat": true,
}

// reloadAlways are reads never answered from a cold copy: their cursors
// would not survive the key's reload between calls.
var reloadAlways = map[string]bool{"hscan": true, "sscan": true, "zscan": true}

// countCmds count keys and may mix tiers: cold keys are counted (and
// deleted) in the store, the rest upstream.
var countCmds = map[string]bool{"del": true, "unlink": true, "exists": true, "touch": true}

// upCold handles a command with a key in the cold index. It reports true
// when the command was answered; false means its keys were reloaded (or
// found not cold) and it should be forwarded.
func (c *client) upCold(cmd *cmdtable.Command, args [][]byte, keys []int) bool {
	idx := c.f.index(c.DB())
	// In front of a cluster replica, the node's answer to a reload says
	// whose key it is (cluster_follow.go): no cold key is answered here.
	onReplica := c.f.follow.replicaNode()
	if countCmds[cmd.Name] && !onReplica {
		c.upCount(cmd, args, keys)
		return true
	}
	h0 := c.f.srv.Handler(cmd)
	if !onReplica && h0 != nil && sameKey(args, keys) && !reloadAlways[cmd.Name] && (metaCmds[cmd.Name] || cmd.Is(cmdtable.FlagReadonly)) {
		key := args[keys[0]]
		h := codec.KeyHash(key)
		c.lockKey(idx, h)
		defer c.f.locks.Unlock(h)
		size, ok, err := uptier.ColdSize(c.f.engine, c.DB(), key)
		if err != nil {
			c.ReplyError(err)
			return true
		}
		if !ok {
			c.f.relay.barrier() // its expiry is in the replicas' stream first
			idx.Remove(h)
			return false
		}
		// While paused, the upstream is too (pause.go): a reload would wait.
		// So while the upstream refuses writes (min-replicas, oom.go).
		if metaCmds[cmd.Name] || c.f.srv.Paused() || c.f.writesHeld.Load() || !c.f.admitReload(h, size) {
			c.Call(h0, args)
			c.f.relay.barrier() // what it changed is in the replicas' stream
			if !metaCmds[cmd.Name] {
				// A read leaves the copy (an expired one is found gone later).
				c.f.coldReads.Add(1)
			} else if _, still, err := uptier.ColdSize(c.f.engine, c.DB(), key); err == nil && !still {
				idx.Remove(h)
			}
			return true
		}
		if err := c.reloadLocked(idx, c.DB(), key, h); err != nil {
			c.Err(reloadError(key, err))
			return true
		}
		return false
	}
	for _, p := range keys {
		key := args[p]
		h := codec.KeyHash(key)
		if !idx.Has(h) {
			continue
		}
		c.lockKey(idx, h)
		err := c.reloadLocked(idx, c.DB(), key, h)
		c.f.locks.Unlock(h)
		if err != nil {
			c.Err(reloadError(key, err))
			return true
		}
	}
	return false
}

func reloadError(key []byte, err error) string {
	if msg, ok := migratingReloadError(key, err); ok {
		return msg
	}
	if msg := link.FirstLine(err.Error()); strings.HasPrefix(msg, "NOREPLICAS ") {
		return msg // the upstream refuses writes (oom.go): Redis's refusal
	}
	return "ERR spillway could not reload cold key '" + cstr.ErrArg(key) + "': " + link.FirstLine(err.Error())
}

// sameKey reports whether every key position names the same key.
func sameKey(args [][]byte, keys []int) bool {
	if len(keys) == 0 {
		return false
	}
	for _, p := range keys[1:] {
		if !bytes.Equal(args[p], args[keys[0]]) {
			return false
		}
	}
	return true
}

// lockKey waits out a demotion of h, then takes h's key lock.
func (c *client) lockKey(idx *uptier.ColdIndex, h uint64) {
	for {
		if ch := idx.Demoting(h); ch != nil {
			<-ch
			continue
		}
		c.f.locks.Lock(h)
		if idx.Demoting(h) == nil {
			return
		}
		c.f.locks.Unlock(h)
	}
}

// reloadLocked moves key's cold copy into the upstream with RESTORE
// (atomic, TTL included) and drops it from the store. If the upstream
// already has the key (written there directly), the upstream's copy wins
// and the cold one is dropped. The caller holds the key lock.
func (c *client) reloadLocked(idx *uptier.ColdIndex, db int, key []byte, h uint64) error {
	exp, ok, err := link.DumpKey(c.f.engine, db, key, &c.dump)
	if err != nil {
		return err
	}
	if !ok {
		c.f.relay.barrier()
		idx.Remove(h)
		return nil
	}
	payload := c.dump.Finish()
	args := [][]byte{[]byte("RESTORE"), key, []byte("0"), payload}
	if exp > 0 {
		args[2] = strconv.AppendInt(nil, exp, 10)
		args = append(args, []byte("ABSTTL"))
	}
	c.f.census.RLock()
	defer c.f.census.RUnlock()
	unexpect := c.f.relay.expectRestore(db, key) // Spillway's replicas hold the key
	r, err := c.ctlDo(db, args)
	if err != nil {
		unexpect()
		return err
	}
	switch {
	case bytes.HasPrefix(r, []byte("-BUSYKEY")):
		unexpect()
		c.f.reloadConflicts.Add(1)
	case link.IsError(r):
		unexpect()
		return fmt.Errorf("%s", link.ReplyText(r))
	default:
		c.f.reloads.Add(1)
	}
	if err := uptier.DropKey(c.f.engine, db, key); err != nil {
		return err
	}
	idx.Remove(h)
	c.f.follow.changed(db, key, true)
	c.f.pool.Forget(db, key) // the upstream's copy is the key now
	return nil
}

// ctlDo runs one request of Spillway's own on db and returns a copy of the
// reply: on a shared connection for the default database, else on the
// control connection.
func (c *client) ctlDo(db int, args [][]byte) ([]byte, error) {
	if db != c.f.defaultDB {
		return c.f.ctlDo(db, args)
	}
	m, err := c.f.pool.Shared(2, c.id)
	if err != nil {
		return nil, err
	}
	call := c.ctlCall
	call.Replies = call.Replies[:0]
	if err := m.Do(call, link.AppendCommand(nil, args), 1); err != nil {
		return nil, err
	}
	return call.Replies, nil
}

// upCount runs DEL, UNLINK, EXISTS or TOUCH across both tiers: cold keys
// are counted (and for DEL/UNLINK dropped) in the store, the others are
// forwarded in one command, and the counts are added.
func (c *client) upCount(cmd *cmdtable.Command, args [][]byte, keys []int) {
	idx := c.f.index(c.DB())
	drop := cmd.Name == "del" || cmd.Name == "unlink"
	var local int64
	rest := [][]byte{args[0]}
	for _, p := range keys {
		rest = append(rest, args[p])
	}
	synced := false
	for attempt := 0; attempt < 50; attempt++ {
		next := rest[:1]
		for _, key := range rest[1:] {
			h := codec.KeyHash(key)
			if idx.Has(h) {
				c.lockKey(idx, h)
				_, ok, err := uptier.ColdSize(c.f.engine, c.DB(), key)
				if err == nil && ok && drop {
					if err = uptier.DropKey(c.f.engine, c.DB(), key); err == nil {
						c.f.relay.addLocal(c.DB(), args[0], key)
					}
					c.f.relay.barrier()
					idx.Remove(h)
					c.f.follow.changed(c.DB(), key, false)
				} else if err == nil && !ok {
					c.f.relay.barrier()
					idx.Remove(h)
				}
				c.f.locks.Unlock(h)
				if err != nil {
					c.ReplyError(err)
					return
				}
				if ok {
					if !drop { // EXISTS and TOUCH read the key (keyspace_hits)
						c.f.engine.Stats.KeyspaceHits.Add(1)
					}
					local++
					continue
				}
			}
			next = append(next, key)
		}
		rest = next
		if drop && local > 0 && !synced {
			// A cluster replica's sidecar drops them before the reply.
			synced = true
			if err := c.f.follow.sync(); err != nil {
				c.f.log.Warn("cold follower behind after a deletion", "err", err)
			}
		}
		if len(rest) == 1 {
			c.w.Int(local)
			return
		}
		c.enterGate()
		clean := true
		for _, key := range rest[1:] {
			if idx.Has(codec.KeyHash(key)) {
				clean = false
				break
			}
		}
		if !clean {
			c.leaveGate()
			continue
		}
		mark := c.w.Len()
		c.enqueue(rest)
		c.flushForwards()
		if n, ok := link.IntReply(c.w.Buf[mark:]); ok {
			c.w.Truncate(mark)
			c.w.Int(n + local)
		}
		return
	}
	c.Err("ERR spillway: the command's keys kept moving between tiers; try again")
}

// prepareKeys reloads the cold ones among keys and, with protect, keeps
// all of them from demotion until unprotectAll.
func (c *client) prepareKeys(db int, args [][]byte, keys []int, protect bool) bool {
	idx := c.f.index(db)
	for _, p := range keys {
		key := args[p]
		h := codec.KeyHash(key)
		c.lockKey(idx, h)
		if protect {
			idx.Protect(h)
			c.protected = append(c.protected, protectedKey{db, h})
		}
		var err error
		if idx.Has(h) {
			err = c.reloadLocked(idx, db, key, h)
		}
		c.f.locks.Unlock(h)
		if err != nil {
			c.Err(reloadError(key, err))
			return false
		}
	}
	return true
}

func (c *client) unprotectAll() {
	for _, p := range c.protected {
		c.f.index(p.db).Unprotect(p.h)
	}
	c.protected = c.protected[:0]
}
