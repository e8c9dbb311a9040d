package balancing_test

import (
	"math"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestWaterfillExhaustsLikeTheSeed(t *testing.T) {
	// 2^31 picks take about 7 s, and over a minute with the race detector.
	if testing.Short() || raceEnabled {
		t.Skip("dispatches 2^31 orders; runs without -short and -race")
	}
	if math.MaxInt == math.MaxInt32 {
		t.Skip("m cannot exceed LastLevel where int has 32 bits")
	}
	s := balancing.SortLoads(parseLoads("A=0 B=2"))
	picks := 0
	n := balancing.Waterfill(s, int(balancing.LastLevel)+10, func(int) bool { picks++; return true })
	if want := 2 + int(balancing.LastLevel); n != want || picks != want {
		t.Errorf("got %d orders (%d picks), want %d: the seed answers null after its last level", n, picks, want)
	}
}
