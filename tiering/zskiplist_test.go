package tiering

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// zslPair is one (score, member) of the model.
type zslPair struct {
	score  float64
	member string
}

func zslCmp(a, b zslPair) int {
	if c := cmp.Compare(a.score, b.score); c != 0 {
		return c
	}
	return cmp.Compare(a.member, b.member)
}

// zslModel is a sorted slice of pairs plus member → score.
type zslModel struct {
	s      []zslPair
	scores map[string]float64
}

func newZSLModel() *zslModel { return &zslModel{scores: map[string]float64{}} }

func (m *zslModel) insert(p zslPair) {
	i, found := slices.BinarySearchFunc(m.s, p, zslCmp)
	if found {
		panic("model insert of a present pair")
	}
	m.s = slices.Insert(m.s, i, p)
	m.scores[p.member] = p.score
}

func (m *zslModel) delete(p zslPair) bool {
	i, found := slices.BinarySearchFunc(m.s, p, zslCmp)
	if !found {
		return false
	}
	m.s = slices.Delete(m.s, i, i+1)
	delete(m.scores, p.member)
	return true
}

// rank is the 1-based rank of p, 0 if absent.
func (m *zslModel) rank(p zslPair) int {
	i, found := slices.BinarySearchFunc(m.s, p, zslCmp)
	if !found {
		return 0
	}
	return i + 1
}

// zslScorePool holds scores with many duplicates and both infinities.
var zslScorePool = []float64{math.Inf(-1), -1e300, -2.5, -1, 0, 0, 0.5, 1, 1, 1, 3, 7.25, 1e300, math.Inf(1)}

func zslRandScore(rng *rand.Rand) float64 {
	if rng.IntN(5) == 0 {
		return math.Round(rng.NormFloat64()*400) / 100
	}
	return zslScorePool[rng.IntN(len(zslScorePool))]
}

// zslRandMember is a short binary string, often empty or a prefix of
// another, from bytes that include 0x00 and 0xff.
func zslRandMember(rng *rand.Rand) string {
	const alphabet = "\x00ab\x7f\x80\xff"
	n := rng.IntN(3) // short ones are often prefixes of others
	if rng.IntN(2) == 0 {
		n = rng.IntN(8)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b) + strconv.Itoa(rng.IntN(4))[:rng.IntN(2)]
}

// zslNodePair is n as a pair, or a marker for nil.
func zslNodePair(n *zslNode) string {
	if n == nil {
		return "<nil>"
	}
	return fmt.Sprintf("(%v, %q)", n.score, n.member)
}

func zslModelPair(m *zslModel, i int) string {
	if i < 0 || i >= len(m.s) {
		return "<nil>"
	}
	return fmt.Sprintf("(%v, %q)", m.s[i].score, m.s[i].member)
}

