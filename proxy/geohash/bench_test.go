package geohash

import (
	"math"
	"testing"
)

var sink float64

func BenchmarkSin(b *testing.B) {
	for i := range b.N {
		sink += sin(float64(i%1000) * 0.003)
	}
}

func BenchmarkMathSin(b *testing.B) {
	for i := range b.N {
		sink += math.Sin(float64(i%1000) * 0.003)
	}
}

func BenchmarkAsin(b *testing.B) {
	for i := range b.N {
		sink += asin(float64(i%1000) * 0.001)
	}
}

func BenchmarkDistance(b *testing.B) {
	for i := range b.N {
		sink += Distance(13.361389, 38.115556, 15+float64(i%100)*0.01, 37.502669)
	}
}

func BenchmarkWithinRadius(b *testing.B) {
	s := Shape{Lon: 15, Lat: 37, Radius: 200, Conversion: 1000}
	score, _ := Score(13.361389, 38.115556)
	for range b.N {
		_, _, d, _ := s.Within(float64(score))
		sink += d
	}
}
