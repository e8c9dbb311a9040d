package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	dispatcher "github.com/dispatcher/dispatcher"
	"github.com/dispatcher/dispatcher/dispatch"
)

// TestScenario walks the API end to end as a client would; every exchange
// is checked against openapi.yaml by the env's client.
func TestScenario(t *testing.T) {
	e := newEnv(t)
	batchID := scenarioSeed(t, e)
	scenarioOrders(t, e)
	scenarioDryRun(t, e)
	scenarioIdempotency(t, e)
	scenarioGeneratedIDs(t, e)
	scenarioPagination(t, e)
	scenarioDeletes(t, e, batchID)
	scenarioProbes(t, e)
}

// scenarioSeed creates pool p1 with the seed's Scales and dispatches the
// seed's batch; it returns the batch id.
func scenarioSeed(t *testing.T, e *env) string {
	var pool poolBody
	resp := e.must(t, http.StatusCreated, &pool, "PUT", "/v1/pools/p1", "")
	if loc := resp.header.Get("Location"); loc != "/v1/pools/p1" {
		t.Errorf("Location %q, want /v1/pools/p1", loc)
	}
	if pool.Name != "p1" || pool.Strategy != "waterfill" || pool.SlowStartSeconds != 0 || pool.ScaleCount != 0 {
		t.Errorf("created pool %+v", pool)
	}
	created, err := time.Parse(time.RFC3339, pool.CreatedAt)
	if err != nil || time.Since(created) > time.Minute || !strings.HasSuffix(pool.CreatedAt, "Z") || len(pool.CreatedAt) != len("2006-01-02T15:04:05.000Z") {
		t.Errorf("createdAt %q: not a recent RFC 3339 UTC time with milliseconds (%v)", pool.CreatedAt, err)
	}
	e.must(t, http.StatusOK, &pool, "PUT", "/v1/pools/p1", `{"slowStartSeconds": 60}`, "Content-Type", "application/json; charset=utf-8")
	if pool.SlowStartSeconds != 60 || pool.Strategy != "waterfill" {
		t.Errorf("updated pool %+v, want slowStartSeconds 60 and the strategy kept", pool)
	}
	e.must(t, http.StatusOK, &pool, "PUT", "/v1/pools/p1", `{"strategy": "waterfill", "slowStartSeconds": 0}`)
	if pool.SlowStartSeconds != 0 {
		t.Errorf("slowStartSeconds %d, want 0", pool.SlowStartSeconds)
	}

	for _, s := range []struct{ id, count string }{{"S1", "1"}, {"S2", "5"}, {"S3", "12"}} {
		var sc scaleBody
		resp := e.must(t, http.StatusCreated, &sc, "PUT", "/v1/pools/p1/scales/"+s.id, `{"orderCount": `+s.count+`}`)
		if want := "/v1/pools/p1/scales/" + s.id; resp.header.Get("Location") != want {
			t.Errorf("Location %q, want %q", resp.header.Get("Location"), want)
		}
		if sc.CompID != s.id || sc.Weight != 1 || sc.State != "active" || sc.MaxOrders != 0 || sc.Outstanding != 0 || fmt.Sprint(sc.OrderCount) != s.count {
			t.Errorf("registered %+v", sc)
		}
	}
	var s1 scaleBody
	e.must(t, http.StatusOK, &s1, "PUT", "/v1/pools/p1/scales/S1", "") // an empty body is {}
	if s1.OrderCount != 1 || s1.BaseLoad != 1 || s1.Weight != 1 || s1.State != "active" {
		t.Errorf("S1 after an empty PUT: %+v", s1)
	}
	e.must(t, http.StatusOK, &s1, "GET", "/v1/pools/p1/scales/S1", "")
	if s1.CompID != "S1" || s1.OrderCount != 1 {
		t.Errorf("GET S1: %+v", s1)
	}
	e.must(t, http.StatusOK, &pool, "GET", "/v1/pools/p1", "")
	if pool.ScaleCount != 3 {
		t.Errorf("scaleCount %d, want 3", pool.ScaleCount)
	}

	ids := numbered("o-", 22)
	var batch batchBody
	resp = e.must(t, http.StatusCreated, &batch, "POST", "/v1/pools/p1/batches", ordersJSON(ids...))
	const seed = "S1 S1 S1 S1 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S2 S1 S3 S2"
	if got := batch.picks(); got != seed {
		t.Fatalf("picks\ngot  %s\nwant %s", got, seed)
	}
	if batch.BatchID == nil || batch.Pool != "p1" || batch.Strategy != "waterfill" {
		t.Fatalf("batch %s", resp.body)
	}
	for i, a := range batch.Assignments {
		if a.OrderID != ids[i] {
			t.Errorf("assignment %d is order %s, want %s (request order)", i, a.OrderID, ids[i])
		}
	}
	loc := resp.header.Get("Location")
	if want := "/v1/pools/p1/batches/" + *batch.BatchID; loc != want {
		t.Errorf("Location %q, want %q", loc, want)
	}
	if v := resp.header.Get("Idempotent-Replayed"); v != "" {
		t.Errorf("a first request has Idempotent-Replayed: %s", v)
	}
	if got := e.must(t, http.StatusOK, nil, "GET", loc, ""); !bytes.Equal(got.body, resp.body) {
		t.Errorf("GET batch\ngot  %s\nwant %s", got.body, resp.body)
	}

	var scales scaleListBody
	e.must(t, http.StatusOK, &scales, "GET", "/v1/pools/p1/scales", "")
	if got := scaleCounts(scales.Scales); got != "S1=13 S3=13 S2=14" {
		t.Errorf("scales after the batch: %s, want S1=13 S3=13 S2=14", got)
	}
	if scales.NextCursor != nil {
		t.Errorf("the only page has nextCursor %q", *scales.NextCursor)
	}
	return *batch.BatchID
}

