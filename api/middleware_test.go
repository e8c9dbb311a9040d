package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// faultyStore is a memory store whose pool reads, dispatches and pings fail
// with err, or panic.
type faultyStore struct {
	dispatch.Store
	err   error
	panic bool
}

func (f faultyStore) Ping(context.Context) error {
	if f.panic {
		panic("boom")
	}
	return f.err
}

func (f faultyStore) GetPool(context.Context, string) (dispatch.Pool, error) {
	return dispatch.Pool{}, f.err
}

func (f faultyStore) Dispatch(_ context.Context, req dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	if ind, ok := errors.AsType[*dispatch.IndeterminateError](f.err); ok {
		return dispatch.Batch{}, false, &dispatch.IndeterminateError{BatchID: req.BatchID, Err: ind.Err}
	}
	return dispatch.Batch{}, false, f.err
}

func newFaultyEnv(t *testing.T, err error, panics bool) *env {
	t.Helper()
	mem := memory.New(memory.Options{})
	if _, _, err := mem.PutPool(context.Background(), "p", dispatch.PoolSpec{}, fixedTime); err != nil {
		t.Fatal(err)
	}
	if _, _, err := mem.PutScale(context.Background(), "p", "S1", dispatch.ScaleSpec{}, fixedTime); err != nil {
		t.Fatal(err)
	}
	return newEnv(t, withStore(faultyStore{Store: mem, err: err, panic: panics}))
}

func TestStoreUnavailable(t *testing.T) {
	e := newFaultyEnv(t, fmt.Errorf("%w: dial tcp 10.1.2.3:6379: connection refused", dispatch.ErrUnavailable), false)
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/v1/pools/p", ""},
		{"GET", "/readyz", ""},
		{"POST", "/v1/pools/p/batches", ordersJSON("o-1")},
	} {
		resp := e.must(t, http.StatusServiceUnavailable, nil, req.method, req.path, req.body)
		p := resp.problem(t)
		// A dispatch that failed on the store may have been applied (a
		// reply lost, then a retry that could not connect), so it names
		// its batch; reads are plainly unavailable.
		wantType, wantBatch := "unavailable", false
		if req.method == "POST" {
			wantType, wantBatch = "outcome-unknown", true
		}
		if p.Type != problemPrefix+wantType || (p.BatchID != "") != wantBatch {
			t.Errorf("%s %s: got %s, want type %s (batchId: %v)", req.method, req.path, resp.body, wantType, wantBatch)
		}
		if resp.header.Get("Retry-After") != "1" {
			t.Errorf("%s %s: Retry-After %q, want 1", req.method, req.path, resp.header.Get("Retry-After"))
		}
		if strings.Contains(p.Detail, "10.1.2.3") {
			t.Errorf("the detail shows the store's address: %q", p.Detail)
		}
	}
	if !strings.Contains(e.logs.String(), "10.1.2.3") {
		t.Errorf("the log does not show the store's error:\n%s", e.logs)
	}
	e.must(t, http.StatusOK, nil, "GET", "/healthz", "")
}

// TestNotSentIsUnavailable: a dispatch the store proves it did not send
// (dispatch.ErrNotSent) is 503 unavailable, without a batchId: nothing is
// in doubt.
func TestNotSentIsUnavailable(t *testing.T) {
	e := newFaultyEnv(t, fmt.Errorf("%w: redis: not answering", dispatch.ErrNotSent), false)
	resp := e.must(t, http.StatusServiceUnavailable, nil, "POST", "/v1/pools/p/batches", ordersJSON("o-1"))
	if p := resp.problem(t); p.Type != problemPrefix+"unavailable" || p.BatchID != "" {
		t.Errorf("got %s, want unavailable without a batchId", resp.body)
	}
}

func TestOutcomeUnknown(t *testing.T) {
	e := newFaultyEnv(t, &dispatch.IndeterminateError{Err: errors.New("i/o timeout")}, false)
	resp := e.must(t, http.StatusServiceUnavailable, nil, "POST", "/v1/pools/p/batches", ordersJSON("o-1"), "Idempotency-Key", "k-1")
	p := resp.problem(t)
	if p.Type != problemPrefix+"outcome-unknown" || !dispatch.ValidID(p.BatchID) {
		t.Errorf("got %s, want outcome-unknown with a batchId", resp.body)
	}
	if resp.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", resp.header.Get("Retry-After"))
	}
	// The advice fits the request: a key makes a retry safe, and without
	// one the client is told to look the batch up first.
	if !strings.Contains(p.Detail, "retry with the same Idempotency-Key") {
		t.Errorf("with a key: detail %q", p.Detail)
	}
	resp = e.must(t, http.StatusServiceUnavailable, nil, "POST", "/v1/pools/p/batches", ordersJSON("o-1"))
	if p := resp.problem(t); strings.Contains(p.Detail, "retry with the same") || !strings.Contains(p.Detail, "before sending its orders again") {
		t.Errorf("without a key: detail %q", p.Detail)
	}
}

