package integration

// The cold-collections part of `make bench`: one hash and one set far
// bigger than the hot tier, read field by field from disk, against
// redis-server holding the same data in memory. Like the rest of the
// benchmark it prints tables and asserts nothing about time; it fails only
// when a tool or server does not work (an error reply, a wrong count, a
// wrong value).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

const (
	coldCollFields   = 1_000_000 // fields of coldhash, members of coldset
	coldCollValueMin = 16        // coldhash values are coldCollValueMin..Max
	coldCollValueMax = 100       // random letters
	coldCollSeqOps   = 2000      // sequential requests of the latency loop
	// The Spillway under test runs with coldCollMaxMemory. It is loaded
	// with coldCollLoadMemory, a budget that holds both structures (cold
	// per-field writes under the small one take minutes), then restarted:
	// after a restart every key is cold, and these two are never promoted,
	// being far over cold-read-max-bytes (1mb) and an eighth of the budget.
	coldCollMaxMemory  = "16mb"
	coldCollLoadMemory = "2gb"
)

// coldCollCommands are the redis-benchmark runs of the cold section; every
// field and member they name exists.
var coldCollCommands = []benchCmd{
	{"HGET", []string{"HGET", "coldhash", "field:__rand_int__"}, coldCollFields, nil},
	{"SISMEMBER", []string{"SISMEMBER", "coldset", "member:__rand_int__"}, coldCollFields, nil},
}

// coldCollValue is the value of coldhash's field i: a slice of pool of
// coldCollValueMin..Max bytes picked by a generator seeded with i, so the
// latency loop can check any field without keeping the data set.
func coldCollValue(pool []byte, i int) []byte {
	r := rand.New(rand.NewPCG(5, uint64(i)))
	n := coldCollValueMin + r.IntN(coldCollValueMax-coldCollValueMin+1)
	off := r.IntN(len(pool) - n)
	return pool[off : off+n]
}

func coldCollPool() []byte { return randomLetters(rand.New(rand.NewPCG(5, 6)), 1<<16) }

// benchColdCollections is TestBenchColdCollections (declared next to the
// other TestBench functions so that it runs between them).
func benchColdCollections(t *testing.T) {
	began := time.Now()
	pool := coldCollPool()
	file := filepath.Join(t.TempDir(), "coll.resp")
	err := writeRESP(file, func(w *respWriter) {
		writeCollBatches(w, "coldhash", "coldset", "field:%012d", "member:%012d", coldCollFields,
			func(i int) []byte { return coldCollValue(pool, i) })
	})
	if err != nil {
		t.Fatal(err)
	}

	redis := harness.StartRedis(t)
	dir := t.TempDir()
	loader := harness.StartSpillway(t, dir, "--maxmemory", coldCollLoadMemory)
	commands := 2 * ((coldCollFields + benchCollBatch - 1) / benchCollBatch)
	var loadTime [2]time.Duration
	var errs [2]error
	var wg sync.WaitGroup
	for i, s := range []*harness.Server{redis, loader} {
		wg.Go(func() { loadTime[i], errs[i] = pipeLoad(s.Addr(), file, commands) })
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatalf("load: %v", err)
	}
	loader.Term()
	spw := harness.StartSpillway(t, dir, "--maxmemory", coldCollMaxMemory)
	for name, s := range map[string]*harness.Server{"redis": redis, "spillway": spw} {
		c := s.Conn(t)
		for _, q := range [][]string{{"HLEN", "coldhash"}, {"SCARD", "coldset"}} {
			if r := c.Do(q[0], q[1]); r.Err != nil || r.Int != coldCollFields {
				t.Fatalf("%s: %s = %s, want %d", name, strings.Join(q, " "), r.String(), coldCollFields)
			}
		}
	}
	before := tieringInfo(t, spw)
	t.Logf("cold collections loaded (redis %v, spillway %v) and restarted at %v",
		loadTime[0].Round(time.Millisecond), loadTime[1].Round(time.Millisecond), time.Since(began).Round(time.Millisecond))

	targets := []benchTarget{
		{"redis", redis.Addr(), "redis-server 7.0, --save '' --appendonly no: both structures in memory"},
		{"spw-cold", spw.Addr(), "spillway --maxmemory " + coldCollMaxMemory + ", loaded with --maxmemory " +
			coldCollLoadMemory + " and restarted: both structures cold, read per field from disk"},
	}

	// The sequential loop runs first, on a freshly restarted server.
	seq := map[cellKey][]time.Duration{}
	for _, tg := range targets {
		for _, c := range coldCollCommands {
			d, err := coldCollSequential(t, tg.addr, c.label, pool)
			if err != nil {
				t.Fatalf("%s: %v", tg.name, err)
			}
			seq[cellKey{tg.name, c.label, 1}] = d
		}
	}

	sizes := map[cellKey]int{}
	for _, tg := range targets {
		for _, p := range benchPipelines {
			for _, c := range coldCollCommands {
				n, err := calibrate(tg.addr, c, p)
				if err != nil {
					t.Fatalf("%s %s -P %d: %v", tg.name, c.label, p, err)
				}
				sizes[cellKey{tg.name, c.label, p}] = n
			}
		}
	}
	samples := map[cellKey][]benchSample{}
	for rep := 1; rep <= benchReps; rep++ {
		for _, tg := range targets {
			for _, p := range benchPipelines {
				for _, c := range coldCollCommands {
					k := cellKey{tg.name, c.label, p}
					s, err := runRedisBenchmark(tg.addr, c, p, sizes[k])
					if err != nil {
						t.Fatalf("%s %s -P %d: %v", tg.name, c.label, p, err)
					}
					samples[k] = append(samples[k], s)
				}
			}
		}
	}
	after := tieringInfo(t, spw)

	var out strings.Builder
	fmt.Fprintf(&out, "\n== Cold hash and set: HGET/SISMEMBER on a hash of %d fields (%d-%d byte values) and a set of %d members ==\n",
		coldCollFields, coldCollValueMin, coldCollValueMax, coldCollFields)
	out.WriteString(machineNotes())
	for _, tg := range targets {
		fmt.Fprintf(&out, "  %-10s %s\n", tg.name, tg.desc)
	}
	fmt.Fprintf(&out, "load with redis-cli --pipe (%d HSET/SADD of %d fields/members each): redis %.1fs, spillway %.1fs "+
		"(at --maxmemory %s)\n", commands, benchCollBatch, loadTime[0].Seconds(), loadTime[1].Seconds(), coldCollLoadMemory)
	fmt.Fprintf(&out, "\nthroughput: redis-benchmark -c %d -r %d, median of %d runs of ~%v each "+
		"(cold store files are in the OS page cache, as after the load)\n",
		benchClients, coldCollFields, benchReps, benchRunTime)
	out.WriteString(throughputTable(targets, coldCollCommands, samples, "every field and member exists"))
	out.WriteString(latencyTable(targets, coldCollCommands, samples))
	fmt.Fprintf(&out, "Spread: %s\n", spreadNote(samples))
	out.WriteString(coldCollSeqTable(targets, seq))
	out.WriteString(coldCollTieringNote(before, after))
	fmt.Fprintf(&out, "(cold hash and set section took %v)\n", time.Since(began).Round(time.Second))
	fmt.Print(out.String())
}

