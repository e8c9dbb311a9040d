package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestOwnPagingUnderChurn pages through Scale A's orders while, between
// pages, the cursor's order (most times), its neighbours in A's list and
// other orders of A complete, are cancelled or fail over to B, orders of
// B fail back to A, and new batches come (named after their first order,
// by a UUID, plain ids, single orders, some of 20 and more, whose tokens
// seal their tails), on the Redis store and on store/memory side by side,
// in 12 walks of pages of 3 to 52. What the contract promises
// (dispatch.Store.ListScaleOrders, openapi.yaml's listScaleOrders): only
// orders that change between pages may be skipped or repeated. So a walk
// must list every order that was on A when it began and that nothing
// touched until it ended, oldest first (the order of their first
// listing). It logs how many of them a store listed again (with
// PAGECHURN_STRICT set, each one fails the test: the Redis store repeats
// the start of a chunk when a cursor's order and its place are gone).
// Planted: a page that goes on at the next chunk when the cursor's order
// has left its chunk (scale_orders.lua) fails it at the first walk.
// PAGECHURN_SEED=N walks another way.
func TestOwnPagingUnderChurn(t *testing.T) {
	strictRepeats := os.Getenv("PAGECHURN_STRICT") != ""
	ctx := context.Background()
	c := newClient(t, redistest.Start(t))
	seed := walkSeed(t, "PAGECHURN_SEED", 25)
	rng := rand.New(rand.NewPCG(seed, 25))
	rs := redis.New(c, redis.Options{Retention: time.Hour})
	ms := memory.New(memory.Options{Retention: time.Hour})
	stores := []dispatch.Store{rs, ms}
	names := []string{"redis", "memory"}
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	for _, st := range stores {
		healthPool(t, st, now, dispatch.PoolSpec{}, "A", "B")
	}
	seq := 0
	dispatchOne := func() {
		n := []int{1, 1, 3, 8, 20, 40, 120}[rng.IntN(7)]
		req := dispatch.DispatchRequest{Pool: "p", Now: now, MaxCost: dispatch.DefaultMaxCost}
		for range n {
			seq++
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d", seq)})
			req.Rand = append(req.Rand, rng.Uint64N(1<<53), rng.Uint64N(1<<53))
		}
		switch rng.IntN(4) {
		case 0, 1:
			req.BatchID = rs.BatchID(req)
		case 2:
			req.BatchID = uuid.NewString()
		default:
			req.BatchID = fmt.Sprintf("b%d", seq)
		}
		for i, st := range stores {
			if _, _, err := st.Dispatch(ctx, req); err != nil {
				t.Fatalf("%s: Dispatch: %v", names[i], err)
			}
		}
	}
	// on lists a Scale's orders by store/memory, in one page.
	on := func(comp string) []string {
		os, _, err := ms.ListScaleOrders(ctx, "p", comp, dispatch.Page{Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(os))
		for i, o := range os {
			ids[i] = o.ID
		}
		return ids
	}
	// change does one thing to order id (on A, or with back on B), in both
	// stores alike.
	change := func(id string, back bool) {
		var op func(st dispatch.Store) error
		switch k := rng.IntN(3); {
		case back:
			op = func(st dispatch.Store) error {
				_, err := st.Fail(ctx, dispatch.FailRequest{Pool: "p", OrderID: id, CompID: "B", Now: now, Rand: []uint64{1, 2}, MaxCost: dispatch.DefaultMaxCost})
				return err
			}
		case k == 0:
			op = func(st dispatch.Store) error {
				_, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: id}}, now)
				return err
			}
		case k == 1:
			op = func(st dispatch.Store) error {
				_, err := st.Cancel(ctx, "p", id, now)
				return err
			}
		default:
			op = func(st dispatch.Store) error {
				_, err := st.Fail(ctx, dispatch.FailRequest{Pool: "p", OrderID: id, CompID: "A", Now: now, Rand: []uint64{1, 2}, MaxCost: dispatch.DefaultMaxCost})
				return err
			}
		}
		for i, st := range stores {
			if err := op(st); err != nil {
				t.Fatalf("%s: change %s: %v", names[i], id, err)
			}
		}
	}
	for range 30 {
		dispatchOne()
	}
	walks, repeats := 0, make([]int, len(stores))
	for walk := range 12 {
		start := on("A")
		touched := map[string]bool{}
		limit := 3 + rng.IntN(50)
		cursors := make([]string, len(stores))
		listed := make([][]string, len(stores))
		done := make([]bool, len(stores))
		for page := 0; !done[0] || !done[1]; page++ {
			if page > 5000 {
				t.Fatalf("walk %d (limit %d, seed %d): no last page after %d pages: redis %v, memory %v", walk, limit, seed, page, done[0], done[1])
			}
			var last string
			for i, st := range stores {
				if done[i] {
					continue
				}
				os, next, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: limit, Cursor: cursors[i]})
				if err != nil {
					t.Fatalf("walk %d page %d: %s: %v", walk, page, names[i], err)
				}
				for _, o := range os {
					listed[i] = append(listed[i], o.ID)
				}
				if i == 0 && len(os) > 0 {
					last = os[len(os)-1].ID
				}
				cursors[i], done[i] = next, next == ""
			}
			// Between pages: the cursor's order most times, other orders of A,
			// an order of B back to A, and new batches.
			if last != "" && rng.IntN(4) > 0 {
				touched[last] = true
				change(last, false)
			}
			// and often its neighbours in A's list (the entries a cursor may
			// go on from)
			if last != "" && rng.IntN(2) == 0 {
				a := on("A")
				if k := slices.Index(a, last); k >= 0 {
					for _, j := range []int{k - 1, k + 1} {
						if j >= 0 && j < len(a) && rng.IntN(2) == 0 {
							touched[a[j]] = true
							change(a[j], false)
						}
					}
				}
			}
			for range rng.IntN(3) {
				if a := on("A"); len(a) > 0 {
					id := a[rng.IntN(len(a))]
					touched[id] = true
					change(id, false)
				}
			}
			if rng.IntN(3) == 0 {
				if b := on("B"); len(b) > 0 {
					id := b[rng.IntN(len(b))]
					touched[id] = true
					change(id, true)
				}
			}
			if page < 20 && rng.IntN(3) == 0 {
				dispatchOne()
			}
		}
		var want []string
		for _, id := range start {
			if !touched[id] {
				want = append(want, id)
			}
		}
		for i := range stores {
			var got []string
			seen := map[string]int{}
			for _, id := range listed[i] {
				seen[id]++
				if seen[id] == 1 && !touched[id] && slices.Contains(start, id) {
					got = append(got, id)
				}
			}
			for _, id := range want {
				switch seen[id] {
				case 0:
					t.Errorf("walk %d (limit %d, seed %d): %s skips %s, on A throughout and untouched", walk, limit, seed, names[i], id)
				case 1:
				default:
					repeats[i]++
					if strictRepeats {
						t.Errorf("walk %d (limit %d, seed %d): %s lists %s %d times, on A throughout and untouched", walk, limit, seed, names[i], id, seen[id])
					}
				}
			}
			if !t.Failed() && !slices.Equal(got, want) {
				t.Errorf("walk %d (limit %d, seed %d): %s lists the untouched orders out of order:\ngot  %v\nwant %v", walk, limit, seed, names[i], got, want)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		checkOwnIndex(t, c, rs, "p")
		walks++
		for range 1 + rng.IntN(4) {
			dispatchOne()
		}
	}
	t.Logf("%d walks, %d orders dispatched; untouched orders listed again: %v %v", walks, seq, names, repeats)
}
