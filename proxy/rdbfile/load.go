package rdbfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/tiering"
)

// LoadOptions shape Load.
type LoadOptions struct {
	// Logger gets the progress lines (every few seconds) and the summary.
	Logger *slog.Logger
	// Size is the input's length in bytes, if known (for the percentage).
	Size int64
	// Progress, if set, is kept up to date as the load goes.
	Progress *Progress
	// ChunkBytes bounds the data one transaction writes (default 4 MiB):
	// small keys are grouped up to it, a larger value is written in
	// several transactions of about that size, straight to the store.
	ChunkBytes int
	// Now is the clock expiries are compared to (unix ms; default: the
	// clock at the start of the load).
	Now int64
	// Stop, when closed, cancels the load (ErrLoadCanceled): a shutdown
	// during the load. What it wrote is removed, as for any failure.
	Stop <-chan struct{}
}

// Progress is a load's progress, readable while it runs (INFO's loading_*
// fields).
type Progress struct {
	Start time.Time
	Total int64 // bytes of the file, 0 if unknown
	Bytes atomic.Int64
	Keys  atomic.Int64
}

// LoadStats sum up a load.
type LoadStats struct {
	Version   int   // the file's RDB version
	Keys      int64 // keys stored
	Expired   int64 // keys skipped because they had expired
	Empty     int64 // empty collections skipped, as Redis skips them
	Bytes     int64 // bytes read
	Functions int   // function libraries
}

// Load reads a Redis RDB file (versions 1 to 10, every opcode of Redis
// 7.0) from r into the engine, whose store must hold no key. Keys are
// written in bounded steps: many transactions, each of about
// opts.ChunkBytes, a value larger than that spread over several
// transactions and dropped from the hot tier after each, so memory stays
// bounded whatever the file's size (one string value is held whole). Keys
// already expired are skipped, as a master loading its RDB does; FREQ and
// IDLE hints apply to the keys they precede. Function libraries (FUNCTION2)
// are stored as the functions system record, for the server to load.
//
// The checksum (when the file has a non-zero one) is verified at the end.
// Any error — a truncated or corrupt file, a bad checksum, a duplicate key,
// a module value, module auxiliary data — fails the load with an
// error wrapping ErrCorrupt (or the store's error), and every key written
// so far is removed (the store was empty), so that nothing half-loaded is
// ever served. A load cut short by the process's death leaves a marker in
// the store: Interrupted reports it at the next start, and
// ClearInterrupted removes the partial dataset.
func Load(r io.Reader, eng *tiering.Engine, opts LoadOptions) (LoadStats, error) {
	if eng.KeysOnDisk() != 0 {
		return LoadStats{}, fmt.Errorf("rdbfile: load: the store already holds %d keys", eng.KeysOnDisk())
	}
	l := &loader{eng: eng, opts: opts, r: newReader(r), log: opts.Logger}
	if l.log == nil {
		l.log = slog.Default()
	}
	if l.opts.ChunkBytes <= 0 {
		l.opts.ChunkBytes = 4 << 20
	}
	if l.opts.Now == 0 {
		l.opts.Now = time.Now().UnixMilli()
	}
	l.prog = opts.Progress
	if l.prog == nil {
		l.prog = &Progress{Start: time.Now(), Total: opts.Size}
	}
	l.lastLog = time.Now()
	// The marker makes a load cut short by a crash visible at the next
	// start (Interrupted), before anything of it is written.
	if _, err := eng.Update(func(tx *tiering.Tx) error { return tx.PutSystem(sysLoading, loadingOn) }); err != nil {
		return LoadStats{}, err
	}
	if err := eng.Cold().SyncWAL(); err != nil {
		return LoadStats{}, err
	}
	err := l.load()
	l.stats.Bytes = l.r.n
	if err != nil {
		if ferr := ClearInterrupted(eng); ferr != nil {
			l.log.Error("removing a failed load's keys failed", "err", ferr)
		}
		return l.stats, err
	}
	if err := eng.Cold().SyncWAL(); err != nil {
		return l.stats, err
	}
	l.log.Info("RDB loaded", "keys", l.stats.Keys, "expired_skipped", l.stats.Expired,
		"bytes", l.stats.Bytes, "functions", l.stats.Functions,
		"took", time.Since(l.prog.Start).Round(time.Millisecond))
	return l.stats, nil
}

