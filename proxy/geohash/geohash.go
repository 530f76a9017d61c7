// Package geohash is the arithmetic behind Redis's GEO commands, as Redis
// 7.0 does it: the 52-bit interleaved geohash a geo set stores as a member's
// sorted-set score, its decoding to the centre of the cell, the standard
// 11-character geohash string, the cells covering a search area (with the
// score ranges to read), distances on Redis's sphere, and the number
// formats of the replies. Pure functions: no I/O, no state, no panics on
// any input.
//
// Redis's sources (src/geohash.c, src/geohash_helper.c, src/geo.c) are the
// specification; results match Redis's bit for bit where the arithmetic is
// IEEE (encoding, decoding, cells, formats). Distances use correctly
// rounded sin, cos and asin (trig.go), which glibc's, that Redis calls,
// are in all but about 0.15% of calls, where the two differ by an ulp.
package geohash

// The limits of the coordinates Redis encodes (EPSG:900913): latitudes
// beyond ±85.05112878 cannot be stored.
const (
	StepMax = 26 // bits per coordinate of a stored score: 2*26 = 52 bits
	LonMin  = -180.0
	LonMax  = 180.0
	LatMin  = -85.05112878
	LatMax  = 85.05112878
)

// Bits is a geohash of Step bits per coordinate: longitude bits in the odd
// positions, latitude bits in the even ones, the most significant first.
// The zero Bits (no bits, step 0) stands for "no cell".
type Bits struct {
	Bits uint64
	Step uint8
}

// IsZero reports whether h is the zero Bits ("no cell").
func (h Bits) IsZero() bool { return h.Bits == 0 && h.Step == 0 }

// Align52 returns h's bits shifted to a 52-bit score prefix (Redis's
// geohashAlign52Bits).
func (h Bits) Align52() uint64 { return h.Bits << (52 - 2*uint(h.Step)) }

// Range is an interval of one coordinate.
type Range struct{ Min, Max float64 }

func (r Range) isZero() bool { return r.Min == 0 && r.Max == 0 }

// Area is the cell of a geohash: its longitude and latitude intervals.
type Area struct{ Lon, Lat Range }

// The coordinate ranges of Redis's stored geohashes, and of the standard
// geohash that GEOHASH prints.
var (
	wgs84Lon    = Range{LonMin, LonMax}
	wgs84Lat    = Range{LatMin, LatMax}
	standardLat = Range{-90, 90}
)

