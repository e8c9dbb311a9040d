package balancing_test

import (
	"math"
	"slices"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestTable(t *testing.T) {
	tests := []struct {
		name   string
		loads  string
		ids    []string
		counts []int64
	}{
		{"worked example", "S3=12 S1=1 S2=5", []string{"S1", "S2", "S3"}, []int64{4, 14, 2147483647}},
		{"ties", "B=2 A=2 C=3", []string{"A", "B", "C"}, []int64{0, 2, 2147483647}},
		{"above Java int", "A=0 B=0 C=2147483647", []string{"A", "B", "C"}, []int64{0, 4294967294, 2147483647}},
		{"empty", "", []string{}, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, counts := balancing.Table(balancing.SortLoads(parseLoads(tt.loads)))
			if !slices.Equal(ids, tt.ids) || !slices.Equal(counts, tt.counts) {
				t.Errorf("got %v %v, want %v %v", ids, counts, tt.ids, tt.counts)
			}
		})
	}
}

func TestTableSaturates(t *testing.T) {
	s := balancing.Sorted{{ID: "A", Count: math.MinInt64}, {ID: "B", Count: 0}, {ID: "C", Count: math.MaxInt64}}
	_, counts := balancing.Table(s)
	if want := []int64{math.MaxInt64, math.MaxInt64, balancing.LastLevel}; !slices.Equal(counts, want) {
		t.Errorf("got %v, want %v", counts, want)
	}
	// Waterfill stays exact there: level 0 holds 2^63 orders for A.
	if got := waterfillRanks(s, 3); !slices.Equal(got, []int{0, 0, 0}) {
		t.Errorf("got ranks %v, want [0 0 0]", got)
	}
}
