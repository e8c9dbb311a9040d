package dispatch_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// Limits of FuzzServiceDispatch: a small MaxBatch, so that the fuzzer can
// cross it, and a bound on the operations of one input.
const (
	fuzzMaxBatch = 16
	fuzzMaxOps   = 64
	fuzzPool     = "p"
)

// fuzzNow is the Service's clock: fixed, so that nothing expires.
var fuzzNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// FuzzServiceDispatch runs a program of operations through a Service over
// the memory store and a model of DESIGN §1–§4 side by side. Each input is
// valid exactly when the model finds no validation error, and then the
// Service answers exactly what the model's state gives: an error of the
// store (unknown pool or order, held order id, no room, Idempotency-Key
// reused) or the success, a batch assigned as waterfill assigns it, each
// order exactly once. A refused operation changes nothing. After every
// operation the Scales are as the model has them, outstanding equal to the
// orders assigned to them, and the table is the waterfill table of the
// eligible Scales; at the end every order is as the model has it.
//
// The program has one operation a line (at most 64), in pool "p" (strategy
// waterfill, no Scales) unless a line "@name" chose another pool:
//
//	S compId orderCount maxOrders state weight   PutScale; "-" leaves a field out
//	B id=key|id|=key|…                             Dispatch; an empty id is generated
//	D id=key|…                                     Dispatch with dryRun
//	I idemKey id=key|…                             Dispatch with an Idempotency-Key
//	C id=durationMs|id|…                           Complete
//	X id                                           CancelOrder
//	R compId [force]                               DeleteScale
//
// "B" alone is a batch of no orders.
func FuzzServiceDispatch(f *testing.F) {
	f.Add("S S1 1 - - -\nS S2 5 - - -\nS S3 12 - - -\nB " + numberedOrders("o", 22)) // the seed's worked example
	f.Add("S S1 0 - - -\nS S2 0 3 - -\nB a|b|c|d|e|f|g|h|i\nC a|b=120\nX c\nB a\nB j=cust-9|k=cust-9")
	f.Add("S A 0 2 - -\nB x|y|z")    // no room for the batch
	f.Add("S A 0 - draining -\nB x") // no eligible Scale
	f.Add("S A - - - 1000000\nS B - - - 0\nS C -1 - - -\nS D 2147483648 - - -\nS E - -1 - -\nS F - - idle -")
	f.Add("S A 0 - - -\nB x|y|x")  // an id repeated within the batch
	f.Add("S A 0 - - -\nB |=k|")   // generated ids
	f.Add("S A 0 - - -\nB x=|y= ") // an empty key is an absent key
	f.Add("S A 0 - - -\nB -x|x.y|" + strings.Repeat("a", 128) + "|" + strings.Repeat("b", 129))
	f.Add("S A 0 - - -\nB x=" + strings.Repeat("k", 257))          // a key too long
	f.Add("S A 0 - - -\nB x=\xff\xfe")                             // a key that is not UTF-8
	f.Add("S A 0 - - -\nB x\n")                                    // an id with a newline after it
	f.Add("S A 0 - - -\nB")                                        // an empty batch
	f.Add("S A 0 - - -\nB " + numberedOrders("o", fuzzMaxBatch+1)) // a batch too large
	f.Add("S A 0 - - -\nI k1 x|y\nI k1 x|y\nI k1 x|z\nI bad! q\nB x")
	f.Add("S A 0 - - -\nD x|y\nD x|y\nB x\nD x\nI k x") // dry runs change nothing
	f.Add("S A 0 - - -\nS B 0 - - -\nB a|b|c|d\nR A\nR A force\nB e|f\nC a|b|c|d\nX a")
	f.Add("S A 0 - - -\nB a|b\nC a|a\nC a=-1\nC a=2147483648\nC\nC bad id\nC nope\nX nope")
	f.Add("@q\nB x\n@bad pool\nB x\n@\nS A 0 - - -\n@p\nS A 0 - - -\nB x") // unknown and invalid pools
	f.Add("S A 7 - - -\nB a|b\nS A 1 - - -\nS A 30 - - -\nB c\nS A - 4 down -\nS A - - active -\nB d")
	f.Fuzz(func(t *testing.T, program string) {
		ctx := context.Background()
		st := memory.New(memory.Options{})
		svc := dispatch.NewService(st, dispatch.Config{
			MaxBatch: fuzzMaxBatch,
			Now:      func() time.Time { return fuzzNow },
			Rand:     func() uint64 { return 0 },
		})
		if _, _, err := svc.PutPool(ctx, fuzzPool, dispatch.PoolSpec{}); err != nil {
			t.Fatal(err)
		}
		m := newModel()
		pool := fuzzPool
		lines := strings.Split(program, "\n")
		for _, line := range lines[:min(len(lines), fuzzMaxOps)] {
			if name, ok := strings.CutPrefix(line, "@"); ok {
				pool = name
				continue
			}
			op, rest, _ := strings.Cut(line, " ")
			var touched []string
			switch op {
			case "S":
				m.putScale(t, svc, pool, rest)
			case "B", "D", "I":
				touched = m.dispatch(t, svc, pool, op, rest, line)
			case "C":
				touched = m.complete(t, svc, pool, rest)
			case "X":
				touched = []string{rest}
				m.cancel(t, svc, pool, rest)
			case "R":
				compID, force := strings.CutSuffix(rest, " force")
				m.deleteScale(t, svc, pool, compID, force)
			default:
				continue
			}
			m.checkScales(t, st, line)
			m.checkOrders(t, st, line, touched)
		}
		m.checkOrders(t, st, "the end", m.orderIDs)
	})
}