// zslCheck verifies z against the model: order both ways, links, spans,
// levels, size, and (if full) rank and byRank of every member.
func zslCheck(t *testing.T, z *zsl, m *zslModel, full bool) {
	t.Helper()
	if z.len() != len(m.s) {
		t.Fatalf("len %d, model %d", z.len(), len(m.s))
	}
	if z.level < 1 || z.level > zslMaxLevel {
		t.Fatalf("level %d", z.level)
	}
	if got, want := zslNodePair(z.first()), zslModelPair(m, 0); got != want {
		t.Fatalf("first %s, want %s", got, want)
	}
	if got, want := zslNodePair(z.last()), zslModelPair(m, len(m.s)-1); got != want {
		t.Fatalf("last %s, want %s", got, want)
	}
	// Forward walk, with backward links and bytes.
	bytes := int64(0)
	i := 0
	var prev *zslNode
	for n := z.first(); n != nil; n = n.next() {
		if i >= len(m.s) || n.score != m.s[i].score || n.member != m.s[i].member {
			t.Fatalf("walk %d: %s, want %s", i, zslNodePair(n), zslModelPair(m, i))
		}
		if n.prev() != prev {
			t.Fatalf("walk %d: prev %s, want %s", i, zslNodePair(n.prev()), zslNodePair(prev))
		}
		if len(n.level) < 1 || len(n.level) > z.level {
			t.Fatalf("walk %d: %d levels, list level %d", i, len(n.level), z.level)
		}
		bytes += zslNodeSize(n)
		prev, i = n, i+1
	}
	if i != len(m.s) {
		t.Fatalf("walk saw %d nodes, model %d", i, len(m.s))
	}
	// Backward walk.
	i = len(m.s) - 1
	for n := z.last(); n != nil; n = n.prev() {
		if i < 0 || n.member != m.s[i].member {
			t.Fatalf("backward walk %d: %s, want %s", i, zslNodePair(n), zslModelPair(m, i))
		}
		i--
	}
	if i != -1 {
		t.Fatalf("backward walk stopped at %d", i)
	}
	if got, want := z.size(), bytes+zslNodeOverhead+zslLevelOverhead*zslMaxLevel; got != want {
		t.Fatalf("size %d, want %d", got, want)
	}
	// Spans: along each level in use they sum to len, and each span is the
	// distance in ranks to the node it links to.
	ranks := map[*zslNode]int{z.header: 0}
	r := 0
	for n := z.first(); n != nil; n = n.next() {
		r++
		ranks[n] = r
	}
	for lvl := 0; lvl < zslMaxLevel; lvl++ {
		if lvl >= z.level {
			if z.header.level[lvl].forward != nil {
				t.Fatalf("header links at level %d above list level %d", lvl, z.level)
			}
			continue
		}
		sum := 0
		for p := z.header; p != nil; p = p.level[lvl].forward {
			sum += p.level[lvl].span
			if f := p.level[lvl].forward; f != nil && ranks[f]-ranks[p] != p.level[lvl].span {
				t.Fatalf("level %d: span %d from rank %d to rank %d", lvl, p.level[lvl].span, ranks[p], ranks[f])
			}
			if f := p.level[lvl].forward; f != nil && len(f.level) <= lvl {
				t.Fatalf("level %d links to a node with %d levels", lvl, len(f.level))
			}
		}
		if sum != z.len() {
			t.Fatalf("level %d: spans sum to %d, len %d", lvl, sum, z.len())
		}
	}
	if z.level > 1 && z.header.level[z.level-1].forward == nil {
		t.Fatalf("top level %d is empty", z.level)
	}
	if !full {
		return
	}
	for i, p := range m.s {
		if got := z.rank(p.score, p.member); got != i+1 {
			t.Fatalf("rank(%v, %q) = %d, want %d", p.score, p.member, got, i+1)
		}
		if n := z.byRank(i + 1); n == nil || n.member != p.member || n.score != p.score {
			t.Fatalf("byRank(%d) = %s, want %s", i+1, zslNodePair(n), zslModelPair(m, i))
		}
	}
}

// zslRandRange is a score range with bounds from the pool or random, each
// inclusive or exclusive.
func zslRandRange(rng *rand.Rand) ScoreRange {
	return ScoreRange{Min: zslRandScore(rng), Max: zslRandScore(rng), MinEx: rng.IntN(2) == 0, MaxEx: rng.IntN(2) == 0}
}

