package commands

import (
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/geohash"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The GEO commands: points stored in sorted sets, each member's score the
// 52-bit geohash of its position (proxy/geohash), exactly as Redis 7.0
// stores them, so ZRANGE and friends see the same scores. GEOADD, GEODIST,
// GEOHASH and GEOPOS are here; the searches (GEORADIUS*, GEOSEARCH*) in
// geo_search.go.

func registerGeo(t *server.Table) {
	t.Register("geoadd", cmdGeoAdd)
	t.Register("geodist", cmdGeoDist)
	t.Register("geohash", cmdGeoHash)
	t.Register("geopos", cmdGeoPos)
	search := func(flags geoFlags) server.Handler {
		return func(x *server.Ctx, a [][]byte) error { return cmdGeoSearch(x, a, flags) }
	}
	t.Register("georadius", search(geoFromCoords))
	t.Register("georadius_ro", search(geoFromCoords|geoNoStore))
	t.Register("georadiusbymember", search(geoFromMember))
	t.Register("georadiusbymember_ro", search(geoFromMember|geoNoStore))
	t.Register("geosearch", search(geoSearch))
	t.Register("geosearchstore", search(geoSearch|geoSearchStore))
}

// parseLonLat parses a longitude and a latitude as Redis's
// extractLongLatOrReply: two floats, within the limits geohashes encode.
func parseLonLat(lonArg, latArg []byte) (lon, lat float64, err error) {
	lon, ok := cstr.ParseFloat(lonArg)
	if !ok {
		return 0, 0, resp.Err(strops.ErrNotFloat)
	}
	lat, ok = cstr.ParseFloat(latArg)
	if !ok {
		return 0, 0, resp.Err(strops.ErrNotFloat)
	}
	if lon < geohash.LonMin || lon > geohash.LonMax || lat < geohash.LatMin || lat > geohash.LatMax {
		msg := append([]byte("ERR invalid longitude,latitude pair "), geohash.AppendFixed6(nil, lon)...)
		msg = append(msg, ',')
		return 0, 0, resp.Err(string(geohash.AppendFixed6(msg, lat)))
	}
	return lon, lat, nil
}

// parseUnit returns the meters in a unit (m, km, ft, mi, any case).
func parseUnit(u []byte) (float64, error) {
	switch {
	case cstr.EqualFold(u, "m"):
		return 1, nil
	case cstr.EqualFold(u, "km"):
		return 1000, nil
	case cstr.EqualFold(u, "ft"):
		return 0.3048, nil
	case cstr.EqualFold(u, "mi"):
		return 1609.34, nil
	}
	return 0, resp.Err("ERR unsupported unit provided. please use M, KM, FT, MI")
}

// cmdGeoAdd is GEOADD key [NX|XX] [CH] lon lat member...: ZADD of the
// members with their positions' geohashes as scores, after every pair is
// checked (Redis rewrites the command into a ZADD).
func cmdGeoAdd(x *server.Ctx, args [][]byte) error {
	var f zaddFlags
	i := 2
options:
	for ; i < len(args); i++ {
		switch {
		case cstr.EqualFold(args[i], "nx"):
			f.nx = true
		case cstr.EqualFold(args[i], "xx"):
			f.xx = true
		case cstr.EqualFold(args[i], "ch"):
			f.ch = true
		default:
			break options
		}
	}
	n := len(args) - i
	if n%3 != 0 || n == 0 || f.nx && f.xx {
		return resp.Err(strops.ErrSyntax)
	}
	pairs := make([][]byte, 0, 2*n/3)
	scores := make([]float64, 0, n/3)
	for j := i; j < len(args); j += 3 {
		lon, lat, err := parseLonLat(args[j], args[j+1])
		if err != nil {
			return err
		}
		score, _ := geohash.Score(lon, lat)
		pairs = append(pairs, nil, args[j+2])
		scores = append(scores, float64(score))
	}
	return zadd(x, args[1], pairs, scores, f)
}

// cmdGeoDist is GEODIST key member1 member2 [unit]: a null when the key or
// a member is missing.
func cmdGeoDist(x *server.Ctx, args [][]byte) error {
	conv := 1.0
	switch {
	case len(args) == 5:
		var err error
		if conv, err = parseUnit(args[4]); err != nil {
			return err
		}
	case len(args) > 5:
		return resp.Err(strops.ErrSyntax)
	}
	return x.View(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if z == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Null()
			return nil
		}
		s1, found1, err := z.Score(args[2])
		if err != nil {
			return err
		}
		s2, found2, err := z.Score(args[3])
		if err != nil {
			return err
		}
		if !found1 || !found2 {
			x.W.Null()
			return nil
		}
		lon1, lat1 := geohash.DecodeScore(s1)
		lon2, lat2 := geohash.DecodeScore(s2)
		var buf [32]byte
		x.W.Bulk(geohash.AppendDistance(buf[:0], geohash.Distance(lon1, lat1, lon2, lat2)/conv))
		return nil
	})
}

// geoEach calls fn for each member argument (args[2:]) with its score, if
// the key holds it: GEOHASH and GEOPOS.
func geoEach(x *server.Ctx, args [][]byte, fn func(score float64, found bool)) error {
	return x.View(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if z == nil {
			x.NotifyKeyMiss(args[1])
		}
		x.W.Array(len(args) - 2)
		for _, m := range args[2:] {
			if z == nil {
				fn(0, false)
				continue
			}
			s, found, err := z.Score(m)
			if err != nil {
				return err
			}
			fn(s, found)
		}
		return nil
	})
}

func cmdGeoHash(x *server.Ctx, args [][]byte) error {
	var buf [16]byte
	return geoEach(x, args, func(score float64, found bool) {
		if found {
			x.W.Bulk(geohash.AppendString(buf[:0], score))
		} else {
			x.W.Null()
		}
	})
}

func cmdGeoPos(x *server.Ctx, args [][]byte) error {
	return geoEach(x, args, func(score float64, found bool) {
		if !found {
			x.W.NullArray()
			return
		}
		lon, lat := geohash.DecodeScore(score)
		x.W.Array(2)
		writeHuman(x.W, lon)
		writeHuman(x.W, lat)
	})
}

// writeHuman writes a coordinate as Redis's addReplyHumanLongDouble: a
// bulk string in RESP2, a double in RESP3, both in geohash.AppendHuman's
// format.
func writeHuman(w *resp.Writer, f float64) {
	var buf [48]byte
	if !w.RESP3() {
		w.Bulk(geohash.AppendHuman(buf[:0], f))
		return
	}
	b := append(buf[:0], ',')
	b = geohash.AppendHuman(b, f)
	w.Raw(append(b, '\r', '\n'))
}