// numberedOrders is the orders of a B line with ids prefix1, prefix2, ….
func numberedOrders(prefix string, n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = prefix + strconv.Itoa(i+1)
	}
	return strings.Join(ids, "|")
}

// model is pool "p" as DESIGN §1–§4 describe it.
type model struct {
	scales   map[string]*modelScale
	orders   map[string]*dispatch.Order
	orderIDs []string // in dispatch order
	idem     map[string]idemRecord
}

type modelScale struct{ dispatch.Scale }

type idemRecord struct {
	fingerprint string
	batch       dispatch.Batch
}

func newModel() *model {
	return &model{scales: make(map[string]*modelScale), orders: make(map[string]*dispatch.Order), idem: make(map[string]idemRecord)}
}

// validKey is the key rule of DESIGN §1: 1 to 256 bytes of UTF-8.
func validKey(key string) bool { return len(key) >= 1 && len(key) <= 256 && utf8.ValidString(key) }

// expect checks err against the errors the model allows: nil when allowed
// is empty, else one of allowed.
func expect(t *testing.T, what string, err error, allowed ...error) {
	t.Helper()
	if len(allowed) == 0 {
		if err != nil {
			t.Fatalf("%s: got error %v, want success", what, err)
		}
		return
	}
	for _, a := range allowed {
		if errors.Is(err, a) {
			return
		}
	}
	t.Fatalf("%s: got error %v, want one of %v", what, err, allowed)
}

// poolErrors returns the error of an operation on pool that the model
// knows before asking the store: an invalid id, or a pool that does not
// exist (the second result).
func poolErrors(pool string) (invalid, missing []error) {
	switch {
	case !storetest.ValidID(pool):
		return []error{dispatch.ErrInvalidID}, nil
	case pool != fuzzPool:
		return nil, []error{dispatch.ErrPoolNotFound}
	}
	return nil, nil
}

// parseInt parses a field of an S line: nil for "-" or a field that is not
// an integer.
func parseInt(field string) *int64 {
	v, err := strconv.ParseInt(field, 10, 64)
	if err != nil {
		return nil
	}
	return &v
}

