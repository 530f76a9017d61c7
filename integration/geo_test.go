package integration

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// TestGeoColdSets compares the GEO commands of Spillway with Redis 7.0 on
// geo sets kept cold (DEBUG DEMOTE before every read), embedded and in
// upstream mode (where a read of a cold set may be answered from the
// store by the embedded handlers): a set of 5,000 points, too big to be
// loaded (over 4,096 members: always served from the store), and a small
// one (loaded again by reads), searched around coordinates and members, by
// radius and by box, with every option, replies compared byte for byte.
func TestGeoColdSets(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		spw := startEmbeddedHooks(t)
		testGeoCold(t, harness.MustDial(t, spw.Addr()))
	})
	t.Run("upstream", func(t *testing.T) {
		p := startUpstreamPair(t, "1gb")
		testGeoCold(t, harness.MustDial(t, p.spw.Addr()))
	})
}

func testGeoCold(t *testing.T, spw *harness.Conn) {
	ref := harness.MustDial(t, harness.StartRedis(t).Addr())
	rng := rand.New(rand.NewSource(11))
	both := func(args ...string) {
		t.Helper()
		want, got := ref.Do(args...), spw.Do(args...)
		if string(got.Raw) != string(want.Raw) {
			t.Errorf("%q:\n spillway %q\n redis    %q", args, got.Raw, want.Raw)
		}
	}
	demote := func(keys ...string) {
		t.Helper()
		if r := spw.Do(append([]string{"DEBUG", "DEMOTE"}, keys...)...); r.Type != ':' {
			t.Fatalf("DEBUG DEMOTE: %s", r.String())
		}
	}
	coord := func(lo, hi float64) string { return strconv.FormatFloat(lo+rng.Float64()*(hi-lo), 'f', 6, 64) }
	for _, set := range []struct {
		key string
		n   int
	}{{"geo:big", 5000}, {"geo:small", 40}} {
		for i := 0; i < set.n; i += 500 {
			args := []string{"GEOADD", set.key}
			for j := i; j < min(i+500, set.n); j++ {
				args = append(args, coord(-20, 20), coord(30, 60), "m"+strconv.Itoa(j))
			}
			both(args...)
		}
	}
	units := []string{"m", "km", "mi", "ft"}
	for i := range 150 {
		key := "geo:big"
		if i%3 == 0 {
			key = "geo:small"
		}
		unit := units[rng.Intn(len(units))]
		radius := strconv.Itoa(50 + rng.Intn(400))
		if unit == "m" || unit == "ft" {
			radius += "000"
		}
		member := "m" + strconv.Itoa(rng.Intn(40))
		var args []string
		switch i % 5 {
		case 0:
			args = []string{"GEORADIUS_RO", key, coord(-20, 20), coord(30, 60), radius, unit}
		case 1:
			args = []string{"GEORADIUSBYMEMBER_RO", key, member, radius, unit}
		case 2:
			args = []string{"GEOSEARCH", key, "FROMLONLAT", coord(-20, 20), coord(30, 60), "BYBOX", radius, radius, unit}
		case 3:
			args = []string{"GEOSEARCH", key, "FROMMEMBER", member, "BYRADIUS", radius, unit}
		default:
			args = []string{"GEORADIUS", key, coord(-20, 20), coord(30, 60), radius, unit}
		}
		args = append(args, []string{"ASC", "DESC"}[rng.Intn(2)], "WITHDIST", "WITHCOORD", "WITHHASH")
		if rng.Intn(2) == 0 {
			args = append(args, "COUNT", strconv.Itoa(1+rng.Intn(20)))
			if rng.Intn(3) == 0 {
				args = append(args, "ANY")
			}
		}
		demote(key)
		both(args...)
		demote(key)
		both("GEOPOS", key, member, "nosuch", "m1")
		demote(key)
		both("GEODIST", key, member, "m2", unit)
		demote(key)
		both("GEOHASH", key, member, "m3")
	}
	// Stores from a cold source: the destination's members and scores.
	for i := range 10 {
		demote("geo:big")
		dst := fmt.Sprintf("geo:dst%d", i)
		both("GEOSEARCHSTORE", dst, "geo:big", "FROMLONLAT", coord(-20, 20), coord(30, 60), "BYRADIUS", "300", "km", "COUNT", "50")
		both("ZRANGE", dst, "0", "-1", "WITHSCORES")
		demote("geo:big")
		both("GEORADIUS", "geo:big", coord(-20, 20), coord(30, 60), "200", "km", "STORE", dst)
		both("ZRANGE", dst, "0", "-1", "WITHSCORES")
	}
}
