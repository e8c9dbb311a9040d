package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// tracked is the store under test, wrapped to remember every order id it
// dispatched, so that the invariants can be checked through the interface.
type tracked struct {
	dispatch.Store
	mu     sync.Mutex
	orders map[string]map[string]struct{} // pool → order ids
}

func newTracked(s dispatch.Store) *tracked {
	return &tracked{Store: s, orders: make(map[string]map[string]struct{})}
}

// Dispatch dispatches and remembers the order ids of the batch.
func (s *tracked) Dispatch(ctx context.Context, req dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	b, replayed, err := s.Store.Dispatch(ctx, req)
	if err == nil && !req.DryRun {
		s.mu.Lock()
		ids := s.orders[req.Pool]
		if ids == nil {
			ids = make(map[string]struct{})
			s.orders[req.Pool] = ids
		}
		for _, a := range b.Assignments {
			ids[a.OrderID] = struct{}{}
		}
		s.mu.Unlock()
	}
	return b, replayed, err
}

// checkInvariants checks every pool in the store: Scales list in order,
// orderCount = baseLoad + outstanding, outstanding = the Scale's orders in
// state assigned, ScaleCount, and the table of the eligible Scales.
func (s *tracked) checkInvariants(t testing.TB) {
	t.Helper()
	for _, p := range allPools(t, s) {
		scales := allScales(t, s, p.Name)
		if p.ScaleCount != len(scales) {
			t.Errorf("pool %s: got scaleCount %d, want %d (listed)", p.Name, p.ScaleCount, len(scales))
		}
		if !slices.IsSortedFunc(scales, compareScales) {
			t.Errorf("pool %s: scales not sorted by (orderCount, compId): %s", p.Name, formatScales(scales))
		}
		assigned := s.assignedOrders(t, p.Name)
		var loads []balancing.Load
		for _, sc := range scales {
			if sc.Outstanding < 0 || sc.BaseLoad < 0 {
				t.Errorf("pool %s: scale %s has outstanding %d, baseLoad %d", p.Name, sc.CompID, sc.Outstanding, sc.BaseLoad)
			}
			if got, want := sc.Outstanding, assigned[sc.CompID]; got != want {
				t.Errorf("pool %s: scale %s: got outstanding %d, want %d (its assigned orders)", p.Name, sc.CompID, got, want)
			}
			delete(assigned, sc.CompID)
			if sc.Eligible() {
				loads = append(loads, balancing.Load{ID: sc.CompID, Count: sc.OrderCount()})
			}
		}
		for compID, n := range assigned {
			t.Errorf("pool %s: %d assigned orders on scale %s, which does not exist", p.Name, n, compID)
		}
		tab, err := s.Table(context.Background(), p.Name)
		if err != nil {
			t.Errorf("pool %s: Table: %v", p.Name, err)
			continue
		}
		var want dispatch.Table
		want.CompIDs, want.DispatchCounts = balancing.Table(balancing.SortLoads(loads))
		if got, want := formatTable(tab), formatTable(want); got != want {
			t.Errorf("pool %s: got table %s, want %s", p.Name, got, want)
		}
	}
}

// assignedOrders counts the pool's orders in state assigned per compId,
// among the order ids ever dispatched to it.
func (s *tracked) assignedOrders(t testing.TB, pool string) map[string]int64 {
	t.Helper()
	s.mu.Lock()
	ids := make([]string, 0, len(s.orders[pool]))
	for id := range s.orders[pool] {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	counts := make(map[string]int64)
	for _, id := range ids {
		o, err := s.GetOrder(context.Background(), pool, id, t0)
		switch {
		case errors.Is(err, dispatch.ErrOrderNotFound):
		case err != nil:
			t.Errorf("pool %s: GetOrder %s: %v", pool, id, err)
		case o.State == dispatch.Assigned:
			counts[o.CompID]++
		}
	}
	return counts
}
