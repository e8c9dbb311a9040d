package memory_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// heap returns the live heap after a collection.
func heap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// heapPerBatch returns the heap that n batches of 10 orders, dispatched
// and completed, hold per batch, with windows that outlast the
// measurement, each with an Idempotency-Key if keyed.
func heapPerBatch(t *testing.T, n int, keyed bool) float64 {
	t.Helper()
	svc := dispatch.NewService(memory.New(memory.Options{Retention: time.Hour}),
		dispatch.Config{IdempotencyTTL: time.Hour})
	ctx := context.Background()
	if _, _, err := svc.PutPool(ctx, "p", dispatch.PoolSpec{}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, _, err := svc.PutScale(ctx, "p", fmt.Sprintf("scale-%02d", i), dispatch.ScaleSpec{}); err != nil {
			t.Fatal(err)
		}
	}
	before := heap()
	for i := range n {
		in := dispatch.DispatchInput{Pool: "p", Orders: make([]dispatch.OrderInput, 10)}
		if keyed {
			in.IdempotencyKey = fmt.Sprintf("%08x-0000-7000-8000-%012x", i, i)
			sum := sha256.Sum256([]byte(in.IdempotencyKey))
			in.Fingerprint = hex.EncodeToString(sum[:])
		}
		b, _, err := svc.Dispatch(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		cs := make([]dispatch.Completion, 10)
		for j, a := range b.Assignments {
			cs[j] = dispatch.Completion{OrderID: a.OrderID}
		}
		if _, err := svc.Complete(ctx, "p", cs); err != nil {
			t.Fatal(err)
		}
	}
	after := heap()
	runtime.KeepAlive(svc)
	return float64(after-before) / float64(n)
}

// TestSteadyHeap runs a steady load of dispatches and completions with
// windows of 3 s on the embedded store: its heap levels off once the
// windows have passed (the last third of the run adds at most 10 % to the
// heap per batch of a window), at about the batches of the last window ×
// heap per batch (the batches a window holds, not the run's rate, which a
// loaded machine makes uneven; a run whose windows did not hold the rate
// is run again, up to three times in all). It takes 12 s.
func TestSteadyHeap(t *testing.T) {
	const window, run = 3 * time.Second, 12 * time.Second
	var svc *dispatch.Service
	res := storetest.RunSteadyHeld(t, 3, window, storetest.Steady{
		Rate: 100, BatchSize: 10, Duration: run, CallTimeout: time.Second,
	}, func() (*dispatch.Service, func() int64) {
		svc = dispatch.NewService(memory.New(memory.Options{Retention: window}), dispatch.Config{IdempotencyTTL: window})
		return svc, heap
	})
	runtime.KeepAlive(svc)
	plain, keyed := heapPerBatch(t, 2000, false), heapPerBatch(t, 2000, true)

	rate := float64(res.Batches) / run.Seconds()
	share := float64(res.Keyed) / float64(res.Batches)
	perBatch := (1-share)*plain + share*keyed
	want := res.InWindow(1, window) * perBatch
	level := res.Level(1)
	t.Logf("%.0f batches/s of 10 (%.0f%% with a key), %.0f in the last window: heap %.2f MB over the base at 2/3 of the run, %.2f MB at its end; "+
		"its batches × heap per batch say %.2f MB (%.0f B a batch without a key, %.0f B with one): measured/expected %.2f",
		rate, 100*share, res.InWindow(1, window), res.Level(2.0/3)/1e6, level/1e6, want/1e6, plain, keyed, level/want)
	if g := res.Growth(window); g > 0.10 {
		t.Errorf("the last third of the run added %.0f%% to the heap per batch of a window, want at most 10%%", 100*g)
	}
	if ratio := level / want; ratio < 1/1.5 || ratio > 1.5 {
		t.Errorf("heap %.2f MB is %.2f times the last window's batches × heap per batch (%.2f MB), want within a factor 1.5",
			level/1e6, ratio, want/1e6)
	}
}
