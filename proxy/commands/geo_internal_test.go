package commands

import (
	"cmp"
	"math/rand"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/spillway/spillway/proxy/geohash"
	"github.com/spillway/spillway/tiering"
)

// recordingSet is a sorted set in memory that records the score ranges a
// search reads and how many members it visits.
type recordingSet struct {
	members []tiering.Member // by score, then member
	ranges  []tiering.ScoreRange
	visited int
}

func (s *recordingSet) RangeByScore(r *tiering.ScoreRange, rev bool, offset, limit int64, fn func(member []byte, score float64) bool) error {
	s.ranges = append(s.ranges, *r)
	i := sort.Search(len(s.members), func(i int) bool { return s.members[i].Score >= r.Min })
	for ; i < len(s.members); i++ {
		m := s.members[i]
		if m.Score > r.Max || r.MaxEx && m.Score == r.Max {
			break
		}
		s.visited++
		if !fn([]byte(m.Member), m.Score) {
			break
		}
	}
	return nil
}

// randomGeoSet holds n points spread over latitudes ±70.
func randomGeoSet(t *testing.T, rng *rand.Rand, n int) *recordingSet {
	t.Helper()
	s := &recordingSet{}
	for i := range n {
		score, ok := geohash.Score(rng.Float64()*360-180, rng.Float64()*140-70)
		if !ok {
			t.Fatal("a point within the limits did not encode")
		}
		s.members = append(s.members, tiering.Member{Member: "p" + strconv.Itoa(i), Score: float64(score)})
	}
	slices.SortFunc(s.members, func(a, b tiering.Member) int {
		return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.Member, b.Member))
	})
	return s
}

// TestGeoSearchReadsCoveringCellsOnly: a search reads the score ranges of
// the cells covering its area and nothing else, and finds every point of
// the area (checked against a scan of the whole set).
func TestGeoSearchReadsCoveringCellsOnly(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	set := randomGeoSet(t, rng, 8000)
	for i := range 100 {
		q := geoQuery{shape: geohash.Shape{
			Lon: rng.Float64()*360 - 180, Lat: rng.Float64()*120 - 60,
			Radius: 100 + rng.Float64()*800, Conversion: 1000,
		}}
		if i%2 == 1 {
			q.shape.Box, q.shape.Width, q.shape.Height = true, q.shape.Radius*2, q.shape.Radius
		}
		set.ranges, set.visited = nil, 0
		got, err := q.run(set)
		if err != nil {
			t.Fatal(err)
		}
		cover := q.shape.Cover()
		want := cover.Ranges()
		if len(set.ranges) != len(want) {
			t.Fatalf("search %d read %d ranges; the cover has %d", i, len(set.ranges), len(want))
		}
		for k, r := range set.ranges {
			if r.Min != float64(want[k].Min) || r.Max != float64(want[k].Max) || r.MinEx || !r.MaxEx {
				t.Fatalf("search %d: range %d is %+v; want [%d, %d)", i, k, r, want[k].Min, want[k].Max)
			}
		}
		if set.visited > len(set.members)/10 {
			t.Errorf("search %d visited %d of %d members", i, set.visited, len(set.members))
		}
		var all []string
		for _, m := range set.members {
			if _, _, _, ok := q.shape.Within(m.Score); ok {
				all = append(all, m.Member)
			}
		}
		var found []string
		for _, p := range got {
			found = append(found, p.member)
		}
		slices.Sort(all)
		slices.Sort(found)
		if !slices.Equal(all, found) {
			t.Errorf("search %d (%+v) found %v; the whole set holds %v", i, q.shape, found, all)
		}
	}
}

// TestGeoSearchAnyStopsEarly: with COUNT n ANY a search stops reading as
// soon as it has n points.
func TestGeoSearchAnyStopsEarly(t *testing.T) {
	set := randomGeoSet(t, rand.New(rand.NewSource(3)), 5000)
	q := geoQuery{shape: geohash.Shape{Lon: 0, Lat: 0, Radius: 20000, Conversion: 1000}, any: true, count: 3}
	got, err := q.run(set)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || set.visited > 10 {
		t.Errorf("found %d points, visited %d members", len(got), set.visited)
	}
}

// TestPartialSort: the first n elements are the n smallest, in order,
// whatever the input (ties included); the rest is a permutation.
func TestPartialSort(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for range 2000 {
		n := rng.Intn(120)
		s := make([]int, n)
		for i := range s {
			s[i] = rng.Intn(1 + rng.Intn(50))
		}
		sorted := slices.Clone(s)
		slices.Sort(sorted)
		lo := 0
		hi := 0
		if n > 0 {
			hi = rng.Intn(n)
		}
		got := slices.Clone(s)
		partialSort(got, func(a, b *int) int { return cmp.Compare(*a, *b) }, lo, hi)
		if n > 0 && !slices.Equal(got[:hi+1], sorted[:hi+1]) {
			t.Fatalf("partialSort(%v, 0, %d) = %v", s, hi, got)
		}
		slices.Sort(got)
		if !slices.Equal(got, sorted) {
			t.Fatalf("partialSort(%v) lost elements: %v", s, got)
		}
	}
}
