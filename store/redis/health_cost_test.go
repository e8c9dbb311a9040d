package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// healthSpec turns every health option on: heartbeats (an hour, so that no
// lease runs out while a test or benchmark runs), reassignment and ejection.
func healthSpec() dispatch.PoolSpec {
	hb, reassign, fails := time.Hour, dispatch.ReassignLapsed, int64(3)
	return dispatch.PoolSpec{HeartbeatTimeout: &hb, OnLapse: &reassign, MaxFails: &fails}
}

// registerHeartbeatingScales registers n Scales (s000000, …) of weight 1
// in an existing pool in one script, as PutScale at nowMs would leave
// them: up, heartbeated at nowMs, in elig, lex and the lease index.
func registerHeartbeatingScales(t testing.TB, c goredis.UniversalClient, pool string, n int, nowMs int64) {
	t.Helper()
	const src = `
for i = tonumber(ARGV[3]), tonumber(ARGV[1]) - 1 do
  local id = string.format('s%06d', i)
  redis.call('HSET', KEYS[1], id, '1|a|0|0|' .. ARGV[2] .. '||u|' .. ARGV[2] .. '||0|0||')
  redis.call('ZADD', KEYS[2], 0, id)
  redis.call('ZADD', KEYS[4], 0, id)
  redis.call('ZADD', KEYS[5], ARGV[2], id)
end
return redis.call('HINCRBY', KEYS[3], 'u', ARGV[1] - ARGV[3])`
	keys := []string{poolKey(pool, "scales"), poolKey(pool, "elig"), poolKey(pool, "meta"), poolKey(pool, "lex"), poolKey(pool, "lease")}
	// (10,000 a call: a call of 100,000 runs longer than a read timeout on
	// a busy machine)
	for from := 0; from < n; from += 10_000 {
		if err := c.Eval(context.Background(), src, keys, min(n, from+10_000), nowMs, from).Err(); err != nil {
			t.Fatalf("registering %d Scales: %v", n, err)
		}
	}
}

// TestHealthDispatchReadsLittle dispatches one order, with every health
// option on, into a pool of 10 Scales and one of 100,000, and counts the
// entries the script reads and writes (MONITOR): checking leases and
// ejections before the pick must not read the pool, so the big pool costs
// what the small one does. Then one Scale of each lapses: the dispatch
// that notices it pays for that Scale alone.
func TestHealthDispatchReadsLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("registers 100,000 Scales")
	}
	srv := redistest.Start(t)
	c := newClient(t, srv)
	st := redis.New(c, redis.Options{})
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	var cost, lapse [2]int64
	for i, n := range []int{10, 100_000} {
		pool := fmt.Sprintf("h%d", n)
		// (heartbeats on since two hours ago: every lease counts from its
		// Scale's last heartbeat)
		if _, _, err := st.PutPool(ctx, pool, healthSpec(), t0.Add(-2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		registerHeartbeatingScales(t, c, pool, n, t0.UnixMilli())
		one := func(id string, now time.Time) {
			req := dispatch.DispatchRequest{Pool: pool, BatchID: id, Now: now, Orders: []dispatch.OrderInput{{ID: id}}, Rand: []uint64{1, 2}}
			if _, _, err := st.Dispatch(ctx, req); err != nil {
				t.Fatalf("Dispatch: %v", err)
			}
		}
		one("warm", t0)
		calls := scriptCalls(t, c, srv.Addr(), func() { one("o", t0) })
		cost[i] = entries(calls)
		if cost[i] > 48 {
			t.Errorf("%d Scales: one order touches %d entries, want at most 48:\n%s", n, cost[i], formatCalls(calls))
		}
		// A Scale registered an hour earlier lapses now.
		if _, _, err := st.PutScale(ctx, pool, "old", dispatch.ScaleSpec{}, t0.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		calls = scriptCalls(t, c, srv.Addr(), func() { one("o2", t0.Add(time.Millisecond)) })
		lapse[i] = entries(calls)
		if sc, err := st.GetScale(ctx, pool, "old"); err != nil || sc.Health != dispatch.Lapsed || sc.Outstanding != 0 {
			t.Errorf("the Scale whose lease ran out: %+v, %v; want lapsed", sc, err)
		}
	}
	t.Logf("one order touches %d entries among 10 Scales, %d among 100,000; with a lapse to settle %d and %d", cost[0], cost[1], lapse[0], lapse[1])
	if cost[1] > cost[0]+2 || lapse[1] > lapse[0]+2 {
		t.Errorf("among 100,000 Scales one order touches %d entries (%d with a lapse), among 10 %d (%d)", cost[1], lapse[1], cost[0], lapse[0])
	}
}

// BenchmarkDispatchHealth is BenchmarkDispatch's single-order case with
// every health option on, in pools of 10 and 100,000 Scales: the two
// should cost about the same (docs/benchmarks.md, goal: within 2×).
func BenchmarkDispatchHealth(b *testing.B) {
	for _, n := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("scales=%d", n), func(b *testing.B) {
			srv := redistest.Start(b)
			c := newClient(b, srv)
			st := redis.New(c, redis.Options{})
			ctx := context.Background()
			now := time.Now()
			if _, _, err := st.PutPool(ctx, "p", healthSpec(), now); err != nil {
				b.Fatal(err)
			}
			registerHeartbeatingScales(b, c, "p", n, now.UnixMilli())
			svc := dispatch.NewService(st, dispatch.Config{})
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				in := dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: fmt.Sprintf("o-%d", i)}}}
				if _, _, err := svc.Dispatch(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
			orders := float64(b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/orders, "ns/order")
			b.ReportMetric(orders/b.Elapsed().Seconds(), "orders/s")
			b.ReportMetric(float64(evalshaUsec(b, c))/orders, "redis-us/order")
		})
	}
}
