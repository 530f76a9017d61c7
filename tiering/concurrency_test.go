package tiering

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"
)

// selfValue builds a self-describing value key|writer|counter|padding|crc:
// a torn or mixed value fails checkValue.
func selfValue(key string, writer, counter, pad int) []byte {
	body := fmt.Sprintf("%s|%d|%d|%s", key, writer, counter, bytes.Repeat([]byte{'a' + byte(counter%26)}, pad))
	return []byte(fmt.Sprintf("%s|%08x", body, crc32.ChecksumIEEE([]byte(body))))
}

func checkValue(key string, val []byte) error {
	i := bytes.LastIndexByte(val, '|')
	if i < 0 {
		return fmt.Errorf("no checksum in %q", val)
	}
	body := val[:i]
	sum, err := strconv.ParseUint(string(val[i+1:]), 16, 32)
	if err != nil || uint32(sum) != crc32.ChecksumIEEE(body) {
		return fmt.Errorf("bad checksum in %q", val)
	}
	if !bytes.HasPrefix(body, []byte(key+"|")) {
		return fmt.Errorf("value %q belongs to another key than %q", val, key)
	}
	return nil
}

func TestConcurrentSetGetDelete(t *testing.T) {
	o := defaultOpts()
	o.HotBudget = 3000 // a handful of keys: constant demotion and promotion
	o.PromoteMinHits = 2
	o.ColdReadMaxBytes = 250
	v := newEnv(t, o)
	const workers, ops, nkeys = 4, 1500, 12
	deadline := time.Now().Add(5 * time.Second)
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < ops && time.Now().Before(deadline); i++ {
				db := r.IntN(2)
				key := fmt.Sprint("k", r.IntN(nkeys))
				tx := v.e.begin()
				var err error
				var read []byte // a value read, re-checked after Commit
				switch op := r.IntN(10); {
				case op < 4:
					var at int64
					if r.IntN(4) == 0 {
						at = tx.Now() + int64(r.IntN(30)) // some expire during the run
					}
					err = tx.SetString(db, []byte(key), selfValue(key, w, i, r.IntN(400)), at)
				case op < 8:
					var e *Entry
					if op < 6 {
						e, err = tx.Get(db, []byte(key))
					} else {
						e, err = tx.Peek(db, []byte(key))
					}
					if err == nil && e != nil {
						read = e.Str
						err = checkValue(key, read)
					}
				default:
					_, err = tx.Delete(db, []byte(key))
				}
				if err != nil {
					tx.abort()
					errc <- fmt.Errorf("worker %d op %d: %w", w, i, err)
					return
				}
				p, err := tx.commit()
				if err == nil {
					err = p.Wait()
				}
				if err != nil {
					errc <- err
					return
				}
				// Replies are written from the value after the lock is
				// released: writers must replace values, never modify them.
				if read != nil {
					if err := checkValue(key, read); err != nil {
						errc <- fmt.Errorf("worker %d op %d after commit: %w", w, i, err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	v.checkInvariants()
	// Everything left reads back whole, hot or cold, and after a restart.
	for pass := 0; pass < 2; pass++ {
		for db := 0; db < 2; db++ {
			for _, k := range v.keys(db) {
				val, _, ok := v.peek(db, k)
				if ok {
					if err := checkValue(k, []byte(val)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		v.reopen()
		v.checkInvariants()
	}
}

// INFO reads the hot tier's accounting (HotStats) from other connections
// while commands run; that must not race with the writers.
// This test only fails under -race.
func TestHotTierReadableWhileWriting(t *testing.T) {
	o := defaultOpts()
	o.HotBudget = 2000
	v := newEnv(t, o)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, used, budget := v.e.HotStats()
			_ = used + int64(n) + budget
			_ = v.e.KeysOnDisk()
			time.Sleep(50 * time.Microsecond)
		}
	}()
	for i := 0; i < 200; i++ {
		v.set(0, fmt.Sprint("k", i%30), "v", 0)
	}
	close(stop)
	<-done
}
