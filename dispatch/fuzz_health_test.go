package dispatch_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// FuzzServiceHealth runs a program of Scale health operations (DESIGN §8)
// through a Service over the memory store, on a clock the program moves,
// and checks what must hold whatever the program: pool options are
// accepted exactly when in range (else ErrOutOfRange or ErrInvalidOnLapse,
// nothing changed); heartbeats leave the Scale not lapsed; no dispatch
// hands an order to a Scale not up at that moment; a failure report moves
// an order off the Scale it names exactly when the order was on it (and
// ErrNoEligibleScale changes nothing); after a tick has drained the pool
// no lapsed Scale of a reassign pool holds orders while another Scale
// could take them; and after every operation each Scale's outstanding is
// the number of orders assigned to it, every order is on one Scale, and
// none is lost.
//
// One operation a line (at most 64):
//
//	T ms                                         the clock moves ms forward (0 … 600000)
//	P timeoutMs onLapse maxFails windowMs ejectMs  PutPool; "-" leaves a field out
//	S compId                                     PutScale
//	H compId [orderCount]                        Heartbeat
//	B n                                          Dispatch n new orders (at most 8)
//	F i compId                                   Fail: the i-th order dispatched, reported on compId
//	C i                                          Complete the i-th order dispatched
//	K                                            tick the pool until it has no work
func FuzzServiceHealth(f *testing.F) {
	f.Add("P 5000 reassign 2 10000 30000\nS A\nS B\nS C\nB 6\nT 3000\nH B\nH C\nT 2500\nB 3\nK\nF 0 B\nF 1 B\nB 2\nT 40000\nH A 3\nK")
	f.Add("P 1000 hold 1 1000 1000\nS A\nB 2\nF 0 A\nS B\nF 0 A\nF 1 A\nT 1000\nK\nB 1")
	f.Add("P 999 - - - -\nP 3600001 - - - -\nP - drop - - -\nP - - 10001 - -\nP - - - 0 -\nP - - - - 3600001\nP 0 Reassign - - -")
	f.Add("S A\nS B\nP 2000 reassign - - -\nB 5\nT 2000\nB 1\nK\nP 0 - - - -\nB 2\nK")
	f.Add("P 1000 reassign 1 1000 1000\nS A\nS B\nB 4\nF 0 A\nF 1 B\nT 600000\nK\nH A\nH B\nB 3")
	f.Fuzz(func(t *testing.T, program string) {
		ctx := context.Background()
		now := fuzzNow
		st := memory.New(memory.Options{})
		svc := dispatch.NewService(st, dispatch.Config{MaxBatch: fuzzMaxBatch, Now: func() time.Time { return now }, Rand: func() uint64 { return 7 }})
		if _, _, err := svc.PutPool(ctx, fuzzPool, dispatch.PoolSpec{}); err != nil {
			t.Fatal(err)
		}
		var orders []string
		lines := strings.Split(program, "\n")
		for _, line := range lines[:min(len(lines), fuzzMaxOps)] {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			arg := func(i int) string {
				if i < len(f) {
					return f[i]
				}
				return ""
			}
			num := func(i int) (int64, bool) {
				n, err := strconv.ParseInt(arg(i), 10, 64)
				return n, err == nil
			}
			switch f[0] {
			case "T":
				if ms, ok := num(1); ok && ms >= 0 && ms <= 600_000 {
					now = now.Add(time.Duration(ms) * time.Millisecond)
				}
			case "P":
				fuzzPutPool(t, svc, f[1:], line)
			case "S":
				if _, _, err := svc.PutScale(ctx, fuzzPool, arg(1), dispatch.ScaleSpec{}); err != nil && !errors.Is(err, dispatch.ErrInvalidID) {
					t.Fatalf("%s: %v", line, err)
				}
			case "H":
				var oc *int64
				if n, ok := num(2); ok {
					oc = &n
				}
				sc, err := svc.Heartbeat(ctx, fuzzPool, arg(1), oc)
				if err == nil && sc.Health == dispatch.Lapsed {
					t.Fatalf("%s: the Scale is lapsed after its heartbeat", line)
				}
				if err != nil && !errors.Is(err, dispatch.ErrScaleNotFound) && !errors.Is(err, dispatch.ErrInvalidID) && !errors.Is(err, dispatch.ErrOutOfRange) {
					t.Fatalf("%s: %v", line, err)
				}
			case "B":
				n, ok := num(1)
				if !ok || n < 1 || n > 8 {
					continue
				}
				in := dispatch.DispatchInput{Pool: fuzzPool}
				for range n {
					id := "o" + strconv.Itoa(len(orders)+len(in.Orders))
					in.Orders = append(in.Orders, dispatch.OrderInput{ID: id})
				}
				p, _ := svc.GetPool(ctx, fuzzPool)
				b, _, err := svc.Dispatch(ctx, in)
				if err != nil {
					if !errors.Is(err, dispatch.ErrNoEligibleScale) {
						t.Fatalf("%s: %v", line, err)
					}
					continue
				}
				for _, a := range b.Assignments {
					orders = append(orders, a.OrderID)
					sc, _ := st.GetScale(ctx, fuzzPool, a.CompID)
					if h := p.Health.HealthAt(sc, now); h != dispatch.Up {
						t.Fatalf("%s: order %s went to %s, %s at that moment", line, a.OrderID, a.CompID, h)
					}
				}
			case "F", "C":
				i, ok := num(1)
				if !ok || i < 0 || i >= int64(len(orders)) {
					continue
				}
				id := orders[i]
				o, err := svc.GetOrder(ctx, fuzzPool, id)
				if err != nil {
					t.Fatal(err)
				}
				if f[0] == "C" {
					if _, err := svc.CompleteOrder(ctx, fuzzPool, id, 0); err != nil {
						t.Fatalf("%s: %v", line, err)
					}
					continue
				}
				r, err := svc.Fail(ctx, dispatch.FailInput{Pool: fuzzPool, OrderID: id, CompID: arg(2)})
				fuzzCheckFail(t, svc, line, o, arg(2), r, err)
			case "K":
				// TickPool calls Store.Tick while it reports More.
				if _, err := svc.TickPool(ctx, fuzzPool, time.Minute); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				fuzzCheckDrained(t, st, line, now)
			}
			fuzzCheckHolds(t, st, line, orders)
		}
	})
}

