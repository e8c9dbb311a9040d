package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// countingStore counts the Snapshot calls of the store under it.
type countingStore struct {
	dispatch.Store
	snapshots atomic.Int64
}

func (s *countingStore) Snapshot(ctx context.Context, pool string, edge, buckets int) (dispatch.Snapshot, error) {
	s.snapshots.Add(1)
	return s.Store.Snapshot(ctx, pool, edge, buckets)
}

// sse is one event of a stream: its name and data, or a comment.
type sse struct {
	name, data, comment string
}

// stream is an open watch.
type stream struct {
	resp   *http.Response
	events chan sse
	cancel context.CancelFunc
}

// openWatch opens GET path on e and reads its events into a channel, which
// is closed when the stream ends. It fails t unless the answer is 200 and
// text/event-stream.
func openWatch(t testing.TB, e *env, path string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		resp.Body.Close()
		t.Fatalf("GET %s: got %d %s, want 200 text/event-stream", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &stream{resp: resp, events: make(chan sse, 64), cancel: cancel}
	t.Cleanup(s.close)
	go func() {
		defer close(s.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		var ev sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev != (sse{}) {
					s.events <- ev
				}
				ev = sse{}
			case strings.HasPrefix(line, ":"):
				ev.comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "event: "):
				ev.name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[len("data: "):]
			}
		}
	}()
	return s
}

func (s *stream) close() { s.cancel() }

// next returns the next event with a name (comments and retry lines are
// skipped), failing t if none comes within d.
func (s *stream) next(t testing.TB, d time.Duration) sse {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("the stream ended")
			}
			if ev.name != "" {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event within %v", d)
		}
	}
}

// snapshotEvent is the data of a snapshot event, as a client reads it.
type snapshotEvent struct {
	At         string `json:"at"`
	Pool       string `json:"pool"`
	Strategy   string `json:"strategy"`
	ScaleCount int    `json:"scaleCount"`
	Counters   struct {
		Dispatched, Completed, Cancelled, Moved, Failed int64
	} `json:"counters"`
	Scales []struct {
		CompID      string `json:"compId"`
		State       string `json:"state"`
		OrderCount  int64  `json:"orderCount"`
		Outstanding int64  `json:"outstanding"`
		BaseLoad    int64  `json:"baseLoad"`
		MaxOrders   int64  `json:"maxOrders"`
	} `json:"scales"`
	Histogram *struct {
		Min, Width int64
		Counts     []int64
	} `json:"histogram"`
}

func decodeSnapshot(t testing.TB, ev sse) snapshotEvent {
	t.Helper()
	if ev.name != "snapshot" {
		t.Fatalf("got event %q (%s), want snapshot", ev.name, ev.data)
	}
	var s snapshotEvent
	dec := json.NewDecoder(strings.NewReader(ev.data))
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("snapshot data %q: %v", ev.data, err)
	}
	return s
}

func TestWatchStreamsSnapshots(t *testing.T) {
	e := newEnv(t)
	e.must(t, http.StatusCreated, nil, http.MethodPut, "/v1/pools/w", `{}`)
	e.must(t, http.StatusCreated, nil, http.MethodPut, "/v1/pools/w/scales/S1", `{"orderCount":2,"maxOrders":10}`)
	e.must(t, http.StatusCreated, nil, http.MethodPut, "/v1/pools/w/scales/S2", `{"state":"down"}`)
	s := openWatch(t, e, "/v1/pools/w/watch?intervalMs=250")
	first := decodeSnapshot(t, s.next(t, 5*time.Second))
	if first.Pool != "w" || first.Strategy != "waterfill" || first.ScaleCount != 2 || len(first.Scales) != 2 || first.Histogram != nil {
		t.Fatalf("first snapshot: got %+v, want pool w, waterfill, its 2 Scales, no histogram", first)
	}
	if sc := first.Scales[0]; sc.CompID != "S2" || sc.State != "down" || first.Scales[1].BaseLoad != 2 || first.Scales[1].MaxOrders != 10 {
		t.Errorf("first snapshot's Scales: got %+v, want S2 (down, 0) then S1 (baseLoad 2, maxOrders 10)", first.Scales)
	}
	if _, err := time.Parse(time.RFC3339, first.At); err != nil {
		t.Errorf("at: %v", err)
	}

	e.must(t, http.StatusCreated, nil, http.MethodPost, "/v1/pools/w/batches", `{"orders":[{"id":"a"},{"id":"b"},{"id":"c"}]}`)
	e.must(t, http.StatusOK, nil, http.MethodPost, "/v1/pools/w/orders/a/complete", `{}`)
	e.must(t, http.StatusOK, nil, http.MethodPost, "/v1/pools/w/orders/b/cancel", `{}`)
	var last snapshotEvent
	for range 20 {
		last = decodeSnapshot(t, s.next(t, 5*time.Second))
		if last.Counters.Cancelled == 1 {
			break
		}
	}
	if c := last.Counters; c.Dispatched != 3 || c.Completed != 1 || c.Cancelled != 1 {
		t.Errorf("counters after the batch: got %+v, want 3 dispatched, 1 completed, 1 cancelled", c)
	}
	if sc := last.Scales[1]; sc.CompID != "S1" || sc.Outstanding != 1 || sc.OrderCount != 3 {
		t.Errorf("S1 after the batch: got %+v, want outstanding 1, orderCount 3", sc)
	}
}