func (m *model) putScale(t *testing.T, svc *dispatch.Service, pool, rest string) {
	t.Helper()
	fields := strings.Split(rest, " ")
	for len(fields) < 5 {
		fields = append(fields, "-")
	}
	compID := fields[0]
	spec := dispatch.ScaleSpec{OrderCount: parseInt(fields[1]), MaxOrders: parseInt(fields[2]), Weight: parseInt(fields[4])}
	if fields[3] != "-" {
		st := dispatch.ScaleState(fields[3])
		spec.State = &st
	}
	invalid, missing := poolErrors(pool)
	if !storetest.ValidID(compID) {
		invalid = append(invalid, dispatch.ErrInvalidID)
	}
	inRange := func(v *int64, lo, hi int64) bool { return v == nil || *v >= lo && *v <= hi }
	if !inRange(spec.Weight, 1, 1_000_000) || !inRange(spec.MaxOrders, 0, 1<<31-1) || !inRange(spec.OrderCount, 0, 1<<31-1) {
		invalid = append(invalid, dispatch.ErrOutOfRange)
	}
	if st := spec.State; st != nil && *st != "active" && *st != "draining" && *st != "down" {
		invalid = append(invalid, dispatch.ErrInvalidState)
	}
	got, created, err := svc.PutScale(context.Background(), pool, compID, spec)
	what := fmt.Sprintf("PutScale(%q, %q, %s)", pool, compID, rest)
	if len(invalid) > 0 || len(missing) > 0 {
		expect(t, what, err, append(invalid, missing...)...)
		return
	}
	expect(t, what, err)
	sc, ok := m.scales[compID]
	if created == ok {
		t.Fatalf("%s: created %v, but the Scale existed: %v", what, created, ok)
	}
	if !ok {
		sc = &modelScale{Scale: dispatch.Scale{CompID: compID, Weight: 1, State: dispatch.Active}}
		m.scales[compID] = sc
	}
	if spec.Weight != nil {
		sc.Weight = *spec.Weight
	}
	if spec.MaxOrders != nil {
		sc.MaxOrders = *spec.MaxOrders
	}
	if spec.State != nil {
		sc.State = *spec.State
	}
	if spec.OrderCount != nil {
		sc.BaseLoad = max(0, *spec.OrderCount-sc.Outstanding)
	}
	if want := sc.Scale; got.CompID != want.CompID || got.Weight != want.Weight || got.State != want.State ||
		got.MaxOrders != want.MaxOrders || got.Outstanding != want.Outstanding || got.BaseLoad != want.BaseLoad {
		t.Fatalf("%s = %+v, want %+v", what, got, want)
	}
}

// parseOrders reads "id=key|id|…"; "" is no orders.
func parseOrders(s string) []dispatch.OrderInput {
	if s == "" {
		return nil
	}
	var orders []dispatch.OrderInput
	for _, o := range strings.Split(s, "|") {
		id, key, _ := strings.Cut(o, "=")
		orders = append(orders, dispatch.OrderInput{ID: id, Key: key})
	}
	return orders
}