// zslCheckRange compares firstInRange and lastInRange with a scan of the
// model and reports whether the range holds a member.
func zslCheckRange(t *testing.T, z *zsl, m *zslModel, r ScoreRange) bool {
	t.Helper()
	first, last := -1, -1
	for i, p := range m.s {
		if r.Contains(p.score) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if got, want := zslNodePair(z.firstInRange(&r)), zslModelPair(m, first); got != want {
		t.Fatalf("firstInRange(%+v) = %s, want %s", r, got, want)
	}
	if got, want := zslNodePair(z.lastInRange(&r)), zslModelPair(m, last); got != want {
		t.Fatalf("lastInRange(%+v) = %s, want %s", r, got, want)
	}
	return first >= 0
}

// zslRandLexBound is "-", "+" or a random member, inclusive or exclusive.
func zslRandLexBound(rng *rand.Rand) LexBound {
	switch rng.IntN(8) {
	case 0:
		return LexBound{Inf: -1}
	case 1:
		return LexBound{Inf: 1}
	}
	return LexBound{Value: zslRandMember(rng), Exclusive: rng.IntN(2) == 0}
}

// zslCheckLexRange is zslCheckRange for lex ranges.
func zslCheckLexRange(t *testing.T, z *zsl, m *zslModel, r LexRange) bool {
	t.Helper()
	first, last := -1, -1
	for i, p := range m.s {
		if r.Contains(p.member) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if got, want := zslNodePair(z.firstInLexRange(&r)), zslModelPair(m, first); got != want {
		t.Fatalf("firstInLexRange(%+v) = %s, want %s", r, got, want)
	}
	if got, want := zslNodePair(z.lastInLexRange(&r)), zslModelPair(m, last); got != want {
		t.Fatalf("lastInLexRange(%+v) = %s, want %s", r, got, want)
	}
	return first >= 0
}

// zslPick returns a present pair at random; the model must not be empty.
func zslPick(rng *rand.Rand, m *zslModel) zslPair { return m.s[rng.IntN(len(m.s))] }

// TestZSLAgainstModel drives random operations on a skiplist and a sorted
// slice and compares every answer, with periodic full checks. The list
// grows to about maxLen, then drains to empty.
func TestZSLAgainstModel(t *testing.T) {
	cases := []struct {
		name   string
		seed   uint64
		ops    int
		maxLen int
		lex    bool // all scores equal, lex ranges checked
	}{
		{"small", 1, 20000, 40, false},
		{"medium", 2, 30000, 1500, false},
		{"lex-small", 3, 20000, 40, true},
		{"lex-medium", 4, 30000, 1500, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 0x5a5e))
			score := func() float64 {
				if tc.lex {
					return 1.5
				}
				return zslRandScore(rng)
			}
			z, m := newZSL(), newZSLModel()
			zslCheck(t, z, m, true)
			var peak, inPlace, moved, maxLevel, rangeHits, rangeMisses int
			for op := 0; op < tc.ops; op++ {
				peak, maxLevel = max(peak, len(m.s)), max(maxLevel, z.level)
				growing := op < tc.ops*3/4
				switch k := rng.IntN(100); {
				case k < 30 && growing && len(m.s) < tc.maxLen:
					p := zslPair{score(), zslRandMember(rng)}
					if _, ok := m.scores[p.member]; ok {
						// Present: rank finds it, and the model agrees.
						if z.rank(m.scores[p.member], p.member) == 0 {
							t.Fatalf("op %d: rank of present %q is 0", op, p.member)
						}
						// Short members run out: insert a longer one.
						p.member += zslRandMember(rng) + zslRandMember(rng) + string(rune(rng.IntN(0x110000)))
						if _, ok := m.scores[p.member]; ok {
							continue
						}
					}
					n := z.insert(p.score, p.member)
					if n.score != p.score || n.member != p.member {
						t.Fatalf("op %d: insert returned %s", op, zslNodePair(n))
					}
					m.insert(p)
				case k < 45:
					// Delete: present, or absent (wrong score or unknown member).
					var p zslPair
					if len(m.s) > 0 && rng.IntN(3) > 0 {
						p = zslPick(rng, m)
					} else {
						p = zslPair{score(), zslRandMember(rng)}
						if s, ok := m.scores[p.member]; ok && s == p.score {
							p.score = math.Nextafter(p.score, math.Inf(1))
							if p.score == s { // +Inf
								p.score = 0
							}
						}
					}
					if got, want := z.delete(p.score, p.member), m.delete(p); got != want {
						t.Fatalf("op %d: delete(%v, %q) = %v, want %v", op, p.score, p.member, got, want)
					}
				case k < 65 && len(m.s) > 0:
					// Update: to a random score, to a neighbour's score (move
					// within equal scores), or nudge in place.
					p := zslPick(rng, m)
					var s float64
					switch rng.IntN(3) {
					case 0:
						s = score()
					case 1:
						s = zslPick(rng, m).score
					default:
						s = p.score
						if !tc.lex && !math.IsInf(s, 0) {
							s = math.Nextafter(s, math.Inf(2*rng.IntN(2)-1))
						}
					}
					r := m.rank(p)
					before, after := z.byRank(r-1), z.byRank(r+1)
					old := z.byRank(r)
					n := z.updateScore(p.score, p.member, s)
					if n.score != s || n.member != p.member {
						t.Fatalf("op %d: updateScore returned %s", op, zslNodePair(n))
					}
					if n != old {
						t.Fatalf("op %d: updateScore did not reuse the node", op)
					}
					m.delete(p)
					m.insert(zslPair{s, p.member})
					// The neighbours are the same when the order did not change.
					if nr := m.rank(zslPair{s, p.member}); nr != r {
						moved++
					} else if n.prev() != before || n.next() != after {
						t.Fatalf("op %d: in-place update changed neighbours", op)
					} else {
						inPlace++
					}
				case k < 75:
					// Rank of a present or absent pair, byRank of any rank.
					p := zslPair{score(), zslRandMember(rng)}
					if len(m.s) > 0 && rng.IntN(2) == 0 {
						p = zslPick(rng, m)
					}
					if got, want := z.rank(p.score, p.member), m.rank(p); got != want {
						t.Fatalf("op %d: rank(%v, %q) = %d, want %d", op, p.score, p.member, got, want)
					}
					r := rng.IntN(len(m.s)+3) - 1
					if got, want := zslNodePair(z.byRank(r)), zslModelPair(m, r-1); got != want {
						t.Fatalf("op %d: byRank(%d) = %s, want %s", op, r, got, want)
					}
				case k < 90:
					var hit bool
					if tc.lex {
						hit = zslCheckLexRange(t, z, m, LexRange{Min: zslRandLexBound(rng), Max: zslRandLexBound(rng)})
					} else {
						hit = zslCheckRange(t, z, m, zslRandRange(rng))
					}
					if hit {
						rangeHits++
					} else {
						rangeMisses++
					}
				default:
					// Walk a few steps from a random node both ways.
					if len(m.s) == 0 {
						continue
					}
					r := rng.IntN(len(m.s)) + 1
					n := z.byRank(r)
					for i := r; i <= min(r+5, len(m.s)); i++ {
						if got, want := zslNodePair(n), zslModelPair(m, i-1); got != want {
							t.Fatalf("op %d: next walk at %d: %s, want %s", op, i, got, want)
						}
						n = n.next()
					}
					n = z.byRank(r)
					for i := r; i >= max(r-5, 1); i-- {
						if got, want := zslNodePair(n), zslModelPair(m, i-1); got != want {
							t.Fatalf("op %d: prev walk at %d: %s, want %s", op, i, got, want)
						}
						n = n.prev()
					}
				}
				if op%500 == 0 {
					zslCheck(t, z, m, true)
				}
			}
			zslCheck(t, z, m, true)
			t.Logf("peak len %d, max level %d, updates in place %d, moved %d, ranges with members %d, without %d",
				peak, maxLevel, inPlace, moved, rangeHits, rangeMisses)
			if peak < tc.maxLen || inPlace == 0 || moved == 0 && !tc.lex || rangeHits < 100 || rangeMisses < 100 {
				t.Fatalf("run did not exercise enough: peak %d of %d, in place %d, moved %d", peak, tc.maxLen, inPlace, moved)
			}
			// Drain the rest in random order.
			for len(m.s) > 0 {
				p := zslPick(rng, m)
				if !z.delete(p.score, p.member) {
					t.Fatalf("drain: delete(%v, %q) not found", p.score, p.member)
				}
				m.delete(p)
				zslCheck(t, z, m, len(m.s)%97 == 0)
			}
			if z.level != 1 || z.first() != nil || z.last() != nil {
				t.Fatalf("drained list: level %d, first %s, last %s", z.level, zslNodePair(z.first()), zslNodePair(z.last()))
			}
			if got, want := z.size(), newZSL().size(); got != want {
				t.Fatalf("drained size %d, empty size %d", got, want)
			}
		})
	}
}

