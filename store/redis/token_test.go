package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// These tests look at the own index's tokens (layout 8, lua/own.lua): a
// batch named after its first order is one entry "~ref.k" per Scale.

// namedBatch dispatches a batch of the given order ids at now, named after
// its first order as the Service would name it, and returns the Scale of
// each order.
func namedBatch(t testing.TB, st *redis.Store, now time.Time, ids ...string) map[string]string {
	t.Helper()
	req := dispatch.DispatchRequest{Pool: "p", Now: now, MaxCost: dispatch.DefaultMaxCost}
	for i, id := range ids {
		req.Orders = append(req.Orders, dispatch.OrderInput{ID: id})
		req.Rand = append(req.Rand, uint64(i), uint64(i+1))
	}
	if req.BatchID = st.BatchID(req); req.BatchID == "" {
		t.Fatal("the store names no batch of these orders")
	}
	b, _, err := st.Dispatch(context.Background(), req)
	if err != nil {
		t.Fatalf("Dispatch %s: %v", req.BatchID, err)
	}
	out := make(map[string]string, len(ids))
	for _, a := range b.Assignments {
		out[a.OrderID] = a.CompID
	}
	return out
}

// listScale pages through a Scale's orders, limit a page, and returns
// their ids in the order listed and the number of pages.
func listScale(t testing.TB, st dispatch.Store, compID string, limit int, now time.Time) ([]string, int) {
	t.Helper()
	var ids []string
	p, pages := dispatch.Page{Limit: limit}, 0
	for {
		page, next, err := st.ListScaleOrders(context.Background(), "p", compID, p)
		if err != nil {
			t.Fatalf("ListScaleOrders %s: %v", compID, err)
		}
		pages++
		for _, o := range page {
			if o.CompID != compID || o.State != dispatch.Assigned {
				t.Errorf("ListScaleOrders %s lists %+v", compID, o)
			}
			ids = append(ids, o.ID)
		}
		if next == "" {
			return ids, pages
		}
		if pages > 10_000 {
			t.Fatalf("ListScaleOrders %s: no end", compID)
		}
		p.Cursor = next
	}
}

// sweepAll moves pool p's clock to now and sweeps until its records hash
// and queues are gone, or fails.
func sweepAll(t testing.TB, c goredis.UniversalClient, st dispatch.Store, now time.Time) {
	t.Helper()
	ctx := context.Background()
	for range 40 {
		if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, now); err != nil {
			t.Fatal(err)
		}
		if n, _ := c.Exists(ctx, poolKey("p", "orders"), poolKey("p", "oexp"), poolKey("p", "bexp"), poolKey("p", "iexp")).Result(); n == 0 {
			return
		}
	}
	t.Errorf("records left after every window: %v", ownFields(t, c, "p"))
}

