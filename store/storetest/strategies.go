package storetest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// The reference vectors of DESIGN §3, through the Store interface. Random
// numbers and times are explicit; batches are split to show that the
// strategy's state carries from one batch to the next.

// batchSteps dispatches batches of the sizes given in turn into pool and
// returns their assignments, joined.
func batchSteps(t testing.TB, s dispatch.Store, pool, prefix string, now time.Time, sizes ...int) string {
	t.Helper()
	var got []string
	for i, n := range sizes {
		id := fmt.Sprintf("%s%d", prefix, i)
		got = append(got, compIDs(mustDispatch(t, s, request(pool, id, now, ids(id+"-o", n)...))))
	}
	return strings.Join(got, " ")
}

func testSmoothWeightedRoundRobin(t *testing.T, s dispatch.Store) {
	strategyPool(t, s, "p1", dispatch.SmoothWeightedRoundRobin, "A=0/5 B=0/1 C=0/1")
	// nginx's sequence, across two batches; after Σw = 7 picks the current
	// weights are back at 0 and the cycle repeats.
	wantString(t, "5,1,1 in batches of 3 and 4", batchSteps(t, s, "p1", "b", t0, 3, 4), "A A B A C A A")
	wantString(t, "the next 7", batchSteps(t, s, "p1", "c", t0, 7), "A A B A C A A")
	// Loads do not matter to it.
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{OrderCount: ptr(int64(1000))}, t0)
	wantString(t, "with A loaded", batchSteps(t, s, "p1", "d", t0, 7), "A A B A C A A")
}

