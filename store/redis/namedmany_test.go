package redis_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestNamedCoalesced sends named batches in one DispatchMany call, as the
// coalescer does: two batches of one order, another request for the
// first's order id under another tag (EXISTS), and a batch of two. The
// call sent again, as go-redis re-sends a script whose reply was lost,
// answers every batch as first and dispatches nothing more. The named
// batches leave no batch record nor queue entry, dispatcher_records counts
// their orders and no batch, and once every order has left the pool holds
// nothing of them.
func TestNamedCoalesced(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{})
	mustPool(t, dispatch.NewService(st, dispatch.Config{}), "p", "A")
	reg := prometheus.NewRegistry()
	reg.MustRegister(st.OutstandingCollector(func(p string) string { return p }, 10))
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	req := func(id string, orders ...string) dispatch.DispatchRequest {
		r := dispatch.DispatchRequest{Pool: "p", BatchID: id, Now: t0}
		for _, o := range orders {
			r.Orders = append(r.Orders, dispatch.OrderInput{ID: o})
		}
		return r
	}
	reqs := []dispatch.DispatchRequest{req("c1:00000000000a", "c1"), req("c2:00000000000b", "c2"),
		req("c1:00000000000c", "c1"), req("c3:00000000000d", "c3", "c4")}
	var first []dispatch.Batch
	byID := map[string]dispatch.Batch{}
	for round := range 2 {
		rs := st.DispatchMany(ctx, reqs)
		if len(rs) != len(reqs) {
			t.Fatalf("round %d: %d results for %d requests", round, len(rs), len(reqs))
		}
		for i, r := range rs {
			if i == 2 {
				if !errors.Is(r.Err, dispatch.ErrOrderExists) {
					t.Errorf("round %d: another batch of c1: %v, want it exists", round, r.Err)
				}
				continue
			}
			if r.Err != nil || r.Replayed || r.Batch.ID != reqs[i].BatchID || len(r.Batch.Assignments) != len(reqs[i].Orders) {
				t.Fatalf("round %d: %s: %+v, want the batch", round, reqs[i].BatchID, r)
			}
			if round == 0 {
				first, byID[r.Batch.ID] = append(first, r.Batch), r.Batch
			} else if want := byID[r.Batch.ID]; fmt.Sprint(r.Batch) != fmt.Sprint(want) {
				t.Errorf("re-sent %s: %+v, want %+v", reqs[i].BatchID, r.Batch, want)
			}
		}
	}
	if n := sumOutstanding(t, st, "p"); n != 4 {
		t.Errorf("outstanding after the re-send: %d, want 4", n)
	}
	if got, want := orderFields(t, c, "p"), "[c1 c2 c3 c4 |oA |p1 |r1]"; got != want {
		t.Errorf("fields of orders: %s, want %s", got, want)
	}
	got := gather(t, reg)
	for kind, want := range map[string]float64{"orders": 4, "batches": 0, "keys": 0} {
		if g := got.value("dispatcher_records", "pool", "p", "kind", kind); g != want {
			t.Errorf("dispatcher_records %s: %v, want %v", kind, g, want)
		}
	}
	for _, b := range first {
		if g, err := st.GetBatch(ctx, "p", b.ID, t0.Add(time.Hour)); err != nil || fmt.Sprint(g) != fmt.Sprint(b) {
			t.Errorf("GetBatch %s: %+v, %v; want %+v", b.ID, g, err, b)
		}
	}
	if _, err := st.GetBatch(ctx, "p", "c1:00000000000c", t0); !errors.Is(err, dispatch.ErrBatchNotFound) {
		t.Errorf("GetBatch of the refused batch: %v, want not found", err)
	}

	if _, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: "c1"}, {OrderID: "c2"}, {OrderID: "c3"}, {OrderID: "c4"}}, t0); err != nil {
		t.Fatal(err)
	}
	end := t0.Add(24*time.Hour + time.Millisecond)
	if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, end); err != nil {
		t.Fatal(err)
	}
	for _, b := range first {
		if _, err := st.GetBatch(ctx, "p", b.ID, end); !errors.Is(err, dispatch.ErrBatchNotFound) {
			t.Errorf("GetBatch %s after its window: %v, want not found", b.ID, err)
		}
	}
	for _, k := range []string{"orders", "bexp", "oexp", "iexp"} {
		if n, err := c.Exists(ctx, poolKey("p", k)).Result(); err != nil || n != 0 {
			t.Errorf("%s still exists after every window (orders: %s)", k, orderFields(t, c, "p"))
		}
	}
}

