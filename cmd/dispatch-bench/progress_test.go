package main

import (
	"strings"
	"testing"
	"time"
)

// TestProgressLinePhase: a line is labelled with the phase of its interval,
// both phases when the interval saw the change, and gives the rates over
// the interval.
func TestProgressLinePhase(t *testing.T) {
	sample := func(phase string, orders int64) progressSample {
		return progressSample{phase: phase, totals: []namedTotal{{"orders", orders}}}
	}
	for _, tc := range []struct {
		prev, cur   progressSample
		phase, rate string
	}{
		{sample("warmup", 0), sample("warmup", 100), "warmup", "100"},
		{sample("warmup", 100), sample("measure", 300), "warmup→measure", "200"},
		{sample("measure", 300), sample("measure", 600), "measure", "300"},
	} {
		got := strings.Fields(progressLine(2*time.Second, time.Second, tc.prev, tc.cur))
		if len(got) < 4 || got[1] != tc.phase || got[2] != "orders/s" || got[3] != tc.rate {
			t.Errorf("got %q, want phase %s and orders/s %s", got, tc.phase, tc.rate)
		}
	}
}
