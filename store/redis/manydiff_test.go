package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestManyLikeOne applies the same seeded random batches to two stores
// on one redis-server, in two databases: through DispatchMany in groups
// of 1 to 8 batches (database 0), and one Dispatch each (database 1).
// Every batch must be answered alike (its batch, replay flag and error
// text). After every step the two databases must hold the same keyspace,
// key by key and field by field, expiry set or not (keyspaceOf: all but
// the reply keys of calls with a token, which the two stores draw
// apart); every fourth step the stores must also answer alike (compare).
// The groups aim at what a call of several batches may share
// (lua/dispatch_many.lua): the same Scales in several batches of a call,
// tails that seal inside a call (batches of up to 300 orders, 128-byte
// ids), batches named after their first order, by a UUID under an
// Idempotency-Key, or by a plain id, single orders, failing batches among
// good ones (EXISTS, DUP, IDEM, NOELIG with full maxOrders Scales, CAP
// with Scales near MaxOrderCount), an order id, a batch id or a key
// repeated by a later batch of the same call, leases that run out
// between the batches of a call. Between groups: completions, cancels,
// heartbeats, ticks, dry runs, Scales changed, the clock moved past
// leases and past the retention of hundreds of orders at once (ids used
// again; the next call sweeps them in several passes), and the pool's
// strategy changed for a while. One walk per strategy (waterfill,
// round-robin, smooth-weighted-round-robin, random with its fixed Rand,
// consistent-hash). It fails on planted bugs (own.lua's ownPend, the
// tails a call holds): a tail read again by a later batch of the call
// (what the earlier ones left pending is lost), a pending tail written
// with an entry twice; the batch refs' counter not carried from batch to
// batch; the health settled once per call. Not on one sweep per call
// instead of one per batch: how far the sweep has gone may differ (see
// sameKeyspace).
// MANYDIFF_SEED=N walks another way.
func TestManyLikeOne(t *testing.T) {
	seed := walkSeed(t, "MANYDIFF_SEED", 1)
	srv := redistest.Start(t)
	cm := dialClient(t, "redis://"+srv.Addr()+"/0", "single")
	co := dialClient(t, "redis://"+srv.Addr()+"/1", "single")
	var seen manyDiff
	walkStrategies(t, seed, []dispatch.Strategy{dispatch.Waterfill, dispatch.RoundRobin,
		dispatch.SmoothWeightedRoundRobin, dispatch.Random, dispatch.ConsistentHash},
		func(t *testing.T, strategy dispatch.Strategy, rng *rand.Rand) {
			ctx := context.Background()
			for _, c := range []goredis.UniversalClient{cm, co} {
				if err := c.FlushDB(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			d := &manyDiff{
				t: t, cm: cm, co: co,
				rng:       rng,
				many:      redis.New(cm, redis.Options{Retention: manyRetention}),
				one:       redis.New(co, redis.Options{Retention: manyRetention}),
				manyOther: redis.New(cm, redis.Options{Retention: manyRetention}),
				oneOther:  redis.New(co, redis.Options{Retention: manyRetention}),
				now:       time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC),
				strategy:  strategy,
			}
			d.why = map[string]int{}
			d.makePool()
			for step := range manySteps {
				d.step = step
				d.randomStep()
				d.compare()
			}
			t.Logf("%d calls of %d batches (%d refused), %d named, %d replays, %d with a lease run out inside, %d sealed inside",
				d.calls, d.batches, d.refused, d.named, d.replays, d.lapsedInside, d.sealedInside)
			t.Logf("%v; %d steps swept both to compare", d.why, d.drained)
			seen.calls += d.calls
			seen.refused += d.refused
			seen.named += d.named
			seen.replays += d.replays
			seen.lapsedInside += d.lapsedInside
			seen.sealedInside += d.sealedInside
		})
	if seen.refused == 0 || seen.named == 0 || seen.replays == 0 || seen.lapsedInside == 0 || seen.sealedInside == 0 {
		t.Errorf("the walks should see each kind of call: %+v", seen)
	}
}

// manySteps is the length of a walk of TestManyLikeOne.
const manySteps = 50

// manyRetention is the walk's retention: short, so that records expire
// all along it (between the batches of a call too), and long enough for
// batches named after their first order (the store names them only when
// the retention outlasts a batch record's floor, 35 s).
const manyRetention = 40 * time.Second

type manyDiff struct {
	t         *testing.T
	cm, co    goredis.UniversalClient
	rng       *rand.Rand
	many, one *redis.Store
	// manyOther and oneOther are other Stores on the same databases (other
	// replicas), which change the pool's strategy behind the two's backs
	manyOther, oneOther *redis.Store
	now                 time.Time
	step                int
	strategy            dispatch.Strategy

	scales []string
	silent map[string]bool
	orders []string // every order id sent in a batch that was applied
	bids   []string // every batch id applied
	keyed  []dispatch.DispatchRequest
	seq    int

	why                                                                 map[string]int
	drained                                                             int // keyspaces that differed until both swept
	calls, batches, refused, named, replays, lapsedInside, sealedInside int
}

// mdScales are the Scales' ids.
var mdScales = []string{"A", "b.1", "C-2", "d_3", "E"}

// both runs f on both stores and fails unless they answer alike.
func (d *manyDiff) both(what string, f func(s *redis.Store) (string, error)) (string, error) {
	d.t.Helper()
	got, gerr := f(d.many)
	want, werr := f(d.one)
	if got != want || errText(gerr) != errText(werr) {
		d.t.Fatalf("step %d, %s at %s:\nmany %q, %v\none  %q, %v", d.step, what, d.now.Format(time.StampMilli), got, gerr, want, werr)
	}
	return got, gerr
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (d *manyDiff) makePool() {
	hb := 2 * time.Second
	d.scales, d.silent = slices.Clone(mdScales), map[string]bool{}
	walkPool(d.bothStores, d.now, dispatch.PoolSpec{Strategy: &d.strategy, HeartbeatTimeout: &hb},
		d.scales, func(i int) dispatch.ScaleSpec { return dispatch.ScaleSpec{Weight: ptr(int64(1 + i%3))} })
}

// bothStores is both for a call that any dispatch.Store makes.
func (d *manyDiff) bothStores(what string, f func(s dispatch.Store) (string, error)) (string, error) {
	d.t.Helper()
	return d.both(what, func(s *redis.Store) (string, error) { return f(s) })
}

func (d *manyDiff) putScale(id string, spec dispatch.ScaleSpec) {
	walkPutScale(d.bothStores, d.now, id, spec)
}

// orderID returns a fresh order id, some 128 bytes long (a tail of 256
// bytes seals after two of them).
func (d *manyDiff) orderID() string {
	d.seq++
	if d.rng.IntN(6) == 0 {
		id := fmt.Sprintf("L%d.", d.seq)
		return id + strings.Repeat("x", 128-len(id))
	}
	return fmt.Sprintf("o%d", d.seq)
}

// request makes a batch of n orders; earlier holds the call's batches so
// far, whose ids, orders and keys it may repeat.
func (d *manyDiff) request(n int, earlier []dispatch.DispatchRequest) dispatch.DispatchRequest {
	req := dispatch.DispatchRequest{Pool: "p", Now: d.now, MaxCost: dispatch.DefaultMaxCost}
	for len(req.Orders) < n {
		in := dispatch.OrderInput{ID: d.orderID()}
		if d.rng.IntN(3) == 0 {
			in.Key = fmt.Sprintf("k%d", d.rng.IntN(7))
		}
		req.Orders = append(req.Orders, in)
	}
	// now and then an id held already: an order outstanding or gone, or
	// one of this call's batches (EXISTS), or twice in the batch (DUP)
	switch r := d.rng.IntN(12); {
	case r == 0 && len(d.orders) > 0:
		req.Orders[d.rng.IntN(n)].ID = d.orders[d.rng.IntN(len(d.orders))]
	case r == 1 && len(earlier) > 0:
		e := earlier[d.rng.IntN(len(earlier))]
		req.Orders[d.rng.IntN(n)].ID = e.Orders[d.rng.IntN(len(e.Orders))].ID
	case r == 2 && n > 1:
		req.Orders[n-1].ID = req.Orders[0].ID
	}
	for range n {
		req.Rand = append(req.Rand, d.rng.Uint64N(1<<53), d.rng.Uint64N(1<<53))
	}
	d.seq++
	switch r := d.rng.IntN(10); {
	case r < 5:
		req.BatchID = d.many.BatchID(req)
	case r < 8:
		req.BatchID = fmt.Sprintf("0190a1b2-c3d4-7e5f-8a9b-%012x", d.seq)
		req.IdempotencyKey, req.Fingerprint, req.IdempotencyTTL = fmt.Sprintf("key-%d", d.seq), "fp", time.Minute
		if d.rng.IntN(3) == 0 { // a key sent before, maybe in this call, maybe for another request
			var ks []dispatch.DispatchRequest
			for _, e := range append(slices.Clone(d.keyed), earlier...) {
				if e.IdempotencyKey != "" {
					ks = append(ks, e)
				}
			}
			if len(ks) > 0 {
				e := ks[d.rng.IntN(len(ks))]
				req.IdempotencyKey, req.Fingerprint = e.IdempotencyKey, e.Fingerprint
				if d.rng.IntN(3) == 0 {
					req.Fingerprint = "other"
				}
			}
		}
	case r < 9 && len(earlier) > 0:
		return earlier[d.rng.IntN(len(earlier))] // a batch sent again (a retried call)
	}
	if req.BatchID == "" {
		req.BatchID = fmt.Sprintf("b%d", d.seq)
	}
	return req
}

// size picks a batch's size: one order, a few, up to 60, or up to 300.
func (d *manyDiff) size() int {
	switch d.rng.IntN(8) {
	case 0, 1, 2:
		return 1
	case 3, 4:
		return 2 + d.rng.IntN(5)
	case 7:
		if d.rng.IntN(3) == 0 {
			return 100 + d.rng.IntN(201)
		}
	}
	return 7 + d.rng.IntN(54)
}

// call sends a group of 1 to 8 batches in one DispatchMany to many and
// one Dispatch each to one; the clock may move between the batches (a
// lease running out inside the call).
func (d *manyDiff) call() {
	ctx := context.Background()
	var reqs []dispatch.DispatchRequest
	for range 1 + d.rng.IntN(8) {
		d.now = d.now.Add([]time.Duration{0, 0, 0, time.Millisecond, time.Millisecond, 300 * time.Millisecond, 1900 * time.Millisecond}[d.rng.IntN(7)])
		req := d.request(d.size(), reqs)
		req.Now = d.now
		reqs = append(reqs, req)
	}
	tails := d.tailChunks()
	lapsed := d.lapsedCount()
	rs := d.many.DispatchMany(ctx, reqs)
	if len(rs) != len(reqs) {
		d.t.Fatalf("step %d: DispatchMany answered %d of %d batches", d.step, len(rs), len(reqs))
	}
	d.calls++
	for i, req := range reqs {
		b, replayed, err := d.one.Dispatch(ctx, req)
		got := fmt.Sprintf("%+v %v %v", rs[i].Batch, rs[i].Replayed, errText(rs[i].Err))
		want := fmt.Sprintf("%+v %v %v", b, replayed, errText(err))
		if got != want {
			d.t.Fatalf("step %d, batch %d of %d (%s, %d orders):\nmany %s\none  %s", d.step, i, len(reqs), req.BatchID, len(req.Orders), got, want)
		}
		d.batches++
		switch {
		case err != nil:
			d.refused++
			d.why[kindOf(err)]++
			continue
		case replayed:
			d.replays++
			continue
		case strings.Contains(req.BatchID, ":"):
			d.named++
		}
		d.bids = append(d.bids, b.ID)
		for _, a := range b.Assignments {
			if !slices.Contains(d.orders, a.OrderID) {
				d.orders = append(d.orders, a.OrderID)
			}
		}
		if req.IdempotencyKey != "" {
			d.keyed = append(d.keyed, req)
		}
	}
	if len(reqs) > 1 && d.lapsedCount() > lapsed {
		d.lapsedInside++
	}
	if len(reqs) > 1 && d.tailChunks() > tails+1 {
		d.sealedInside++
	}
}

func (d *manyDiff) randomStep() {
	ctx := context.Background()
	switch k := d.rng.IntN(40); {
	case k < 20:
		if d.rng.IntN(4) > 0 {
			d.heartbeats()
		}
		d.call()
	case k < 27:
		d.finish()
	case k < 29:
		jump := []time.Duration{time.Millisecond, 700 * time.Millisecond, 2500 * time.Millisecond,
			15 * time.Second, manyRetention + time.Millisecond, manyRetention + time.Millisecond}[d.rng.IntN(6)]
		if d.rng.IntN(3) == 0 {
			jump = manyRetention + time.Millisecond
		}
		d.now = d.now.Add(jump)
		if jump > manyRetention {
			// a call meets the backlog of expired records: one Scale
			// heartbeats first (each heartbeat sweeps SWEEP of them)
			id := d.scales[d.rng.IntN(len(d.scales))]
			d.both("Heartbeat "+id, func(s *redis.Store) (string, error) {
				sc, err := s.Heartbeat(ctx, "p", id, nil, d.now)
				return fmt.Sprintf("%+v", sc), err
			})
			d.call()
			return
		}
		d.heartbeats()
	case k < 30:
		d.heartbeats()
	case k < 31:
		// a Scale falls silent (at most two at a time), or speaks again
		id := d.scales[d.rng.IntN(len(d.scales))]
		d.silent[id] = !d.silent[id] && len(d.silent) < 2
		if !d.silent[id] {
			delete(d.silent, id)
		}
	case k < 32:
		d.both("Tick", func(s *redis.Store) (string, error) {
			r, err := s.Tick(ctx, dispatch.TickRequest{Pool: "p", Now: d.now, Limit: 10, MaxCost: dispatch.DefaultMaxCost})
			return fmt.Sprintf("%+v", r), err
		})
	case k < 34:
		req := d.request(d.size(), nil)
		req.DryRun, req.BatchID, req.IdempotencyKey = true, "", ""
		d.both("dry run", func(s *redis.Store) (string, error) {
			b, replayed, err := s.Dispatch(ctx, req)
			return fmt.Sprintf("%+v %v", b, replayed), err
		})
	case k < 37:
		// the Scales: plain, some full (maxOrders), all near MaxOrderCount
		// (CAP), or one draining
		mode := d.rng.IntN(5)
		for i, id := range d.scales {
			spec := dispatch.ScaleSpec{MaxOrders: ptr(int64(0)), OrderCount: ptr(int64(d.rng.IntN(50))), State: ptr(dispatch.Active)}
			switch {
			case mode == 1 && i%2 == 0:
				spec.MaxOrders = ptr(int64(d.rng.IntN(40)))
			case mode == 2:
				spec.OrderCount = ptr(int64(dispatch.MaxOrderCount - d.rng.IntN(300)))
			case mode == 3 && i == 0:
				spec.State = ptr(dispatch.Draining)
			}
			d.putScale(id, spec)
		}
	case k < 39:
		// the pool's strategy changes for a while, or back
		st := d.strategy
		if d.rng.IntN(2) == 0 {
			st = []dispatch.Strategy{dispatch.Waterfill, dispatch.Random, dispatch.LeastConnections,
				dispatch.PowerOfTwo, dispatch.WeightedRandom}[d.rng.IntN(5)]
		}
		// (half the time through other Stores, as another replica would:
		// the two stores learn of it from Redis's replies)
		other := d.rng.IntN(2) == 0
		d.both("PutPool "+string(st), func(s *redis.Store) (string, error) {
			if other {
				s = map[*redis.Store]*redis.Store{d.many: d.manyOther, d.one: d.oneOther}[s]
			}
			p, _, err := s.PutPool(ctx, "p", dispatch.PoolSpec{Strategy: &st}, d.now)
			return fmt.Sprintf("%+v", p), err
		})
	default:
		d.call()
	}
}
