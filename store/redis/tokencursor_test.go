package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestOwnTokenCursorOrderLeft pages through a Scale whose orders are
// tokens of batches named after their first order (a sealed chunk of some
// 40 tokens, about 170 orders, then the tail with a token of 150), and
// between pages the cursor's order (the last one listed)
// completes, fails over to the other Scale or is cancelled. Each page must
// list what store/memory lists: the orders after the cursor's, none twice
// and none lost. (Before, a cursor whose order had left its chunk resumed
// at the chunk's start, and a chunk of tokens stands for many orders: a
// page of 30 listed its chunk's first orders again.)
func TestOwnTokenCursorOrderLeft(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, redistest.Start(t))
	rs := redis.New(c, redis.Options{Retention: time.Hour})
	ms := memory.New(memory.Options{Retention: time.Hour})
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	stores := []dispatch.Store{rs, ms}
	for _, st := range stores {
		healthPool(t, st, t0, dispatch.PoolSpec{}, "A", "B")
	}
	seq := 0
	sizes := []int{300, 60}
	for range 50 { // (a tail is sealed at 256 bytes: some 42 tokens)
		sizes = append([]int{8}, sizes...)
	}
	for _, n := range sizes {
		req := dispatch.DispatchRequest{Pool: "p", Now: t0, MaxCost: dispatch.DefaultMaxCost}
		for range n {
			seq++
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d", seq)})
			req.Rand = append(req.Rand, uint64(seq), uint64(seq+1))
		}
		req.BatchID = rs.BatchID(req)
		for _, st := range stores {
			if _, _, err := st.Dispatch(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	if own := ownFields(t, c, "p"); own["A 0"] == "" || own["A"] == "" {
		t.Fatalf("A's index should be a sealed chunk and a tail: %v", own)
	}
	// What becomes of each page's last order before the next page.
	changes := []func(st dispatch.Store, id string) error{
		func(st dispatch.Store, id string) error {
			_, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: id}}, t0)
			return err
		},
		func(st dispatch.Store, id string) error {
			_, err := st.Fail(ctx, dispatch.FailRequest{Pool: "p", OrderID: id, CompID: "A", Now: t0, Rand: []uint64{1, 2}, MaxCost: dispatch.DefaultMaxCost})
			return err
		},
		func(st dispatch.Store, id string) error {
			_, err := st.Cancel(ctx, "p", id, t0)
			return err
		},
		func(dispatch.Store, string) error { return nil },
	}
	cursors := make([]string, len(stores))
	listed := map[string]bool{}
	for page := 0; ; page++ {
		var got [2]string
		var last string
		for i, st := range stores {
			os, next, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: 30, Cursor: cursors[i]})
			if err != nil {
				t.Fatal(err)
			}
			got[i] = fmt.Sprint(len(os), next != "")
			for _, o := range os {
				got[i] += " " + o.ID
				if i == 0 {
					if listed[o.ID] {
						t.Errorf("page %d lists %s again", page, o.ID)
					}
					listed[o.ID] = true
				}
				last = o.ID
			}
			cursors[i] = next
		}
		if got[0] != got[1] {
			t.Fatalf("page %d:\nredis  %s\nmemory %s", page, got[0], got[1])
		}
		if cursors[0] == "" {
			if page < 9 {
				t.Fatalf("%d pages, want 10 or more", page+1)
			}
			break
		}
		for _, st := range stores {
			if err := changes[page%len(changes)](st, last); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkOwnIndex(t, c, rs, "p")
}

// TestOwnCursorOrderMovedBack pages through Scale A, and between two pages
// the cursor's order (the last one listed) fails over to B and back to A,
// where it joins A's tail as an id of its own, in the chunk the cursor
// names. The next pages must still list every order of A after the
// cursor's: a page that went on from the order's new place would skip the
// orders between its old place and its new one (it did, before the cursor
// carried the order's moves). A batch named after its first order (A's
// orders a token) must page as store/memory does; one named by a UUID (an
// id per order) may list orders of its chunk again, but lose none.
func TestOwnCursorOrderMovedBack(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	for _, named := range []bool{true, false} {
		const pool = "p" // (healthPool's)
		c := newClient(t, redistest.Start(t))
		rs := redis.New(c, redis.Options{Retention: time.Hour})
		ms := memory.New(memory.Options{Retention: time.Hour})
		stores := []dispatch.Store{rs, ms}
		req := dispatch.DispatchRequest{Pool: pool, Now: t0, MaxCost: dispatch.DefaultMaxCost}
		for k := range 20 {
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d", k)})
			req.Rand = append(req.Rand, uint64(k), uint64(k+1))
		}
		req.BatchID = "0190a6e4-7a1b-7c3d-8e4f-5a6b7c8d9e0f"
		if named {
			req.BatchID = rs.BatchID(req)
		}
		for _, st := range stores {
			healthPool(t, st, t0, dispatch.PoolSpec{}, "A", "B")
			if _, _, err := st.Dispatch(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		onA := map[string]bool{}
		all, _, err := rs.ListScaleOrders(ctx, pool, "A", dispatch.Page{Limit: 100})
		if err != nil || len(all) < 6 {
			t.Fatalf("A holds %d orders (%v), want 6 or more", len(all), err)
		}
		for _, o := range all {
			onA[o.ID] = true
		}
		cursors := make([]string, 2)
		listed := map[string]bool{}
		for page := 0; ; page++ {
			var got [2]string
			var last string
			for i, st := range stores {
				os, next, err := st.ListScaleOrders(ctx, pool, "A", dispatch.Page{Limit: 3, Cursor: cursors[i]})
				if err != nil {
					t.Fatal(err)
				}
				got[i] = fmt.Sprint(next != "")
				for _, o := range os {
					got[i] += " " + o.ID
					if i == 0 {
						listed[o.ID] = true
					}
					last = o.ID
				}
				cursors[i] = next
			}
			if named && got[0] != got[1] {
				t.Fatalf("named batch, page %d:\nredis  %s\nmemory %s", page, got[0], got[1])
			}
			if cursors[0] == "" {
				break
			}
			if page > 0 {
				continue
			}
			// after the first page, its last order goes to B and back
			for _, st := range stores {
				for _, from := range []string{"A", "B"} {
					r, err := st.Fail(ctx, dispatch.FailRequest{Pool: pool, OrderID: last, CompID: from, Now: t0, Rand: []uint64{1, 2}, MaxCost: dispatch.DefaultMaxCost})
					if err != nil || !r.Moved {
						t.Fatalf("fail %s on %s: %+v, %v", last, from, r, err)
					}
				}
			}
		}
		for id := range onA {
			if !listed[id] {
				t.Errorf("named %v: %s of A was never listed", named, id)
			}
		}
	}
}