// spread moves the 32 bits of v to the even positions of the result.
func spread(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000FFFF0000FFFF
	x = (x | x<<8) & 0x00FF00FF00FF00FF
	x = (x | x<<4) & 0x0F0F0F0F0F0F0F0F
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

// squeeze gathers the even bits of x: spread's inverse.
func squeeze(x uint64) uint32 {
	x &= 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0F0F0F0F0F0F0F0F
	x = (x | x>>4) & 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	return uint32(x)
}

// Encode returns the geohash of step bits per coordinate of (lon, lat)
// within the ranges, as Redis's geohashEncode: false if step is not in
// 1..32, a range is empty, or the point is outside Redis's limits or the
// ranges (or NaN, which Redis never passes). The fixed-point offsets are truncated, so a point on a range's
// maximum gets the offset 2^step (one bit past the step's bits), as in
// Redis.
func Encode(lonR, latR Range, lon, lat float64, step uint8) (Bits, bool) {
	if step > 32 || step == 0 || latR.isZero() || lonR.isZero() {
		return Bits{}, false
	}
	if !(lon >= LonMin && lon <= LonMax && lat >= LatMin && lat <= LatMax) { // NaN too
		return Bits{}, false
	}
	if lat < latR.Min || lat > latR.Max || lon < lonR.Min || lon > lonR.Max {
		return Bits{Step: step}, false
	}
	latOff := (lat - latR.Min) / (latR.Max - latR.Min)
	lonOff := (lon - lonR.Min) / (lonR.Max - lonR.Min)
	scale := float64(uint64(1) << step)
	latOff *= scale
	lonOff *= scale
	return Bits{Bits: spread(toUint32(latOff)) | spread(toUint32(lonOff))<<1, Step: step}, true
}

// toUint32 truncates an offset in [0, 2^32] as C's conversion does for
// the values Encode produces (2^32 itself only for step 32 on a maximum).
func toUint32(f float64) uint32 {
	if !(f >= 0) || f >= 1<<32 {
		return 0
	}
	return uint32(f)
}

// Decode returns the cell of h within the ranges, as Redis's
// geohashDecode: false for the zero Bits or an empty range. Coordinates
// bits beyond the step give cells beyond the ranges, as in Redis.
func Decode(lonR, latR Range, h Bits) (Area, bool) {
	if h.IsZero() || latR.isZero() || lonR.isZero() || h.Step > 32 {
		return Area{}, false
	}
	ilat := squeeze(h.Bits)
	ilon := squeeze(h.Bits >> 1)
	latScale := latR.Max - latR.Min
	lonScale := lonR.Max - lonR.Min
	div := float64(uint64(1) << h.Step)
	var a Area
	a.Lat.Min = latR.Min + (float64(ilat)/div)*latScale
	a.Lat.Max = latR.Min + (float64(ilat+1)/div)*latScale // uint32: wraps as in C
	a.Lon.Min = lonR.Min + (float64(ilon)/div)*lonScale
	a.Lon.Max = lonR.Min + (float64(ilon+1)/div)*lonScale
	return a, true
}

// Center returns the centre of a cell, clamped to Redis's limits (Redis's
// geohashDecodeAreaToLongLat).
func (a Area) Center() (lon, lat float64) {
	lon = (a.Lon.Min + a.Lon.Max) / 2
	lon = min(max(lon, LonMin), LonMax)
	lat = (a.Lat.Min + a.Lat.Max) / 2
	lat = min(max(lat, LatMin), LatMax)
	return lon, lat
}

// Score returns the sorted-set score GEOADD stores for a point: its
// 26-step geohash aligned to 52 bits. ok is false outside Redis's limits.
func Score(lon, lat float64) (score uint64, ok bool) {
	h, ok := Encode(wgs84Lon, wgs84Lat, lon, lat, StepMax)
	if !ok {
		return 0, false
	}
	return h.Align52(), true
}

// DecodeScore returns the point a geo set's score stands for: the centre of
// its 26-step cell, as Redis's decodeGeohash. Any score decodes (Redis
// converts it to 64 bits as the x86-64 C conversion does, then clamps the
// centre to the limits), so a score ZADD put in a set still has a position.
func DecodeScore(score float64) (lon, lat float64) {
	a, _ := Decode(wgs84Lon, wgs84Lat, Bits{Bits: cUint64(score), Step: StepMax})
	return a.Center()
}

// cUint64 converts f to uint64 as gcc's x86-64 code for (uint64_t)f does,
// out-of-range values included: below 2^63 a truncating signed conversion
// (0x8000000000000000 when it overflows or f is NaN), from 2^63 one of
// f-2^63 with the top bit flipped.
func cUint64(f float64) uint64 {
	const indefinite = 1 << 63
	if !(f < 0x1p63) {
		if f != f {
			return indefinite
		}
		g := f - 0x1p63
		if g >= 0x1p63 {
			return indefinite ^ indefinite
		}
		return uint64(int64(g)) ^ indefinite
	}
	if f <= -0x1p63 {
		return indefinite
	}
	return uint64(int64(f))
}

// Direction indexes Neighbors.
const (
	North = iota
	South
	East
	West
	NorthEast
	NorthWest
	SouthEast
	SouthWest
)

// Neighbors returns the eight cells around h at its step, in Direction
// order, as Redis's geohashNeighbors (wrapping around at the edges of the
// coordinate space).
func Neighbors(h Bits) [8]Bits {
	n := [8]Bits{h, h, h, h, h, h, h, h}
	n[North] = move(h, 0, 1)
	n[South] = move(h, 0, -1)
	n[East] = move(h, 1, 0)
	n[West] = move(h, -1, 0)
	n[NorthEast] = move(h, 1, 1)
	n[NorthWest] = move(h, -1, 1)
	n[SouthEast] = move(h, 1, -1)
	n[SouthWest] = move(h, -1, -1)
	return n
}

// move steps h by dx cells of longitude and dy of latitude (each -1, 0 or
// 1), carrying through the interleaved bits of one coordinate.
func move(h Bits, dx, dy int) Bits {
	const odd, even = 0xaaaaaaaaaaaaaaaa, 0x5555555555555555
	shift := 64 - 2*uint(h.Step)
	step1 := func(v, other, d uint64, dir int) uint64 {
		zz := other >> shift // the other coordinate's bits, set
		if dir > 0 {
			v += zz + 1
		} else {
			v |= zz
			v -= zz + 1
		}
		return v & (d >> shift)
	}
	lon, lat := h.Bits&odd, h.Bits&even
	if dx != 0 {
		lon = step1(lon, even, odd, dx)
	}
	if dy != 0 {
		lat = step1(lat, odd, even, dy)
	}
	return Bits{Bits: lon | lat, Step: h.Step}
}

// geoAlphabet is the standard geohash's base-32 alphabet.
const geoAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// AppendString appends the standard 11-character geohash of the point a
// score stands for (GEOHASH): the decoded centre re-encoded over the
// standard ranges (latitudes ±90), 52 bits in 10 characters and a final
// "0", as Redis does.
func AppendString(dst []byte, score float64) []byte {
	lon, lat := DecodeScore(score)
	h, _ := Encode(wgs84Lon, standardLat, lon, lat, StepMax)
	for i := range 11 {
		idx := uint64(0)
		if i < 10 {
			idx = (h.Bits >> (52 - (i+1)*5)) & 0x1f
		}
		dst = append(dst, geoAlphabet[idx])
	}
	return dst
}
