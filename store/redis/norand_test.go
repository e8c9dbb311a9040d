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
	// sent, if set, sees each dispatch call's rand arguments before the
	// call goes.
	sent func(rands []string)
}

// onSent sets sent.
func (l *randLog) onSent(f func(rands []string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = f
}

func (l *randLog) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (l *randLog) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if r := redis.DispatchRands(cmd.Args()); r != nil {
			l.mu.Lock()
			l.calls = append(l.calls, r)
			sent := l.sent
			l.mu.Unlock()
			if sent != nil {
				sent(r)
			}
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

// randPool is pool p with Scales A to D, which st made and dispatches
// to, on a redis-server where another Store (a replica) changes the
// pool's strategy behind st's back. Every dispatch call st makes goes
// into log.
type randPool struct {
	t         *testing.T
	c         goredis.UniversalClient
	st, other *redis.Store
	log       *randLog
	t0        time.Time
	seq       int
	// source, if set, is the RandSource of batch's batches without ranks.
	source func() uint64
}

// newRandPool makes p on srv; st has opts.
func newRandPool(t *testing.T, srv *redistest.Server, opts redis.Options) *randPool {
	t.Helper()
	p := &randPool{t: t, c: newClient(t, srv), log: &randLog{}, t0: time.Now().Truncate(time.Millisecond)}
	p.c.AddHook(p.log)
	p.st, p.other = redis.New(p.c, opts), newStore(t, srv, redis.Options{})
	ctx := context.Background()
	if _, _, err := p.st.PutPool(ctx, "p", dispatch.PoolSpec{}, p.t0); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"A", "B", "C", "D"} {
		if _, _, err := p.st.PutScale(ctx, "p", id, dispatch.ScaleSpec{}, p.t0); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// setStrategy changes the pool's strategy through the other Store.
func (p *randPool) setStrategy(s dispatch.Strategy) {
	p.t.Helper()
	if _, _, err := p.other.PutPool(context.Background(), "p", dispatch.PoolSpec{Strategy: &s}, p.t0); err != nil {
		p.t.Fatal(err)
	}
}

// batch returns a batch of n new orders whose order i draws rank[i]
// among the eligible Scales of random, by its numbers in Rand if rank is
// set, else from source.
func (p *randPool) batch(n int, rank ...uint64) dispatch.DispatchRequest {
	p.seq++
	req := dispatch.DispatchRequest{Pool: "p", BatchID: fmt.Sprint("b", p.seq), Now: p.t0, RandSource: p.source}
	for i := range n {
		req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d-%d", p.seq, i)})
	}
	if rank != nil {
		req.Rand = make([]uint64, 2*n)
		for i, r := range rank {
			req.Rand[2*i] = r
		}
	}
	return req
}

// expectCalls checks the dispatch calls since the last check, each as
// the lengths of its batches' rand arguments.
func (p *randPool) expectCalls(what string, want [][]int) {
	p.t.Helper()
	if got := p.log.take(); !slices.EqualFunc(got, want, slices.Equal) {
		p.t.Errorf("%s: rand argument lengths by call and batch %v, want %v", what, got, want)
	}
}

// expectCounted checks that the pool counts want orders dispatched, and
// its Scales want outstanding.
func (p *randPool) expectCounted(want int64) {
	p.t.Helper()
	snap, err := p.st.Snapshot(context.Background(), "p", 10, 4)
	if err != nil {
		p.t.Fatal(err)
	}
	var out int64
	for _, sc := range snap.Scales {
		out += sc.Outstanding
	}
	if snap.Counters.Dispatched != want || out != want {
		p.t.Errorf("dispatched %d, outstanding %d, want %d each", snap.Counters.Dispatched, out, want)
	}
}

// dispatched returns the orders' Scales in b, in order.
func dispatched(b dispatch.Batch) string {
	var s []string
	for _, a := range b.Assignments {
		s = append(s, a.CompID)
	}
	return strings.Join(s, " ")
}

// randPerOrder is the length of an order's rand argument: two numbers of
// 14 hex digits (appendRand).
const randPerOrder = 2 * 14

// TestRandomsOnlyWhereDrawn: a Store sends random numbers only to a pool
// whose strategy draws, as the replies it had said, and draws them only
// then. A batch sent without them to a pool whose strategy was changed
// to one that draws (by another Store: a replica) fails in the script
// with NORAND, writing nothing, and goes again with them; alone and in a
// coalesced call, where the batch refused so and those after it (unrun)
// go again, and each gets the picks of its own numbers. A change back to waterfill
// stops them after one call.
func TestRandomsOnlyWhereDrawn(t *testing.T) {
	p := newRandPool(t, redistest.Start(t), redis.Options{})
	ctx, st := context.Background(), p.st
	drawn := 0
	p.source = func() uint64 { drawn++; return 0 }
	dispatchOne := func(req dispatch.DispatchRequest) dispatch.Batch {
		t.Helper()
		b, _, err := st.Dispatch(ctx, req)
		if err != nil {
			t.Fatalf("Dispatch %s: %v", req.BatchID, err)
		}
		return b
	}
	const perOrder = randPerOrder

	// waterfill: nothing drawn, nothing sent
	dispatchOne(p.batch(3))
	p.expectCalls("waterfill", [][]int{{0}})
	if drawn != 0 {
		t.Errorf("waterfill: %d numbers drawn, want 0", drawn)
	}

	// random, unknown to st: refused, sent again with the numbers
	p.setStrategy(dispatch.Random)
	if got := dispatched(dispatchOne(p.batch(3, 2, 0, 3))); got != "C A D" {
		t.Errorf("first batch after the change: Scales %q, want %q (the ranks of its numbers)", got, "C A D")
	}
	p.expectCalls("first batch after the change", [][]int{{0}, {3 * perOrder}})
	if got := dispatched(dispatchOne(p.batch(2, 1, 1))); got != "B B" {
		t.Errorf("second batch: Scales %q, want %q", got, "B B")
	}
	p.expectCalls("second batch", [][]int{{2 * perOrder}})

	// back to waterfill: one call with numbers teaches st
	p.setStrategy(dispatch.Waterfill)
	dispatchOne(p.batch(1))
	dispatchOne(p.batch(1))
	p.expectCalls("back to waterfill", [][]int{{perOrder}, {0}})

	// power-of-two in a coalesced call: batch 1 fails on its own (an order
	// the pool holds), before its numbers count; batch 2 is refused, which
	// stops the call (dispatch_many.lua): 2 and 3 go again, in order
	held := p.batch(1)
	dispatchOne(held)
	p.log.take()
	p.setStrategy(dispatch.PowerOfTwo)
	reqs := []dispatch.DispatchRequest{p.batch(1), p.batch(2, 3, 3), p.batch(1, 0)}
	reqs[0].Orders[0].ID = held.Orders[0].ID
	drawn = 0
	rs := st.DispatchMany(ctx, reqs)
	p.expectCalls("coalesced after the change", [][]int{{0, 0, 0}, {2 * perOrder, 1 * perOrder}})
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
	rs = st.DispatchMany(ctx, []dispatch.DispatchRequest{p.batch(1), p.batch(2)})
	if rs[0].Err != nil || rs[1].Err != nil {
		t.Fatal(rs[0].Err, rs[1].Err)
	}
	p.expectCalls("coalesced, known", [][]int{{perOrder, 2 * perOrder}})
	if drawn != 6 {
		t.Errorf("coalesced, known: %d numbers drawn, want 6", drawn)
	}

	// every order counted once: the refused calls wrote nothing
	// (waterfill 3; random 3, 2; waterfill 1, 1, held 1; coalesced 2 + 1, 1 + 2)
	p.expectCounted(3 + 3 + 2 + 1 + 1 + 1 + 2 + 1 + 1 + 2)
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
