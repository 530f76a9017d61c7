package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/integration/harness"
)

// TestUpstreamDemotionRace (helpers in upstream_tiering_test.go): writers
// of every type racing DEBUG DEMOTE-ALL and the demoter lose no
// acknowledged write, apply none twice, and leave no key in both tiers.

// utRaceWriter is one writer of TestUpstreamDemotionRace and the model of
// the keys it owns, updated only for replies that say the write happened.
type utRaceWriter struct {
	id       int
	counters map[string]int64
	hashes   map[string]map[string]string
	lists    map[string][]string
	sets     map[string]map[string]bool
	zsets    map[string]map[string]float64
	strs     map[string]string
	oks      int
	progress atomic.Int64 // steps done
	errs     []string
	nerrs    int
}

func newUTRaceWriter(id int) *utRaceWriter {
	return &utRaceWriter{id: id, counters: map[string]int64{}, hashes: map[string]map[string]string{},
		lists: map[string][]string{}, sets: map[string]map[string]bool{}, zsets: map[string]map[string]float64{},
		strs: map[string]string{}}
}

// utRaceSlots is the number of keys of each type a race writer owns; its
// first 6*utRaceSlots steps create them all.
const utRaceSlots = 12

// utRacePad makes the elements big enough for the writes to push the
// upstream over its small budget.
var utRacePad = strings.Repeat("p", 96)

// op returns the command of step j and a function that checks its reply
// and updates the model.
func (w *utRaceWriter) op(j int) (redis.Cmder, func(redis.Cmder)) {
	ctx := context.Background()
	slot := strconv.Itoa((j / 6) % utRaceSlots)
	key := func(kind string) string { return "race:w" + strconv.Itoa(w.id) + ":" + kind + ":" + slot }
	js := strconv.Itoa(j)
	fail := func(format string, a ...any) {
		w.nerrs++
		if len(w.errs) < 5 {
			w.errs = append(w.errs, fmt.Sprintf("writer %d step %d: ", w.id, j)+fmt.Sprintf(format, a...))
		}
	}
	switch j % 6 {
	case 0:
		k := key("ctr")
		return redis.NewIntCmd(ctx, "INCR", k), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("INCR %s: %v", k, err)
				return
			}
			w.counters[k]++
			w.oks++
			if n != w.counters[k] {
				fail("INCR %s = %d, want %d", k, n, w.counters[k])
				w.counters[k] = n
			}
		}
	case 1:
		k, f, v := key("hash"), "f"+js, js+utRacePad
		return redis.NewIntCmd(ctx, "HSET", k, f, v), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("HSET %s: %v", k, err)
				return
			}
			if w.hashes[k] == nil {
				w.hashes[k] = map[string]string{}
			}
			w.hashes[k][f] = v
			w.oks++
			if n != 1 {
				fail("HSET %s %s (a new field) = %d", k, f, n)
			}
		}
	case 2:
		k, e := key("list"), js+utRacePad
		return redis.NewIntCmd(ctx, "RPUSH", k, e), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("RPUSH %s: %v", k, err)
				return
			}
			w.lists[k] = append(w.lists[k], e)
			w.oks++
			if n != int64(len(w.lists[k])) {
				fail("RPUSH %s = %d, want %d", k, n, len(w.lists[k]))
			}
		}
	case 3:
		k, m := key("set"), js+utRacePad
		return redis.NewIntCmd(ctx, "SADD", k, m), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("SADD %s: %v", k, err)
				return
			}
			if w.sets[k] == nil {
				w.sets[k] = map[string]bool{}
			}
			w.sets[k][m] = true
			w.oks++
			if n != 1 {
				fail("SADD %s (a new member) = %d", k, n)
			}
		}
	case 4:
		k, m := key("zset"), js+utRacePad
		return redis.NewIntCmd(ctx, "ZADD", k, js, m), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("ZADD %s: %v", k, err)
				return
			}
			if w.zsets[k] == nil {
				w.zsets[k] = map[string]float64{}
			}
			w.zsets[k][m] = float64(j)
			w.oks++
			if n != 1 {
				fail("ZADD %s (a new member) = %d", k, n)
			}
		}
	default:
		k, s := key("str"), js+","
		return redis.NewIntCmd(ctx, "APPEND", k, s), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("APPEND %s: %v", k, err)
				return
			}
			w.strs[k] += s
			w.oks++
			if n != int64(len(w.strs[k])) {
				fail("APPEND %s = %d, want %d", k, n, len(w.strs[k]))
			}
		}
	}
}

