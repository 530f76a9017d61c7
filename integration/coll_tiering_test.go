package integration

import (
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// infoInt reads one numeric field of INFO (all sections).
func infoInt(t *testing.T, c *harness.Conn, field string) int64 {
	t.Helper()
	m, err := harness.Info(c, "everything")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := m[field]
	if !ok {
		t.Fatalf("INFO has no %s", field)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s=%q: %v", field, v, err)
	}
	return n
}

// fieldName and fieldValue name the fields of the big test hashes.
func fieldName(i int) string  { return "field:" + strconv.Itoa(i) }
func fieldValue(i int) string { return "value-" + strconv.Itoa(i) + "-abcdefghijklmnop" }

// loadHash writes fields [0, n) of key with pipelined HSETs of 1,000
// fields each, failing on any reply but the count of new fields.
func loadHash(t *testing.T, c *harness.Conn, key string, n int) {
	t.Helper()
	const per = 1000
	const window = 16 // commands in flight
	sent, read := 0, 0
	for read*per < n {
		for sent*per < n && sent-read < window {
			args := []string{"HSET", key}
			for i := sent * per; i < min((sent+1)*per, n); i++ {
				args = append(args, fieldName(i), fieldValue(i))
			}
			if err := c.Send(args...); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		want := int64(min((read+1)*per, n) - read*per)
		if r := c.Read(); r.Err != nil || r.Int != want {
			t.Fatalf("HSET batch %d: %s, want %d", read, r.String(), want)
		}
		read++
	}
}

// checkRandomHGets asks count random fields of a hash loaded by loadHash
// with n fields, and a missing one.
func checkRandomHGets(t *testing.T, c *harness.Conn, key string, n, count int, r *rand.Rand) {
	t.Helper()
	for range count {
		i := r.Intn(n)
		if got := c.Do("HGET", key, fieldName(i)); got.Str != fieldValue(i) {
			t.Fatalf("HGET %s %s = %s, want %q", key, fieldName(i), got.String(), fieldValue(i))
		}
	}
	if got := c.Do("HGET", key, "no-such-field"); !got.Null {
		t.Fatalf("HGET of a missing field = %s", got.String())
	}
}

// TestColdHashMillionFields: a hash of 1,000,000 fields is far bigger than
// the hot tier, so it stays cold. HGET, HEXISTS and HSTRLEN are point reads
// (two store lookups: meta record and field), HLEN reads the meta record
// only, and DEL is O(1): one garbage record, reclaimed in the background.
func TestColdHashMillionFields(t *testing.T) {
	const n = 1_000_000
	s := harness.StartSpillway(t, "", "--maxmemory", "64mb", "--appendfsync", "no", "--loglevel", "warning")
	c := s.Conn(t)
	rss := harness.SampleRSS(s.Pid(), 100*time.Millisecond)
	start := time.Now()
	loadHash(t, c, "big", n)
	t.Logf("loaded %d fields in %v", n, time.Since(start).Round(time.Millisecond))
	if r := c.Do("HLEN", "big"); r.Int != n {
		t.Fatalf("HLEN = %s", r.String())
	}

	promotions := infoInt(t, c, "promotions")
	coldReads := infoInt(t, c, "cold_reads")
	gets, steps := infoInt(t, c, "cold_store_gets"), infoInt(t, c, "cold_store_iter_steps")
	const reads = 300
	r := rand.New(rand.NewSource(1))
	checkRandomHGets(t, c, "big", n, reads, r)
	for range 50 {
		i := r.Intn(n)
		if got := c.Do("HEXISTS", "big", fieldName(i)); got.Int != 1 {
			t.Fatalf("HEXISTS %s = %s", fieldName(i), got.String())
		}
		if got := c.Do("HSTRLEN", "big", fieldName(i)); got.Int != int64(len(fieldValue(i))) {
			t.Fatalf("HSTRLEN %s = %s", fieldName(i), got.String())
		}
	}
	cmds := int64(reads + 1 + 100)
	dGets := infoInt(t, c, "cold_store_gets") - gets
	dSteps := infoInt(t, c, "cold_store_iter_steps") - steps
	t.Logf("%d point reads: %d store lookups, %d iterator steps", cmds, dGets, dSteps)
	// Two lookups a command (meta, field); a few steps of slack for the
	// background sweeper and reclaimer.
	if dGets > 2*cmds || dSteps > 10 {
		t.Fatalf("%d cold point reads did %d lookups and %d iterator steps, want <= %d and <= 10", cmds, dGets, dSteps, 2*cmds)
	}
	if d := infoInt(t, c, "promotions") - promotions; d != 0 {
		t.Fatalf("the million-field hash was promoted (%d promotions)", d)
	}
	if d := infoInt(t, c, "cold_reads") - coldReads; d < cmds {
		t.Fatalf("cold_reads grew by %d over %d reads of a cold hash", d, cmds)
	}
	peak, _, err := rss.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak RSS %d MB", peak>>20)
	if peak > 300<<20 {
		t.Fatalf("peak RSS %d MB with --maxmemory 64mb", peak>>20)
	}

	reclaimed := infoInt(t, c, "reclaimed_versions")
	gets, steps = infoInt(t, c, "cold_store_gets"), infoInt(t, c, "cold_store_iter_steps")
	if r := c.Do("DEL", "big"); r.Int != 1 {
		t.Fatalf("DEL = %s", r.String())
	}
	dGets = infoInt(t, c, "cold_store_gets") - gets
	dSteps = infoInt(t, c, "cold_store_iter_steps") - steps
	if dGets > 3 || dSteps > 10 {
		t.Fatalf("DEL of a million-field hash did %d lookups and %d iterator steps: not O(1)", dGets, dSteps)
	}
	deadline := time.Now().Add(20 * time.Second)
	for infoInt(t, c, "reclaimed_versions") == reclaimed {
		if time.Now().After(deadline) {
			t.Fatal("the deleted hash's records were not reclaimed within 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := c.Do("HGET", "big", fieldName(7)); !r.Null {
		t.Fatalf("HGET after DEL = %s", r.String())
	}
	if r := c.Do("EXISTS", "big"); r.Int != 0 {
		t.Fatalf("EXISTS after DEL = %s", r.String())
	}
}

// TestHashPushedOutStaysReadable is the acceptance scenario: under
// --maxmemory 16mb, a 200,000-field hash pushed out by 60 MB of other keys
// answers 300 random HGETs correctly, at least 250 of them as cold reads,
// with RSS under 200 MB.
func TestHashPushedOutStaysReadable(t *testing.T) {
	const n = 200_000
	s := harness.StartSpillway(t, "", "--maxmemory", "16mb", "--appendfsync", "no", "--loglevel", "warning")
	c := s.Conn(t)
	rss := harness.SampleRSS(s.Pid(), 100*time.Millisecond)
	loadHash(t, c, "profile", n)
	value := string(make([]byte, 1000))
	const fillers = 60_000 // 60 MB
	for i := 0; i < fillers; i += 500 {
		for j := i; j < i+500; j++ {
			if err := c.Send("SET", "filler:"+strconv.Itoa(j), value); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		for j := i; j < i+500; j++ {
			if r := c.Read(); r.Str != "OK" {
				t.Fatalf("SET filler: %s", r.String())
			}
		}
	}
	coldReads := infoInt(t, c, "cold_reads")
	checkRandomHGets(t, c, "profile", n, 300, rand.New(rand.NewSource(2)))
	d := infoInt(t, c, "cold_reads") - coldReads
	peak, _, err := rss.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("301 HGETs: %d cold reads; peak RSS %d MB", d, peak>>20)
	if d < 250 {
		t.Fatalf("only %d of 301 HGETs were cold reads", d)
	}
	if peak >= 200<<20 {
		t.Fatalf("peak RSS %d MB, want under 200 MB", peak>>20)
	}
}

// TestCollectionsConcurrentTiering writes fields of a hash and members of a
// set while other traffic demotes them and reads promote them (in steps:
// they have thousands of fields). Every HGETALL/SMEMBERS must hold every
// field acknowledged before it was sent: never a partial structure.
func TestCollectionsConcurrentTiering(t *testing.T) {
	s := harness.StartSpillway(t, "", "--maxmemory", "16mb", "--promote-min-hits", "1",
		"--appendfsync", "no", "--loglevel", "warning")
	const n = 4000
	deadline := time.Now().Add(25 * time.Second)
	var acked [2]atomic.Int64 // hash, set: highest index acknowledged
	acked[0].Store(-1)
	acked[1].Store(-1)
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	run := func(f func(c *harness.Conn) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := harness.Dial(s.Addr())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			if err := f(c); err != nil {
				errs <- err
				stop.Store(true)
			}
		}()
	}
	// Writers: one field (member) per command, in order.
	run(func(c *harness.Conn) error {
		for i := 0; i < n && !stop.Load() && time.Now().Before(deadline); i++ {
			if r := c.Do("HSET", "h", fieldName(i), fieldValue(i)); r.Int != 1 {
				return fmt.Errorf("HSET %d: %s", i, r.String())
			}
			acked[0].Store(int64(i))
			if r := c.Do("SADD", "s", fieldName(i)); r.Int != 1 {
				return fmt.Errorf("SADD %d: %s", i, r.String())
			}
			acked[1].Store(int64(i))
		}
		return nil
	})
	// Pressure: big strings, and a budget that shrinks now and then, push
	// the structures out; the readers then promote them again.
	run(func(c *harness.Conn) error {
		v := string(make([]byte, 300<<10))
		for i := 0; !stop.Load() && time.Now().Before(deadline); i++ {
			if r := c.Do("SET", "push:"+strconv.Itoa(i%40), v); r.Str != "OK" {
				return fmt.Errorf("SET push: %s", r.String())
			}
			if i%10 == 0 {
				for _, m := range []string{"1mb", "16mb"} {
					if r := c.Do("CONFIG", "SET", "maxmemory", m); r.Str != "OK" {
						return fmt.Errorf("CONFIG SET maxmemory %s: %s", m, r.String())
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	})
	// Readers: whole-structure reads, which also promote.
	reads := [2]atomic.Int64{}
	for kind := range 2 {
		run(func(c *harness.Conn) error {
			for !stop.Load() && time.Now().Before(deadline) {
				floor := acked[kind].Load()
				var r harness.Reply
				if kind == 0 {
					r = c.Do("HGETALL", "h")
				} else {
					r = c.Do("SMEMBERS", "s")
				}
				if r.IsError() || r.Err != nil {
					return fmt.Errorf("read: %s", r.String())
				}
				got := map[string]string{}
				for i := 0; i < len(r.Elems); i++ {
					if kind == 0 {
						got[r.Elems[i].Str] = r.Elems[i+1].Str
						i++
					} else {
						got[r.Elems[i].Str] = ""
					}
				}
				for i := int64(0); i <= floor; i++ {
					v, ok := got[fieldName(int(i))]
					if !ok || (kind == 0 && v != fieldValue(int(i))) {
						return fmt.Errorf("kind %d: field %d of %d acknowledged missing or wrong (%q %v) in a reply of %d fields", kind, i, floor, v, ok, len(got))
					}
				}
				reads[kind].Add(1)
				if acked[kind].Load() >= n-1 {
					return nil
				}
			}
			return nil
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := s.Conn(t)
	if r := c.Do("HLEN", "h"); r.Int != acked[0].Load()+1 {
		t.Fatalf("HLEN = %s, %d acknowledged", r.String(), acked[0].Load()+1)
	}
	if r := c.Do("SCARD", "s"); r.Int != acked[1].Load()+1 {
		t.Fatalf("SCARD = %s, %d acknowledged", r.String(), acked[1].Load()+1)
	}
	dem, steps := infoInt(t, c, "demotions"), infoInt(t, c, "promotions_in_steps")
	t.Logf("%d fields written; %d HGETALL, %d SMEMBERS; demotions %d, promotions in steps %d",
		acked[0].Load()+1, reads[0].Load(), reads[1].Load(), dem, steps)
	if dem == 0 || steps == 0 {
		t.Fatalf("the structures did not move between tiers (demotions %d, promotions in steps %d)", dem, steps)
	}
}
