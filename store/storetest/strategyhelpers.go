package storetest

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// max53 is the largest random number a request may carry, 2^53 − 1.
const max53 = 1<<53 - 1

// strategyPool creates a pool at t0 with strategy st and the Scales of spec
// ("A=3/2 B=0"): each registered at t0 with that orderCount and weight
// (default 1).
func strategyPool(t testing.TB, s dispatch.Store, pool string, st dispatch.Strategy, spec string) {
	t.Helper()
	if _, _, err := s.PutPool(ctx, pool, dispatch.PoolSpec{Strategy: &st}, t0); err != nil {
		t.Fatalf("PutPool %s: %v", pool, err)
	}
	for _, f := range strings.Fields(spec) {
		id, load, _ := strings.Cut(f, "=")
		count, weight, hasWeight := strings.Cut(load, "/")
		sp := dispatch.ScaleSpec{OrderCount: ptr(mustInt(t, count))}
		if hasWeight {
			sp.Weight = ptr(mustInt(t, weight))
		}
		putScale(t, s, pool, id, sp, t0)
	}
}

func mustInt(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return n
}

// setStrategy sets the pool's strategy at now.
func setStrategy(t testing.TB, s dispatch.Store, pool string, st dispatch.Strategy, now time.Time) {
	t.Helper()
	if _, _, err := s.PutPool(ctx, pool, dispatch.PoolSpec{Strategy: &st}, now); err != nil {
		t.Fatalf("PutPool %s strategy %s: %v", pool, st, err)
	}
}

// randRequest is request with the random numbers rnd (two per order; the
// missing ones 0).
func randRequest(pool, batchID string, now time.Time, rnd []uint64, orderIDs ...string) dispatch.DispatchRequest {
	req := request(pool, batchID, now, orderIDs...)
	copy(req.Rand, rnd)
	return req
}

// ordersRequest is randRequest with the orders given, keys and all.
func ordersRequest(pool, batchID string, now time.Time, rnd []uint64, orders []dispatch.OrderInput) dispatch.DispatchRequest {
	req := randRequest(pool, batchID, now, rnd)
	req.Orders = orders
	req.Rand = make([]uint64, 2*len(orders))
	copy(req.Rand, rnd)
	return req
}

// dryRun is req as a dry run.
func dryRun(req dispatch.DispatchRequest) dispatch.DispatchRequest {
	req.DryRun, req.BatchID = true, ""
	return req
}

// mustDryRun dry-runs req and checks that the pool did not change.
func mustDryRun(t testing.TB, s dispatch.Store, req dispatch.DispatchRequest) dispatch.Batch {
	t.Helper()
	before := Snapshot(t, s, req.Pool)
	b, _, err := s.Dispatch(ctx, dryRun(req))
	if err != nil {
		t.Fatalf("dry run in %s: %v", req.Pool, err)
	}
	CheckUnchanged(t, s, before)
	return b
}

// completeWith completes one order with a duration.
func completeWith(t testing.TB, s dispatch.Store, pool, orderID string, durationMs int64, now time.Time) {
	t.Helper()
	if _, _, err := s.Complete(ctx, pool, []dispatch.Completion{{OrderID: orderID, DurationMs: durationMs}}, now); err != nil {
		t.Fatalf("Complete %s: %v", orderID, err)
	}
}

// avg is a Scale's response-time average as the stores must keep it:
// balancing.EWMA over the durations (> 0) of its completed orders.
type avg struct {
	ms  float64
	has bool
}

// candidates returns the pool's eligible Scales as the strategies must see
// them at now, in compId order: orderCount, weight after slow start, and
// the averages of avgs. It also returns every Scale by compId.
func candidates(t testing.TB, s dispatch.Store, pool string, now time.Time, avgs map[string]avg) ([]balancing.Candidate, map[string]dispatch.Scale) {
	t.Helper()
	p, err := s.GetPool(ctx, pool)
	if err != nil {
		t.Fatalf("GetPool %s: %v", pool, err)
	}
	all := make(map[string]dispatch.Scale)
	var cands []balancing.Candidate
	for _, sc := range allScales(t, s, pool) {
		all[sc.CompID] = sc
		if !sc.Eligible() {
			continue
		}
		a := avgs[sc.CompID]
		cands = append(cands, balancing.Candidate{
			ID:     sc.CompID,
			Count:  sc.OrderCount(),
			Weight: balancing.SlowStartWeight(sc.Weight, now.UnixMilli()-sc.ActiveSince.UnixMilli(), p.SlowStart.Milliseconds()),
			AvgMs:  a.ms,
			HasAvg: a.has,
		})
	}
	slices.SortFunc(cands, func(a, b balancing.Candidate) int { return strings.Compare(a.ID, b.ID) })
	return cands, all
}

