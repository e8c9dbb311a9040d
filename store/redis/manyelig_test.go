package redis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestManyCallHoldsElig sends the same calls of several waterfill batches
// to two stores on one redis-server, in two databases: through
// DispatchMany (database 0), whose call holds the pool's elig in Lua
// across its batches of several orders and writes it once at its end
// (waterfill.lua's wfPend), and one Dispatch each (database 1). Every
// batch must land alike and the keyspaces must be the same after every
// call. The Scales' names sort by bytes otherwise than by their numbers
// ("B…" before "a…", "a10" before "a9"), so that a call that sorted
// Scales of equal counts by anything but their bytes would pick other
// Scales; the calls mix batches of several orders with single orders (the
// pick reads elig: the call writes it first), a batch that fails (EXISTS),
// a lease that runs out between two batches (the settling writes elig),
// and dry runs between calls (a copy of elig). A pool of 16 Scales must make one ZADD and
// read elig once (and lex's names once) in a call of five batches of
// several orders; one of 33 Scales writes through, a ZADD a batch.
func TestManyCallHoldsElig(t *testing.T) {
	srv := redistest.Start(t)
	cm := dialClient(t, "redis://"+srv.Addr()+"/0", "single")
	co := dialClient(t, "redis://"+srv.Addr()+"/1", "single")
	ctx := context.Background()
	many := redis.New(cm, redis.Options{Retention: time.Hour})
	each := redis.New(co, redis.Options{Retention: time.Hour})
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	wf := dispatch.Waterfill
	hb := 2 * time.Second
	seq := 0
	batch := func(pool string, n int, at time.Time) dispatch.DispatchRequest {
		req := dispatch.DispatchRequest{Pool: pool, Now: at, MaxCost: dispatch.DefaultMaxCost, UniqueIDs: true}
		for range n {
			seq++
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d", seq)})
		}
		req.BatchID = many.BatchID(req)
		return req
	}
	for _, scales := range []int{16, 33} {
		pool := fmt.Sprintf("p%d", scales)
		var ids []string
		for i := range scales {
			ids = append(ids, fmt.Sprintf("%c%d", "aBb"[i%3], i))
		}
		first := batch(pool, 1, now)
		for _, s := range []*redis.Store{many, each} {
			if _, _, err := s.PutPool(ctx, pool, dispatch.PoolSpec{Strategy: &wf, HeartbeatTimeout: &hb}, now); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if _, _, err := s.PutScale(ctx, pool, id, dispatch.ScaleSpec{}, now); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Heartbeat(ctx, pool, id, nil, now); err != nil {
					t.Fatal(err)
				}
			}
			// (a pool's first dispatch reads its health indexes)
			if _, _, err := s.Dispatch(ctx, first); err != nil {
				t.Fatal(err)
			}
		}
		calls := [][]int{
			{37, 100, 5, 64, 2}, // (counted below)
			{30, 1, 40, 1, 7},   // single orders between
			{20, 25, 50},
			{9, 0, 33},   // an order of the call's first batch again: EXISTS
			{11, 12, 13}, // a lease runs out between two batches (the settling)
			{100, 100, 100},
		}
		for ci, sizes := range calls {
			if ci == 4 {
				// all but the first Scale beat: it lapses during the call
				for _, s := range []*redis.Store{many, each} {
					for _, id := range ids[1:] {
						if _, err := s.Heartbeat(ctx, pool, id, nil, now.Add(2*time.Second)); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			var reqs []dispatch.DispatchRequest
			at := now
			for _, n := range sizes {
				switch {
				case n == 0:
					req := batch(pool, 3, at)
					req.Orders[1].ID = reqs[0].Orders[0].ID
					req.BatchID = many.BatchID(req)
					reqs = append(reqs, req)
				default:
					reqs = append(reqs, batch(pool, n, at))
				}
				if ci == 4 {
					at = at.Add(1250 * time.Millisecond)
				}
			}
			resetStats(t, cm)
			got := many.DispatchMany(ctx, reqs)
			zadd, zrange := commandCalls(t, cm, "zadd"), commandCalls(t, cm, "zrange")
			var failed int
			for i, req := range reqs {
				b, replayed, err := each.Dispatch(ctx, req)
				want := fmt.Sprintf("%+v %v %v", b, replayed, err)
				if g := fmt.Sprintf("%+v %v %v", got[i].Batch, got[i].Replayed, got[i].Err); g != want {
					t.Fatalf("%s, call %d, batch %d (%d orders):\nmany %s\neach %s", pool, ci, i, len(req.Orders), g, want)
				}
				if err != nil {
					failed++
				}
			}
			if (ci == 3) != (failed > 0) {
				t.Errorf("%s, call %d: %d batches failed", pool, ci, failed)
			}
			sameKeyspace(t, cm, co, fmt.Sprintf("%s, call %d", pool, ci))
			if ci == 0 && scales == 16 && (zadd != 1 || zrange != 2) {
				t.Errorf("%s, a call of 5 batches: %d ZADD and %d ZRANGE calls, want 1 and 2 (elig and lex read once, elig written once)", pool, zadd, zrange)
			}
			if ci == 0 && scales == 33 && zadd != int64(len(sizes)) {
				t.Errorf("%s, a call of %d batches: %d ZADD calls, want one a batch", pool, len(sizes), zadd)
			}
			if ci == 4 {
				if j := strings.Join(cm.LRange(ctx, poolKey(pool, "journal"), 0, -1).Val(), " "); !strings.Contains(j, ids[0]+"|u|l|") {
					t.Errorf("%s: %s should have lapsed in call %d: journal %q", pool, ids[0], ci, j)
				}
			}
			now = at.Add(time.Millisecond)
			dry := batch(pool, 40, now)
			dry.DryRun, dry.BatchID = true, ""
			for _, s := range []*redis.Store{many, each} {
				if _, _, err := s.Dispatch(ctx, dry); err != nil {
					t.Fatalf("%s, dry run after call %d: %v", pool, ci, err)
				}
			}
		}
	}
}
