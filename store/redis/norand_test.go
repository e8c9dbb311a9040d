package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// randLog is a go-redis hook that keeps the "rand" argument of each batch
// of every dispatch call the client sends, a call per entry.
type randLog struct {
	mu    sync.Mutex
	calls [][]string
}

func (l *randLog) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (l *randLog) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if r := redis.DispatchRands(cmd.Args()); r != nil {
			l.mu.Lock()
			l.calls = append(l.calls, r)
			l.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (l *randLog) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// take returns the calls logged since the last take, each as the lengths
// of its batches' rand arguments.
func (l *randLog) take() [][]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([][]int, len(l.calls))
	for i, c := range l.calls {
		for _, r := range c {
			out[i] = append(out[i], len(r))
		}
	}
	l.calls = nil
	return out
}

// TestRandomsOnlyWhereDrawn: a Store sends random numbers only to a pool
// whose strategy draws, as the replies it had said, and draws them only
// then. A batch sent without them to a pool whose strategy was changed
// to one that draws (by another Store: a replica) fails in the script
// with NORAND, writing nothing, and goes again with them; alone and in a
// coalesced call, where the batch refused so and those after it (unrun)
// go again, and each gets the picks of its own numbers. A change back to waterfill
// stops them after one call.
func TestRandomsOnlyWhereDrawn(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	log := &randLog{}
	c := newClient(t, srv)
	c.AddHook(log)
	st := redis.New(c, redis.Options{})
	other := newStore(t, srv, redis.Options{})
	t0 := time.Now().Truncate(time.Millisecond)
	if _, _, err := st.PutPool(ctx, "p", dispatch.PoolSpec{}, t0); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"A", "B", "C", "D"} {
		if _, _, err := st.PutScale(ctx, "p", id, dispatch.ScaleSpec{}, t0); err != nil {
			t.Fatal(err)
		}
	}
	setStrategy := func(s dispatch.Strategy) {
		t.Helper()
		if _, _, err := other.PutPool(ctx, "p", dispatch.PoolSpec{Strategy: &s}, t0); err != nil {
			t.Fatal(err)
		}
	}
	drawn := 0
	source := func() uint64 { drawn++; return 0 }
	// batch returns a batch whose order i draws rank[i] among the
	// eligible Scales of random, by its numbers in Rand if rank is set,
	// else from the counting source.
	seq := 0
	batch := func(n int, rank ...uint64) dispatch.DispatchRequest {
		seq++
		req := dispatch.DispatchRequest{Pool: "p", BatchID: fmt.Sprint("b", seq), Now: t0, RandSource: source}
		for i := range n {
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d-%d", seq, i)})
		}
		if rank != nil {
			req.Rand = make([]uint64, 2*n)
			for i, r := range rank {
				req.Rand[2*i] = r
			}
		}
		return req
	}
	comps := func(b dispatch.Batch) string {
		var s []string
		for _, a := range b.Assignments {
			s = append(s, a.CompID)
		}
		return strings.Join(s, " ")
	}
	dispatchOne := func(req dispatch.DispatchRequest) dispatch.Batch {
		t.Helper()
		b, _, err := st.Dispatch(ctx, req)
		if err != nil {
			t.Fatalf("Dispatch %s: %v", req.BatchID, err)
		}
		return b
	}
	expectCalls := func(what string, want [][]int) {
		t.Helper()
		if got := log.take(); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s: rand argument lengths by call and batch %v, want %v", what, got, want)
		}
	}
	const perOrder = 2 * 14 // two numbers of 14 hex digits (appendRand)

	// waterfill: nothing drawn, nothing sent
	dispatchOne(batch(3))
	expectCalls("waterfill", [][]int{{0}})
	if drawn != 0 {
		t.Errorf("waterfill: %d numbers drawn, want 0", drawn)
	}

	// random, unknown to st: refused, sent again with the numbers
	setStrategy(dispatch.Random)
	if got := comps(dispatchOne(batch(3, 2, 0, 3))); got != "C A D" {
		t.Errorf("first batch after the change: Scales %q, want %q (the ranks of its numbers)", got, "C A D")
	}
	expectCalls("first batch after the change", [][]int{{0}, {3 * perOrder}})
	if got := comps(dispatchOne(batch(2, 1, 1))); got != "B B" {
		t.Errorf("second batch: Scales %q, want %q", got, "B B")
	}
	expectCalls("second batch", [][]int{{2 * perOrder}})

	// back to waterfill: one call with numbers teaches st
	setStrategy(dispatch.Waterfill)
	dispatchOne(batch(1))
	dispatchOne(batch(1))
	expectCalls("back to waterfill", [][]int{{perOrder}, {0}})

	// power-of-two in a coalesced call: batch 1 fails on its own (an order
	// the pool holds), before its numbers count; batch 2 is refused, which
	// stops the call (dispatch_many.lua): 2 and 3 go again, in order
	held := batch(1)
	dispatchOne(held)
	log.take()
	setStrategy(dispatch.PowerOfTwo)
	reqs := []dispatch.DispatchRequest{batch(1), batch(2, 3, 3), batch(1, 0)}
	reqs[0].Orders[0].ID = held.Orders[0].ID
	drawn = 0
	rs := st.DispatchMany(ctx, reqs)
	expectCalls("coalesced after the change", [][]int{{0, 0, 0}, {2 * perOrder, 1 * perOrder}})
	if drawn != 0 {
		t.Errorf("coalesced: %d numbers drawn from the source, want 0 (batch 1 fails before)", drawn)
	}
	if !errors.Is(rs[0].Err, dispatch.ErrOrderExists) {
		t.Errorf("batch 1: %v, want ErrOrderExists", rs[0].Err)
	}
	for _, i := range []int{1, 2} {
		if rs[i].Err != nil || len(rs[i].Batch.Assignments) != len(reqs[i].Orders) || rs[i].Batch.Strategy != dispatch.PowerOfTwo {
			t.Fatalf("batch %d: %+v, %v", i+1, rs[i].Batch, rs[i].Err)
		}
	}
	rs = st.DispatchMany(ctx, []dispatch.DispatchRequest{batch(1), batch(2)})
	if rs[0].Err != nil || rs[1].Err != nil {
		t.Fatal(rs[0].Err, rs[1].Err)
	}
	expectCalls("coalesced, known", [][]int{{perOrder, 2 * perOrder}})
	if drawn != 6 {
		t.Errorf("coalesced, known: %d numbers drawn, want 6", drawn)
	}

	// every order counted once: the refused calls wrote nothing
	snap, err := st.Snapshot(ctx, "p", 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	var out int64
	for _, sc := range snap.Scales {
		out += sc.Outstanding
	}
	// (waterfill 3; random 3, 2; waterfill 1, 1, held 1; coalesced 2 + 1, 1 + 2)
	if want := int64(3 + 3 + 2 + 1 + 1 + 1 + 2 + 1 + 1 + 2); snap.Counters.Dispatched != want || out != want {
		t.Errorf("dispatched %d, outstanding %d, want %d each", snap.Counters.Dispatched, out, want)
	}
}

