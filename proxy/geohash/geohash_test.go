package geohash

import (
	"math"
	"strings"
	"testing"
)

// The expected values below were read from a real redis-server 7.0.15
// (GEOADD, ZSCORE, GEOPOS, GEOHASH, GEODIST).

func TestScoreAndDecode(t *testing.T) {
	cases := []struct {
		lon, lat float64
		score    uint64
		pos      [2]string
		hash     string
	}{
		{13.361389, 38.115556, 3479099956230698, [2]string{"13.36138933897018433", "38.11555639549629859"}, "sqc8b49rny0"},
		{15.087269, 37.502669, 3479447370796909, [2]string{"15.08726745843887329", "37.50266842333162032"}, "sqdtr74hyu0"},
	}
	for _, c := range cases {
		s, ok := Score(c.lon, c.lat)
		if !ok || s != c.score {
			t.Errorf("Score(%v, %v) = %d, %v; want %d", c.lon, c.lat, s, ok, c.score)
		}
		lon, lat := DecodeScore(float64(s))
		if got := [2]string{string(AppendHuman(nil, lon)), string(AppendHuman(nil, lat))}; got != c.pos {
			t.Errorf("DecodeScore(%d) = %v; want %v", s, got, c.pos)
		}
		if got := string(AppendString(nil, float64(s))); got != c.hash {
			t.Errorf("AppendString(%d) = %q; want %q", s, got, c.hash)
		}
	}
	if _, ok := Score(180.0001, 0); ok {
		t.Error("Score accepted a longitude beyond 180")
	}
	if _, ok := Score(0, 85.06); ok {
		t.Error("Score accepted a latitude beyond 85.05112878")
	}
}

// TestDecodeAnyScore: scores ZADD can put in a geo set decode as Redis
// decodes them (its x86-64 conversion to 64 bits, then the clamping).
func TestDecodeAnyScore(t *testing.T) {
	cases := []struct {
		score float64
		pos   [2]string
	}{
		{-1, [2]string{"180", "85.0511287799999991"}},
		{1e20, [2]string{"-179.99999731779098511", "-85.05112751263942528"}},
		{math.Inf(1), [2]string{"-179.99999731779098511", "-85.05112751263942528"}},
		{math.Inf(-1), [2]string{"180", "-85.05112751263942528"}},
		{9007199254740992, [2]string{"180", "-85.05112751263942528"}},
	}
	for _, c := range cases {
		lon, lat := DecodeScore(c.score)
		if got := [2]string{string(AppendHuman(nil, lon)), string(AppendHuman(nil, lat))}; got != c.pos {
			t.Errorf("DecodeScore(%v) = %v; want %v", c.score, got, c.pos)
		}
	}
	if got := string(AppendString(nil, -1)); got != "bp05b5048p0" {
		t.Errorf("AppendString(-1) = %q", got)
	}
}

func TestDistance(t *testing.T) {
	palermo, catania := 3479099956230698.0, 3479447370796909.0
	lon1, lat1 := DecodeScore(palermo)
	lon2, lat2 := DecodeScore(catania)
	for _, c := range []struct {
		conv float64
		want string
	}{{1, "166274.1516"}, {1000, "166.2742"}, {1609.34, "103.3182"}, {0.3048, "545518.8700"}} {
		if got := string(AppendDistance(nil, Distance(lon1, lat1, lon2, lat2)/c.conv)); got != c.want {
			t.Errorf("distance / %v = %s; want %s", c.conv, got, c.want)
		}
	}
	if d := Distance(lon1, lat1, lon1, lat1); d != 0 {
		t.Errorf("distance to itself = %v", d)
	}
}

func TestAppendDistance(t *testing.T) {
	for _, c := range []struct {
		d    float64
		want string
	}{
		{0, "0.0000"}, {math.Copysign(0, -1), "0.0000"}, {0.00004, "0.0000"}, {0.00005, "0.0000"},
		{0.00015, "0.0001"} /* 1.4999999999999998 */, {0.00025, "0.0002"} /* 2.5, to even */, {0.5, "0.5000"}, {12.34567, "12.3457"}, {1e6, "1000000.0000"},
		{math.NaN(), "-922337203685477.5808"}, {1e300, "-922337203685477.5808"}, {-1.5, "-1.5000"},
	} {
		if got := string(AppendDistance(nil, c.d)); got != c.want {
			t.Errorf("AppendDistance(%v) = %s; want %s", c.d, got, c.want)
		}
	}
}

