package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestOwnIndexSkipsEmptiedChunks keeps one order of Scale A outstanding
// while thousands pass through A and finish: the chunks between its chunk
// and the tail empty and go. Listing A's orders, completing the old order
// and deleting A with force read only the chunks that hold orders, not
// every chunk number in between (which grows with every order A ever had).
func TestOwnIndexSkipsEmptiedChunks(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	st := redis.New(c, redis.Options{Retention: time.Hour})
	ctx := context.Background()
	poolWithScales(t, st, "p", 1) // S0
	if _, _, err := st.Dispatch(ctx, batchRequest("p", "stuck", 1)); err != nil {
		t.Fatal(err)
	}
	// churn passes 6,000 orders through S0, some 190 chunks of 32 ids.
	churn := func(name string) {
		t.Helper()
		for b := range 60 {
			req := batchRequest("p", fmt.Sprintf("%s%02d", name, b), 100)
			if _, _, err := st.Dispatch(ctx, req); err != nil {
				t.Fatal(err)
			}
			cs := make([]dispatch.Completion, len(req.Orders))
			for i, o := range req.Orders {
				cs[i] = dispatch.Completion{OrderID: o.ID}
			}
			if _, _, err := st.Complete(ctx, "p", cs, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	churn("b")
	live := batchRequest("p", "live", 30)
	if _, _, err := st.Dispatch(ctx, live); err != nil {
		t.Fatal(err)
	}
	checkOwnIndex(t, c, st, "p")

	// reads counts the HGETs and HEXISTS of what runs.
	reads := func(what string, run func() error) int64 {
		t.Helper()
		resetStats(t, c)
		if err := run(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return commandCalls(t, c, "hget") + commandCalls(t, c, "hexists")
	}
	var page []dispatch.Order
	if n := reads("ListScaleOrders", func() (err error) {
		page, _, err = st.ListScaleOrders(ctx, "p", "S0", dispatch.Page{Limit: 10})
		return err
	}); n > 30 {
		// the chunks that hold orders, the tail, each order and its batch
		t.Errorf("a page of 10 orders read %d entries by HGET, want at most 30", n)
	}
	if len(page) != 10 || page[0].ID != "stuck-o0" || page[1].ID != "live-o0" {
		t.Fatalf("first page: %d orders starting %v, want stuck-o0 then live-o0…", len(page), page)
	}
	if n := reads("Complete", func() error {
		_, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: "stuck-o0"}}, time.Now())
		return err
	}); n > 10 {
		t.Errorf("completing the old order read %d entries by HGET, want at most 10", n)
	}
	checkOwnIndex(t, c, st, "p")
	if _, _, err := st.Dispatch(ctx, batchRequest("p", "stuck2", 1)); err != nil {
		t.Fatal(err)
	}
	churn("c")
	checkOwnIndex(t, c, st, "p")
	if n := reads("DeleteScale", func() error { return st.DeleteScale(ctx, "p", "S0", true, time.Now()) }); n > 40 {
		t.Errorf("a forced delete of 31 orders read %d entries by HGET, want at most 40", n)
	}
	checkOwnIndex(t, c, st, "p")
}

// TestOwnIndexRandomWalk runs a seeded random mix of dispatches (batches
// named after their first order, listed by tokens, and batches named by a
// UUID, listed by ids), completions, cancellations, failure reports,
// reassignments and forced deletes over three Scales with long ids (few
// per chunk, so chunks seal, empty and go in every order), and checks the
// own index after each step: its links, its tokens' counts, and that a
// paged listing of each Scale gives exactly its assigned orders, each once.
func TestOwnIndexRandomWalk(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	st := redis.New(c, redis.Options{Retention: time.Hour})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	scales := []string{"A", "B", "C"}
	if _, _, err := st.PutPool(ctx, "p", dispatch.PoolSpec{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, id := range scales {
		if _, _, err := st.PutScale(ctx, "p", id, dispatch.ScaleSpec{}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	owner := map[string]string{} // assigned order → Scale
	var order []string           // assigned orders, oldest first
	drop := func(id string) {
		delete(owner, id)
		order = slices.DeleteFunc(order, func(o string) bool { return o == id })
	}
	pick := func(k int) []string {
		var ids []string
		for _, i := range rng.Perm(len(order))[:min(k, len(order))] {
			ids = append(ids, order[i])
		}
		return ids
	}
	for step := range 300 {
		now := time.Now()
		switch op := rng.IntN(10); {
		case op < 5: // a batch of long ids
			req := batchRequest("p", fmt.Sprintf("b%03d", step), 1+rng.IntN(30))
			for i := range req.Orders {
				req.Orders[i].ID = fmt.Sprintf("order-%03d-%02d-%s", step, i, strings.Repeat("x", 40))
			}
			if rng.IntN(3) > 0 { // named after its first order
				req.BatchID = st.BatchID(req)
			}
			b, _, err := st.Dispatch(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range b.Assignments {
				owner[a.OrderID] = a.CompID
				order = append(order, a.OrderID)
			}
		case op < 7: // complete some
			var cs []dispatch.Completion
			for _, id := range pick(1 + rng.IntN(20)) {
				cs = append(cs, dispatch.Completion{OrderID: id})
				drop(id)
			}
			if _, _, err := st.Complete(ctx, "p", cs, now); err != nil {
				t.Fatal(err)
			}
		case op < 8 && rng.IntN(2) == 0: // cancel one
			for _, id := range pick(1) {
				if _, err := st.Cancel(ctx, "p", id, now); err != nil {
					t.Fatal(err)
				}
				drop(id)
			}
		case op < 8: // a failure report moves some to another Scale
			for _, id := range pick(1 + rng.IntN(3)) {
				fr, err := st.Fail(ctx, dispatch.FailRequest{Pool: "p", OrderID: id, CompID: owner[id], Now: now,
					Rand: []uint64{rng.Uint64N(1 << 53), rng.Uint64N(1 << 53)}, MaxCost: dispatch.DefaultMaxCost})
				if err != nil {
					t.Fatal(err)
				}
				if !fr.Moved {
					t.Fatalf("failure report of %s on %s moved nothing", id, owner[id])
				}
				owner[id] = fr.Order.CompID
			}
		case op < 9: // a Scale goes down, its orders move, it comes back
			from := scales[rng.IntN(len(scales))]
			setState(t, st, from, dispatch.Down)
			moved, err := st.Reassign(ctx, dispatch.ReassignRequest{Pool: "p", CompID: from, Now: now, MaxCost: dispatch.DefaultMaxCost})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range moved {
				owner[a.OrderID] = a.CompID
			}
			setState(t, st, from, dispatch.Active)
		default: // a Scale is deleted with its orders, and registered again
			gone := scales[rng.IntN(len(scales))]
			if err := st.DeleteScale(ctx, "p", gone, true, now); err != nil {
				t.Fatal(err)
			}
			for _, id := range slices.Clone(order) {
				if owner[id] == gone {
					drop(id)
				}
			}
			if _, _, err := st.PutScale(ctx, "p", gone, dispatch.ScaleSpec{}, now); err != nil {
				t.Fatal(err)
			}
		}
		checkOwnIndex(t, c, st, "p")
		if t.Failed() {
			t.Fatalf("after step %d", step)
		}
		if step%10 != 9 {
			continue
		}
		for _, id := range scales {
			var want []string
			for _, o := range order {
				if owner[o] == id {
					want = append(want, o)
				}
			}
			var got []string
			p := dispatch.Page{Limit: 1 + rng.IntN(7)}
			for {
				page, next, err := st.ListScaleOrders(ctx, "p", id, p)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range page {
					got = append(got, o.ID)
				}
				if next == "" {
					break
				}
				p.Cursor = next
			}
			if !sameSet(got, want) {
				t.Fatalf("step %d: Scale %s lists %d orders, want %d", step, id, len(got), len(want))
			}
		}
	}
}

// setState sets a Scale's state.
func setState(t testing.TB, st *redis.Store, compID string, state dispatch.ScaleState) {
	t.Helper()
	if _, _, err := st.PutScale(context.Background(), "p", compID, dispatch.ScaleSpec{State: &state}, time.Now()); err != nil {
		t.Fatalf("PutScale %s %s: %v", compID, state, err)
	}
}

// sameSet reports whether a and b hold the same ids, each once.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[string]bool, len(a))
	for _, x := range a {
		if seen[x] {
			return false
		}
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}

// TestOwnIndexCursorOfAnEmptiedChunk pages through a Scale of 4,000
// outstanding orders, then completes every order of the chunk the cursor
// names: the next page starts at the next chunk that holds orders, found
// among the next few numbers, without a walk from the lowest chunk.
func TestOwnIndexCursorOfAnEmptiedChunk(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	st := redis.New(c, redis.Options{Retention: time.Hour})
	ctx := context.Background()
	poolWithScales(t, st, "p", 1) // S0
	for b := range 40 {
		if _, _, err := st.Dispatch(ctx, batchRequest("p", fmt.Sprintf("b%02d", b), 100)); err != nil {
			t.Fatal(err)
		}
	}
	p := dispatch.Page{Limit: 100}
	for range 30 {
		_, next, err := st.ListScaleOrders(ctx, "p", "S0", p)
		if err != nil || next == "" {
			t.Fatalf("ListScaleOrders: %q, %v", next, err)
		}
		p.Cursor = next
	}
	chunk, _, _ := strings.Cut(p.Cursor, "+") // ("chunk+moves.orderId")
	v, err := c.HGet(ctx, poolKey("p", "orders"), "|oS0 "+chunk).Result()
	if err != nil {
		t.Fatalf("the cursor's chunk %s: %v", chunk, err)
	}
	var cs []dispatch.Completion
	for _, id := range strings.Split(strings.TrimSuffix(v[strings.LastIndexByte(v, '|')+1:], ","), ",") {
		cs = append(cs, dispatch.Completion{OrderID: id})
	}
	if _, _, err := st.Complete(ctx, "p", cs, time.Now()); err != nil {
		t.Fatal(err)
	}
	checkOwnIndex(t, c, st, "p")
	resetStats(t, c)
	p.Limit = 10
	page, _, err := st.ListScaleOrders(ctx, "p", "S0", p)
	if err != nil || len(page) != 10 {
		t.Fatalf("the page after the emptied chunk: %d orders, %v", len(page), err)
	}
	if n := commandCalls(t, c, "hget") + commandCalls(t, c, "hexists"); n > 30 {
		t.Errorf("the page after the emptied chunk %s read %d entries by HGET, want at most 30", chunk, n)
	}
}
