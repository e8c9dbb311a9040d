package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// errTooManyWatchers is a watch beyond Options.MaxWatchers open streams.
var errTooManyWatchers = errors.New("too many watchers")

// hub shares the reads of watched pools among their watchers: one feed per
// pool reads the store when the first of its watchers is due, at most once
// per the shortest interval among them, encodes the snapshot once and
// hands the same frame to every watcher that is due. So a replica reads a
// pool at most once per interval however many watch it (DESIGN §9).
type hub struct {
	read    func(ctx context.Context, pool string) (dispatch.Snapshot, error)
	encode  func(dispatch.Snapshot, error) *frame
	max     int
	timeout time.Duration // of one read

	mu    sync.Mutex
	open  int              // watchers, all pools
	feeds map[string]*feed // pools watched
}

// frame is one read of a pool, encoded for every watcher alike.
type frame struct {
	data []byte // the event, or nil with err
	err  error  // the read failed
}

// feed is the reader of one pool.
type feed struct {
	pool    string
	subs    map[*watcher]struct{}
	changed chan struct{} // a watcher came or left (cap 1)
	last    *frame        // the latest read, nil before the first
	lastAt  time.Time     // when it started
}

// watcher is one open stream's place in a feed.
type watcher struct {
	every time.Duration
	next  time.Time   // due from then on; guarded by hub.mu
	out   chan *frame // the latest frame not yet sent (cap 1)
}

func newHub(read func(context.Context, string) (dispatch.Snapshot, error), encode func(dispatch.Snapshot, error) *frame, max int, timeout time.Duration) *hub {
	return &hub{read: read, encode: encode, max: max, timeout: timeout, feeds: map[string]*feed{}}
}

// join adds a watcher of pool that wants a frame every interval, and
// returns it with the function that removes it. errTooManyWatchers when
// max are open. A watcher that joins a feed whose latest frame is younger
// than its interval gets that frame at once and the next with the feed's
// next read, so that watchers joining one after another do not each cause
// a read.
func (h *hub) join(pool string, every time.Duration) (*watcher, func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open >= h.max {
		return nil, nil, errTooManyWatchers
	}
	h.open++
	f := h.feeds[pool]
	if f == nil {
		f = &feed{pool: pool, subs: map[*watcher]struct{}{}, changed: make(chan struct{}, 1)}
		h.feeds[pool] = f
		go h.run(f)
	}
	w := &watcher{every: every, out: make(chan *frame, 1)}
	now := time.Now()
	w.next = now
	if f.last != nil && now.Sub(f.lastAt) < every {
		w.out <- f.last
		w.next = f.lastAt.Add(every)
	}
	f.subs[w] = struct{}{}
	poke(f.changed)
	leave := sync.OnceFunc(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(f.subs, w)
		h.open--
		poke(f.changed)
	})
	return w, leave, nil
}

// poke signals c without blocking.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// run reads f's pool whenever a watcher is due, and no sooner than the
// shortest interval after the last read, until no watcher is left.
func (h *hub) run(f *feed) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.mu.Lock()
		if len(f.subs) == 0 {
			delete(h.feeds, f.pool)
			h.mu.Unlock()
			return
		}
		var due time.Time
		var shortest time.Duration
		for w := range f.subs {
			if due.IsZero() || w.next.Before(due) {
				due = w.next
			}
			if shortest == 0 || w.every < shortest {
				shortest = w.every
			}
		}
		if f.last != nil && due.Before(f.lastAt.Add(shortest)) {
			due = f.lastAt.Add(shortest)
		}
		h.mu.Unlock()

		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-f.changed:
				timer.Stop() // (since Go 1.23 no stale tick is left to drain)
				continue
			}
		}

		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
		snap, err := h.read(ctx, f.pool)
		cancel()
		fr := h.encode(snap, err)

		h.mu.Lock()
		f.last, f.lastAt = fr, start
		for w := range f.subs {
			if w.next.After(start) {
				continue
			}
			select { // the latest frame replaces one not yet sent
			case <-w.out:
			default:
			}
			w.out <- fr
			w.next = start.Add(w.every)
		}
		h.mu.Unlock()
	}
}
