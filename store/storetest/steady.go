package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Steady describes a steady load for a memory test: batches of BatchSize
// orders at Rate batches a second, every other one with an
// Idempotency-Key, each completed at once in one call, for Duration, each
// store call under a deadline of CallTimeout.
type Steady struct {
	Rate, BatchSize int
	Duration        time.Duration
	CallTimeout     time.Duration
	// Measure returns the memory the store holds now, in bytes (Redis's
	// used_memory, the heap of the embedded store).
	Measure func() int64
}

// SteadyResult is what RunSteady saw.
type SteadyResult struct {
	// Base is Measure before the load, once the pool existed.
	Base int64
	// Samples are Measure every SampleEvery, from the start of the load,
	// and Dispatched the batches dispatched by then, at each sample.
	Samples, Dispatched []int64
	// Batches and Keyed count the batches dispatched, Calls the store calls
	// that succeeded (dispatches and completions).
	Batches, Keyed, Calls int64
}

// SampleEvery is how often RunSteady measures.
const SampleEvery = 250 * time.Millisecond

// Level returns the median of the samples taken in the second before
// fraction f of the run (1: its end), less Base: the memory the load holds
// then, robust to the sawtooth of the sweeps.
func (r SteadyResult) Level(f float64) float64 {
	end := int(f * float64(len(r.Samples)))
	start := max(0, end-int(time.Second/SampleEvery))
	w := append([]int64(nil), r.Samples[start:end]...)
	sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
	return float64(w[len(w)/2] - r.Base)
}

// InWindow returns the batches dispatched in the d before fraction f of
// the run, up to the last sample Level(f) reads: the batches whose records
// a window of d holds then. On a loaded machine the load is not even
// (RunSteady's clients fall behind, then catch up), so what the store
// holds follows these, not the run's average rate.
func (r SteadyResult) InWindow(f float64, d time.Duration) float64 {
	end := int(f*float64(len(r.Dispatched))) - 1
	if end < 0 {
		return 0
	}
	var before int64
	if from := end - int(d/SampleEvery); from >= 0 {
		before = r.Dispatched[from]
	}
	return float64(r.Dispatched[end] - before)
}

// Growth returns how much the memory per batch of a window of d grew in
// the last third of the run, as a fraction of what it was at two thirds:
// Level over InWindow at the end against the same at 2/3. Memory that
// levels off at what the window's batches hold stays at 0 however the
// load's rate wandered; a store that keeps what its windows should
// release grows.
func (r SteadyResult) Growth(d time.Duration) float64 {
	at := r.Level(2.0/3) / r.InWindow(2.0/3, d)
	return r.Level(1)/r.InWindow(1, d)/at - 1
}

// Held reports whether the load held its rate, Rate a second, in the
// windows of d that Growth(d) reads, at 2/3 of the run and at its end:
// within 5 % of Rate × d in each. On a loaded machine RunSteady's clients
// fall behind and then catch up (its queue holds 4 s of batches), and a
// burst or a lull leaves the store's memory out of step with the window
// for a while (a hash table grown for a burst stays that size), which
// says nothing of whether memory levels off at a steady load.
func (r SteadyResult) Held(rate int, d time.Duration) bool {
	want := float64(rate) * d.Seconds()
	for _, f := range []float64{2.0 / 3, 1} {
		if n := r.InWindow(f, d); n < 0.95*want || n > 1.05*want {
			return false
		}
	}
	return true
}

// RunSteadyHeld runs the load of sp on pool "steady" of a new store from
// fresh (a Service and the measure of its store's memory), and again on
// another while the load did not hold its rate (Held with d), up to tries
// times; it returns the last run.
func RunSteadyHeld(t testing.TB, tries int, d time.Duration, sp Steady, fresh func() (*dispatch.Service, func() int64)) SteadyResult {
	t.Helper()
	var res SteadyResult
	for try := 1; try <= tries; try++ {
		svc, measure := fresh()
		sp.Measure = measure
		res = RunSteady(t, svc, "steady", sp)
		if res.Held(sp.Rate, d) {
			break
		}
		t.Logf("run %d of the load did not hold %d batches/s: %.0f and %.0f batches in the windows of %s at 2/3 of it and at its end",
			try, sp.Rate, res.InWindow(2.0/3, d), res.InWindow(1, d), d)
	}
	return res
}

