package dispatch_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// recorder is a HealthObserver that keeps what it is told.
type recorder struct {
	mu      sync.Mutex
	changes []string
	moved   map[dispatch.MoveReason]int
}

func (r *recorder) HealthChanged(c dispatch.HealthChange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, c.Pool+"/"+c.CompID+":"+string(c.From)+">"+string(c.To))
}

func (r *recorder) OrdersMoved(_ string, reason dispatch.MoveReason, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.moved == nil {
		r.moved = map[dispatch.MoveReason]int{}
	}
	r.moved[reason] += n
}

func (r *recorder) ChangesDropped(string, int) {}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.changes, " ")
}

// TestTickRound ticks the pools with health options, carries the pools
// that still have Scales not up after their options went off, and tells
// the observer each change once.
func TestTickRound(t *testing.T) {
	ctx := context.Background()
	now := fuzzNow
	rec := &recorder{}
	st := memory.New(memory.Options{})
	svc := dispatch.NewService(st, dispatch.Config{Now: func() time.Time { return now }, Health: rec})
	timeout, maxFails, reassign := 2*time.Second, int64(1), dispatch.ReassignLapsed
	mustPut := func(name string, spec dispatch.PoolSpec, scales ...string) {
		t.Helper()
		if _, _, err := svc.PutPool(ctx, name, spec); err != nil {
			t.Fatal(err)
		}
		for _, id := range scales {
			if _, _, err := svc.PutScale(ctx, name, id, dispatch.ScaleSpec{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustPut("beats", dispatch.PoolSpec{HeartbeatTimeout: &timeout, OnLapse: &reassign}, "A", "B")
	mustPut("fails", dispatch.PoolSpec{MaxFails: &maxFails}, "X", "Y")
	mustPut("plain", dispatch.PoolSpec{}, "P")
	if _, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "beats", Orders: []dispatch.OrderInput{{ID: "a1"}, {ID: "a2"}}}); err != nil {
		t.Fatal(err)
	}
	b, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "fails", Orders: []dispatch.OrderInput{{ID: "x1"}}})
	if err != nil {
		t.Fatal(err)
	}

	now = now.Add(time.Second)
	if _, err := svc.Heartbeat(ctx, "beats", "B", nil); err != nil {
		t.Fatal(err)
	}
	failed := b.Assignments[0].CompID
	if _, err := svc.Fail(ctx, dispatch.FailInput{Pool: "fails", OrderID: "x1", CompID: failed, Reason: "refused"}); err != nil {
		t.Fatal(err)
	}
	// Ejection off again: the pool has an ejected Scale, so it stays in
	// the rounds until the ejection ends.
	zero := int64(0)
	if _, _, err := svc.PutPool(ctx, "fails", dispatch.PoolSpec{MaxFails: &zero}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	ticking, err := svc.TickRound(ctx, map[string]bool{"fails": true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rec.String(), "beats/A:up>lapsed fails/"+failed+":up>ejected"; !sameWords(got, want) {
		t.Errorf("round 1: got changes %q, want %q", got, want)
	}
	if !ticking["beats"] || !ticking["fails"] || ticking["plain"] || len(ticking) != 2 {
		t.Errorf("round 1: got pools to carry %v, want beats and fails", ticking)
	}
	if rec.moved[dispatch.MovedLapse] != 1 || rec.moved[dispatch.MovedFail] != 1 {
		t.Errorf("got moves %v, want 1 lapse and 1 fail", rec.moved)
	}

	now = now.Add(dispatch.DefaultEjectTime)
	ticking, err = svc.TickRound(ctx, ticking)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rec.String(), "beats/A:up>lapsed fails/"+failed+":up>ejected beats/B:up>lapsed fails/"+failed+":ejected>up"; !sameWords(got, want) {
		t.Errorf("round 2: got changes %q, want %q", got, want)
	}
	if _, err := svc.TickRound(ctx, ticking); err != nil {
		t.Fatal(err)
	}
	ticking, _ = svc.TickRound(ctx, ticking)
	if ticking["fails"] {
		t.Errorf("round 4: the pool without options or unhealthy Scales is still carried")
	}
	if err := svc.DeletePool(ctx, "beats"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TickRound(ctx, map[string]bool{"beats": true}); err != nil {
		t.Errorf("a deleted pool in the round: %v", err)
	}
}

func sameWords(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	if len(x) != len(y) {
		return false
	}
	seen := map[string]int{}
	for _, w := range x {
		seen[w]++
	}
	for _, w := range y {
		if seen[w]--; seen[w] < 0 {
			return false
		}
	}
	return true
}

// TestRunHealthStops ends the loop with its context.
func TestRunHealthStops(t *testing.T) {
	svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.RunHealth(ctx, time.Millisecond, func(err error) { t.Errorf("round: %v", err) })
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunHealth did not return after its context ended")
	}
}

// TestHealthValidation refuses the health inputs the Service checks
// before the store sees them.
func TestHealthValidation(t *testing.T) {
	ctx := context.Background()
	svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{})
	neg, big := int64(-1), int64(dispatch.MaxOrderCount+1)
	ms := func(d time.Duration) *time.Duration { return &d }
	bad := dispatch.OnLapse("later")
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"heartbeat bad pool", second(svc.Heartbeat(ctx, "p!", "A", nil)), dispatch.ErrInvalidID},
		{"heartbeat bad compId", second(svc.Heartbeat(ctx, "p", "", nil)), dispatch.ErrInvalidID},
		{"heartbeat orderCount -1", second(svc.Heartbeat(ctx, "p", "A", &neg)), dispatch.ErrOutOfRange},
		{"heartbeat orderCount 2^31", second(svc.Heartbeat(ctx, "p", "A", &big)), dispatch.ErrOutOfRange},
		{"fail without compId", second(svc.Fail(ctx, dispatch.FailInput{Pool: "p", OrderID: "o"})), dispatch.ErrInvalidID},
		{"fail reason too long", second(svc.Fail(ctx, dispatch.FailInput{Pool: "p", OrderID: "o", CompID: "A", Reason: strings.Repeat("r", 257)})), dispatch.ErrInvalidReason},
		{"fail reason not UTF-8", second(svc.Fail(ctx, dispatch.FailInput{Pool: "p", OrderID: "o", CompID: "A", Reason: "\xff"})), dispatch.ErrInvalidReason},
		{"timeout 999ms", third(svc.PutPool(ctx, "p", dispatch.PoolSpec{HeartbeatTimeout: ms(999 * time.Millisecond)})), dispatch.ErrOutOfRange},
		{"timeout not whole ms", third(svc.PutPool(ctx, "p", dispatch.PoolSpec{HeartbeatTimeout: ms(1500*time.Millisecond + 1)})), dispatch.ErrOutOfRange},
		{"eject over an hour", third(svc.PutPool(ctx, "p", dispatch.PoolSpec{EjectTime: ms(time.Hour + time.Millisecond)})), dispatch.ErrOutOfRange},
		{"window 0", third(svc.PutPool(ctx, "p", dispatch.PoolSpec{FailWindow: ms(0)})), dispatch.ErrOutOfRange},
		{"maxFails -1", third(svc.PutPool(ctx, "p", dispatch.PoolSpec{MaxFails: &neg})), dispatch.ErrOutOfRange},
		{"onLapse later", third(svc.PutPool(ctx, "p", dispatch.PoolSpec{OnLapse: &bad})), dispatch.ErrInvalidOnLapse},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.err, c.want)
		}
	}
	if _, err := svc.GetPool(ctx, "p"); !errors.Is(err, dispatch.ErrPoolNotFound) {
		t.Errorf("a refused PutPool created the pool: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

func third[T, U any](_ T, _ U, err error) error { return err }