// scenarioOrders completes (twice), cancels (twice) and bulk-completes
// orders of S1, then reads the table.
func scenarioOrders(t *testing.T, e *env) {
	var order orderBody
	e.must(t, http.StatusOK, &order, "GET", "/v1/pools/p1/orders/o-01", "")
	if order.OrderID != "o-01" || order.CompID != "S1" || order.BatchID == "" || order.State != "assigned" || order.Key != nil || order.CompletedAt != nil {
		t.Errorf("order %+v", order)
	}
	e.must(t, http.StatusOK, &order, "POST", "/v1/pools/p1/orders/o-01/complete", `{"durationMs": 120}`)
	if order.State != "completed" || order.CompletedAt == nil {
		t.Errorf("completed order %+v", order)
	}
	e.must(t, http.StatusOK, &order, "POST", "/v1/pools/p1/orders/o-01/complete", "")
	if order.State != "completed" {
		t.Errorf("completed again: %+v", order)
	}
	e.must(t, http.StatusOK, &order, "POST", "/v1/pools/p1/orders/o-02/cancel", "")
	if order.State != "cancelled" || order.CompletedAt == nil {
		t.Errorf("cancelled order %+v", order)
	}
	e.must(t, http.StatusOK, &order, "POST", "/v1/pools/p1/orders/o-02/cancel", "{}")
	var done struct{ Completed int }
	e.must(t, http.StatusOK, &done, "POST", "/v1/pools/p1/completions", `{"orders":[{"id":"o-03","durationMs":5},{"id":"o-04"},{"id":"o-01"}]}`)
	if done.Completed != 2 {
		t.Errorf("completed %d, want 2 (o-01 was already)", done.Completed)
	}

	// o-01…o-04 were S1's, lowered once each: S1=9, S3=13, S2=14.
	var table tableBody
	e.must(t, http.StatusOK, &table, "GET", "/v1/pools/p1/table", "")
	if got, want := strings.Join(table.CompIDs, " "), "S1 S3 S2"; got != want {
		t.Errorf("compIdArr %s, want %s", got, want)
	}
	if want := []int64{4, 2, 1<<31 - 1}; !slices.Equal(table.DispatchCounts, want) {
		t.Errorf("dispatchCountArr %v, want %v", table.DispatchCounts, want)
	}
}

