package main

import (
	"runtime/debug"
	"testing"
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
