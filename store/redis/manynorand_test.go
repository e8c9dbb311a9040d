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

// TestManyKeepsOrderAcrossRandoms sends one DispatchMany of two batches
// to a pool whose strategy another Store (another replica) has just made
// random, so that the store sends the call without random numbers first:
// the lease of the pool's one Scale runs out between the first batch and
// the second. One Dispatch per batch gives the first batch the Scale, and
// the second finds it lapsed (ErrNoEligibleScale); the call must answer
// alike and leave the same keyspace: the batches keep their order
// however many calls it takes.
func TestManyKeepsOrderAcrossRandoms(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	hb, random := 2*time.Second, dispatch.Random
	var stores [2]*redis.Store
	for db := range stores {
		c := dialClient(t, fmt.Sprintf("redis://%s/%d", srv.Addr(), db), "single")
		st, other := redis.New(c, redis.Options{}), redis.New(c, redis.Options{})
		if _, _, err := st.PutPool(ctx, "p", dispatch.PoolSpec{HeartbeatTimeout: &hb}, t0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Heartbeat(ctx, "p", "A", nil, t0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := other.PutPool(ctx, "p", dispatch.PoolSpec{Strategy: &random}, t0); err != nil {
			t.Fatal(err)
		}
		stores[db] = st
	}
	req := func(id string, at time.Duration) dispatch.DispatchRequest {
		return dispatch.DispatchRequest{Pool: "p", BatchID: id, Now: t0.Add(at),
			Orders: []dispatch.OrderInput{{ID: id}}, Rand: []uint64{7, 11}}
	}
	reqs := []dispatch.DispatchRequest{req("b1", 1900*time.Millisecond), req("b2", 2100*time.Millisecond)}
	got := stores[0].DispatchMany(ctx, reqs)
	for i, r := range reqs {
		b, replayed, err := stores[1].Dispatch(ctx, r)
		g, w := fmt.Sprintf("%+v %v %v", got[i].Batch, got[i].Replayed, got[i].Err), fmt.Sprintf("%+v %v %v", b, replayed, err)
		if g != w {
			t.Errorf("batch %s: DispatchMany %s, Dispatch %s", r.BatchID, g, w)
		}
	}
	var scales [2]string
	for db, st := range stores {
		sc, err := st.GetScale(ctx, "p", "A")
		scales[db] = fmt.Sprintf("%+v %v", sc, err)
	}
	if scales[0] != scales[1] {
		t.Errorf("Scale A after DispatchMany:\n%s\nafter one Dispatch each:\n%s", scales[0], scales[1])
	}
}