// run does up to steps steps, until deadline, one command at a time or in
// pipelines of pipe.
func (w *utRaceWriter) run(rc *redis.Client, steps, pipe int, deadline time.Time) {
	ctx := context.Background()
	for j := 0; j < steps && time.Now().Before(deadline); {
		n := min(pipe, steps-j)
		cmds := make([]redis.Cmder, n)
		checks := make([]func(redis.Cmder), n)
		for i := range cmds {
			cmds[i], checks[i] = w.op(j + i)
		}
		if pipe == 1 {
			_ = rc.Process(ctx, cmds[0])
		} else {
			p := rc.Pipeline()
			for _, c := range cmds {
				_ = p.Process(ctx, c)
			}
			_, _ = p.Exec(ctx)
		}
		for i, c := range cmds {
			checks[i](c)
		}
		j += n
		w.progress.Store(int64(j))
	}
}

// keys returns every key the writer wrote successfully at least once.
func (w *utRaceWriter) keys() []string {
	var ks []string
	for k := range w.counters {
		ks = append(ks, k)
	}
	for k := range w.hashes {
		ks = append(ks, k)
	}
	for k := range w.lists {
		ks = append(ks, k)
	}
	for k := range w.sets {
		ks = append(ks, k)
	}
	for k := range w.zsets {
		ks = append(ks, k)
	}
	for k := range w.strs {
		ks = append(ks, k)
	}
	return ks
}

// verify compares every key of the model with its content read through rc
// and returns the differences.
func (w *utRaceWriter) verify(rc *redis.Client) []string {
	ctx := context.Background()
	var diffs []string
	diff := func(format string, a ...any) { diffs = append(diffs, fmt.Sprintf(format, a...)) }
	for k, want := range w.counters {
		if got, err := rc.Get(ctx, k).Result(); err != nil || got != strconv.FormatInt(want, 10) {
			diff("GET %s = %q, %v; want %d", k, got, err, want)
		}
	}
	for k, want := range w.hashes {
		got, err := rc.HGetAll(ctx, k).Result()
		if err != nil || len(got) != len(want) {
			diff("HGETALL %s: %d fields, %v; want %d", k, len(got), err, len(want))
			continue
		}
		for f, v := range want {
			if got[f] != v {
				diff("HGETALL %s: field %s = %q, want %q", k, f, harness.Trunc(got[f], 20), harness.Trunc(v, 20))
				break
			}
		}
	}
	for k, want := range w.lists {
		got, err := rc.LRange(ctx, k, 0, -1).Result()
		if err != nil || !slices.Equal(got, want) {
			diff("LRANGE %s: %d elements, %v; want %d in order (%s)", k, len(got), err, len(want), utListDiff(got, want))
		}
	}
	for k, want := range w.sets {
		got, err := rc.SMembers(ctx, k).Result()
		missing := 0
		for _, m := range got {
			if !want[m] {
				missing = -1
			}
		}
		if err != nil || len(got) != len(want) || missing != 0 {
			diff("SMEMBERS %s: %d members, %v; want %d", k, len(got), err, len(want))
		}
	}
	for k, want := range w.zsets {
		got, err := rc.ZRangeWithScores(ctx, k, 0, -1).Result()
		good := err == nil && len(got) == len(want)
		for _, z := range got {
			if s, ok := want[z.Member.(string)]; !ok || s != z.Score {
				good = false
			}
		}
		if !good {
			diff("ZRANGE %s WITHSCORES: %d members, %v; want %d", k, len(got), err, len(want))
		}
	}
	for k, want := range w.strs {
		if got, err := rc.Get(ctx, k).Result(); err != nil || got != want {
			diff("GET %s = %q, %v; want %q", k, harness.Trunc(got, 40), err, harness.Trunc(want, 40))
		}
	}
	return diffs
}

