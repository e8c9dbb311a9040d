package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// tracked is store/memory as a MultiDispatcher that notes the orders of
// every call, holds each call until the test lets one go (gate), and says
// which calls are in flight.
type tracked struct {
	*memory.Store
	gate chan struct{}

	mu     sync.Mutex
	calls  [][]string // the first order id of each batch of each call
	ended  []bool     // whether calls[i] has returned
	inCall map[string]int
}

func newTracked() *tracked {
	g := newGated() // (its pool p and Scales A, B, C)
	return &tracked{Store: g.Store, gate: make(chan struct{}), inCall: map[string]int{}}
}

func (s *tracked) begin(reqs []dispatch.DispatchRequest) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, len(reqs))
	for i, r := range reqs {
		ids[i] = r.Orders[0].ID
		if _, ok := s.inCall[ids[i]]; ok {
			panic("batch " + ids[i] + " sent twice")
		}
		s.inCall[ids[i]] = len(s.calls)
	}
	s.calls = append(s.calls, ids)
	s.ended = append(s.ended, false)
	return len(s.calls) - 1
}

func (s *tracked) end(k int) {
	s.mu.Lock()
	s.ended[k] = true
	s.mu.Unlock()
}

func (s *tracked) Dispatch(ctx context.Context, req dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	k := s.begin([]dispatch.DispatchRequest{req})
	defer s.end(k)
	<-s.gate
	return s.Store.Dispatch(ctx, req)
}

func (s *tracked) DispatchMany(ctx context.Context, reqs []dispatch.DispatchRequest) []dispatch.DispatchResult {
	k := s.begin(reqs)
	defer s.end(k)
	<-s.gate
	out := make([]dispatch.DispatchResult, len(reqs))
	for i, r := range reqs {
		out[i].Batch, out[i].Replayed, out[i].Err = s.Store.Dispatch(ctx, r)
	}
	return out
}

// where says whether order id went in a call, which, at what place, and
// whether that call is still in flight.
func (s *tracked) where(id string) (call, at int, inFlight, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.inCall[id]
	if !ok {
		return 0, 0, false, false
	}
	return k, slices.Index(s.calls[k], id), !s.ended[k], true
}

// TestCoalescedDeadlineChurn sends single-order requests to one pool whose
// calls the store holds, with deadlines (CancelWaiters, as api's request
// context, and plain contexts) and parents that are cancelled, in a random
// order, and lets the held calls go one at a time while the clock moves.
// After every step, a request whose deadline has passed or whose parent is
// cancelled must have returned unless it is making a call itself (the
// first of a call in flight): unsent ones at once, as ErrUnavailable,
// and ones sent in another's call at once, as indeterminate. At the end
// every answer agrees with the store: a success is held, a request never
// sent is not. A queue that loses track of a sleeper (its slot in the
// queue's sleepers) leaves it waiting past its deadline.
func TestCoalescedDeadlineChurn(t *testing.T) {
	for seed := range uint64(24) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { deadlineChurn(t, seed) })
		})
	}
}

func deadlineChurn(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 26))
	st := newTracked()
	calls := 1 + int(seed%2)
	var mu sync.Mutex
	n := 0
	svc := dispatch.NewService(st, dispatch.Config{CoalesceCalls: calls, NewID: func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("id%d", n)
	}})

	type request struct {
		name     string
		deadline time.Time // zero: none
		cancel   context.CancelFunc
		gone     bool // its parent is cancelled

		returned bool
		err      error
	}
	var reqs []*request
	var wg sync.WaitGroup
	var rmu sync.Mutex
	send := func(r *request, ctx context.Context) {
		wg.Go(func() {
			_, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: r.name}}})
			rmu.Lock()
			r.returned, r.err = true, err
			rmu.Unlock()
		})
	}
	// check reports the first request that is still waiting though it
	// should not be.
	check := func(step int) string {
		rmu.Lock()
		defer rmu.Unlock()
		now := time.Now()
		for _, r := range reqs {
			if r.returned || !(r.gone || !r.deadline.IsZero() && !now.Before(r.deadline)) {
				continue
			}
			_, at, inFlight, sent := st.where(r.name)
			switch {
			case !sent:
				return fmt.Sprintf("step %d: %s, not sent, past its deadline or gone (%v), still waiting", step, r.name, r.gone)
			case !inFlight:
				return fmt.Sprintf("step %d: %s, its call ended, still waiting", step, r.name)
			case at > 0:
				return fmt.Sprintf("step %d: %s, sent at place %d of a call in flight, past its deadline or gone (%v), still waiting", step, r.name, at, r.gone)
			}
		}
		return ""
	}

	for step := range 120 {
		switch k := rng.IntN(10); {
		case k < 5: // a new request
			r := &request{name: fmt.Sprintf("r%d", len(reqs))}
			parent, cancel := context.WithCancel(context.Background())
			r.cancel = cancel
			var ctx context.Context = parent
			switch rng.IntN(4) {
			case 0: // a plain context with a deadline
				d := time.Duration(1+rng.IntN(8000)) * time.Millisecond
				r.deadline = time.Now().Add(d)
				c, cc := context.WithDeadline(parent, r.deadline)
				t.Cleanup(cc)
				ctx = c
			case 1: // a plain context without one
			default: // a CancelWaiter, as api's
				w := newWaiterCtx(t, parent, time.Duration(1+rng.IntN(8000))*time.Millisecond, new(atomic.Int32))
				r.deadline = w.deadline
				ctx = w
			}
			rmu.Lock()
			reqs = append(reqs, r)
			rmu.Unlock()
			send(r, ctx)
		case k < 6 && len(reqs) > 0: // a client goes
			r := reqs[rng.IntN(len(reqs))]
			rmu.Lock()
			r.gone = true
			rmu.Unlock()
			r.cancel()
		case k < 8: // time passes
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		default: // a held call ends
			select {
			case st.gate <- struct{}{}:
			default:
			}
		}
		synctest.Wait()
		if msg := check(step); msg != "" {
			t.Error(msg)
			break
		}
	}
	close(st.gate)
	if t.Failed() { // (let every request go, so that none stays blocked)
		for _, r := range reqs {
			r.cancel()
		}
	}
	wg.Wait()
	synctest.Wait()
	if t.Failed() {
		return
	}

	ctx := context.Background()
	for _, r := range reqs {
		_, _, _, sent := st.where(r.name)
		_, held := st.GetOrder(ctx, "p", r.name, time.Now())
		_, indeterminate := errors.AsType[*dispatch.IndeterminateError](r.err)
		switch {
		case r.err == nil && held != nil:
			t.Errorf("%s answered, its order: %v", r.name, held)
		case r.err != nil && !indeterminate && errors.Is(r.err, dispatch.ErrUnavailable) && (sent || held == nil):
			t.Errorf("%s answered as never sent (%v), but sent %v, its order held: %v", r.name, r.err, sent, held == nil)
		case r.err != nil && !indeterminate && !errors.Is(r.err, dispatch.ErrUnavailable):
			t.Errorf("%s: %v, want an answer, ErrUnavailable or indeterminate", r.name, r.err)
		}
	}
}