// dispatch runs a B, D or I line and returns the order ids it names.
func (m *model) dispatch(t *testing.T, svc *dispatch.Service, pool, op, rest, line string) []string {
	t.Helper()
	in := dispatch.DispatchInput{Pool: pool, DryRun: op == "D"}
	if op == "I" {
		in.IdempotencyKey, rest, _ = strings.Cut(rest, " ")
		in.Fingerprint = rest
	}
	in.Orders = parseOrders(rest)
	var named []string
	for _, o := range in.Orders {
		if o.ID != "" {
			named = append(named, o.ID)
		}
	}

	// Validation, in no particular order: any of these may answer.
	invalid, missing := poolErrors(pool)
	if key := in.IdempotencyKey; key != "" && !storetest.ValidID(key) { // the Service takes "" for no key
		invalid = append(invalid, dispatch.ErrInvalidID)
	}
	switch n := len(in.Orders); {
	case n == 0:
		invalid = append(invalid, dispatch.ErrEmptyBatch)
	case n > fuzzMaxBatch:
		invalid = append(invalid, dispatch.ErrBatchTooLarge)
	}
	seen := make(map[string]bool)
	for _, o := range in.Orders {
		if o.ID != "" && !storetest.ValidID(o.ID) {
			invalid = append(invalid, dispatch.ErrInvalidID)
		}
		if o.Key != "" && !validKey(o.Key) {
			invalid = append(invalid, dispatch.ErrInvalidKey)
		}
		if o.ID != "" && seen[o.ID] {
			invalid = append(invalid, dispatch.ErrDuplicateOrder)
		}
		seen[o.ID] = true
	}
	b, replayed, err := svc.Dispatch(context.Background(), in)
	what := fmt.Sprintf("Dispatch %q", line)
	if len(invalid) > 0 {
		expect(t, what, err, invalid...)
		return named
	}
	if len(missing) > 0 {
		expect(t, what, err, missing...)
		return named
	}

	// The state: a replay, or an error of the store, or the batch.
	if rec, ok := m.idem[in.IdempotencyKey]; ok && in.IdempotencyKey != "" {
		if rec.fingerprint != in.Fingerprint {
			expect(t, what, err, dispatch.ErrIdempotencyMismatch)
			return named
		}
		expect(t, what, err)
		if !replayed || !sameBatch(b, rec.batch) {
			t.Fatalf("%s: got %+v (replayed %v), want the replay of %+v", what, b, replayed, rec.batch)
		}
		return named
	}
	var conflicts []error
	for _, id := range named {
		if m.orders[id] != nil {
			conflicts = append(conflicts, dispatch.ErrOrderExists)
		}
	}
	picks, room := m.waterfill(len(in.Orders))
	if !room {
		conflicts = append(conflicts, dispatch.ErrNoEligibleScale)
	}
	if len(conflicts) > 0 {
		expect(t, what, err, conflicts...)
		return named
	}
	expect(t, what, err)
	if replayed || b.Pool != pool || b.Strategy != dispatch.Waterfill || !b.CreatedAt.Equal(fuzzNow) || len(b.Assignments) != len(in.Orders) {
		t.Fatalf("%s = %+v (replayed %v), want %d assignments in pool %s by waterfill at %v", what, b, replayed, len(in.Orders), pool, fuzzNow)
	}
	if in.DryRun != (b.ID == "") || b.ID != "" && !storetest.ValidID(b.ID) {
		t.Fatalf("%s: batch id %q (dry run %v)", what, b.ID, in.DryRun)
	}
	ids := make(map[string]bool)
	for i, a := range b.Assignments {
		if id := in.Orders[i].ID; id != "" && a.OrderID != id {
			t.Fatalf("%s: assignment %d is order %q, want %q", what, i, a.OrderID, id)
		}
		if !storetest.ValidID(a.OrderID) || ids[a.OrderID] || m.orders[a.OrderID] != nil {
			t.Fatalf("%s: assignment %d has order id %q, invalid or given twice", what, i, a.OrderID)
		}
		ids[a.OrderID] = true
		if a.CompID != picks[i] {
			t.Fatalf("%s: assignment %d went to %s, waterfill gives %s (all: %s)", what, i, a.CompID, picks[i], strings.Join(picks, " "))
		}
	}
	if in.DryRun {
		return named
	}
	for i, a := range b.Assignments {
		sc := m.scales[a.CompID]
		sc.Outstanding++
		m.orders[a.OrderID] = &dispatch.Order{ID: a.OrderID, CompID: a.CompID, BatchID: b.ID, Key: in.Orders[i].Key,
			State: dispatch.Assigned, AssignedAt: fuzzNow}
		m.orderIDs = append(m.orderIDs, a.OrderID)
	}
	if in.IdempotencyKey != "" {
		m.idem[in.IdempotencyKey] = idemRecord{fingerprint: in.Fingerprint, batch: b}
	}
	return named
}

func sameBatch(a, b dispatch.Batch) bool {
	return a.ID == b.ID && a.Pool == b.Pool && a.Strategy == b.Strategy && a.CreatedAt.Equal(b.CreatedAt) &&
		slices.Equal(a.Assignments, b.Assignments)
}

// waterfill returns the compIds of n orders as DESIGN §2 assigns them:
// waterfill over the eligible Scales, the table rebuilt whenever a Scale
// reaches its maxOrders; and whether the eligible Scales have room for all
// of them (the batch is refused otherwise).
func (m *model) waterfill(n int) ([]string, bool) {
	count := make(map[string]int64)
	eligible := func(sc *modelScale) bool {
		c := sc.BaseLoad + sc.Outstanding + count[sc.CompID]
		return sc.State == dispatch.Active && (sc.MaxOrders == 0 || c < sc.MaxOrders)
	}
	var room int64
	unlimited, some := false, false
	for _, sc := range m.scales {
		if eligible(sc) {
			some = true
			if sc.MaxOrders == 0 {
				unlimited = true
			} else {
				room += sc.MaxOrders - sc.BaseLoad - sc.Outstanding
			}
		}
	}
	if !some || !unlimited && room < int64(n) {
		return nil, false
	}
	var picks []string
	for len(picks) < n {
		var loads []balancing.Load
		for _, sc := range m.scales {
			if eligible(sc) {
				loads = append(loads, balancing.Load{ID: sc.CompID, Count: sc.BaseLoad + sc.Outstanding + count[sc.CompID]})
			}
		}
		sorted := balancing.SortLoads(loads)
		balancing.Waterfill(sorted, n-len(picks), func(rank int) bool {
			id := sorted[rank].ID
			count[id]++
			picks = append(picks, id)
			return eligible(m.scales[id])
		})
	}
	return picks, true
}

