package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// gated is store/memory as a MultiDispatcher that records how many batches
// every call carried and holds each call until the test lets it go.
type gated struct {
	*memory.Store
	gate  chan struct{} // a call waits for a value (or for the close)
	mu    sync.Mutex
	calls []int
}

func newGated() *gated {
	g := &gated{Store: memory.New(memory.Options{}), gate: make(chan struct{})}
	ctx := context.Background()
	if _, _, err := g.PutPool(ctx, "p", dispatch.PoolSpec{}, time.Unix(0, 0)); err != nil {
		panic(err)
	}
	for _, id := range []string{"A", "B", "C"} {
		if _, _, err := g.PutScale(ctx, "p", id, dispatch.ScaleSpec{}, time.Unix(0, 0)); err != nil {
			panic(err)
		}
	}
	return g
}

func (g *gated) record(batches int) {
	g.mu.Lock()
	g.calls = append(g.calls, batches)
	g.mu.Unlock()
	<-g.gate
}

func (g *gated) Dispatch(ctx context.Context, req dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	g.record(1)
	return g.Store.Dispatch(ctx, req)
}

func (g *gated) DispatchMany(ctx context.Context, reqs []dispatch.DispatchRequest) []dispatch.DispatchResult {
	g.record(len(reqs))
	out := make([]dispatch.DispatchResult, len(reqs))
	for i, r := range reqs {
		out[i].Batch, out[i].Replayed, out[i].Err = g.Store.Dispatch(ctx, r)
	}
	return out
}

// sizes returns the number of batches of each call.
func (g *gated) sizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.calls)
}

// serviceOver returns a Service over g with the given MaxBatch (0: the
// default), one call in flight per pool, and ids id1, id2, ….
func serviceOver(g *gated, maxBatch int) *dispatch.Service {
	var mu sync.Mutex
	n := 0
	return dispatch.NewService(g, dispatch.Config{MaxBatch: maxBatch, CoalesceCalls: 1, NewID: func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("id%d", n)
	}})
}

// orders returns n orders named prefix-1 … prefix-n.
func orders(prefix string, n int) []dispatch.OrderInput {
	out := make([]dispatch.OrderInput, n)
	for i := range out {
		out[i].ID = fmt.Sprintf("%s-%d", prefix, i+1)
	}
	return out
}

// TestCoalescing holds the first call of a pool in the store and sends
// more batches meanwhile: they wait, and go in calls as large as the
// bounds allow, each with its own result.
func TestCoalescing(t *testing.T) {
	for _, tc := range []struct {
		name            string
		maxBatch, size  int
		requests        int
		wantAfterFirst  []int
		wantOrdersTotal int
	}{
		{"all in one call", 10000, 1, 10, []int{10}, 11},
		{"orders bounded by MaxBatch", 5, 2, 10, []int{2, 2, 2, 2, 2}, 21},
		{"batches bounded", 10000, 1, 300, []int{256, 44}, 301},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGated()
				svc := serviceOver(g, tc.maxBatch)
				ctx := context.Background()
				var wg sync.WaitGroup
				results := make([]dispatch.Batch, tc.requests+1)
				send := func(i int, prefix string, n int) {
					b, replayed, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: orders(prefix, n)})
					if err != nil || replayed {
						t.Errorf("Dispatch %s: replayed %v, %v", prefix, replayed, err)
					}
					results[i] = b
				}
				wg.Go(func() { send(0, "first", 1) })
				synctest.Wait() // the first call is in the store
				for i := 1; i <= tc.requests; i++ {
					wg.Go(func() { send(i, fmt.Sprintf("r%d", i), tc.size) })
				}
				synctest.Wait() // every other batch waits
				if got := g.sizes(); !slices.Equal(got, []int{1}) {
					t.Fatalf("calls while the first is held: got %v, want [1]", got)
				}
				close(g.gate)
				wg.Wait()
				if got := g.sizes(); !slices.Equal(got[1:], tc.wantAfterFirst) {
					t.Errorf("calls: got %v, want [1] then %v", got, tc.wantAfterFirst)
				}
				total := 0
				for i, b := range results {
					total += len(b.Assignments)
					if i > 0 && (len(b.Assignments) != tc.size || !strings.HasPrefix(b.Assignments[0].OrderID, fmt.Sprintf("r%d-", i))) {
						t.Errorf("request %d: got batch %+v, want its own %d orders", i, b, tc.size)
					}
				}
				if total != tc.wantOrdersTotal {
					t.Errorf("orders assigned: got %d, want %d", total, tc.wantOrdersTotal)
				}
			})
		})
	}
}

