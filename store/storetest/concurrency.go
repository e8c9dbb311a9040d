package storetest

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// testConcurrentDispatch runs 8 goroutines × 50 batches into one pool of
// Scales that start level: no order may be assigned twice or lost, each
// Scale's outstanding must equal the orders it got, and the Scales must end
// at most 1 apart.
func testConcurrentDispatch(t *testing.T, s dispatch.Store) {
	const workers, batches = 8, 50
	newPool(t, s, "p1", "A=0 B=0 C=0 D=0 E=0 F=0 G=0 H=0 I=0 J=0")
	got := &assignments{orders: map[string]string{}}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for b := range batches {
				batchID := fmt.Sprintf("w%d-b%d", w, b)
				batch, _, err := s.Dispatch(ctx, request("p1", batchID, t0, ids(batchID+"-o", 1+rng.IntN(7))...))
				if err != nil {
					t.Errorf("Dispatch %s: %v", batchID, err)
					return
				}
				got.add(t, batch)
			}
		})
	}
	wg.Wait()
	perScale := make(map[string]int64)
	for id, compID := range got.orders {
		if o := getOrder(t, s, "p1", id); o.CompID != compID || o.State != dispatch.Assigned {
			t.Errorf("order %s: got %s, want assigned to %s", id, formatOrder(o), compID)
		}
		perScale[compID]++
	}
	scales := allScales(t, s, "p1")
	for _, sc := range scales {
		if sc.Outstanding != perScale[sc.CompID] {
			t.Errorf("scale %s: got outstanding %d, want %d", sc.CompID, sc.Outstanding, perScale[sc.CompID])
		}
	}
	if spread := scales[len(scales)-1].OrderCount() - scales[0].OrderCount(); spread > 1 {
		t.Errorf("spread: got %d (%s), want at most 1", spread, formatScales(scales))
	}
}

// testConcurrentMixed runs every kind of call at once over two pools, for
// the race detector and for the invariants checked after the test.
func testConcurrentMixed(t *testing.T, s dispatch.Store) {
	pools := []string{"p1", "p2"}
	for _, p := range pools {
		newPool(t, s, p, "A=0 B=3 C=5 D=1")
		putScale(t, s, p, "D", dispatch.ScaleSpec{MaxOrders: ptr(int64(1000))}, t0)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			pool := pools[w%2]
			var mine []string
			for i := range 60 {
				now := at(time.Duration(i) * time.Second)
				switch r := rng.IntN(10); {
				case r < 5:
					batchID := fmt.Sprintf("w%d-b%d", w, i)
					b, _, err := s.Dispatch(ctx, request(pool, batchID, now, ids(batchID+"-o", 1+rng.IntN(5))...))
					if err != nil {
						t.Errorf("Dispatch: %v", err)
						return
					}
					for _, a := range b.Assignments {
						mine = append(mine, a.OrderID)
					}
				case r < 7 && len(mine) > 0:
					if _, _, err := s.Complete(ctx, pool, []dispatch.Completion{{OrderID: mine[0], DurationMs: 5}}, now); err != nil {
						t.Errorf("Complete: %v", err)
					}
					mine = mine[1:]
				case r < 8 && len(mine) > 0:
					if _, err := s.Cancel(ctx, pool, mine[0], now); err != nil {
						t.Errorf("Cancel: %v", err)
					}
					mine = mine[1:]
				case r < 9:
					spec := dispatch.ScaleSpec{OrderCount: ptr(int64(rng.IntN(20)))}
					if _, _, err := s.PutScale(ctx, pool, "B", spec, now); err != nil {
						t.Errorf("PutScale: %v", err)
					}
				default:
					if _, _, err := s.ListScales(ctx, pool, dispatch.Page{Limit: 2}); err != nil {
						t.Errorf("ListScales: %v", err)
					}
					if _, err := s.Table(ctx, pool); err != nil {
						t.Errorf("Table: %v", err)
					}
					if _, _, err := s.ListPools(ctx, dispatch.Page{Limit: 1}); err != nil {
						t.Errorf("ListPools: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// assignments collects where concurrent dispatches put each order, and
// fails the test for an order assigned twice.
type assignments struct {
	mu     sync.Mutex
	orders map[string]string // order id → compId
}

func (as *assignments) add(t testing.TB, b dispatch.Batch) {
	t.Helper()
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, a := range b.Assignments {
		if prev, dup := as.orders[a.OrderID]; dup {
			t.Errorf("order %s: assigned to %s and %s", a.OrderID, prev, a.CompID)
		}
		as.orders[a.OrderID] = a.CompID
	}
}
