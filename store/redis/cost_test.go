package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestWaterfillReadsOnlyWhatItNeeds dispatches into a pool of 100,000 Scales
// of equal load: one order must read a handful of entries, not the pool,
// and land on rank (2^31-1) mod N as the seed's last level says.
func TestWaterfillReadsOnlyWhatItNeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("registers 100,000 Scales")
	}
	const n = 100_000
	srv := redistest.Start(t)
	c := newClient(t, srv)
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	ctx := context.Background()
	mustPool(t, svc, "big")
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%06d", i)
	}
	registerEqualScales(t, c, "big", n)
	if sc, err := svc.GetScale(ctx, "big", ids[n-1]); err != nil || !sc.Eligible() {
		t.Fatalf("GetScale of a Scale written by registerEqualScales: %+v, %v", sc, err)
	}

	for _, tc := range []struct {
		orders  int
		maxRead int64 // ZRANGE + ZCOUNT calls
	}{
		{1, 4},     // head, run end, the one rank
		{1000, 5},  // the level below the Scale that got the first order
		{5000, 12}, // a few levels above the first batch
	} {
		resetStats(t, c)
		in := dispatch.DispatchInput{Pool: "big"}
		for j := range tc.orders {
			in.Orders = append(in.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d-%d", tc.orders, j)})
		}
		before, err := svc.Table(ctx, "big")
		if err != nil {
			t.Fatalf("Table: %v", err)
		}
		resetStats(t, c)
		start := time.Now()
		b, _, err := svc.Dispatch(ctx, in)
		t.Logf("%d orders in %v", tc.orders, time.Since(start))
		if err != nil {
			t.Fatalf("Dispatch: %v", err)
		}
		reads := commandCalls(t, c, "zrange") + commandCalls(t, c, "zcount")
		if reads > tc.maxRead {
			t.Errorf("%d orders in a pool of %d: %d ZRANGE/ZCOUNT calls, want at most %d", tc.orders, n, reads, tc.maxRead)
		}
		loads := loadsOfTable(before)
		want := strings.Join(balancing.WaterfillIDs(loads, tc.orders), " ")
		if got := assigned(b); got != want {
			t.Fatalf("%d orders: got %.60s…, want %.60s…", tc.orders, got, want)
		}
	}
}

// loadsOfTable recovers the loads of a table, relative to rank 0: level i
// holds the difference of ranks i and i+1 times i+1.
func loadsOfTable(tab dispatch.Table) []balancing.Load {
	loads := make([]balancing.Load, len(tab.CompIDs))
	var c int64
	for i, id := range tab.CompIDs {
		loads[i] = balancing.Load{ID: id, Count: c}
		c += tab.DispatchCounts[i] / int64(i+1)
	}
	return loads
}

// registerEqualScales writes n active Scales s000000… at orderCount 0 into
// an existing pool in one script, in the schema of doc.go: registering them
// one call at a time would take the test most of its time.
func registerEqualScales(t testing.TB, c goredis.UniversalClient, pool string, n int) {
	t.Helper()
	const src = `
for i = 0, tonumber(ARGV[1]) - 1 do
  local id = string.format('s%06d', i)
  redis.call('HSET', KEYS[1], id, '1|a|0|0|0|')
  redis.call('ZADD', KEYS[2], 0, id)
  redis.call('ZADD', KEYS[4], 0, id)
end
return redis.call('HINCRBY', KEYS[3], 'u', ARGV[1])`
	keys := []string{poolKey(pool, "scales"), poolKey(pool, "elig"), poolKey(pool, "meta"), poolKey(pool, "lex")}
	if err := c.Eval(context.Background(), src, keys, n).Err(); err != nil {
		t.Fatalf("registering %d Scales: %v", n, err)
	}
}

// scaleNames is n compIds: scale-00, scale-01, …
func scaleNames(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("scale-%02d", i)
	}
	return ids
}

// putWaterfillPool makes pool on svc with the waterfill and the Scales ids
// (putScales).
func putWaterfillPool(t testing.TB, svc *dispatch.Service, pool string, ids []string) {
	t.Helper()
	wf := dispatch.Waterfill
	if _, _, err := svc.PutPool(context.Background(), pool, dispatch.PoolSpec{Strategy: &wf}); err != nil {
		t.Fatalf("PutPool: %v", err)
	}
	putScales(t, svc, pool, ids)
}

// putScales registers Scales at orderCount 0 with a few workers.
func putScales(t testing.TB, svc *dispatch.Service, pool string, ids []string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(ids); i += 8 {
				if _, _, err := svc.PutScale(context.Background(), pool, ids[i], dispatch.ScaleSpec{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("PutScale: %v", err)
	}
}

func resetStats(t testing.TB, c goredis.UniversalClient) {
	t.Helper()
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatalf("CONFIG RESETSTAT: %v", err)
	}
}

// commandCalls returns how many times Redis ran cmd since the last reset,
// scripts' calls included.
func commandCalls(t testing.TB, c goredis.UniversalClient, cmd string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}
