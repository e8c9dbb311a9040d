package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestBytesPerOrder measures what an outstanding order costs Redis: used
// memory before and after dispatching 100,000 orders (20,000 one by one)
// with 12-byte ids over 100 Scales, in batches of 1, 10, 100 and 1,000
// with the batch ids the store gives them (named after their first
// order). Everything that holds an order counts: its record, its batch's
// record, ref and assignments, the Scale's own index, the batch queue. It
// takes about 10 s.
func TestBytesPerOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 100,000 orders")
	}
	// The aim is 150 at every size (issue 21). A batch named after its
	// first order (layout 7, batchid.go) has no record of its own: a single
	// order's lives in the order's record, one hash entry, and a larger
	// batch's in its ref and its assignments (docs/benchmarks.md, "Issue
	// 21", says where the bytes go). At batch 1 layout 7 reads 121-130
	// from run to run (the pool's hash tables are large next to 20,000
	// orders), at 10 it read 140-145; layout 8's tokens (lua/own.lua) take
	// it to about 137, and 127 and 117 at 100 and 1,000: the limits keep
	// 10 bytes of room below the aim.
	for _, tc := range []struct {
		batch, orders int
		limit         float64
	}{{1, 20_000, 140}, {10, 100_000, 150}, {100, 100_000, 150}, {1000, 100_000, 150}} {
		t.Run(fmt.Sprintf("batch=%d", tc.batch), func(t *testing.T) {
			perOrder := measureBytesPerOrder(t, tc.orders, tc.batch)
			t.Logf("%.1f bytes per outstanding order (batches of %d)", perOrder, tc.batch)
			if perOrder > tc.limit {
				t.Errorf("%.1f bytes per order, want at most %.0f", perOrder, tc.limit)
			}
		})
	}
}

func measureBytesPerOrder(t *testing.T, orders, batch int) float64 {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	mustPool(t, svc, "p", scaleNames(100)...)
	// One batch first, so that the structures exist and scripts are cached.
	dispatchN(t, svc, "x", 0, batch)
	before := usedMemory(t, c)
	for i := 0; i < orders; i += batch {
		dispatchN(t, svc, "o", i, batch)
	}
	after := usedMemory(t, c)
	return float64(after-before) / float64(orders)
}

// dispatchN dispatches n orders with ids prefix-%010d from first.
func dispatchN(t testing.TB, svc *dispatch.Service, prefix string, first, n int) {
	t.Helper()
	in := dispatch.DispatchInput{Pool: "p", Orders: make([]dispatch.OrderInput, n)}
	for j := range in.Orders {
		in.Orders[j].ID = fmt.Sprintf("%s-%010d", prefix, first+j)
	}
	if _, _, err := svc.Dispatch(context.Background(), in); err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
}

// usedMemory returns INFO memory's used_memory once it has settled: lazy
// freeing done, and a hash that grew past a power of two rehashed into its
// new table (Redis keeps both tables until its cron has moved every
// bucket, which a loaded machine delays: 16,384 slots of 8 bytes, some 6
// bytes an order in TestBytesPerOrder's batch of one). It waits for two
// equal readings 100 ms apart, at most 3 s.
func usedMemory(t testing.TB, c goredis.UniversalClient) int64 {
	t.Helper()
	time.Sleep(50 * time.Millisecond)
	m := usedMemoryNow(t, c)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		next := usedMemoryNow(t, c)
		if next == m {
			break
		}
		m = next
	}
	return m
}

// infoInt returns the integer field name of an INFO reply.
func infoInt(t testing.TB, info, name string) int64 {
	t.Helper()
	v := strings.TrimSpace(infoField(info, name))
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s %q: %v", name, v, err)
	}
	return n
}
