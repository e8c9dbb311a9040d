package e2e_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/client"
	"github.com/dispatcher/dispatcher/dispatch"
)

// TestClientScaleHealth calls the health operations of the client against
// the real service on both stores: pool options, a heartbeat with a load,
// a failure report that moves an order and ejects its Scale, a repeated
// report that changes nothing, and the problems of bad input.
func TestClientScaleHealth(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(testing.TB) dispatch.Store) {
		srv := newServer(t, open(t), serverOptions{})
		c := newClient(t, srv.url)
		ctx := context.Background()

		p, err := c.PutPool(ctx, "eu", client.PoolInput{HeartbeatTimeoutMs: client.Int64(60000), OnLapse: client.OnLapseReassign, MaxFails: client.Int64(1)})
		if err != nil || p.HeartbeatTimeoutMs != 60000 || p.OnLapse != client.OnLapseReassign || p.MaxFails != 1 || p.FailWindowMs != 10000 || p.EjectMs != 30000 {
			t.Fatalf("PutPool: %+v, %v", p, err)
		}
		for _, id := range []string{"S1", "S2"} {
			if _, err := c.PutScale(ctx, "eu", id, client.ScaleInput{}); err != nil {
				t.Fatal(err)
			}
		}
		sc, err := c.HeartbeatScale(ctx, "eu", "S2", &client.HeartbeatInput{OrderCount: client.Int64(100)})
		if err != nil || sc.Health != client.HealthUp || sc.BaseLoad != 100 || sc.LastHeartbeatAt.IsZero() || sc.EjectedUntil != nil {
			t.Fatalf("HeartbeatScale: %+v, %v", sc, err)
		}
		if _, err := c.HeartbeatScale(ctx, "eu", "S1", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Dispatch(ctx, "eu", client.BatchInput{Orders: []client.OrderInput{{ID: "o1"}}}, nil); err != nil {
			t.Fatal(err)
		}
		o, err := c.FailOrder(ctx, "eu", "o1", client.FailInput{CompID: "S1", Reason: "connection refused"})
		if err != nil || o.CompID != "S2" || o.Moves != 1 {
			t.Fatalf("FailOrder: %+v, %v", o, err)
		}
		if sc, err := c.GetScale(ctx, "eu", "S1"); err != nil || sc.Health != client.HealthEjected || sc.EjectedUntil == nil {
			t.Fatalf("S1 after a report with maxFails 1: %+v, %v", sc, err)
		}
		if o, err := c.FailOrder(ctx, "eu", "o1", client.FailInput{CompID: "S1"}); err != nil || o.CompID != "S2" || o.Moves != 1 {
			t.Fatalf("repeated FailOrder: %+v, %v", o, err)
		}
		if _, err := c.FailOrder(ctx, "eu", "o1", client.FailInput{CompID: "S2"}); !errors.Is(err, client.ErrNoEligibleScale) {
			t.Errorf("FailOrder with S1 ejected: got %v, want ErrNoEligibleScale", err)
		}
		if _, err := c.FailOrder(ctx, "eu", "o1", client.FailInput{}); !errors.Is(err, client.ErrInvalidID) {
			t.Errorf("FailOrder without compId: got %v, want ErrInvalidID", err)
		}
		if _, err := c.HeartbeatScale(ctx, "eu", "S9", nil); !errors.Is(err, client.ErrScaleNotFound) {
			t.Errorf("HeartbeatScale of an unknown Scale: got %v, want ErrScaleNotFound", err)
		}
		_, err = c.PutPool(ctx, "eu", client.PoolInput{OnLapse: "drop"})
		if e, ok := errors.AsType[*client.Error](err); !ok || e.Type != client.ProblemInvalidOnLapse {
			t.Errorf("PutPool onLapse drop: got %v, want invalid-on-lapse", err)
		}
	})
}

// TestDispatchctlHealth runs the health commands of dispatchctl against the
// real service on both stores: pool options, a worker's heartbeat with a
// client token, and a failure report that moves an order.
func TestDispatchctlHealth(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(testing.TB) dispatch.Store) {
		srv := newServer(t, open(t), serverOptions{tokens: true, maxBatch: 100})
		admin := []string{"DISPATCHER_TOKEN=" + adminToken}
		worker := []string{"DISPATCHER_TOKEN=" + clientToken}
		u := srv.url

		out := ok(t, u, admin, "", "pools", "put", "eu", "-heartbeat-timeout-ms", "60000", "-on-lapse", "reassign", "-max-fails", "2", "-fail-window-ms", "5000", "-eject-ms", "1000")
		if !strings.Contains(out, "health: heartbeat timeout 60000ms (on lapse: reassign), max fails 2 in 5000ms, eject 1000ms") {
			t.Fatalf("pools put with health options:\n%s", out)
		}
		ok(t, u, admin, "", "scales", "put", "eu", "S1")
		ok(t, u, admin, "", "scales", "put", "eu", "S2", "-order-count", "50")
		if out := ok(t, u, worker, "", "scales", "heartbeat", "eu", "S1", "-order-count", "3"); !strings.Contains(out, "S1      active  up") {
			t.Fatalf("scales heartbeat:\n%s", out)
		}
		ok(t, u, worker, "", "dispatch", "eu", "o-1")
		out = ok(t, u, worker, "", "orders", "fail", "eu", "o-1", "S1", "-reason", "connection refused")
		if !strings.Contains(out, "o-1    S2") || !strings.HasSuffix(strings.TrimSpace(out), "1") {
			t.Fatalf("orders fail:\n%s", out)
		}
		// The second report against S1 ejects it (maxFails 2).
		ok(t, u, worker, "", "orders", "fail", "eu", "o-1", "S2")
		ok(t, u, worker, "", "orders", "fail", "eu", "o-1", "S1")
		if out := ok(t, u, admin, "", "scales", "get", "eu", "S1"); !strings.Contains(out, "S1      active  ejected") {
			t.Fatalf("scales get after two reports:\n%s", out)
		}
		if r := ctl(t, u, worker, "", "orders", "fail", "eu", "o-1", "S2"); r.code != 1 || !strings.Contains(r.stderr, "409 no-eligible-scale") {
			t.Fatalf("orders fail with the only other Scale ejected: %+v", r)
		}
		if r := ctl(t, u, worker, "", "scales", "heartbeat", "eu", "S9"); r.code != 1 || !strings.Contains(r.stderr, "404 scale-not-found") {
			t.Fatalf("scales heartbeat of an unknown Scale: %+v", r)
		}
		if r := ctl(t, u, worker, "", "orders", "fail", "eu", "o-1"); r.code != 2 {
			t.Fatalf("orders fail without COMPID: %+v, want exit 2", r)
		}
	})
}
