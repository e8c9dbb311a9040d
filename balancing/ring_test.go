package balancing_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// The points, computed independently with Python's hashlib: the first 13 hex
// digits of the SHA-1, as Redis's Lua computes them with
// tonumber(redis.sha1hex(s):sub(1, 13), 16).
func TestKeyPoint(t *testing.T) {
	tests := []struct {
		key  string
		want uint64
	}{
		{key: "", want: 0xda39a3ee5e6b4},
		{key: "abc", want: 0xa9993e3647068},
		{key: "order-1", want: 0xea37b42b1c3b6},
	}
	for _, tt := range tests {
		if got := balancing.KeyPoint(tt.key); got != tt.want {
			t.Errorf("KeyPoint(%q) = %#x, want %#x", tt.key, got, tt.want)
		}
	}
}

func TestRingPoints(t *testing.T) {
	got := balancing.RingPoints("S1", 3)
	want := []uint64{0xf3c8bbffe067e, 0x884d5dc2f30b9, 0x57cc9b20d4258} // SHA-1 of "S1#0", "S1#1", "S1#2"
	if !slices.Equal(got, want) {
		t.Errorf("RingPoints(S1, 3) = %#x, want %#x", got, want)
	}
	for _, p := range balancing.RingPoints("S2", balancing.DefaultVNodes) {
		if p >= 1<<52 {
			t.Errorf("point %#x not below 2^52", p)
		}
	}
	if got := balancing.RingPoints("S1", 0); got != nil {
		t.Errorf("RingPoints(S1, 0) = %v, want nil", got)
	}
}

// scaleIDs returns n compIds S00, S01, ….
func scaleIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("S%02d", i)
	}
	return ids
}

// ringKeys is the number of keys the ring tests place.
const ringKeys = 10_000

// owners returns the Scale of each of the keys order-0 … order-9999.
func owners(tb testing.TB, r *balancing.Ring, eligible func(string) bool) []string {
	tb.Helper()
	out := make([]string, ringKeys)
	for i := range out {
		id, ok := r.Lookup("order-"+strconv.Itoa(i), eligible)
		if !ok {
			tb.Fatalf("Lookup(order-%d): no Scale", i)
		}
		out[i] = id
	}
	return out
}

// TestRingRemoveMovesOnlyItsKeys: removing one of N Scales moves exactly the
// keys it held, and ruling it ineligible moves them to the same Scales.
func TestRingRemoveMovesOnlyItsKeys(t *testing.T) {
	r := balancing.NewRing(balancing.DefaultVNodes, scaleIDs(10)...)
	before := owners(t, r, nil)
	skipped := owners(t, r, func(id string) bool { return id != "S03" })
	r.Remove("S03")
	after := owners(t, r, nil)
	moved := 0
	for i := range before {
		switch {
		case before[i] == "S03" && after[i] == "S03":
			t.Fatalf("order-%d still on the removed S03", i)
		case before[i] == "S03":
			moved++
		case after[i] != before[i]:
			t.Fatalf("order-%d moved from %s to %s though S03 was removed", i, before[i], after[i])
		}
		if skipped[i] != after[i] {
			t.Fatalf("order-%d: %s with S03 ineligible, %s with S03 removed", i, skipped[i], after[i])
		}
	}
	if moved == 0 {
		t.Fatal("S03 held no keys")
	}
}

// TestRingAddMovesAboutOneNth: adding an 11th Scale moves keys only to it,
// about 1/11 of them. A Scale's share varies by about 1/√vnodes (±10% at
// 100 points); the tolerance is 3 of those, ±30% of 10,000/11.
func TestRingAddMovesAboutOneNth(t *testing.T) {
	r := balancing.NewRing(balancing.DefaultVNodes, scaleIDs(10)...)
	before := owners(t, r, nil)
	r.Add("S10")
	after := owners(t, r, nil)
	moved := 0
	for i := range before {
		if after[i] != before[i] {
			if after[i] != "S10" {
				t.Fatalf("order-%d moved from %s to %s, not to the new S10", i, before[i], after[i])
			}
			moved++
		}
	}
	want := ringKeys / 11.0
	t.Logf("moved %d of %d keys, 1/11 is %.0f", moved, ringKeys, want)
	if float64(moved) < 0.7*want || float64(moved) > 1.3*want {
		t.Errorf("moved %d keys, want %.0f ± 30%%", moved, want)
	}
}

// TestRingSpread: 10,000 keys over 10 Scales, each within ±30% of 1,000
// (3 standard deviations of a share at 100 points per Scale).
func TestRingSpread(t *testing.T) {
	r := balancing.NewRing(balancing.DefaultVNodes, scaleIDs(10)...)
	counts := map[string]int{}
	for _, id := range owners(t, r, nil) {
		counts[id]++
	}
	t.Logf("keys per Scale: %v", counts)
	for _, id := range scaleIDs(10) {
		if c := counts[id]; c < 700 || c > 1300 {
			t.Errorf("%s holds %d keys, want 700–1300", id, c)
		}
	}
}

func TestRingLookup(t *testing.T) {
	r := balancing.NewRing(1, "A", "B")
	pa, pb := balancing.RingPoints("A", 1)[0], balancing.RingPoints("B", 1)[0]
	lo, hi := min(pa, pb), max(pa, pb)
	owner := map[uint64]string{pa: "A", pb: "B"}
	// Keys before, between and after the two points: the last wrap.
	between, outside := 0, 0
	for i := range 200 {
		key := "k" + strconv.Itoa(i)
		kp := balancing.KeyPoint(key)
		want := owner[lo]
		if kp > lo && kp <= hi {
			want = owner[hi]
			between++
		} else {
			outside++
		}
		if got, ok := r.Lookup(key, nil); !ok || got != want {
			t.Fatalf("Lookup(%s at %#x) over %#x, %#x = %q, %v; want %q", key, kp, lo, hi, got, ok, want)
		}
	}
	if between == 0 || outside == 0 {
		t.Fatalf("%d keys between the points, %d outside: want some of both", between, outside)
	}
	none := func(string) bool { return false }
	if got, ok := r.Lookup("k", none); ok {
		t.Errorf("Lookup with no Scale eligible = %q, want none", got)
	}
	if got, ok := balancing.NewRing(3).Lookup("k", nil); ok {
		t.Errorf("Lookup on an empty ring = %q, want none", got)
	}
}

// TestRingAddRemove: Add and Remove are idempotent, and a ring built by Add
// equals one built at once.
func TestRingAddRemove(t *testing.T) {
	ids := scaleIDs(6)
	whole := balancing.NewRing(20, ids...)
	built := balancing.NewRing(20)
	for _, id := range slices.Backward(ids) {
		built.Add(id)
		built.Add(id)
	}
	built.Remove("nope")
	if built.Len() != 6*20 || whole.Len() != 6*20 {
		t.Fatalf("Len %d and %d, want %d", built.Len(), whole.Len(), 6*20)
	}
	if !slices.Equal(owners(t, whole, nil), owners(t, built, nil)) {
		t.Error("a ring built by Add looks keys up differently from one built at once")
	}
	built.Remove("S02")
	built.Remove("S02")
	if built.Has("S02") || built.Len() != 5*20 {
		t.Errorf("after Remove: Has %v, Len %d; want false, %d", built.Has("S02"), built.Len(), 5*20)
	}
}

func TestNewRingPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewRing(0) did not panic")
		}
	}()
	balancing.NewRing(0)
}
