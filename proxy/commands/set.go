package commands

import (
	"bytes"
	"slices"
	"strconv"
	"sync"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The set commands. A set is stored as a structure (tiering.Coll) of
// members without values; a cold set is probed member by member, never
// loaded to answer a command about a few members.

func registerSet(t *server.Table) {
	t.Register("sadd", cmdSAdd)
	t.Register("srem", func(x *server.Ctx, a [][]byte) error { return cmdCollDel(x, a, codec.TypeSet) })
	t.Register("smembers", cmdSMembers)
	t.Register("sismember", func(x *server.Ctx, a [][]byte) error { return cmdCollHas(x, a, codec.TypeSet) })
	t.Register("smismember", cmdSMIsMember)
	t.Register("scard", func(x *server.Ctx, a [][]byte) error { return cmdCollLen(x, a, codec.TypeSet) })
	t.Register("spop", cmdSPop)
	t.Register("srandmember", cmdSRandMember)
	t.Register("smove", cmdSMove)
	t.Register("sinter", func(x *server.Ctx, a [][]byte) error { return cmdSetAlgebra(x, a[1:], nil, setInter) })
	t.Register("sinterstore", func(x *server.Ctx, a [][]byte) error { return cmdSetAlgebra(x, a[2:], a[1], setInter) })
	t.Register("sunion", func(x *server.Ctx, a [][]byte) error { return cmdSetAlgebra(x, a[1:], nil, setUnion) })
	t.Register("sunionstore", func(x *server.Ctx, a [][]byte) error { return cmdSetAlgebra(x, a[2:], a[1], setUnion) })
	t.Register("sdiff", func(x *server.Ctx, a [][]byte) error { return cmdSetAlgebra(x, a[1:], nil, setDiff) })
	t.Register("sdiffstore", func(x *server.Ctx, a [][]byte) error { return cmdSetAlgebra(x, a[2:], a[1], setDiff) })
	t.Register("sintercard", cmdSInterCard)
	t.Register("sscan", func(x *server.Ctx, a [][]byte) error { return cmdCollScan(x, a, codec.TypeSet, false) })
}

// cmdSAdd is SADD key member...: it replies how many members were added.
func cmdSAdd(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		s, err := tx.OpenColl(x.DB(), args[1], codec.TypeSet, true)
		if err != nil {
			return err
		}
		x.NotifyNewKey(s.Len() == 0, args[1]) // a structure is never stored empty
		var added int64
		for _, m := range args[2:] {
			created, err := s.Set(m, nil)
			if err != nil {
				return err
			}
			added += b2i(created)
		}
		if added > 0 {
			x.Notify(server.NotifySet, "sadd", args[1])
		}
		x.W.Int(added)
		return closeAll(s)
	})
}

// cmdSMembers is SMEMBERS key: every member, as a set reply. A set Redis
// would hold as an intset (at most intsetMax members, all integers) is
// answered in ascending numeric order, as Redis enumerates an intset;
// any other set in the order the store keeps.
func cmdSMembers(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		s, err := tx.OpenColl(x.DB(), args[1], codec.TypeSet, false)
		if err != nil || s == nil {
			if s == nil && err == nil {
				x.NotifyKeyMiss(args[1])
				x.W.Set(0)
			}
			return err
		}
		n := s.Len()
		if n <= intsetMax {
			if done, err := writeIntset(x.W, s); done || err != nil {
				return err
			}
		}
		x.W.Set(int(n))
		var got int64
		err = s.Each(func(m, _ []byte) bool {
			x.W.Bulk(m)
			got++
			return true
		})
		return streamed(args[1], n, got, err)
	})
}

// intsetMax is the most members Redis 7.0 keeps in an intset (the default
// set-max-intset-entries, which OBJECT ENCODING assumes too).
const intsetMax = 512

// intsPool recycles sortedIntset's buffers.
var intsPool = sync.Pool{New: func() any { return new([]int64) }}

