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
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/pools/p", nil).WithContext(ctx))
	var p struct{ Type string }
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != 499 || p.Type != "urn:dispatcher:problem:client-closed-request" {
		t.Fatalf("got %d %s (%v), want 499 client-closed-request", rec.Code, rec.Body, err)
	}
	if l := logs.String(); strings.Contains(l, `"level":"ERROR"`) || !strings.Contains(l, `"status":499`) {
		t.Errorf("log: %s\nwant the request at status 499 and no ERROR", l)
	}
}