// complete runs a C line and returns the order ids it names.
func (m *model) complete(t *testing.T, svc *dispatch.Service, pool, rest string) []string {
	t.Helper()
	var cs []dispatch.Completion
	var named []string
	invalid, missing := poolErrors(pool)
	if rest != "" {
		seen := make(map[string]bool)
		for _, c := range strings.Split(rest, "|") {
			id, ms, hasMs := strings.Cut(c, "=")
			var d int64
			if hasMs {
				v := parseInt(ms)
				if v == nil {
					continue
				}
				d = *v
			}
			cs = append(cs, dispatch.Completion{OrderID: id, DurationMs: d})
			named = append(named, id)
			if !storetest.ValidID(id) {
				invalid = append(invalid, dispatch.ErrInvalidID)
			}
			if seen[id] {
				invalid = append(invalid, dispatch.ErrDuplicateOrder)
			}
			seen[id] = true
			if d < 0 || d > 1<<31-1 {
				invalid = append(invalid, dispatch.ErrOutOfRange)
			}
		}
	}
	switch {
	case len(cs) == 0:
		invalid = append(invalid, dispatch.ErrEmptyBatch)
	case len(cs) > fuzzMaxBatch:
		invalid = append(invalid, dispatch.ErrBatchTooLarge)
	}
	n, err := svc.Complete(context.Background(), pool, cs)
	what := fmt.Sprintf("Complete(%q, %q)", pool, rest)
	if len(invalid) > 0 || len(missing) > 0 {
		expect(t, what, err, append(invalid, missing...)...)
		return named
	}
	var conflicts []error
	want := 0
	for _, c := range cs {
		switch o := m.orders[c.OrderID]; {
		case o == nil:
			conflicts = append(conflicts, dispatch.ErrOrderNotFound)
		case o.State == dispatch.Cancelled:
			conflicts = append(conflicts, dispatch.ErrOrderState)
		case o.State == dispatch.Assigned:
			want++
		}
	}
	if len(conflicts) > 0 {
		expect(t, what, err, conflicts...)
		return named
	}
	expect(t, what, err)
	if n != want {
		t.Fatalf("%s = %d, want %d", what, n, want)
	}
	for _, c := range cs {
		if o := m.orders[c.OrderID]; o.State == dispatch.Assigned {
			m.finish(o, dispatch.Completed)
		}
	}
	return named
}

// finish ends an assigned order in state.
func (m *model) finish(o *dispatch.Order, state dispatch.OrderState) {
	if sc := m.scales[o.CompID]; sc != nil {
		sc.Outstanding--
	}
	o.State, o.CompletedAt = state, fuzzNow
}

func (m *model) cancel(t *testing.T, svc *dispatch.Service, pool, id string) {
	t.Helper()
	invalid, missing := poolErrors(pool)
	if !storetest.ValidID(id) {
		invalid = append(invalid, dispatch.ErrInvalidID)
	}
	got, err := svc.CancelOrder(context.Background(), pool, id)
	what := fmt.Sprintf("CancelOrder(%q, %q)", pool, id)
	if len(invalid) > 0 || len(missing) > 0 {
		expect(t, what, err, append(invalid, missing...)...)
		return
	}
	o := m.orders[id]
	switch {
	case o == nil:
		expect(t, what, err, dispatch.ErrOrderNotFound)
		return
	case o.State == dispatch.Completed:
		expect(t, what, err, dispatch.ErrOrderState)
		return
	}
	expect(t, what, err)
	if o.State == dispatch.Assigned {
		m.finish(o, dispatch.Cancelled)
	}
	if got.ID != id || got.State != dispatch.Cancelled {
		t.Fatalf("%s = %+v, want it cancelled", what, got)
	}
}

