package balancing_test

import (
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestSlowStartWeight(t *testing.T) {
	const minute = 60_000
	tests := []struct {
		name             string
		w, since, window int64
		want             int64
	}{
		// Dubbo's warm-up: weight 100 over 10 minutes.
		{name: "Dubbo 60 s", w: 100, since: minute, window: 10 * minute, want: 10},
		{name: "Dubbo 5 min", w: 100, since: 5 * minute, window: 10 * minute, want: 50},
		{name: "Dubbo 9 min", w: 100, since: 9 * minute, window: 10 * minute, want: 90},
		{name: "Dubbo 10 min", w: 100, since: 10 * minute, window: 10 * minute, want: 100},
		{name: "after the window", w: 100, since: 60 * minute, window: 10 * minute, want: 100},
		{name: "rounds down", w: 100, since: minute - 1, window: 10 * minute, want: 9},
		{name: "just active: at least 1", w: 100, since: 0, window: 10 * minute, want: 1},
		{name: "clock went back", w: 100, since: -5000, window: 10 * minute, want: 1},
		{name: "weight 1", w: 1, since: 9 * minute, window: 10 * minute, want: 1},
		{name: "no window", w: 100, since: 0, window: 0, want: 100},
		{name: "largest weight", w: 1_000_000, since: 1, window: 1_000_000, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := balancing.SlowStartWeight(tt.w, tt.since, tt.window); got != tt.want {
				t.Errorf("SlowStartWeight(%d, %d, %d) = %d, want %d", tt.w, tt.since, tt.window, got, tt.want)
			}
		})
	}
}