// TestZSLEmpty checks every query on an empty list.
func TestZSLEmpty(t *testing.T) {
	z := newZSL()
	if z.len() != 0 || z.first() != nil || z.last() != nil {
		t.Fatal("empty list has members")
	}
	for _, r := range []int{-1, 0, 1, 2} {
		if z.byRank(r) != nil {
			t.Fatalf("byRank(%d) on empty list", r)
		}
	}
	if z.rank(0, "") != 0 || z.delete(0, "") {
		t.Fatal("empty list finds a member")
	}
	all := ScoreRange{Min: math.Inf(-1), Max: math.Inf(1)}
	if z.firstInRange(&all) != nil || z.lastInRange(&all) != nil {
		t.Fatal("empty list has a node in range")
	}
	lex := LexRange{Min: LexBound{Inf: -1}, Max: LexBound{Inf: 1}}
	if z.firstInLexRange(&lex) != nil || z.lastInLexRange(&lex) != nil {
		t.Fatal("empty list has a node in lex range")
	}
	if z.size() <= 0 {
		t.Fatalf("size %d", z.size())
	}
}

// TestZSLSingle checks one member, including its removal.
func TestZSLSingle(t *testing.T) {
	z := newZSL()
	n := z.insert(2, "x")
	if z.first() != n || z.last() != n || n.next() != nil || n.prev() != nil {
		t.Fatal("single node links")
	}
	if z.rank(2, "x") != 1 || z.rank(2, "y") != 0 || z.rank(3, "x") != 0 || z.byRank(1) != n || z.byRank(2) != nil {
		t.Fatal("single node rank")
	}
	if got, want := z.size(), newZSL().size()+1+zslNodeOverhead+zslLevelOverhead*int64(len(n.level)); got != want {
		t.Fatalf("size %d, want %d", got, want)
	}
	if z.delete(3, "x") || z.delete(2, "y") {
		t.Fatal("delete with wrong score or member")
	}
	if m := z.updateScore(2, "x", -5); m != n || z.rank(-5, "x") != 1 {
		t.Fatal("single node update")
	}
	if !z.delete(-5, "x") || z.len() != 0 || z.first() != nil || z.last() != nil {
		t.Fatal("single node delete")
	}
}