func TestInternalError(t *testing.T) {
	e := newFaultyEnv(t, errors.New("disk on fire"), false)
	resp := e.must(t, http.StatusInternalServerError, nil, "GET", "/v1/pools/p", "", "X-Request-Id", "req-500")
	p := resp.problem(t)
	if p.Type != problemPrefix+"internal" || strings.Contains(p.Detail, "fire") {
		t.Errorf("got %s, want internal with a plain detail", resp.body)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "disk on fire") || !strings.Contains(logs, "req-500") {
		t.Errorf("the log does not show the error under its request id:\n%s", logs)
	}
	// readyz answers 200 or 503, whatever the error.
	resp = e.must(t, http.StatusServiceUnavailable, nil, "GET", "/readyz", "")
	if p := resp.problem(t); p.Type != problemPrefix+"unavailable" {
		t.Errorf("readyz: %s", resp.body)
	}
}

func TestPanicRecovered(t *testing.T) {
	e := newFaultyEnv(t, nil, true)
	resp := e.must(t, http.StatusInternalServerError, nil, "GET", "/readyz", "")
	if p := resp.problem(t); p.Type != problemPrefix+"internal" || strings.Contains(p.Detail, "boom") {
		t.Errorf("got %s, want internal with a plain detail", resp.body)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "boom") || !strings.Contains(logs, "goroutine") {
		t.Errorf("the log does not show the panic and its stack:\n%s", logs)
	}
	e.must(t, http.StatusOK, nil, "GET", "/healthz", "") // the server lives on
}

// logLine is one line of the request log.
type logLine struct {
	Msg       string  `json:"msg"`
	Level     string  `json:"level"`
	Method    string  `json:"method"`
	Route     string  `json:"route"`
	Status    int     `json:"status"`
	Duration  float64 `json:"duration"`
	RequestID string  `json:"request_id"`
}

func TestRequestIDAndLog(t *testing.T) {
	e := newEnv(t)
	resp := e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p", "", "X-Request-Id", "req-1")
	if got := resp.header.Get("X-Request-Id"); got != "req-1" {
		t.Errorf("X-Request-Id %q, want the request's req-1", got)
	}
	resp = e.must(t, http.StatusNotFound, nil, "GET", "/v1/pools/nope", "")
	generated := resp.header.Get("X-Request-Id")
	if generated == "" {
		t.Errorf("no X-Request-Id generated")
	}
	e.must(t, http.StatusNotFound, nil, "GET", "/nowhere", "")

	var lines []logLine
	for _, s := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var l logLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		if l.Msg == "request" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("got %d request lines, want 3:\n%s", len(lines), e.logs)
	}
	want := []logLine{
		{Msg: "request", Level: "INFO", Method: "PUT", Route: "/v1/pools/{pool}", Status: 201, RequestID: "req-1"},
		{Msg: "request", Level: "INFO", Method: "GET", Route: "/v1/pools/{pool}", Status: 404, RequestID: generated},
		{Msg: "request", Level: "INFO", Method: "GET", Route: "", Status: 404},
	}
	for i, l := range lines {
		if l.Duration <= 0 {
			t.Errorf("line %d: duration %v", i, l.Duration)
		}
		l.Duration = 0
		if i == 2 {
			l.RequestID = ""
		}
		if l != want[i] {
			t.Errorf("line %d: got %+v, want %+v", i, l, want[i])
		}
	}
}

// TestBodyLimitStreamed sends a body of unknown length over the limit.
func TestBodyLimitStreamed(t *testing.T) {
	e := newEnv(t)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p", "")
	body := io.MultiReader(strings.NewReader(`{"orders":[`), strings.NewReader(strings.Repeat(" ", testMaxBody)), strings.NewReader(`]}`))
	req, err := http.NewRequest("POST", e.url+"/v1/pools/p/batches", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if req.ContentLength != 0 || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("streamed body: length %d, status %d, want unknown and 413", req.ContentLength, resp.StatusCode)
	}
}

// TestRoutesMatchSpec checks that the router serves exactly the operations
// of openapi.yaml, and the dashboard's page (/ui/, not an operation).
func TestRoutesMatchSpec(t *testing.T) {
	h := api.New(dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{}), api.Options{})
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatalf("api.New returns %T, not a chi router", h)
	}
	var served []string
	var page []string
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route == "/ui" || route == "/ui/*" {
			page = append(page, method+" "+route)
			return nil
		}
		served = append(served, method+" "+route)
		return nil
	})
	if slices.Sort(page); !slices.Equal(page, []string{"GET /ui", "GET /ui/*"}) {
		t.Errorf("dashboard routes: got %v, want GET /ui and GET /ui/*", page)
	}
	if err != nil {
		t.Fatal(err)
	}
	var spec []string
	for path, item := range loadSpec(t).Paths.Map() {
		for method := range item.Operations() {
			spec = append(spec, method+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(spec)
	if !slices.Equal(served, spec) {
		t.Errorf("routes\nserved %v\nspec   %v", served, spec)
	}
}

func TestNewPanicsWithoutService(t *testing.T) {
	defer func() {
		if v := recover(); v == nil || !strings.HasPrefix(fmt.Sprint(v), "api: ") {
			t.Errorf("got panic %v, want one naming the package", v)
		}
	}()
	api.New(nil, api.Options{})
}
