package rdbfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/spillway/spillway/proxy/rdb"
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
	var magic [9]byte
	if err := rd.full(magic[:]); err != nil {
		return st, err
	}
	if string(magic[:5]) != "REDIS" {
		return st, corrupt("not an RDB file (no REDIS signature)")
	}
	if v, err := strconv.Atoi(string(magic[5:])); err != nil || v < 1 || v > Version {
		return st, corrupt("RDB version %q is not one Redis 7.0 loads", magic[5:])
	}
	wr.buf = append(wr.buf, "REDIS0010"...)
	if rp := opts.Repl; rp != nil {
		wr.aux("repl-stream-db", strconv.Itoa(rp.StreamDB))
		wr.aux("repl-id", rp.ID)
		wr.aux("repl-offset", strconv.FormatInt(rp.Offset, 10))
	}
	rd.rec = &wr.buf
	seen := map[int]map[string]struct{}{}
	db := 0
	for {
		mark := len(wr.buf)
		op, err := rd.byte()
		if err != nil {
			return st, err
		}
		switch op {
		case opExpireTimeMS:
			err = rd.full(rd.tmp[:8])
		case opExpireTime:
			err = rd.full(rd.tmp[:4])
		case opFreq:
			_, err = rd.byte()
		case opIdle:
			_, err = rd.count()
		case opSelectDB:
			var n uint64
			n, err = rd.count()
			if n >= uint64(snap.Databases()) {
				return st, corrupt("the file selects database %d; this server has %d", n, snap.Databases())
			}
			db = int(n)
		case opResizeDB:
			if _, err = rd.count(); err == nil {
				_, err = rd.count()
			}
		case opAux:
			var k []byte
			if k, err = rd.str(); err == nil {
				_, err = rd.str()
			}
			if s := string(k); s == "repl-stream-db" || s == "repl-id" || s == "repl-offset" {
				wr.buf = wr.buf[:mark] // ours replace them
			}
		case opFunction2:
			err = rd.skipStr()
		case opModuleAux, opFunctionPre:
			return st, corrupt("the file holds records Spillway cannot relay (opcode %d)", op)
		case opEOF:
			wr.buf = wr.buf[:mark]
			rd.rec = nil
			return st, spliceEnd(wr, rd, snap, seen, &opts, &st)
		default:
			var key []byte
			if key, err = rd.str(); err != nil {
				return st, err
			}
			if seen[db] == nil {
				seen[db] = map[string]struct{}{}
			}
			seen[db][string(key)] = struct{}{}
			if err = rd.skipValue(op, wr); err != nil {
				return st, fmt.Errorf("%w (db %d key %q)", err, db, key)
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

// spliceEnd checks the master's checksum, then writes snap's keys, EOF and
// the new checksum.
func spliceEnd(wr *writer, rd *reader, snap *tiering.Snapshot, seen map[int]map[string]struct{}, opts *Options, st *SpliceStats) error {
	sum := rd.crc
	var b [8]byte
	if _, err := io.ReadFull(rd.br, b[:]); err != nil {
		return corrupt("the file ends before its checksum")
	}
	if got := binary.LittleEndian.Uint64(b[:]); got != 0 && got != sum {
		return corrupt("checksum mismatch (file %016x, computed %016x)", got, sum)
	}
	for db := range snap.Databases() {
		if err := wr.spliceDB(snap, db, seen[db], opts, st); err != nil {
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

// spliceDB writes db's keys of snap that are not in skip.
func (w *writer) spliceDB(snap *tiering.Snapshot, db int, skip map[string]struct{}, opts *Options, st *SpliceStats) error {
	it, err := snap.Keys(db)
	if err != nil {
		return err
	}
	defer it.Close()
	first := true
	for it.Next() {
		if _, dup := skip[string(it.Key())]; dup {
			st.Shadowed++
			continue
		}
		if first {
			first = false
			w.buf = append(w.buf, opSelectDB)
			w.buf = rdb.AppendLen(w.buf, uint64(db))
		}
		if err := w.key(it, opts); err != nil {
			return fmt.Errorf("rdbfile: db %d key %q: %w", db, it.Key(), err)
		}
		st.Cold++
		if err := w.maybeFlush(); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("rdbfile: db %d: %w", db, err)
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

// skipCounts reads n lengths.
func (r *reader) skipCounts(n int) error {
	for ; n > 0; n-- {
		if _, err := r.count(); err != nil {
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
			if err := r.skipCounts(1); err != nil {
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
		return r.skipStream(typ == typeStreamListpacks2, wr)
	}
	return corrupt("value type %d cannot be relayed", typ)
}

// skipStream walks a stream value (RDB_TYPE_STREAM_LISTPACKS, _2).
func (r *reader) skipStream(v2 bool, wr *writer) error {
	nodes, err := r.count()
	if err != nil {
		return err
	}
	for ; nodes > 0; nodes-- {
		if err := r.skipStrs(2); err != nil {
			return err
		}
		if err := wr.maybeFlush(); err != nil {
			return err
		}
	}
	meta := 3 // length, last ID
	if v2 {
		meta += 5 // first ID, max deleted ID, entries added
	}
	if err := r.skipCounts(meta); err != nil {
		return err
	}
	groups, err := r.count()
	if err != nil {
		return err
	}
	var id [16]byte
	for ; groups > 0; groups-- {
		if err := r.skipStr(); err != nil {
			return err
		}
		head := 2 // last delivered ID
		if v2 {
			head++ // entries read
		}
		if err := r.skipCounts(head); err != nil {
			return err
		}
		pel, err := r.count()
		if err != nil {
			return err
		}
		for ; pel > 0; pel-- {
			if err := r.full(id[:]); err != nil { // ID, then delivery time
				return err
			}
			if err := r.full(r.tmp[:8]); err != nil {
				return err
			}
			if err := r.skipCounts(1); err != nil {
				return err
			}
		}
		consumers, err := r.count()
		if err != nil {
			return err
		}
		for ; consumers > 0; consumers-- {
			if err := r.skipStr(); err != nil {
				return err
			}
			if err := r.full(r.tmp[:8]); err != nil { // seen time
				return err
			}
			n, err := r.count()
			if err != nil {
				return err
			}
			for ; n > 0; n-- {
				if err := r.full(id[:]); err != nil {
					return err
				}
			}
		}
		if err := wr.maybeFlush(); err != nil {
			return err
		}
	}
	return nil
}

// ReadAux reads an RDB file's signature and leading auxiliary fields
// (what a master writes before any database: repl-stream-db, repl-id...)
// from r. It reads ahead (buffered): give it a reader limited to the file
// and drain that reader afterwards.
func ReadAux(r io.Reader) (map[string]string, error) {
	rd := newReader(r)
	var magic [9]byte
	if err := rd.full(magic[:]); err != nil {
		return nil, err
	}
	if string(magic[:5]) != "REDIS" {
		return nil, corrupt("not an RDB file (no REDIS signature)")
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
