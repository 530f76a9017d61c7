package commands

import (
	"slices"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/geohash"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The geo searches: GEORADIUS, GEORADIUSBYMEMBER, their _RO forms,
// GEOSEARCH and GEOSEARCHSTORE, one routine as in Redis (georadiusGeneric).
// A search reads only the score ranges of the nine cells covering its
// area (geohash.Shape.Cover), through the sorted set's score index: a cold
// set is read by seeks, not whole.

// geoFlags say which search command runs.
type geoFlags uint8

const (
	geoFromCoords  geoFlags = 1 << iota // GEORADIUS: key lon lat radius unit
	geoFromMember                       // GEORADIUSBYMEMBER: key member radius unit
	geoNoStore                          // the _RO forms: no STORE/STOREDIST
	geoSearch                           // GEOSEARCH: FROM*/BY* options
	geoSearchStore                      // GEOSEARCHSTORE: dst src, STOREDIST flag
)

// The orders of a search's reply.
const (
	geoUnsorted = iota
	geoAsc
	geoDesc
)

// geoQuery is a parsed search.
type geoQuery struct {
	shape                         geohash.Shape
	withDist, withHash, withCoord bool
	sort                          int
	any                           bool
	count                         int64 // 0: no limit
	store                         []byte
	storeDist                     bool
	fromMember, fromLonLat        bool
	byRadius, byBox               bool
}

// geoPoint is a point a search found.
type geoPoint struct {
	member         string
	lon, lat, dist float64
	score          float64
}

// parseGeoQuery parses a search's arguments as Redis's georadiusGeneric,
// with its errors in its order: the centre and radius of the GEORADIUS
// forms, then the options one by one (FROMMEMBER looks the member up in z
// as it is met), then the combinations. z is nil when the key is missing:
// GEORADIUSBYMEMBER then skips its member, radius and unit, and FROMMEMBER
// its member, as Redis does.
func parseGeoQuery(z *tiering.ZSet, args [][]byte, flags geoFlags) (geoQuery, error) {
	var q geoQuery
	base := 2
	switch {
	case flags&geoFromCoords != 0:
		base = 6
		lon, lat, err := parseLonLat(args[2], args[3])
		if err != nil {
			return q, err
		}
		q.shape.Lon, q.shape.Lat = lon, lat
		if err := q.parseRadius(args[4], args[5]); err != nil {
			return q, err
		}
	case flags&geoFromMember != 0:
		base = 5
		if z != nil {
			if err := q.memberCentre(z, args[2]); err != nil {
				return q, err
			}
			if err := q.parseRadius(args[3], args[4]); err != nil {
				return q, err
			}
		}
	case flags&geoSearchStore != 0:
		base = 3
		q.store = args[1]
	}
	search := flags&geoSearch != 0
	canStore := flags&(geoNoStore|geoSearch) == 0
	rest := args[base:]
	for i := 0; i < len(rest); i++ {
		arg, left := rest[i], len(rest)-i-1
		switch {
		case cstr.EqualFold(arg, "withdist"):
			q.withDist = true
		case cstr.EqualFold(arg, "withhash"):
			q.withHash = true
		case cstr.EqualFold(arg, "withcoord"):
			q.withCoord = true
		case cstr.EqualFold(arg, "any"):
			q.any = true
		case cstr.EqualFold(arg, "asc"):
			q.sort = geoAsc
		case cstr.EqualFold(arg, "desc"):
			q.sort = geoDesc
		case cstr.EqualFold(arg, "count") && left >= 1:
			n, ok := cstr.ParseInt(rest[i+1])
			if !ok {
				return q, resp.Err(strops.ErrNotInteger)
			}
			if n <= 0 {
				return q, resp.Err("ERR COUNT must be > 0")
			}
			q.count = n
			i++
		case canStore && left >= 1 && (cstr.EqualFold(arg, "store") || cstr.EqualFold(arg, "storedist")):
			q.store, q.storeDist = rest[i+1], len(arg) == len("storedist")
			i++
		case search && flags&geoSearchStore != 0 && cstr.EqualFold(arg, "storedist"):
			q.storeDist = true
		case search && !q.fromLonLat && left >= 1 && cstr.EqualFold(arg, "frommember"):
			if z != nil {
				if err := q.memberCentre(z, rest[i+1]); err != nil {
					return q, err
				}
			}
			q.fromMember = true
			i++
		case search && !q.fromMember && left >= 2 && cstr.EqualFold(arg, "fromlonlat"):
			lon, lat, err := parseLonLat(rest[i+1], rest[i+2])
			if err != nil {
				return q, err
			}
			q.shape.Lon, q.shape.Lat = lon, lat
			q.fromLonLat = true
			i += 2
		case search && !q.byBox && left >= 2 && cstr.EqualFold(arg, "byradius"):
			if err := q.parseRadius(rest[i+1], rest[i+2]); err != nil {
				return q, err
			}
			q.shape.Box, q.byRadius = false, true
			i += 2
		case search && !q.byRadius && left >= 3 && cstr.EqualFold(arg, "bybox"):
			if err := q.parseBox(rest[i+1 : i+4]); err != nil {
				return q, err
			}
			q.shape.Box, q.byBox = true, true
			i += 3
		default:
			return q, resp.Err(strops.ErrSyntax)
		}
	}
	switch {
	case q.store != nil && (q.withDist || q.withHash || q.withCoord):
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		return q, resp.Err("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
	case search && !q.fromMember && !q.fromLonLat:
		return q, resp.Err("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(args[0]))
	case search && !q.byRadius && !q.byBox:
		return q, resp.Err("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(args[0]))
	case q.any && q.count == 0:
		return q, resp.Err("ERR the ANY argument requires COUNT argument")
	}
	if q.count != 0 && q.sort == geoUnsorted && !q.any {
		q.sort = geoAsc // the nearest COUNT, as Redis
	}
	return q, nil
}

// memberCentre centres the search on a member of z.
func (q *geoQuery) memberCentre(z *tiering.ZSet, member []byte) error {
	s, found, err := z.Score(member)
	if err != nil {
		return err
	}
	if !found {
		return resp.Err("ERR could not decode requested zset member")
	}
	q.shape.Lon, q.shape.Lat = geohash.DecodeScore(s)
	return nil
}

// parseRadius parses "radius unit" (Redis's extractDistanceOrReply).
func (q *geoQuery) parseRadius(radius, unit []byte) error {
	r, ok := cstr.ParseFloat(radius)
	if !ok {
		return resp.Err("ERR need numeric radius")
	}
	if r < 0 {
		return resp.Err("ERR radius cannot be negative")
	}
	conv, err := parseUnit(unit)
	if err != nil {
		return err
	}
	q.shape.Radius, q.shape.Conversion = r, conv
	return nil
}

// parseBox parses "width height unit" (Redis's extractBoxOrReply).
func (q *geoQuery) parseBox(a [][]byte) error {
	w, ok := cstr.ParseFloat(a[0])
	if !ok {
		return resp.Err("ERR need numeric width")
	}
	h, ok := cstr.ParseFloat(a[1])
	if !ok {
		return resp.Err("ERR need numeric height")
	}
	if h < 0 || w < 0 {
		return resp.Err("ERR height or width cannot be negative")
	}
	conv, err := parseUnit(a[2])
	if err != nil {
		return err
	}
	q.shape.Width, q.shape.Height, q.shape.Conversion = w, h, conv
	return nil
}

// scoreRanger is the sorted-set access a search needs: a read of a score
// range (tiering.ZSet's, by the score index when the set is cold).
type scoreRanger interface {
	RangeByScore(r *tiering.ScoreRange, rev bool, offset, limit int64, fn func(member []byte, score float64) bool) error
}

// run finds the points of z in the query's shape: the covering cells'
// score ranges in Redis's order, each read in score order, stopping once
// COUNT points are found under ANY. Nothing else of z is read.
func (q *geoQuery) run(z scoreRanger) ([]geoPoint, error) {
	limit := 0
	if q.any {
		limit = int(q.count)
	}
	full := func(pts []geoPoint) bool { return limit > 0 && len(pts) >= limit }
	var pts []geoPoint
	cover := q.shape.Cover()
	for _, cell := range cover.Ranges() {
		if full(pts) {
			break
		}
		r := tiering.ScoreRange{Min: float64(cell.Min), Max: float64(cell.Max), MaxEx: true}
		err := z.RangeByScore(&r, false, 0, -1, func(m []byte, score float64) bool {
			if lon, lat, dist, ok := q.shape.Within(score); ok {
				pts = append(pts, geoPoint{member: string(m), lon: lon, lat: lat, dist: dist, score: score})
			}
			return !full(pts)
		})
		if err != nil {
			return nil, err
		}
	}
	return pts, nil
}

// sortPoints orders the points by distance as Redis does: all of them
// with glibc's qsort (a stable merge sort: ties keep the order they were
// found in), or the first n (fewer) with Redis's pqsort.
func (q *geoQuery) sortPoints(pts []geoPoint, n int) {
	if q.sort == geoUnsorted {
		return
	}
	order := func(a, b *geoPoint) int {
		switch {
		case a.dist > b.dist:
			return 1
		case a.dist == b.dist:
			return 0
		}
		return -1
	}
	if q.sort == geoDesc {
		asc := order
		order = func(a, b *geoPoint) int { return -asc(a, b) }
	}
	if n < len(pts) {
		partialSort(pts, order, 0, n-1)
		return
	}
	slices.SortStableFunc(pts, func(a, b geoPoint) int { return order(&a, &b) })
}

// cmdGeoSearch is every search command; flags says which.
func cmdGeoSearch(x *server.Ctx, args [][]byte, flags geoFlags) error {
	src := args[1]
	if flags&geoSearchStore != 0 {
		src = args[2]
	}
	access := x.Update
	if flags&geoNoStore != 0 || flags&(geoSearch|geoSearchStore) == geoSearch {
		access = x.View // the read-only forms
	}
	return access(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), src, false)
		if err != nil {
			return err
		}
		if z == nil {
			x.NotifyKeyMiss(src)
		}
		q, err := parseGeoQuery(z, args, flags)
		if err != nil {
			return err
		}
		if z == nil {
			if q.store != nil {
				return storeEmpty(x, tx, q.store)
			}
			x.W.Array(0)
			return nil
		}
		pts, err := q.run(z)
		if err != nil {
			return err
		}
		if q.count > 0 && int64(len(pts)) > q.count {
			q.sortPoints(pts, int(q.count))
			pts = pts[:q.count]
		} else {
			q.sortPoints(pts, len(pts))
		}
		conv := q.shape.Conversion
		if q.store != nil {
			members := make([]tiering.Member, len(pts))
			for i, p := range pts {
				members[i] = tiering.Member{Member: p.member, Score: p.score}
				if q.storeDist {
					members[i].Score = p.dist / conv
				}
			}
			event := "georadiusstore"
			if flags&geoSearch != 0 {
				event = "geosearchstore"
			}
			return storeZSet(x, tx, q.store, members, false, false, event)
		}
		q.reply(x.W, pts)
		return nil
	})
}

// reply writes the points found: members alone, or arrays of the member
// and the WITHDIST, WITHHASH and WITHCOORD values, in that order.
func (q *geoQuery) reply(w *resp.Writer, pts []geoPoint) {
	extra := int(b2i(q.withDist) + b2i(q.withHash) + b2i(q.withCoord))
	w.Array(len(pts))
	var buf [32]byte
	for _, p := range pts {
		if extra > 0 {
			w.Array(extra + 1)
		}
		w.BulkString(p.member)
		if q.withDist {
			w.Bulk(geohash.AppendDistance(buf[:0], p.dist/q.shape.Conversion))
		}
		if q.withHash {
			w.Int(int64(p.score))
		}
		if q.withCoord {
			w.Array(2)
			writeHuman(w, p.lon)
			writeHuman(w, p.lat)
		}
	}
}
