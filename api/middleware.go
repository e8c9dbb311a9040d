package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// echoRequestID returns the request id that middleware.RequestID chose (or
// took from the request) in the X-Request-Id response header.
func echoRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(middleware.RequestIDHeader, middleware.GetReqID(r.Context()))
		next.ServeHTTP(w, r)
	})
}

// observe logs one line per request (method, route pattern, status,
// duration, request id, the name of the token and why it was refused, if
// it was; 5xx at level error) and counts it in the metrics. Neither shows
// the path's ids, any header, a token or a token's digest.
func (s *server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r, info := withInfo(r)
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		took := time.Since(start)
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		route := chi.RouteContext(r.Context()).RoutePattern()
		s.metrics.observeRequest(route, r.Method, status, took)
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Duration("duration", took),
			slog.String("request_id", middleware.GetReqID(r.Context())),
		}
		if name := info.tokenName(); name != "" {
			attrs = append(attrs, slog.String("token", name))
		}
		if info.denied != "" {
			attrs = append(attrs, slog.String("denied", info.denied))
		}
		s.log.LogAttrs(r.Context(), level, "request", attrs...)
	})
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
