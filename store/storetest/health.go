package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Scale health (DESIGN §8): leases and heartbeats. The rules are those of
// dispatch/health.go; these tests pin them with explicit times.

// healthPool creates a pool at t0 with the health options of spec and the
// Scales of loads, each registered at t0.
func healthPool(t testing.TB, s dispatch.Store, pool string, spec dispatch.PoolSpec, loads string) {
	t.Helper()
	newPool(t, s, pool, loads)
	if _, _, err := s.PutPool(ctx, pool, spec, t0); err != nil {
		t.Fatalf("PutPool %s: %v", pool, err)
	}
}

// leases is a pool spec with heartbeats every timeout and onLapse.
func leases(timeout time.Duration, onLapse dispatch.OnLapse) dispatch.PoolSpec {
	return dispatch.PoolSpec{HeartbeatTimeout: &timeout, OnLapse: &onLapse}
}

func heartbeat(t testing.TB, s dispatch.Store, pool, compID string, orderCount *int64, now time.Time) dispatch.Scale {
	t.Helper()
	sc, err := s.Heartbeat(ctx, pool, compID, orderCount, now)
	if err != nil {
		t.Fatalf("Heartbeat %s/%s: %v", pool, compID, err)
	}
	return sc
}

func tick(t testing.TB, s dispatch.Store, pool string, now time.Time, limit int) dispatch.TickResult {
	t.Helper()
	r, err := s.Tick(ctx, dispatch.TickRequest{Pool: pool, Now: now, Limit: limit, Rand: reassignRand(uint64(now.UnixMilli()), limit), MaxCost: dispatch.DefaultMaxCost})
	if err != nil {
		t.Fatalf("Tick %s: %v", pool, err)
	}
	return r
}

// drain ticks until the pool has no work at now and returns every change
// and move, failing t after rounds calls.
func drain(t testing.TB, s dispatch.Store, pool string, now time.Time, limit int) (changes []dispatch.HealthChange, moves []dispatch.Move) {
	t.Helper()
	for range 10000 {
		r := tick(t, s, pool, now, limit)
		changes = append(changes, r.Changes...)
		moves = append(moves, r.Moves...)
		if !r.More {
			return changes, moves
		}
	}
	t.Fatalf("Tick %s: still More after 10000 calls", pool)
	return nil, nil
}

// formatChanges renders changes as "A up>lapsed@5s", times after t0.
func formatChanges(cs []dispatch.HealthChange) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s %s>%s@%s", c.CompID, c.From, c.To, c.At.Sub(t0))
	}
	return strings.Join(out, " ")
}

// healthOf returns "A=up B=lapsed" for the named Scales, as recorded.
func healthOf(t testing.TB, s dispatch.Store, pool string, compIDs ...string) string {
	t.Helper()
	out := make([]string, len(compIDs))
	for i, id := range compIDs {
		out[i] = id + "=" + string(getScale(t, s, pool, id).Health)
	}
	return strings.Join(out, " ")
}