// fuzzPutPool sends the options of a P line: accepted exactly when each is
// in its range.
func fuzzPutPool(t *testing.T, svc *dispatch.Service, f []string, line string) {
	var spec dispatch.PoolSpec
	valid := true
	ms := func(i int, lo, hi int64, zero bool) *time.Duration {
		if i >= len(f) || f[i] == "-" {
			return nil
		}
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			valid = false
			d := time.Duration(-1)
			return &d
		}
		if (n < lo || n > hi) && !(zero && n == 0) {
			valid = false
		}
		d := time.Duration(n) * time.Millisecond
		return &d
	}
	spec.HeartbeatTimeout = ms(0, 1000, 3_600_000, true)
	if len(f) > 1 && f[1] != "-" {
		ol := dispatch.OnLapse(f[1])
		spec.OnLapse = &ol
		valid = valid && (ol == "hold" || ol == "reassign")
	}
	if len(f) > 2 && f[2] != "-" {
		// A word that is no number leaves maxFails out, as "-" does.
		if n, err := strconv.ParseInt(f[2], 10, 64); err == nil {
			spec.MaxFails = &n
			valid = valid && n >= 0 && n <= 10_000
		}
	}
	spec.FailWindow = ms(3, 1000, 3_600_000, false)
	spec.EjectTime = ms(4, 1000, 3_600_000, false)
	before, _ := svc.GetPool(context.Background(), fuzzPool)
	_, _, err := svc.PutPool(context.Background(), fuzzPool, spec)
	switch {
	case valid && err != nil:
		t.Fatalf("%s: refused: %v", line, err)
	case !valid && err == nil:
		t.Fatalf("%s: accepted", line)
	case !valid && !errors.Is(err, dispatch.ErrOutOfRange) && !errors.Is(err, dispatch.ErrInvalidOnLapse):
		t.Fatalf("%s: got %v, want out of range or invalid onLapse", line, err)
	case !valid:
		if after, _ := svc.GetPool(context.Background(), fuzzPool); after != before {
			t.Fatalf("%s: refused, but the pool changed from %+v to %+v", line, before, after)
		}
	}
}

