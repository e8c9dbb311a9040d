package redis_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestOwnTokenWalk drives the own index of layout 8 (lua/own.lua) through
// seeded random walks, one per strategy (waterfill: a plan of the batch;
// consistent-hash: one pick at a time), on the Redis store and on
// store/memory side by side, and fails at the first answer in which they
// differ. Its batches are mostly named after their first order (one token
// per Scale), some by a UUID or a plain id (one id per order), some
// single, some coalesced (DispatchMany), some dry runs, some under an
// Idempotency-Key that is sent again; between them orders complete, are
// cancelled, fail over, lapse and move with ticks (onLapse reassign, a
// part of a token at a time), are reassigned from a down Scale or
// cancelled by a forced DeleteScale; Scales drain and fill up (maxOrders);
// the clock jumps past the retention, to its edge and just past it, so
// that records leave and order ids come back in new batches (an expired
// order replaced before the sweep); the pool is deleted and made again.
// Order ids mix '.', ':', '_' and '-', some are 128 bytes long and some
// equal a Scale's id; keys hold ',' and '|'. After every step the own
// index is whole (checkOwnIndex), every Scale is recorded alike, and each
// Scale lists the same orders in the same order (oldest first) in one
// page, and every eighth step in pages of 1 to 9; known orders and batches
// read alike (a sample, and all every 50 steps). At the end every order
// is cancelled and every window passes: nothing of the pool's records is
// left. TOKENWALK_SEED=N walks another way.
func TestOwnTokenWalk(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	var seen tokenWalk // (what the walks saw, added up)
	// A fixed seed, so that the suite walks the same way every run: seed 4
	// moves parts of tokens with ticks, replays Idempotency-Keys and uses
	// expired ids again in both walks.
	seed := walkSeed(t, "TOKENWALK_SEED", 4)
	walkStrategies(t, seed, []dispatch.Strategy{dispatch.Waterfill, dispatch.ConsistentHash},
		func(t *testing.T, strategy dispatch.Strategy, rng *rand.Rand) {
			w := &tokenWalk{
				t:        t,
				c:        c,
				rng:      rng,
				rs:       redis.New(c, redis.Options{Retention: time.Hour}),
				ms:       memory.New(memory.Options{Retention: time.Hour}),
				now:      time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
				strategy: strategy,
			}
			if err := w.rs.DeletePool(context.Background(), "p"); err != nil && !errors.Is(err, dispatch.ErrPoolNotFound) {
				t.Fatal(err)
			}
			w.makePool()
			for step := range 100 {
				w.step = step
				w.randomStep()
				checkOwnIndex(t, c, w.rs, "p")
				if t.Failed() {
					t.Fatalf("step %d (seed %d)", step, seed)
				}
				w.compare()
			}
			w.empty()
			t.Logf("%d batches refused, %d named, %d other batches, %d replayed; %d moved by ticks, %d by reports, %d by reassign; %d ids reused; %d pages compared",
				w.failed, w.named, w.others, w.replays, w.tickMoves, w.failMoves, w.reassignMoves, w.reused, w.pages)
			seen.named += w.named
			seen.tickMoves += w.tickMoves
			seen.failMoves += w.failMoves
			seen.reassignMoves += w.reassignMoves
			seen.reused += w.reused
			seen.replays += w.replays
		})
	if seen.named == 0 || seen.tickMoves == 0 || seen.failMoves == 0 || seen.reassignMoves == 0 || seen.reused == 0 || seen.replays == 0 {
		t.Errorf("the walks should see each kind of change: %+v", seen)
	}
}

type tokenWalk struct {
	t        *testing.T
	c        goredis.UniversalClient
	rng      *rand.Rand
	rs       *redis.Store
	ms       *memory.Store
	now      time.Time
	step     int
	strategy dispatch.Strategy

	scales  []string
	silent  map[string]bool
	orders  []string // every order id dispatched (some may have left)
	batches []string // every batch id dispatched
	keyed   []dispatch.DispatchRequest
	seq     int

	failed, named, others, replays, tickMoves, failMoves, reassignMoves, reused, pages int
}