func testWeightedRoundRobin(t *testing.T, s dispatch.Store) {
	strategyPool(t, s, "p1", dispatch.WeightedRoundRobin, "A=0/4 B=0/6 C=0/3 D=0/2 E=0/5")
	wantString(t, "4,6,3,2,5 in batches of 7 and 13", batchSteps(t, s, "p1", "b", t0, 7, 13),
		"A A A A B B B B B B C C C D D E E E E E")
	wantString(t, "the next cycle begins", batchSteps(t, s, "p1", "c", t0, 2), "A A")
	// The counter (22) runs on modulo the current total weight: without E
	// it is 15, and 22 mod 15 = 7 falls in B's interval [4, 10).
	putScale(t, s, "p1", "E", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	wantString(t, "E draining", batchSteps(t, s, "p1", "d", t0, 4), "B B B C")
}

func testRoundRobin(t *testing.T, s dispatch.Store) {
	strategyPool(t, s, "p1", dispatch.RoundRobin, "A=0 B=9/3 C=0")
	wantString(t, "A B C across batches", batchSteps(t, s, "p1", "b", t0, 2, 2), "A B C A")
	// D joins: it takes its place in the compId cycle.
	putScale(t, s, "p1", "D", dispatch.ScaleSpec{}, t0)
	wantString(t, "D joins", batchSteps(t, s, "p1", "c", t0, 4), "B C D A")
	// B leaves: skipped.
	putScale(t, s, "p1", "B", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	wantString(t, "B draining", batchSteps(t, s, "p1", "d", t0, 4), "C D A C")
	// The last Scale picked (C) leaves: the cycle goes on after its compId.
	putScale(t, s, "p1", "C", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, t0)
	wantString(t, "C down after its pick", batchSteps(t, s, "p1", "e", t0, 2), "D A")
	// B is back and BB joins between B and C.
	putScale(t, s, "p1", "B", dispatch.ScaleSpec{State: ptr(dispatch.Active)}, t0)
	putScale(t, s, "p1", "BB", dispatch.ScaleSpec{}, t0)
	wantString(t, "B back, BB new", batchSteps(t, s, "p1", "f", t0, 4), "B BB D A")
	// A fills up within a batch and leaves the cycle at once.
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{MaxOrders: ptr(getScale(t, s, "p1", "A").OrderCount() + 1)}, t0)
	wantString(t, "A full after one more", batchSteps(t, s, "p1", "g", t0, 6), "B BB D A B BB")
}

func testWeightedWaterfill(t *testing.T, s dispatch.Store) {
	// (count+1)/weight: A 2/2, 3/2, 4/2 (tied with B's 6/3: A first in
	// compId order), then B 6/3 and 7/3 under A's 5/2, then A.
	strategyPool(t, s, "p1", dispatch.WeightedWaterfill, "A=1/2 B=5/3")
	wantString(t, "weights 2,3, counts 1,5, 6 orders", batchSteps(t, s, "p1", "b", t0, 6), "A A A B B A")
	wantString(t, "loads", loads(t, s, "p1"), "A=5 B=7")
	cands, _ := candidates(t, s, "p1", t0, nil)
	want := strings.Join(balancing.Run(balancing.WeightedWaterfill{}, cands, 10, nil), " ")
	wantString(t, "10 more, as balancing", batchSteps(t, s, "p1", "c", t0, 10), want)
}

func testWeightedResponseTime(t *testing.T, s dispatch.Store) {
	strategyPool(t, s, "p1", dispatch.WeightedResponseTime, "A=0 B=0 C=0")
	// No averages: round robin, whose cursor persists across batches.
	wantString(t, "no data", batchSteps(t, s, "p1", "b", t0, 3), "A B C") // b0-o1..3
	completeWith(t, s, "p1", "b0-o1", 100, at(time.Second))
	wantString(t, "A alone has data", batchSteps(t, s, "p1", "c", t0, 1), "A") // c0-o1
	// A duration of 0 is no report.
	completeWith(t, s, "p1", "b0-o2", 0, at(time.Second))
	wantString(t, "B reported 0", batchSteps(t, s, "p1", "d", t0, 1), "B") // d0-o1
	completeWith(t, s, "p1", "d0-o1", 10, at(time.Second))

	// A 100, B 10, C none counts with the mean 55: weights Σ − avg are
	// 65, 155, 110 on an axis of 330; u = r1/2^53 × 330.
	rnd := []uint64{0, 0, 1 << 52, 0, max53, 0}
	b := mustDispatch(t, s, randRequest("p1", "e", at(time.Second), rnd, ids("e-o", 3)...))
	wantString(t, "weights from the averages", compIDs(b), "A B C")

	// A's second report, 200, moves its average to 100 + 0.2 × 100 = 120:
	// weights 75, 185, 130 on 390. u = 74 falls in A's 75 (a plain mean of
	// 150 would give A 90 of 480, and u = 91 in B).
	completeWith(t, s, "p1", "c0-o1", 200, at(2*time.Second))
	r := func(u float64) uint64 { return uint64(float64(1<<53) * u / 390) }
	b = mustDryRun(t, s, randRequest("p1", "", at(2*time.Second), []uint64{r(74), 0, r(76), 0}, "x1", "x2"))
	wantString(t, "weights from the EWMA", compIDs(b), "A B")

	// DESIGN's vector: averages 100 ms and 10 ms share orders 1:10.
	strategyPool(t, s, "p2", dispatch.WeightedResponseTime, "A=0 B=0")
	mustDispatch(t, s, request("p2", "b", t0, "o1", "o2"))
	completeWith(t, s, "p2", "o1", 100, t0)
	completeWith(t, s, "p2", "o2", 10, t0)
	var rnd2 []uint64
	for k := range 11 {
		rnd2 = append(rnd2, uint64(float64(2*k+1)*float64(1<<53)/22), 0)
	}
	b = mustDispatch(t, s, randRequest("p2", "c", t0, rnd2, ids("c-o", 11)...))
	wantString(t, "100 ms against 10 ms", compIDs(b), "A B B B B B B B B B B")

	// The averages are balancing.EWMA's, bit for bit, fed in request order:
	// after these durations A's average is 322.940672, where
	// 0.8·avg + 0.2·d would give 322.94067200000006, and the draw r1 = edge
	// tells them apart (A, where the other formula gives B).
	strategyPool(t, s, "p3", dispatch.WeightedResponseTime, "A=0 B=0")
	putScale(t, s, "p3", "B", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	mustDispatch(t, s, request("p3", "a", t0, ids("a", 7)...))
	putScale(t, s, "p3", "B", dispatch.ScaleSpec{State: ptr(dispatch.Active)}, t0)
	wantString(t, "B by round robin", compIDs(mustDispatch(t, s, request("p3", "b", t0, "b1"))), "B")
	rec := newEWMARecorder()
	rec.scaleOf = map[string]string{"a1": "A", "a2": "A", "a3": "A", "a4": "A", "a5": "A", "a6": "A", "a7": "A", "b1": "B"}
	var cs []dispatch.Completion
	for i, d := range []int64{177, 559, 288, 204, 278, 324, 540} {
		cs = append(cs, dispatch.Completion{OrderID: fmt.Sprint("a", i+1), DurationMs: d})
	}
	rec.completeMany(t, s, "p3", cs, t0)
	rec.complete(t, s, "p3", "b1", 605, t0)
	const edge = 5872525812855307
	cands, _ := candidates(t, s, "p3", t0, rec.avgs)
	want := strings.Join(balancing.Run(&balancing.WeightedResponseTime{}, cands, 2, []uint64{edge, 0, edge + 1, 0}), " ")
	wantString(t, "reference", want, "A B")
	wantString(t, "exact averages", compIDs(mustDryRun(t, s, randRequest("p3", "", t0, []uint64{edge, 0, edge + 1, 0}, "x1", "x2"))), want)
}

func testLeastConnections(t *testing.T, s dispatch.Store) {
	// B lowest, then B and C tie (smooth round robin over the tie: B), C
	// lowest, then a tie that C wins on its current weight.
	strategyPool(t, s, "p1", dispatch.LeastConnections, "A=5 B=2 C=3")
	wantString(t, "lowest, ties by smooth round robin", batchSteps(t, s, "p1", "b", t0, 4), "B B C C")
	// All tied from empty, per weight; the tie's current weights persist
	// across batches.
	strategyPool(t, s, "p2", dispatch.LeastConnections, "A=0/2 B=0/1 C=0/1")
	wantString(t, "from empty", batchSteps(t, s, "p2", "b", t0, 3, 5), "A B C A C A B A")
	// Completions lower the loads it reads.
	completeWith(t, s, "p2", "b1-o5", 0, t0) // A's
	wantString(t, "after a completion", batchSteps(t, s, "p2", "c", t0, 1), "A")
}

func testPowerOfTwo(t *testing.T, s dispatch.Store) {
	strategyPool(t, s, "p1", dispatch.PowerOfTwo, "A=5 B=1 C=3 D=0/2 E=9")
	putScale(t, s, "p1", "D", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	putScale(t, s, "p1", "E", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, t0)
	// Over the eligible A B C: a = r1 mod 3, b = r2 mod 2, +1 if b >= a.
	for _, tc := range []struct {
		rnd  []uint64
		want string
	}{
		{[]uint64{0, 0}, "B"},         // a A, b B
		{[]uint64{2, 1}, "B"},         // a C, b B
		{[]uint64{1, 1}, "B"},         // a B, b C: a is lower
		{[]uint64{0, 1}, "C"},         // a A, b C
		{[]uint64{max53, max53}, "B"}, // a = 1 (B), b = 1 + 1 (C)
	} {
		b := mustDryRun(t, s, randRequest("p1", "", t0, tc.rnd, "x"))
		wantString(t, fmt.Sprintf("r1 %d r2 %d", tc.rnd[0], tc.rnd[1]), compIDs(b), tc.want)
	}
	// Ties keep a; per weight A at 2/1 loses to B at 3/2; each pick sees
	// the loads of the earlier ones.
	strategyPool(t, s, "p2", dispatch.PowerOfTwo, "A=1 B=1")
	wantString(t, "ties to a", compIDs(mustDryRun(t, s, randRequest("p2", "", t0, []uint64{1, 0}, "x"))), "B")
	strategyPool(t, s, "p3", dispatch.PowerOfTwo, "A=2/1 B=3/2")
	wantString(t, "per weight", compIDs(mustDispatch(t, s, randRequest("p3", "b", t0, nil, "o1", "o2", "o3"))), "B A B")
}

func testConsistentHash(t *testing.T, s dispatch.Store) {
	strategyPool(t, s, "p1", dispatch.ConsistentHash, "S1=0 S2=0 S3=0 S4=0 S5=0")
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprint("cust-", i)
	}
	dispatchKeys := func(batchID string) map[string]string {
		t.Helper()
		req := request("p1", batchID, t0, ids(batchID+"-o", len(keys))...)
		for i := range req.Orders {
			req.Orders[i].Key = keys[i]
		}
		_, scales := candidates(t, s, "p1", t0, nil)
		want := runRing(scales, req.Orders)
		b := mustDispatch(t, s, req)
		wantString(t, "batch "+batchID, compIDs(b), strings.Join(want, " "))
		out := make(map[string]string)
		for i, a := range b.Assignments {
			out[keys[i]] = a.CompID
		}
		return out
	}
	first := dispatchKeys("b1")
	if again := dispatchKeys("b2"); !maps.Equal(first, again) {
		t.Errorf("the same keys went elsewhere the second time")
	}
	// An order without a key goes by its id.
	b := mustDispatch(t, s, request("p1", "b3", t0, keys[7]))
	wantString(t, "order "+keys[7]+" without a key", compIDs(b), first[keys[7]])

	// Removing S3 moves only its keys.
	if err := s.DeleteScale(ctx, "p1", "S3", true, t0); err != nil {
		t.Fatalf("DeleteScale: %v", err)
	}
	without := dispatchKeys("b4")
	moved := 0
	for _, k := range keys {
		switch {
		case first[k] == "S3":
			moved++
		case without[k] != first[k]:
			t.Errorf("key %s moved from %s to %s when S3 left", k, first[k], without[k])
		}
	}
	if moved == 0 {
		t.Errorf("S3 held none of %d keys", len(keys))
	}
	// Adding S6 moves keys only to S6, about 1/5 of them.
	putScale(t, s, "p1", "S6", dispatch.ScaleSpec{}, t0)
	with := dispatchKeys("b5")
	moved = 0
	for _, k := range keys {
		if with[k] != without[k] {
			moved++
			if with[k] != "S6" {
				t.Errorf("key %s moved from %s to %s when S6 joined", k, without[k], with[k])
			}
		}
	}
	if moved < len(keys)/10 || moved > len(keys)/3 {
		t.Errorf("S6 joining moved %d of %d keys, want about 1/5", moved, len(keys))
	}
	// A draining Scale sheds its keys to its successors only; a full one
	// takes no more than its room, within the batch.
	putScale(t, s, "p1", "S2", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	putScale(t, s, "p1", "S4", dispatch.ScaleSpec{MaxOrders: ptr(getScale(t, s, "p1", "S4").OrderCount() + 2)}, t0)
	shed := dispatchKeys("b6")
	got := 0
	for _, k := range keys {
		if shed[k] == "S4" {
			got++
		}
		if with[k] != "S2" && with[k] != "S4" && shed[k] != with[k] {
			t.Errorf("key %s moved from %s to %s", k, with[k], shed[k])
		}
	}
	if got != 2 {
		t.Errorf("S4 with room for 2 got %d orders", got)
	}
}

func testSlowStart(t *testing.T, s dispatch.Store) {
	// Weighted random draws t = r1 mod Σw: with A's effective weight w and
	// B's 1, r1 = w−1 goes to A and r1 = w to B, which pins w.
	strategyPool(t, s, "p1", dispatch.WeightedRandom, "A=0/100 B=0/1")
	if _, _, err := s.PutPool(ctx, "p1", dispatch.PoolSpec{SlowStart: ptr(10 * time.Minute)}, t0); err != nil {
		t.Fatalf("PutPool: %v", err)
	}
	wantWeight := func(now time.Time, w uint64) {
		t.Helper()
		b := mustDryRun(t, s, randRequest("p1", "", now, []uint64{w - 1, 0, w, 0}, "x1", "x2"))
		wantString(t, fmt.Sprintf("A's weight at %s", now.Sub(t0)), compIDs(b), "A B")
	}
	// Dubbo's warm-up table: weight 100, a 10 minute window.
	wantWeight(t0, 1)
	wantWeight(at(time.Minute), 10)
	wantWeight(at(5*time.Minute), 50)
	wantWeight(at(9*time.Minute), 90)
	wantWeight(at(10*time.Minute), 100)
	wantWeight(at(time.Hour), 100)
	wantWeight(at(90*time.Second+999*time.Millisecond), 15)
	// A Scale that recovers warms up again, from when it became active.
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, at(time.Hour))
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{State: ptr(dispatch.Active)}, at(2*time.Hour))
	wantWeight(at(2*time.Hour+3*time.Minute), 30)
	// A new weight ramps at once; no new warm-up.
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{Weight: ptr(int64(200))}, at(2*time.Hour+3*time.Minute))
	wantWeight(at(2*time.Hour+3*time.Minute), 60)
	// Slow start off: the full weight.
	if _, _, err := s.PutPool(ctx, "p1", dispatch.PoolSpec{SlowStart: ptr(time.Duration(0))}, t0); err != nil {
		t.Fatalf("PutPool: %v", err)
	}
	wantWeight(at(2*time.Hour+3*time.Minute), 200)

	// Every weighted strategy sees the ramped weight: smooth weighted round
	// robin over A at 3 (of 10, 18 s into a 60 s window) and B at 1.
	strategyPool(t, s, "p2", dispatch.SmoothWeightedRoundRobin, "B=0/1")
	if _, _, err := s.PutPool(ctx, "p2", dispatch.PoolSpec{SlowStart: ptr(time.Minute)}, t0); err != nil {
		t.Fatalf("PutPool: %v", err)
	}
	putScale(t, s, "p2", "A", dispatch.ScaleSpec{Weight: ptr(int64(10))}, at(time.Minute))
	b := mustDispatch(t, s, request("p2", "b", at(time.Minute+18*time.Second), ids("o", 4)...))
	wantString(t, "A at 3, B at 1", compIDs(b), "A A B A")
}

