package server

import (
	"bytes"
	"slices"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

func init() {
	register("sadd", cmdSAdd)
	register("srem", func(c *Client, a [][]byte) { cmdCollDel(c, a, codec.TypeSet) })
	register("smembers", func(c *Client, a [][]byte) { cmdCollAll(c, a, codec.TypeSet, replySet, true, false) })
	register("sismember", func(c *Client, a [][]byte) { cmdCollHas(c, a, codec.TypeSet) })
	register("smismember", cmdSMIsMember)
	register("scard", func(c *Client, a [][]byte) { cmdCollLen(c, a, codec.TypeSet) })
	register("spop", cmdSPop)
	register("srandmember", cmdSRandMember)
	register("smove", cmdSMove)
	register("sinter", func(c *Client, a [][]byte) { cmdSetAlgebra(c, a[1:], nil, setInter) })
	register("sinterstore", func(c *Client, a [][]byte) { cmdSetAlgebra(c, a[2:], a[1], setInter) })
	register("sunion", func(c *Client, a [][]byte) { cmdSetAlgebra(c, a[1:], nil, setUnion) })
	register("sunionstore", func(c *Client, a [][]byte) { cmdSetAlgebra(c, a[2:], a[1], setUnion) })
	register("sdiff", func(c *Client, a [][]byte) { cmdSetAlgebra(c, a[1:], nil, setDiff) })
	register("sdiffstore", func(c *Client, a [][]byte) { cmdSetAlgebra(c, a[2:], a[1], setDiff) })
	register("sintercard", cmdSInterCard)
	register("sscan", func(c *Client, a [][]byte) { cmdCollScan(c, a, codec.TypeSet, false) })
}

func cmdSAdd(c *Client, args [][]byte) {
	tx := c.begin()
	s, ok := c.openColl(tx, args[1], codec.TypeSet, true)
	if !ok {
		return
	}
	c.notifyNewKey(s.Len() == 0, args[1]) // a structure is never stored empty
	var added int64
	for _, m := range args[2:] {
		created, err := s.Set(m, nil)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		added += b2i(created)
	}
	if added > 0 {
		c.notify(NotifySet, "sadd", args[1])
	}
	c.w.Int(added)
	c.closeAndCommit(tx, s)
}

func cmdSMIsMember(c *Client, args [][]byte) {
	tx := c.begin()
	s, ok := c.openColl(tx, args[1], codec.TypeSet, false)
	if !ok {
		return
	}
	if s == nil {
		c.notifyKeyMiss(args[1])
	}
	c.w.Array(len(args) - 2)
	for _, m := range args[2:] {
		var found bool
		if s != nil {
			var err error
			if found, err = s.Has(m); err != nil {
				c.txErr(tx, err)
				return
			}
		}
		c.w.Int(b2i(found))
	}
	c.commit(tx)
}

// takeMembers draws n members of s (distinct, see Coll.Random) and returns
// copies of them.
func takeMembers(s *tiering.Coll, n int64, distinct bool) ([][]byte, error) {
	out := make([][]byte, 0, n)
	err := s.Random(n, distinct, func(m, _ []byte) {
		out = append(out, append([]byte(nil), m...))
	})
	return out, err
}

func cmdSPop(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.err(strops.ErrSyntax)
		return
	}
	n := int64(1)
	if len(args) == 3 {
		l, ok := cstr.ParseInt(args[2])
		if !ok || l < 0 {
			c.err("ERR value is out of range, must be positive")
			return
		}
		n = l
	}
	tx := c.begin()
	s, ok := c.openColl(tx, args[1], codec.TypeSet, false)
	if !ok {
		return
	}
	if s == nil || n == 0 {
		if len(args) == 3 {
			c.w.Set(0)
		} else {
			c.w.Null()
		}
		c.commit(tx)
		return
	}
	members, err := takeMembers(s, min(n, s.Len()), true)
	for _, m := range members {
		if err != nil {
			break
		}
		_, err = s.Del(m)
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	// Redis: the event, the reply, then "del" if the set is gone.
	c.notify(NotifySet, "spop", args[1])
	if len(args) == 3 {
		c.w.Set(len(members))
		for _, m := range members {
			c.w.Bulk(m)
		}
	} else {
		c.w.Bulk(members[0])
	}
	if s.Len() == 0 {
		c.notify(NotifyGeneric, "del", args[1])
	}
	c.closeAndCommit(tx, s)
}

func cmdSRandMember(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.err(strops.ErrSyntax)
		return
	}
	n, distinct := int64(1), true
	if len(args) == 3 {
		var ok bool
		if n, distinct, ok = c.parseRandomCount(args[2]); !ok {
			return
		}
	}
	tx := c.begin()
	s, ok := c.openColl(tx, args[1], codec.TypeSet, false)
	if !ok {
		return
	}
	if s == nil {
		c.notifyKeyMiss(args[1])
	}
	if len(args) == 2 {
		if s == nil {
			c.w.Null()
		} else if err := s.Random(1, true, func(m, _ []byte) { c.w.Bulk(m) }); err != nil {
			c.txErr(tx, err)
			return
		}
		c.commit(tx)
		return
	}
	if s == nil || n == 0 {
		c.w.Array(0)
		c.commit(tx)
		return
	}
	if distinct {
		n = min(n, s.Len())
	} else if n > maxRandomCount {
		c.txFail(tx, errRandomCount)
		return
	}
	c.w.Array(int(n))
	var got int64
	err := s.Random(n, distinct, func(m, _ []byte) {
		got++
		c.w.Bulk(m)
	})
	if c.streamed(tx, args[1], n, got, err) {
		c.commit(tx)
	}
}

