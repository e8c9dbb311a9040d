package api

import (
	"log/slog"
	"sync"
	"sync/atomic"
)

// lineHandlers hands observe the handler that writes the access lines of
// one route, method and status: the log's handler with those three
// attributes added by WithAttrs, which a JSON or text handler formats once,
// when it is made, instead of on every line. The line is the same: a
// handler writes its own attributes first, then the record's, and the
// access line's record began with these three. The handlers are kept for
// the methods methodLabel names (a client may send any token as a method)
// and at most maxLineHandlers of them; any other line is made whole, as
// before. Escaping and writing the three keys and values was about a tenth
// of a replica's access line (issue 21, web25).
type lineHandlers struct {
	base slog.Handler

	mu sync.Mutex                               // held to add one
	m  atomic.Pointer[map[lineKey]slog.Handler] // replaced whole, never changed
}

// lineKey is what a handler of lineHandlers adds to the lines it writes.
type lineKey struct {
	route, method string
	status        int
}

// maxLineHandlers bounds lineHandlers: a route, method and status each,
// from the router's routes, methodLabel's methods and the statuses the
// handlers answer.
const maxLineHandlers = 1024

// get returns the handler for the lines of route, method and status, and
// false where it keeps none: the caller adds the three attributes itself.
func (l *lineHandlers) get(route, method string, status int) (slog.Handler, bool) {
	k := lineKey{route, method, status}
	if m := l.m.Load(); m != nil {
		if h, ok := (*m)[k]; ok {
			return h, true
		}
	}
	if methodLabel(method) != method {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var old map[lineKey]slog.Handler
	if m := l.m.Load(); m != nil {
		old = *m
	}
	if h, ok := old[k]; ok {
		return h, true
	}
	if len(old) >= maxLineHandlers {
		return nil, false
	}
	h := l.base.WithAttrs(lineAttrs(route, method, status))
	m := make(map[lineKey]slog.Handler, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[k] = h
	l.m.Store(&m)
	return h, true
}

// lineAttrs are the first attributes of an access line.
func lineAttrs(route, method string, status int) []slog.Attr {
	return []slog.Attr{slog.String("method", method), slog.String("route", route), slog.Int("status", status)}
}
