package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/client"
	"github.com/dispatcher/dispatcher/dispatch"
)

// TestClientOperations calls every operation of the client against the
// real service on both stores, and checks the answers against the
// worked example of DESIGN §2.
func TestClientOperations(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(testing.TB) dispatch.Store) {
		srv := newServer(t, open(t), serverOptions{})
		c := newClient(t, srv.url)
		ctx := context.Background()

		if h, err := c.Healthz(ctx); err != nil || h.Status != "ok" {
			t.Fatalf("Healthz: %+v, %v", h, err)
		}
		if h, err := c.Readyz(ctx); err != nil || h.Status != "ok" {
			t.Fatalf("Readyz: %+v, %v", h, err)
		}
		spec, err := c.GetOpenAPI(ctx)
		if err != nil || !strings.HasPrefix(string(spec), "openapi: 3.") {
			t.Fatalf("GetOpenAPI: %.40q, %v", spec, err)
		}
		m, err := c.GetMetrics(ctx)
		if err != nil || !strings.Contains(string(m), "dispatcher_http_requests_total") {
			t.Fatalf("GetMetrics: %v (%d bytes)", err, len(m))
		}

		p, err := c.PutPool(ctx, "eu", client.PoolInput{Strategy: client.StrategyWaterfill, SlowStartSeconds: client.Int64(0)})
		if err != nil || p.Name != "eu" || p.Strategy != client.StrategyWaterfill || p.CreatedAt.IsZero() {
			t.Fatalf("PutPool: %+v, %v", p, err)
		}
		for _, s := range []struct {
			id    string
			count int64
		}{{"S1", 1}, {"S2", 5}, {"S3", 12}} {
			sc, err := c.PutScale(ctx, "eu", s.id, client.ScaleInput{OrderCount: client.Int64(s.count)})
			if err != nil || sc.OrderCount != s.count || sc.BaseLoad != s.count || sc.State != client.ScaleActive {
				t.Fatalf("PutScale %s: %+v, %v", s.id, sc, err)
			}
		}
		if p, err := c.GetPool(ctx, "eu"); err != nil || p.ScaleCount != 3 {
			t.Fatalf("GetPool: %+v, %v", p, err)
		}
		tab, err := c.GetTable(ctx, "eu")
		if err != nil || fmt.Sprint(tab.CompIDArr, tab.DispatchCountArr) != "[S1 S2 S3] [4 14 2147483647]" {
			t.Fatalf("GetTable: %+v, %v", tab, err)
		}

		in := client.BatchInput{}
		for i := 1; i <= 22; i++ {
			in.Orders = append(in.Orders, client.OrderInput{ID: fmt.Sprintf("o-%d", i)})
		}
		preview, err := c.DispatchDryRun(ctx, "eu", in)
		if err != nil || len(preview.Assignments) != 22 {
			t.Fatalf("DispatchDryRun: %+v, %v", preview, err)
		}
		b, err := c.Dispatch(ctx, "eu", in, &client.DispatchOptions{IdempotencyKey: "first-batch"})
		if err != nil {
			t.Fatalf("Dispatch: %v", err)
		}
		const want = "S1 S1 S1 S1 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S2 S1 S3 S2"
		if got := compIDs(b.Assignments); got != want {
			t.Fatalf("Dispatch assigned %s, want %s", got, want)
		}
		if got := compIDs(preview.Assignments); got != want {
			t.Fatalf("DispatchDryRun assigned %s, want %s", got, want)
		}
		again, err := c.Dispatch(ctx, "eu", in, &client.DispatchOptions{IdempotencyKey: "first-batch"})
		if err != nil || again.BatchID != b.BatchID {
			t.Fatalf("Dispatch replay: %+v, %v; want batch %s", again, err, b.BatchID)
		}
		if gb, err := c.GetBatch(ctx, "eu", b.BatchID); err != nil || compIDs(gb.Assignments) != want {
			t.Fatalf("GetBatch: %+v, %v", gb, err)
		}

		o, err := c.GetOrder(ctx, "eu", "o-21")
		if err != nil || o.CompID != "S3" || o.State != client.OrderAssigned || o.BatchID != b.BatchID || o.CompletedAt != nil {
			t.Fatalf("GetOrder: %+v, %v", o, err)
		}
		o, err = c.CompleteOrder(ctx, "eu", "o-21", &client.CompleteInput{DurationMs: client.Int64(120)})
		if err != nil || o.State != client.OrderCompleted || o.CompletedAt == nil {
			t.Fatalf("CompleteOrder: %+v, %v", o, err)
		}
		o, err = c.CancelOrder(ctx, "eu", "o-22")
		if err != nil || o.State != client.OrderCancelled || o.CompletedAt == nil {
			t.Fatalf("CancelOrder: %+v, %v", o, err)
		}
		n, err := c.CompleteOrders(ctx, "eu", client.CompletionsInput{Orders: []client.Completion{{ID: "o-1"}, {ID: "o-21"}}})
		if err != nil || n.Completed != 1 {
			t.Fatalf("CompleteOrders: %+v, %v; want 1 (o-21 was completed before)", n, err)
		}

		var scales []string
		for s, err := range c.ListScales(ctx, "eu", &client.ListOptions{Limit: 1}) {
			if err != nil {
				t.Fatalf("ListScales: %v", err)
			}
			scales = append(scales, fmt.Sprintf("%s=%d", s.CompID, s.OrderCount))
		}
		// S1 got 12 orders and lost o-1, S2 9 and lost o-22, S3 1 and lost o-21;
		// ties by compId.
		if got := strings.Join(scales, " "); got != "S1=12 S3=12 S2=13" {
			t.Fatalf("ListScales (pages of 1): %s", got)
		}

		if _, err := c.PutScale(ctx, "eu", "S1", client.ScaleInput{State: client.ScaleDown}); err != nil {
			t.Fatalf("PutScale down: %v", err)
		}
		var held []string
		for o, err := range c.ListScaleOrders(ctx, "eu", "S1", &client.ListOptions{Limit: 4}) {
			if err != nil {
				t.Fatalf("ListScaleOrders: %v", err)
			}
			held = append(held, o.OrderID)
		}
		if len(held) != 11 {
			t.Fatalf("ListScaleOrders(S1) = %v, want the 11 outstanding", held)
		}
		r, err := c.ReassignScale(ctx, "eu", "S1")
		if err != nil || len(r.Reassigned) != 11 || r.Reassigned[0].From != "S1" {
			t.Fatalf("ReassignScale: %+v, %v", r, err)
		}
		if err := c.DeleteScale(ctx, "eu", "S1", nil); err != nil {
			t.Fatalf("DeleteScale: %v", err)
		}
		if err := c.DeleteScale(ctx, "eu", "S2", nil); !errors.Is(err, client.ErrScaleBusy) {
			t.Fatalf("DeleteScale(S2) without force: %v, want ErrScaleBusy", err)
		}
		if err := c.DeleteScale(ctx, "eu", "S2", &client.DeleteScaleOptions{Force: true}); err != nil {
			t.Fatalf("DeleteScale(S2, force): %v", err)
		}
		if _, err := c.GetScale(ctx, "eu", "S2"); !errors.Is(err, client.ErrScaleNotFound) {
			t.Fatalf("GetScale(S2) after delete: %v, want ErrScaleNotFound", err)
		}
		if _, err := c.PutPool(ctx, "us", client.PoolInput{}); err != nil {
			t.Fatalf("PutPool(us): %v", err)
		}
		var pools []string
		for p, err := range c.ListPools(ctx, &client.ListOptions{Limit: 1}) {
			if err != nil {
				t.Fatalf("ListPools: %v", err)
			}
			pools = append(pools, p.Name)
		}
		if !slices.Equal(pools, []string{"eu", "us"}) {
			t.Fatalf("ListPools = %v, want [eu us]", pools)
		}
		if err := c.DeletePool(ctx, "eu"); err != nil {
			t.Fatalf("DeletePool: %v", err)
		}
		if _, err := c.GetPool(ctx, "eu"); !errors.Is(err, client.ErrPoolNotFound) {
			t.Fatalf("GetPool after delete: %v, want ErrPoolNotFound", err)
		}
	})
}

