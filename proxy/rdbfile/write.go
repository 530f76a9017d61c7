package rdbfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/tiering"
)

// Options shape the file Write produces.
type Options struct {
	// The compact-encoding limits (CONFIG's hash-max-listpack-entries and
	// so on): a value within them is written in the compact encoding
	// redis-server would hold it in, any other in the plain form.
	HashMaxListpackEntries int64
	HashMaxListpackValue   int64
	ZSetMaxListpackEntries int64
	ZSetMaxListpackValue   int64
	SetMaxIntsetEntries    int64
	// ListMaxListpackSize is list-max-listpack-size: negative -1..-5 for
	// 4..64 KiB per node, positive for a count of elements.
	ListMaxListpackSize int64

	// Functions are the function libraries: FUNCTION DUMP's payload without
	// its 10-byte footer (a FUNCTION2 record per library), written as is.
	Functions []byte

	// Ctime is the ctime field (now if zero); UsedMem the used-mem field.
	Ctime   time.Time
	UsedMem int64
	// Repl, when set, adds repl-stream-db, repl-id and repl-offset, as a
	// master with a replication backlog writes them.
	Repl *ReplInfo
	// AOFBase marks the file as an AOF's base (aof-base 1).
	AOFBase bool
	// NoCompression writes strings without LZF (rdbcompression no);
	// NoChecksum writes a zero checksum (rdbchecksum no).
	NoCompression bool
	NoChecksum    bool
}

// ReplInfo is the replication state an RDB records for a replica to
// continue from.
type ReplInfo struct {
	StreamDB int
	ID       string
	Offset   int64
}

// DefaultOptions are Redis 7.0's default encoding limits (as this Debian
// build of redis-server reports them).
func DefaultOptions() Options {
	return Options{
		HashMaxListpackEntries: 512,
		HashMaxListpackValue:   64,
		ZSetMaxListpackEntries: 128,
		ZSetMaxListpackValue:   64,
		SetMaxIntsetEntries:    512,
		ListMaxListpackSize:    -2,
	}
}

// flushAt is how much the writer buffers before passing it on.
const flushAt = 64 << 10

// writer accumulates the file, hashing and flushing it in bounded chunks.
type writer struct {
	w   io.Writer
	buf []byte
	crc uint64
	n   int64
	lp  rdb.Listpack
	tmp []byte
	err error
	sw  rdb.StringWriter
}

func (w *writer) flush() error {
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	w.crc = rdb.CRC64(w.crc, w.buf)
	_, w.err = w.w.Write(w.buf)
	w.n += int64(len(w.buf))
	w.buf = w.buf[:0]
	if w.err != nil {
		w.err = fmt.Errorf("rdbfile: write: %w", w.err)
	}
	return w.err
}

func (w *writer) maybeFlush() error {
	if len(w.buf) >= flushAt {
		return w.flush()
	}
	return w.err
}

// put appends s as an RDB string: integer-encoded where it can be, LZF-
// compressed (unless NoCompression) where that saves space, as
// rdbSaveRawString.
func (w *writer) put(s []byte) { w.buf = w.sw.Append(w.buf, s) }

func (w *writer) str(s []byte) error {
	w.put(s)
	return w.maybeFlush()
}

func (w *writer) aux(k, v string) {
	w.buf = append(w.buf, opAux)
	w.put([]byte(k))
	w.put([]byte(v))
}

// Write writes snap as a complete RDB file to w: the "REDIS0010" magic,
// the auxiliary fields redis-server 7.0 writes, the function libraries,
// then every database holding keys (SELECTDB, RESIZEDB, each key with its
// EXPIRETIME_MS, type, name and value), EOF and the CRC-64 checksum.
// Memory stays bounded whatever the dataset's size: structures are
// streamed from the snapshot record by record, and the compact encodings
// are only built for values within their limits. Keys expired but not yet
// removed are written with their expiry, as Redis does (loaders drop
// them). A key whose type cannot be encoded fails the write with
// ErrUnsupportedType. Write does not close snap.
func Write(w io.Writer, snap *tiering.Snapshot, opts Options) error {
	wr := &writer{w: w, buf: make([]byte, 0, flushAt+4096)}
	wr.sw.Plain = opts.NoCompression
	wr.buf = append(wr.buf, "REDIS0010"...)
	ctime := opts.Ctime
	if ctime.IsZero() {
		ctime = time.Now()
	}
	wr.aux("redis-ver", RedisVersion)
	wr.aux("redis-bits", "64")
	wr.aux("ctime", strconv.FormatInt(ctime.Unix(), 10))
	wr.aux("used-mem", strconv.FormatInt(opts.UsedMem, 10))
	if r := opts.Repl; r != nil {
		wr.aux("repl-stream-db", strconv.Itoa(r.StreamDB))
		wr.aux("repl-id", r.ID)
		wr.aux("repl-offset", strconv.FormatInt(r.Offset, 10))
	}
	aofBase := "0"
	if opts.AOFBase {
		aofBase = "1"
	}
	wr.aux("aof-base", aofBase)
	wr.buf = append(wr.buf, opts.Functions...)
	if err := wr.maybeFlush(); err != nil {
		return err
	}
	for db := range snap.Databases() {
		if _, _, err := wr.database(snap, db, &opts, nil, true); err != nil {
			return err
		}
	}
	wr.buf = append(wr.buf, opEOF)
	if err := wr.flush(); err != nil {
		return err
	}
	sum := wr.crc
	if opts.NoChecksum {
		sum = 0 // rdbchecksum no: loaders skip the check
	}
	wr.buf = binary.LittleEndian.AppendUint64(wr.buf, sum)
	if _, err := w.Write(wr.buf); err != nil {
		return fmt.Errorf("rdbfile: write: %w", err)
	}
	return nil
}

