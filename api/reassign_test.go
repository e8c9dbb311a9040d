package api_test

import (
	"net/http"
	"strings"
	"testing"
)

type reassignBody struct {
	Pool       string `json:"pool"`
	CompID     string `json:"compId"`
	Reassigned []struct {
		OrderID string `json:"orderId"`
		From    string `json:"from"`
		To      string `json:"to"`
	} `json:"reassigned"`
}

type orderPage struct {
	Orders []struct {
		OrderID string `json:"orderId"`
		CompID  string `json:"compId"`
		BatchID string `json:"batchId"`
		State   string `json:"state"`
	} `json:"orders"`
	NextCursor string `json:"nextCursor"`
}

// listAll pages through a Scale's orders, limit per page.
func listAll(t *testing.T, e *env, path string, limit string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for range 100 {
		q := "?limit=" + limit
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		var p orderPage
		e.must(t, http.StatusOK, &p, "GET", path+q, "")
		for _, o := range p.Orders {
			ids = append(ids, o.OrderID)
		}
		if p.NextCursor == "" {
			return ids
		}
		cursor = p.NextCursor
	}
	t.Fatalf("%s: no last page", path)
	return nil
}

// TestReassign lists a Scale's orders and moves them off it once it is down.
func TestReassign(t *testing.T) {
	e := newEnv(t)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p1", "")
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p1/scales/A", "")
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p1/scales/B", `{"orderCount": 10}`)
	e.must(t, http.StatusCreated, nil, "POST", "/v1/pools/p1/batches", ordersJSON("o1", "o2", "o3"))
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p1/scales/C", "")

	if got := strings.Join(listAll(t, e, "/v1/pools/p1/scales/A/orders", "2"), " "); got != "o1 o2 o3" {
		t.Errorf("A's orders: got %q, want o1 o2 o3", got)
	}
	resp := e.do(t, "POST", "/v1/pools/p1/scales/A/reassign", "")
	if resp.status != http.StatusConflict || resp.problem(t).Type != problemPrefix+"scale-state" {
		t.Errorf("reassign of an active Scale: got %d %s, want 409 scale-state", resp.status, resp.body)
	}
	e.must(t, http.StatusOK, nil, "PUT", "/v1/pools/p1/scales/A", `{"state": "down"}`)
	var r reassignBody
	e.must(t, http.StatusOK, &r, "POST", "/v1/pools/p1/scales/A/reassign", "{}")
	if r.Pool != "p1" || r.CompID != "A" || len(r.Reassigned) != 3 {
		t.Fatalf("reassign: got %+v", r)
	}
	for i, m := range r.Reassigned {
		if want := []string{"o1", "o2", "o3"}[i]; m.OrderID != want || m.From != "A" || m.To != "C" {
			t.Errorf("move %d: got %+v, want %s from A to C", i, m, want)
		}
	}
	if got := listAll(t, e, "/v1/pools/p1/scales/A/orders", "10"); len(got) != 0 {
		t.Errorf("A still lists %v", got)
	}
	if got := strings.Join(listAll(t, e, "/v1/pools/p1/scales/C/orders", "1"), " "); got != "o1 o2 o3" {
		t.Errorf("C's orders: got %q, want o1 o2 o3", got)
	}
	e.must(t, http.StatusOK, &r, "POST", "/v1/pools/p1/scales/A/reassign", "")
	if len(r.Reassigned) != 0 {
		t.Errorf("second reassign moved %+v", r.Reassigned)
	}

	// No room: C and B full, A down again with orders.
	e.must(t, http.StatusOK, nil, "PUT", "/v1/pools/p1/scales/A", `{"state": "active"}`)
	e.must(t, http.StatusOK, nil, "PUT", "/v1/pools/p1/scales/C", `{"maxOrders": 3}`)
	e.must(t, http.StatusOK, nil, "PUT", "/v1/pools/p1/scales/B", `{"maxOrders": 10}`)
	e.must(t, http.StatusCreated, nil, "POST", "/v1/pools/p1/batches", ordersJSON("o4"))
	e.must(t, http.StatusOK, nil, "PUT", "/v1/pools/p1/scales/A", `{"state": "down"}`)
	resp = e.do(t, "POST", "/v1/pools/p1/scales/A/reassign", "")
	if resp.status != http.StatusConflict || resp.problem(t).Type != problemPrefix+"no-eligible-scale" {
		t.Errorf("reassign without room: got %d %s, want 409 no-eligible-scale", resp.status, resp.body)
	}

	for _, c := range []struct {
		method, path, body string
		status             int
		slug               string
	}{
		{"POST", "/v1/pools/p1/scales/Z/reassign", "", 404, "scale-not-found"},
		{"POST", "/v1/pools/nope/scales/A/reassign", "", 404, "pool-not-found"},
		{"POST", "/v1/pools/p1/scales/A/reassign", `{"x": 1}`, 400, "unknown-field"},
		{"GET", "/v1/pools/p1/scales/Z/orders", "", 404, "scale-not-found"},
		{"GET", "/v1/pools/p1/scales/A/orders?limit=0", "", 422, "out-of-range"},
		{"GET", "/v1/pools/p1/scales/A/orders?cursor=not-a-cursor", "", 400, "invalid-request"},
	} {
		resp := e.do(t, c.method, c.path, c.body)
		if resp.status != c.status || resp.problem(t).Type != problemPrefix+c.slug {
			t.Errorf("%s %s: got %d %s, want %d %s", c.method, c.path, resp.status, resp.body, c.status, c.slug)
		}
	}
}
