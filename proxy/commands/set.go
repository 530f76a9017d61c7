package commands

import (
	"bytes"
	"slices"

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
	t.Register("smembers", func(x *server.Ctx, a [][]byte) error {
		return cmdCollAll(x, a, codec.TypeSet, replySet, true, false)
	})
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
		members, err := takeMembers(s, min(n, s.Len()), true)
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
		return closeAll(s)
	})
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