// sortedIntset returns s's members in ascending numeric order, and true,
// if s is a set Redis keeps as an intset: at most intsetMax members, all
// integers (string2ll). Otherwise it returns false; a set whose first
// member is not an integer costs one member's parse. The slice is the
// pool's: the caller hands it back with putInts.
func sortedIntset(s *tiering.Coll) (*[]int64, bool, error) {
	if s.Len() > intsetMax {
		return nil, false, nil
	}
	bp := intsPool.Get().(*[]int64)
	ints, all := (*bp)[:0], true
	err := s.Each(func(m, _ []byte) bool {
		v, ok := cstr.ParseInt(m)
		all = all && ok
		ints = append(ints, v)
		return ok
	})
	*bp = ints
	if err != nil || !all || int64(len(ints)) != s.Len() {
		putInts(bp)
		return nil, false, err
	}
	slices.Sort(ints)
	return bp, true, nil
}

// putInts hands a sortedIntset slice back to the pool.
func putInts(bp *[]int64) {
	*bp = (*bp)[:0]
	intsPool.Put(bp)
}

// writeIntset writes s as a set reply in ascending numeric order if it is
// an intset (sortedIntset), and reports whether it did; it writes nothing
// otherwise.
func writeIntset(w *resp.Writer, s *tiering.Coll) (bool, error) {
	bp, ok, err := sortedIntset(s)
	if !ok {
		return false, err
	}
	w.Set(len(*bp))
	for _, v := range *bp {
		w.BulkInt(v)
	}
	putInts(bp)
	return true, nil
}

// scanIntset answers SSCAN for a set Redis keeps as an intset, which
// Redis returns whole whatever the cursor and COUNT, in order, with the
// cursor 0. It reports false, having written nothing, for another set.
func scanIntset(w *resp.Writer, s *tiering.Coll, match func([]byte) bool) (bool, error) {
	bp, ok, err := sortedIntset(s)
	if !ok {
		return false, err
	}
	out := make([][]byte, 0, len(*bp))
	for _, v := range *bp {
		m := strconv.AppendInt(nil, v, 10)
		if match == nil || match(m) {
			out = append(out, m)
		}
	}
	putInts(bp)
	WriteScanReply(w, 0, out)
	return true, nil
}

// sortIntset puts members in ascending numeric order if they are at most
// intsetMax integers (string2ll), the order in which Redis enumerates an
// intset; otherwise it leaves them as they are. It neither parses in its
// comparisons nor allocates: canonical decimal integers compare by sign,
// then length, then bytes.
func sortIntset(members [][]byte) {
	if len(members) > intsetMax || len(members) < 2 {
		return
	}
	for _, m := range members {
		if _, ok := cstr.ParseInt(m); !ok {
			return
		}
	}
	slices.SortFunc(members, compareCanonicalInts)
}

// compareCanonicalInts orders two string2ll-canonical integers by value.
func compareCanonicalInts(a, b []byte) int {
	an, bn := a[0] == '-', b[0] == '-'
	switch {
	case an != bn:
		if an {
			return -1
		}
		return 1
	case len(a) != len(b):
		if (len(a) < len(b)) != an {
			return -1
		}
		return 1
	case an:
		return bytes.Compare(b, a)
	}
	return bytes.Compare(a, b)
}

// cmdSMIsMember is SMISMEMBER key member...: 1 or 0 for each member.
func cmdSMIsMember(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		s, err := tx.OpenColl(x.DB(), args[1], codec.TypeSet, false)
		if err != nil {
			return err
		}
		if s == nil {
			x.NotifyKeyMiss(args[1])
		}
		x.W.Array(len(args) - 2)
		for _, m := range args[2:] {
			var found bool
			if s != nil {
				if found, err = s.Has(m); err != nil {
					return err
				}
			}
			x.W.Int(b2i(found))
		}
		return nil
	})
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

// spopMoveMul is Redis's SPOP_MOVE_STRATEGY_MUL: SPOP with a count that
// leaves remaining members with remaining*spopMoveMul <= count pops the
// remaining ones into a new set and replies the old one in its order.
const spopMoveMul = 5

