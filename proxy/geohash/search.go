package geohash

import "math"

// Redis's sphere (geohash_helper.c): its radius, and the bound of the
// Mercator projection the step estimate starts from.
const (
	EarthRadius = 6372797.560856 // meters
	mercatorMax = 20037726.37
)

// degToRad is Redis's D_R: M_PI/180 divided at double precision.
var degToRad = float64(math.Pi) / 180

func degRad(ang float64) float64 { return ang * degToRad }
func radDeg(ang float64) float64 { return ang / degToRad }

// LatDistance is the distance in meters between two latitudes on one
// meridian (Redis's geohashGetLatDistance).
func LatDistance(lat1, lat2 float64) float64 {
	return EarthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// Distance is the haversine distance in meters between two points on
// Redis's sphere (geohashGetDistance), LatDistance when the longitudes
// are the same.
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	return distance(lon1, lat1, lon2, lat2, math.NaN(), math.NaN())
}

// distance is Distance with the cosines of the latitudes' radians given
// when known (NaN: compute it), as a search knows its centre's and reuses
// a point's. The explicit conversions keep every product rounded, as in C
// (no fused multiply-add on any architecture).
func distance(lon1, lat1, lon2, lat2, cos1, cos2 float64) float64 {
	lon1r := degRad(lon1)
	lon2r := degRad(lon2)
	v := sin((lon2r - lon1r) / 2)
	if v == 0 {
		return LatDistance(lat1, lat2)
	}
	lat1r := degRad(lat1)
	lat2r := degRad(lat2)
	if cos1 != cos1 {
		cos1 = cos(lat1r)
	}
	if cos2 != cos2 {
		cos2 = cos(lat2r)
	}
	u := sin((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(float64(float64(cos1*cos2)*v)*v)
	return 2.0 * EarthRadius * asin(math.Sqrt(a))
}

// EstimateSteps is the step of the cells Redis searches for a radius (in
// meters) around a latitude (geohashEstimateStepsByRadius): the radius is
// doubled up to the Mercator bound, less two steps, one or two less near
// the poles, framed to 1..26.
func EstimateSteps(rangeMeters, lat float64) uint8 {
	if rangeMeters == 0 {
		return StepMax
	}
	step := 1
	for rangeMeters < mercatorMax {
		rangeMeters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), StepMax))
}

// Shape is a search area: a circle of Radius or a Box of Width by Height
// around (Lon, Lat), its sizes in a unit of Conversion meters.
type Shape struct {
	Lon, Lat      float64
	Box           bool
	Radius        float64
	Width, Height float64
	Conversion    float64

	cosLat   float64 // cos of Lat's radians, once cosReady (Within)
	cosReady bool
}

// BoundingBox returns the longitudes and latitudes bounding the shape, as
// Redis's geohashBoundingBox: the longitude span is taken at the edge
// nearer the pole of the centre's hemisphere.
func (s *Shape) BoundingBox() (minLon, minLat, maxLon, maxLat float64) {
	height, width := s.Conversion*s.Radius, s.Conversion*s.Radius
	if s.Box {
		height, width = s.Conversion*(s.Height/2), s.Conversion*(s.Width/2)
	}
	latDelta := radDeg(height / EarthRadius)
	lonDeltaTop := radDeg(width / EarthRadius / cos(degRad(s.Lat+latDelta)))
	lonDeltaBottom := radDeg(width / EarthRadius / cos(degRad(s.Lat-latDelta)))
	lonDelta := lonDeltaTop
	if s.Lat < 0 {
		lonDelta = lonDeltaBottom
	}
	return s.Lon - lonDelta, s.Lat - latDelta, s.Lon + lonDelta, s.Lat + latDelta
}

// Cover is the set of cells a search reads: the cell of the shape's
// centre and its eight neighbours (in Direction order; zero Bits where
// Redis leaves a neighbour out).
type Cover struct {
	Center    Bits
	Neighbors [8]Bits
}