// scenarioDryRun computes a batch without changing anything.
func scenarioDryRun(t *testing.T, e *env) {
	probes := []string{"/v1/pools/p1/orders/d-1", "/v1/pools/p1/orders/d-5"}
	before := e.snapshot(t, []string{"p1"}, probes...)
	var preview batchBody
	resp := e.must(t, http.StatusOK, &preview, "POST", "/v1/pools/p1/batches?dryRun=true", ordersJSON("d-1", "d-2", "d-3", "d-4", "d-5"))
	if preview.BatchID != nil {
		t.Errorf("a dry run has batchId %q", *preview.BatchID)
	}
	if resp.header.Get("Location") != "" {
		t.Errorf("a dry run has Location %q", resp.header.Get("Location"))
	}
	if got := preview.picks(); got != "S1 S1 S1 S1 S1" {
		t.Errorf("dry run picks %s, want S1 S1 S1 S1 S1", got)
	}
	e.must(t, http.StatusOK, &preview, "POST", "/v1/pools/p1/batches?dryRun=true", ordersJSON("d-1", "d-2", "d-3", "d-4", "d-5"))
	if got := preview.picks(); got != "S1 S1 S1 S1 S1" {
		t.Errorf("second dry run picks %s: the first one changed something", got)
	}
	if after := e.snapshot(t, []string{"p1"}, probes...); after != before {
		t.Errorf("a dry run changed the store:\nbefore %s\nafter  %s", before, after)
	}
}

// scenarioIdempotency replays a batch by its Idempotency-Key and refuses
// the key with another request.
func scenarioIdempotency(t *testing.T, e *env) {
	body := `{"orders":[{"id":"i-1"},{"id":"i-2","key":"cust-9"}]}`
	var first, again batchBody
	r1 := e.must(t, http.StatusCreated, &first, "POST", "/v1/pools/p1/batches", body, "Idempotency-Key", "k-1")
	if r1.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("a first request has Idempotent-Replayed")
	}
	probes := []string{"/v1/pools/p1/orders/i-1", "/v1/pools/p1/orders/i-3"}
	before := e.snapshot(t, []string{"p1"}, probes...)
	r2 := e.must(t, http.StatusCreated, &again, "POST", "/v1/pools/p1/batches", body, "Idempotency-Key", "k-1")
	if !bytes.Equal(r1.body, r2.body) {
		t.Errorf("replay\ngot  %s\nwant %s", r2.body, r1.body)
	}
	if v := r2.header.Get("Idempotent-Replayed"); v != "true" {
		t.Errorf("replay: Idempotent-Replayed %q, want true", v)
	}
	if r2.header.Get("Location") != r1.header.Get("Location") {
		t.Errorf("replay: Location %q, want %q", r2.header.Get("Location"), r1.header.Get("Location"))
	}
	for _, req := range []struct{ path, body string }{
		{"/v1/pools/p1/batches", `{"orders":[{"id":"i-3"}]}`},
		{"/v1/pools/p1/batches", body + " "},
		{"/v1/pools/p1/batches?dryRun=false", body},
	} {
		resp := e.must(t, http.StatusUnprocessableEntity, nil, "POST", req.path, req.body, "Idempotency-Key", "k-1")
		if p := resp.problem(t); p.Type != problemPrefix+"idempotency-mismatch" {
			t.Errorf("POST %s %s with a used key: type %s, want idempotency-mismatch", req.path, req.body, p.Type)
		}
	}
	if after := e.snapshot(t, []string{"p1"}, probes...); after != before {
		t.Errorf("a replay or a mismatch changed the store:\nbefore %s\nafter  %s", before, after)
	}
	var order orderBody
	e.must(t, http.StatusOK, &order, "GET", "/v1/pools/p1/orders/i-2", "")
	if order.Key == nil || *order.Key != "cust-9" || first.BatchID == nil || order.BatchID != *first.BatchID {
		t.Errorf("order i-2: %+v", order)
	}
}

// scenarioGeneratedIDs dispatches orders sent without ids.
func scenarioGeneratedIDs(t *testing.T, e *env) {
	var batch batchBody
	e.must(t, http.StatusCreated, &batch, "POST", "/v1/pools/p1/batches", `{"orders":[{},{"key":"k"}]}`)
	if len(batch.Assignments) != 2 || batch.Assignments[0].OrderID == batch.Assignments[1].OrderID {
		t.Fatalf("assignments %+v", batch.Assignments)
	}
	for _, a := range batch.Assignments {
		if !dispatch.ValidID(a.OrderID) {
			t.Errorf("generated id %q is not a valid id", a.OrderID)
		}
		e.must(t, http.StatusOK, nil, "GET", "/v1/pools/p1/orders/"+a.OrderID, "")
	}
}