// TestZSLScoreRanges checks range ends against a fixed list, including
// empty ranges and infinite bounds.
func TestZSLScoreRanges(t *testing.T) {
	inf := math.Inf(1)
	z := newZSL()
	for _, p := range []zslPair{{-inf, "a"}, {1, "b"}, {1, "c"}, {2, ""}, {3, "d"}, {inf, "e"}} {
		z.insert(p.score, p.member)
	}
	cases := []struct {
		r           ScoreRange
		first, last string // "<nil>" for none
	}{
		{ScoreRange{Min: -inf, Max: inf}, "a", "e"},
		{ScoreRange{Min: -inf, Max: inf, MinEx: true, MaxEx: true}, "b", "d"},
		{ScoreRange{Min: 1, Max: 1}, "b", "c"},
		{ScoreRange{Min: 1, Max: 2, MinEx: true}, "", ""},
		{ScoreRange{Min: 1, Max: 2, MaxEx: true}, "b", "c"},
		{ScoreRange{Min: 1, Max: 1, MinEx: true}, "<nil>", "<nil>"},
		{ScoreRange{Min: 1, Max: 1, MaxEx: true}, "<nil>", "<nil>"},
		{ScoreRange{Min: 3, Max: 1}, "<nil>", "<nil>"},
		{ScoreRange{Min: 1.5, Max: 1.9}, "<nil>", "<nil>"},
		{ScoreRange{Min: inf, Max: inf}, "e", "e"},
		{ScoreRange{Min: -inf, Max: -inf}, "a", "a"},
		{ScoreRange{Min: 3, Max: inf, MinEx: true, MaxEx: true}, "<nil>", "<nil>"},
		{ScoreRange{Min: -10, Max: 0}, "<nil>", "<nil>"},
	}
	for _, tc := range cases {
		name := func(n *zslNode) string {
			if n == nil {
				return "<nil>"
			}
			return n.member
		}
		if got := name(z.firstInRange(&tc.r)); got != tc.first {
			t.Errorf("firstInRange(%+v) = %q, want %q", tc.r, got, tc.first)
		}
		if got := name(z.lastInRange(&tc.r)); got != tc.last {
			t.Errorf("lastInRange(%+v) = %q, want %q", tc.r, got, tc.last)
		}
	}
}

