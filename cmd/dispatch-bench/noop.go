package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// noopBody is the noop server's answer to every POST and PUT: a small,
// batch-shaped JSON object. It names no orders, so run -complete against it
// only works with ids of its own, and holds no completed count, so run
// reports those completions as answers without a count.
const noopBody = `{"batchId":"noop","pool":"noop","strategy":"waterfill","createdAt":"2025-01-01T00:00:00.000Z","assignments":[]}` + "\n"

// noopHandler reads the request body, as the service does, and answers
// POST and PUT with 201 and noopBody; other methods get 405. It is the HTTP
// floor: what net/http costs with no service behind it.
func noopHandler() http.Handler {
	body := []byte(noopBody)
	ct := []string{"application/json"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			w.Header()["Allow"] = []string{"POST, PUT"}
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header()["Content-Type"] = ct
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
}

// runNoop serves noopHandler on cfg.Addr, prints the base URL to stdout once
// it listens, and stops when ctx ends or after cfg.For.
func runNoop(ctx context.Context, cfg noopConfig, stdout io.Writer) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Fprintf(stdout, "noop listening on http://%s\n", ln.Addr())
	return serveUntil(ctx, benchServer(noopHandler()), ln, cfg.For)
}

// benchServer is the HTTP server of the stand-ins (noop, thin): the
// service's default time-outs, so that they differ from it only in the
// handler.
func benchServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
}
