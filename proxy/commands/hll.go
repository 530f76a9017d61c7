package commands

import (
	"bytes"
	"math/rand/v2"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/hll"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/tiering"
)

// The HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.
// A HyperLogLog is an ordinary string holding Redis's exact bytes
// (proxy/hll), so it is stored, demoted, promoted, copied and read with
// GET like any other string. Each command works on a private copy of the
// value and stores the result whole, keeping the key's time to live.

func registerHLL(t *server.Table) {
	t.Register("pfadd", cmdPFAdd)
	t.Register("pfcount", cmdPFCount)
	t.Register("pfmerge", cmdPFMerge)
	t.Register("pfdebug", cmdPFDebug)
	t.Register("pfselftest", cmdPFSelfTest)
}

var (
	errNotHLL     = resp.Err("WRONGTYPE Key is not a valid HyperLogLog string value.")
	errCorruptHLL = resp.Err("INVALIDOBJ Corrupted HLL object detected")
)

// getHLL looks key up for a HyperLogLog command: the entry (nil if
// missing; the caller notifies the miss where Redis does), or
// resp.ErrWrongType for another type, errNotHLL for a string that is not
// a HyperLogLog, or a storage error.
func getHLL(x *server.Ctx, tx *tiering.Tx, key []byte) (*tiering.Entry, error) {
	e, err := getString(x, tx, key)
	if err != nil || e == nil {
		return nil, err
	}
	if hll.Check(e.Str) != nil {
		return nil, errNotHLL
	}
	return e, nil
}

// cmdPFAdd is PFADD key [element ...]: it replies 1 if it created the key
// or changed a register, else 0 (and writes nothing). An element meeting
// corrupted sparse registers replies INVALIDOBJ; what the elements before
// it changed is kept, as in Redis.
func cmdPFAdd(x *server.Ctx, args [][]byte) error {
	key := args[1]
	return x.Update(func(tx *tiering.Tx) error {
		e, err := getHLL(x, tx, key)
		if err != nil {
			return err
		}
		limit := x.Config().HLLSparseMaxBytes()
		var s *hll.Sketch
		updated := e == nil
		if e == nil {
			s = hll.Open(hll.Empty(), limit)
		} else {
			s = hll.Open(e.Str, limit)
		}
		for _, el := range args[2:] {
			changed, err := s.Add(el)
			if err != nil {
				if e != nil && !bytes.Equal(s.Bytes(), e.Str) {
					if err := replaceString(tx, x.DB(), key, e, s.Bytes()); err != nil {
						return err
					}
				}
				return errCorruptHLL
			}
			updated = updated || changed
		}
		if !updated {
			x.W.Int(0)
			return nil
		}
		s.Invalidate()
		if err := replaceString(tx, x.DB(), key, e, s.Bytes()); err != nil {
			return err
		}
		x.NotifyNewKey(e == nil, key)
		x.Notify(server.NotifyString, "pfadd", key)
		x.W.Int(1)
		return nil
	})
}

// cmdPFCount is PFCOUNT key [key ...]. With one key it replies the cached
// cardinality, or computes it and stores it in the value (a write, as in
// Redis: watchers of the key see it modified). With several it replies
// the cardinality of their union, writing nothing. A missing key counts
// as an empty HyperLogLog.
func cmdPFCount(x *server.Ctx, args [][]byte) error {
	if len(args) > 2 {
		return pfCountUnion(x, args[1:])
	}
	key := args[1]
	return x.Update(func(tx *tiering.Tx) error {
		e, err := getHLL(x, tx, key)
		if err != nil {
			return err
		}
		if e == nil {
			x.NotifyKeyMiss(key)
			x.W.Int(0)
			return nil
		}
		if card, ok := hll.Cached(e.Str); ok {
			x.W.Int(int64(card))
			return nil
		}
		card, err := hll.Count(e.Str)
		if err != nil {
			return errCorruptHLL
		}
		v := bytes.Clone(e.Str)
		hll.SetCached(v, card)
		if err := replaceString(tx, x.DB(), key, e, v); err != nil {
			return err
		}
		x.W.Int(int64(card))
		return nil
	})
}

// pfCountUnion is PFCOUNT of several keys: the cardinality of their
// registers' maximum.
func pfCountUnion(x *server.Ctx, keys [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		m := new(hll.Max)
		for _, k := range keys {
			e, err := getHLL(x, tx, k)
			if err != nil {
				return err
			}
			if e == nil {
				x.NotifyKeyMiss(k)
				continue
			}
			if m.Merge(e.Str) != nil {
				return errCorruptHLL
			}
		}
		x.W.Int(int64(m.Count()))
		return nil
	})
}

