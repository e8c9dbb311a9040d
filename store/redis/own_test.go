package redis_test

import (
	"context"
	"fmt"
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