// TestCoalescedCallerLeaves checks the two ways a caller may stop waiting:
// before its batch was sent (dropped, never applied: plainly unavailable)
// and after (outcome unknown, its batch id named, and applied).
func TestCoalescedCallerLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated()
		svc := serviceOver(g, 0)
		var wg sync.WaitGroup
		var firstErr, queuedErr error
		first, cancelFirst := context.WithCancel(context.Background())
		queued, cancelQueued := context.WithCancel(context.Background())
		wg.Go(func() {
			_, _, firstErr = svc.Dispatch(first, dispatch.DispatchInput{Pool: "p", Orders: orders("sent", 1)})
		})
		synctest.Wait()
		wg.Go(func() {
			_, _, queuedErr = svc.Dispatch(queued, dispatch.DispatchInput{Pool: "p", Orders: orders("queued", 1)})
		})
		synctest.Wait()
		cancelQueued()
		cancelFirst()
		synctest.Wait()
		close(g.gate)
		wg.Wait()
		synctest.Wait() // the held call finishes

		if _, ok := errors.AsType[*dispatch.IndeterminateError](queuedErr); ok || !errors.Is(queuedErr, dispatch.ErrUnavailable) || !errors.Is(queuedErr, context.Canceled) {
			t.Errorf("caller gone before sending: got %v, want ErrUnavailable (not indeterminate) and context.Canceled", queuedErr)
		}
		ie, ok := errors.AsType[*dispatch.IndeterminateError](firstErr)
		if !ok || ie.BatchID == "" {
			t.Fatalf("caller gone after sending: got %v, want an IndeterminateError naming the batch", firstErr)
		}
		if _, err := g.GetBatch(context.Background(), "p", ie.BatchID, time.Now()); err != nil {
			t.Errorf("the sent batch %s: %v, want it applied", ie.BatchID, err)
		}
		if _, err := g.GetOrder(context.Background(), "p", "queued-1", time.Now()); !errors.Is(err, dispatch.ErrOrderNotFound) {
			t.Errorf("the dropped batch's order: got %v, want ErrOrderNotFound", err)
		}
		if got := g.sizes(); !slices.Equal(got, []int{1}) {
			t.Errorf("calls: got %v, want [1] (the dropped batch never sent)", got)
		}
	})
}

// TestCoalesceCalls checks that up to Config.CoalesceCalls calls of a pool
// run at once, each request alone while there is room, and that the
// requests after them wait and share one call.
func TestCoalesceCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated()
		svc := dispatch.NewService(g, dispatch.Config{CoalesceCalls: 3})
		var wg sync.WaitGroup
		send := func(i int) {
			if _, _, err := svc.Dispatch(context.Background(), dispatch.DispatchInput{Pool: "p", Orders: orders(fmt.Sprint(i), 1)}); err != nil {
				t.Errorf("Dispatch %d: %v", i, err)
			}
		}
		for i := range 3 {
			wg.Go(func() { send(i) })
			synctest.Wait()
		}
		if got := g.sizes(); !slices.Equal(got, []int{1, 1, 1}) {
			t.Fatalf("calls in flight: got %v, want three of one batch", got)
		}
		for i := 3; i < 10; i++ {
			wg.Go(func() { send(i) })
		}
		synctest.Wait()
		close(g.gate)
		wg.Wait()
		if got := g.sizes(); !slices.Equal(got, []int{1, 1, 1, 7}) {
			t.Errorf("calls: got %v, want three alone, then the 7 that waited in one", got)
		}
	})
}

// TestNoCoalesce checks that Config.NoCoalesce sends every batch alone.
func TestNoCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated()
		close(g.gate)
		svc := dispatch.NewService(g, dispatch.Config{NoCoalesce: true})
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				if _, _, err := svc.Dispatch(context.Background(), dispatch.DispatchInput{Pool: "p", Orders: orders(fmt.Sprint(i), 2)}); err != nil {
					t.Errorf("Dispatch: %v", err)
				}
			})
		}
		wg.Wait()
		if got := g.sizes(); len(got) != 20 || slices.Max(got) != 1 {
			t.Errorf("calls: got %v, want 20 calls of 1 batch", got)
		}
	})
}

// endedCtx is a context whose Err reports Canceled once ended is set but
// whose Done never closes: its request sleeps on until woken for another
// reason, which is how a request finds itself handed a call after its
// caller has left.
type endedCtx struct {
	context.Context
	ended *atomic.Bool
}

func (c endedCtx) Err() error {
	if c.ended.Load() {
		return context.Canceled
	}
	return nil
}

// TestCoalescedHeadLeftOut checks that a request handed the next call
// after its caller left is left out of that call, and fails as not sent,
// while the others of the call are sent.
func TestCoalescedHeadLeftOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated()
		svc := serviceOver(g, 0)
		var wg sync.WaitGroup
		var leftErr, otherErr error
		var ended atomic.Bool
		left := endedCtx{context.Background(), &ended}
		wg.Go(func() {
			if _, _, err := svc.Dispatch(context.Background(), dispatch.DispatchInput{Pool: "p", Orders: orders("first", 1)}); err != nil {
				t.Errorf("first: %v", err)
			}
		})
		synctest.Wait() // the first call is in the store
		wg.Go(func() {
			_, _, leftErr = svc.Dispatch(left, dispatch.DispatchInput{Pool: "p", Orders: orders("left", 1)})
		})
		synctest.Wait()
		wg.Go(func() {
			_, _, otherErr = svc.Dispatch(context.Background(), dispatch.DispatchInput{Pool: "p", Orders: orders("other", 1)})
		})
		synctest.Wait()
		ended.Store(true)
		close(g.gate)
		wg.Wait()

		if _, ok := errors.AsType[*dispatch.IndeterminateError](leftErr); ok || !errors.Is(leftErr, dispatch.ErrUnavailable) || !errors.Is(leftErr, context.Canceled) {
			t.Errorf("caller gone before its call: got %v, want ErrUnavailable (not indeterminate) and context.Canceled", leftErr)
		}
		if otherErr != nil {
			t.Errorf("the other request of the call: %v", otherErr)
		}
		if _, err := g.GetOrder(context.Background(), "p", "left-1", time.Now()); !errors.Is(err, dispatch.ErrOrderNotFound) {
			t.Errorf("the left-out batch's order: got %v, want ErrOrderNotFound", err)
		}
		if _, err := g.GetOrder(context.Background(), "p", "other-1", time.Now()); err != nil {
			t.Errorf("the other batch's order: %v, want it applied", err)
		}
		if got := g.sizes(); !slices.Equal(got, []int{1, 1}) {
			t.Errorf("calls: got %v, want [1 1] (the first, then the other alone)", got)
		}
	})
}
