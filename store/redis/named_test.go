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
// (dispatch.BatchNamer): a single order without an Idempotency-Key, with
// a retention that outlasts a re-send, and an order id short enough for
// the name to be an id; and that a Service given its own NewID keeps it.
func TestBatchNames(t *testing.T) {
	st := redis.New(newClient(t, redistest.Start(t)), redis.Options{})
	one := func(id string) *dispatch.DispatchRequest {
		return &dispatch.DispatchRequest{Pool: "p", Orders: []dispatch.OrderInput{{ID: id}}}
	}
	a, b := st.BatchID(one("o1")), st.BatchID(one("o1"))
	if !strings.HasPrefix(a, "o1:") || len(a) != 15 || a == b || !dispatch.ValidID(a) {
		t.Errorf("names of two batches of o1: %q and %q, want o1: and 12 hexadecimal digits, distinct", a, b)
	}
	keyed := one("o1")
	keyed.IdempotencyKey = "k"
	two := one("o1")
	two.Orders = append(two.Orders, dispatch.OrderInput{ID: "o2"})
	for what, req := range map[string]*dispatch.DispatchRequest{
		"an Idempotency-Key":       keyed,
		"two orders":               two,
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