// ErrLoadCanceled ends a load whose LoadOptions.Stop was closed.
var ErrLoadCanceled = errors.New("rdbfile: load canceled")

// sysLoading is the system record marking a load under way: loadingOn
// from its start until it succeeded or its keys were removed.
const sysLoading = "rdbloading"

var (
	loadingOn  = []byte{1}
	loadingOff = []byte{0}
)

// Interrupted reports whether a load into eng's store began and neither
// finished nor was undone (the process died meanwhile): the store then
// holds part of a file, which ClearInterrupted removes.
func Interrupted(eng *tiering.Engine) (bool, error) {
	v, ok, err := eng.SystemRecord(sysLoading)
	return ok && bytes.Equal(v, loadingOn), err
}

// ClearInterrupted removes every key of the store (a load writes only into
// an empty one) and the load's marker, in one transaction.
func ClearInterrupted(eng *tiering.Engine) error {
	_, err := eng.Update(func(tx *tiering.Tx) error {
		if err := tx.FlushAll(); err != nil {
			return err
		}
		return tx.PutSystem(sysLoading, loadingOff)
	})
	if err == nil {
		err = eng.Cold().SyncWAL()
	}
	return err
}

// pendingKey is a whole value waiting for the next transaction.
type pendingKey struct {
	db       int
	key      []byte
	obj      *rdb.Object
	expireAt int64
	freq     int
	idle     int64
}

type loader struct {
	eng     *tiering.Engine
	opts    LoadOptions
	r       *reader
	log     *slog.Logger
	prog    *Progress
	lastLog time.Time
	stats   LoadStats

	pending      []pendingKey
	pendingBytes int
	functions    []byte // FUNCTION2 records
}

func (l *loader) load() error {
	w, err := newWalker(l.r, l.eng.Databases())
	if err != nil {
		return err
	}
	l.stats.Version = w.version
	for {
		op, err := w.next()
		if err != nil {
			return err
		}
		switch {
		case op == opEOF:
			return l.finish()
		case op == opAux:
			if string(w.auxKey) == "redis-ver" {
				l.log.Info("loading RDB", "redis_ver", string(w.auxVal), "rdb_version", w.version)
			}
		case op == opFunction2:
			code, err := l.r.str()
			if err != nil {
				return err
			}
			l.functions = append(l.functions, opFunction2)
			l.functions = rdb.AppendString(l.functions, code)
			l.stats.Functions++
		case w.inKey:
			select {
			case <-l.opts.Stop:
				return ErrLoadCanceled
			default:
			}
			if err := l.value(op, w.db, w.key, w.expireMS, w.freq, w.idle); err != nil {
				return fmt.Errorf("%w (db %d key %q)", err, w.db, w.key)
			}
			l.progress()
		}
	}
}

// finish writes what is pending once the file is read (its checksum
// verified).
func (l *loader) finish() error {
	if err := l.flush(); err != nil {
		return err
	}
	_, err := l.eng.Update(func(tx *tiering.Tx) error {
		if len(l.functions) > 0 {
			if err := tx.PutSystem(codec.SysFunctions, rdb.AppendFooter(l.functions, Version)); err != nil {
				return err
			}
		}
		return tx.PutSystem(sysLoading, loadingOff)
	})
	if err != nil {
		return err
	}
	l.prog.Bytes.Store(l.r.n)
	return nil
}

// progress updates the counters and logs every few seconds.
func (l *loader) progress() {
	l.prog.Bytes.Store(l.r.n)
	if now := time.Now(); now.Sub(l.lastLog) >= 5*time.Second {
		l.lastLog = now
		args := []any{"keys", l.prog.Keys.Load(), "bytes", l.r.n}
		if l.prog.Total > 0 {
			args = append(args, "percent", fmt.Sprintf("%.1f", float64(l.r.n)*100/float64(l.prog.Total)))
		}
		l.log.Info("loading RDB", args...)
	}
}