// database writes db's keys of snap but those in skip, preceded by
// SELECTDB (and, with resize, RESIZEDB with the snapshot's counts) if it
// writes any; Write writes every key, Splice those the master's file
// lacks. It returns how many keys it wrote and how many skip left out.
func (w *writer) database(snap *tiering.Snapshot, db int, opts *Options, skip map[string]struct{}, resize bool) (written, skipped int64, err error) {
	it, err := snap.Keys(db)
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	for it.Next() {
		if _, dup := skip[string(it.Key())]; dup {
			skipped++
			continue
		}
		if written == 0 {
			w.buf = append(w.buf, opSelectDB)
			w.buf = rdb.AppendLen(w.buf, uint64(db))
			if resize {
				keys, exps := snap.Counts(db)
				w.buf = append(w.buf, opResizeDB)
				w.buf = rdb.AppendLen(w.buf, uint64(max(keys, 0)))
				w.buf = rdb.AppendLen(w.buf, uint64(max(exps, 0)))
			}
		}
		if err := w.key(it, opts); err != nil {
			return written, skipped, fmt.Errorf("rdbfile: db %d key %q: %w", db, it.Key(), err)
		}
		written++
		if err := w.maybeFlush(); err != nil {
			return written, skipped, err
		}
	}
	if err := it.Err(); err != nil {
		return written, skipped, fmt.Errorf("rdbfile: db %d: %w", db, err)
	}
	return written, skipped, nil
}

// errNotCompact stops the building of a compact encoding: the value
// exceeds its limits and is written in the plain form instead.
var errNotCompact = fmt.Errorf("rdbfile: not compact")

// key writes the current key of it.
func (w *writer) key(it *tiering.SnapshotKeys, opts *Options) error {
	if at := it.ExpireAt(); at != 0 {
		w.buf = append(w.buf, opExpireTimeMS)
		w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(at))
	}
	switch it.Type() {
	case codec.TypeString:
		w.buf = append(w.buf, typeString)
		w.put(it.Key())
		return w.str(it.Value())
	case codec.TypeHash:
		return w.hash(it, opts)
	case codec.TypeSet:
		return w.set(it, opts)
	case codec.TypeZSet:
		return w.zset(it, opts)
	case codec.TypeList:
		return w.list(it, opts)
	case codec.TypeStream:
		return w.stream(it)
	}
	return fmt.Errorf("%w: %s", ErrUnsupportedType, it.Type())
}

// header writes the type byte and the key's name.
func (w *writer) header(typ byte, key []byte) {
	w.buf = append(w.buf, typ)
	w.put(key)
}

// compact writes a compact blob as an RDB string.
func (w *writer) compact(typ byte, key, blob []byte) error {
	w.header(typ, key)
	return w.str(blob)
}

func (w *writer) hash(it *tiering.SnapshotKeys, opts *Options) error {
	if it.Len() <= opts.HashMaxListpackEntries {
		w.lp.Reset()
		err := it.Fields(func(f, v []byte) error {
			if int64(len(f)) > opts.HashMaxListpackValue || int64(len(v)) > opts.HashMaxListpackValue {
				return errNotCompact
			}
			w.lp.Append(f)
			w.lp.Append(v)
			return nil
		})
		if err == nil {
			return w.compact(typeHashListpack, it.Key(), w.lp.Finish())
		}
		if err != errNotCompact {
			return err
		}
	}
	w.header(typeHash, it.Key())
	w.buf = rdb.AppendLen(w.buf, uint64(it.Len()))
	return it.Fields(func(f, v []byte) error {
		w.put(f)
		return w.str(v)
	})
}