func testHealthDefaults(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0")
	p, err := s.GetPool(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Health, dispatch.DefaultHealthOptions(); got != want {
		t.Errorf("new pool: got health options %+v, want %+v", got, want)
	}
	sc := getScale(t, s, "p1", "A")
	if sc.Health != dispatch.Up || !sc.LastHeartbeatAt.Equal(t0) || !sc.EjectedUntil.IsZero() || sc.Failures != 0 {
		t.Errorf("registered Scale: got %s, want up, heartbeat at t0, nothing else", formatHealth(sc))
	}
	// Options absent from a spec keep their value; turning heartbeats on
	// starts the leases then, changing the timeout does not.
	spec := leases(5*time.Second, dispatch.ReassignLapsed)
	spec.MaxFails = ptr(int64(3))
	if _, _, err := s.PutPool(ctx, "p1", spec, at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PutPool(ctx, "p1", dispatch.PoolSpec{HeartbeatTimeout: ptr(7 * time.Second), EjectTime: ptr(time.Minute)}, at(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	p, _ = s.GetPool(ctx, "p1")
	want := dispatch.HealthOptions{HeartbeatTimeout: 7 * time.Second, OnLapse: dispatch.ReassignLapsed, MaxFails: 3,
		FailWindow: dispatch.DefaultFailWindow, EjectTime: time.Minute, LeasesSince: at(time.Minute)}
	if p.Health != want {
		t.Errorf("after two updates: got %+v, want %+v", p.Health, want)
	}
}

// A lease that has run out keeps the Scale from every dispatch, although
// no Tick has run; the dispatch records the lapse.
func testLeaseAtDispatch(t *testing.T, s dispatch.Store) {
	healthPool(t, s, "p1", leases(5*time.Second, dispatch.Hold), "A=0 B=0")
	heartbeat(t, s, "p1", "B", nil, at(4*time.Second))
	b := mustDispatch(t, s, request("p1", "b1", at(5*time.Second-time.Millisecond), "o1", "o2"))
	wantString(t, "just before A's lease ends", compIDs(b), "B A")
	wantString(t, "health before the lapse", healthOf(t, s, "p1", "A", "B"), "A=up B=up")

	dry := request("p1", "", at(5*time.Second), "d1", "d2")
	dry.DryRun = true
	b, _, err := s.Dispatch(ctx, dry)
	if err != nil {
		t.Fatal(err)
	}
	wantString(t, "dry run as A's lease ends", compIDs(b), "B B")
	b = mustDispatch(t, s, request("p1", "b2", at(5*time.Second), "o3", "o4", "o5"))
	wantString(t, "as A's lease ends", compIDs(b), "B B B")
	wantString(t, "health after the lapse", healthOf(t, s, "p1", "A", "B"), "A=lapsed B=up")

	// B lapses too at 9s: nothing is eligible.
	_, _, err = s.Dispatch(ctx, request("p1", "b3", at(9*time.Second), "o6"))
	wantErr(t, "dispatch with every lease run out", err, dispatch.ErrNoEligibleScale)
	changes, _ := drain(t, s, "p1", at(9*time.Second), 10)
	wantString(t, "journal", formatChanges(changes), "A up>lapsed@5s B up>lapsed@9s")
	if got := wantOrder(t, s, "p1", "o2", dispatch.Assigned, time.Time{}); got.CompID != "A" {
		t.Errorf("onLapse hold: order o2 got Scale %s, want A", got.CompID)
	}
}

// A heartbeat renews the lease: a lapsed Scale is up again, warms up from
// then, and a lapse that nobody noticed is journaled before the renewal.
func testHeartbeat(t *testing.T, s dispatch.Store) {
	healthPool(t, s, "p1", leases(5*time.Second, dispatch.Hold), "A=0 B=0")
	sc := heartbeat(t, s, "p1", "A", ptr(int64(7)), at(3*time.Second))
	if sc.Health != dispatch.Up || !sc.LastHeartbeatAt.Equal(at(3*time.Second)) || sc.BaseLoad != 7 || sc.State != dispatch.Active {
		t.Errorf("heartbeat with orderCount 7: got %s base=%d state=%s, want up at 3s, base 7, active", formatHealth(sc), sc.BaseLoad, sc.State)
	}
	// B lapsed at 5s, unnoticed; its heartbeat at 6s records the lapse and
	// the return.
	sc = heartbeat(t, s, "p1", "B", nil, at(6*time.Second))
	if sc.Health != dispatch.Up || !sc.ActiveSince.Equal(at(6*time.Second)) {
		t.Errorf("heartbeat of a lapsed Scale: got %s activeSince %s, want up, active since 6s", formatHealth(sc), formatTime(sc.ActiveSince))
	}
	// A lapses at 8s; Tick records it.
	changes, _ := drain(t, s, "p1", at(8*time.Second), 10)
	wantString(t, "journal", formatChanges(changes), "B up>lapsed@5s B lapsed>up@6s A up>lapsed@8s")
	// A heartbeat never changes state.
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, at(9*time.Second))
	if sc := heartbeat(t, s, "p1", "A", nil, at(10*time.Second)); sc.State != dispatch.Draining || sc.Health != dispatch.Up {
		t.Errorf("heartbeat of a draining Scale: got state %s health %s, want draining, up", sc.State, sc.Health)
	}
	before := Snapshot(t, s, "p1")
	_, err := s.Heartbeat(ctx, "p1", "nope", nil, at(11*time.Second))
	wantErr(t, "heartbeat of an unknown Scale", err, dispatch.ErrScaleNotFound, "nope")
	_, err = s.Heartbeat(ctx, "nope", "A", nil, at(11*time.Second))
	wantErr(t, "heartbeat in an unknown pool", err, dispatch.ErrPoolNotFound, "nope")
	CheckUnchanged(t, s, before)
}

// Turning heartbeats on starts every lease then; turning them off makes
// lapsed Scales up again at the next call that settles the pool.
func testLeaseOnOff(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0")
	on := at(time.Hour)
	if _, _, err := s.PutPool(ctx, "p1", leases(5*time.Second, dispatch.Hold), on); err != nil {
		t.Fatal(err)
	}
	b := mustDispatch(t, s, request("p1", "b1", on.Add(5*time.Second-time.Millisecond), "o1", "o2"))
	wantString(t, "leases started when turned on", compIDs(b), "B A")
	heartbeat(t, s, "p1", "B", nil, on.Add(time.Second))
	b = mustDispatch(t, s, request("p1", "b2", on.Add(5*time.Second), "o3"))
	wantString(t, "A lapsed 5s after heartbeats turned on", compIDs(b), "B")
	// A longer timeout brings A back.
	if _, _, err := s.PutPool(ctx, "p1", dispatch.PoolSpec{HeartbeatTimeout: ptr(time.Minute)}, on.Add(6*time.Second)); err != nil {
		t.Fatal(err)
	}
	wantString(t, "recorded before a call settles", healthOf(t, s, "p1", "A"), "A=lapsed")
	b = mustDispatch(t, s, request("p1", "b3", on.Add(7*time.Second), "o4"))
	wantString(t, "A back under a longer timeout", compIDs(b), "A")
	// Off: nothing lapses any more.
	if _, _, err := s.PutPool(ctx, "p1", dispatch.PoolSpec{HeartbeatTimeout: ptr(time.Duration(0))}, on.Add(8*time.Second)); err != nil {
		t.Fatal(err)
	}
	b = mustDispatch(t, s, request("p1", "b4", on.Add(24*time.Hour), "o5", "o6"))
	wantString(t, "heartbeats off", compIDs(b), "B A")
	changes, _ := drain(t, s, "p1", on.Add(24*time.Hour), 10)
	wantString(t, "journal", formatChanges(changes), "A up>lapsed@1h0m5s A lapsed>up@1h0m7s")
}
