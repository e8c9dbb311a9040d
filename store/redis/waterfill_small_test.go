package redis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestWaterfillSmallPoolReadsOnce dispatches batches of several orders into
// pools of 16 and 32 Scales, whose ZSET waterfill.lua's wfPass reads whole
// with one ZRANGE (WFALL), and of 33, which it reads level by level: each
// batch must land as balancing.WaterfillIDs says, over loads that are
// uneven after the first batch, and the small pools must make one ZRANGE
// and no ZCOUNT a batch after the pool's first call.
func TestWaterfillSmallPoolReadsOnce(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	ctx := context.Background()
	for _, scales := range []int{16, 32, 33} {
		pool := fmt.Sprintf("small%d", scales)
		mustPool(t, svc, pool)
		ids := make([]string, scales)
		for i := range ids {
			ids[i] = fmt.Sprintf("s%02d", i)
		}
		putScales(t, svc, pool, ids)
		// (a pool's first call reads its health indexes, by ZRANGE too)
		if _, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: pool, Orders: []dispatch.OrderInput{{ID: "first"}}}); err != nil {
			t.Fatalf("Dispatch: %v", err)
		}
		for k, orders := range []int{37, 100, 5, 64, 2} {
			in := dispatch.DispatchInput{Pool: pool}
			for j := range orders {
				in.Orders = append(in.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d-%d", k, j)})
			}
			before, err := svc.Table(ctx, pool)
			if err != nil {
				t.Fatalf("Table: %v", err)
			}
			resetStats(t, c)
			b, _, err := svc.Dispatch(ctx, in)
			if err != nil {
				t.Fatalf("%d Scales, batch %d: Dispatch: %v", scales, k, err)
			}
			zrange, zcount := commandCalls(t, c, "zrange"), commandCalls(t, c, "zcount")
			if scales <= 32 && (zrange != 1 || zcount != 0) {
				t.Errorf("%d Scales, %d orders: %d ZRANGE and %d ZCOUNT calls, want 1 and 0", scales, orders, zrange, zcount)
			}
			if scales > 32 && zcount == 0 {
				t.Errorf("%d Scales, %d orders: no ZCOUNT, want the reads by level past 32 Scales", scales, orders)
			}
			want := strings.Join(balancing.WaterfillIDs(loadsOfTable(before), orders), " ")
			if got := assigned(b); got != want {
				t.Fatalf("%d Scales, batch %d of %d orders: got %s, want %s", scales, k, orders, got, want)
			}
		}
	}
}
