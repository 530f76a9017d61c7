package link

import (
	"bytes"
	"sync/atomic"
)

// Spillway's own key lookups on the upstream. The demoter reads the keys
// it moves (TYPE, PEXPIRETIME, OBJECT, GET, LRANGE, HSCAN, DUMP...) and a
// start-up check asks EXISTS: the upstream counts those in its
// keyspace_hits and keyspace_misses as if a client had read the keys.
// OwnLookups counts them, hit or miss as the upstream did (from the
// reply), so that INFO can report what the upstream counted for the
// clients alone.

// OwnLookups are the lookups Spillway itself made on the upstream.
type OwnLookups struct {
	hits, misses atomic.Int64
}

// Count records one lookup: a hit if the key was found.
func (o *OwnLookups) Count(hit bool) {
	if hit {
		o.hits.Add(1)
	} else {
		o.misses.Add(1)
	}
}

// Load returns the hits and misses counted since the last Reset.
func (o *OwnLookups) Load() (hits, misses int64) { return o.hits.Load(), o.misses.Load() }

// Reset zeroes the counts (the upstream's CONFIG RESETSTAT or restart).
func (o *OwnLookups) Reset() {
	o.hits.Store(0)
	o.misses.Store(0)
}

// OwnLookups returns the pool's count of Spillway's own lookups.
func (p *Pool) OwnLookups() *OwnLookups { return &p.own }

// Replies that mean the key was not found by a read lookup.
var (
	nullBulk  = []byte("$-1\r\n")
	nullResp3 = []byte("_\r\n")
	emptyArr  = []byte("*0\r\n")
	emptyScan = []byte("*2\r\n$1\r\n0\r\n*0\r\n")
)

// foundNonNull reports whether r, the reply to a lookup that replies a
// null for a missing key (GET, DUMP, OBJECT), means the key was found.
func foundNonNull(r []byte) bool {
	return !bytes.Equal(r, nullBulk) && !bytes.Equal(r, nullResp3)
}

// foundRange reports whether r, the reply to LRANGE or ZRANGE over a
// range the demoter knows the key holds, means the key was found.
func foundRange(r []byte) bool { return !bytes.Equal(r, emptyArr) }

// foundScan reports whether r, the reply to HSCAN or SSCAN, means the key
// was found: Redis replies cursor 0 and no items for a missing key (an
// existing key's walk ending on empty buckets looks the same; rare, and
// counted as a miss).
func foundScan(r []byte) bool { return !bytes.Equal(r, emptyScan) }

// countOwn counts one of the demoter's lookups (none without a pool: a
// connection made by a test).
func (pc policyConn) countOwn(hit bool) {
	if pc.p != nil {
		pc.p.own.Count(hit)
	}
}