// Cover returns the cells covering the shape, as Redis's
// geohashCalculateAreasByShapeWGS84: the step estimated from the radius
// (a box's half diagonal), one step coarser if a neighbour does not reach
// the bounding box, and the neighbours wholly beyond the bounding box left
// out (from step 2).
func (s *Shape) Cover() Cover {
	minLon, minLat, maxLon, maxLat := s.BoundingBox()
	radius := s.Radius
	if s.Box {
		radius = math.Sqrt(float64((s.Width/2)*(s.Width/2)) + float64((s.Height/2)*(s.Height/2)))
	}
	radius *= s.Conversion
	steps := EstimateSteps(radius, s.Lat)
	h, _ := Encode(wgs84Lon, wgs84Lat, s.Lon, s.Lat, steps)
	n := Neighbors(h)
	area, _ := Decode(wgs84Lon, wgs84Lat, h)

	cell := func(b Bits) Area { a, _ := Decode(wgs84Lon, wgs84Lat, b); return a }
	north, south, east, west := cell(n[North]), cell(n[South]), cell(n[East]), cell(n[West])
	decrease := north.Lat.Max < maxLat || south.Lat.Min > minLat ||
		east.Lon.Max < maxLon || west.Lon.Min > minLon
	if steps > 1 && decrease {
		steps--
		h, _ = Encode(wgs84Lon, wgs84Lat, s.Lon, s.Lat, steps)
		n = Neighbors(h)
		area, _ = Decode(wgs84Lon, wgs84Lat, h)
	}
	if steps >= 2 {
		drop := func(dirs ...int) {
			for _, d := range dirs {
				n[d] = Bits{}
			}
		}
		if area.Lat.Min < minLat {
			drop(South, SouthWest, SouthEast)
		}
		if area.Lat.Max > maxLat {
			drop(North, NorthEast, NorthWest)
		}
		if area.Lon.Min < minLon {
			drop(West, SouthWest, NorthWest)
		}
		if area.Lon.Max > maxLon {
			drop(East, SouthEast, NorthEast)
		}
	}
	return Cover{Center: h, Neighbors: n}
}

// ScoreRange is the scores of one cell's points: Min <= score < Max.
type ScoreRange struct{ Min, Max uint64 }

// CellRange returns the scores of the points in cell h (Redis's
// scoresOfGeoHashBox).
func CellRange(h Bits) ScoreRange {
	next := h
	next.Bits++
	return ScoreRange{Min: h.Align52(), Max: next.Align52()}
}

// Ranges returns the score ranges a search reads, in Redis's order: the
// centre, then north, south, east, west, north-east, north-west,
// south-east, south-west; left-out cells skipped, and a cell equal to the
// last one read skipped too (near the poles and for huge areas, where
// neighbours coincide). As in Redis, the centre is never compared: the
// first neighbour read is compared with nothing.
func (c *Cover) Ranges() []ScoreRange {
	cells := [9]Bits{c.Center, c.Neighbors[North], c.Neighbors[South], c.Neighbors[East], c.Neighbors[West],
		c.Neighbors[NorthEast], c.Neighbors[NorthWest], c.Neighbors[SouthEast], c.Neighbors[SouthWest]}
	out := make([]ScoreRange, 0, len(cells))
	last := 0
	for i, h := range cells {
		if h.IsZero() {
			continue
		}
		if last != 0 && h == cells[last] {
			continue
		}
		out = append(out, CellRange(h))
		last = i
	}
	return out
}

// Within reports whether the point a score stands for lies in the shape
// (Redis's geoWithinShape), with the point and its distance in meters
// from the centre. A box holds the points within half its height of the
// centre's latitude and half its width of its longitude (measured along
// the point's parallel). The shape keeps the cosine of its centre's
// latitude from one call to the next: Within is for one goroutine.
func (s *Shape) Within(score float64) (lon, lat, dist float64, ok bool) {
	lon, lat = DecodeScore(score)
	if !s.cosReady {
		s.cosLat, s.cosReady = cos(degRad(s.Lat)), true
	}
	if !s.Box {
		dist = distance(s.Lon, s.Lat, lon, lat, s.cosLat, math.NaN())
		return lon, lat, dist, !(dist > s.Radius*s.Conversion)
	}
	if LatDistance(lat, s.Lat) > s.Height*s.Conversion/2 {
		return lon, lat, 0, false
	}
	cosPoint := cos(degRad(lat))
	if distance(lon, lat, s.Lon, lat, cosPoint, cosPoint) > s.Width*s.Conversion/2 {
		return lon, lat, 0, false
	}
	return lon, lat, distance(s.Lon, s.Lat, lon, lat, s.cosLat, cosPoint), true
}
