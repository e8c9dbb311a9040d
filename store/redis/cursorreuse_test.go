package redis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestScaleOrdersCursorIDReused: a page ends at order x3; x3 completes,
// its record leaves with the retention, and a new order of the same id
// comes to the same Scale (ids are free again once their order has left).
// The next page must still list the orders after the old x3 that stayed
// outstanding throughout, as store/memory does: only orders that change
// between pages may be skipped (dispatch.Store.ListScaleOrders). A
// cursor that finds "its" order by id alone, assigned there with the
// same moves, goes on after the new x3 instead.
func TestScaleOrdersCursorIDReused(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, redistest.Start(t))
	rs := redis.New(c, redis.Options{Retention: time.Hour})
	ms := memory.New(memory.Options{Retention: time.Hour})
	stores := []dispatch.Store{rs, ms}
	t0 := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		kind  string
		reuse bool
		again string // the id dispatched again ("x3", the cursor's order, or "x4", its neighbour)
	}{{"ids", true, "x3"}, {"named", true, "x3"}, {"ids", false, ""}, {"named", false, ""},
		{"singles", true, "x3"}, {"ids", true, "x4"}, {"singles", true, "x4"}} {
		kind := tc.kind
		t.Run(fmt.Sprintf("%s/reuse=%s", tc.kind, tc.again), func(t *testing.T) {
			for _, st := range stores {
				_ = st.DeletePool(ctx, "p")
				healthPool(t, st, t0, dispatch.PoolSpec{}, "A")
			}
			send := func(now time.Time, ids ...string) {
				req := dispatch.DispatchRequest{Pool: "p", Now: now, MaxCost: dispatch.DefaultMaxCost}
				for _, id := range ids {
					req.Orders = append(req.Orders, dispatch.OrderInput{ID: id})
				}
				if req.BatchID = rs.BatchID(req); kind == "ids" || req.BatchID == "" {
					req.BatchID = "b-" + ids[0] + fmt.Sprint(now.Unix())
				}
				for _, st := range stores {
					if _, _, err := st.Dispatch(ctx, req); err != nil {
						t.Fatalf("Dispatch %v: %v", ids, err)
					}
				}
			}
			var ids []string
			for i := 1; i <= 10; i++ {
				ids = append(ids, fmt.Sprintf("x%d", i))
			}
			if kind == "singles" {
				for _, id := range ids {
					send(t0, id)
				}
			} else {
				send(t0, ids...)
			}
			send(t0, "z1", "z2")
			cursors := make([]string, len(stores))
			for i, st := range stores {
				page, next, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: 3})
				if err != nil || len(page) != 3 || page[2].ID != "x3" || next == "" {
					t.Fatalf("first page: %v, %q, %v", page, next, err)
				}
				cursors[i] = next
			}
			later := t0.Add(2 * time.Hour)
			for _, st := range stores {
				if _, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: "x3"}}, t0); err != nil {
					t.Fatal(err)
				}
				if tc.again == "x4" {
					if _, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: "x4"}}, t0); err != nil {
						t.Fatal(err)
					}
				}
			}
			// x3's record leaves with the retention (a sweep runs with
			// dispatches), then x3 comes again.
			send(later, "y1")
			if tc.again != "" {
				send(later, tc.again)
			}
			var got [2]string
			for i, st := range stores {
				page, _, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: 100, Cursor: cursors[i]})
				if err != nil {
					t.Fatal(err)
				}
				var s []string
				for _, o := range page {
					s = append(s, o.ID)
				}
				got[i] = strings.Join(s, " ")
			}
			if got[0] != got[1] {
				t.Errorf("the page after the first, its cursor's id used again:\nredis  %s\nmemory %s", got[0], got[1])
			}
			checkOwnIndex(t, c, rs, "p")
		})
	}
}
