package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
)

type ctxKey string

// TestReqContextDeadline: a request's context reports its deadline (or the
// parent's earlier one) and its values before anything waits on it, and
// ends with DeadlineExceeded at that deadline whether it is found by
// waiting on Done, by Err or through a derived context.
func TestReqContextDeadline(t *testing.T) {
	parent := context.WithValue(context.Background(), ctxKey("k"), "v")
	start := time.Now()

	c := newReqContext(parent, start, time.Hour)
	if d, ok := c.Deadline(); !ok || !d.Equal(start.Add(time.Hour)) {
		t.Errorf("Deadline() = %v, %v, want %v, true", d, ok, start.Add(time.Hour))
	}
	if got := c.Value(ctxKey("k")); got != "v" {
		t.Errorf("Value(k) = %v, want the parent's v", got)
	}
	if got := c.Value(stateKey{}); got != &c.st {
		t.Errorf("Value(stateKey{}) = %v, want the context's reqState", got)
	}
	if err := c.Err(); err != nil {
		t.Errorf("Err() = %v before the deadline, want nil", err)
	}
	if c.timed.Load() != nil {
		t.Error("armed by Deadline, Value or Err before the deadline")
	}

	early, cancel := context.WithDeadline(parent, start.Add(time.Minute))
	defer cancel()
	if d, _ := newReqContext(early, start, time.Hour).Deadline(); !d.Equal(start.Add(time.Minute)) {
		t.Errorf("Deadline() = %v under a parent ending at %v, want the parent's", d, start.Add(time.Minute))
	}

	const timeout = 20 * time.Millisecond
	waited := newReqContext(parent, time.Now(), timeout)
	select {
	case <-waited.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed 10 s after a deadline of 20 ms")
	}
	if err := waited.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err() = %v after Done, want DeadlineExceeded", err)
	}
	if err := context.Cause(waited); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Cause() = %v after Done, want DeadlineExceeded", err)
	}

	past := newReqContext(parent, time.Now().Add(-time.Second), timeout)
	if err := past.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err() = %v past the deadline, never waited on, want DeadlineExceeded", err)
	}
	select {
	case <-past.Done():
	default:
		t.Error("Done open past the deadline after Err said so")
	}
	// under a parent that can be cancelled, as net/http's context is
	live, cancelLive := context.WithCancel(parent)
	defer cancelLive()
	if err := context.Cause(newReqContext(live, time.Now().Add(-time.Second), timeout)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Cause() = %v past the deadline, never waited on, want DeadlineExceeded", err)
	}

	derived, cancelDerived := context.WithCancel(newReqContext(parent, time.Now(), timeout))
	defer cancelDerived()
	select {
	case <-derived.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a derived context not ended 10 s after a deadline of 20 ms")
	}
	if err := derived.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("derived Err() = %v, want DeadlineExceeded", err)
	}
}

// TestReqContextCancel: a request's context ends with its parent (the
// client went away) and when its request is answered (end), waited on
// before or not.
func TestReqContextCancel(t *testing.T) {
	for _, armed := range []bool{false, true} {
		parent, cancel := context.WithCancel(context.Background())
		c := newReqContext(parent, time.Now(), time.Hour)
		if armed {
			c.Done()
		}
		cancel()
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("armed %v: Err() = %v after the parent's cancel, want Canceled", armed, err)
		}
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("armed %v: Done not closed after the parent's cancel", armed)
		}

		ended := newReqContext(context.WithValue(context.Background(), ctxKey("k"), "v"), time.Now(), time.Hour)
		if armed {
			ended.Done()
		}
		ended.end()
		if err := ended.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("armed %v: Err() = %v after end, want Canceled", armed, err)
		}
		select {
		case <-ended.Done():
		default:
			t.Errorf("armed %v: Done open after end", armed)
		}
		if err := context.Cause(ended); !errors.Is(err, context.Canceled) {
			t.Errorf("armed %v: Cause() = %v after end, want Canceled", armed, err)
		}
		if got := ended.Value(ctxKey("k")); got != "v" {
			t.Errorf("armed %v: Value(k) = %v after end, want the parent's v", armed, got)
		}
	}
}

