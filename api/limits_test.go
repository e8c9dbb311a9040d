package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// nested returns depth arrays nested in the orders member of a batch, so
// that the body nests depth+1 levels.
func nested(depth int) string {
	return `{"orders":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
}

func TestDepthLimit(t *testing.T) {
	e := newEnv(t)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p", "")
	for _, c := range []struct {
		name, body string
		slug       string
	}{
		{"32 levels: decoded", nested(31), "wrong-type"},
		{"33 levels", nested(32), "too-deep"},
		{"as deep as the body limit allows", nested(testMaxBody/2 - 20), "too-deep"},
		{"unclosed", `{"orders":` + strings.Repeat("[", 40), "too-deep"},
		{"brackets in strings do not count", `{"orders":[{"id":"` + strings.Repeat("[{", 40) + `"}]}`, "invalid-id"},
		{"escaped quotes do not end strings", `{"orders":[{"id":"\"` + strings.Repeat("[", 40) + `"}]}`, "invalid-id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := e.must(t, http.StatusBadRequest, nil, "POST", "/v1/pools/p/batches", c.body)
			if p := resp.problem(t); p.Type != problemPrefix+c.slug {
				t.Errorf("got %s, want %s", resp.body, c.slug)
			}
		})
	}
	// Every body goes through the same check, not only batches.
	resp := e.must(t, http.StatusBadRequest, nil, "PUT", "/v1/pools/p/scales/S1", `{"weight":`+strings.Repeat("[", 33)+`}`)
	if p := resp.problem(t); p.Type != problemPrefix+"too-deep" {
		t.Errorf("PUT scale: got %s, want too-deep", resp.body)
	}
}

// blockingStore is a memory store whose reads, dispatches and pings wait
// until their context is done and return its error, as a store that does
// not answer.
type blockingStore struct{ dispatch.Store }

func (blockingStore) GetPool(ctx context.Context, _ string) (dispatch.Pool, error) {
	<-ctx.Done()
	return dispatch.Pool{}, ctx.Err()
}

func (blockingStore) Dispatch(ctx context.Context, _ dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	<-ctx.Done()
	return dispatch.Batch{}, false, ctx.Err()
}

func (blockingStore) Ping(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestRequestTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	e := newEnv(t, withStore(blockingStore{memory.New(memory.Options{})}),
		withAPI(func(o *api.Options) { o.RequestTimeout = timeout }))
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/v1/pools/p", ""},
		{"POST", "/v1/pools/p/batches", ordersJSON("o-1")},
		{"GET", "/readyz", ""},
	} {
		start := time.Now()
		resp := e.must(t, http.StatusServiceUnavailable, nil, req.method, req.path, req.body)
		took := time.Since(start)
		if p := resp.problem(t); p.Type != problemPrefix+"unavailable" {
			t.Errorf("%s %s: got %s, want unavailable", req.method, req.path, resp.body)
		}
		if resp.header.Get("Retry-After") == "" {
			t.Errorf("%s %s: 503 without Retry-After", req.method, req.path)
		}
		if took < timeout || took > 5*time.Second {
			t.Errorf("%s %s: answered after %s, want just after %s", req.method, req.path, took, timeout)
		}
	}
	if logs := e.logs.String(); !strings.Contains(logs, "context deadline exceeded") || strings.Contains(logs, `"level":"ERROR","msg":"request failed"`) {
		t.Errorf("want the deadline logged as a warning, not an internal error:\n%s", logs)
	}
}

func TestRequestIDLimit(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name, id string
		kept     bool
	}{
		{"128 characters", strings.Repeat("r", 128), true},
		{"printable", "trace:0af7651916cd43dd-b7ad6b7169203331/1", true},
		{"129 characters", strings.Repeat("r", 129), false},
		{"a space", "req 1", false},
		{"a tab", "req\t1", false},
		{"not ASCII", "req-é", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := e.must(t, http.StatusOK, nil, "GET", "/healthz", "", "X-Request-Id", c.id)
			got := resp.header.Get("X-Request-Id")
			if kept := got == c.id; kept != c.kept {
				t.Errorf("sent %q, got %q back; want kept %v", c.id, got, c.kept)
			}
			if got == "" || len(got) > 128 {
				t.Errorf("got X-Request-Id %q, want 1 to 128 characters", got)
			}
		})
	}
	if strings.Contains(e.logs.String(), strings.Repeat("r", 129)) {
		t.Errorf("the log shows the over-long request id")
	}
}

// deadlineStore is a memory store whose ping reports the deadline of its
// context.
type deadlineStore struct {
	dispatch.Store
	deadline chan time.Time
}

func (d deadlineStore) Ping(ctx context.Context) error {
	dl, _ := ctx.Deadline()
	d.deadline <- dl
	return nil
}

// TestReadyzBound: a readiness probe gives the store about a second, not
// the request's 10 s, so that a hung store answers 503 before the probe's
// own timeout (the check allows 5 s, for a loaded machine).
func TestReadyzBound(t *testing.T) {
	st := deadlineStore{memory.New(memory.Options{}), make(chan time.Time, 1)}
	e := newEnv(t, withStore(st))
	start := time.Now()
	e.must(t, http.StatusOK, nil, "GET", "/readyz", "")
	if dl := <-st.deadline; dl.IsZero() || dl.After(start.Add(5*time.Second)) {
		t.Errorf("the ping's deadline is %v after the request, want at most 5 s (about 1 s; the request timeout is %v)", dl.Sub(start), api.DefaultRequestTimeout)
	}
}
