package integration

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// leaderScoreSpan is the number of distinct scores of a leaderboard of
// 1,000,000 members (leaderScore): each is held by n/leaderScoreSpan
// members.
const leaderScoreSpan = 100_000

// leaderMember is member i of the test leaderboards, zero-padded so that
// members order as their indexes do.
func leaderMember(i int) string { return string(appendLeaderMember(nil, i)) }

// appendLeaderMember appends leaderMember(i) (i below 10,000,000) to b.
func appendLeaderMember(b []byte, i int) []byte {
	b = append(b, "player:"...)
	var d [7]byte
	for k, x := len(d)-1, i; k >= 0; k, x = k-1, x/10 {
		d[k] = '0' + byte(x%10)
	}
	return append(b, d[:]...)
}

// leaderScore is member i's score: (i*7919)%leaderScoreSpan plus a
// quarter, negated when i%5 == 0. Members i, i+leaderScoreSpan, ... share
// a score (ties, ordered by member), a fifth of the scores are negative,
// and quarters are exact in binary, so a score prints the same in Go's
// shortest form and in Redis 7.0's %.17g.
func leaderScore(i int) float64 {
	s := float64((i*7919)%leaderScoreSpan) + float64(i%4)*0.25
	if i%5 == 0 && s != 0 {
		s = -s
	}
	return s
}

// fmtScore formats a score argument or the expected reply for one.
func fmtScore(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) }

