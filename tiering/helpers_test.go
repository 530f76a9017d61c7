package tiering

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
)

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// defaultOpts is a roomy configuration; tests shrink what they exercise.
func defaultOpts() Options {
	return Options{
		Databases:        16,
		HotBudget:        1 << 20,
		PromoteMinHits:   1,
		ColdReadMaxBytes: 1 << 20,
		Logger:           quietLogger,
	}
}

// env is an engine over a store in dir, reopenable.
type env struct {
	t    *testing.T
	dir  string
	opts Options
	s    *coldstore.Store
	e    *Engine
	// listLeaks: a crash or an aborted transaction may have left records
	// of popped list elements the engine no longer knows of (listCache.gc),
	// so the store's lists may hold records anywhere outside Head..Tail.
	listLeaks bool
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	v := &env{t: t, dir: t.TempDir(), opts: opts}
	v.open()
	t.Cleanup(v.close)
	return v
}

func (v *env) open() {
	v.t.Helper()
	s, err := coldstore.Open(coldstore.Options{Dir: v.dir, CacheBytes: 1 << 20, MemTableBytes: 1 << 20, Fsync: coldstore.FsyncNo, Logger: quietLogger})
	if err != nil {
		v.t.Fatalf("coldstore.Open: %v", err)
	}
	e, err := Open(s, v.opts)
	if err != nil {
		s.Close()
		v.t.Fatalf("tiering.Open: %v", err)
	}
	v.s, v.e = s, e
}

func (v *env) close() {
	if v.e == nil {
		return
	}
	v.e.Close()
	if err := v.s.Close(); err != nil {
		v.t.Errorf("coldstore.Close: %v", err)
	}
	v.e, v.s = nil, nil
}

func (v *env) reopen() {
	v.t.Helper()
	v.close()
	v.open()
}

// do runs f in one transaction and commits it. If f fails the test (its
// goroutine exits), the transaction is aborted, so that the test's
// clean-up does not wait for the lock for ever.
func (v *env) do(f func(tx *Tx) error) {
	v.t.Helper()
	tx := v.e.begin()
	returned := false
	defer func() {
		if !returned {
			tx.abort()
		}
	}()
	err := f(tx)
	returned = true
	if err != nil {
		tx.abort()
		v.t.Fatalf("tx: %v", err)
	}
	p, err := tx.commit()
	if err != nil {
		v.t.Fatalf("Commit: %v", err)
	}
	if err := p.Wait(); err != nil {
		v.t.Fatalf("Wait: %v", err)
	}
}

func (v *env) now() int64 {
	tx := v.e.begin()
	defer tx.abort()
	return tx.Now()
}

func (v *env) set(db int, key, val string, expireAt int64) {
	v.t.Helper()
	v.do(func(tx *Tx) error { return tx.SetString(db, []byte(key), []byte(val), expireAt) })
}

// get returns key's string value and whether it exists (Get: may promote).
func (v *env) get(db int, key string) (string, bool) {
	v.t.Helper()
	var val string
	var ok bool
	v.do(func(tx *Tx) error {
		e, err := tx.Get(db, []byte(key))
		if err != nil || e == nil {
			return err
		}
		if e.Type != codec.TypeString {
			return fmt.Errorf("%s has type %s", key, e.Type)
		}
		val, ok = string(e.Str), true
		return nil
	})
	return val, ok
}

// peek is get through Peek (never promotes); it also returns the expiry.
func (v *env) peek(db int, key string) (string, int64, bool) {
	v.t.Helper()
	var val string
	var at int64
	var ok bool
	v.do(func(tx *Tx) error {
		e, err := tx.Peek(db, []byte(key))
		if err != nil || e == nil {
			return err
		}
		val, at, ok = string(e.Str), e.ExpireAt, true
		return nil
	})
	return val, at, ok
}

func (v *env) del(db int, key string) bool {
	v.t.Helper()
	var ok bool
	v.do(func(tx *Tx) (err error) {
		ok, err = tx.Delete(db, []byte(key))
		return err
	})
	return ok
}

func (v *env) sizes(db int) (keys, expires int64) {
	tx := v.e.begin()
	defer tx.abort()
	return tx.DBSize(db), tx.Expires(db)
}

// isHot reports whether key of logical db is in the hot tier (under the lock).
func (v *env) isHot(db int, key string) bool {
	tx := v.e.begin()
	defer tx.abort()
	return v.e.Hot().Contains(tx.pdb(db), []byte(key))
}

// hotUsage reads the hot tier's accounting under the engine's lock.
func (v *env) hotUsage() (used, budget int64, n int) {
	tx := v.e.begin()
	defer tx.abort()
	h := v.e.Hot()
	return h.UsedBytes(), h.Budget(), h.Len()
}

// demoteAll drops every hot copy, keeping the budget.
func (v *env) demoteAll() {
	_, b, _ := v.hotUsage()
	v.e.SetHotBudget(0)
	v.e.SetHotBudget(b)
	if _, _, n := v.hotUsage(); n != 0 {
		v.t.Fatalf("%d keys still hot after demoting all", n)
	}
}

// expiryIndex lists the expiry index as "at/db/key" in order.
func (v *env) expiryIndex() []string {
	v.t.Helper()
	it, err := v.s.NewIter(codec.ExpiryStart(), codec.PrefixEnd(codec.ExpiryStart()))
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for valid := it.First(); valid; valid = it.Next() {
		at, db, key, err := codec.ParseExpiryKey(it.Key())
		if err != nil {
			v.t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d/%d/%s", at, db, key))
	}
	return out
}

// storedMeta reads key's committed meta record in physical db pdb.
func (v *env) storedMeta(pdb uint8, key string) (codec.Meta, bool) {
	v.t.Helper()
	var m codec.Meta
	_, buf, found, err := v.s.GetMeta(pdb, []byte(key), &m, nil, nil)
	if err != nil {
		v.t.Fatal(err)
	}
	if found && m.Type == codec.TypeString {
		m.Value = bytes.Clone(buf[10:])
	}
	return m, found
}

// keys lists db's live keys, sorted.
func (v *env) keys(db int) []string {
	v.t.Helper()
	var out []string
	v.do(func(tx *Tx) error {
		ks, err := tx.Keys(db, nil)
		for _, k := range ks {
			out = append(out, string(k))
		}
		return err
	})
	slices.Sort(out)
	return out
}