// scenarioPagination lists pools and Scales page by page.
func scenarioPagination(t *testing.T, e *env) {
	for _, p := range []string{"p2", "p3"} {
		e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/"+p, `{}`)
	}
	var names []string
	path := "/v1/pools?limit=2"
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatalf("pool pages never end")
		}
		var list poolListBody
		e.must(t, http.StatusOK, &list, "GET", path, "")
		if len(list.Pools) > 2 {
			t.Errorf("a page of limit 2 has %d pools", len(list.Pools))
		}
		for _, p := range list.Pools {
			names = append(names, p.Name)
		}
		if list.NextCursor == nil {
			break
		}
		path = "/v1/pools?limit=2&cursor=" + url.QueryEscape(*list.NextCursor)
	}
	if got := strings.Join(names, " "); got != "p1 p2 p3" {
		t.Errorf("pools %s, want p1 p2 p3", got)
	}

	for _, id := range []string{"S4", "S5"} {
		e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p1/scales/"+id, `{"weight": 3, "state": "draining", "maxOrders": 100, "orderCount": 50}`)
	}
	var all scaleListBody
	e.must(t, http.StatusOK, &all, "GET", "/v1/pools/p1/scales?limit=10000", "")
	var paged []scaleBody
	path = "/v1/pools/p1/scales?limit=2"
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatalf("Scale pages never end")
		}
		var list scaleListBody
		e.must(t, http.StatusOK, &list, "GET", path, "")
		paged = append(paged, list.Scales...)
		if list.NextCursor == nil {
			break
		}
		path = "/v1/pools/p1/scales?cursor=" + url.QueryEscape(*list.NextCursor) + "&limit=2"
	}
	if got, want := scaleCounts(paged), scaleCounts(all.Scales); got != want || len(all.Scales) != 5 {
		t.Errorf("Scales by pages %s, all at once %s (want 5)", got, want)
	}
}

// scenarioDeletes removes a busy Scale by force, and a pool.
func scenarioDeletes(t *testing.T, e *env, batchID string) {
	resp := e.must(t, http.StatusConflict, nil, "DELETE", "/v1/pools/p1/scales/S3", "")
	if p := resp.problem(t); p.Type != problemPrefix+"scale-busy" {
		t.Errorf("DELETE a busy Scale: type %s, want scale-busy", p.Type)
	}
	e.must(t, http.StatusNoContent, nil, "DELETE", "/v1/pools/p1/scales/S3?force=true", "")
	e.must(t, http.StatusNotFound, nil, "GET", "/v1/pools/p1/scales/S3", "")
	var order orderBody
	e.must(t, http.StatusOK, &order, "GET", "/v1/pools/p1/orders/o-21", "")
	if order.State != "cancelled" {
		t.Errorf("o-21 of the deleted S3: state %s, want cancelled", order.State)
	}
	e.must(t, http.StatusNoContent, nil, "DELETE", "/v1/pools/p1/scales/S4?force=false", "")
	e.must(t, http.StatusOK, nil, "GET", "/v1/pools/p1/batches/"+batchID, "")

	e.must(t, http.StatusNoContent, nil, "DELETE", "/v1/pools/p2", "")
	e.must(t, http.StatusNotFound, nil, "GET", "/v1/pools/p2", "")
	var list poolListBody
	e.must(t, http.StatusOK, &list, "GET", "/v1/pools", "")
	if len(list.Pools) != 2 || list.Pools[0].Name != "p1" || list.Pools[1].Name != "p3" {
		t.Errorf("pools after deleting p2: %+v", list.Pools)
	}
}

// scenarioProbes reads the health endpoints and the contract.
func scenarioProbes(t *testing.T, e *env) {
	for _, path := range []string{"/healthz", "/readyz"} {
		if resp := e.must(t, http.StatusOK, nil, "GET", path, ""); string(resp.body) != `{"status":"ok"}`+"\n" {
			t.Errorf("GET %s: %s", path, resp.body)
		}
	}
	resp := e.must(t, http.StatusOK, nil, "GET", "/openapi.yaml", "")
	if ct := resp.header.Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("openapi.yaml Content-Type %q, want application/yaml", ct)
	}
	if !bytes.Equal(resp.body, dispatcher.OpenAPI) {
		t.Errorf("GET /openapi.yaml is not the embedded document")
	}
}

func scaleCounts(scales []scaleBody) string {
	parts := make([]string, len(scales))
	for i, s := range scales {
		parts[i] = fmt.Sprintf("%s=%d", s.CompID, s.OrderCount)
	}
	return strings.Join(parts, " ")
}
