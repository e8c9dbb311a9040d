package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// bothWays writes r through jsonLog and through slog's JSONHandler at
// level and returns the two outputs.
func bothWays(t *testing.T, level slog.Level, r slog.Record) (got, want string) {
	t.Helper()
	var fast, slow bytes.Buffer
	h := newJSONLog(&fast, level)
	ref := slog.NewJSONHandler(&slow, &slog.HandlerOptions{Level: level})
	ctx := context.Background()
	if h.Enabled(ctx, r.Level) != ref.Enabled(ctx, r.Level) {
		t.Fatalf("Enabled(%v) at %v: jsonLog and JSONHandler differ", r.Level, level)
	}
	if err := h.Handle(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := ref.Handle(ctx, r); err != nil {
		t.Fatal(err)
	}
	return fast.String(), slow.String()
}

// TestJSONLogMatchesSlog checks that jsonLog writes every record as slog's
// JSONHandler does: the access log's lines, which it appends itself, and
// records it leaves to the JSONHandler (escapes, other kinds, groups, an
// unset or far time), and that a logger With attributes still does.
func TestJSONLogMatchesSlog(t *testing.T) {
	at := time.Date(2026, 12, 2, 0, 30, 1, 234_567_000, time.UTC)
	rec := func(when time.Time, level slog.Level, msg string, attrs ...slog.Attr) slog.Record {
		r := slog.NewRecord(when, level, msg, 0)
		r.AddAttrs(attrs...)
		return r
	}
	access := []slog.Attr{slog.String("method", "POST"), slog.String("route", "/v1/pools/{pool}/batches"),
		slog.Int("status", 201), slog.Duration("duration", 1234567*time.Nanosecond), slog.String("request_id", "0a1b2c3d4e5f-000001")}
	cases := map[string]slog.Record{
		"access line":       rec(at, slog.LevelInfo, "request", access...),
		"access line, 5xx":  rec(at.In(time.FixedZone("x", 3600)), slog.LevelError, "request", append(access, slog.String("token", "ci"), slog.String("denied", "role"))...),
		"no attrs":          rec(at, slog.LevelWarn, "plain message"),
		"empty message":     rec(at, slog.LevelInfo, ""),
		"level between":     rec(at, slog.LevelInfo+2, "m"),
		"other kinds":       rec(at, slog.LevelInfo, "m", slog.Uint64("u", 1<<63), slog.Bool("b", true), slog.Int64("n", -5), slog.Duration("d", -time.Second)),
		"html characters":   rec(at, slog.LevelInfo, "<a & b>", slog.String("k", "<&>")),
		"quote in value":    rec(at, slog.LevelInfo, "m", slog.String("k", `say "hi"`)),
		"backslash in key":  rec(at, slog.LevelInfo, "m", slog.String(`a\b`, "v")),
		"control in msg":    rec(at, slog.LevelInfo, "tab\there"),
		"unicode value":     rec(at, slog.LevelInfo, "m", slog.String("k", "é日本\u2028")),
		"invalid utf-8":     rec(at, slog.LevelInfo, "m", slog.String("k", "\xff")),
		"DEL":               rec(at, slog.LevelInfo, "m\x7f"),
		"empty key":         rec(at, slog.LevelInfo, "m", slog.String("", "v"), slog.Int("n", 1)),
		"error value":       rec(at, slog.LevelError, "failed", slog.Any("err", errors.New(`no "route"`))),
		"float":             rec(at, slog.LevelInfo, "m", slog.Float64("f", 0.1)),
		"time value":        rec(at, slog.LevelInfo, "m", slog.Time("t", at)),
		"group":             rec(at, slog.LevelInfo, "m", slog.Group("g", slog.String("a", "b"))),
		"empty group":       rec(at, slog.LevelInfo, "m", slog.Group("g")),
		"zero time":         rec(time.Time{}, slog.LevelInfo, "m", slog.String("k", "v")),
		"year 10000":        rec(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelInfo, "m"),
		"whole nanoseconds": rec(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), slog.LevelInfo, "m"),
	}
	for name, r := range cases {
		if got, want := bothWays(t, slog.LevelInfo, r); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		for _, at := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelInfo + 2, slog.LevelError} {
			ref := slog.NewJSONHandler(nil, &slog.HandlerOptions{Level: level})
			if got, want := newJSONLog(nil, level).Enabled(context.Background(), at), ref.Enabled(context.Background(), at); got != want {
				t.Errorf("Enabled(%v) at level %v: got %v, want %v", at, level, got, want)
			}
		}
	}

	var fast, slow bytes.Buffer
	slog.New(newJSONLog(&fast, slog.LevelInfo)).With("pool", "p").WithGroup("g").Info("m", "k", "v")
	slog.New(slog.NewJSONHandler(&slow, nil)).With("pool", "p").WithGroup("g").Info("m", "k", "v")
	if got, want := dropTime(fast.String()), dropTime(slow.String()); got != want || got == "" {
		t.Errorf("With and WithGroup:\n got %s\nwant %s", got, want)
	}
}

// dropTime cuts the time field from a line written through a Logger,
// whose records are timed when logged.
func dropTime(line string) string {
	if i := strings.IndexByte(line, ','); i >= 0 {
		return line[i:]
	}
	return line
}

// FuzzJSONLog compares jsonLog with slog's JSONHandler on any message, key
// and values.
func FuzzJSONLog(f *testing.F) {
	f.Add("request", "route", "/v1/pools/{pool}/batches", int64(201), int64(123))
	f.Add("a\"b", "k\\", "\x00é", int64(-1), int64(-1))
	f.Fuzz(func(t *testing.T, msg, key, s string, n, ns int64) {
		r := slog.NewRecord(time.Unix(0, ns).UTC(), slog.LevelInfo, msg, 0)
		r.AddAttrs(slog.String(key, s), slog.Int64("n", n), slog.Duration("d", time.Duration(ns)))
		if got, want := bothWays(t, slog.LevelInfo, r); got != want {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkAccessLine writes the access log's line of a request through
// jsonLog and through slog's JSONHandler.
func BenchmarkAccessLine(b *testing.B) {
	for _, h := range []struct {
		name string
		h    slog.Handler
	}{{"jsonLog", newJSONLog(io.Discard, slog.LevelInfo)}, {"JSONHandler", slog.NewJSONHandler(io.Discard, nil)}} {
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				r.AddAttrs(slog.String("method", "POST"), slog.String("route", "/v1/pools/{pool}/batches"), slog.Int("status", 201),
					slog.Duration("duration", 1234567), slog.String("request_id", "0a1b2c3d4e5f-000001"))
				_ = h.h.Handle(context.Background(), r)
			}
		})
	}
}