// TestWatchLargePool checks the shape of a pool beyond 1,000 Scales.
func TestWatchLargePool(t *testing.T) {
	st := memory.New(memory.Options{})
	if _, _, err := st.PutPool(context.Background(), "big", dispatch.PoolSpec{}, fixedTime); err != nil {
		t.Fatal(err)
	}
	for i := range 1200 {
		n := int64(i)
		if _, _, err := st.PutScale(context.Background(), "big", fmt.Sprintf("S%04d", i), dispatch.ScaleSpec{OrderCount: &n}, fixedTime); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, withStore(st))
	snap := decodeSnapshot(t, openWatch(t, e, "/v1/pools/big/watch").next(t, 5*time.Second))
	if len(snap.Scales) != 1000 || snap.ScaleCount != 1200 || snap.Histogram == nil {
		t.Fatalf("got %d Scales of %d, histogram %v; want 1000 of 1200 and a histogram", len(snap.Scales), snap.ScaleCount, snap.Histogram)
	}
	if snap.Scales[499].CompID != "S0499" || snap.Scales[500].CompID != "S0700" {
		t.Errorf("Scales 499 and 500: got %s %s, want S0499 S0700 (the 500 lowest, then the 500 highest)", snap.Scales[499].CompID, snap.Scales[500].CompID)
	}
	h := snap.Histogram
	var total int64
	for _, c := range h.Counts {
		total += c
	}
	if h.Min != 0 || h.Width != 60 || len(h.Counts) != 20 || total != 1200 || h.Counts[0] != 60 {
		t.Errorf("histogram: got %+v, want min 0, width 60, 20 buckets of 60", *h)
	}
}