// coldCollSequential sends coldCollSeqOps requests of command label (HGET
// or SISMEMBER) one after the other with go-redis, at fields picked with a
// fixed seed, checks every reply, and returns each request's round trip.
func coldCollSequential(t *testing.T, addr, label string, pool []byte) ([]time.Duration, error) {
	c := harness.GoRedis(t, addr, 2)
	r := rand.New(rand.NewPCG(7, 8))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := make([]time.Duration, 0, coldCollSeqOps)
	for range coldCollSeqOps {
		i := r.IntN(coldCollFields)
		start := time.Now()
		var err error
		switch label {
		case "HGET":
			var v string
			v, err = c.HGet(ctx, "coldhash", fmt.Sprintf("field:%012d", i)).Result()
			if want := coldCollValue(pool, i); err == nil && v != string(want) {
				err = fmt.Errorf("reply %q, want %q", v, want)
			}
		case "SISMEMBER":
			var ok bool
			ok, err = c.SIsMember(ctx, "coldset", fmt.Sprintf("member:%012d", i)).Result()
			if err == nil && !ok {
				err = errors.New("reply 0, want 1")
			}
		default:
			err = errors.New("no sequential loop for this command")
		}
		d = append(d, time.Since(start))
		if err != nil {
			return nil, fmt.Errorf("%s field/member %d: %w", label, i, err)
		}
	}
	return d, nil
}

// coldCollSeqTable prints the round trips of the sequential loops.
func coldCollSeqTable(targets []benchTarget, seq map[cellKey][]time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nsequential latency: %d requests one at a time (go-redis, one connection, random fields), ms\n", coldCollSeqOps)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "command\tserver\tp50\tp90\tp99\tmax\tops/s\t")
	for _, c := range coldCollCommands {
		for _, tg := range targets {
			d := slices.Clone(seq[cellKey{tg.name, c.label, 1}])
			slices.Sort(d)
			var sum time.Duration
			for _, x := range d {
				sum += x
			}
			q := func(f float64) float64 { return float64(d[min(int(f*float64(len(d))), len(d)-1)]) / 1e6 }
			fmt.Fprintf(w, "%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t\n", c.label, tg.name, q(0.5), q(0.9), q(0.99),
				float64(d[len(d)-1])/1e6, thousands(float64(len(d))/sum.Seconds()))
		}
	}
	w.Flush()
	return b.String()
}

// coldCollTieringNote shows the two structures stayed cold: INFO tiering
// of the Spillway server after its restart and after the measurements.
func coldCollTieringNote(before, after map[string]string) string {
	var b strings.Builder
	keys := []string{"hot_keys", "cold_keys", "hot_bytes", "promotions", "promotions_in_steps", "demotions",
		"cold_reads", "cold_store_gets", "cold_store_iter_steps"}
	for _, s := range []struct {
		when string
		info map[string]string
	}{{"after the restart", before}, {"after the run", after}} {
		var fields []string
		for _, k := range keys {
			fields = append(fields, k+"="+s.info[k])
		}
		fmt.Fprintf(&b, "spw-cold INFO tiering %s: %s\n", s.when, strings.Join(fields, " "))
	}
	if after["promotions"] != before["promotions"] || after["hot_keys"] != "0" {
		b.WriteString("NOTE: a key was promoted during the run, so some figures above are not cold reads\n")
	} else {
		b.WriteString("(no promotion: coldhash and coldset stayed cold throughout)\n")
	}
	return b.String()
}
