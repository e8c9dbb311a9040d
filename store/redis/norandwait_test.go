package redis_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
)

// TestNoRandResentWhenWaitFallsShort: with WaitReplicas, a batch refused
// with NORAND (sent without random numbers to a pool that another Store
// has just made one whose strategy draws) wrote nothing, so no WAIT
// decides its answer but that of the call that sends it again with the
// numbers, whether the replica is behind or not:
//   - alone, the replica held back throughout: the second call applies the
//     batch on the primary, with its numbers' picks, and its WAIT falls
//     short (indeterminate); retried once the replica has caught up, it is
//     answered as applied;
//   - alone, the replica released before the second call: answered as if
//     there had been no refusal, after one WAIT (the second call's);
//   - coalesced, every batch refused (the first refusal stops the call),
//     the replica released before the second call: the same;
//   - coalesced behind a batch that ran (a replay), with the replica held
//     back: the call's WAIT falls short, so the replay is indeterminate,
//     while the refused batches go again, once the replica has caught up,
//     and are answered as applied.
//
// Every batch counts once.
func TestNoRandResentWhenWaitFallsShort(t *testing.T) {
	l := startLagged(t)
	p := newRandPool(t, l.primary, redis.Options{WaitReplicas: 1, WaitTimeout: redis.MaxWaitTimeout})
	ctx, st, other, c := context.Background(), p.st, p.other, p.c
	// learn has st dispatch a batch with the pool's strategy s as its
	// own: st then believes the pool draws as s does.
	learn := func(s dispatch.Strategy) dispatch.DispatchRequest {
		t.Helper()
		p.setStrategy(s)
		req := p.batch(1)
		if _, _, err := st.Dispatch(ctx, req); err != nil {
			t.Fatalf("Dispatch %s: %v", req.BatchID, err)
		}
		return req
	}
	expectShort := func(what string, err error, batchID string) {
		t.Helper()
		ind, ok := errors.AsType[*dispatch.IndeterminateError](err)
		if !ok || !errors.Is(err, dispatch.ErrNotReplicated) || ind.BatchID != batchID {
			t.Errorf("%s: got %v, want an IndeterminateError naming %s that wraps ErrNotReplicated", what, err, batchID)
		}
	}
	// expectWaits checks the WAITs since resetStats: one per call
	// answered, none for a call refused whole.
	expectWaits := func(what string, want int64) {
		t.Helper()
		if got := commandCalls(t, c, "wait"); got != want {
			t.Errorf("%s: %d WAITs, want %d", what, got, want)
		}
	}
	// releaseOnRand lets the replica catch up as the first call with
	// random numbers goes.
	releaseOnRand := func(rands []string) {
		if slices.ContainsFunc(rands, func(r string) bool { return r != "" }) {
			l.link.Release()
		}
	}
	// behind has st learn waterfill, another Store change the strategy
	// to s, and the replica fall behind, to catch up as the first call
	// with random numbers goes if release; it returns st's batch.
	behind := func(s dispatch.Strategy, release bool) dispatch.DispatchRequest {
		t.Helper()
		req := learn(dispatch.Waterfill)
		p.setStrategy(s)
		p.log.take()
		l.link.Hold()
		if release {
			p.log.onSent(releaseOnRand)
		}
		resetStats(t, c)
		return req
	}
	const perOrder = randPerOrder

	// alone, the replica held back throughout
	behind(dispatch.Random, false)
	held := p.batch(3, 2, 0, 3)
	_, _, err := st.Dispatch(ctx, held)
	expectShort("alone, replica behind", err, held.BatchID)
	p.expectCalls("alone, replica behind", [][]int{{0}, {3 * perOrder}})
	if b, err := other.GetBatch(ctx, "p", held.BatchID, p.t0); err != nil || dispatched(b) != "C A D" {
		t.Errorf("alone, replica behind: batch on the primary %q, %v; want Scales %q (the ranks of its numbers)", dispatched(b), err, "C A D")
	}
	l.link.Release()
	if b, _, err := st.Dispatch(ctx, held); err != nil || dispatched(b) != "C A D" {
		t.Errorf("alone, retried in sync: Scales %q, %v; want %q", dispatched(b), err, "C A D")
	}
	p.log.take()

	// alone, the replica released before the second call
	behind(dispatch.Random, true)
	if b, _, err := st.Dispatch(ctx, p.batch(2, 1, 1)); err != nil || dispatched(b) != "B B" {
		t.Errorf("alone, replica caught up before the second call: Scales %q, %v; want %q", dispatched(b), err, "B B")
	}
	p.log.onSent(nil)
	p.expectCalls("alone, replica caught up before the second call", [][]int{{0}, {2 * perOrder}})
	expectWaits("alone, replica caught up before the second call", 1)

	// coalesced, every batch refused (the first stops the call)
	behind(dispatch.Random, true)
	rs := st.DispatchMany(ctx, []dispatch.DispatchRequest{p.batch(1, 3), p.batch(2, 1, 2)})
	p.log.onSent(nil)
	if rs[0].Err != nil || rs[1].Err != nil || dispatched(rs[0].Batch)+" "+dispatched(rs[1].Batch) != "D B C" {
		t.Errorf("coalesced, every batch refused: Scales %q and %q, %v, %v; want %q", dispatched(rs[0].Batch), dispatched(rs[1].Batch), rs[0].Err, rs[1].Err, "D B C")
	}
	p.expectCalls("coalesced, every batch refused", [][]int{{0, 0}, {perOrder, 2 * perOrder}})
	expectWaits("coalesced, every batch refused", 1)

	// coalesced behind a replay
	ran := behind(dispatch.PowerOfTwo, true)
	reqs := []dispatch.DispatchRequest{ran, p.batch(2, 3, 3), p.batch(1, 0)}
	rs = st.DispatchMany(ctx, reqs)
	p.log.onSent(nil)
	p.expectCalls("coalesced", [][]int{{0, 0, 0}, {2 * perOrder, perOrder}})
	expectShort("coalesced: the replay", rs[0].Err, ran.BatchID)
	for _, i := range []int{1, 2} {
		if rs[i].Err != nil || len(rs[i].Batch.Assignments) != len(reqs[i].Orders) || rs[i].Batch.Strategy != dispatch.PowerOfTwo {
			t.Errorf("coalesced: batch %d refused, then sent again: %+v, %v; want %d orders by %s",
				i+1, rs[i].Batch, rs[i].Err, len(reqs[i].Orders), dispatch.PowerOfTwo)
		}
	}

	// (waterfill 1, random 3; waterfill 1, random 2; waterfill 1, random
	// 1 + 2; waterfill 1, power-of-two 2 + 1)
	p.expectCounted(1 + 3 + 1 + 2 + 1 + 1 + 2 + 1 + 2 + 1)
}
