package storetest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// diffPool is a pool under the differential test and what the test knows
// of it: the strategy, the reference Picker carrying its state from batch
// to batch, and the assigned orders and response-time averages.
type diffPool struct {
	name   string
	st     dispatch.Strategy
	picker balancing.Picker
	rec    *ewmaRecorder
}

// setStrategy sets the pool's strategy; the reference's state resets only
// when the strategy changes.
func (d *diffPool) setStrategy(t testing.TB, s dispatch.Store, st dispatch.Strategy, now time.Time) {
	t.Helper()
	setStrategy(t, s, d.name, st, now)
	if st != d.st {
		d.st, d.picker = st, NewPicker(st)
	}
}

// expect returns the assignments the pool's strategy must make for req,
// from the pool as the store shows it and the reference's state, which a
// dry run leaves as it was. It reports false when the eligible Scales have
// no room for the batch.
func (d *diffPool) expect(t testing.TB, s dispatch.Store, req dispatch.DispatchRequest) (string, bool) {
	t.Helper()
	cands, scales := candidates(t, s, d.name, req.Now, d.rec.avgs)
	if !room(scales, len(req.Orders)) {
		return "", false
	}
	switch sp, _ := d.st.Spec(); sp.Kind {
	case balancing.Levels:
		want, _ := waterfillWithMax(slices.Collect(maps.Values(scales)), len(req.Orders))
		return want, true
	case balancing.Hashed:
		return strings.Join(runRing(scales, req.Orders), " "), true
	}
	p := d.picker
	if req.DryRun {
		p = balancing.Clone(p)
	}
	return strings.Join(runPicker(p, cands, maxOrders(scales), req.Rand, len(req.Orders)), " "), true
}

// dispatch sends req and checks it against the reference.
func (d *diffPool) dispatch(t testing.TB, s dispatch.Store, req dispatch.DispatchRequest, what string) {
	t.Helper()
	want, ok := d.expect(t, s, req)
	if !ok {
		before := Snapshot(t, s, d.name)
		_, _, err := s.Dispatch(ctx, req)
		wantErr(t, what, err, dispatch.ErrNoEligibleScale)
		CheckUnchanged(t, s, before)
		return
	}
	var b dispatch.Batch
	if req.DryRun {
		b = mustDryRun(t, s, req)
	} else {
		b = mustDispatch(t, s, req)
		d.rec.dispatched(b)
	}
	if got := compIDs(b); got != want {
		t.Fatalf("%s (%s, %d orders, dry run %v):\ngot  %s\nwant %s", what, d.st, len(req.Orders), req.DryRun, got, want)
	}
}

// randomScaleSpec returns a Scale spec with random fields: weight, state,
// maxOrders and orderCount, each set or not.
func randomScaleSpec(rng *rand.Rand) dispatch.ScaleSpec {
	var spec dispatch.ScaleSpec
	if rng.IntN(2) == 0 {
		w := 1 + rng.Int64N(5)
		if rng.IntN(5) == 0 {
			w = 1 + rng.Int64N(dispatch.MaxWeight)
		}
		spec.Weight = &w
	}
	if rng.IntN(3) == 0 {
		spec.State = ptr([]dispatch.ScaleState{dispatch.Active, dispatch.Active, dispatch.Draining, dispatch.Down}[rng.IntN(4)])
	}
	if rng.IntN(3) == 0 {
		spec.OrderCount = ptr(rng.Int64N(30))
	}
	if rng.IntN(4) == 0 {
		spec.MaxOrders = ptr(int64(0))
		if rng.IntN(2) == 0 {
			spec.MaxOrders = ptr(5 + rng.Int64N(30))
		}
	}
	return spec
}

// randomOrders returns n orders named prefix1…, about half with a key from
// a small set, so that keys repeat.
func randomOrders(rng *rand.Rand, prefix string, n int) []dispatch.OrderInput {
	out := make([]dispatch.OrderInput, n)
	for i := range out {
		out[i].ID = fmt.Sprintf("%s%d", prefix, i+1)
		if rng.IntN(2) == 0 {
			out[i].Key = fmt.Sprint("key-", rng.IntN(40))
		}
	}
	return out
}