func (w *writer) set(it *tiering.SnapshotKeys, opts *Options) error {
	if it.Len() <= opts.SetMaxIntsetEntries {
		ints := make([]int64, 0, it.Len())
		err := it.Fields(func(m, _ []byte) error {
			v, ok := rdb.ParseInt(m)
			if !ok {
				return errNotCompact
			}
			ints = append(ints, v)
			return nil
		})
		if err == nil {
			w.tmp = rdb.AppendIntset(w.tmp[:0], ints)
			return w.compact(typeSetIntset, it.Key(), w.tmp)
		}
		if err != errNotCompact {
			return err
		}
	}
	w.header(typeSet, it.Key())
	w.buf = rdb.AppendLen(w.buf, uint64(it.Len()))
	return it.Fields(func(m, _ []byte) error { return w.str(m) })
}

func (w *writer) zset(it *tiering.SnapshotKeys, opts *Options) error {
	if !it.Skiplist() && it.Len() <= opts.ZSetMaxListpackEntries {
		w.lp.Reset()
		err := it.Members(func(m []byte, score float64) error {
			if int64(len(m)) > opts.ZSetMaxListpackValue {
				return errNotCompact
			}
			w.lp.Append(m)
			w.tmp = appendD2String(w.tmp[:0], score)
			w.lp.Append(w.tmp)
			return nil
		})
		if err == nil {
			return w.compact(typeZSetListpack, it.Key(), w.lp.Finish())
		}
		if err != errNotCompact {
			return err
		}
	}
	w.header(typeZSet2, it.Key())
	w.buf = rdb.AppendLen(w.buf, uint64(it.Len()))
	return it.Members(func(m []byte, score float64) error {
		w.put(m)
		w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(score))
		return w.maybeFlush()
	})
}

// quicklistSafetyLimit is Redis's SIZE_SAFETY_LIMIT: the largest
// listpack node a count-limited quicklist grows.
const quicklistSafetyLimit = 8192

// nodeTakes reports whether a quicklist node holding lp may take element
// v, as quicklistPushTail decides (_quicklistNodeAllowInsert with Redis's
// 8-byte estimate of an entry's overhead): list-max-listpack-size -1..-5
// bounds a node's bytes (4 KiB to 64 KiB), a positive size its count (and
// 8 KiB). The first element of a node is always taken.
func nodeTakes(fill int64, lp *rdb.Listpack, v []byte) bool {
	if lp.Len() == 0 {
		return true
	}
	newSize := lp.Size() + len(v) + 8
	if fill < 0 {
		return newSize <= 4096<<(min(-fill, 5)-1)
	}
	return newSize <= quicklistSafetyLimit && int64(lp.Len()) < fill
}

// list writes a list as Redis 7.0 does, a quicklist of listpack nodes
// (RDB_TYPE_LIST_QUICKLIST_2), split where quicklistPushTail would split
// it. A first pass counts the nodes (the count comes first) and keeps the
// node when there is only one; a second writes them. One node is in memory
// at a time.
func (w *writer) list(it *tiering.SnapshotKeys, opts *Options) error {
	fill := opts.ListMaxListpackSize
	nodes := 0
	w.lp.Reset()
	err := it.Elements(func(v []byte) error {
		if !nodeTakes(fill, &w.lp, v) {
			nodes++
			w.lp.Reset()
		}
		w.lp.Append(v)
		return nil
	})
	if err != nil {
		return err
	}
	nodes++
	w.header(typeListQuicklist2, it.Key())
	w.buf = rdb.AppendLen(w.buf, uint64(nodes))
	if nodes == 1 {
		w.buf = append(w.buf, containerPacked)
		return w.str(w.lp.Finish())
	}
	w.lp.Reset()
	written := 0
	emit := func() error {
		written++
		w.buf = append(w.buf, containerPacked)
		err := w.str(w.lp.Finish())
		w.lp.Reset()
		return err
	}
	err = it.Elements(func(v []byte) error {
		if !nodeTakes(fill, &w.lp, v) {
			if err := emit(); err != nil {
				return err
			}
		}
		w.lp.Append(v)
		return nil
	})
	if err == nil {
		err = emit()
	}
	if err == nil && written != nodes {
		err = fmt.Errorf("rdbfile: list %q: %d quicklist nodes counted, %d written", it.Key(), nodes, written)
	}
	return err
}

// appendD2String formats a score as Redis's d2string does for a listpack
// sorted set: integral values within ±2^62 as integers, -0 as "-0",
// infinities as "inf"/"-inf", others as %.17g.
func appendD2String(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return cstr.AppendG(dst, f, 17)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	case f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f):
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return cstr.AppendG(dst, f, 17)
}
