package rdbfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/spillway/spillway/tiering"
)

// SpliceStats describe what Splice wrote.
type SpliceStats struct {
	// Upstream is the number of keys copied from the master's file; Cold
	// the number of snap's keys added; Shadowed the snap keys left out
	// because the master's file holds the same key.
	Upstream, Cold, Shadowed int64
}

// Splice writes to w one RDB file holding the keys of the RDB file r (a
// master's full-synchronization payload, RDB version 10 or older) and the
// keys of snap, for a replica to load. The master's records are copied
// byte for byte as they are parsed (never decoded into memory: a value is
// walked, not built), except its repl-stream-db, repl-id and repl-offset
// auxiliary fields, replaced by opts.Repl's; then snap's keys follow,
// encoded as Write encodes them, leaving out every key the master's file
// holds in the same database (a key in both is the master's: a duplicate
// key would make a Redis replica refuse the whole file); then EOF and the
// checksum of what was written. r's own checksum is verified when it has
// one. Memory grows with the number of the master's keys (their names are
// kept to find duplicates), not with their values. Splice does not close
// snap.
func Splice(w io.Writer, r io.Reader, snap *tiering.Snapshot, opts Options) (SpliceStats, error) {
	var st SpliceStats
	wr := &writer{w: w, buf: make([]byte, 0, flushAt+4096)}
	wr.sw.Plain = opts.NoCompression
	rd := newReader(r)
	wk, err := newWalker(rd, snap.Databases())
	if err != nil {
		return st, err
	}
	wr.buf = append(wr.buf, "REDIS0010"...)
	if rp := opts.Repl; rp != nil {
		wr.aux("repl-stream-db", strconv.Itoa(rp.StreamDB))
		wr.aux("repl-id", rp.ID)
		wr.aux("repl-offset", strconv.FormatInt(rp.Offset, 10))
	}
	rd.rec = &wr.buf
	seen := map[int]map[string]struct{}{}
	for {
		mark := len(wr.buf)
		op, err := wk.next()
		if err != nil {
			return st, err
		}
		switch {
		case op == opEOF:
			wr.buf = wr.buf[:mark]
			rd.rec = nil
			return st, spliceEnd(wr, snap, seen, &opts, &st)
		case op == opAux:
			if s := string(wk.auxKey); s == "repl-stream-db" || s == "repl-id" || s == "repl-offset" {
				wr.buf = wr.buf[:mark] // ours replace them
			}
		case op == opFunction2:
			err = rd.skipStr()
		case wk.inKey:
			if seen[wk.db] == nil {
				seen[wk.db] = map[string]struct{}{}
			}
			seen[wk.db][string(wk.key)] = struct{}{}
			if err = rd.skipValue(op, wr); err != nil {
				return st, fmt.Errorf("%w (db %d key %q)", err, wk.db, wk.key)
			}
			st.Upstream++
		}
		if err != nil {
			return st, err
		}
		if err := wr.maybeFlush(); err != nil {
			return st, err
		}
	}
}

// spliceEnd writes snap's keys (but those of the master's file), EOF and
// the new checksum.
func spliceEnd(wr *writer, snap *tiering.Snapshot, seen map[int]map[string]struct{}, opts *Options, st *SpliceStats) error {
	for db := range snap.Databases() {
		cold, shadowed, err := wr.database(snap, db, opts, seen[db], false)
		st.Cold += cold
		st.Shadowed += shadowed
		if err != nil {
			return err
		}
	}
	wr.buf = append(wr.buf, opEOF)
	if err := wr.flush(); err != nil {
		return err
	}
	wr.buf = binary.LittleEndian.AppendUint64(wr.buf, wr.crc)
	if _, err := wr.w.Write(wr.buf); err != nil {
		return fmt.Errorf("rdbfile: write: %w", err)
	}
	return nil
}