// twScales are the Scales' ids; some are also order ids of the walk.
var twScales = []string{"A", "b.1", "o-3", "S_4"}

// both runs f on the Redis store and on store/memory and fails unless
// they answer alike.
func (w *tokenWalk) both(what string, f func(s dispatch.Store) (string, error)) (string, error) {
	w.t.Helper()
	got, gerr := f(w.rs)
	want, werr := f(w.ms)
	if got != want || !sameErr(gerr, werr) || (gerr == nil) != (werr == nil) {
		w.t.Fatalf("step %d, %s at %s:\nredis  %q, %v\nmemory %q, %v", w.step, what, w.now.Format(time.StampMilli), got, gerr, want, werr)
	}
	return got, gerr
}

func (w *tokenWalk) makePool() {
	hb, reassign := 2*time.Second, dispatch.ReassignLapsed
	w.scales, w.silent = slices.Clone(twScales), map[string]bool{}
	walkPool(w.both, w.now, dispatch.PoolSpec{Strategy: &w.strategy, HeartbeatTimeout: &hb, OnLapse: &reassign},
		w.scales, func(int) dispatch.ScaleSpec { return dispatch.ScaleSpec{} })
}

func (w *tokenWalk) putScale(id string, spec dispatch.ScaleSpec) {
	walkPutScale(w.both, w.now, id, spec)
}

// orderID returns a fresh order id; some equal a Scale's id, some are
// 128 bytes long.
func (w *tokenWalk) orderID() string {
	w.seq++
	switch w.rng.IntN(8) {
	case 0:
		if id := twScales[w.rng.IntN(len(twScales))]; !slices.Contains(w.orders, id) {
			return id // (later only as an id used before)
		}
	case 1:
		id := fmt.Sprintf("L%d.", w.seq)
		return id + strings.Repeat("x", 128-len(id))
	case 2:
		return fmt.Sprintf("o:%d.a_b-%d", w.seq, w.seq)
	}
	return fmt.Sprintf("o%d", w.seq)
}