// TestWatchSharesReads opens 200 watchers of one pool: the replica reads
// the pool once per interval, not once per watcher.
func TestWatchSharesReads(t *testing.T) {
	st := &countingStore{Store: memory.New(memory.Options{})}
	e := newEnv(t, withStore(st))
	e.must(t, http.StatusCreated, nil, http.MethodPut, "/v1/pools/w", `{}`)
	e.must(t, http.StatusCreated, nil, http.MethodPut, "/v1/pools/w/scales/S1", `{}`)
	const watchers, interval, events = 200, 250 * time.Millisecond, 4
	start := time.Now()
	streams := make([]*stream, watchers)
	for i := range streams {
		streams[i] = openWatch(t, e, "/v1/pools/w/watch?intervalMs=250")
	}
	var wg sync.WaitGroup
	var got atomic.Int64
	for _, s := range streams {
		wg.Go(func() {
			for range events {
				decodeSnapshot(t, s.next(t, 20*time.Second))
				got.Add(1)
			}
			s.close()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	reads := st.snapshots.Load()
	// Each read serves every watcher that is due; a watcher that joins
	// between reads gets the latest at once. So at most one read per
	// interval, and one at the start.
	if limit := int64(elapsed/interval) + 2; reads > limit {
		t.Errorf("%d store reads for %d watchers over %v: want at most %d, one per %v", reads, watchers, elapsed, limit, interval)
	}
	if got.Load() != watchers*events {
		t.Errorf("events received: got %d, want %d", got.Load(), watchers*events)
	}
	t.Logf("%d watchers, %d events each: %d store reads in %v", watchers, events, reads, elapsed.Round(time.Millisecond))
	// Once every watcher has left, the pool is read no more.
	time.Sleep(3 * interval)
	before := st.snapshots.Load()
	time.Sleep(3 * interval)
	if after := st.snapshots.Load(); after != before {
		t.Errorf("reads went on after every watcher left: %d, then %d", before, after)
	}
}

func TestWatchRefusals(t *testing.T) {
	e := newEnv(t, withAPI(func(o *api.Options) { o.MaxWatchers = 2 }))
	e.must(t, http.StatusCreated, nil, http.MethodPut, "/v1/pools/w", `{}`)
	for _, c := range []struct {
		path string
		want int
		slug string
	}{
		{"/v1/pools/nope/watch", http.StatusNotFound, "pool-not-found"},
		{"/v1/pools/w/watch?intervalMs=249", http.StatusUnprocessableEntity, "out-of-range"},
		{"/v1/pools/w/watch?intervalMs=60001", http.StatusUnprocessableEntity, "out-of-range"},
		{"/v1/pools/w/watch?intervalMs=99999999999999999999", http.StatusUnprocessableEntity, "out-of-range"},
		{"/v1/pools/w/watch?intervalMs=1s", http.StatusBadRequest, "invalid-parameter"},
		{"/v1/pools/w/watch?interval=1000", http.StatusBadRequest, "invalid-parameter"},
		{"/v1/pools/w!/watch", http.StatusBadRequest, "invalid-id"},
	} {
		r := e.do(t, http.MethodGet, c.path, "")
		status, p := r.status, r.problem(t)
		if status != c.want || !strings.HasSuffix(p.Type, ":"+c.slug) {
			t.Errorf("GET %s: got %d %s, want %d %s", c.path, status, p.Type, c.want, c.slug)
		}
	}
	// Two streams are open: a third is refused until one closes.
	a := openWatch(t, e, "/v1/pools/w/watch")
	openWatch(t, e, "/v1/pools/w/watch")
	r := e.do(t, http.MethodGet, "/v1/pools/w/watch", "")
	status, p := r.status, r.problem(t)
	if status != http.StatusServiceUnavailable || !strings.HasSuffix(p.Type, ":too-many-watchers") {
		t.Errorf("a third watcher: got %d %s, want 503 too-many-watchers", status, p.Type)
	}
	a.close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, e.url+"/v1/pools/w/watch", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a watcher after one left: got %d, want 200 once its place is free", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchEnds checks that a stream ends when its pool is deleted, with a
// problem event, and when the server begins to shut down.
func TestWatchEnds(t *testing.T) {
	stopping := make(chan struct{})
	e := newEnv(t, withAPI(func(o *api.Options) { o.Stopping = stopping; o.WatchKeepAlive = 50 * time.Millisecond }))
	e.must(t, http.StatusCreated, nil, http.MethodPut, "/v1/pools/w", `{}`)
	e.must(t, http.StatusCreated, nil, http.MethodPut, "/v1/pools/v", `{}`)

	s := openWatch(t, e, "/v1/pools/w/watch?intervalMs=250")
	decodeSnapshot(t, s.next(t, 5*time.Second))
	e.must(t, http.StatusNoContent, nil, http.MethodDelete, "/v1/pools/w", ``)
	ev := s.next(t, 5*time.Second)
	for ev.name == "snapshot" {
		ev = s.next(t, 5*time.Second)
	}
	if ev.name != "problem" || !strings.Contains(ev.data, "pool-not-found") {
		t.Errorf("after the pool's deletion: got %s %s, want a pool-not-found problem", ev.name, ev.data)
	}
	waitEnd(t, s)

	// A quiet stream sends keep-alive comments, and ends on Stopping.
	q := openWatch(t, e, "/v1/pools/v/watch?intervalMs=60000")
	decodeSnapshot(t, q.next(t, 5*time.Second))
	comments := 0
	for comments < 2 {
		select {
		case ev, ok := <-q.events:
			if !ok {
				t.Fatal("the stream ended before its keep-alives")
			}
			if ev.comment == "keep-alive" {
				comments++
			} else if ev.name != "" {
				t.Fatalf("got event %s within the 60 s interval", ev.name)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no keep-alive comment within 5 s (every 50 ms configured)")
		}
	}
	close(stopping)
	waitEnd(t, q)
}

// waitEnd fails t unless s ends within 5 s.
func waitEnd(t testing.TB, s *stream) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the stream did not end")
		}
	}
}

// TestWatchStoreDown checks that a read failing after the stream began is
// a problem event, and the stream goes on.
func TestWatchStoreDown(t *testing.T) {
	st := &failingStore{Store: memory.New(memory.Options{})}
	e := newEnv(t, withStore(st))
	e.must(t, http.StatusCreated, nil, http.MethodPut, "/v1/pools/w", `{}`)
	s := openWatch(t, e, "/v1/pools/w/watch?intervalMs=250")
	decodeSnapshot(t, s.next(t, 5*time.Second))
	st.fail.Store(true)
	ev := s.next(t, 5*time.Second)
	if ev.name != "problem" || !strings.Contains(ev.data, `"status":503`) || strings.Contains(ev.data, "boom") {
		t.Errorf("a failed read: got %s %s, want a 503 problem without the cause", ev.name, ev.data)
	}
	st.fail.Store(false)
	decodeSnapshot(t, s.next(t, 5*time.Second))
	st.fail.Store(true)
	// Once the stream shows the failure, a new watcher of the pool gets
	// that read too: its first.
	if ev := s.next(t, 5*time.Second); ev.name != "problem" {
		t.Fatalf("got %s, want a problem", ev.name)
	}
	r := e.do(t, http.MethodGet, "/v1/pools/w/watch?intervalMs=1000", "")
	status, p := r.status, r.problem(t)
	if status != http.StatusServiceUnavailable || !strings.HasSuffix(p.Type, ":unavailable") {
		t.Errorf("a watch whose first read fails: got %d %s, want 503 unavailable", status, p.Type)
	}
}

// failingStore fails its Snapshot calls while fail is set.
type failingStore struct {
	dispatch.Store
	fail atomic.Bool
}

func (s *failingStore) Snapshot(ctx context.Context, pool string, edge, buckets int) (dispatch.Snapshot, error) {
	if s.fail.Load() {
		return dispatch.Snapshot{}, fmt.Errorf("%w: boom", dispatch.ErrUnavailable)
	}
	return s.Store.Snapshot(ctx, pool, edge, buckets)
}
