package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestDifferentialHealth drives random pools through heartbeats that come
// and stop, failure reports (of the order's Scale and of others), ticks of
// random limits with onLapse hold and reassign, option changes, dispatches,
// completions and a clock that jumps, on the Redis store (two replicas
// taking turns) and store/memory. Every answer must agree: the orders moved
// after a lapse or a report (which, to where, how often), the health
// changes the ticks return, every Scale as recorded. And the Lua must
// settle as the Go reference judges: after each dispatch, every Scale's
// recorded health is HealthOptions.HealthAt at that time.
func TestDifferentialHealth(t *testing.T) {
	// A fixed seed by default, so that the suite's walk is the same in
	// every run: a random one once gave least-connections a walk with no
	// lapse move, which fails the coverage check below though nothing
	// disagreed. HEALTH_SEED=random explores, HEALTH_SEED=N reruns a seed.
	seed := uint64(1)
	switch v := os.Getenv("HEALTH_SEED"); v {
	case "":
	case "random":
		seed = uint64(time.Now().UnixNano())
	default:
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (HEALTH_SEED=%[1]d reruns it)", seed)
	srv := redistest.Start(t)
	strategies := []dispatch.Strategy{dispatch.Waterfill, dispatch.Random, dispatch.RoundRobin,
		dispatch.SmoothWeightedRoundRobin, dispatch.ConsistentHash, dispatch.LeastConnections}
	for i, st := range strategies {
		t.Run(string(st), func(t *testing.T) {
			h := &healthSim{
				t:   t,
				rng: rand.New(rand.NewPCG(seed, uint64(i))),
				rs:  []dispatch.Store{newStore(t, srv, redis.Options{}), newStore(t, srv, redis.Options{})},
				ms:  memory.New(memory.Options{}),
				now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
			}
			for p := range 3 {
				h.pool(fmt.Sprintf("%s-%d", st, p), st)
			}
			t.Logf("%d moves after lapses, %d after reports, %d health changes compared", h.lapseMoves, h.failMoves, h.changes)
			if h.lapseMoves == 0 || h.failMoves == 0 || h.changes == 0 {
				t.Errorf("the walk compared %d lapse moves, %d report moves, %d changes: it should see each", h.lapseMoves, h.failMoves, h.changes)
			}
		})
	}
}

type healthSim struct {
	t       *testing.T
	rng     *rand.Rand
	rs      []dispatch.Store
	ms      dispatch.Store
	now     time.Time
	calls   int
	orders  []string
	seq     int
	scales  []string
	silent  map[string]bool // Scales that do not heartbeat now
	options dispatch.HealthOptions

	lapseMoves, failMoves, changes int
}

// both runs f on a Redis replica and on store/memory and fails unless the
// two agree.
func (h *healthSim) both(what string, f func(st dispatch.Store) (string, error)) (string, error) {
	h.t.Helper()
	h.calls++
	got, gerr := f(h.rs[h.calls%2])
	want, werr := f(h.ms)
	if got != want || !sameErr(gerr, werr) {
		h.t.Fatalf("%s at %s: redis %q, %v; memory %q, %v", what, h.now.Format(time.StampMilli), got, gerr, want, werr)
	}
	return got, gerr
}

func (h *healthSim) advance() {
	steps := []time.Duration{0, time.Millisecond, 300 * time.Millisecond, time.Second, 2500 * time.Millisecond}
	h.now = h.now.Add(steps[h.rng.IntN(len(steps))])
}

func (h *healthSim) pool(name string, st dispatch.Strategy) {
	ctx := context.Background()
	h.orders, h.scales, h.silent = nil, nil, map[string]bool{}
	hb, reassign, fails := 2*time.Second, dispatch.ReassignLapsed, int64(2+h.rng.IntN(2))
	h.both("PutPool", func(s dispatch.Store) (string, error) {
		p, _, err := s.PutPool(ctx, name, dispatch.PoolSpec{Strategy: &st, HeartbeatTimeout: &hb, OnLapse: &reassign, MaxFails: &fails}, h.now)
		h.options = p.Health
		return fmt.Sprintf("%+v", p), err
	})
	for i := range 3 + h.rng.IntN(5) {
		h.scales = append(h.scales, fmt.Sprintf("S%d", i))
		h.putScale(name, h.scales[i])
	}
	for range 120 {
		h.advance()
		switch k := h.rng.IntN(20); {
		case k < 5:
			h.heartbeats(name)
		case k < 9:
			h.dispatch(name)
		case k < 12:
			h.fail(name)
		case k < 15:
			h.tick(name)
		case k < 16:
			h.finish(name)
		case k < 17:
			h.putScale(name, h.scales[h.rng.IntN(len(h.scales))])
		case k < 18:
			h.changeOptions(name)
		default:
			// a Scale falls silent, or speaks again
			id := h.scales[h.rng.IntN(len(h.scales))]
			h.silent[id] = !h.silent[id]
		}
		h.compareScales(name)
	}
	for {
		if r := h.tick(name); !r.More {
			break
		}
	}
	h.compareScales(name)
}

func (h *healthSim) putScale(pool, id string) {
	spec := dispatch.ScaleSpec{}
	if h.rng.IntN(4) == 0 {
		spec.State = ptr([]dispatch.ScaleState{dispatch.Active, dispatch.Active, dispatch.Draining, dispatch.Down}[h.rng.IntN(4)])
	}
	if h.rng.IntN(4) == 0 {
		spec.MaxOrders = ptr(int64(h.rng.IntN(3) * 20))
	}
	if h.rng.IntN(3) == 0 {
		spec.Weight = ptr(int64(1 + h.rng.IntN(5)))
	}
	h.both("PutScale "+id, func(s dispatch.Store) (string, error) {
		sc, created, err := s.PutScale(context.Background(), pool, id, spec, h.now)
		return fmt.Sprintf("%+v %v", sc, created), err
	})
}

func (h *healthSim) heartbeats(pool string) {
	for _, id := range h.scales {
		if h.silent[id] || h.rng.IntN(3) == 0 {
			continue
		}
		var count *int64
		if h.rng.IntN(5) == 0 {
			count = ptr(int64(h.rng.IntN(30)))
		}
		h.both("Heartbeat "+id, func(s dispatch.Store) (string, error) {
			sc, err := s.Heartbeat(context.Background(), pool, id, count, h.now)
			return fmt.Sprintf("%+v", sc), err
		})
	}
}

func (h *healthSim) dispatch(pool string) {
	n := 1 + h.rng.IntN(12)
	req := dispatch.DispatchRequest{Pool: pool, BatchID: fmt.Sprintf("b%d", h.seq), Now: h.now, MaxCost: dispatch.DefaultMaxCost}
	for range n {
		h.seq++
		req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d", h.seq), Key: fmt.Sprintf("k%d", h.rng.IntN(7))})
		req.Rand = append(req.Rand, h.rng.Uint64N(1<<53), h.rng.Uint64N(1<<53))
	}
	_, err := h.both("Dispatch", func(s dispatch.Store) (string, error) {
		b, _, err := s.Dispatch(context.Background(), req)
		return fmt.Sprintf("%v", b.Assignments), err
	})
	if err == nil {
		for _, o := range req.Orders {
			h.orders = append(h.orders, o.ID)
		}
	}
	// The Go reference: a dispatch settles every Scale to its health now.
	scales, _, err := h.rs[0].ListScales(context.Background(), pool, dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, sc := range scales {
		if want := h.options.HealthAt(sc, h.now); sc.Health != want {
			h.t.Fatalf("after a dispatch at %s, %s is recorded %s; HealthAt says %s: %+v", h.now.Format(time.StampMilli), sc.CompID, sc.Health, want, sc)
		}
	}
}

func (h *healthSim) fail(pool string) {
	if len(h.orders) == 0 {
		return
	}
	id := h.orders[h.rng.IntN(len(h.orders))]
	o, err := h.ms.GetOrder(context.Background(), pool, id, h.now)
	if err != nil {
		return
	}
	comp := o.CompID
	if h.rng.IntN(5) == 0 {
		comp = h.scales[h.rng.IntN(len(h.scales))] // perhaps not its Scale
	}
	rnd := []uint64{h.rng.Uint64N(1 << 53), h.rng.Uint64N(1 << 53)}
	h.both("Fail "+id+" on "+comp, func(s dispatch.Store) (string, error) {
		r, err := s.Fail(context.Background(), dispatch.FailRequest{Pool: pool, OrderID: id, CompID: comp, Now: h.now, Rand: rnd, MaxCost: dispatch.DefaultMaxCost})
		if err == nil && r.Moved && s == h.ms {
			h.failMoves++
		}
		return fmt.Sprintf("%+v", r), err
	})
}

func (h *healthSim) tick(pool string) dispatch.TickResult {
	limit := 1 + h.rng.IntN(4)
	rnd := make([]uint64, 2*limit)
	for i := range rnd {
		rnd[i] = h.rng.Uint64N(1 << 53)
	}
	var out dispatch.TickResult
	h.both("Tick", func(s dispatch.Store) (string, error) {
		r, err := s.Tick(context.Background(), dispatch.TickRequest{Pool: pool, Now: h.now, Limit: limit, Rand: rnd, MaxCost: dispatch.DefaultMaxCost})
		if s == h.ms {
			out = r
			h.lapseMoves += len(r.Moves)
			h.changes += len(r.Changes)
		}
		return fmt.Sprintf("%+v", r), err
	})
	return out
}

func (h *healthSim) finish(pool string) {
	if len(h.orders) == 0 {
		return
	}
	k := h.rng.IntN(len(h.orders))
	id := h.orders[k]
	h.orders = append(h.orders[:k], h.orders[k+1:]...)
	h.both("Complete "+id, func(s dispatch.Store) (string, error) {
		os, n, err := s.Complete(context.Background(), pool, []dispatch.Completion{{OrderID: id, DurationMs: 7}}, h.now)
		return fmt.Sprintf("%+v %d", os, n), err
	})
}

func (h *healthSim) changeOptions(pool string) {
	spec := dispatch.PoolSpec{}
	switch h.rng.IntN(4) {
	case 0:
		spec.HeartbeatTimeout = ptr([]time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second}[h.rng.IntN(4)])
	case 1:
		spec.OnLapse = ptr([]dispatch.OnLapse{dispatch.Hold, dispatch.ReassignLapsed}[h.rng.IntN(2)])
	case 2:
		spec.MaxFails = ptr(int64(h.rng.IntN(4)))
	default:
		spec.FailWindow = ptr(time.Duration(1+h.rng.IntN(5)) * time.Second)
		spec.EjectTime = ptr(time.Duration(1+h.rng.IntN(5)) * time.Second)
	}
	h.both("PutPool options", func(s dispatch.Store) (string, error) {
		p, _, err := s.PutPool(context.Background(), pool, spec, h.now)
		h.options = p.Health
		return fmt.Sprintf("%+v", p), err
	})
}

// compareScales compares every Scale as recorded, and where each assigned
// order is.
func (h *healthSim) compareScales(pool string) {
	h.both("ListScales", func(s dispatch.Store) (string, error) {
		scales, _, err := s.ListScales(context.Background(), pool, dispatch.Page{Limit: dispatch.MaxLimit})
		var b strings.Builder
		for _, sc := range scales {
			fmt.Fprintf(&b, "%+v\n", sc)
		}
		return b.String(), err
	})
	for _, id := range h.orders {
		h.both("GetOrder "+id, func(s dispatch.Store) (string, error) {
			o, err := s.GetOrder(context.Background(), pool, id, h.now)
			return fmt.Sprintf("%+v", o), err
		})
	}
}