// skipStr reads a string without decoding it (its bytes are recorded).
func (r *reader) skipStr() error {
	n, enc, err := r.length()
	if err != nil {
		return err
	}
	if enc {
		switch n {
		case 0:
			return r.full(r.tmp[:1])
		case 1:
			return r.full(r.tmp[:2])
		case 2:
			return r.full(r.tmp[:4])
		case 3:
			if n, err = r.count(); err != nil {
				return err
			}
			if _, err = r.count(); err != nil {
				return err
			}
		default:
			return corrupt("unknown string encoding %d at byte %d", n, r.n)
		}
	}
	if n > maxString {
		return corrupt("string of %d bytes at byte %d", n, r.n)
	}
	var buf [4096]byte
	for n > 0 {
		k := min(n, uint64(len(buf)))
		if err := r.full(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// skipStrs reads n strings.
func (r *reader) skipStrs(n uint64) error {
	for ; n > 0; n-- {
		if err := r.skipStr(); err != nil {
			return err
		}
	}
	return nil
}

// skipValue walks a value of RDB type typ (rdbLoadObject's layouts),
// flushing wr between its parts so that a big value is never held whole.
func (r *reader) skipValue(typ byte, wr *writer) error {
	switch typ {
	case typeString, 9, 10, typeSetIntset, 12, 13, typeHashListpack, typeZSetListpack:
		return r.skipStr()
	case typeList, typeSet, typeHash, 14:
		n, err := r.count()
		if err != nil {
			return err
		}
		if typ == typeHash {
			n *= 2
		}
		return r.skipStrs(n)
	case 3, typeZSet2:
		n, err := r.count()
		if err != nil {
			return err
		}
		for ; n > 0; n-- {
			if err := r.skipStr(); err != nil {
				return err
			}
			if typ == typeZSet2 {
				err = r.full(r.tmp[:8])
			} else if err = r.full(r.tmp[:1]); err == nil && r.tmp[0] < 253 {
				var d [255]byte
				err = r.full(d[:r.tmp[0]])
			}
			if err != nil {
				return err
			}
			if err := wr.maybeFlush(); err != nil {
				return err
			}
		}
		return nil
	case typeListQuicklist2:
		n, err := r.count()
		if err != nil {
			return err
		}
		for ; n > 0; n-- {
			if _, err := r.count(); err != nil { // container
				return err
			}
			if err := r.skipStr(); err != nil {
				return err
			}
			if err := wr.maybeFlush(); err != nil {
				return err
			}
		}
		return nil
	case 15, typeStreamListpacks2:
		sk := &skipper{r: r, wr: wr}
		streamValue(sk, typ == typeStreamListpacks2)
		return sk.err
	}
	return corrupt("value type %d cannot be relayed", typ)
}

// skipper walks a value's parts past (their bytes are recorded),
// flushing wr between them (valueReader).
type skipper struct {
	r   *reader
	wr  *writer
	err error
	raw [24]byte
}

func (s *skipper) count() uint64 {
	var n uint64
	if s.err == nil {
		n, s.err = s.r.count()
	}
	return n
}

func (s *skipper) str() {
	if s.err == nil {
		s.err = s.r.skipStr()
	}
}

func (s *skipper) bytes(n int) {
	if s.err == nil {
		s.err = s.r.full(s.raw[:n])
	}
}

func (s *skipper) part() {
	if s.err == nil {
		s.err = s.wr.maybeFlush()
	}
}

func (s *skipper) failed() error { return s.err }

// ReadAux reads an RDB file's signature and leading auxiliary fields
// (what a master writes before any database: repl-stream-db, repl-id...)
// from r. It reads ahead (buffered): give it a reader limited to the file
// and drain that reader afterwards.
func ReadAux(r io.Reader) (map[string]string, error) {
	rd := newReader(r)
	if _, err := rd.signature(); err != nil {
		return nil, err
	}
	aux := map[string]string{}
	for {
		op, err := rd.byte()
		if err != nil {
			return nil, err
		}
		if op != opAux {
			return aux, nil
		}
		k, err := rd.str()
		if err != nil {
			return nil, err
		}
		v, err := rd.str()
		if err != nil {
			return nil, err
		}
		aux[string(k)] = string(v)
	}
}