// TestOwnTokenMoves dispatches a batch of six named after its first order
// over Scales A and B: each Scale's index holds one token. Orders of it
// fail over to the other Scale, one of them back again (listed once, by
// its id, after the token), one is cancelled, one completed; pages of one
// and two orders give each Scale's orders once, oldest first. Its first
// order leaves after its window while the ref and the assignments stay for
// the token; once the last order leaves, nothing of the batch is left.
func TestOwnTokenMoves(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{Retention: time.Hour})
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	healthPool(t, st, t0, dispatch.PoolSpec{}, "A", "B")
	batch := []string{"m0", "m1", "m2", "m3", "m4", "m5"}
	owner := namedBatch(t, st, t0, batch...)
	// want holds each Scale's orders, oldest first.
	want := map[string][]string{}
	for _, id := range batch {
		want[owner[id]] = append(want[owner[id]], id)
	}
	if len(want["A"]) == 0 || len(want["B"]) == 0 {
		t.Fatalf("the batch went to one Scale: %v", owner)
	}
	own := ownFields(t, c, "p")
	for _, s := range []string{"A", "B"} {
		k := len(want[s])
		if tail := fmt.Sprintf("0|0||~1.%x,", k); own[s] != tail {
			t.Errorf("own index of %s: %q, want the one token %q", s, own[s], tail)
		}
	}
	check := func(what string) {
		t.Helper()
		checkOwnIndex(t, c, st, "p")
		for _, s := range []string{"A", "B"} {
			for _, limit := range []int{1, 2} {
				if got, _ := listScale(t, st, s, limit, t0); !slices.Equal(got, want[s]) {
					t.Errorf("%s: %s lists %v by pages of %d, want %v", what, s, got, limit, want[s])
				}
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	check("dispatched")
	move := func(id string) {
		t.Helper()
		from := owner[id]
		fr, err := st.Fail(ctx, dispatch.FailRequest{Pool: "p", OrderID: id, CompID: from, Now: t0,
			Rand: []uint64{1, 2}, MaxCost: dispatch.DefaultMaxCost})
		if err != nil || !fr.Moved || fr.Order.CompID == from {
			t.Fatalf("Fail %s on %s: %+v, %v", id, from, fr, err)
		}
		to := fr.Order.CompID
		owner[id] = to
		want[from] = slices.DeleteFunc(want[from], func(o string) bool { return o == id })
		want[to] = append(want[to], id)
	}
	finish := func(id string, cancel bool) {
		t.Helper()
		var err error
		if cancel {
			_, err = st.Cancel(ctx, "p", id, t0)
		} else {
			_, _, err = st.Complete(ctx, "p", []dispatch.Completion{{OrderID: id}}, t0)
		}
		if err != nil {
			t.Fatal(err)
		}
		s := owner[id]
		want[s] = slices.DeleteFunc(want[s], func(o string) bool { return o == id })
	}
	// away and back: A's second order goes to B and comes back by its id
	a := slices.Clone(want["A"])
	move(a[len(a)-1])
	check("one order failed over")
	move(a[len(a)-1])
	check("the order back")
	b := slices.Clone(want["B"])
	finish(b[0], true)
	check("one cancelled")

	// The first order completes and leaves after its window; the ref and
	// the assignments stay while the token needs them.
	first := "m0"
	if owner[first] == "A" && len(want["A"]) == 1 || owner[first] == "B" && len(want["B"]) == 1 {
		t.Fatalf("the test wants orders left beside %s: %v", first, want)
	}
	if slices.Contains(want[owner[first]], first) {
		finish(first, false)
	}
	t1 := t0.Add(time.Hour + time.Second)
	if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, t1); err != nil {
		t.Fatal(err)
	}
	all, err := c.HGetAll(ctx, poolKey("p", "orders")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := all[first]; ok {
		t.Errorf("%s stayed after its window", first)
	}
	if all["|p1"] == "" || all["|r1"] == "" {
		t.Errorf("the ref or the assignments left before the batch's last order: %v", all)
	}
	check("the first order gone")
	if _, err := st.GetOrder(ctx, "p", first, t1); !errors.Is(err, dispatch.ErrOrderNotFound) {
		t.Errorf("GetOrder %s after its window: %v, want not found", first, err)
	}

	// The rest complete: the tokens go, and after the window the ref and
	// the assignments with the last order.
	var rest []dispatch.Completion
	for _, s := range []string{"A", "B"} {
		for _, id := range want[s] {
			rest = append(rest, dispatch.Completion{OrderID: id})
		}
		want[s] = nil
	}
	if _, _, err := st.Complete(ctx, "p", rest, t1); err != nil {
		t.Fatal(err)
	}
	if own := ownFields(t, c, "p"); len(own) != 0 {
		t.Errorf("own index after the last order: %v", own)
	}
	check("all done")
	sweepAll(t, c, st, t1.Add(time.Hour+time.Second))
}

// TestOwnTokenLapse gives a batch of 30 named after its first order to
// Scale C alone (one token of 30), lets C's lease lapse, and moves its
// orders with ticks of 4: each tick takes the token's 4 oldest orders and
// leaves the rest in it, so the index stays exact after every tick and C
// lists the orders not yet moved, in the batch's order.
func TestOwnTokenLapse(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{})
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	hb, reassign := time.Second, dispatch.ReassignLapsed
	healthPool(t, st, t0, dispatch.PoolSpec{HeartbeatTimeout: &hb, OnLapse: &reassign}, "C")
	var batch []string
	for i := range 30 {
		batch = append(batch, fmt.Sprintf("l%02d", i))
	}
	namedBatch(t, st, t0, batch...)
	// (a token of 16 orders or more seals its tail as it joins: OWNK)
	if own := ownFields(t, c, "p"); own["C 0"] != "||~1.1e," || own["C"] != "1|0||" {
		t.Fatalf("own index of C: %q, want one token of 30, sealed", own)
	}
	t1 := t0.Add(900 * time.Millisecond)
	for _, id := range []string{"A", "B"} {
		if _, _, err := st.PutScale(ctx, "p", id, dispatch.ScaleSpec{}, t1); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Heartbeat(ctx, "p", id, nil, t1); err != nil {
			t.Fatal(err)
		}
	}
	t2 := t0.Add(1500 * time.Millisecond)
	var moved []string
	for tick := 0; len(moved) < len(batch); tick++ {
		r, err := st.Tick(ctx, dispatch.TickRequest{Pool: "p", Now: t2, Limit: 4, Rand: make([]uint64, 8), MaxCost: dispatch.DefaultMaxCost})
		if err != nil {
			t.Fatalf("Tick: %v", err)
		}
		if len(r.Moves) != 4 && len(r.Moves) != len(batch)-len(moved) || tick > 10 {
			t.Fatalf("tick %d moved %d orders: %+v", tick, len(r.Moves), r.Moves)
		}
		for _, m := range r.Moves {
			if m.From != "C" || m.To == "C" {
				t.Errorf("tick %d: move %+v", tick, m)
			}
			moved = append(moved, m.OrderID)
		}
		if !slices.Equal(moved, batch[:len(moved)]) {
			t.Fatalf("tick %d: moved %v, want the oldest first", tick, moved)
		}
		checkOwnIndex(t, c, st, "p")
		left := len(batch) - len(moved)
		if got, _ := listScale(t, st, "C", 3, t2); !slices.Equal(got, batch[len(moved):]) {
			t.Fatalf("tick %d: C lists %v, want %v", tick, got, batch[len(moved):])
		}
		own := ownFields(t, c, "p")
		if left > 0 && (own["C 0"] != fmt.Sprintf("||~1.%x,", left) || own["C"] != "1|0||") {
			t.Errorf("tick %d: own index of C: %q, want the token of %d", tick, own, left)
		} else if left == 0 && (own["C"] != "" || own["C 0"] != "") {
			t.Errorf("own index of C after the last move: %q", own)
		}
	}
	for _, id := range []string{"A", "B"} {
		got, _ := listScale(t, st, id, 50, t2)
		for _, o := range got {
			if !slices.Contains(batch, o) {
				t.Errorf("%s lists %s", id, o)
			}
		}
	}
}

// TestOwnTokenThousand gives a batch of 1,000 named after its first order
// to one Scale: one token of 1,000, which the next entries join in the
// tail (a tail is sealed on its bytes, not on the orders its tokens stand
// for: own24). Pages of 7
// list it and what came after, oldest first; each page reads the index
// with a few commands. Half of the batch completes, the listing follows,
// and once every order has left, nothing is left after the window.
func TestOwnTokenThousand(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{Retention: time.Hour})
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	healthPool(t, st, t0, dispatch.PoolSpec{}, "A")
	var big []string
	for i := range 1000 {
		big = append(big, fmt.Sprintf("k%04d", i))
	}
	namedBatch(t, st, t0, big...)
	namedBatch(t, st, t0, "n0", "n1", "n2")
	namedBatch(t, st, t0, "s0")
	own := ownFields(t, c, "p")
	if len(own) != 2 || own["A 0"] != "||~1.3e8," || own["A"] != "1|0||~2.3,s0," {
		t.Errorf("own index of A: %q; want the token of 1,000 sealed in chunk 0 (OWNK), then a tail of ~2.3 and s0", own)
	}
	checkOwnIndex(t, c, st, "p")
	want := append(slices.Clone(big), "n0", "n1", "n2", "s0")
	resetStats(t, c)
	got, pages := listScale(t, st, "A", 7, t0)
	if !slices.Equal(got, want) {
		t.Fatalf("A lists %d orders, want %d, oldest first", len(got), len(want))
	}
	// each page: the cursor's order, the tail, its chunk (or a probe), the
	// assignments, one HMGET of the token's orders, and one read of the
	// ref per order shown
	if n := commandCalls(t, c, "hget") + commandCalls(t, c, "hexists") + commandCalls(t, c, "hmget"); n > int64(pages)*(6+7) {
		t.Errorf("%d pages read %d entries, want at most %d", pages, n, pages*(6+7))
	}

	var done []dispatch.Completion
	for i := 0; i < len(big); i += 2 {
		done = append(done, dispatch.Completion{OrderID: big[i]})
	}
	if _, _, err := st.Complete(ctx, "p", done, t0); err != nil {
		t.Fatal(err)
	}
	if own := ownFields(t, c, "p"); own["A 0"] != "||~1.1f4," || own["A"] != "1|0||~2.3,s0," {
		t.Errorf("the token after half of its orders: %q, want ~1.1f4", own)
	}
	checkOwnIndex(t, c, st, "p")
	want = slices.DeleteFunc(want, func(o string) bool {
		var i int
		_, err := fmt.Sscanf(o, "k%04d", &i)
		return err == nil && i%2 == 0
	})
	if got, _ := listScale(t, st, "A", 100, t0); !slices.Equal(got, want) {
		t.Fatalf("A lists %d orders after half the batch, want %d", len(got), len(want))
	}
	var rest []dispatch.Completion
	for _, id := range want {
		rest = append(rest, dispatch.Completion{OrderID: id})
	}
	if _, err := st.Cancel(ctx, "p", rest[0].OrderID, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Complete(ctx, "p", rest[1:], t0); err != nil {
		t.Fatal(err)
	}
	if own := ownFields(t, c, "p"); len(own) != 0 {
		t.Errorf("own index after the last order: %v", own)
	}
	sweepAll(t, c, st, t0.Add(time.Hour+time.Second))
}

// TestOwnTokenIDsLikeScales dispatches a batch named after its first order
// whose order ids are the Scales' ids ("B" to Scale A, "A" to A after an
// order on B): a token's reader, which looks for ",A," in the batch's
// assignments, also finds order A's id, with the Scale before it taken for
// an id, B, an order of A's token: it then reads the pairs one by one.
// Each Scale lists its orders once, in the batch's order.
func TestOwnTokenIDsLikeScales(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{Retention: time.Hour})
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	healthPool(t, st, t0, dispatch.PoolSpec{}, "A", "B", "C")
	batch := []string{"x1", "B", "x3", "x4", "A", "x6"}
	owner := namedBatch(t, st, t0, batch...)
	if owner["B"] != "A" || owner["x4"] != "B" || owner["A"] != "A" {
		t.Fatalf("the waterfill gave %v, want B and A on A after x4 on B", owner)
	}
	want := map[string][]string{}
	for _, id := range batch {
		want[owner[id]] = append(want[owner[id]], id)
	}
	checkOwnIndex(t, c, st, "p")
	for _, s := range []string{"A", "B", "C"} {
		if got, _ := listScale(t, st, s, 2, t0); !slices.Equal(got, want[s]) {
			t.Errorf("%s lists %v, want %v", s, got, want[s])
		}
	}
}