// cmdSPop is SPOP key [count]: it removes and replies random members (a
// bulk without count, a set with it), deleting the key once empty.
func cmdSPop(x *server.Ctx, args [][]byte) error {
	if len(args) > 3 {
		return resp.Err(strops.ErrSyntax)
	}
	n := int64(1)
	if len(args) == 3 {
		l, ok := cstr.ParseInt(args[2])
		if !ok || l < 0 {
			return resp.Err("ERR value is out of range, must be positive")
		}
		n = l
	}
	return x.Update(func(tx *tiering.Tx) error {
		s, err := tx.OpenColl(x.DB(), args[1], codec.TypeSet, false)
		if err != nil {
			return err
		}
		if s == nil || n == 0 {
			if len(args) == 3 {
				x.W.Set(0)
			} else {
				x.W.Null()
			}
			return nil
		}
		size := s.Len()
		members, err := takeMembers(s, min(n, size), true)
		if len(args) == 3 && (n >= size || (size-n)*spopMoveMul <= n) {
			// Redis returns the whole set, or pops the few members it
			// keeps and replies the rest: in an intset's order.
			sortIntset(members)
		}
		for _, m := range members {
			if err != nil {
				break
			}
			_, err = s.Del(m)
		}
		if err != nil {
			return err
		}
		// Redis: the event, the reply, then "del" if the set is gone.
		x.Notify(server.NotifySet, "spop", args[1])
		if len(args) == 3 {
			x.W.Set(len(members))
			for _, m := range members {
				x.W.Bulk(m)
			}
		} else {
			x.W.Bulk(members[0])
		}
		if s.Len() == 0 {
			x.Notify(server.NotifyGeneric, "del", args[1])
		}
		if x.Replicating() {
			propagateSPop(x, args, members, n >= size)
		}
		return closeAll(s)
	})
}

// propagateSPop records what SPOP propagates, as Redis: SREM of the member
// popped; with a count, DEL of a set it emptied, else one SREM per member
// popped, in the reply's order.
func propagateSPop(x *server.Ctx, args, members [][]byte, all bool) {
	switch {
	case len(args) == 2:
		x.RewriteArgs(argSRem, args[1], members[0])
	case all:
		x.RewriteArgs(argDel, args[1])
	default:
		x.PreventPropagation()
		for _, m := range members {
			x.Propagate(argSRem, args[1], m)
		}
	}
}

// cmdSRandMember is SRANDMEMBER key [count]: a random member (a bulk), or
// count of them, distinct for a positive count, possibly repeated for a
// negative one (at most maxRandomCount).
func cmdSRandMember(x *server.Ctx, args [][]byte) error {
	if len(args) > 3 {
		return resp.Err(strops.ErrSyntax)
	}
	n, distinct := int64(1), true
	if len(args) == 3 {
		var err error
		if n, distinct, err = parseRandomCount(args[2]); err != nil {
			return err
		}
	}
	return x.View(func(tx *tiering.Tx) error {
		s, err := tx.OpenColl(x.DB(), args[1], codec.TypeSet, false)
		if err != nil {
			return err
		}
		if s == nil {
			x.NotifyKeyMiss(args[1])
		}
		if len(args) == 2 {
			if s == nil {
				x.W.Null()
				return nil
			}
			return s.Random(1, true, func(m, _ []byte) { x.W.Bulk(m) })
		}
		if s == nil || n == 0 {
			x.W.Array(0)
			return nil
		}
		if distinct {
			n = min(n, s.Len())
		} else if n > maxRandomCount {
			return errRandomCount
		}
		if distinct && n == s.Len() {
			// The whole set, as Redis iterates it: an intset in order.
			members, err := takeMembers(s, n, true)
			if err != nil {
				return err
			}
			sortIntset(members)
			x.W.Array(len(members))
			for _, m := range members {
				x.W.Bulk(m)
			}
			return nil
		}
		x.W.Array(int(n))
		var got int64
		err = s.Random(n, distinct, func(m, _ []byte) {
			got++
			x.W.Bulk(m)
		})
		return streamed(args[1], n, got, err)
	})
}

