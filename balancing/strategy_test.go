package balancing_test

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// TestRegistryShape: names are unique and the default comes first; New is
// set exactly for the Pickers; the cheap Pickers are RankPickers; a
// Stateful strategy's Picker is a pointer that Clone copies, a stateless
// one a value that Clone returns as it is.
func TestRegistryShape(t *testing.T) {
	all := balancing.Strategies()
	if len(all) == 0 || all[0].Name != "waterfill" {
		t.Fatalf("registry starts with %v, want waterfill, the default", all)
	}
	seen := map[string]bool{}
	for _, s := range all {
		if s.Name == "" || seen[s.Name] {
			t.Errorf("name %q empty or twice", s.Name)
		}
		seen[s.Name] = true
		if got, ok := balancing.Lookup(s.Name); !ok || got.Name != s.Name {
			t.Errorf("Lookup(%q) = %v, %v", s.Name, got.Name, ok)
		}
		if s.Cost != balancing.Cheap && s.Cost != balancing.Costly {
			t.Errorf("%s: cost %v, want cheap or costly", s.Name, s.Cost)
		}
		if (s.New != nil) != (s.Kind == balancing.PerOrder) {
			t.Errorf("%s: kind %v, New set %v: want New exactly for PerOrder", s.Name, s.Kind, s.New != nil)
			continue
		}
		if s.New == nil {
			if s.Cost != balancing.Cheap || s.Stateful || s.Random {
				t.Errorf("%s: a strategy that is not a Picker must be cheap, keep no Picker state and draw nothing", s.Name)
			}
			continue
		}
		p := s.New()
		if _, ok := p.(balancing.RankPicker); s.Cost == balancing.Cheap && !ok {
			t.Errorf("%s: cheap, but %T is no RankPicker", s.Name, p)
		}
		ptr := reflect.ValueOf(p).Kind() == reflect.Pointer
		if ptr != s.Stateful {
			t.Errorf("%s: Stateful %v, but its Picker %T is a pointer: %v", s.Name, s.Stateful, p, ptr)
		}
		if c := balancing.Clone(p); (c == p) == s.Stateful {
			t.Errorf("%s: Stateful %v, but Clone returned the Picker itself: %v", s.Name, s.Stateful, c == p)
		}
	}
	if _, ok := balancing.Lookup("nope"); ok {
		t.Error(`Lookup("nope"): found`)
	}
	all[0].Name = "changed"
	if balancing.Strategies()[0].Name != "waterfill" {
		t.Error("changing the slice Strategies returned changed the registry")
	}
}

// TestRegistryFlags: the flags say what the Pickers do. Over the same
// loads and random numbers, a strategy that is not Weighted picks the same
// with other weights; a Weighted one picks differently for some. A
// stateless one picks the same on a second run of the same batch; a
// stateful one differs on some. A strategy that is not Random picks the
// same with other random numbers; a Random one differs on some.
func TestRegistryFlags(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	for _, s := range balancing.Strategies() {
		if s.New == nil {
			continue
		}
		weightShows, stateShows, randShows := false, false, false
		for trial := range 50 {
			n := 2 + rng.IntN(6)
			plain := make([]balancing.Candidate, n)
			for i := range plain {
				plain[i] = balancing.Candidate{ID: "S" + strconv.Itoa(i), Count: rng.Int64N(10), Weight: 1}
				if trial%2 == 0 {
					plain[i].AvgMs, plain[i].HasAvg = float64(1+rng.IntN(200)), true
				}
			}
			weighted := slices.Clone(plain)
			for i := range weighted {
				weighted[i].Weight = 1 + rng.Int64N(9)
			}
			m := n + 1 // not a whole round of the round robins
			rnd := make([]uint64, 2*m)
			for i := range rnd {
				rnd[i] = rng.Uint64N(1 << 53)
			}
			a := balancing.Run(s.New(), slices.Clone(plain), m, rnd)
			b := balancing.Run(s.New(), weighted, m, rnd)
			weightShows = weightShows || !slices.Equal(a, b)
			p := s.New()
			first := balancing.Run(p, slices.Clone(plain), m, rnd)
			second := balancing.Run(p, slices.Clone(plain), m, rnd)
			stateShows = stateShows || !slices.Equal(first, second)
			other := make([]uint64, len(rnd))
			for i := range other {
				other[i] = rng.Uint64N(1 << 53)
			}
			c := balancing.Run(s.New(), slices.Clone(plain), m, other)
			randShows = randShows || !slices.Equal(a, c)
		}
		if weightShows != s.Weighted {
			t.Errorf("%s: Weighted %v, but weights changed its picks: %v", s.Name, s.Weighted, weightShows)
		}
		if stateShows != s.Stateful {
			t.Errorf("%s: Stateful %v, but its state changed its picks: %v", s.Name, s.Stateful, stateShows)
		}
		if randShows != s.Random {
			t.Errorf("%s: Random %v, but the random numbers changed its picks: %v", s.Name, s.Random, randShows)
		}
	}
}

// countingRanks is Ranks over candidates that counts the Scales read.
type countingRanks struct {
	balancing.Candidates
	reads int
}

func (r *countingRanks) At(i int) balancing.Candidate {
	r.reads++
	return r.Candidates[i]
}

// TestRankPickersReadLittle: a cheap Picker reads at most two Scales per
// pick through Ranks (the rest is After's binary search, which the index
// answers), and picks as its Pick does over the same candidates, leaving
// the same state.
func TestRankPickersReadLittle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, s := range balancing.Strategies() {
		if s.New == nil || s.Cost != balancing.Cheap {
			continue
		}
		cands := make([]balancing.Candidate, 1000)
		for i := range cands {
			cands[i] = balancing.Candidate{ID: strconv.Itoa(100000 + i), Count: rng.Int64N(50), Weight: 1 + rng.Int64N(5)}
		}
		byRank, bySlice := s.New().(balancing.RankPicker), s.New()
		r := &countingRanks{Candidates: slices.Clone(cands)}
		for k := range 200 {
			r1, r2 := rng.Uint64N(1<<53), rng.Uint64N(1<<53)
			before := r.reads
			got := byRank.PickRank(r, r1, r2)
			if reads := r.reads - before; reads > 2 {
				t.Errorf("%s: pick %d read %d Scales of 1000, want at most 2", s.Name, k, reads)
			}
			if want := bySlice.Pick(cands, r1, r2); got != want {
				t.Fatalf("%s: pick %d: PickRank %d, Pick %d", s.Name, k, got, want)
			}
			r.Candidates[got].Count++
			cands[got].Count++
		}
	}
}
