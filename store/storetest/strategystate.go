package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// costly reports whether st reads every eligible Scale for every order
// (balancing's registry says), and so refuses a batch over MaxCost eligible
// Scales × orders.
func costly(st dispatch.Strategy) bool {
	sp, _ := st.Spec()
	return sp.Cost == balancing.Costly
}

// warmPool creates a pool of strategy st whose state has moved: Scales of
// mixed weights and loads, a batch dispatched, response times reported.
func warmPool(t testing.TB, s dispatch.Store, pool string, st dispatch.Strategy, rng *rand.Rand) {
	t.Helper()
	strategyPool(t, s, pool, st, "A=3/2 B=1/1 C=0/3 D=2/1 E=5/4")
	putScale(t, s, pool, "D", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	req := randRequest(pool, "warm", t0, randoms(rng, 10), ids("w", 5)...)
	b := mustDispatch(t, s, req)
	for i, a := range b.Assignments {
		completeWith(t, s, pool, a.OrderID, int64(10+20*i), t0)
	}
	mustDispatch(t, s, randRequest(pool, "warm2", t0, randoms(rng, 6), ids("v", 3)...))
}

// randoms returns n random numbers below 2^53.
func randoms(rng *rand.Rand, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = rng.Uint64N(1 << 53)
	}
	return out
}

// testStrategyDryRun: for every strategy, a dry run answers what the real
// batch then does, and changes neither the pool nor the strategy's state:
// a twin pool that never saw the dry run goes on identically.
func testStrategyDryRun(t *testing.T, s dispatch.Store) {
	for _, st := range dispatch.Strategies {
		x, y := "x-"+string(st), "y-"+string(st)
		warmPool(t, s, x, st, rand.New(rand.NewPCG(1, 1)))
		warmPool(t, s, y, st, rand.New(rand.NewPCG(1, 1)))
		rng := rand.New(rand.NewPCG(2, 2))
		rnd := randoms(rng, 16)
		orders := ids("d", 8)
		var dry string
		for range 2 {
			dry = compIDs(mustDryRun(t, s, randRequest(x, "", at(time.Second), rnd, orders...)))
		}
		realX := compIDs(mustDispatch(t, s, randRequest(x, "r1", at(time.Second), rnd, orders...)))
		realY := compIDs(mustDispatch(t, s, randRequest(y, "r1", at(time.Second), rnd, orders...)))
		wantString(t, string(st)+" real batch after the dry run", realX, dry)
		wantString(t, string(st)+" twin that saw no dry run", realY, dry)
		rnd = randoms(rng, 16)
		nextX := compIDs(mustDispatch(t, s, randRequest(x, "r2", at(2*time.Second), rnd, ids("e", 8)...)))
		nextY := compIDs(mustDispatch(t, s, randRequest(y, "r2", at(2*time.Second), rnd, ids("e", 8)...)))
		wantString(t, string(st)+" next batch", nextX, nextY)
	}
}