// NewPicker returns the balancing Picker of a strategy with a fresh state,
// from balancing's registry, or nil for the strategies that are not
// Pickers (waterfill, consistent-hash): the reference a store's picks are
// compared with.
func NewPicker(st dispatch.Strategy) balancing.Picker {
	if sp, ok := st.Spec(); ok && sp.New != nil {
		return sp.New()
	}
	return nil
}

// runPicker picks m orders with p over cands as a store must: order k
// draws rnd[2k] and rnd[2k+1], its Scale's count rises before the next
// pick, and a Scale that reaches its maxOrders (in maxOf, 0: none) leaves
// the candidates. It changes cands.
func runPicker(p balancing.Picker, cands []balancing.Candidate, maxOf map[string]int64, rnd []uint64, m int) []string {
	out := make([]string, 0, m)
	for k := range m {
		i := p.Pick(cands, rnd[2*k], rnd[2*k+1])
		out = append(out, cands[i].ID)
		cands[i].Count++
		if mx := maxOf[cands[i].ID]; mx > 0 && cands[i].Count >= mx {
			cands = slices.Delete(cands, i, i+1)
		}
	}
	return out
}

// runRing looks the orders up as consistent-hash must: on a ring of every
// registered Scale with balancing.DefaultVNodes points, by key (the id
// without one), walking past Scales that are not eligible with the batch's
// earlier orders counted.
func runRing(scales map[string]dispatch.Scale, orders []dispatch.OrderInput) []string {
	ids := slices.Sorted(maps.Keys(scales))
	ring := balancing.NewRing(balancing.DefaultVNodes, ids...)
	added := make(map[string]int64)
	out := make([]string, 0, len(orders))
	for _, o := range orders {
		key := o.Key
		if key == "" {
			key = o.ID
		}
		id, _ := ring.Lookup(key, func(id string) bool {
			sc := scales[id]
			sc.Outstanding += added[id]
			return sc.Eligible()
		})
		added[id]++
		out = append(out, id)
	}
	return out
}

// room reports whether the eligible Scales have room for m orders.
func room(scales map[string]dispatch.Scale, m int) bool {
	var free int64
	for _, sc := range scales {
		if !sc.Eligible() {
			continue
		}
		if sc.MaxOrders == 0 {
			return true
		}
		free += sc.MaxOrders - sc.OrderCount()
	}
	return free >= int64(m)
}

// maxOrders returns the maxOrders of every Scale.
func maxOrders(scales map[string]dispatch.Scale) map[string]int64 {
	out := make(map[string]int64, len(scales))
	for id, sc := range scales {
		out[id] = sc.MaxOrders
	}
	return out
}

// ewmaRecorder remembers where orders went and the response-time averages
// their completions feed, as a store must keep them.
type ewmaRecorder struct {
	scaleOf map[string]string // assigned order id → compId
	avgs    map[string]avg
}

func newEWMARecorder() *ewmaRecorder {
	return &ewmaRecorder{scaleOf: make(map[string]string), avgs: make(map[string]avg)}
}

// dispatched records the assignments of a real batch.
func (r *ewmaRecorder) dispatched(b dispatch.Batch) {
	for _, a := range b.Assignments {
		r.scaleOf[a.OrderID] = a.CompID
	}
}

// complete completes an assigned order with durationMs and feeds the average.
func (r *ewmaRecorder) complete(t testing.TB, s dispatch.Store, pool, orderID string, durationMs int64, now time.Time) {
	t.Helper()
	r.completeMany(t, s, pool, []dispatch.Completion{{OrderID: orderID, DurationMs: durationMs}}, now)
}

// completeMany completes assigned orders in one call; their durations feed
// the averages in request order.
func (r *ewmaRecorder) completeMany(t testing.TB, s dispatch.Store, pool string, cs []dispatch.Completion, now time.Time) {
	t.Helper()
	if _, _, err := s.Complete(ctx, pool, cs, now); err != nil {
		t.Fatalf("Complete %d orders: %v", len(cs), err)
	}
	for _, c := range cs {
		if id, ok := r.scaleOf[c.OrderID]; ok && c.DurationMs > 0 {
			a := r.avgs[id]
			r.avgs[id] = avg{ms: balancing.EWMA(a.ms, a.has, c.DurationMs), has: true}
		}
		delete(r.scaleOf, c.OrderID)
	}
}

// deleted forgets a Scale removed with force: its orders are cancelled and
// its average gone.
func (r *ewmaRecorder) deleted(compID string) {
	delete(r.avgs, compID)
	for o, id := range r.scaleOf {
		if id == compID {
			delete(r.scaleOf, o)
		}
	}
}

// assigned returns the ids of the assigned orders, sorted.
func (r *ewmaRecorder) assigned() []string {
	return slices.Sorted(maps.Keys(r.scaleOf))
}
