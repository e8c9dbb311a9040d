package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dispatcher "github.com/dispatcher/dispatcher"
	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// cancelledStore fails GetPool as a store does when the caller's context
// ends: the context's error inside ErrUnavailable.
type cancelledStore struct{ *memory.Store }

func (cancelledStore) GetPool(ctx context.Context, _ string) (dispatch.Pool, error) {
	<-ctx.Done()
	return dispatch.Pool{}, &wrapped{ctx.Err()}
}

// Dispatch fails as a store does when the caller leaves while the batch is
// in flight: it may have been applied.
func (cancelledStore) Dispatch(ctx context.Context, req dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	<-ctx.Done()
	return dispatch.Batch{}, false, &dispatch.IndeterminateError{BatchID: req.BatchID, Err: ctx.Err()}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string   { return "store unavailable: " + w.err.Error() }
func (w *wrapped) Unwrap() []error { return []error{dispatch.ErrUnavailable, w.err} }

// TestClientClosedRequest checks that a request whose client went away is
// answered (for the log and the metrics) 499 client-closed-request, logged
// at INFO: not a 5xx of the service.
func TestClientClosedRequest(t *testing.T) {
	logs := &syncBuffer{}
	metrics := api.NewMetrics(api.NewRegistry(), 10)
	h := api.New(dispatch.NewService(cancelledStore{memory.New(memory.Options{})}, dispatch.Config{}), api.Options{
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), Spec: dispatcher.OpenAPI, Metrics: metrics,
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A read, and a batch that the store had (an outcome unknown to the
	// store, but nobody is there to be told).
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/v1/pools/p", nil),
		httptest.NewRequest(http.MethodPost, "/v1/pools/p/batches", strings.NewReader(`{"orders":[{"id":"o-1"}]}`)),
	} {
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		var p struct{ Type string }
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != 499 || p.Type != "urn:dispatcher:problem:client-closed-request" {
			t.Fatalf("%s %s: got %d %s (%v), want 499 client-closed-request", req.Method, req.URL, rec.Code, rec.Body, err)
		}
	}
	l := logs.String()
	if strings.Contains(l, `"level":"ERROR"`) || strings.Count(l, `"status":499`) != 2 {
		t.Errorf("log: %s\nwant both requests at status 499 and no ERROR", l)
	}
	if !strings.Contains(l, "may have been applied") {
		t.Errorf("log: %s\nwant the batch that may have been applied named", l)
	}
}