// loadLeaderboard adds members [0, n) to key with pipelined ZADDs of 1,000
// members each, failing on any reply but the count of new members.
func loadLeaderboard(t *testing.T, c *harness.Conn, key string, n int) {
	t.Helper()
	const per, window = 1000, 16
	sent, read := 0, 0
	for read*per < n {
		for sent*per < n && sent-read < window {
			args := []string{"ZADD", key}
			for i := sent * per; i < min((sent+1)*per, n); i++ {
				args = append(args, fmtScore(leaderScore(i)), leaderMember(i))
			}
			// Flushed one by one: each write has Conn.Timeout as its
			// deadline, so a server that stops reading fails the test.
			if err := c.Send(args...); err != nil {
				t.Fatal(err)
			}
			if err := c.Flush(); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		want := int64(min((read+1)*per, n) - read*per)
		if r := c.Read(); r.Err != nil || r.Int != want {
			t.Fatalf("ZADD batch %d: %s, want %d", read, r.String(), want)
		}
		read++
	}
}

// leaderboard is the expected content of a leaderboard of n members: the
// member indexes in Redis's order (score, then member).
type leaderboard struct {
	order []int32 // by rank
	score []float64
}

func newLeaderboard(n int) *leaderboard {
	lb := &leaderboard{order: make([]int32, n), score: make([]float64, n)}
	for i := range n {
		lb.order[i], lb.score[i] = int32(i), leaderScore(i)
	}
	slices.SortFunc(lb.order, func(a, b int32) int {
		if sa, sb := lb.score[a], lb.score[b]; sa != sb {
			if sa < sb {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	return lb
}

// page returns the ranks of the first limit members from bound upward
// (downward if rev), bound inclusive unless excl.
func (lb *leaderboard) page(bound float64, excl, rev bool, limit int) []int {
	return lb.appendPage(nil, bound, excl, rev, limit)
}

// appendPage appends what page returns to ranks.
func (lb *leaderboard) appendPage(ranks []int, bound float64, excl, rev bool, limit int) []int {
	n, limit := len(lb.order), limit+len(ranks)
	at := func(k int) float64 { return lb.score[lb.order[k]] }
	if !rev {
		k := sort.Search(n, func(k int) bool { return at(k) > bound || !excl && at(k) == bound })
		for ; k < n && len(ranks) < limit; k++ {
			ranks = append(ranks, k)
		}
		return ranks
	}
	k := sort.Search(n, func(k int) bool { return at(k) > bound || excl && at(k) == bound }) - 1
	for ; k >= 0 && len(ranks) < limit; k-- {
		ranks = append(ranks, k)
	}
	return ranks
}

// between returns the ranks of the members scored lo..hi (inclusive).
func (lb *leaderboard) between(lo, hi float64) []int {
	var ranks []int
	k := sort.Search(len(lb.order), func(k int) bool { return lb.score[lb.order[k]] >= lo })
	for ; k < len(lb.order) && lb.score[lb.order[k]] <= hi; k++ {
		ranks = append(ranks, k)
	}
	return ranks
}

// check compares a ZRANGE-family reply (RESP2) with the members at ranks,
// with their scores if withScores.
func (lb *leaderboard) check(r harness.Reply, ranks []int, withScores bool) error {
	per := 1
	if withScores {
		per = 2
	}
	if r.Type != '*' || len(r.Elems) != per*len(ranks) {
		return fmt.Errorf("reply %s, want %d members", harness.Trunc(r.String(), 300), len(ranks))
	}
	for j, k := range ranks {
		i := int(lb.order[k])
		if got := r.Elems[per*j].Str; got != leaderMember(i) {
			return fmt.Errorf("element %d is %q, want %q (rank %d)", j, got, leaderMember(i), k)
		}
		if withScores {
			if got := r.Elems[2*j+1].Str; got != fmtScore(lb.score[i]) {
				return fmt.Errorf("score of %s is %q, want %s", leaderMember(i), got, fmtScore(lb.score[i]))
			}
		}
	}
	return nil
}

// randomBound picks a score bound: half the time an existing score (a tie
// group's edge), otherwise a value between scores, over the whole range
// and a little beyond.
// intn is a random generator's Intn (IntN).
func (lb *leaderboard) randomBound(intn func(int) int) float64 {
	if intn(2) == 0 {
		return lb.score[intn(len(lb.score))]
	}
	return float64(intn(2*leaderScoreSpan+20)-leaderScoreSpan-10) + 0.1
}

// durQuantile returns the q-quantile (0..1) of d, 0 for none.
func durQuantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// readCost measures the store reads of what runs between its creation and
// done: lookups and iterator steps.
type readCost struct {
	t           *testing.T
	c           *harness.Conn
	gets, steps int64 // the counters at the start
}

func startCost(t *testing.T, c *harness.Conn) *readCost {
	g, s := storeReads(t, c)
	return &readCost{t: t, c: c, gets: g, steps: s}
}

func (rc *readCost) done() (gets, steps int64) {
	g, s := storeReads(rc.t, rc.c)
	return g - rc.gets, s - rc.steps
}

// TestColdLeaderboardMillion: a sorted set of 1,000,000 members is far
// over what is held in memory, so it is served from the store: ZSCORE is
// a point lookup, a page of ZRANGEBYSCORE (and its REV and ZRANGE BYSCORE
// forms) a seek and a scan of the page, ZCARD the meta record, top and
// bottom pages by rank a scan of the page; writes touch their members'
// records; DEL is O(1). Every reply is checked against the leaderboard
// computed here; ZRANK in the middle (a scan of the ranks before it) is
// checked for correctness only.
func TestColdLeaderboardMillion(t *testing.T) {
	const n, key = 1_000_000, "lb"
	s := harness.StartSpillway(t, "", "--maxmemory", "64mb", "--appendfsync", "no", "--loglevel", "warning")
	c := s.Conn(t)
	rss := harness.SampleRSS(s.Pid(), 100*time.Millisecond)
	began := time.Now()
	loadLeaderboard(t, c, key, n)
	t.Logf("loaded %d members in %v", n, time.Since(began).Round(time.Millisecond))
	lb := newLeaderboard(n)
	if r := c.Do("ZCARD", key); r.Int != n {
		t.Fatalf("ZCARD = %s", r.String())
	}
	if r := c.Do("OBJECT", "ENCODING", key); r.Str != "skiplist" {
		t.Fatalf("OBJECT ENCODING = %s", r.String())
	}
	setBytes := int64(n * (len(leaderMember(0)) + 8))
	promotions := infoInt(t, c, "promotions")
	coldReads := infoInt(t, c, "cold_reads")
	r := rand.New(rand.NewSource(1))

	// (a) ZSCORE: the meta record and the member record.
	const scores = 300
	var scoreLat []time.Duration
	cost := startCost(t, c)
	for range scores {
		i := r.Intn(n)
		start := time.Now()
		got := c.Do("ZSCORE", key, leaderMember(i))
		scoreLat = append(scoreLat, time.Since(start))
		if got.Str != fmtScore(leaderScore(i)) {
			t.Fatalf("ZSCORE %s = %s, want %s", leaderMember(i), got.String(), fmtScore(leaderScore(i)))
		}
	}
	if got := c.Do("ZSCORE", key, "no-such-player"); !got.Null {
		t.Fatalf("ZSCORE of a missing member = %s", got.String())
	}
	gets, steps := cost.done()
	t.Logf("%d ZSCORE: %d store lookups, %d iterator steps; latency p50 %v, p99 %v", scores+1, gets, steps,
		durQuantile(scoreLat, 0.5), durQuantile(scoreLat, 0.99))
	if gets > 2*(scores+1) || steps > 10 {
		t.Fatalf("%d cold ZSCORE did %d lookups and %d iterator steps, want <= %d and <= 10", scores+1, gets, steps, 2*(scores+1))
	}

	// (b) Pages of 10 by score at random bounds: a seek and the page.
	type rangeForm struct {
		name       string
		pages      int
		rev, excl  bool
		withScores bool
		args       func(bound string) []string
		maxSteps   int // per page
	}
	limit := []string{"LIMIT", "0", "10"}
	forms := []rangeForm{
		{"ZRANGEBYSCORE min +inf LIMIT 0 10", 200, false, false, false,
			func(b string) []string { return append([]string{"ZRANGEBYSCORE", key, b, "+inf"}, limit...) }, 12},
		{"ZRANGEBYSCORE min +inf WITHSCORES LIMIT 0 10", 50, false, false, true,
			func(b string) []string {
				return append([]string{"ZRANGEBYSCORE", key, b, "+inf", "WITHSCORES"}, limit...)
			}, 12},
		{"ZREVRANGEBYSCORE max -inf LIMIT 0 10", 50, true, false, false,
			func(b string) []string { return append([]string{"ZREVRANGEBYSCORE", key, b, "-inf"}, limit...) }, 12},
		{"ZREVRANGEBYSCORE max -inf WITHSCORES LIMIT 0 10", 50, true, false, true,
			func(b string) []string {
				return append([]string{"ZREVRANGEBYSCORE", key, b, "-inf", "WITHSCORES"}, limit...)
			}, 12},
		{"ZRANGE min +inf BYSCORE LIMIT 0 10", 50, false, false, false,
			func(b string) []string { return append([]string{"ZRANGE", key, b, "+inf", "BYSCORE"}, limit...) }, 12},
		{"ZRANGE max -inf BYSCORE REV LIMIT 0 10 WITHSCORES", 50, true, false, true,
			func(b string) []string {
				return append(append([]string{"ZRANGE", key, b, "-inf", "BYSCORE", "REV"}, limit...), "WITHSCORES")
			}, 12},
		// An exclusive bound at an existing score also steps over that
		// score's ties (10 members here) before the page.
		{"ZRANGEBYSCORE (min +inf LIMIT 0 10", 50, false, true, false,
			func(b string) []string { return append([]string{"ZRANGEBYSCORE", key, "(" + b, "+inf"}, limit...) }, 12 + n/leaderScoreSpan},
		{"ZREVRANGEBYSCORE (max -inf LIMIT 0 10", 50, true, true, false,
			func(b string) []string { return append([]string{"ZREVRANGEBYSCORE", key, "(" + b, "-inf"}, limit...) }, 12 + n/leaderScoreSpan},
	}
	var pageLat []time.Duration
	for _, f := range forms {
		cost := startCost(t, c)
		for range f.pages {
			bound := lb.randomBound(r.Intn)
			args := f.args(fmtScore(bound))
			start := time.Now()
			got := c.Do(args...)
			if f.name == forms[0].name {
				pageLat = append(pageLat, time.Since(start))
			}
			if err := lb.check(got, lb.page(bound, f.excl, f.rev, 10), f.withScores); err != nil {
				t.Fatalf("%s: %v", fmtArgs(args), err)
			}
		}
		gets, steps := cost.done()
		t.Logf("%d %s: %d store lookups, %d iterator steps (%.1f a page)", f.pages, f.name, gets, steps, float64(steps)/float64(f.pages))
		if gets > int64(2*f.pages) || steps > int64(f.maxSteps*f.pages) {
			t.Fatalf("%d pages of %s did %d lookups and %d iterator steps, want <= %d and <= %d",
				f.pages, f.name, gets, steps, 2*f.pages, f.maxSteps*f.pages)
		}
	}
	t.Logf("ZRANGEBYSCORE page of 10 latency: p50 %v, p99 %v", durQuantile(pageLat, 0.5), durQuantile(pageLat, 0.99))
	// The ends of the score range, and ranges that hold nothing.
	top := lb.score[lb.order[n-1]]
	for _, q := range []struct {
		args       []string
		ranks      []int
		withScores bool
	}{
		{[]string{"ZRANGEBYSCORE", key, "-inf", "+inf", "LIMIT", "0", "10"}, lb.page(-1e300, false, false, 10), false},
		{[]string{"ZRANGEBYSCORE", key, fmtScore(top), "+inf", "WITHSCORES"}, lb.page(top, false, false, 100), true},
		{[]string{"ZREVRANGEBYSCORE", key, "+inf", "-inf", "WITHSCORES", "LIMIT", "0", "10"}, lb.page(1e300, false, true, 10), true},
		{[]string{"ZRANGEBYSCORE", key, "(" + fmtScore(top), "+inf"}, nil, false},
		{[]string{"ZRANGEBYSCORE", key, "100.1", "100.2"}, nil, false},
		{[]string{"ZRANGEBYSCORE", key, "100", "100.75"}, lb.between(100, 100.75), false}, // negative: none
		{[]string{"ZRANGEBYSCORE", key, "101", "103.75", "WITHSCORES"}, lb.between(101, 103.75), true},
		{[]string{"ZRANGEBYSCORE", key, "-1000", "-990"}, lb.between(-1000, -990), false},
		{[]string{"ZRANGEBYSCORE", key, "12", "+inf", "LIMIT", "25", "10"}, lb.page(12, false, false, 35)[25:], false},
	} {
		if err := lb.check(c.Do(q.args...), q.ranks, q.withScores); err != nil {
			t.Fatalf("%s: %v", fmtArgs(q.args), err)
		}
	}

	// (c) ZCARD reads the meta record only.
	cost = startCost(t, c)
	for range 50 {
		if got := c.Do("ZCARD", key); got.Int != n {
			t.Fatalf("ZCARD = %s", got.String())
		}
	}
	gets, steps = cost.done()
	t.Logf("50 ZCARD: %d store lookups, %d iterator steps", gets, steps)
	if gets > 50 || steps != 0 {
		t.Fatalf("50 ZCARD did %d lookups and %d iterator steps, want <= 50 and 0", gets, steps)
	}

	// (g) Ranks. The top and bottom pages are a scan of the page; a rank
	// in the middle is a scan of the ranks before it (logged, checked for
	// correctness only).
	cost = startCost(t, c)
	for _, q := range []struct {
		args       []string
		ranks      []int
		withScores bool
	}{
		{[]string{"ZREVRANGE", key, "0", "9", "WITHSCORES"}, lb.page(1e300, false, true, 10), true},
		{[]string{"ZRANGE", key, "0", "9"}, lb.page(-1e300, false, false, 10), false},
	} {
		if err := lb.check(c.Do(q.args...), q.ranks, q.withScores); err != nil {
			t.Fatalf("%s: %v", fmtArgs(q.args), err)
		}
	}
	gets, steps = cost.done()
	t.Logf("ZREVRANGE 0 9 and ZRANGE 0 9: %d store lookups, %d iterator steps", gets, steps)
	if gets > 4 || steps > 2*12 {
		t.Fatalf("ZREVRANGE 0 9 and ZRANGE 0 9 did %d lookups and %d iterator steps, want <= 4 and <= 24", gets, steps)
	}
	mid := n/2 + 12345
	ranks := []struct {
		cmd  string
		rank int // of the member asked
		want int64
	}{
		{"ZRANK", mid, int64(mid)},
		{"ZREVRANK", mid, int64(n - 1 - mid)},
		{"ZRANK", 0, 0},
		{"ZREVRANK", n - 5, 4},
	}
	for _, q := range ranks {
		member := leaderMember(int(lb.order[q.rank]))
		cost := startCost(t, c)
		start := time.Now()
		got := c.Do(q.cmd, key, member)
		d := time.Since(start)
		gets, steps := cost.done()
		if got.Type != ':' || got.Int != q.want {
			t.Fatalf("%s %s %s = %s, want %d", q.cmd, key, member, got.String(), q.want)
		}
		t.Logf("%s of the member at rank %d: %d store lookups, %d iterator steps, %v", q.cmd, q.rank, gets, steps, d.Round(time.Microsecond))
	}
	if got := c.Do("ZRANK", key, "no-such-player"); !got.Null {
		t.Fatalf("ZRANK of a missing member = %s", got.String())
	}
	for _, q := range []struct {
		args  []string
		ranks []int
	}{
		{[]string{"ZRANGE", key, strconv.Itoa(mid), strconv.Itoa(mid + 9), "WITHSCORES"}, []int{mid, mid + 1, mid + 2, mid + 3, mid + 4, mid + 5, mid + 6, mid + 7, mid + 8, mid + 9}},
		{[]string{"ZRANGE", key, "-1", "-1", "WITHSCORES"}, []int{n - 1}},
		{[]string{"ZREVRANGE", key, "-1", "-1", "WITHSCORES"}, []int{0}},
	} {
		cost := startCost(t, c)
		if err := lb.check(c.Do(q.args...), q.ranks, true); err != nil {
			t.Fatalf("%s: %v", fmtArgs(q.args), err)
		}
		gets, steps := cost.done()
		t.Logf("%s: %d store lookups, %d iterator steps", fmtArgs(q.args), gets, steps)
	}

	// (d) Writes touch the records of their members: the meta record and
	// one lookup of each member's old score (two allowed).
	moved := []int{int(lb.order[10]), int(lb.order[n/3]), int(lb.order[n-20])}
	removed := []int{int(lb.order[7]), int(lb.order[2*n/3]), int(lb.order[n-3])}
	writes := []struct {
		args    []string
		want    int64
		members int
	}{
		{[]string{"ZADD", key, "150000.5", "newcomer:1", "-150000.5", "newcomer:2"}, 2, 2},
		{[]string{"ZADD", key, "XX", "CH", "200000", leaderMember(moved[0]), "200000.25", leaderMember(moved[1]),
			"200000.5", leaderMember(moved[2])}, 3, 3},
		{[]string{"ZREM", key, leaderMember(removed[0]), leaderMember(removed[1]), leaderMember(removed[2]), "no-such-player"}, 3, 4},
	}
	for _, w := range writes {
		cost := startCost(t, c)
		if got := c.Do(w.args...); got.Type != ':' || got.Int != w.want {
			t.Fatalf("%s = %s, want %d", fmtArgs(w.args), got.String(), w.want)
		}
		gets, steps := cost.done()
		t.Logf("%s: %d store lookups, %d iterator steps", fmtArgs(w.args[:2]), gets, steps)
		if gets > int64(1+2*w.members) || steps > 2 {
			t.Fatalf("%s did %d lookups and %d iterator steps, want <= %d and <= 2: not O(members touched)",
				fmtArgs(w.args), gets, steps, 1+2*w.members)
		}
	}
	if got := c.Do("ZCARD", key); got.Int != n+2-3 {
		t.Fatalf("ZCARD after the writes = %s, want %d", got.String(), n+2-3)
	}
	for _, q := range []struct {
		args []string
		want []string
	}{
		{[]string{"ZRANGEBYSCORE", key, "100000", "+inf", "WITHSCORES"}, []string{"newcomer:1", "150000.5",
			leaderMember(moved[0]), "200000", leaderMember(moved[1]), "200000.25", leaderMember(moved[2]), "200000.5"}},
		{[]string{"ZRANGE", key, "0", "0", "WITHSCORES"}, []string{"newcomer:2", "-150000.5"}},
		{[]string{"ZSCORE", key, leaderMember(removed[1])}, nil},
		{[]string{"ZMSCORE", key, leaderMember(moved[1]), "newcomer:2"}, []string{"200000.25", "-150000.5"}},
	} {
		got := c.Do(q.args...)
		var elems []string
		for _, e := range got.Elems {
			elems = append(elems, e.Str)
		}
		if q.want == nil && !got.Null || q.want != nil && !slices.Equal(elems, q.want) {
			t.Fatalf("%s = %s, want %q", fmtArgs(q.args), got.String(), q.want)
		}
	}
	// The tie groups the moved and removed members left lose just them.
	for _, i := range append(slices.Clone(moved), removed...) {
		sc := fmtScore(leaderScore(i))
		got := c.Do("ZRANGEBYSCORE", key, sc, sc)
		var want []string
		for _, k := range lb.page(leaderScore(i), false, false, n/leaderScoreSpan) {
			if j := int(lb.order[k]); j != i {
				want = append(want, leaderMember(j))
			}
		}
		var elems []string
		for _, e := range got.Elems {
			elems = append(elems, e.Str)
		}
		if !slices.Equal(elems, want) {
			t.Fatalf("ZRANGEBYSCORE %s %s %s = %q, want %q", key, sc, sc, elems, want)
		}
	}

	// (e) It stayed cold throughout.
	if d := infoInt(t, c, "promotions") - promotions; d != 0 {
		t.Fatalf("the leaderboard was promoted (%d promotions)", d)
	}
	if d := infoInt(t, c, "cold_reads") - coldReads; d < scores {
		t.Fatalf("cold_reads grew by %d over %d ZSCOREs of a cold sorted set", d, scores)
	}
	hot := infoInt(t, c, "hot_bytes")
	t.Logf("hot_bytes %d (the set holds %d MB of members and scores)", hot, setBytes>>20)
	if hot > 1<<20 {
		t.Fatalf("hot tier holds %d bytes with a cold %d MB sorted set", hot, setBytes>>20)
	}
	peak, _, err := rss.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak RSS %d MB", peak>>20)
	// --maxmemory 64mb bounds the hot tier, the block cache and the
	// memtables; the rest is the runtime, connection and compaction
	// buffers (about 70 MB in all on the machine it was written on). Held
	// in memory, as a skiplist node and a map entry a member (well over
	// 100 bytes each), the set alone would take some 130 MB more.
	if peak > 200<<20 {
		t.Fatalf("peak RSS %d MB with --maxmemory 64mb", peak>>20)
	}

	// (h) DEL is O(1); the records are reclaimed in the background.
	reclaimed := infoInt(t, c, "reclaimed_versions")
	cost = startCost(t, c)
	if got := c.Do("DEL", key); got.Int != 1 {
		t.Fatalf("DEL = %s", got.String())
	}
	gets, steps = cost.done()
	t.Logf("DEL: %d store lookups, %d iterator steps", gets, steps)
	if gets > 3 || steps > 10 {
		t.Fatalf("DEL of a million-member sorted set did %d lookups and %d iterator steps: not O(1)", gets, steps)
	}
	deadline := time.Now().Add(20 * time.Second)
	for infoInt(t, c, "reclaimed_versions") == reclaimed {
		if time.Now().After(deadline) {
			t.Fatal("the deleted sorted set's records were not reclaimed within 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, q := range [][]string{{"ZCARD", key}, {"EXISTS", key}} {
		if got := c.Do(q...); got.Type != ':' || got.Int != 0 {
			t.Fatalf("%s after DEL = %s", fmtArgs(q), got.String())
		}
	}
	if got := c.Do("ZSCORE", key, leaderMember(1)); !got.Null {
		t.Fatalf("ZSCORE after DEL = %s", got.String())
	}
	t.Logf("test took %v", time.Since(began).Round(time.Millisecond))
}