// TestTickWaitsForRandoms: a tick of a pool whose strategy draws, sent
// without random numbers by a Store that believed it did not (changed by
// another Store), moves nothing of the lapsed Scale and asks for another
// call (More), which sends them and moves the orders.
func TestTickWaitsForRandoms(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	st, other := newStore(t, srv, redis.Options{}), newStore(t, srv, redis.Options{})
	t0 := time.Now().Truncate(time.Millisecond)
	timeout, reassign := 10*time.Second, dispatch.ReassignLapsed
	if _, _, err := st.PutPool(ctx, "p", dispatch.PoolSpec{HeartbeatTimeout: &timeout, OnLapse: &reassign}, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, t0); err != nil {
		t.Fatal(err)
	}
	req := dispatch.DispatchRequest{Pool: "p", BatchID: "b", Now: t0,
		Orders: []dispatch.OrderInput{{ID: "o1"}, {ID: "o2"}, {ID: "o3"}}}
	if _, _, err := st.Dispatch(ctx, req); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(8 * time.Second)
	for _, id := range []string{"B", "C"} {
		if _, _, err := st.PutScale(ctx, "p", id, dispatch.ScaleSpec{}, t1); err != nil {
			t.Fatal(err)
		}
	}
	random := dispatch.Random
	if _, _, err := other.PutPool(ctx, "p", dispatch.PoolSpec{Strategy: &random}, t1); err != nil {
		t.Fatal(err)
	}
	drawn := 0
	tick := dispatch.TickRequest{Pool: "p", Now: t0.Add(12 * time.Second), Limit: 5,
		RandSource: func() uint64 { drawn++; return uint64(drawn) }}
	r, err := st.Tick(ctx, tick)
	if err != nil || !r.More || len(r.Moves) != 0 || drawn != 0 {
		t.Fatalf("first tick: %+v, %v, %d numbers drawn; want More, no move, none drawn", r, err, drawn)
	}
	r, err = st.Tick(ctx, tick)
	if err != nil || len(r.Moves) != 3 || drawn != 2*tick.Limit {
		t.Fatalf("second tick: %+v, %v, %d numbers drawn; want 3 moves, %d drawn", r, err, drawn, 2*tick.Limit)
	}
	for _, m := range r.Moves {
		if m.From != "A" || (m.To != "B" && m.To != "C") {
			t.Errorf("move %+v, want from A to B or C", m)
		}
	}
}
