package api

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// front is the outer middleware of every request, in one step so that a
// request is copied once (one context, one WithContext) rather than once per
// concern; it goes in front of chi (New) and gives chi its route context.
// It gives the request its id (the client's X-Request-Id when
// validRequestID accepts it, a generated one otherwise) and echoes it in the
// X-Request-Id response header; it bounds the request's context, and so
// every store call made with it, by timeout (a store call that runs past it
// fails with context.DeadlineExceeded or the store's ErrUnavailable,
// answered 503), except for streams (stream(r)), each of whose store reads
// has a deadline of its own (hub.timeout); and once the request is
// answered it logs one line (method, route pattern, status, duration,
// request id, the name of the token and why it was refused, if it was; 5xx
// at level error) and counts it in the metrics. Neither shows the path's
// ids, any header, a token or a token's digest.
func (s *server) front(timeout time.Duration, stream func(*http.Request) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			d := timeout
			if stream(r) {
				d = 0
			}
			ctx := newReqContext(r.Context(), start, d)
			if d > 0 {
				defer ctx.end()
			}
			rctx := routeContexts.Get().(*chi.Context)
			rctx.Reset()
			rctx.Routes = s.mux
			ctx.route = rctx
			st := &ctx.st
			if id := headerOf(r.Header, requestIDHeader); validRequestID(id) {
				st.id = id
			} else {
				st.id = newRequestID()
			}
			st.idHeader[0] = st.id
			w.Header()[requestIDHeader] = st.idHeader[:]
			r = r.WithContext(ctx)
			st.w.ResponseWriter = w
			next.ServeHTTP(&st.w, r)
			s.observe(r, st, st.w.code, time.Since(start))
			routeContexts.Put(rctx) // as chi does once its handler returns
		})
	}
}

// routeContexts are chi's route contexts, which front puts in its
// requests' contexts (reqContext.Value) for chi to use: kept from request
// to request as chi keeps its own, with the room their lists have grown.
var routeContexts = sync.Pool{New: func() any { return chi.NewRouteContext() }}

// statusWriter is the ResponseWriter that front passes on: it notes the
// status answered, as middleware.WrapResponseWriter does, for the log and
// the metrics. Flush, ReadFrom and Unwrap (http.ResponseController) reach
// the server's writer.
type statusWriter struct {
	http.ResponseWriter
	code int // 0 until the header is written
}

// WriteHeader notes code and passes it on; an informational status (1xx
// but 101) is passed on and not noted, and a second status is dropped.
func (w *statusWriter) WriteHeader(code int) {
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.code == 0 {
		w.code = code
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// ReadFrom lets io.Copy reach the server's ReadFrom (sendfile).
func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return io.Copy(w.ResponseWriter, r)
}

// Flush sends what is buffered, the header first.
func (w *statusWriter) Flush() {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the server's writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// requestIDHeader is middleware.RequestIDHeader in canonical form, to set
// it without canonicalizing it on every request.
var requestIDHeader = http.CanonicalHeaderKey(middleware.RequestIDHeader)

// requestIDPrefix starts every generated request id: a random word, so that
// the ids of two processes differ; a counter follows.
var requestIDPrefix = func() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "-"
}()

var requestIDs atomic.Uint64

// newRequestID returns a fresh request id: requestIDPrefix and a counter
// of at least six digits.
func newRequestID() string {
	n := requestIDs.Add(1)
	var buf [64]byte
	b := append(buf[:0], requestIDPrefix...)
	for d := uint64(100000); d > 1 && n < d; d /= 10 {
		b = append(b, '0')
	}
	return string(strconv.AppendUint(b, n, 10))
}

// observe logs and counts one answered request (front).
func (s *server) observe(r *http.Request, st *reqState, status int, took time.Duration) {
	if status == 0 {
		status = http.StatusOK
	}
	route := chi.RouteContext(r.Context()).RoutePattern()
	s.metrics.observeRequest(route, r.Method, status, took)
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	if !s.log.Enabled(r.Context(), level) {
		return
	}
	// The record is made here rather than by Logger.LogAttrs, which would
	// look up its caller's program counter (runtime.Callers) for a source
	// that no handler of this log shows: a quarter of the line's CPU.
	rec := slog.NewRecord(time.Now(), level, "request", 0)
	h, ok := s.lines.get(route, r.Method, status)
	if !ok {
		h = s.log.Handler()
		rec.AddAttrs(lineAttrs(route, r.Method, status)...)
	}
	rec.AddAttrs(slog.Duration("duration", took), slog.String("request_id", st.id))
	if name := st.info.tokenName(); name != "" {
		rec.AddAttrs(slog.String("token", name))
	}
	if st.info.denied != "" {
		rec.AddAttrs(slog.String("denied", st.info.denied))
	}
	_ = h.Handle(r.Context(), rec)
}

// recoverPanics answers a panic as a 500 problem and logs it with its stack.
// http.ErrAbortHandler keeps its meaning: it aborts the response.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.writeError(w, r, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
		}()
		next.ServeHTTP(w, r)
	})
}

// notFound answers a route that does not exist.
func (s *server) notFound(_ http.ResponseWriter, r *http.Request) error {
	return fmt.Errorf("%w: no route for %s %s", errNotFound, r.Method, r.URL.Path)
}

// routeMethods are the methods the API routes.
var routeMethods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete}

// methodNotAllowed answers a route that exists for other methods, and lists
// them in Allow.
func (s *server) methodNotAllowed(w http.ResponseWriter, r *http.Request) error {
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	var allowed []string
	for _, m := range routeMethods {
		if s.mux.Match(chi.NewRouteContext(), m, path) {
			allowed = append(allowed, m)
			if m == http.MethodGet {
				allowed = append(allowed, http.MethodHead) // GetHead
			}
		}
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	return fmt.Errorf("%w: %s %s; allowed: %s", errMethodNotAllowed, r.Method, r.URL.Path, strings.Join(allowed, ", "))
}
