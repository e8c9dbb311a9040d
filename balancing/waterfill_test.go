package balancing_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestWaterfillIDs(t *testing.T) {
	tests := []struct {
		name  string
		loads string
		m     int
		want  string
		after string
	}{
		{
			name:  "worked example",
			loads: "S1=1 S2=5 S3=12",
			m:     22,
			want:  "S1 S1 S1 S1 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S2 S1 S3 S2",
			after: "S1=13 S2=14 S3=13",
		},
		{name: "no orders", loads: "S1=1 S2=5 S3=12", m: 0, want: "", after: "S1=1 S2=5 S3=12"},
		{name: "no Scales", loads: "", m: 3, want: "", after: ""},
		{name: "single Scale", loads: "A=7", m: 3, want: "A A A", after: "A=10"},
		{
			// 2^31-1 mod 3 = 1: the last level starts at rank 1.
			name:  "all equal",
			loads: "A=3 B=3 C=3",
			m:     7,
			want:  "B A C B A C B",
			after: "A=5 B=6 C=5",
		},
		{
			// Byte order puts upper case first: B < Z < a.
			name:  "ties by ID byte order",
			loads: "a=0 Z=0 B=0",
			m:     4,
			want:  "Z B a Z",
			after: "a=1 Z=2 B=1",
		},
		{
			name:  "ties in the middle",
			loads: "x=1 a10=5 a2=5 a1=5",
			m:     8,
			// Byte order: a1 < a10 < a2; 2^31-1 mod 4 = 3.
			want:  "x x x x a2 a10 a1 x",
			after: "x=6 a10=6 a2=6 a1=6",
		},
		{
			// Level 1 holds (2^31-2)*2 orders: a Java int wraps there.
			name:  "difference overflows Java int",
			loads: "A=0 B=1 C=2147483647",
			m:     5,
			want:  "A A B A B",
			after: "A=3 B=3 C=2147483647",
		},
		{
			name:  "level far above 2^31",
			loads: "A=0 B=0 C=0 D=2147483647",
			m:     4,
			want:  "A C B A",
			after: "A=2 B=1 C=1 D=2147483647",
		},
		{
			name:  "counts at the maximum",
			loads: "A=2147483647 B=2147483646",
			m:     3,
			want:  "B A B",
			after: "A=2147483648 B=2147483648",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loads := parseLoads(tt.loads)
			ids := balancing.WaterfillIDs(slices.Clone(loads), tt.m)
			if got := strings.Join(ids, " "); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			addOrders(loads, ids)
			if got := formatLoads(loads); got != tt.after {
				t.Errorf("loads after: got %q, want %q", got, tt.after)
			}
			oracle := oracleIDs(parseLoads(tt.loads), tt.m)
			if got := strings.Join(ids, " "); got != oracle {
				t.Errorf("got %q, seed gives %q", got, oracle)
			}
		})
	}
}

// oracleIDs returns the seed's compIds for m orders over loads.
func oracleIDs(loads []balancing.Load, m int) string {
	sorted := balancing.SortLoads(loads)
	var ids []string
	for _, rank := range seedRanks(sorted, m) {
		ids = append(ids, sorted[rank].ID)
	}
	return strings.Join(ids, " ")
}

func TestWaterfillReturnsCount(t *testing.T) {
	s := balancing.SortLoads(parseLoads("S1=1 S2=5 S3=12"))
	calls := 0
	got := balancing.Waterfill(s, 22, func(int) bool { calls++; return true })
	if got != 22 || calls != 22 {
		t.Errorf("got %d (pick called %d times), want 22", got, calls)
	}
	if got := balancing.Waterfill(balancing.Sorted(nil), 5, func(int) bool { return true }); got != 0 {
		t.Errorf("empty table: got %d, want 0", got)
	}
}

func TestSortLoads(t *testing.T) {
	loads := parseLoads("b=2 a=2 B=2 c=1 a10=0 a9=0")
	got := formatLoads(balancing.SortLoads(loads))
	want := "a10=0 a9=0 c=1 B=2 a=2 b=2"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSortedCountAtMost(t *testing.T) {
	s := balancing.SortLoads(parseLoads("A=1 B=5 C=5 D=12"))
	for _, tt := range []struct {
		c    int64
		want int
	}{{0, 0}, {1, 1}, {4, 1}, {5, 3}, {11, 3}, {12, 4}, {1 << 40, 4}} {
		if got := s.CountAtMost(tt.c); got != tt.want {
			t.Errorf("CountAtMost(%d): got %d, want %d", tt.c, got, tt.want)
		}
	}
}

func TestLoadString(t *testing.T) {
	if got, want := (balancing.Load{ID: "S1", Count: 13}).String(), "S1=13"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPanics(t *testing.T) {
	broken := brokenRanked{balancing.SortLoads(parseLoads("A=1 B=5"))}
	tests := []struct {
		name string
		f    func()
	}{
		{"Waterfill negative m", func() { balancing.Waterfill(balancing.Sorted(nil), -1, nil) }},
		{"WaterfillIDs negative m", func() { balancing.WaterfillIDs(nil, -1) }},
		{"Waterfill inconsistent Ranked", func() { balancing.Waterfill(broken, 1, func(int) bool { return true }) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "balancing: ") {
					t.Errorf("got panic %q, want one prefixed \"balancing: \"", msg)
				}
			}()
			tt.f()
		})
	}
}

// brokenRanked is a Ranked whose CountAtMost disagrees with its order: without
// a check, Waterfill would never leave level 0.
type brokenRanked struct{ balancing.Sorted }

func (brokenRanked) CountAtMost(int64) int { return 0 }