// cmdPFMerge is PFMERGE destkey [sourcekey ...]: it raises destkey's
// registers to the maximum of its own and the sources' (destkey is read
// as a source first, as in Redis), creating it if missing; the result is
// dense if any input was. It publishes "pfadd".
func cmdPFMerge(x *server.Ctx, args [][]byte) error {
	key := args[1]
	return x.Update(func(tx *tiering.Tx) error {
		m := new(hll.Max)
		var dest *tiering.Entry
		dense := false
		for i, k := range args[1:] {
			e, err := getHLL(x, tx, k)
			if err != nil {
				return err
			}
			if e == nil {
				x.NotifyKeyMiss(k)
				continue
			}
			if i == 0 {
				dest = e
			}
			dense = dense || hll.IsDense(e.Str)
			if m.Merge(e.Str) != nil {
				return errCorruptHLL
			}
		}
		limit := x.Config().HLLSparseMaxBytes()
		var s *hll.Sketch
		if dest == nil {
			s = hll.Open(hll.Empty(), limit)
		} else {
			s = hll.Open(dest.Str, limit)
		}
		if dense {
			if _, err := s.ToDense(); err != nil {
				return errCorruptHLL
			}
		}
		for i, v := range m {
			if v != 0 {
				// The registers were validated by Merge; Redis ignores
				// the result too.
				_, _ = s.Set(i, v)
			}
		}
		s.Invalidate()
		if err := replaceString(tx, x.DB(), key, dest, s.Bytes()); err != nil {
			return err
		}
		x.NotifyNewKey(dest == nil, key)
		x.Notify(server.NotifyString, "pfadd", key)
		x.W.OK()
		return nil
	})
}

// cmdPFDebug is PFDEBUG subcommand key, Redis's debugging command: GETREG
// (the 16384 registers; a sparse value is converted to dense and stored),
// DECODE (the sparse opcodes), ENCODING (dense or sparse), TODENSE (1 if
// it converted the value). The key is looked up and checked before the
// subcommand.
func cmdPFDebug(x *server.Ctx, args [][]byte) error {
	sub, key := cstr.CString(args[1]), args[2] // strcasecmp stops at a NUL
	return x.Update(func(tx *tiering.Tx) error {
		e, err := getHLL(x, tx, key)
		if err != nil {
			return err
		}
		if e == nil {
			return resp.Err("ERR The specified key does not exist")
		}
		switch {
		case cstr.EqualFold(sub, "getreg"):
			v, err := pfToDense(x, tx, key, e)
			if err != nil {
				return err
			}
			regs := hll.DenseRegisters(v)
			x.W.Array(len(regs))
			for _, r := range regs {
				x.W.Int(int64(r))
			}
		case cstr.EqualFold(sub, "decode"):
			s, err := hll.Decode(e.Str)
			if err != nil {
				return resp.Err("ERR HLL encoding is not sparse")
			}
			x.W.BulkString(s)
		case cstr.EqualFold(sub, "encoding"):
			if hll.IsDense(e.Str) {
				x.W.Simple("dense")
			} else {
				x.W.Simple("sparse")
			}
		case cstr.EqualFold(sub, "todense"):
			dense := hll.IsDense(e.Str)
			if _, err := pfToDense(x, tx, key, e); err != nil {
				return err
			}
			x.W.Int(b2i(!dense))
		default:
			return resp.Err("ERR Unknown PFDEBUG subcommand '" + string(sub) + "'")
		}
		return nil
	})
}

// pfToDense returns key's HyperLogLog (entry e) dense, converting and
// storing it if it is sparse, or errCorruptHLL.
func pfToDense(x *server.Ctx, tx *tiering.Tx, key []byte, e *tiering.Entry) ([]byte, error) {
	if hll.IsDense(e.Str) {
		return e.Str, nil
	}
	s := hll.Open(e.Str, x.Config().HLLSparseMaxBytes())
	if _, err := s.ToDense(); err != nil {
		return nil, errCorruptHLL
	}
	if err := replaceString(tx, x.DB(), key, e, s.Bytes()); err != nil {
		return nil, err
	}
	return s.Bytes(), nil
}

// cmdPFSelfTest is PFSELFTEST: Redis's self test of the registers and the
// estimator (hll.SelfTest), run without the engine's lock (it reads no
// key). It replies OK or the failure.
func cmdPFSelfTest(x *server.Ctx, _ [][]byte) error {
	err := hll.SelfTest(x.Config().HLLSparseMaxBytes(), rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())))
	if err != nil {
		return resp.Err(err.Error())
	}
	x.W.OK()
	return nil
}