// RunSteady runs the load of sp on pool (which it creates, with ten
// Scales) through svc with four concurrent clients, and returns the
// samples. More than 1 % of the calls failing (past their deadline on a
// loaded machine, say) fails t: the load was not the one described.
func RunSteady(t testing.TB, svc *dispatch.Service, pool string, sp Steady) SteadyResult {
	t.Helper()
	ctx := context.Background()
	if _, _, err := svc.PutPool(ctx, pool, dispatch.PoolSpec{}); err != nil {
		t.Fatalf("PutPool: %v", err)
	}
	for i := range 10 {
		if _, _, err := svc.PutScale(ctx, pool, fmt.Sprintf("scale-%02d", i), dispatch.ScaleSpec{}); err != nil {
			t.Fatalf("PutScale: %v", err)
		}
	}
	var batches, keyed, calls, failed atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		if failed.Add(1) == 1 {
			firstErr.Store(err)
		}
	}
	// call runs f under the call deadline.
	call := func(f func(ctx context.Context) error) bool {
		cctx, cancel := context.WithTimeout(ctx, sp.CallTimeout)
		defer cancel()
		if err := f(cctx); err != nil {
			fail(err)
			return false
		}
		calls.Add(1)
		return true
	}
	one := func(n int64) {
		in := dispatch.DispatchInput{Pool: pool, Orders: make([]dispatch.OrderInput, sp.BatchSize)}
		if n%2 != 0 {
			// Keys and fingerprints as clients and the API make them: a
			// UUID and the hex SHA-256 of the request.
			in.IdempotencyKey = fmt.Sprintf("%08x-%04x-7000-8000-%012x", n>>16, n&0xffff, n)
			sum := sha256.Sum256([]byte(in.IdempotencyKey))
			in.Fingerprint = hex.EncodeToString(sum[:])
		}
		var b dispatch.Batch
		if !call(func(ctx context.Context) (err error) { b, _, err = svc.Dispatch(ctx, in); return err }) {
			return
		}
		batches.Add(1)
		if in.IdempotencyKey != "" {
			keyed.Add(1)
		}
		cs := make([]dispatch.Completion, len(b.Assignments))
		for i, a := range b.Assignments {
			cs[i] = dispatch.Completion{OrderID: a.OrderID}
		}
		call(func(ctx context.Context) error { _, err := svc.Complete(ctx, pool, cs); return err })
	}

	// One batch of each kind first, so that every structure exists and
	// the store's code is loaded before the base is measured.
	one(1 << 40)
	one(1<<40 + 1)
	res := SteadyResult{Base: sp.Measure()}
	start := time.Now()
	ticks := make(chan int64, 4*sp.Rate)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range ticks {
				one(n)
			}
		}()
	}
	// Paced: batch n is due at start + n/Rate; a client that fell behind
	// catches up, a queue that overflows drops the batch (counted out).
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := int64(0); ; n++ {
			due := start.Add(time.Duration(n) * time.Second / time.Duration(sp.Rate))
			if due.After(start.Add(sp.Duration)) {
				close(ticks)
				return
			}
			time.Sleep(time.Until(due))
			select {
			case ticks <- n:
			default:
			}
		}
	}()
	for next := start.Add(SampleEvery); !next.After(start.Add(sp.Duration)); next = next.Add(SampleEvery) {
		time.Sleep(time.Until(next))
		res.Samples = append(res.Samples, sp.Measure())
		res.Dispatched = append(res.Dispatched, batches.Load())
	}
	<-done
	wg.Wait()
	if n := failed.Load(); n > 0 {
		if n > (calls.Load()+n)/100 {
			t.Fatalf("%d of %d calls of the steady load failed, the first: %v", n, calls.Load()+n, firstErr.Load())
		}
		t.Logf("%d of %d calls of the steady load failed, the first: %v", n, calls.Load()+n, firstErr.Load())
	}
	res.Batches, res.Keyed, res.Calls = batches.Load(), keyed.Load(), calls.Load()
	return res
}