// value reads the value of type typ of key and stores it.
func (l *loader) value(typ byte, db int, key []byte, expireAt int64, freq int, idle int64) error {
	c := &collector{l: l, db: db, key: key, expireAt: expireAt, freq: freq, idle: idle,
		skip: expireAt != 0 && expireAt < l.opts.Now}
	switch typ {
	case typeString:
		s, err := l.r.str()
		if err != nil {
			return err
		}
		return c.whole(&rdb.Object{Kind: rdb.KindString, Str: s}, len(s))
	case 9, 10, typeSetIntset, 12, 13, typeHashListpack, typeZSetListpack:
		blob, err := l.r.str()
		if err != nil {
			return err
		}
		obj, err := rdb.DecodeValue(typ, append(rdb.AppendLen(nil, uint64(len(blob))), blob...))
		if err != nil {
			return corrupt("%v", err)
		}
		return c.whole(obj, len(blob))
	case typeList, typeSet, typeHash:
		kind := map[byte]rdb.Kind{typeList: rdb.KindList, typeSet: rdb.KindSet, typeHash: rdb.KindHash}[typ]
		return c.plain(kind)
	case 3, typeZSet2:
		return c.zset(typ == typeZSet2)
	case 14, typeListQuicklist2:
		return c.quicklist(typ)
	case 15, typeStreamListpacks2:
		return c.loadStream(typ) // stream.go
	case 6, 7:
		return corrupt("module values (RDB type %d) cannot be loaded", typ)
	}
	return corrupt("unknown value type %d", typ)
}