// TestZSLLexRanges checks lex range ends on a list of equal scores with
// an empty member, prefixes and binary members.
func TestZSLLexRanges(t *testing.T) {
	z := newZSL()
	for _, s := range []string{"", "\x00", "a", "ab", "abc", "b", "\xff"} {
		z.insert(0, s)
	}
	lo, hi := LexBound{Inf: -1}, LexBound{Inf: 1}
	in := func(s string) LexBound { return LexBound{Value: s} }
	ex := func(s string) LexBound { return LexBound{Value: s, Exclusive: true} }
	cases := []struct {
		min, max    LexBound
		first, last string
		none        bool
	}{
		{min: lo, max: hi, first: "", last: "\xff"},
		{min: in(""), max: hi, first: "", last: "\xff"},
		{min: ex(""), max: ex("\xff"), first: "\x00", last: "b"},
		{min: in("a"), max: in("abc"), first: "a", last: "abc"},
		{min: ex("a"), max: ex("abc"), first: "ab", last: "ab"},
		{min: in("aa"), max: in("az"), first: "ab", last: "abc"},
		{min: ex("ab"), max: ex("abc"), none: true},
		{min: in("b"), max: in("a"), none: true},
		{min: in("a"), max: ex("a"), none: true},
		{min: hi, max: hi, none: true},
		{min: lo, max: lo, none: true},
		{min: hi, max: lo, none: true},
		{min: lo, max: ex(""), none: true},
		{min: lo, max: in(""), first: "", last: ""},
		{min: ex("\xff"), max: hi, none: true},
		{min: in("c"), max: hi, first: "\xff", last: "\xff"},
	}
	for _, tc := range cases {
		r := LexRange{Min: tc.min, Max: tc.max}
		f, l := z.firstInLexRange(&r), z.lastInLexRange(&r)
		if tc.none {
			if f != nil || l != nil {
				t.Errorf("%+v: got %s .. %s, want none", r, zslNodePair(f), zslNodePair(l))
			}
			continue
		}
		if f == nil || l == nil || f.member != tc.first || l.member != tc.last {
			t.Errorf("%+v: got %s .. %s, want %q .. %q", r, zslNodePair(f), zslNodePair(l), tc.first, tc.last)
		}
	}
}

// TestZSLUpdateScore checks in-place updates and moves both ways.
func TestZSLUpdateScore(t *testing.T) {
	cases := []struct {
		name      string
		member    string
		cur, to   float64
		wantOrder string
	}{
		{"in place up", "c", 3, 3.5, "abcde"},
		{"in place down", "c", 3, 2.5, "abcde"},
		{"same score", "c", 3, 3, "abcde"},
		{"tie before next member", "b", 2, 4, "acbde"}, // (4,"b") sorts before (4,"d")
		{"move to end", "a", 1, 10, "bcdea"},
		{"move to start", "e", 5, -1, "eabcd"},
		{"tie after previous member", "d", 4, 2, "abdce"}, // (2,"d") after (2,"b")
		{"to +inf", "b", 2, math.Inf(1), "acdeb"},
		{"to -inf", "d", 4, math.Inf(-1), "dabce"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			z := newZSL()
			for i, s := range "abcde" {
				z.insert(float64(i+1), string(s))
			}
			old := z.byRank(z.rank(tc.cur, tc.member))
			n := z.updateScore(tc.cur, tc.member, tc.to)
			if n != old || n.score != tc.to {
				t.Fatalf("updateScore returned %s (reused %v)", zslNodePair(n), n == old)
			}
			got := ""
			for x := z.first(); x != nil; x = x.next() {
				got += x.member
			}
			if got != tc.wantOrder {
				t.Fatalf("order %q, want %q", got, tc.wantOrder)
			}
			m := newZSLModel()
			for x := z.first(); x != nil; x = x.next() {
				m.insert(zslPair{x.score, x.member})
			}
			zslCheck(t, z, m, true)
		})
	}
	t.Run("absent panics", func(t *testing.T) {
		z := newZSL()
		z.insert(1, "a")
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		z.updateScore(2, "a", 3)
	})
}

