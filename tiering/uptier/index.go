package uptier

import (
	"sync"
	"sync/atomic"
)

// The cold index and the key locks are keyed by codec.KeyHash of the key,
// the hash the store orders keys by (each database has its own index, so
// the database is not part of it).

const indexShards = 64

// ColdIndex is the in-memory set of keys that may have a cold copy: every
// key in the cold store, plus those being demoted. It is what keeps the hot
// path free of disk access: a key absent from the index is not cold. The
// index is keyed by hash, so a positive answer is confirmed in the store
// (a collision costs one lookup); entries of keys the store no longer has
// (expired there, say) are dropped when met.
//
// It also holds the keys a client has protected from demotion (in a
// transaction, watched, or waited on by a blocking command) and the
// demotions in progress, which clients wait for.
type ColdIndex struct {
	shards [indexShards]indexShard
	n      atomic.Int64

	mu        sync.Mutex
	demoting  map[uint64]chan struct{}
	protected map[uint64]int
}

type indexShard struct {
	mu sync.RWMutex
	m  map[uint64]struct{}
	_  [32]byte
}

// NewColdIndex returns an empty index.
func NewColdIndex() *ColdIndex {
	x := &ColdIndex{demoting: map[uint64]chan struct{}{}, protected: map[uint64]int{}}
	for i := range x.shards {
		x.shards[i].m = map[uint64]struct{}{}
	}
	return x
}

func (x *ColdIndex) shard(h uint64) *indexShard { return &x.shards[h>>58] }

// Len is the number of entries.
func (x *ColdIndex) Len() int64 { return x.n.Load() }

// Has reports whether the key with hash h may be cold.
func (x *ColdIndex) Has(h uint64) bool {
	if x.n.Load() == 0 {
		return false
	}
	s := x.shard(h)
	s.mu.RLock()
	_, ok := s.m[h]
	s.mu.RUnlock()
	return ok
}

// Add records a cold key.
func (x *ColdIndex) Add(h uint64) {
	s := x.shard(h)
	s.mu.Lock()
	if _, ok := s.m[h]; !ok {
		s.m[h] = struct{}{}
		x.n.Add(1)
	}
	s.mu.Unlock()
}

// Remove forgets a key.
func (x *ColdIndex) Remove(h uint64) {
	s := x.shard(h)
	s.mu.Lock()
	if _, ok := s.m[h]; ok {
		delete(s.m, h)
		x.n.Add(-1)
	}
	s.mu.Unlock()
}

// Clear forgets every key (FLUSHALL; FLUSHDB and SWAPDB rebuild from the
// store instead, since hashes do not say which database they are in).
func (x *ColdIndex) Clear() {
	for i := range x.shards {
		s := &x.shards[i]
		s.mu.Lock()
		x.n.Add(-int64(len(s.m)))
		s.m = map[uint64]struct{}{}
		s.mu.Unlock()
	}
}

// StartDemotion marks h as being demoted and in the index, unless it is
// protected, being demoted, or already in the index (a key with a cold
// copy is resolved by the clients that touch it, never re-demoted over
// it). Callers hold the key's lock.
func (x *ColdIndex) StartDemotion(h uint64, done chan struct{}) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.protected[h] > 0 || x.Has(h) {
		return false
	}
	if _, busy := x.demoting[h]; busy {
		return false
	}
	x.demoting[h] = done
	x.Add(h)
	return true
}

// EndDemotion ends h's demotion: it stays in the index if cold.
func (x *ColdIndex) EndDemotion(h uint64, cold bool) {
	x.mu.Lock()
	delete(x.demoting, h)
	x.mu.Unlock()
	if !cold {
		x.Remove(h)
	}
}

// Demoting returns the channel closed when h's demotion ends, or nil.
func (x *ColdIndex) Demoting(h uint64) chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.demoting[h]
}

// Protect keeps h from being demoted until Unprotect (counted).
func (x *ColdIndex) Protect(h uint64) {
	x.mu.Lock()
	x.protected[h]++
	x.mu.Unlock()
}

// Unprotect undoes one Protect.
func (x *ColdIndex) Unprotect(h uint64) {
	x.mu.Lock()
	if x.protected[h] <= 1 {
		delete(x.protected, h)
	} else {
		x.protected[h]--
	}
	x.mu.Unlock()
}

// Protected reports whether h is protected.
func (x *ColdIndex) Protected(h uint64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.protected[h] > 0
}

// KeyLocks serialize the slow-path operations on one key: reloading it,
// demoting it, and answering from its cold copy. With the Gate they are
// placement state, not byte moving: they are how a change of a key's tier
// (the demoter marking it, a client reloading it) is ordered against the
// client requests that touch it, which is what keeps one authority per key.
type KeyLocks struct {
	stripes [1024]struct {
		sync.Mutex
		_ [56]byte
	}
}

// Lock locks h's stripe.
func (k *KeyLocks) Lock(h uint64) { k.stripes[h%1024].Lock() }

// Unlock unlocks h's stripe.
func (k *KeyLocks) Unlock(h uint64) { k.stripes[h%1024].Unlock() }

// Gate orders the hot path against demotion. A client holds the read side
// from checking its keys against the index until its forwarded batch's
// replies are in; the demoter marks keys in the index, then passes the
// Barrier: after it, no request that saw those keys unmarked is still on
// its way to the upstream, so removing them there cannot race a write.
type Gate struct {
	shards [16]struct {
		sync.RWMutex
		_ [40]byte
	}
}

// Enter takes the read side for the client with the given id and returns
// what Leave needs.
func (g *Gate) Enter(id int64) *sync.RWMutex {
	m := &g.shards[uint64(id)%16].RWMutex
	m.RLock()
	return m
}

// Barrier waits until every batch that entered before it has left.
func (g *Gate) Barrier() {
	for i := range g.shards {
		g.shards[i].Lock()
		g.shards[i].Unlock()
	}
}
