package redis_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
	goredis "github.com/redis/go-redis/v9"
)

// TestNamedBatchRecord dispatches a single order through a Service with
// the default ids (layout 7): the store names its batch after the order,
// "o1:" and 12 hexadecimal digits, and keeps the batch in the order's
// record, "a||A|0|:<tag><strategy code>|<createdAt, hexadecimal>||<key>",
// with no record and no queue entry of its own; the batch and the order
// read back through the Service. A batch with an Idempotency-Key keeps a
// UUID and a record of its own.
func TestNamedBatchRecord(t *testing.T) {
	c, _, svc := poolOfA(t)
	ctx := context.Background()
	b, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o1", Key: "a|b"}}})
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^o1:([0-9a-f]{12})$`).FindStringSubmatch(b.ID)
	if m == nil {
		t.Fatalf("batch id %q, want o1: and 12 hexadecimal digits", b.ID)
	}
	fields, err := c.HKeys(ctx, poolKey("p", "orders")).Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(fields)
	if got := fmt.Sprint(fields); got != "[o1 |oA]" {
		t.Errorf("fields of orders: %s, want [o1 |oA]", got)
	}
	if n, err := c.LLen(ctx, poolKey("p", "bexp")).Result(); err != nil || n != 0 {
		t.Errorf("batch queue: %d entries, %v; want none", n, err)
	}
	rec, _ := c.HGet(ctx, poolKey("p", "orders"), "o1").Result()
	if want := fmt.Sprintf("a||A|0|:%sa|%x||a|b", m[1], b.CreatedAt.UnixMilli()); rec != want {
		t.Errorf("record of the order: %q, want %q", rec, want)
	}
	got, err := svc.GetBatch(ctx, "p", b.ID)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(b) {
		t.Errorf("GetBatch: %+v, %v; want %+v", got, err, b)
	}
	if o, err := svc.GetOrder(ctx, "p", "o1"); err != nil || o.BatchID != b.ID || !o.AssignedAt.Equal(b.CreatedAt) {
		t.Errorf("GetOrder: %+v, %v; want batch %s assigned at %v", o, err, b.ID, b.CreatedAt)
	}

	keyed, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o2"}},
		IdempotencyKey: "k", Fingerprint: "fp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(keyed.ID) != 36 {
		t.Errorf("batch id with an Idempotency-Key: %q, want a UUID", keyed.ID)
	}
	if ok, _ := c.HExists(ctx, poolKey("p", "orders"), "|b"+redis.PackBatchID(keyed.ID)).Result(); !ok {
		t.Error("a batch with an Idempotency-Key has no record of its own")
	}
}

// TestBatchNames checks when the store names a batch after its order
// (dispatch.BatchNamer): a batch without an Idempotency-Key, with a
// retention that outlasts a re-send, whose first order id is short enough
// for the name to be an id; and that a Service given its own NewID keeps it.
func TestBatchNames(t *testing.T) {
	st := redis.New(newClient(t, redistest.Start(t)), redis.Options{})
	one := func(id string) dispatch.DispatchRequest {
		return dispatch.DispatchRequest{Pool: "p", Orders: []dispatch.OrderInput{{ID: id}}}
	}
	a, b := st.BatchID(one("o1")), st.BatchID(one("o1"))
	if !strings.HasPrefix(a, "o1:") || len(a) != 15 || a == b || !dispatch.ValidID(a) {
		t.Errorf("names of two batches of o1: %q and %q, want o1: and 12 hexadecimal digits, distinct", a, b)
	}
	keyed := one("o1")
	keyed.IdempotencyKey = "k"
	two := one("o1")
	two.Orders = append(two.Orders, dispatch.OrderInput{ID: "o2"})
	if id := st.BatchID(two); !strings.HasPrefix(id, "o1:") || len(id) != 15 {
		t.Errorf("a batch of o1 and o2 is named %q, want o1: and 12 hexadecimal digits", id)
	}
	for what, req := range map[string]dispatch.DispatchRequest{
		"an Idempotency-Key":       keyed,
		"an order id of 116 bytes": one(strings.Repeat("x", 116)),
	} {
		if id := st.BatchID(req); id != "" {
			t.Errorf("a batch with %s is named %q, want no name", what, id)
		}
	}
	if id := st.BatchID(one(strings.Repeat("x", 115))); len(id) != 128 {
		t.Errorf("a batch of an order id of 115 bytes is named %q, want 128 bytes", id)
	}
	short := redis.New(newClient(t, redistest.Start(t)), redis.Options{Retention: 30 * time.Second})
	if id := short.BatchID(one("o1")); id != "" {
		t.Errorf("with a retention of 30 s a batch is named %q, want no name", id)
	}

	c := newClient(t, redistest.Start(t))
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{NewID: func() string { return "mine" }})
	mustPool(t, svc, "p", "A")
	if b, _, err := svc.Dispatch(context.Background(), dispatch.DispatchInput{Pool: "p",
		Orders: []dispatch.OrderInput{{ID: "o1"}}}); err != nil || b.ID != "mine" {
		t.Errorf("Dispatch with Config.NewID: batch %q, %v; want mine", b.ID, err)
	}
}

// TestNamedBatchOfSeveralRecord dispatches a batch of three orders named
// after its first (layout 7): it has a ref, ":<tag><strategy code>|
// <createdAt, hexadecimal>|3|m1", and its assignments beside it, and no
// batch record nor queue entry; the assignments, which its own-index token
// reads (layout 8), leave with the ref, with its last order.
func TestNamedBatchOfSeveralRecord(t *testing.T) {
	c, st, _ := poolOfA(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	req := dispatch.DispatchRequest{Pool: "p", BatchID: "m1:0123456789ab", Now: t0,
		Orders: []dispatch.OrderInput{{ID: "m1"}, {ID: "m2"}, {ID: "m3"}}}
	if _, _, err := st.Dispatch(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got, want := orderFields(t, c, "p"), "[m1 m2 m3 |oA |p1 |r1]"; got != want {
		t.Errorf("fields of orders: %s, want %s", got, want)
	}
	if n, err := c.LLen(ctx, poolKey("p", "bexp")).Result(); err != nil || n != 0 {
		t.Errorf("batch queue: %d entries, %v; want none", n, err)
	}
	ref, _ := c.HGet(ctx, poolKey("p", "orders"), "|r1").Result()
	if want := fmt.Sprintf(":0123456789aba|%x|3|m1", t0.UnixMilli()); ref != want {
		t.Errorf("ref: %q, want %q", ref, want)
	}
	// (its Scales, then its ids as Go sent them: layout 9)
	if p, _ := c.HGet(ctx, poolKey("p", "orders"), "|p1").Result(); p != "A,A,A,|m1,m2,m3" {
		t.Errorf("assignments: %q, want A,A,A,|m1,m2,m3", p)
	}
	// m1 and m2 finish and leave (retention 24 h); m3 keeps the ref and
	// the assignments, which its Scale's token reads.
	for _, id := range []string{"m1", "m2"} {
		if _, err := st.Cancel(ctx, "p", id, t0); err != nil {
			t.Fatal(err)
		}
	}
	later := t0.Add(24*time.Hour + time.Second)
	if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, later); err != nil {
		t.Fatal(err)
	}
	if got, want := orderFields(t, c, "p"), "[m3 |oA |p1 |r1]"; got != want {
		t.Errorf("fields of orders after m1 and m2 left: %s, want %s", got, want)
	}
	if o, err := st.GetOrder(ctx, "p", "m3", later); err != nil || o.BatchID != req.BatchID || !o.AssignedAt.Equal(t0) {
		t.Errorf("GetOrder m3: %+v, %v; want batch %s at %v", o, err, req.BatchID, t0)
	}
	if page, _, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{}); err != nil || len(page) != 1 || page[0].ID != "m3" {
		t.Errorf("ListScaleOrders A: %v, %v; want m3", page, err)
	}
	checkOwnIndex(t, c, st, "p")
	if _, err := st.Cancel(ctx, "p", "m3", later); err != nil {
		t.Fatal(err)
	}
	end := later.Add(24*time.Hour + time.Second)
	if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, end); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, poolKey("p", "orders")).Result(); err != nil || n != 0 {
		t.Errorf("orders still holds %s after every order left", orderFields(t, c, "p"))
	}
}

// orderFields lists the fields of pool's orders hash, sorted.
func orderFields(t *testing.T, c goredis.UniversalClient, pool string) string {
	t.Helper()
	f, err := c.HKeys(context.Background(), poolKey(pool, "orders")).Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(f)
	return fmt.Sprint(f)
}