func cmdSMove(c *Client, args [][]byte) {
	tx := c.begin()
	src, ok := c.openColl(tx, args[1], codec.TypeSet, false)
	if !ok {
		return
	}
	if src == nil {
		// Redis answers 0 for a missing source before checking the
		// destination's type (having looked it up: an expired one goes).
		if !c.expireIfNeeded(tx, args[2]) {
			return
		}
		c.w.Int(0)
		c.commit(tx)
		return
	}
	if bytes.Equal(args[1], args[2]) {
		found, err := src.Has(args[3])
		if err != nil {
			c.txErr(tx, err)
			return
		}
		c.w.Int(b2i(found))
		c.commit(tx)
		return
	}
	dst, ok := c.openColl(tx, args[2], codec.TypeSet, true)
	if !ok {
		return
	}
	dstNew := dst.Len() == 0 // a structure is never stored empty
	removed, err := src.Del(args[3])
	added := false
	if err == nil && removed {
		added, err = dst.Set(args[3], nil)
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if removed {
		c.notify(NotifySet, "srem", args[1])
		if src.Len() == 0 {
			c.notify(NotifyGeneric, "del", args[1])
		}
		c.notifyNewKey(dstNew, args[2])
		if added {
			c.notify(NotifySet, "sadd", args[2])
		}
	}
	c.w.Int(b2i(removed))
	c.closeAndCommit(tx, src, dst)
}

// setOp is a set algebra operation.
type setOp int

const (
	setInter setOp = iota
	setUnion
	setDiff
)

// openSets opens every key as a set for reading, in order. It replies
// WRONGTYPE if any key holds another type (Redis checks all keys before
// acting on a missing one). Missing keys are nil entries.
func (c *Client) openSets(tx *tiering.Tx, keys [][]byte) ([]*tiering.Coll, bool) {
	sets := make([]*tiering.Coll, len(keys))
	for i, k := range keys {
		s, ok := c.openColl(tx, k, codec.TypeSet, false)
		if !ok {
			return nil, false
		}
		if s == nil {
			c.notifyKeyMiss(k)
		}
		sets[i] = s
	}
	return sets, true
}

// computeSets returns op over sets (nil entries are empty sets), stopping
// once limit members are found (0: no limit). Members are copies.
func computeSets(sets []*tiering.Coll, op setOp, limit int) ([][]byte, error) {
	var out [][]byte
	switch op {
	case setInter:
		if slices.Contains(sets, nil) {
			return nil, nil
		}
		// Walk the smallest set; probe the others (point reads when cold).
		order := slices.Clone(sets)
		slices.SortStableFunc(order, func(a, b *tiering.Coll) int { return int(a.Len() - b.Len()) })
		var perr error
		err := order[0].Each(func(m, _ []byte) bool {
			for _, o := range order[1:] {
				has, err := o.Has(m)
				if err != nil {
					perr = err
					return false
				}
				if !has {
					return true
				}
			}
			out = append(out, append([]byte(nil), m...))
			return limit == 0 || len(out) < limit
		})
		if err == nil {
			err = perr
		}
		return out, err
	case setUnion:
		seen := map[string]struct{}{}
		for _, s := range sets {
			if s == nil {
				continue
			}
			err := s.Each(func(m, _ []byte) bool {
				if _, dup := seen[string(m)]; !dup {
					seen[string(m)] = struct{}{}
					out = append(out, append([]byte(nil), m...))
				}
				return true
			})
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	default:
		if sets[0] == nil {
			return nil, nil
		}
		var perr error
		err := sets[0].Each(func(m, _ []byte) bool {
			for _, o := range sets[1:] {
				if o == nil {
					continue
				}
				has, err := o.Has(m)
				if err != nil {
					perr = err
					return false
				}
				if has {
					return true
				}
			}
			out = append(out, append([]byte(nil), m...))
			return true
		})
		if err == nil {
			err = perr
		}
		return out, err
	}
}

// setStoreEvents are the events of SINTERSTORE, SUNIONSTORE, SDIFFSTORE.
var setStoreEvents = [...]string{setInter: "sinterstore", setUnion: "sunionstore", setDiff: "sdiffstore"}

// storeEmpty ends a STORE command whose result is empty, as Redis does:
// it replies 0, and the destination is deleted ("del" if it existed).
func (c *Client) storeEmpty(tx *tiering.Tx, dst []byte) {
	deleted, err := tx.Delete(c.db, dst)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.Int(0)
	if deleted {
		c.notify(NotifyGeneric, "del", dst)
	}
	c.commit(tx)
}

// cmdSetAlgebra is SINTER, SUNION, SDIFF and their STORE forms (dst set).
func cmdSetAlgebra(c *Client, keys [][]byte, dst []byte, op setOp) {
	tx := c.begin()
	sets, ok := c.openSets(tx, keys)
	if !ok {
		return
	}
	members, err := computeSets(sets, op, 0)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if dst == nil {
		c.w.Set(len(members))
		for _, m := range members {
			c.w.Bulk(m)
		}
		c.commit(tx)
		return
	}
	if len(members) == 0 {
		c.storeEmpty(tx, dst)
		return
	}
	isNew, ok := c.keyIsNew(tx, c.db, dst)
	if !ok {
		return
	}
	out, err := tx.CreateColl(c.db, dst, codec.TypeSet)
	for _, m := range members {
		if err != nil {
			break
		}
		_, err = out.Set(m, nil)
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifyNewKey(isNew, dst)
	c.w.Int(int64(len(members)))
	c.notify(NotifySet, setStoreEvents[op], dst)
	c.closeAndCommit(tx, out)
}

func cmdSInterCard(c *Client, args [][]byte) {
	numkeys, ok := cstr.ParseInt(args[1])
	if !ok || numkeys < 1 {
		c.err("ERR numkeys should be greater than 0")
		return
	}
	if numkeys > int64(len(args)-2) {
		c.err("ERR Number of keys can't be greater than number of args")
		return
	}
	limit := int64(0)
	for j := 2 + int(numkeys); j < len(args); j++ {
		if eqFold(args[j], "limit") && j+1 < len(args) {
			j++
			l, ok := cstr.ParseInt(args[j])
			if !ok || l < 0 {
				c.err("ERR LIMIT can't be negative")
				return
			}
			limit = l
			continue
		}
		c.err(strops.ErrSyntax)
		return
	}
	tx := c.begin()
	sets, ok := c.openSets(tx, args[2:2+numkeys])
	if !ok {
		return
	}
	members, err := computeSets(sets, setInter, int(min(limit, 1<<62)))
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.Int(int64(len(members)))
	c.commit(tx)
}
