package main

import "testing"

func TestSplitBudget(t *testing.T) {
	const kb, mb, gb = 1 << 10, 1 << 20, 1 << 30
	tests := []struct {
		name                 string
		maxmemory, cache     int64
		wantCache, wantTable int64
		wantHot              int64
	}{
		{"32mb default", 32 * mb, 0, 4 * mb, 2 * mb, 24 * mb},
		{"1gb default", gb, 0, 128 * mb, 64 * mb, gb - 128*mb - 128*mb},
		{"explicit cache", 64 * mb, 16 * mb, 16 * mb, 4 * mb, 40 * mb},
		{"tiny budget keeps a floor", 256 * kb, 0, 256 * kb, 256 * kb, 4 * kb},
		{"no limit", 0, 0, 64 * mb, 64 * mb, 1 << 62},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := splitBudget(tt.maxmemory, tt.cache)
			if b.cache != tt.wantCache || b.memtable != tt.wantTable || b.hot != tt.wantHot {
				t.Fatalf("splitBudget(%d, %d) = %+v, want cache %d memtable %d hot %d",
					tt.maxmemory, tt.cache, b, tt.wantCache, tt.wantTable, tt.wantHot)
			}
			if tt.maxmemory > 0 && b.hot > 4*kb && b.cache+2*b.memtable+b.hot > tt.maxmemory {
				t.Fatalf("split %+v exceeds maxmemory %d", b, tt.maxmemory)
			}
		})
	}
}

func TestBudgetUnreachable(t *testing.T) {
	const kb, mb = 1 << 10, 1 << 20
	for _, tt := range []struct {
		maxmemory, cache int64
		want             bool
	}{
		{0, 0, false},              // no limit
		{1, 0, true},               // Redis's tests' "maxmemory 1"
		{767 * kb, 0, true},        // under the store's floor: 256 KB cache + 2 × 256 KB memtables
		{768 * kb, 0, false},       // the smallest budget met (4 KB hot tier)
		{600 * kb, 64 * kb, false}, // a smaller block cache lowers the floor
		{32 * mb, 0, false},
	} {
		if got := budgetUnreachable(tt.maxmemory, tt.cache); got != tt.want {
			t.Errorf("budgetUnreachable(%d, %d) = %v; want %v", tt.maxmemory, tt.cache, got, tt.want)
		}
	}
}