// fuzzCheckFail checks a failure report of o on compID.
func fuzzCheckFail(t *testing.T, svc *dispatch.Service, line string, o dispatch.Order, compID string, r dispatch.FailResult, err error) {
	after, gerr := svc.GetOrder(context.Background(), fuzzPool, o.ID)
	if gerr != nil {
		t.Fatal(gerr)
	}
	onIt := o.State == dispatch.Assigned && o.CompID == compID
	switch {
	case errors.Is(err, dispatch.ErrInvalidID):
		if after != o {
			t.Fatalf("%s: refused, but the order changed to %+v", line, after)
		}
	case errors.Is(err, dispatch.ErrNoEligibleScale):
		if !onIt || after != o {
			t.Fatalf("%s: no eligible Scale for %+v, now %+v", line, o, after)
		}
	case err != nil:
		t.Fatalf("%s: %v", line, err)
	case onIt:
		if !r.Moved || after.CompID == compID || after.Moves != o.Moves+1 || after.State != dispatch.Assigned || r.Order != after {
			t.Fatalf("%s: %+v after the report, want moved off %s once", line, after, compID)
		}
	default:
		if r.Moved || r.Counted || after != o || r.Order != o {
			t.Fatalf("%s: %+v changed to %+v, or counted", line, o, after)
		}
	}
}

// fuzzCheckDrained checks a pool that ticked until it had no work: with
// onLapse reassign, a lapsed Scale holds orders only if no Scale can take
// one.
func fuzzCheckDrained(t *testing.T, st dispatch.Store, line string, now time.Time) {
	ctx := context.Background()
	p, _ := st.GetPool(ctx, fuzzPool)
	scales, _, _ := st.ListScales(ctx, fuzzPool, dispatch.Page{Limit: dispatch.MaxLimit})
	eligible := false
	for _, sc := range scales {
		eligible = eligible || sc.Eligible()
	}
	for _, sc := range scales {
		if p.Health.OnLapse == dispatch.ReassignLapsed && sc.Health == dispatch.Lapsed && sc.Outstanding > 0 && eligible {
			t.Fatalf("%s: lapsed %s still holds %d orders after the ticks", line, sc.CompID, sc.Outstanding)
		}
		if p.Health.SettleDue(sc, now) {
			t.Fatalf("%s: %s is recorded %s, due to change after the ticks", line, sc.CompID, sc.Health)
		}
	}
}

// fuzzCheckHolds checks that every order dispatched is on one Scale, and
// each Scale's outstanding counts its assigned orders.
func fuzzCheckHolds(t *testing.T, st dispatch.Store, line string, orders []string) {
	ctx := context.Background()
	count := map[string]int64{}
	for _, id := range orders {
		o, err := st.GetOrder(ctx, fuzzPool, id, fuzzNow)
		if err != nil {
			t.Fatalf("%s: order %s lost: %v", line, id, err)
		}
		if o.State == dispatch.Assigned {
			count[o.CompID]++
		}
	}
	scales, _, _ := st.ListScales(ctx, fuzzPool, dispatch.Page{Limit: dispatch.MaxLimit})
	for _, sc := range scales {
		if sc.Outstanding != count[sc.CompID] {
			t.Fatalf("%s: %s has outstanding %d, %d orders assigned to it", line, sc.CompID, sc.Outstanding, count[sc.CompID])
		}
		delete(count, sc.CompID)
	}
	for id, n := range count {
		t.Fatalf("%s: %d orders on %s, which does not exist", line, n, id)
	}
}