func TestAppendHumanAndFixed(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{{0, "0"}, {math.Copysign(0, -1), "0"}, {1.5, "1.5"}, {-180, "-180"}, {math.Inf(-1), "-inf"}, {1e-18, "0"}, {-1e-18, "0"}} {
		if got := string(AppendHuman(nil, c.f)); got != c.want {
			t.Errorf("AppendHuman(%v) = %s; want %s", c.f, got, c.want)
		}
	}
	for _, c := range []struct {
		f    float64
		want string
	}{{200, "200.000000"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {-0.0000005, "-0.000000"}} {
		if got := string(AppendFixed6(nil, c.f)); got != c.want {
			t.Errorf("AppendFixed6(%v) = %s; want %s", c.f, got, c.want)
		}
	}
}

// TestEstimateSteps: 1 m doubles 25 times to pass 20037726.37 (step 26,
// less 2); 1 km 15 times; one less beyond 66°, two beyond 80°.
func TestEstimateSteps(t *testing.T) {
	for _, c := range []struct {
		r, lat float64
		want   uint8
	}{{0, 0, 26}, {1, 0, 24}, {1000, 0, 14}, {1000, 70, 13}, {1000, -81, 12}, {1e7, 0, 1}, {math.Inf(1), 0, 1}, {5e-324, 0, 26}} {
		if got := EstimateSteps(c.r, c.lat); got != c.want {
			t.Errorf("EstimateSteps(%v, %v) = %d; want %d", c.r, c.lat, got, c.want)
		}
	}
}

// TestNeighbors: the eight neighbours of a cell are the cells one step
// away in each direction, wrapping around in longitude.
func TestNeighbors(t *testing.T) {
	h, _ := Encode(wgs84Lon, wgs84Lat, 13.361389, 38.115556, 10)
	a, _ := Decode(wgs84Lon, wgs84Lat, h)
	n := Neighbors(h)
	dlon, dlat := a.Lon.Max-a.Lon.Min, a.Lat.Max-a.Lat.Min
	want := map[int][2]float64{North: {0, 1}, South: {0, -1}, East: {1, 0}, West: {-1, 0},
		NorthEast: {1, 1}, NorthWest: {-1, 1}, SouthEast: {1, -1}, SouthWest: {-1, -1}}
	for d, off := range want {
		b, _ := Decode(wgs84Lon, wgs84Lat, n[d])
		if math.Abs(b.Lon.Min-(a.Lon.Min+off[0]*dlon)) > 1e-9 || math.Abs(b.Lat.Min-(a.Lat.Min+off[1]*dlat)) > 1e-9 {
			t.Errorf("neighbour %d: %+v; cell %+v", d, b, a)
		}
	}
	edge, _ := Encode(wgs84Lon, wgs84Lat, 179.9, 0, 4)
	east, _ := Decode(wgs84Lon, wgs84Lat, Neighbors(edge)[East])
	if east.Lon.Min != -180 {
		t.Errorf("east of the last column: %+v", east)
	}
}

// TestRangesSkipRepeats: at step 1 several neighbours are the same cell;
// each is read once after the cell before it (as Redis), and every range
// is a cell's scores.
func TestRangesSkipRepeats(t *testing.T) {
	s := Shape{Lon: 0, Lat: 0, Radius: 1e7, Conversion: 1}
	c := s.Cover()
	if c.Center.Step != 1 {
		t.Fatalf("step %d", c.Center.Step)
	}
	rs := c.Ranges()
	if len(rs) == 0 || len(rs) > 9 {
		t.Fatalf("ranges %v", rs)
	}
	for i, r := range rs {
		if r.Max <= r.Min || r.Max-r.Min != 1<<50 {
			t.Errorf("range %d: %+v", i, r)
		}
		if i > 1 && r == rs[i-1] {
			t.Errorf("range %d repeats the one before", i)
		}
	}
}

// TestWithinBox: a box holds points up to half its sides from the centre.
func TestWithinBox(t *testing.T) {
	s := Shape{Lon: 0, Lat: 0, Box: true, Width: 200, Height: 100, Conversion: 1000}
	in, _ := Score(0.8, 0.4)
	out, _ := Score(0.95, 0)
	if _, _, d, ok := s.Within(float64(in)); !ok || d <= 0 {
		t.Errorf("(0.8, 0.4) not in the box: %v %v", d, ok)
	}
	if _, _, _, ok := s.Within(float64(out)); ok {
		t.Error("(0.95, 0) in the box")
	}
}

// FuzzEncodeDecode: any point within the limits encodes to a 52-bit score
// whose decoded centre is within half a cell of the point, re-encodes to
// the same score, and has an 11-character geohash.
func FuzzEncodeDecode(f *testing.F) {
	f.Add(13.361389, 38.115556)
	f.Add(-180.0, -85.05112878)
	f.Add(180.0, 85.05112878)
	f.Add(0.0, 0.0)
	f.Fuzz(func(t *testing.T, lon, lat float64) {
		s, ok := Score(lon, lat)
		inside := lon >= LonMin && lon <= LonMax && lat >= LatMin && lat <= LatMax
		if ok != inside {
			t.Fatalf("Score(%v, %v) ok = %v", lon, lat, ok)
		}
		if !ok {
			return
		}
		if s > 1<<54 {
			t.Fatalf("score %d beyond 54 bits", s)
		}
		clon, clat := DecodeScore(float64(s))
		if clon < LonMin || clon > LonMax || clat < LatMin || clat > LatMax {
			t.Fatalf("centre (%v, %v) out of the limits", clon, clat)
		}
		halfLon, halfLat := 360.0/(1<<27)*1.0000001, 2*LatMax/(1<<27)*1.0000001
		if lon < LonMax && lat < LatMax && (math.Abs(clon-lon) > halfLon || math.Abs(clat-lat) > halfLat) {
			t.Fatalf("(%v, %v) decodes to (%v, %v)", lon, lat, clon, clat)
		}
		if s < 1<<52 {
			if again, _ := Score(clon, clat); again != s {
				t.Fatalf("(%v, %v): score %d, its centre's %d", lon, lat, s, again)
			}
		}
		h := string(AppendString(nil, float64(s)))
		if len(h) != 11 || strings.Trim(h, geoAlphabet) != "" {
			t.Fatalf("geohash %q", h)
		}
	})
}