func (m *model) deleteScale(t *testing.T, svc *dispatch.Service, pool, compID string, force bool) {
	t.Helper()
	invalid, missing := poolErrors(pool)
	if !storetest.ValidID(compID) {
		invalid = append(invalid, dispatch.ErrInvalidID)
	}
	err := svc.DeleteScale(context.Background(), pool, compID, force)
	what := fmt.Sprintf("DeleteScale(%q, %q, %v)", pool, compID, force)
	if len(invalid) > 0 || len(missing) > 0 {
		expect(t, what, err, append(invalid, missing...)...)
		return
	}
	sc := m.scales[compID]
	switch {
	case sc == nil:
		expect(t, what, err, dispatch.ErrScaleNotFound)
		return
	case sc.Outstanding > 0 && !force:
		expect(t, what, err, dispatch.ErrScaleBusy)
		return
	}
	expect(t, what, err)
	for _, id := range m.orderIDs {
		if o := m.orders[id]; o.CompID == compID && o.State == dispatch.Assigned {
			m.finish(o, dispatch.Cancelled)
		}
	}
	delete(m.scales, compID)
}

// checkScales compares the store's Scales and table with the model, and
// checks that each Scale's outstanding is the number of orders the model
// has assigned to it.
func (m *model) checkScales(t *testing.T, st dispatch.Store, after string) {
	t.Helper()
	scales, next, err := st.ListScales(context.Background(), fuzzPool, dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil || next != "" {
		t.Fatalf("after %q: ListScales: %v (next %q)", after, err, next)
	}
	if len(scales) != len(m.scales) {
		t.Fatalf("after %q: the store has %d Scales, the model %d", after, len(scales), len(m.scales))
	}
	assigned := make(map[string]int64)
	for _, o := range m.orders {
		if o.State == dispatch.Assigned {
			assigned[o.CompID]++
		}
	}
	var eligible []balancing.Load
	for _, got := range scales {
		want, ok := m.scales[got.CompID]
		if !ok || got.Weight != want.Weight || got.State != want.State || got.MaxOrders != want.MaxOrders ||
			got.Outstanding != want.Outstanding || got.BaseLoad != want.BaseLoad {
			t.Fatalf("after %q: the store has %+v, the model %+v", after, got, want)
		}
		if got.Outstanding != assigned[got.CompID] {
			t.Fatalf("after %q: %s has outstanding %d, but %d orders assigned", after, got.CompID, got.Outstanding, assigned[got.CompID])
		}
		if got.Eligible() {
			eligible = append(eligible, balancing.Load{ID: got.CompID, Count: got.OrderCount()})
		}
	}
	if !slices.IsSortedFunc(scales, func(a, b dispatch.Scale) int {
		return cmp.Or(cmp.Compare(a.OrderCount(), b.OrderCount()), strings.Compare(a.CompID, b.CompID))
	}) {
		t.Fatalf("after %q: Scales not sorted by (orderCount, compId): %+v", after, scales)
	}
	tab, err := st.Table(context.Background(), fuzzPool)
	if err != nil {
		t.Fatalf("after %q: Table: %v", after, err)
	}
	ids, counts := balancing.Table(balancing.SortLoads(eligible))
	if !slices.Equal(tab.CompIDs, ids) || !slices.Equal(tab.DispatchCounts, counts) {
		t.Fatalf("after %q: table %v %v, want %v %v", after, tab.CompIDs, tab.DispatchCounts, ids, counts)
	}
}

// checkOrders compares the store's orders with the model for ids: an order
// the model does not have must not be in the store.
func (m *model) checkOrders(t *testing.T, st dispatch.Store, after string, ids []string) {
	t.Helper()
	for _, id := range ids {
		got, err := st.GetOrder(context.Background(), fuzzPool, id, fuzzNow)
		want := m.orders[id]
		if want == nil {
			if !errors.Is(err, dispatch.ErrOrderNotFound) {
				t.Fatalf("after %q: order %q: got %+v, %v; want ErrOrderNotFound", after, id, got, err)
			}
			continue
		}
		if err != nil || got.ID != want.ID || got.CompID != want.CompID || got.BatchID != want.BatchID || got.Key != want.Key ||
			got.State != want.State || !got.AssignedAt.Equal(want.AssignedAt) || !got.CompletedAt.Equal(want.CompletedAt) {
			t.Fatalf("after %q: order %q: got %+v, %v; want %+v", after, id, got, err, *want)
		}
	}
}
