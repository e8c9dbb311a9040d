package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/dispatch"
)

func noEnv(string) string { return "" }

// TestSimulateTable runs `dispatcher simulate` on a small workload: the
// table has a row for every strategy, with a figure in every column.
func TestSimulateTable(t *testing.T) {
	var out bytes.Buffer
	args := []string{"simulate", "-scales", "16", "-batches", "40", "-keys", "64"}
	if err := run(context.Background(), args, noEnv, &out, io.Discard); err != nil {
		t.Fatalf("simulate: %v", err)
	}
	rows := make(map[string][]string)
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = f[1:]
		}
	}
	if got := strings.Join(rows["strategy"], " "); got != "spread max/mean w-imbalance mean ms key moves ns/order" {
		t.Errorf("got header %q\n%s", got, out.String())
	}
	for _, st := range dispatch.Strategies {
		if len(rows[string(st)]) != 6 {
			t.Errorf("strategy %s: got row %q, want 6 figures\n%s", st, rows[string(st)], out.String())
		}
	}
}

// TestSimulateWaterfillLevels: on Scales of equal weight and speed,
// waterfill leaves the Scales at most 1 apart after the last batch, and the
// load-aware strategies stay close to it.
func TestSimulateWaterfillLevels(t *testing.T) {
	for seed := range uint64(3) {
		w := simWorkload{Scales: 20, Batches: 60, Load: 0.95, Keys: 100, Seed: seed, Equal: true}
		r, err := w.run(context.Background(), dispatch.Waterfill)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if r.FinalSpread > 1 || r.Spread > 1 {
			t.Errorf("seed %d: got final spread %d, mean spread %.2f, want at most 1", seed, r.FinalSpread, r.Spread)
		}
	}
}

// TestSimulateReproducible: the same flags give the same figures, but for
// the wall time.
func TestSimulateReproducible(t *testing.T) {
	w := simWorkload{Scales: 12, Batches: 30, Load: 0.95, Keys: 50, Seed: 7, SpeedError: 0.3}
	for _, st := range []dispatch.Strategy{dispatch.PowerOfTwo, dispatch.WeightedResponseTime, dispatch.ConsistentHash} {
		a, err := w.run(context.Background(), st)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		b, err := w.run(context.Background(), st)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		a.NsPerOrder, b.NsPerOrder = 0, 0
		if a != b {
			t.Errorf("%s: got %+v, then %+v", st, a, b)
		}
	}
}

func TestSimulateRejects(t *testing.T) {
	for _, args := range [][]string{
		{"-scales", "2"},
		{"-batches", "1"},
		{"-load", "0"},
		{"-keys", "0"},
		{"-speed-error", "1"},
		{"extra"},
		{"-nope"},
	} {
		if err := run(context.Background(), append([]string{"simulate"}, args...), noEnv, io.Discard, io.Discard); err == nil {
			t.Errorf("simulate %v: got nil, want an error", args)
		}
	}
}
