package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// jsonLog is slog.JSONHandler (HandlerOptions with Level only) with a
// faster way for the records the dispatcher writes most, one per request:
// a record whose time is set and whose keys, message and string values
// are plain printable ASCII (jsonPlain), with values that are strings,
// integers, durations or booleans, is appended here, byte for byte as the
// JSONHandler writes it (TestJSONLogMatchesSlog, FuzzJSONLog); any other
// record, and every logger made With attributes or groups, goes to the
// JSONHandler. slog's escaping of every byte of every key and string was
// most of an access-log line's CPU.
type jsonLog struct {
	slow  slog.Handler
	level slog.Leveler
	w     *lockedWriter
}

// lockedWriter is the writer of a jsonLog and of its JSONHandler, so that
// their lines never meet in one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// newJSONLog returns a jsonLog writing to w the records at level or above
// (nil: slog.LevelInfo, as for the JSONHandler).
func newJSONLog(w io.Writer, level slog.Leveler) *jsonLog {
	if level == nil {
		level = slog.LevelInfo
	}
	lw := &lockedWriter{w: w}
	return &jsonLog{slow: slog.NewJSONHandler(lw, &slog.HandlerOptions{Level: level}), level: level, w: lw}
}

// Enabled reports whether level is at the handler's level or above.
func (h *jsonLog) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// WithAttrs returns the JSONHandler's.
func (h *jsonLog) WithAttrs(attrs []slog.Attr) slog.Handler { return h.slow.WithAttrs(attrs) }

// WithGroup returns the JSONHandler's.
func (h *jsonLog) WithGroup(name string) slog.Handler { return h.slow.WithGroup(name) }

// lineBufs holds the buffers of Handle.
var lineBufs = sync.Pool{New: func() any { return new([]byte) }}

// Handle writes r as one line of JSON.
func (h *jsonLog) Handle(ctx context.Context, r slog.Record) error {
	bp := lineBufs.Get().(*[]byte)
	defer lineBufs.Put(bp)
	line, ok := appendRecord((*bp)[:0], r)
	if cap(line) <= 64<<10 {
		*bp = line[:0]
	}
	if !ok {
		return h.slow.Handle(ctx, r)
	}
	_, err := h.w.Write(line)
	return err
}

// appendRecord appends r as the JSONHandler writes it and reports true, or
// reports false for a record it leaves to the JSONHandler.
func appendRecord(b []byte, r slog.Record) ([]byte, bool) {
	if y := r.Time.Year(); r.Time.IsZero() || y < 0 || y >= 10000 || !plain(r.Message) {
		return b, false
	}
	b = append(b, `{"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"`...)
	b = append(b, r.Level.String()...)
	b = append(b, `","msg":"`...)
	b = append(b, r.Message...)
	b = append(b, '"')
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "" || !plain(a.Key) {
			ok = false
			return false
		}
		b = append(b, `,"`...)
		b = append(b, a.Key...)
		b = append(b, `":`...)
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			s := v.String()
			if ok = plain(s); ok {
				b = append(b, '"')
				b = append(b, s...)
				b = append(b, '"')
			}
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindUint64:
			b = strconv.AppendUint(b, v.Uint64(), 10)
		case slog.KindDuration:
			b = strconv.AppendInt(b, int64(v.Duration()), 10)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		default:
			ok = false
		}
		return ok
	})
	return append(b, "}\n"...), ok
}

// plain reports whether s needs no escaping in JSON: printable ASCII but
// '"' and '\\' (slog escapes no HTML character).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