// flush writes the pending whole values in one transaction.
func (l *loader) flush() error {
	if len(l.pending) == 0 {
		return nil
	}
	_, err := l.eng.Update(func(tx *tiering.Tx) error {
		for i := range l.pending {
			p := &l.pending[i]
			if err := writeChunk(tx, p.db, p.key, p.obj, true, true, p.expireAt); err != nil {
				return fmt.Errorf("%w (db %d key %q)", err, p.db, p.key)
			}
			if err := applyHints(tx, p.db, p.key, p.freq, p.idle); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	l.prog.Keys.Add(int64(len(l.pending)))
	clear(l.pending)
	l.pending = l.pending[:0]
	l.pendingBytes = 0
	return nil
}

// applyHints applies FREQ (LFU counter) and IDLE (seconds) to a key just
// written; they matter only while it is hot, as for RESTORE.
func applyHints(tx *tiering.Tx, db int, key []byte, freq int, idle int64) error {
	if freq >= 0 {
		if _, err := tx.SetFreq(db, key, uint8(freq)); err != nil {
			return err
		}
	}
	if idle >= 0 {
		if _, err := tx.SetIdleMillis(db, key, idle*1000); err != nil {
			return err
		}
	}
	return nil
}

// errDuplicate: the file holds a key or a member twice.
func errDuplicate(what string) error { return corrupt("duplicate %s", what) }

// writeChunk writes obj as key's value (first: the key is created, and
// must not exist; otherwise the items are added to it) and, when last,
// sets the expiry. Members, fields and keys must be new.
func writeChunk(tx *tiering.Tx, db int, key []byte, obj *rdb.Object, first, last bool, expireAt int64) error {
	if first {
		e, err := tx.Peek(db, key)
		if err != nil {
			return err
		}
		if e != nil {
			return errDuplicate("key")
		}
	}
	type closer interface{ Close() error }
	var h closer
	switch obj.Kind {
	case rdb.KindString:
		return tx.SetString(db, key, obj.Str, expireAt)
	case rdb.KindHash, rdb.KindSet:
		t, step := codec.TypeHash, 2
		if obj.Kind == rdb.KindSet {
			t, step = codec.TypeSet, 1
		}
		var c *tiering.Coll
		var err error
		if first {
			c, err = tx.CreateColl(db, key, t)
		} else {
			c, err = tx.OpenColl(db, key, t, false)
		}
		if err != nil {
			return err
		}
		if c == nil {
			return fmt.Errorf("rdbfile: %q vanished during the load", key)
		}
		for i := 0; i+step-1 < len(obj.Items); i += step {
			var v []byte
			if step == 2 {
				v = obj.Items[i+1]
			}
			added, err := c.Set(obj.Items[i], v)
			if err != nil {
				return err
			}
			if !added {
				return errDuplicate("field or member")
			}
		}
		h = c
	case rdb.KindList:
		lst, err := tx.OpenList(db, key, first)
		if err != nil {
			return err
		}
		if lst == nil {
			return fmt.Errorf("rdbfile: %q vanished during the load", key)
		}
		for _, v := range obj.Items {
			if err := lst.Push(false, v); err != nil {
				return err
			}
		}
		h = lst
	case rdb.KindZSet:
		var z *tiering.ZSet
		var err error
		if first {
			z, err = tx.CreateZSet(db, key)
		} else {
			z, err = tx.OpenZSet(db, key, false)
		}
		if err != nil {
			return err
		}
		if z == nil {
			return fmt.Errorf("rdbfile: %q vanished during the load", key)
		}
		longest := 0
		for _, m := range obj.Items {
			longest = max(longest, len(m))
		}
		// Redis 7.0 loads a small sorted set as a listpack, whatever
		// encoding the file held it in; a chunked one is large.
		z.SetSkiplist(!(first && last) || len(obj.Items) > tiering.CompactZSetMembers || longest > tiering.CompactZSetMember)
		for i, m := range obj.Items {
			if math.IsNaN(obj.Scores[i]) {
				return corrupt("NaN score")
			}
			added, err := z.Add(m, obj.Scores[i])
			if err != nil {
				return err
			}
			if !added {
				return errDuplicate("sorted set member")
			}
		}
		h = z
	case rdb.KindStream:
		s, err := restoreStream(tx, db, key, obj.Stream) // stream.go
		if err != nil {
			return err
		}
		h = s
	default:
		return fmt.Errorf("rdbfile: value of unknown kind %d", obj.Kind)
	}
	if err := h.Close(); err != nil {
		return err
	}
	if last && expireAt != 0 {
		if _, err := tx.SetExpire(db, key, expireAt); err != nil {
			return err
		}
	}
	return nil
}

// collector gathers one key's value: whole when it is small, in chunks
// written as they fill otherwise.
type collector struct {
	l        *loader
	db       int
	key      []byte
	expireAt int64
	freq     int
	idle     int64
	skip     bool // expired: read and dropped

	obj     rdb.Object // the chunk being gathered
	bytes   int
	started bool // a chunk was written
	items   int64
}

// whole queues a value read whole (size: its encoded bytes).
func (c *collector) whole(obj *rdb.Object, size int) error {
	if c.skip {
		c.l.stats.Expired++
		return nil
	}
	if obj.Kind != rdb.KindString && obj.Kind != rdb.KindStream && len(obj.Items) == 0 {
		c.l.stats.Empty++
		return nil
	}
	l := c.l
	l.pending = append(l.pending, pendingKey{db: c.db, key: c.key, obj: obj, expireAt: c.expireAt, freq: c.freq, idle: c.idle})
	l.pendingBytes += size + len(c.key) + 64
	l.stats.Keys++
	if l.pendingBytes >= l.opts.ChunkBytes {
		return l.flush()
	}
	return nil
}

// add gathers one item (a hash's field then its value count as two).
func (c *collector) add(item []byte, score float64, zset bool) error {
	if c.skip {
		return nil
	}
	c.obj.Items = append(c.obj.Items, item)
	if zset {
		c.obj.Scores = append(c.obj.Scores, score)
	}
	c.bytes += len(item) + 16
	c.items++
	if c.bytes >= c.l.opts.ChunkBytes && (c.obj.Kind != rdb.KindHash || len(c.obj.Items)%2 == 0) {
		return c.writeChunk(false)
	}
	return nil
}

// writeChunk writes the gathered items in a transaction of their own.
func (c *collector) writeChunk(last bool) error {
	l := c.l
	if !c.started {
		if err := l.flush(); err != nil { // keep the file's order of keys
			return err
		}
	}
	first := !c.started
	_, err := l.eng.Update(func(tx *tiering.Tx) error {
		if err := writeChunk(tx, c.db, c.key, &c.obj, first, last, c.expireAt); err != nil {
			return err
		}
		if last {
			if err := applyHints(tx, c.db, c.key, c.freq, c.idle); err != nil {
				return err
			}
		}
		if !last {
			// A big value goes to the store, not the hot tier.
			if _, err := tx.Demote(c.db, c.key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.started = true
	clear(c.obj.Items)
	c.obj.Items, c.obj.Scores, c.bytes = c.obj.Items[:0], c.obj.Scores[:0], 0
	l.progress()
	return nil
}

// end stores what remains: the whole value if no chunk was written.
func (c *collector) end() error {
	if c.skip {
		c.l.stats.Expired++
		return nil
	}
	if !c.started {
		if len(c.obj.Items) == 0 {
			c.l.stats.Empty++
			return nil
		}
		obj := c.obj
		return c.whole(&obj, c.bytes)
	}
	c.l.stats.Keys++
	c.l.prog.Keys.Add(1)
	return c.writeChunk(true)
}

// plain reads a list, set or hash in the plain form: a count, then strings.
func (c *collector) plain(kind rdb.Kind) error {
	c.obj.Kind = kind
	n, err := c.l.r.count()
	if err != nil {
		return err
	}
	if kind == rdb.KindHash {
		if n > math.MaxInt64/2 {
			return corrupt("hash of %d fields", n)
		}
		n *= 2
	}
	for range n {
		s, err := c.l.r.str()
		if err != nil {
			return err
		}
		if err := c.add(s, 0, false); err != nil {
			return err
		}
	}
	return c.end()
}

// zset reads a sorted set in the plain forms: a count, then members each
// with a binary (ZSET_2) or decimal score.
func (c *collector) zset(binary2 bool) error {
	c.obj.Kind = rdb.KindZSet
	n, err := c.l.r.count()
	if err != nil {
		return err
	}
	r := c.l.r
	for range n {
		m, err := r.str()
		if err != nil {
			return err
		}
		var score float64
		if binary2 {
			if err := r.full(r.tmp[:8]); err != nil {
				return err
			}
			score = math.Float64frombits(binary.LittleEndian.Uint64(r.tmp[:8]))
		} else {
			b, err := r.byte()
			if err != nil {
				return err
			}
			switch b {
			case 253:
				score = math.NaN()
			case 254:
				score = math.Inf(1)
			case 255:
				score = math.Inf(-1)
			default:
				buf := make([]byte, b)
				if err := r.full(buf); err != nil {
					return err
				}
				if score, err = strconv.ParseFloat(string(buf), 64); err != nil {
					return corrupt("score %q is not a number", buf)
				}
			}
		}
		if math.IsNaN(score) {
			return corrupt("NaN score")
		}
		if err := c.add(m, score, true); err != nil {
			return err
		}
	}
	return c.end()
}

// quicklist reads a list held as a quicklist (of ziplists, type 14; of
// listpacks and plain nodes, type 18), node by node.
func (c *collector) quicklist(typ byte) error {
	c.obj.Kind = rdb.KindList
	r := c.l.r
	nodes, err := r.count()
	if err != nil {
		return err
	}
	for range nodes {
		var container uint64 = 2
		if typ == typeListQuicklist2 {
			if container, err = r.count(); err != nil {
				return err
			}
		}
		blob, err := r.str()
		if err != nil {
			return err
		}
		if container == 1 { // a plain node: one element
			if err := c.add(blob, 0, false); err != nil {
				return err
			}
			continue
		}
		// Decode the node as a one-node quicklist, validated as RESTORE does.
		one := rdb.AppendLen(nil, 1)
		if typ == typeListQuicklist2 {
			one = rdb.AppendLen(one, container)
		}
		one = rdb.AppendLen(one, uint64(len(blob)))
		obj, err := rdb.DecodeValue(typ, append(one, blob...))
		if err != nil {
			if errors.Is(err, rdb.ErrBadFormat) && len(blob) > 0 && bytes.Contains([]byte(err.Error()), []byte("empty list")) {
				continue // an empty node: skipped, as Redis does
			}
			return corrupt("%v", err)
		}
		for _, it := range obj.Items {
			if err := c.add(it, 0, false); err != nil {
				return err
			}
		}
	}
	return c.end()
}