// cmdSMove is SMOVE source destination member: it replies whether member
// was moved (or, source and destination the same, is there).
func cmdSMove(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		src, err := tx.OpenColl(x.DB(), args[1], codec.TypeSet, false)
		if err != nil {
			return err
		}
		if src == nil {
			// Redis answers 0 for a missing source before checking the
			// destination's type (having looked it up: an expired one goes).
			if err := x.ExpireIfNeeded(tx, args[2]); err != nil {
				return err
			}
			x.W.Int(0)
			return nil
		}
		if bytes.Equal(args[1], args[2]) {
			found, err := src.Has(args[3])
			if err != nil {
				return err
			}
			x.W.Int(b2i(found))
			return nil
		}
		dst, err := tx.OpenColl(x.DB(), args[2], codec.TypeSet, true)
		if err != nil {
			return err
		}
		dstNew := dst.Len() == 0 // a structure is never stored empty
		removed, err := src.Del(args[3])
		added := false
		if err == nil && removed {
			added, err = dst.Set(args[3], nil)
		}
		if err != nil {
			return err
		}
		if removed {
			x.Notify(server.NotifySet, "srem", args[1])
			if src.Len() == 0 {
				x.Notify(server.NotifyGeneric, "del", args[1])
			}
			x.NotifyNewKey(dstNew, args[2])
			if added {
				x.Notify(server.NotifySet, "sadd", args[2])
			}
		}
		x.W.Int(b2i(removed))
		return closeAll(src, dst)
	})
}

// setOp is a set algebra operation.
type setOp int

const (
	setInter setOp = iota
	setUnion
	setDiff
)

// openSets opens every key as a set for reading, in order. It fails with
// WRONGTYPE if any key holds another type (Redis checks all keys before
// acting on a missing one). Missing keys are nil entries (read misses).
func openSets(x *server.Ctx, tx *tiering.Tx, keys [][]byte) ([]*tiering.Coll, error) {
	sets := make([]*tiering.Coll, len(keys))
	for i, k := range keys {
		s, err := tx.OpenColl(x.DB(), k, codec.TypeSet, false)
		if err != nil {
			return nil, err
		}
		if s == nil {
			x.NotifyKeyMiss(k)
		}
		sets[i] = s
	}
	return sets, nil
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

// cmdSetAlgebra is SINTER, SUNION, SDIFF and their STORE forms (dst set):
// the result as a set reply, or stored in dst and counted.
func cmdSetAlgebra(x *server.Ctx, keys [][]byte, dst []byte, op setOp) error {
	return x.Update(func(tx *tiering.Tx) error {
		sets, err := openSets(x, tx, keys)
		if err != nil {
			return err
		}
		members, err := computeSets(sets, op, 0)
		if err != nil {
			return err
		}
		if dst == nil {
			// Redis builds SUNION's and SDIFF's result as an intset while
			// it can, and SINTER walks its smallest set: small integer
			// results come in order.
			sortIntset(members)
			x.W.Set(len(members))
			for _, m := range members {
				x.W.Bulk(m)
			}
			return nil
		}
		if len(members) == 0 {
			return storeEmpty(x, tx, dst)
		}
		isNew, err := x.KeyIsNew(tx, x.DB(), dst)
		if err != nil {
			return err
		}
		out, err := tx.CreateColl(x.DB(), dst, codec.TypeSet)
		for _, m := range members {
			if err != nil {
				break
			}
			_, err = out.Set(m, nil)
		}
		if err != nil {
			return err
		}
		x.NotifyNewKey(isNew, dst)
		x.W.Int(int64(len(members)))
		x.Notify(server.NotifySet, setStoreEvents[op], dst)
		return closeAll(out)
	})
}

// cmdSInterCard is SINTERCARD numkeys key... [LIMIT limit]: the size of
// the intersection, counting up to limit (0: no limit). The arguments are
// checked before the transaction.
func cmdSInterCard(x *server.Ctx, args [][]byte) error {
	numkeys, ok := cstr.ParseInt(args[1])
	if !ok || numkeys < 1 {
		return resp.Err("ERR numkeys should be greater than 0")
	}
	if numkeys > int64(len(args)-2) {
		return resp.Err("ERR Number of keys can't be greater than number of args")
	}
	limit := int64(0)
	for j := 2 + int(numkeys); j < len(args); j++ {
		if cstr.EqualFold(args[j], "limit") && j+1 < len(args) {
			j++
			l, ok := cstr.ParseInt(args[j])
			if !ok || l < 0 {
				return resp.Err("ERR LIMIT can't be negative")
			}
			limit = l
			continue
		}
		return resp.Err(strops.ErrSyntax)
	}
	return x.View(func(tx *tiering.Tx) error {
		sets, err := openSets(x, tx, args[2:2+numkeys])
		if err != nil {
			return err
		}
		members, err := computeSets(sets, setInter, int(min(limit, 1<<62)))
		if err != nil {
			return err
		}
		x.W.Int(int64(len(members)))
		return nil
	})
}