// testStrategyReset: changing the strategy resets its state; setting the
// strategy the pool already has keeps it; averages survive either.
func testStrategyReset(t *testing.T, s dispatch.Store) {
	strategyPool(t, s, "p1", dispatch.SmoothWeightedRoundRobin, "A=0/5 B=0/1 C=0/1")
	wantString(t, "first 3", batchSteps(t, s, "p1", "a", t0, 3), "A A B")
	setStrategy(t, s, "p1", dispatch.SmoothWeightedRoundRobin, t0)
	wantString(t, "same strategy set again: state kept", batchSteps(t, s, "p1", "b", t0, 4), "A C A A")
	wantString(t, "3 more", batchSteps(t, s, "p1", "c", t0, 3), "A A B")
	setStrategy(t, s, "p1", dispatch.RoundRobin, t0)
	wantString(t, "round robin from the start", batchSteps(t, s, "p1", "d", t0, 2), "A B")
	setStrategy(t, s, "p1", dispatch.SmoothWeightedRoundRobin, t0)
	wantString(t, "smooth again, from zero", batchSteps(t, s, "p1", "e", t0, 7), "A A B A C A A")
	setStrategy(t, s, "p1", dispatch.RoundRobin, t0)
	wantString(t, "round robin again, from the start", batchSteps(t, s, "p1", "f", t0, 2), "A B")

	strategyPool(t, s, "p2", dispatch.WeightedRoundRobin, "A=0/2 B=0/1")
	wantString(t, "weighted round robin", batchSteps(t, s, "p2", "a", t0, 2), "A A")
	setStrategy(t, s, "p2", dispatch.Waterfill, t0)
	setStrategy(t, s, "p2", dispatch.WeightedRoundRobin, t0)
	wantString(t, "counter reset", batchSteps(t, s, "p2", "b", t0, 3), "A A B")

	// least-connections' current weights: from fresh state a tie of A
	// (weight 1) and B (weight 2) goes to B, and the next tie to A.
	for _, reset := range []bool{false, true} {
		pool := fmt.Sprint("p3-", reset)
		strategyPool(t, s, pool, dispatch.LeastConnections, "A=0/1 B=0/2")
		wantString(t, "least connections", batchSteps(t, s, pool, "a", t0, 1), "B")
		completeWith(t, s, pool, "a0-o1", 0, t0)
		want := "A"
		if reset {
			setStrategy(t, s, pool, dispatch.Random, t0)
			setStrategy(t, s, pool, dispatch.LeastConnections, t0)
			want = "B"
		}
		wantString(t, fmt.Sprintf("least connections, reset %v", reset), batchSteps(t, s, pool, "b", t0, 1), want)
	}

	// Response-time averages are the Scales' data: they outlive a change
	// of strategy (B, 10 ms against A's 1000 ms, takes the draw at 0.5).
	strategyPool(t, s, "p4", dispatch.WeightedResponseTime, "A=0 B=0")
	mustDispatch(t, s, request("p4", "a", t0, "o1", "o2"))
	completeWith(t, s, "p4", "o1", 1000, t0)
	completeWith(t, s, "p4", "o2", 10, t0)
	setStrategy(t, s, "p4", dispatch.Waterfill, t0)
	setStrategy(t, s, "p4", dispatch.WeightedResponseTime, t0)
	b := mustDryRun(t, s, randRequest("p4", "", t0, []uint64{1 << 52, 0}, "x"))
	wantString(t, "averages kept", compIDs(b), "B")

	// The ring is built when the pool turns to consistent-hash, from every
	// Scale registered by then in any state, and kept while it stays.
	newPool(t, s, "p5", "S1=0 S2=0 S3=0")
	putScale(t, s, "p5", "S4", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, t0)
	setStrategy(t, s, "p5", dispatch.ConsistentHash, t0)
	putScale(t, s, "p5", "S5", dispatch.ScaleSpec{}, t0)
	putScale(t, s, "p5", "S4", dispatch.ScaleSpec{State: ptr(dispatch.Active)}, t0)
	setStrategy(t, s, "p5", dispatch.RoundRobin, t0)
	if err := s.DeleteScale(ctx, "p5", "S2", false, t0); err != nil {
		t.Fatalf("DeleteScale: %v", err)
	}
	putScale(t, s, "p5", "S6", dispatch.ScaleSpec{}, t0)
	setStrategy(t, s, "p5", dispatch.ConsistentHash, t0)
	req := request("p5", "b", t0, ids("k", 200)...)
	_, scales := candidates(t, s, "p5", t0, nil)
	want := strings.Join(runRing(scales, req.Orders), " ")
	wantString(t, "ring of S1 S3 S4 S5 S6", compIDs(mustDispatch(t, s, req)), want)
	for _, id := range []string{"S1", "S3", "S4", "S5", "S6"} {
		if !strings.Contains(want, id) {
			t.Errorf("no key of 200 went to %s", id)
		}
	}
}

// testTooExpensive: the strategies that read every eligible Scale for every
// order refuse a batch of more than MaxCost eligible Scales × orders, and
// change nothing; the others take it.
func testTooExpensive(t *testing.T, s dispatch.Store) {
	for _, st := range dispatch.Strategies {
		pool := "p-" + string(st)
		// 4 eligible Scales (D is draining), 5 orders: a cost of 20.
		warmPool(t, s, pool, st, rand.New(rand.NewPCG(3, 3)))
		twin := "twin-" + string(st)
		warmPool(t, s, twin, st, rand.New(rand.NewPCG(3, 3)))
		rnd := randoms(rand.New(rand.NewPCG(4, 4)), 10)
		req := randRequest(pool, "big", at(time.Second), rnd, ids("x", 5)...)
		req.MaxCost = 19
		before := Snapshot(t, s, pool)
		for _, dry := range []bool{true, false} {
			r := req
			if dry {
				r = dryRun(req)
			}
			_, _, err := s.Dispatch(ctx, r)
			what := fmt.Sprintf("%s: 4 Scales × 5 orders, MaxCost 19, dry run %v", st, dry)
			if !costly(st) {
				if err != nil {
					t.Errorf("%s: got %v, want no cap", what, err)
				}
				continue
			}
			wantErr(t, what, err, dispatch.ErrTooExpensive)
			CheckUnchanged(t, s, before)
			wantGone(t, s, pool, "x1")
			if _, err := s.GetBatch(ctx, pool, "big", t0); err == nil {
				t.Errorf("%s: the refused batch was recorded", what)
			}
		}
		if !costly(st) {
			continue
		}
		// At the cap the batch goes, as it goes in the twin: the refusal
		// left the strategy's state as it was.
		req.MaxCost = 20
		got := compIDs(mustDispatch(t, s, req))
		req.Pool = twin
		wantString(t, string(st)+" at the cap", got, compIDs(mustDispatch(t, s, req)))
	}
}
