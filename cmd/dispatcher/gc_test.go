package main

import (
	"runtime/debug"
	"testing"

	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

func TestTuneGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	if got := tuneGC(envOf(nil)); got != defaultGCPercent || debug.SetGCPercent(100) != defaultGCPercent {
		t.Errorf("without GOGC: target %d, want %d", got, defaultGCPercent)
	}
	debug.SetGCPercent(150) // as the runtime would have set it from GOGC=150
	if got := tuneGC(envOf(map[string]string{"GOGC": "150"})); got != 150 || debug.SetGCPercent(100) != 150 {
		t.Errorf("with GOGC=150: target %d, want 150 left alone", got)
	}
}

// TestRunTunesGCOnRedisOnly: run raises the collector's target for the
// Redis store, whose heap is small, and leaves it for the embedded store,
// whose heap is the pools' state.
func TestRunTunesGCOnRedisOnly(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	t.Run("embedded", func(t *testing.T) {
		startRun(t, nil, nil)
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("embedded store: target %d, want Go's 100 left alone", got)
		}
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		startRun(t, nil, map[string]string{"DISPATCHER_REDIS_URL": srv.URL()})
		if got := debug.SetGCPercent(100); got != defaultGCPercent {
			t.Errorf("Redis store: target %d, want %d", got, defaultGCPercent)
		}
	})
}
