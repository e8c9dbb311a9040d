package api

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestLineHandlers: a line written through the handler lineHandlers keeps
// for its route, method and status is the line the log's own handler
// writes for a record holding those three attributes first, for JSON and
// text handlers, at every level, on the first line and the ones after;
// methods methodLabel does not name, and lines past maxLineHandlers, get
// no handler.
func TestLineHandlers(t *testing.T) {
	at := time.Date(2026, 12, 2, 14, 30, 0, 123456789, time.UTC)
	for name, mk := range map[string]func(*bytes.Buffer) slog.Handler{
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var got, want bytes.Buffer
		l := &lineHandlers{base: mk(&got)}
		plain := mk(&want)
		for _, c := range []struct {
			route, method string
			status        int
			level         slog.Level
			more          []slog.Attr
		}{
			{"/v1/pools/{pool}/batches", "POST", 201, slog.LevelInfo, nil},
			{"/v1/pools/{pool}/batches", "POST", 201, slog.LevelInfo, []slog.Attr{slog.String("token", "t \"1\"")}},
			{"/v1/pools/{pool}/batches", "POST", 503, slog.LevelError, nil},
			{"/v1/pools/{pool}/batches", "GET", 201, slog.LevelInfo, nil},
			{"/v1/pools/{pool}", "POST", 201, slog.LevelInfo, []slog.Attr{slog.String("denied", "scope")}},
			{"", "DELETE", 404, slog.LevelInfo, nil},
			{"/a \"b\"\n", "PUT", 200, slog.LevelWarn, nil},
		} {
			for range 2 { // made, then kept
				got.Reset()
				want.Reset()
				rec := slog.NewRecord(at, c.level, "request", 0)
				rec.AddAttrs(slog.String("method", c.method), slog.String("route", c.route), slog.Int("status", c.status),
					slog.Duration("duration", 1500*time.Microsecond), slog.String("request_id", "r-1"))
				rec.AddAttrs(c.more...)
				if err := plain.Handle(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
				h, ok := l.get(c.route, c.method, c.status)
				if !ok {
					t.Fatalf("%s: no handler for %s %q %d", name, c.method, c.route, c.status)
				}
				rec = slog.NewRecord(at, c.level, "request", 0)
				rec.AddAttrs(slog.Duration("duration", 1500*time.Microsecond), slog.String("request_id", "r-1"))
				rec.AddAttrs(c.more...)
				if err := h.Handle(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Errorf("%s:\n got %s\nwant %s", name, got.String(), want.String())
				}
			}
		}
	}
	l := &lineHandlers{base: slog.DiscardHandler}
	if _, ok := l.get("/x", "BREW", 200); ok {
		t.Error("a handler for the method BREW")
	}
	for i := range maxLineHandlers {
		if _, ok := l.get("/x", "GET", i); !ok {
			t.Fatalf("no handler for status %d", i)
		}
	}
	if _, ok := l.get("/y", "GET", 200); ok {
		t.Errorf("a handler past %d", maxLineHandlers)
	}
	if _, ok := l.get("/x", "GET", 200); !ok {
		t.Error("no handler for one kept")
	}
}