// TestZSLRandomLevel checks the level distribution: 1/4 per level, capped.
func TestZSLRandomLevel(t *testing.T) {
	const n = 200000
	var counts [zslMaxLevel + 1]int
	for range n {
		l := zslRandomLevel()
		if l < 1 || l > zslMaxLevel {
			t.Fatalf("level %d", l)
		}
		counts[l]++
	}
	// Expected fractions 0.75, 0.1875, 0.047; sd at n=200000 is under 0.001.
	for l, want := range map[int]float64{1: 0.75, 2: 0.1875, 3: 0.046875} {
		if got := float64(counts[l]) / n; math.Abs(got-want) > 0.01 {
			t.Errorf("level %d: fraction %.4f, want %.4f", l, got, want)
		}
	}
}

// TestZSLNodeAllocs checks that a node with up to four levels is one
// allocation.
func TestZSLNodeAllocs(t *testing.T) {
	for level := 1; level <= 6; level++ {
		want := 1.0
		if level > 4 {
			want = 2
		}
		var n *zslNode
		got := testing.AllocsPerRun(100, func() { n = newZSLNode(level, 1, "m") })
		if got != want || len(n.level) != level || cap(n.level) != level {
			t.Errorf("level %d: %v allocs, %d levels (cap %d); want %v", level, got, len(n.level), cap(n.level), want)
		}
	}
}

// zslBenchList is a list of n members with random scores.
func zslBenchList(n int, rng *rand.Rand) (*zsl, []zslPair) {
	z := newZSL()
	ps := make([]zslPair, n)
	for i := range ps {
		ps[i] = zslPair{float64(rng.IntN(1 << 20)), "member:" + strconv.Itoa(i)}
		z.insert(ps[i].score, ps[i].member)
	}
	return z, ps
}

// BenchmarkZSLInsert inserts into a list of 100k to 200k members.
func BenchmarkZSLInsert(b *testing.B) {
	const base = 100000
	rng := rand.New(rand.NewPCG(1, 2))
	z, _ := zslBenchList(base, rng)
	extra := make([]string, base)
	for i := range extra {
		extra[i] = "extra:" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % base
		if j == 0 && i > 0 {
			b.StopTimer()
			z, _ = zslBenchList(base, rng)
			b.StartTimer()
		}
		z.insert(float64(rng.IntN(1<<20)), extra[j])
	}
}

// BenchmarkZSLRank ranks random members of a 100k-member list.
func BenchmarkZSLRank(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	z, ps := zslBenchList(100000, rng)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := ps[rng.IntN(len(ps))]
		if z.rank(p.score, p.member) == 0 {
			b.Fatal("member not found")
		}
	}
}

// benchZSLUpdate moves random members of an n-member skiplist to random
// scores, as ZADD -r n of a hot sorted set does.
func benchZSLUpdate(b *testing.B, n int) {
	z := newZSL()
	scores := make([]float64, n)
	members := make([]string, n)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range n {
		members[i] = fmt.Sprintf("element:%06d", i)
		scores[i] = float64(r.IntN(n))
		z.insert(scores[i], members[i])
	}
	b.ResetTimer()
	for range b.N {
		i := r.IntN(n)
		s := float64(r.IntN(n))
		z.updateScore(scores[i], members[i], s)
		scores[i] = s
	}
}

func BenchmarkZSLUpdate4k(b *testing.B)   { benchZSLUpdate(b, 4000) }
func BenchmarkZSLUpdate100k(b *testing.B) { benchZSLUpdate(b, 100_000) }