// TestClientErrors checks that the service's problems reach the caller as
// *client.Error, with errors.Is and errors.As.
func TestClientErrors(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(testing.TB) dispatch.Store) {
		srv := newServer(t, open(t), serverOptions{tokens: true, maxBatch: 5})
		ctx := context.Background()
		admin := newClient(t, srv.url, client.WithToken(adminToken))
		user := newClient(t, srv.url, client.WithToken(clientToken))
		anon := newClient(t, srv.url)

		_, err := anon.GetPool(ctx, "eu")
		var e *client.Error
		if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || e.Type != client.ProblemUnauthorized || e.RequestID == "" {
			t.Fatalf("GetPool without token: %#v", err)
		}
		if _, err := user.PutPool(ctx, "eu", client.PoolInput{}); !errors.Is(err, client.ErrForbidden) {
			t.Fatalf("PutPool with a client token: %v, want ErrForbidden", err)
		}
		_, err = user.GetPool(ctx, "eu")
		if !errors.Is(err, client.ErrPoolNotFound) || !errors.Is(err, &client.Error{Status: 404}) || errors.Is(err, client.ErrScaleNotFound) {
			t.Fatalf("GetPool(unknown): %v, want ErrPoolNotFound (and status 404, and not ErrScaleNotFound)", err)
		}
		if !errors.As(err, &e) || e.Title != "Pool not found" || e.Detail == "" {
			t.Fatalf("GetPool(unknown) problem: %#v", e)
		}
		if _, err := admin.PutPool(ctx, "eu", client.PoolInput{Strategy: "fastest"}); !errors.Is(err, client.ErrUnknownStrategy) {
			t.Fatalf("PutPool(fastest): %v, want ErrUnknownStrategy", err)
		}
		if _, err := admin.PutPool(ctx, "eu", client.PoolInput{}); err != nil {
			t.Fatalf("PutPool: %v", err)
		}
		in := client.BatchInput{Orders: []client.OrderInput{{ID: "o-1"}}}
		if _, err := user.Dispatch(ctx, "eu", in, nil); !errors.Is(err, client.ErrNoEligibleScale) {
			t.Fatalf("Dispatch to a pool without Scales: %v, want ErrNoEligibleScale", err)
		}
		if _, err := admin.PutScale(ctx, "eu", "S1", client.ScaleInput{Weight: client.Int64(0)}); !errors.Is(err, client.ErrOutOfRange) {
			t.Fatalf("PutScale(weight 0): %v, want ErrOutOfRange", err)
		}
		if _, err := admin.PutScale(ctx, "eu", "S1", client.ScaleInput{}); err != nil {
			t.Fatalf("PutScale: %v", err)
		}
		if _, err := user.Dispatch(ctx, "eu", in, &client.DispatchOptions{IdempotencyKey: "k1"}); err != nil {
			t.Fatalf("Dispatch: %v", err)
		}
		if _, err := user.Dispatch(ctx, "eu", in, nil); !errors.Is(err, client.ErrOrderExists) {
			t.Fatalf("Dispatch of a held id with a new key: %v, want ErrOrderExists", err)
		}
		other := client.BatchInput{Orders: []client.OrderInput{{ID: "o-2"}}}
		if _, err := user.Dispatch(ctx, "eu", other, &client.DispatchOptions{IdempotencyKey: "k1"}); !errors.Is(err, client.ErrIdempotencyMismatch) {
			t.Fatalf("Dispatch of another batch with key k1: %v, want ErrIdempotencyMismatch", err)
		}
		six := client.BatchInput{}
		for i := range 6 {
			six.Orders = append(six.Orders, client.OrderInput{ID: fmt.Sprintf("x-%d", i)})
		}
		if _, err := user.Dispatch(ctx, "eu", six, nil); !errors.Is(err, client.ErrBatchTooLarge) {
			t.Fatalf("Dispatch of 6 orders (max 5): %v, want ErrBatchTooLarge", err)
		}
		if _, err := user.Dispatch(ctx, "eu", client.BatchInput{Orders: []client.OrderInput{}}, nil); !errors.Is(err, client.ErrEmptyBatch) {
			t.Fatalf("Dispatch of no orders: %v, want ErrEmptyBatch", err)
		}
		if _, err := user.CompleteOrder(ctx, "eu", "o-1", nil); err != nil {
			t.Fatalf("CompleteOrder: %v", err)
		}
		if _, err := user.CancelOrder(ctx, "eu", "o-1"); !errors.Is(err, client.ErrOrderState) {
			t.Fatalf("CancelOrder of a completed order: %v, want ErrOrderState", err)
		}
		if _, err := user.GetBatch(ctx, "eu", "nope"); !errors.Is(err, client.ErrBatchNotFound) {
			t.Fatalf("GetBatch(nope): %v, want ErrBatchNotFound", err)
		}
		if _, err := user.GetOrder(ctx, "eu", "bad id"); !errors.Is(err, client.ErrInvalidID) {
			t.Fatalf("GetOrder(bad id): %v, want ErrInvalidID", err)
		}
		for _, err := range user.ListScales(ctx, "nope", nil) {
			if !errors.Is(err, client.ErrPoolNotFound) {
				t.Fatalf("ListScales(nope) yielded %v, want ErrPoolNotFound", err)
			}
		}
		if _, err := user.GetMetrics(ctx); !errors.Is(err, client.ErrForbidden) {
			t.Fatalf("GetMetrics with a client token: %v, want ErrForbidden", err)
		}
		if _, err := admin.GetMetrics(ctx); err != nil {
			t.Fatalf("GetMetrics with an admin token: %v", err)
		}
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := user.GetPool(ctx, "eu"); !errors.Is(err, context.Canceled) {
			t.Fatalf("GetPool with a cancelled context: %v, want context.Canceled", err)
		}
	})
}

// compIDs lists the compIds of assignments, space-separated.
func compIDs(as []client.Assignment) string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.CompID
	}
	return strings.Join(ids, " ")
}
