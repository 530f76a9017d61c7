package server

import (
	"testing"
	"time"
)

// TestGoesFirst: between clients waiting for each other's input, the one
// read first goes first, unless the reads are within the tie (orderTie;
// freshOrderTie when both clients are fresh), where the one connected
// first does.
func TestGoesFirst(t *testing.T) {
	ms := int64(time.Millisecond)
	fresh := func(id int64) int64 { return id - freshRank }
	tests := []struct {
		name    string
		t1, id1 int64
		t2, id2 int64
		want    bool
	}{
		{"read first, far apart", 0, 9, 20 * ms, 3, true},
		{"read second, far apart", 20 * ms, 3, 0, 9, false},
		{"within orderTie: connected first", 1 * ms, 3, 0, 9, true},
		{"within orderTie: connected second", 0, 9, 1 * ms, 3, false},
		{"5 ms apart, not fresh: read first", 5 * ms, 3, 0, 9, false},
		{"5 ms apart, both fresh: connected first", 5 * ms, fresh(3), 0, fresh(9), true},
		{"5 ms apart, one fresh: read first", 5 * ms, fresh(3), 0, 9, false},
		{"beyond freshOrderTie, both fresh: read first", 20 * ms, fresh(3), 0, fresh(9), false},
	}
	for _, tt := range tests {
		if got := goesFirst(tt.t1, tt.id1, tt.t2, tt.id2); got != tt.want {
			t.Errorf("%s: goesFirst = %v; want %v", tt.name, got, tt.want)
		}
	}
}