// TestOwnTailOldW starts from tails as builds before own24 wrote them,
// with ".w" (the orders their tokens stood for) after p, and goes on with
// this build: a token joins such a tail as read, one call of one batch
// (ownAppendTok) and one of two (ownPend) alike; the orders list in order;
// a drop rewrites the tail without the ".w", and a tail that fills is
// sealed without it. Then the whole index is as this build writes it.
func TestOwnTailOldW(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{Retention: time.Hour})
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	healthPool(t, st, t0, dispatch.PoolSpec{}, "A")
	seq := 0
	batch := func(n int) []string {
		var ids []string
		for range n {
			seq++
			ids = append(ids, fmt.Sprintf("w%03d", seq))
		}
		return ids
	}
	want := batch(3) // A's orders, oldest first
	namedBatch(t, st, t0, want...)
	// (as an earlier build wrote it: w 3)
	orders := poolKey("p", "orders")
	if err := c.HSet(ctx, orders, "|oA", "0|0|.3|~1.3,").Err(); err != nil {
		t.Fatal(err)
	}
	more := batch(2)
	namedBatch(t, st, t0, more...)
	want = append(want, more...)
	if own := ownFields(t, c, "p"); own["A"] != "0|0|.3|~1.3,~2.2," {
		t.Fatalf("a token after an old tail: %q", own["A"])
	}
	// two batches in one call (ownPend reads the old tail)
	if err := c.HSet(ctx, orders, "|oA", "0|0|.5|~1.3,~2.2,").Err(); err != nil {
		t.Fatal(err)
	}
	var reqs []dispatch.DispatchRequest
	for range 2 {
		req := dispatch.DispatchRequest{Pool: "p", Now: t0, MaxCost: dispatch.DefaultMaxCost}
		for _, id := range batch(2) {
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: id})
			want = append(want, id)
		}
		req.BatchID = st.BatchID(req)
		reqs = append(reqs, req)
	}
	for _, r := range st.DispatchMany(ctx, reqs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if own := ownFields(t, c, "p"); own["A"] != "0|0|.5|~1.3,~2.2,~3.2,~4.2," {
		t.Fatalf("two tokens in one call after an old tail: %q", own["A"])
	}
	if got, _ := listScale(t, st, "A", 3, t0); !slices.Equal(got, want) {
		t.Fatalf("A lists %v, want %v", got, want)
	}
	// a drop rewrites the tail: no ".w"
	if _, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: want[0]}}, t0); err != nil {
		t.Fatal(err)
	}
	want = want[1:]
	if own := ownFields(t, c, "p"); own["A"] != "0|0||~1.2,~2.2,~3.2,~4.2," {
		t.Fatalf("the tail after a drop: %q", own["A"])
	}
	// an old tail that fills is sealed without its ".w"
	if err := c.HSet(ctx, orders, "|oA", "0|0|.9|~1.2,~2.2,~3.2,~4.2,").Err(); err != nil {
		t.Fatal(err)
	}
	for range 60 {
		ids := batch(1 + seq%3)
		namedBatch(t, st, t0, ids...)
		want = append(want, ids...)
	}
	own := ownFields(t, c, "p")
	if s := own["A 0"]; !strings.HasPrefix(s, "||~1.2,~2.2,~3.2,~4.2,") {
		t.Fatalf("the old tail sealed: %q", s)
	}
	checkOwnIndex(t, c, st, "p")
	if got, _ := listScale(t, st, "A", 7, t0); !slices.Equal(got, want) {
		t.Fatalf("A lists %d orders, want %d in order", len(got), len(want))
	}
}
