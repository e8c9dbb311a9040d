package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Bounds of GET …/watch (DESIGN §9).
const (
	// DefaultMaxWatchers is Options.MaxWatchers when it is zero.
	DefaultMaxWatchers = 1000
	// DefaultWatchInterval is the interval of a watch without intervalMs.
	DefaultWatchInterval = time.Second
	minWatchInterval     = 250 * time.Millisecond
	maxWatchInterval     = time.Minute
	// keepAliveEvery is how often a stream sends a comment line, so that
	// proxies do not close a quiet one.
	keepAliveEvery = 15 * time.Second
	// watchWriteWait is how long one write to a watcher may take before
	// the stream is given up (a client that stopped reading).
	watchWriteWait = 30 * time.Second
)

// snapshotJSON is the data of a snapshot event.
type snapshotJSON struct {
	At         string         `json:"at"`
	Pool       string         `json:"pool"`
	Strategy   string         `json:"strategy"`
	ScaleCount int            `json:"scaleCount"`
	Counters   countersJSON   `json:"counters"`
	Scales     []scaleJSON    `json:"scales"`
	Histogram  *histogramJSON `json:"histogram,omitempty"`
}

type countersJSON struct {
	Dispatched int64 `json:"dispatched"`
	Completed  int64 `json:"completed"`
	Cancelled  int64 `json:"cancelled"`
	Moved      int64 `json:"moved"`
	Failed     int64 `json:"failed"`
}

type histogramJSON struct {
	Min    int64   `json:"min"`
	Width  int64   `json:"width"`
	Counts []int64 `json:"counts"`
}

// encodeSnapshot makes the event of one read: a snapshot, or the problem
// of a failed read (frame.err), encoded once for every watcher.
func (s *server) encodeSnapshot(snap dispatch.Snapshot, err error) *frame {
	if err != nil {
		return &frame{err: err}
	}
	v := snapshotJSON{
		At:         formatTime(snap.At),
		Pool:       snap.Pool.Name,
		Strategy:   string(snap.Pool.Strategy),
		ScaleCount: snap.Pool.ScaleCount,
		Counters: countersJSON{
			Dispatched: snap.Counters.Dispatched, Completed: snap.Counters.Completed,
			Cancelled: snap.Counters.Cancelled, Moved: snap.Counters.Moved, Failed: snap.Counters.Failed,
		},
		Scales: make([]scaleJSON, len(snap.Scales)),
	}
	for i, sc := range snap.Scales {
		v.Scales[i] = toScale(sc)
	}
	if h := snap.Histogram; h != nil {
		v.Histogram = &histogramJSON{Min: h.Min, Width: h.Width, Counts: h.Counts}
	}
	return &frame{data: sseEvent("snapshot", v)}
}

// sseEvent encodes one server-sent event. JSON holds no raw newline, so the
// data is one line.
func sseEvent(name string, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("api: encoding an event: " + err.Error())
	}
	var buf bytes.Buffer
	buf.Grow(len(b) + len(name) + 16)
	buf.WriteString("event: ")
	buf.WriteString(name)
	buf.WriteString("\ndata: ")
	buf.Write(b)
	buf.WriteString("\n\n")
	return buf.Bytes()
}

// watchInterval reads intervalMs: DefaultWatchInterval when absent.
func watchInterval(r *http.Request) (time.Duration, error) {
	v, ok, err := query(r, "intervalMs")
	if err != nil || !ok {
		return DefaultWatchInterval, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%w: intervalMs=%q is not an integer", errInvalidParameter, v)
	}
	d := time.Duration(n) * time.Millisecond
	if err != nil || d < minWatchInterval || d > maxWatchInterval || n > int64(maxWatchInterval/time.Millisecond) {
		return 0, fmt.Errorf("%w: intervalMs %s is outside [%d, %d]", dispatch.ErrOutOfRange, v,
			minWatchInterval.Milliseconds(), maxWatchInterval.Milliseconds())
	}
	return d, nil
}

// watch streams snapshots of a pool as server-sent events until the client
// leaves, the pool is deleted or the server shuts down. The first read
// decides the status: a pool that does not exist, or a store that does not
// answer, is a problem answered as usual; after that, a failed read is a
// "problem" event, and the stream goes on unless the pool is gone.
func (s *server) watch(w http.ResponseWriter, r *http.Request) error {
	pool := pathID(r, "pool")
	if err := checkPoolID(pool); err != nil {
		return err
	}
	every, err := watchInterval(r)
	if err != nil {
		return err
	}
	wt, leave, err := s.watchers.join(pool, every)
	if err != nil {
		return err
	}
	defer leave()

	rc := http.NewResponseController(w)
	ctx := r.Context()
	first := true
	keepAlive := time.NewTicker(s.keepAlive)
	defer keepAlive.Stop()
	for {
		var out []byte
		select {
		case <-ctx.Done():
			return nil
		case <-s.stopping:
			return nil
		case <-keepAlive.C:
			if first {
				continue
			}
			out = []byte(": keep-alive\n\n")
		case fr := <-wt.out:
			if fr.err != nil {
				if first {
					return fr.err
				}
				out = s.problemEvent(r, fr.err)
				if !errors.Is(fr.err, dispatch.ErrPoolNotFound) {
					break
				}
				_ = rc.SetWriteDeadline(time.Now().Add(watchWriteWait))
				_, _ = w.Write(out)
				_ = rc.Flush()
				return nil
			}
			out = fr.data
			if first {
				h := w.Header()
				h.Set("Content-Type", "text/event-stream")
				h.Set("Cache-Control", "no-store")
				// nginx buffers responses unless told not to.
				h.Set("X-Accel-Buffering", "no")
				w.WriteHeader(http.StatusOK)
				// A client that reconnects waits 2 s first.
				out = append([]byte("retry: 2000\n\n"), out...)
				first = false
			}
		}
		if err := rc.SetWriteDeadline(time.Now().Add(watchWriteWait)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return nil
		}
		if _, err := w.Write(out); err != nil {
			return nil
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
}

// checkPoolID checks a pool name before it takes a watcher's place; the
// Service checks it again on every read.
func checkPoolID(pool string) error {
	if !dispatch.ValidID(pool) {
		return fmt.Errorf("%w: pool %q does not match %s", dispatch.ErrInvalidID, pool, dispatch.IDPattern)
	}
	return nil
}

// problemEvent is the "problem" event of a read that failed once the stream
// had begun: the problem writeError would answer, its 5xx detail in plain
// words and the error logged.
func (s *server) problemEvent(r *http.Request, err error) []byte {
	pt := classify(err)
	p := problem{Type: problemTypePrefix + pt.slug, Title: pt.title, Status: pt.status, Detail: err.Error()}
	switch {
	case pt.status == http.StatusServiceUnavailable:
		p.Detail = detailUnavailable
		s.logError(r, slog.LevelWarn, err)
	case pt.status >= 500:
		p.Detail = detailInternal
		s.logError(r, slog.LevelError, err)
	}
	return sseEvent("problem", p)
}

// isWatch reports whether r is a watch: a stream, which the request
// deadline must not end.
func isWatch(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/pools/")
	if !ok {
		return false
	}
	pool, tail, ok := strings.Cut(rest, "/")
	return ok && pool != "" && tail == "watch"
}