// utListDiff describes where got first departs from want.
func utListDiff(got, want []string) string {
	for i := 0; i < min(len(got), len(want)); i++ {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at %d: %q, want %q", i, harness.Trunc(got[i], 12), harness.Trunc(want[i], 12))
		}
	}
	return "one is a prefix of the other"
}

// TestUpstreamDemotionRace runs writers of every type on disjoint keys
// through Spillway while DEBUG DEMOTE-ALL and the demoter (with a budget
// about 1 MB over the upstream's idle used_memory) keep moving the keys
// to the cold store: no acknowledged write is lost, none is applied twice,
// and no key ends up in both tiers.
func TestUpstreamDemotionRace(t *testing.T) {
	const (
		writers = 4
		steps   = 8000
		runFor  = 20 * time.Second
	)
	t.Setenv("SPILLWAY_TEST_HOOKS", "1")
	up := harness.StartRedis(t)
	upc := up.Conn(t)
	base, err := utInfoInt(upc, "memory", "used_memory")
	if err != nil {
		t.Fatal(err)
	}
	budget := base + utMB
	sp := utStartSpillway(t, up, "", budget, "--loglevel", "warning")
	spc := utDial(t, sp.Addr(), 30*time.Second)
	rc := utGoRedis(t, sp.Addr(), 10*time.Second)
	t.Logf("upstream used_memory at rest %s; budget %s", utMiB(base), utMiB(budget))

	deadline := time.Now().Add(runFor)
	ws := make([]*utRaceWriter, writers)
	var wg sync.WaitGroup
	for i := range ws {
		ws[i] = newUTRaceWriter(i)
		pipe := 1
		if i%2 == 1 {
			pipe = 8 // a pipeline: a batch of forwards racing one demotion
		}
		wg.Add(1)
		go func(w *utRaceWriter, pipe int) {
			defer wg.Done()
			w.run(rc, steps, pipe, deadline)
		}(ws[i], pipe)
	}
	writersDone := make(chan struct{})
	go func() { wg.Wait(); close(writersDone) }()

	// Once every writer has created all its keys, their number is fixed:
	// DBSIZE sampled during the race must always give it.
	sizeC := utDial(t, sp.Addr(), 30*time.Second)
	type sizeProbe struct {
		samples, wrong int
		first          []string
		err            error
	}
	probed := make(chan sizeProbe, 1)
	go func() {
		var p sizeProbe
		defer func() { probed <- p }()
		want := int64(writers * 6 * utRaceSlots)
		for i := 0; i < 100_000; i++ {
			select {
			case <-writersDone:
				return
			case <-time.After(5 * time.Millisecond):
			}
			all := true
			for _, w := range ws {
				all = all && w.progress.Load() >= 6*utRaceSlots
			}
			if !all {
				continue
			}
			r := sizeC.Do("DBSIZE")
			if r.Err != nil {
				p.err = r.Err
				return
			}
			p.samples++
			if r.Type != ':' || r.Int != want {
				if p.wrong++; len(p.first) < 5 {
					p.first = append(p.first, r.String())
				}
			}
		}
	}()

	// DEBUG DEMOTE-ALL in a loop until the writers are done.
	demc := utDial(t, sp.Addr(), 30*time.Second)
	var demoteAlls, demoteMoved int
	var demoteErrs []string
loop:
	for i := 0; i < 100_000; i++ {
		select {
		case <-writersDone:
			break loop
		default:
		}
		r := demc.Do("DEBUG", "DEMOTE-ALL")
		if r.Err != nil {
			t.Fatalf("DEBUG DEMOTE-ALL: %v", r.Err)
		}
		if r.Type != ':' {
			if len(demoteErrs) < 5 {
				demoteErrs = append(demoteErrs, r.String())
			}
			continue
		}
		demoteAlls++
		demoteMoved += int(r.Int)
		time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond)
	}
	select {
	case <-writersDone:
	case <-time.After(runFor + 30*time.Second):
		t.Fatal("writers still running 30 s after their deadline")
	}

	probe := <-probed
	if probe.err != nil {
		t.Fatalf("DBSIZE during the race: %v", probe.err)
	}
	t.Logf("DBSIZE sampled %d times during the race: %d wrong", probe.samples, probe.wrong)
	if probe.wrong > 0 {
		t.Errorf("DBSIZE during the race was not %d in %d of %d samples (keys moving between the tiers counted twice or not at all): %s",
			writers*6*utRaceSlots, probe.wrong, probe.samples, strings.Join(probe.first, ", "))
	}

	total, oks, nerrs := 0, 0, 0
	for _, w := range ws {
		total += len(w.keys())
		oks += w.oks
		nerrs += w.nerrs
		for _, e := range w.errs {
			t.Errorf("%s", e)
		}
	}
	ti := utTiering(t, spc)
	t.Logf("%d writes acknowledged by %d writers on %d keys; %d DEMOTE-ALL moved %d keys; INFO tiering: demotions=%s demotion_aborts=%s promotions=%s reload_conflicts=%s cold_reads=%s cold_keys=%s",
		oks, writers, total, demoteAlls, demoteMoved, ti["demotions"], ti["demotion_aborts"],
		ti["promotions"], ti["reload_conflicts"], ti["cold_reads"], ti["cold_keys"])
	if nerrs > 0 {
		t.Errorf("%d writes failed or answered wrongly", nerrs)
	}
	if len(demoteErrs) > 0 {
		t.Errorf("DEBUG DEMOTE-ALL failed: %s", strings.Join(demoteErrs, "; "))
	}
	if oks < writers*6 {
		t.Fatalf("only %d writes acknowledged", oks)
	}

	// Before anything is read back (reads reload), a key in both tiers
	// would count twice.
	utSettle(t, spc, 30*time.Second)
	if got := utDBSize(t, spc); got != int64(total) {
		t.Errorf("DBSIZE through Spillway = %d, want %d distinct keys", got, total)
	}
	hot := utDBSize(t, upc)
	cold := utInt(t, utTiering(t, spc), "cold_keys")
	if hot+cold != int64(total) {
		t.Errorf("upstream DBSIZE %d + cold_keys %d = %d, want %d keys", hot, cold, hot+cold, total)
	}
	if d := utInt(t, ti, "demotions"); d <= 0 {
		t.Errorf("demotions = %d", d)
	}
	if p := utInt(t, ti, "promotions"); p <= 0 {
		t.Errorf("promotions = %d", p)
	}

	check := func(when string) {
		t.Helper()
		for _, w := range ws {
			diffs := w.verify(rc)
			for i, d := range diffs {
				if i == 5 {
					t.Errorf("%s: writer %d: %d more differences", when, w.id, len(diffs)-5)
					break
				}
				t.Errorf("%s: writer %d: %s", when, w.id, d)
			}
		}
		utSettle(t, spc, 30*time.Second)
		if got := utDBSize(t, spc); got != int64(total) {
			t.Errorf("%s: DBSIZE through Spillway = %d, want %d", when, got, total)
		}
	}
	check("after the race")
	// Everything cold once more: the same content is read from the store.
	if r := spc.Do("DEBUG", "DEMOTE-ALL"); r.Type != ':' {
		t.Fatalf("DEBUG DEMOTE-ALL: %s", r.String())
	}
	if n := utDBSize(t, upc); n != 0 {
		t.Errorf("upstream DBSIZE after DEMOTE-ALL with no writers = %d, want 0", n)
	}
	check("all cold")
}