// testStrategyDifferential runs random pools through random operations:
// batches real and dry, completions with durations, cancellations, Scales
// changed, registered and deleted, strategy and slow start changed. Every
// batch must equal the balancing reference over the candidates computed
// from the store's state just before it, with the reference's state kept
// across batches as the store must keep it.
func testStrategyDifferential(t *testing.T, s dispatch.Store) {
	for seed := range uint64(2 * len(dispatch.Strategies)) {
		rng := rand.New(rand.NewPCG(seed, 42))
		d := &diffPool{name: fmt.Sprint("p", seed), st: dispatch.DefaultStrategy, rec: newEWMARecorder()}
		now := t0
		newPool(t, s, d.name, "")
		d.setStrategy(t, s, dispatch.Strategies[seed%uint64(len(dispatch.Strategies))], now)
		windows := []time.Duration{0, 30 * time.Second, 5 * time.Minute}
		if _, _, err := s.PutPool(ctx, d.name, dispatch.PoolSpec{SlowStart: ptr(windows[rng.IntN(3)])}, now); err != nil {
			t.Fatalf("PutPool: %v", err)
		}
		size, maxBatch := 1+rng.IntN(10), 12
		if seed%4 == 0 {
			size, maxBatch = 25+rng.IntN(30), 60
		}
		register := func() {
			id := fmt.Sprintf("c%03d", rng.IntN(1000))
			if _, err := s.GetScale(ctx, d.name, id); err == nil {
				return
			}
			spec := randomScaleSpec(rng)
			if spec.State != nil && *spec.State != dispatch.Active && rng.IntN(2) == 0 {
				spec.State = nil
			}
			putScale(t, s, d.name, id, spec, now)
		}
		for range size {
			register()
		}
		for step := range 50 {
			now = now.Add(time.Duration(rng.IntN(15)) * time.Second)
			what := fmt.Sprintf("seed %d step %d", seed, step)
			scales := allScales(t, s, d.name)
			assigned := d.rec.assigned()
			switch r := rng.IntN(20); {
			case r < 9:
				orders := randomOrders(rng, fmt.Sprintf("s%d-", step), 1+rng.IntN(maxBatch))
				req := ordersRequest(d.name, fmt.Sprint("b", step), now, randoms(rng, 2*len(orders)), orders)
				if rng.IntN(5) == 0 {
					req = dryRun(req)
				}
				d.dispatch(t, s, req, what)
			case r < 12 && len(assigned) > 0:
				rng.Shuffle(len(assigned), func(i, j int) { assigned[i], assigned[j] = assigned[j], assigned[i] })
				cs := make([]dispatch.Completion, 1+rng.IntN(min(len(assigned), 6)))
				for i := range cs {
					cs[i] = dispatch.Completion{OrderID: assigned[i]}
					if rng.IntN(4) > 0 {
						cs[i].DurationMs = 1 + rng.Int64N(1000)
					}
				}
				d.rec.completeMany(t, s, d.name, cs, now)
			case r < 13 && len(assigned) > 0:
				id := assigned[rng.IntN(len(assigned))]
				if _, err := s.Cancel(ctx, d.name, id, now); err != nil {
					t.Fatalf("%s: Cancel: %v", what, err)
				}
				delete(d.rec.scaleOf, id)
			case r < 16 && len(scales) > 0:
				putScale(t, s, d.name, scales[rng.IntN(len(scales))].CompID, randomScaleSpec(rng), now)
			case r < 17:
				register()
			case r < 18 && len(scales) > 1:
				id := scales[rng.IntN(len(scales))].CompID
				if err := s.DeleteScale(ctx, d.name, id, true, now); err != nil {
					t.Fatalf("%s: DeleteScale: %v", what, err)
				}
				d.rec.deleted(id)
			case r < 19:
				d.setStrategy(t, s, dispatch.Strategies[rng.IntN(len(dispatch.Strategies))], now)
			default:
				if _, _, err := s.PutPool(ctx, d.name, dispatch.PoolSpec{SlowStart: ptr(windows[rng.IntN(3)])}, now); err != nil {
					t.Fatalf("%s: PutPool: %v", what, err)
				}
			}
		}
	}
}

// testStrategyLargePool runs every strategy over a pool of 700 Scales, a
// third of which fill up within the batches: enough for a store's
// structures to span several blocks or chunks.
func testStrategyLargePool(t *testing.T, s dispatch.Store) {
	rng := rand.New(rand.NewPCG(8, 8))
	d := &diffPool{name: "p1", st: dispatch.DefaultStrategy, rec: newEWMARecorder()}
	newPool(t, s, d.name, "")
	for i := range 700 {
		spec := dispatch.ScaleSpec{Weight: ptr(1 + rng.Int64N(5)), OrderCount: ptr(rng.Int64N(20))}
		switch r := rng.IntN(10); {
		case r == 0:
			spec.State = ptr(dispatch.Draining)
		case r < 4:
			spec.MaxOrders = ptr(*spec.OrderCount + 1 + rng.Int64N(3))
		}
		putScale(t, s, d.name, fmt.Sprintf("s%04d", i), spec, t0)
	}
	for round := range 2 {
		for i, st := range dispatch.Strategies {
			now := at(time.Duration(round*100+i) * time.Second)
			d.setStrategy(t, s, st, now)
			for j, n := range []int{1, 40, 300} {
				orders := randomOrders(rng, fmt.Sprintf("r%d-%d-%d-", round, i, j), n)
				req := ordersRequest(d.name, fmt.Sprintf("b%d-%d-%d", round, i, j), now, randoms(rng, 2*n), orders)
				d.dispatch(t, s, req, fmt.Sprintf("round %d, %s, batch of %d", round, st, n))
			}
			assigned := d.rec.assigned()
			cs := make([]dispatch.Completion, min(len(assigned), 200))
			for k := range cs {
				cs[k] = dispatch.Completion{OrderID: assigned[rng.IntN(len(assigned))], DurationMs: 1 + rng.Int64N(300)}
			}
			slices.SortFunc(cs, func(a, b dispatch.Completion) int { return strings.Compare(a.OrderID, b.OrderID) })
			cs = slices.CompactFunc(cs, func(a, b dispatch.Completion) bool { return a.OrderID == b.OrderID })
			d.rec.completeMany(t, s, d.name, cs, now)
		}
	}
}