// TestReqContextStream: a stream's context has no deadline of its own and
// is its parent's in all but its reqState.
func TestReqContextStream(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	c := newReqContext(parent, time.Now(), 0)
	if d, ok := c.Deadline(); ok {
		t.Errorf("Deadline() = %v, true for a stream, want none", d)
	}
	if c.Done() != parent.Done() {
		t.Error("a stream's Done is not its parent's")
	}
	cancel()
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() = %v after the parent's cancel, want Canceled", err)
	}
}

// TestFrontArmsNoTimer: a request whose handler only reads its context's
// deadline and values gets no timer from front, and its context is
// cancelled once it is answered.
func TestFrontArmsNoTimer(t *testing.T) {
	s := &server{metrics: NewMetrics(NewRegistry(), 10), log: slog.New(slog.DiscardHandler)}
	var seen *reqContext
	h := s.front(time.Minute, func(*http.Request) bool { return false })(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Context().(*reqContext)
		if _, ok := r.Context().Deadline(); !ok {
			t.Error("no deadline")
		}
		if stateOf(r) != &seen.st {
			t.Error("stateOf does not find the request's reqState")
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if seen == nil {
		t.Fatal("handler not called")
	}
	if seen.timed.Load() != nil {
		t.Error("front armed a timer for a request that nothing waited on")
	}
	if err := seen.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() = %v once answered, want Canceled", err)
	}
}

// TestReqContextCancelDone: CancelDone, what a request queued for its
// pool's calls waits on (dispatch.CancelWaiter), arms nothing, stays open
// past the deadline (which Err reports), and closes when the parent is
// cancelled; once armed it is Done's channel.
func TestReqContextCancelDone(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	c := newReqContext(parent, time.Now(), time.Millisecond)
	ch := c.CancelDone()
	time.Sleep(5 * time.Millisecond)
	select {
	case <-ch:
		t.Fatal("CancelDone closed by the deadline")
	default:
	}
	if c.timed.Load() != nil {
		t.Fatal("armed by CancelDone")
	}
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err() past the deadline = %v, want DeadlineExceeded", err)
	}
	cancel()
	<-ch

	parent, cancel = context.WithCancel(context.Background())
	defer cancel()
	c = newReqContext(parent, time.Now(), time.Hour)
	if c.CancelDone() != parent.Done() {
		t.Error("CancelDone is not the parent's Done before arming")
	}
	if done := c.Done(); c.CancelDone() != done {
		t.Error("CancelDone is not Done's channel once armed")
	}
}

// TestFrontGivesChiItsRouteContext: front, in front of chi, puts chi's
// route context in its request context, so that chi routes with it
// instead of copying the request into a context of its own: the handler
// sees front's context, whose route context holds the route and its
// parameters, a second request's only, and the access line names the
// route.
func TestFrontGivesChiItsRouteContext(t *testing.T) {
	var line bytes.Buffer
	s := &server{metrics: NewMetrics(NewRegistry(), 10), mux: chi.NewRouter()}
	s.log = slog.New(slog.NewJSONHandler(&line, nil))
	s.lines = &lineHandlers{base: s.log.Handler()}
	s.mux.Get("/x/{id}", func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().(*reqContext)
		if !ok {
			t.Errorf("the handler's context is a %T, not front's", r.Context())
			return
		}
		if rc := chi.RouteContext(c); rc == nil || rc != c.route {
			t.Errorf("chi's route context %p, front's %p", rc, c.route)
		}
		_, _ = io.WriteString(w, chi.URLParam(r, "id")+" "+strings.Join(chi.RouteContext(c).URLParams.Keys, ","))
	})
	h := s.front(time.Minute, func(*http.Request) bool { return false })(s.mux)
	for _, id := range []string{"7", "8"} {
		line.Reset()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/x/"+id, nil))
		if got := w.Body.String(); got != id+" id" {
			t.Errorf("GET /x/%s: answered %q, want %q", id, got, id+" id")
		}
		if !strings.Contains(line.String(), `"route":"/x/{id}"`) {
			t.Errorf("access line %s without its route", line.String())
		}
	}
}
