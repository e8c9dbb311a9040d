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

// TestStrategySequencesAcrossReplicas has three Stores, each on its own
// client as three replicas would be, take turns dispatching one order at a
// time: a cycle begun on one goes on on the next, and the reference vectors
// of DESIGN §3 come out whole.
func TestStrategySequencesAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	var replicas []*redis.Store
	for range 3 {
		replicas = append(replicas, redis.New(newClient(t, srv), redis.Options{}))
	}
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		strategy dispatch.Strategy
		weights  []int64
		want     string
	}{
		{dispatch.SmoothWeightedRoundRobin, []int64{5, 1, 1}, "A A B A C A A A A B A C A A"},
		{dispatch.RoundRobin, []int64{1, 1, 1}, "A B C A B C A"},
		{dispatch.WeightedRoundRobin, []int64{4, 6, 3, 2, 5}, "A A A A B B B B B B C C C D D E E E E E A"},
	} {
		t.Run(string(tc.strategy), func(t *testing.T) {
			pool := string(tc.strategy)
			if _, _, err := replicas[0].PutPool(ctx, pool, dispatch.PoolSpec{Strategy: &tc.strategy}, t0); err != nil {
				t.Fatal(err)
			}
			for i, w := range tc.weights {
				id := string(rune('A' + i))
				if _, _, err := replicas[i%3].PutScale(ctx, pool, id, dispatch.ScaleSpec{Weight: &w}, t0); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for i := range len(strings.Fields(tc.want)) {
				req := dispatch.DispatchRequest{Pool: pool, BatchID: fmt.Sprintf("b%d", i), Now: t0,
					Orders: []dispatch.OrderInput{{ID: fmt.Sprintf("o%d", i)}}, Rand: []uint64{0, 0}}
				b, _, err := replicas[i%3].Dispatch(ctx, req)
				if err != nil {
					t.Fatalf("Dispatch %d: %v", i, err)
				}
				got = append(got, b.Assignments[0].CompID)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("got %s, want %s", g, tc.want)
			}
		})
	}
}