// testEveryStrategy runs each strategy over the same pool: weights, a
// draining, a down and a full Scale, a Scale that fills up within the batch,
// a single Scale, and no eligible Scale.
func testEveryStrategy(t *testing.T, s dispatch.Store) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, st := range dispatch.Strategies {
		pool := "p-" + string(st)
		// Eligible: A (unlimited) and E (room for 2).
		strategyPool(t, s, pool, st, "A=2 B=0/3 C=0/2 D=4 E=1/2")
		putScale(t, s, pool, "B", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
		putScale(t, s, pool, "C", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, t0)
		putScale(t, s, pool, "D", dispatch.ScaleSpec{MaxOrders: ptr(int64(4))}, t0)
		putScale(t, s, pool, "E", dispatch.ScaleSpec{MaxOrders: ptr(int64(3))}, t0)
		rnd := make([]uint64, 40)
		for i := range rnd {
			rnd[i] = rng.Uint64N(1 << 53)
		}
		req := randRequest(pool, "b1", t0, rnd, ids("o", 20)...)
		for i := range req.Orders {
			req.Orders[i].Key = fmt.Sprint("k", i%7)
		}
		b := mustDispatch(t, s, req)
		if b.Strategy != st {
			t.Errorf("%s: got batch strategy %s", st, b.Strategy)
		}
		for _, a := range b.Assignments {
			if a.CompID != "A" && a.CompID != "E" {
				t.Errorf("%s: order %s went to %s, want A or E", st, a.OrderID, a.CompID)
			}
		}
		if e := getScale(t, s, pool, "E").OrderCount(); e > 3 {
			t.Errorf("%s: E got to %d, over its maxOrders 3", st, e)
		}
		if got := getScale(t, s, pool, "A").OrderCount() + getScale(t, s, pool, "E").OrderCount(); got != 23 {
			t.Errorf("%s: A and E carry %d, want 23", st, got)
		}

		// A single Scale takes everything.
		single := "one-" + string(st)
		strategyPool(t, s, single, st, "A=5/7")
		wantString(t, string(st)+" single Scale", compIDs(mustDispatch(t, s, randRequest(single, "b", t0, rnd, ids("o", 4)...))), "A A A A")

		// Only full, draining and down Scales: refused, nothing changes.
		putScale(t, s, pool, "A", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
		putScale(t, s, pool, "E", dispatch.ScaleSpec{OrderCount: ptr(int64(3))}, t0)
		before := Snapshot(t, s, pool)
		_, _, err := s.Dispatch(ctx, randRequest(pool, "b2", t0, rnd, "x1"))
		wantErr(t, string(st)+" without an eligible Scale", err, dispatch.ErrNoEligibleScale)
		CheckUnchanged(t, s, before)

		// Exactly the room of A (max 2) and E (max 3): filled; one more
		// is refused.
		roomy := "room-" + string(st)
		strategyPool(t, s, roomy, st, "A=0/5 E=0")
		putScale(t, s, roomy, "A", dispatch.ScaleSpec{MaxOrders: ptr(int64(2))}, t0)
		putScale(t, s, roomy, "E", dispatch.ScaleSpec{MaxOrders: ptr(int64(3))}, t0)
		before = Snapshot(t, s, roomy)
		_, _, err = s.Dispatch(ctx, randRequest(roomy, "b1", t0, rnd, ids("o", 6)...))
		wantErr(t, string(st)+" 6 orders for room 5", err, dispatch.ErrNoEligibleScale)
		CheckUnchanged(t, s, before)
		b = mustDispatch(t, s, randRequest(roomy, "b2", t0, rnd, ids("o", 5)...))
		got := strings.Fields(compIDs(b))
		slices.Sort(got)
		wantString(t, string(st)+" filling the room", strings.Join(got, " "), "A A E E E")
	}
}