// TestNamedStaleFirstOrder: the first order of a named batch of two
// completes; after the retention, before any sweep, a new batch of that
// order id replaces its record. The old batch's ref and assignments stay
// for the other order (its Scale's token reads them, layout 8), which
// still names the old batch (404 now, its window over) and is listed once;
// the new batch reads back, and once both orders have left, nothing of
// either batch is left.
func TestNamedStaleFirstOrder(t *testing.T) {
	c, st, _ := poolOfA(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old := dispatch.DispatchRequest{Pool: "p", BatchID: "m1:0000000000aa", Now: t0,
		Orders: []dispatch.OrderInput{{ID: "m1"}, {ID: "m2"}}}
	if _, _, err := st.Dispatch(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: "m1"}}, t0); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(24*time.Hour + time.Second)
	next := dispatch.DispatchRequest{Pool: "p", BatchID: "m1:0000000000bb", Now: later,
		Orders: []dispatch.OrderInput{{ID: "m1"}}}
	b, _, err := st.Dispatch(ctx, next)
	if err != nil {
		t.Fatalf("a new batch of m1 after its retention: %v", err)
	}
	all, err := c.HGetAll(ctx, poolKey("p", "orders")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if all["|p1"] != "A,A,|m1,m2" {
		t.Errorf("the old batch's assignments after its first order was replaced: %v", all)
	}
	checkOwnIndex(t, c, st, "p")
	if page, _, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{}); err != nil || len(page) != 2 || page[0].ID != "m2" || page[1].ID != "m1" {
		t.Errorf("ListScaleOrders A: %v, %v; want m2 (the old batch's token), m1", page, err)
	}
	if want := fmt.Sprintf(":0000000000aaa|%x|1|m1", t0.UnixMilli()); all["|r1"] != want {
		t.Errorf("the old batch's ref: %q, want %q", all["|r1"], want)
	}
	if o, err := st.GetOrder(ctx, "p", "m2", later); err != nil || o.BatchID != old.BatchID {
		t.Errorf("GetOrder m2: %+v, %v; want batch %s", o, err, old.BatchID)
	}
	if _, err := st.GetBatch(ctx, "p", old.BatchID, later); !errors.Is(err, dispatch.ErrBatchNotFound) {
		t.Errorf("GetBatch of the old batch: %v, want not found", err)
	}
	if g, err := st.GetBatch(ctx, "p", next.BatchID, later); err != nil || fmt.Sprint(g) != fmt.Sprint(b) {
		t.Errorf("GetBatch of the new batch: %+v, %v; want %+v", g, err, b)
	}
	if o, err := st.GetOrder(ctx, "p", "m1", later); err != nil || o.BatchID != next.BatchID {
		t.Errorf("GetOrder m1: %+v, %v; want batch %s", o, err, next.BatchID)
	}

	if _, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: "m1"}, {OrderID: "m2"}}, later); err != nil {
		t.Fatal(err)
	}
	end := later.Add(24*time.Hour + time.Second)
	if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, end); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"orders", "bexp", "oexp"} {
		if n, err := c.Exists(ctx, poolKey("p", k)).Result(); err != nil || n != 0 {
			all, _ := c.HGetAll(ctx, poolKey("p", "orders")).Result()
			t.Errorf("%s still exists after every window (orders: %v)", k, all)
		}
	}
}

// TestNamedIDs dispatches through a Service batches whose first order ids
// hold ':' or are 115 bytes long (named: 128 bytes) or 116 (a UUID); a
// dry run (no id) and a batch with an Idempotency-Key (a UUID, replayed);
// each reads back, and its order names it.
func TestNamedIDs(t *testing.T) {
	_, _, svc := poolOfA(t)
	ctx := context.Background()
	long := func(n int) string { return "x:" + strings.Repeat("y", n-2) }
	for _, tc := range []struct {
		order, key string
		named      bool
	}{
		{"a:b:", "", true}, {"c:0123456789ab", "", true}, {long(115), "", true}, {long(116), "", false}, {"k1", "k", false},
	} {
		in := dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: tc.order}, {ID: tc.order + "-2"}}}
		if len(tc.order) > 115 {
			in.Orders = in.Orders[:1]
		}
		in.IdempotencyKey, in.Fingerprint = tc.key, tc.key
		b, _, err := svc.Dispatch(ctx, in)
		if err != nil {
			t.Fatalf("Dispatch %.20s…: %v", tc.order, err)
		}
		named := strings.HasPrefix(b.ID, tc.order+":") && regexp.MustCompile(`:[0-9a-f]{12}$`).MatchString(b.ID)
		if named != tc.named || (!named && len(b.ID) != 36) {
			t.Errorf("batch of %.20s… (%d bytes): id %q, want named %v (else a UUID)", tc.order, len(tc.order), b.ID, tc.named)
		}
		if g, err := svc.GetBatch(ctx, "p", b.ID); err != nil || fmt.Sprint(g) != fmt.Sprint(b) {
			t.Errorf("GetBatch %q: %+v, %v; want %+v", b.ID, g, err, b)
		}
		if o, err := svc.GetOrder(ctx, "p", tc.order); err != nil || o.BatchID != b.ID {
			t.Errorf("GetOrder %.20s…: %+v, %v; want batch %s", tc.order, o, err, b.ID)
		}
		if tc.key != "" {
			r, replayed, err := svc.Dispatch(ctx, in)
			if err != nil || !replayed || fmt.Sprint(r) != fmt.Sprint(b) {
				t.Errorf("Idempotency-Key replay: %+v, %v, %v; want %+v replayed", r, replayed, err, b)
			}
		}
	}
	dry, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "d1"}}, DryRun: true})
	if err != nil || dry.ID != "" || len(dry.Assignments) != 1 {
		t.Errorf("dry run: %+v, %v; want one assignment and no id", dry, err)
	}
	if _, err := svc.GetOrder(ctx, "p", "d1"); !errors.Is(err, dispatch.ErrOrderNotFound) {
		t.Errorf("GetOrder after a dry run: %v, want not found", err)
	}
}