// request makes a batch of n orders (distinct ids), named after its first
// order two times in three, by a UUID or a plain id otherwise.
func (w *tokenWalk) request(n int) dispatch.DispatchRequest {
	req := dispatch.DispatchRequest{Pool: "p", Now: w.now, MaxCost: dispatch.DefaultMaxCost}
	seen := map[string]bool{}
	reuse := -1 // one order of a batch in three has an id the walk used before
	if len(w.orders) > 0 && w.rng.IntN(3) == 0 {
		reuse = w.rng.IntN(n)
	}
	for len(req.Orders) < n {
		id := w.orderID()
		if len(req.Orders) == reuse {
			id = w.orders[w.rng.IntN(len(w.orders)/2+1)] // (the older, more likely to have left)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		in := dispatch.OrderInput{ID: id}
		if w.rng.IntN(3) == 0 {
			in.Key = fmt.Sprintf("k,|%d", w.rng.IntN(5))
		}
		req.Orders = append(req.Orders, in)
		req.Rand = append(req.Rand, w.rng.Uint64N(1<<53), w.rng.Uint64N(1<<53))
	}
	w.seq++
	switch r := w.rng.IntN(6); {
	case r < 4:
		req.BatchID = w.rs.BatchID(req)
	case r < 5:
		req.BatchID = fmt.Sprintf("0190a1b2-c3d4-7e5f-8a9b-%012x", w.seq)
		if w.rng.IntN(2) == 0 { // (with an Idempotency-Key, which a later step may send again)
			req.IdempotencyKey, req.Fingerprint, req.IdempotencyTTL = fmt.Sprintf("key-%d", w.seq), "fp", 2*time.Hour
			w.keyed = append(w.keyed, req)
		}
	}
	if req.BatchID == "" {
		req.BatchID = fmt.Sprintf("b%d", w.seq)
	}
	return req
}

func (w *tokenWalk) dispatched(req dispatch.DispatchRequest, err error) {
	if err != nil {
		w.failed++
		return
	}
	if strings.Contains(req.BatchID, ":") {
		w.named++
	} else {
		w.others++
	}
	w.batches = append(w.batches, req.BatchID)
	for _, o := range req.Orders {
		if slices.Contains(w.orders, o.ID) {
			w.reused++
		} else {
			w.orders = append(w.orders, o.ID)
		}
	}
}

func (w *tokenWalk) dispatch() {
	if len(w.keyed) > 0 && w.rng.IntN(4) == 0 {
		// an Idempotency-Key sent again, at a later time, perhaps with
		// another request (another fingerprint)
		req := w.keyed[w.rng.IntN(len(w.keyed))]
		w.seq++
		req.Now, req.BatchID = w.now, fmt.Sprintf("0190a1b2-c3d4-7e5f-8a9b-%012x", w.seq) // (as the Service names a retry)
		if w.rng.IntN(3) == 0 {
			req.Fingerprint = "other"
		}
		var replayed bool
		_, err := w.both("Dispatch again "+req.BatchID, func(s dispatch.Store) (string, error) {
			b, r, err := s.Dispatch(context.Background(), req)
			replayed = r
			return fmt.Sprintf("%s %v %v", b.ID, b.Assignments, r), err
		})
		if replayed {
			w.replays++
		} else {
			w.dispatched(req, err) // (the key's batch had failed, or left)
		}
		return
	}
	n := 1 + w.rng.IntN(60)
	if w.rng.IntN(4) == 0 {
		n = 1
	}
	req := w.request(n)
	if w.rng.IntN(8) == 0 { // a dry run changes nothing
		req.DryRun, req.BatchID, req.IdempotencyKey = true, "", ""
		w.both("Dispatch dry", func(s dispatch.Store) (string, error) {
			b, replayed, err := s.Dispatch(context.Background(), req)
			return fmt.Sprintf("%s %v %v", b.ID, b.Assignments, replayed), err
		})
		return
	}
	_, err := w.both("Dispatch "+req.BatchID, func(s dispatch.Store) (string, error) {
		b, replayed, err := s.Dispatch(context.Background(), req)
		return fmt.Sprintf("%s %v %v", b.ID, b.Assignments, replayed), err
	})
	w.dispatched(req, err)
}

// dispatchMany sends two or three batches in one call to Redis, and one
// after another to memory.
func (w *tokenWalk) dispatchMany() {
	var reqs []dispatch.DispatchRequest
	for range 2 + w.rng.IntN(2) {
		reqs = append(reqs, w.request(1+w.rng.IntN(20)))
	}
	rr := w.rs.DispatchMany(context.Background(), reqs)
	for i, req := range reqs {
		mb, _, merr := w.ms.Dispatch(context.Background(), req)
		got, want := fmt.Sprintf("%s %v", rr[i].Batch.ID, rr[i].Batch.Assignments), fmt.Sprintf("%s %v", mb.ID, mb.Assignments)
		if got != want || !sameErr(rr[i].Err, merr) || (rr[i].Err == nil) != (merr == nil) {
			w.t.Fatalf("step %d, DispatchMany %d of %d:\nredis  %q, %v\nmemory %q, %v", w.step, i, len(reqs), got, rr[i].Err, want, merr)
		}
		w.dispatched(req, merr)
	}
}

// known returns k order ids the walk dispatched, at random.
func (w *tokenWalk) known(k int) []string {
	var ids []string
	for _, i := range w.rng.Perm(len(w.orders))[:min(k, len(w.orders))] {
		ids = append(ids, w.orders[i])
	}
	return ids
}

func (w *tokenWalk) finish() {
	ids := w.known(1 + w.rng.IntN(15))
	if len(ids) == 0 {
		return
	}
	if w.rng.IntN(3) == 0 {
		w.both("Cancel "+ids[0], func(s dispatch.Store) (string, error) {
			o, err := s.Cancel(context.Background(), "p", ids[0], w.now)
			return fmt.Sprintf("%+v", o), err
		})
		return
	}
	var cs []dispatch.Completion
	for _, id := range ids {
		cs = append(cs, dispatch.Completion{OrderID: id})
	}
	w.both(fmt.Sprintf("Complete %v", ids), func(s dispatch.Store) (string, error) {
		os, n, err := s.Complete(context.Background(), "p", cs, w.now)
		return fmt.Sprintf("%+v %d", os, n), err
	})
}

func (w *tokenWalk) fail() {
	for _, id := range w.known(1 + w.rng.IntN(3)) {
		o, err := w.ms.GetOrder(context.Background(), "p", id, w.now)
		if err != nil {
			continue
		}
		comp := o.CompID
		rnd := []uint64{w.rng.Uint64N(1 << 53), w.rng.Uint64N(1 << 53)}
		w.both("Fail "+id+" on "+comp, func(s dispatch.Store) (string, error) {
			r, err := s.Fail(context.Background(), dispatch.FailRequest{Pool: "p", OrderID: id, CompID: comp, Now: w.now,
				Rand: rnd, MaxCost: dispatch.DefaultMaxCost})
			if err == nil && r.Moved && s == dispatch.Store(w.ms) {
				w.failMoves++
			}
			return fmt.Sprintf("%+v", r), err
		})
	}
}

func (w *tokenWalk) reassign() {
	from := w.scales[w.rng.IntN(len(w.scales))]
	w.putScale(from, dispatch.ScaleSpec{State: ptr(dispatch.Down)})
	rnd := make([]uint64, 2*200)
	for i := range rnd {
		rnd[i] = w.rng.Uint64N(1 << 53)
	}
	w.both("Reassign "+from, func(s dispatch.Store) (string, error) {
		moved, err := s.Reassign(context.Background(), dispatch.ReassignRequest{Pool: "p", CompID: from, Now: w.now,
			Rand: rnd, MaxCost: dispatch.DefaultMaxCost})
		if s == dispatch.Store(w.ms) {
			w.reassignMoves += len(moved)
		}
		return fmt.Sprintf("%v", moved), err
	})
	if w.rng.IntN(3) > 0 {
		w.putScale(from, dispatch.ScaleSpec{State: ptr(dispatch.Active)})
	}
}

func (w *tokenWalk) forceDelete() {
	id := w.scales[w.rng.IntN(len(w.scales))]
	w.both("DeleteScale "+id, func(s dispatch.Store) (string, error) {
		return "", s.DeleteScale(context.Background(), "p", id, true, w.now)
	})
	w.putScale(id, dispatch.ScaleSpec{})
}

func (w *tokenWalk) heartbeats() {
	for _, id := range w.scales {
		if w.silent[id] {
			continue
		}
		w.both("Heartbeat "+id, func(s dispatch.Store) (string, error) {
			sc, err := s.Heartbeat(context.Background(), "p", id, nil, w.now)
			return fmt.Sprintf("%+v", sc), err
		})
	}
}

func (w *tokenWalk) tick() {
	limit := 1 + w.rng.IntN(12)
	rnd := make([]uint64, 2*limit)
	for i := range rnd {
		rnd[i] = w.rng.Uint64N(1 << 53)
	}
	w.both("Tick", func(s dispatch.Store) (string, error) {
		r, err := s.Tick(context.Background(), dispatch.TickRequest{Pool: "p", Now: w.now, Limit: limit, Rand: rnd, MaxCost: dispatch.DefaultMaxCost})
		if s == dispatch.Store(w.ms) {
			w.tickMoves += len(r.Moves)
		}
		return fmt.Sprintf("%+v", r), err
	})
}

// advance moves the clock: not at all, a little, past a lease, or to the
// retention's edge (an order completed at the last jump is then still
// held, a millisecond later it is not).
func (w *tokenWalk) advance() {
	steps := []time.Duration{0, time.Millisecond, 700 * time.Millisecond, 2500 * time.Millisecond,
		20 * time.Minute, time.Hour, time.Hour + time.Millisecond}
	w.now = w.now.Add(steps[w.rng.IntN(len(steps))])
}

func (w *tokenWalk) randomStep() {
	switch k := w.rng.IntN(60); {
	case k < 5:
		w.advance()
		if w.rng.IntN(2) == 0 {
			w.heartbeats()
		}
	case k < 9:
		w.heartbeats()
	case k < 11:
		// a Scale falls silent (lapses at the next lease), or speaks again
		id := w.scales[w.rng.IntN(len(w.scales))]
		w.silent[id] = !w.silent[id]
	case k < 25:
		w.dispatch()
	case k < 29:
		w.dispatchMany()
	case k < 38:
		w.finish()
	case k < 41:
		w.fail()
	case k < 49:
		w.tick()
	case k < 51:
		w.reassign()
	case k < 52:
		w.forceDelete()
	case k < 53 && w.rng.IntN(4) == 0:
		w.both("DeletePool", func(s dispatch.Store) (string, error) {
			return "", s.DeletePool(context.Background(), "p")
		})
		w.makePool()
	case k < 56:
		// some Scale may be draining for a while, or full
		id := w.scales[w.rng.IntN(len(w.scales))]
		st := []dispatch.ScaleState{dispatch.Active, dispatch.Active, dispatch.Draining}[w.rng.IntN(3)]
		max := []int64{0, 0, 0, 20, 60}[w.rng.IntN(5)]
		w.putScale(id, dispatch.ScaleSpec{State: &st, MaxOrders: &max})
	default:
		w.dispatch()
	}
}

// compare compares the Scales, each Scale's orders whole and paged, and
// every order and batch the walk knows.
func (w *tokenWalk) compare() {
	ctx := context.Background()
	w.both("ListScales", func(s dispatch.Store) (string, error) {
		scales, _, err := s.ListScales(ctx, "p", dispatch.Page{Limit: dispatch.MaxLimit})
		var b strings.Builder
		for _, sc := range scales {
			fmt.Fprintf(&b, "%+v\n", sc)
		}
		return b.String(), err
	})
	for _, id := range w.scales {
		whole, _ := w.both("ListScaleOrders "+id, func(s dispatch.Store) (string, error) {
			return scaleOrdersWhole(s, id)
		})
		if w.step%8 != 7 {
			continue
		}
		limit := 1 + w.rng.IntN(9)
		w.both(fmt.Sprintf("ListScaleOrders %s by %d", id, limit), func(s dispatch.Store) (string, error) {
			pages, got, err := scaleOrdersPaged(s, id, limit, 1000, whole)
			w.pages += pages
			return got, err
		})
	}
	orders, batches := w.orders, w.batches
	if w.step%50 != 49 { // (a sample between whole reads)
		orders, batches = w.known(10), nil
		for range min(5, len(w.batches)) {
			batches = append(batches, w.batches[w.rng.IntN(len(w.batches))])
		}
	}
	for _, id := range orders {
		w.both("GetOrder "+id, func(s dispatch.Store) (string, error) {
			o, err := s.GetOrder(ctx, "p", id, w.now)
			return fmt.Sprintf("%+v", o), err
		})
	}
	for _, id := range batches {
		w.both("GetBatch "+id, func(s dispatch.Store) (string, error) {
			b, err := s.GetBatch(ctx, "p", id, w.now)
			return fmt.Sprintf("%+v", b), err
		})
	}
}

// empty cancels every order with a forced delete of every Scale, lets every
// window pass, and fails unless the pool's records and queues are then
// gone, and every order reads as gone on both stores.
func (w *tokenWalk) empty() {
	for _, id := range w.scales {
		w.both("DeleteScale "+id, func(s dispatch.Store) (string, error) {
			return "", s.DeleteScale(context.Background(), "p", id, true, w.now)
		})
	}
	w.now = w.now.Add(3 * time.Hour)
	checkOwnIndex(w.t, w.c, w.rs, "p")
	sweepAll(w.t, w.c, w.rs, w.now)
	for _, id := range w.orders {
		w.both("GetOrder "+id, func(s dispatch.Store) (string, error) {
			o, err := s.GetOrder(context.Background(), "p", id, w.now)
			return fmt.Sprintf("%+v", o), err
		})
	}
}
