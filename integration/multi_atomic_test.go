package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/integration/harness"
)

// TestMultiAtomicUnderDemotion checks that MULTI/EXEC and WATCH stay atomic
// while the keys they touch are demoted and promoted all the time: a 1 MB
// hot tier, a writer of 4 KB filler values that keeps it churning, and a
// reader of random filler keys that keeps promoting. Meanwhile:
//   - transfer workers move amounts between 20 account keys (strings) and
//     20 fields of a hash, inside MULTI/EXEC; auditors read all of them in
//     one MULTI/EXEC and must always see the same total;
//   - CAS workers increment a counter with WATCH/GET/MULTI/SET/EXEC,
//     retrying when EXEC fails; the counter must end equal to the number
//     of EXECs that succeeded.
//
// Bounded: each worker stops after its operation count or 20 s.
func TestMultiAtomicUnderDemotion(t *testing.T) {
	spw := startEmbeddedHooks(t, "--maxmemory", "1mb")
	ctx := context.Background()
	admin := harness.GoRedis(t, spw.Addr(), 2)

	const accounts, initial = 20, 1000
	for i := 0; i < accounts; i++ {
		if err := admin.Set(ctx, "acct:"+strconv.Itoa(i), initial, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.HSet(ctx, "ledger", "f"+strconv.Itoa(i), initial).Err(); err != nil {
			t.Fatal(err)
		}
	}
	const total = 2 * accounts * initial
	deadline := time.Now().Add(20 * time.Second)
	var wg sync.WaitGroup // the transaction workers
	var failures atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 5 {
			t.Errorf(format, args...)
		}
	}

	demoteKeys := []string{"ledger", "cas"}
	for i := 0; i < accounts; i++ {
		demoteKeys = append(demoteKeys, "acct:"+strconv.Itoa(i))
	}
	churn := startTierChurn(t, spw.Addr(), demoteKeys, deadline, fail)

	var transfers, audits atomic.Int64
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := harness.GoRedis(t, spw.Addr(), 2)
			rng := rand.New(rand.NewSource(int64(100 + w)))
			for i := 0; i < 1500 && time.Now().Before(deadline); i++ {
				a, b := rng.Intn(accounts), rng.Intn(accounts)
				amt := int64(1 + rng.Intn(10))
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.DecrBy(ctx, "acct:"+strconv.Itoa(a), amt)
					p.IncrBy(ctx, "acct:"+strconv.Itoa(b), amt)
					p.HIncrBy(ctx, "ledger", "f"+strconv.Itoa(b), -amt)
					p.HIncrBy(ctx, "ledger", "f"+strconv.Itoa(a), amt)
					return nil
				})
				if err != nil {
					fail("transfer: %v", err)
					return
				}
				transfers.Add(1)
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := harness.GoRedis(t, spw.Addr(), 3)
		keys := make([]string, accounts)
		for i := range keys {
			keys[i] = "acct:" + strconv.Itoa(i)
		}
		for i := 0; i < 3000 && time.Now().Before(deadline); i++ {
			var mget *redis.SliceCmd
			var hvals *redis.StringSliceCmd
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				mget = p.MGet(ctx, keys...)
				hvals = p.HVals(ctx, "ledger")
				return nil
			})
			if err != nil {
				fail("audit: %v", err)
				return
			}
			sum := int64(0)
			for _, v := range mget.Val() {
				n, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64)
				sum += n
			}
			for _, v := range hvals.Val() {
				n, _ := strconv.ParseInt(v, 10, 64)
				sum += n
			}
			if sum != total {
				fail("audit %d: total %d, want %d (a transaction was seen half done)", i, sum, total)
				return
			}
			audits.Add(1)
		}
	}()

	var casOK atomic.Int64
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := harness.GoRedis(t, spw.Addr(), 2)
			for i := 0; i < 500 && time.Now().Before(deadline); i++ {
				err := c.Watch(ctx, func(tx *redis.Tx) error {
					n, err := tx.Get(ctx, "cas").Int64()
					if err != nil && !errors.Is(err, redis.Nil) {
						return err
					}
					_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, "cas", n+1, 0)
						return nil
					})
					return err
				}, "cas")
				switch {
				case err == nil:
					casOK.Add(1)
				case errors.Is(err, redis.TxFailedErr):
				default:
					fail("cas: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	churn.Stop()

	got, err := admin.Get(ctx, "cas").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if got != casOK.Load() {
		t.Errorf("cas counter %d, but %d EXECs succeeded: a WATCH missed a change", got, casOK.Load())
	}
	info, err := harness.Info(harness.MustDial(t, spw.Addr()), "tiering")
	if err != nil {
		t.Fatal(err)
	}
	dem, _ := strconv.Atoi(info["demotions"])
	prom, _ := strconv.Atoi(info["promotions"])
	t.Logf("transfers %d, audits %d, cas %d, demotions %d (of the transactions' keys %d), promotions %d",
		transfers.Load(), audits.Load(), casOK.Load(), dem, churn.demoted.Load(), prom)
	if churn.demoted.Load() == 0 || prom == 0 {
		t.Errorf("demoted %d, promotions %d: the keys did not move between tiers", churn.demoted.Load(), prom)
	}
	if audits.Load() == 0 || transfers.Load() == 0 {
		t.Errorf("transfers %d, audits %d: nothing was checked", transfers.Load(), audits.Load())
	}
}

// tierChurn keeps keys moving between the tiers of an embedded Spillway
// with a small hot tier (and the test hooks) while a test runs: one client
// writes 4 KB fillers (the tier keeps demoting), one reads them (promoting),
// and a demoter sends the test's own keys to the cold tier every 2 ms
// (DEBUG DEMOTE), so each of their next reads is a cold read. Each loop is
// bounded by its count and by deadline.
type tierChurn struct {
	stop chan struct{}
	wg   sync.WaitGroup
	// demoted counts the test's keys the demoter found hot and demoted.
	demoted atomic.Int64
}

func startTierChurn(t *testing.T, addr string, keys []string, deadline time.Time, fail func(string, ...any)) *tierChurn {
	ctx := context.Background()
	tc := &tierChurn{stop: make(chan struct{})}
	stopped := func() bool {
		select {
		case <-tc.stop:
			return true
		default:
			return !time.Now().Before(deadline)
		}
	}
	for w := 0; w < 2; w++ {
		tc.wg.Add(1)
		go func(w int) {
			defer tc.wg.Done()
			c := harness.GoRedis(t, addr, 2)
			val := make([]byte, 4096)
			rng := rand.New(rand.NewSource(int64(w)))
			for i := 0; i < 20000 && !stopped(); i++ {
				k := "fill:" + strconv.Itoa(rng.Intn(2000))
				var err error
				if w == 0 {
					err = c.Set(ctx, k, val, 0).Err()
				} else if err = c.Get(ctx, k).Err(); errors.Is(err, redis.Nil) {
					err = nil
				}
				if err != nil {
					fail("churn %d: %v", w, err)
					return
				}
			}
		}(w)
	}
	tc.wg.Add(1)
	go func() {
		defer tc.wg.Done()
		c := harness.GoRedis(t, addr, 2)
		args := []any{"DEBUG", "DEMOTE"}
		for _, k := range keys {
			args = append(args, k)
		}
		for i := 0; i < 5000 && !stopped(); i++ {
			n, err := c.Do(ctx, args...).Int64()
			if err != nil {
				fail("demoter: %v", err)
				return
			}
			tc.demoted.Add(n)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return tc
}

// Stop ends the churn and waits for it.
func (tc *tierChurn) Stop() {
	close(tc.stop)
	tc.wg.Wait()
}
