package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// touch makes a mutating call at now, which lets the store remove what has
// expired.
func touch(t testing.TB, s dispatch.Store, pool string, now time.Time) {
	t.Helper()
	putScale(t, s, pool, "A", dispatch.ScaleSpec{}, now)
}

// testRetention runs with a retention of 1h: completed and cancelled orders
// stay until 1h after they finished, assigned orders stay, and the batch,
// sent with an Idempotency-Key, stays as long as its key: 30 minutes.
func testRetention(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0")
	req := request("p1", "b1", t0, "o1", "o2", "o3", "o4")
	req.IdempotencyKey, req.Fingerprint, req.IdempotencyTTL = "k1", "fp1", 30*time.Minute
	mustDispatch(t, s, req)
	if _, _, err := complete(s, "p1", at(time.Minute), "o1"); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if _, err := s.Cancel(ctx, "p1", "o2", at(2*time.Minute)); err != nil {
		t.Fatalf("Cancel: %v", err)
	}

	touch(t, s, "p1", at(30*time.Minute))
	if _, err := s.GetBatch(ctx, "p1", "b1", at(30*time.Minute)); err != nil {
		t.Errorf("GetBatch at its expiry: got %v, want the batch", err)
	}
	touch(t, s, "p1", at(31*time.Minute))
	_, err := s.GetBatch(ctx, "p1", "b1", t0) // removed, not only past its time
	wantErr(t, "GetBatch after its expiry", err, dispatch.ErrBatchNotFound)
	wantOrder(t, s, "p1", "o1", dispatch.Completed, at(time.Minute))
	wantOrder(t, s, "p1", "o3", dispatch.Assigned, time.Time{})

	touch(t, s, "p1", at(61*time.Minute+time.Second))
	wantGone(t, s, "p1", "o1")
	wantOrder(t, s, "p1", "o2", dispatch.Cancelled, at(2*time.Minute))

	touch(t, s, "p1", at(62*time.Minute+time.Second))
	wantGone(t, s, "p1", "o1", "o2")
	wantOrder(t, s, "p1", "o3", dispatch.Assigned, time.Time{})

	// The ids are free again, and so are the batch id and the key.
	req.Now = at(63 * time.Minute)
	req.Orders = req.Orders[:2]
	b := mustDispatch(t, s, req)
	wantString(t, "batch reusing the ids", formatBatch(b),
		`batch "b1" pool=p1 strategy=waterfill created=2025-03-01T13:03:00Z [o1:A o2:A]`)
	wantString(t, "loads", loads(t, s, "p1"), "A=4")
}

// testBatchWindows runs with a retention of 1h: a batch without an
// Idempotency-Key leaves 1h after it was made, one with a key leaves with
// its key when the key's window ends, shorter or longer than the
// retention; then the key is free for another request.
func testBatchWindows(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0")
	plain := request("p1", "plain", t0, "o1")
	short := request("p1", "short", t0, "o2")
	short.IdempotencyKey, short.Fingerprint, short.IdempotencyTTL = "k-short", "fp", 10*time.Minute
	long := request("p1", "long", t0, "o3")
	long.IdempotencyKey, long.Fingerprint, long.IdempotencyTTL = "k-long", "fp", 2*time.Hour
	for _, req := range []dispatch.DispatchRequest{plain, short, long} {
		mustDispatch(t, s, req)
	}
	// held lists the batches that GetBatch finds at t0: those not removed
	// yet, whatever their time.
	held := func() string {
		var out []string
		for _, id := range []string{"plain", "short", "long"} {
			_, err := s.GetBatch(ctx, "p1", id, t0)
			switch {
			case err == nil:
				out = append(out, id)
			case !errors.Is(err, dispatch.ErrBatchNotFound):
				t.Fatalf("GetBatch %s: %v", id, err)
			}
		}
		return fmt.Sprint(out)
	}
	replay := func(req dispatch.DispatchRequest, now time.Time) bool {
		t.Helper()
		req.BatchID, req.Now = "retry-"+req.BatchID, now
		_, replayed, err := s.Dispatch(ctx, req)
		if err != nil && !errors.Is(err, dispatch.ErrOrderExists) {
			t.Fatalf("Dispatch again with key %s: %v", req.IdempotencyKey, err)
		}
		return replayed
	}

	touch(t, s, "p1", at(10*time.Minute))
	wantString(t, "batches at 10m", held(), "[plain short long]")
	if !replay(short, at(10*time.Minute)) {
		t.Errorf("key k-short at the end of its window: got no replay, want one")
	}
	touch(t, s, "p1", at(10*time.Minute+time.Second))
	wantString(t, "batches after the short key's window", held(), "[plain long]")
	if replay(short, at(10*time.Minute+time.Second)) {
		t.Errorf("key k-short after its window: got a replay, want the key gone")
	}

	touch(t, s, "p1", at(time.Hour+time.Second))
	wantString(t, "batches after the retention", held(), "[long]")
	if !replay(long, at(time.Hour+time.Second)) {
		t.Errorf("key k-long within its window: got no replay, want one")
	}

	touch(t, s, "p1", at(2*time.Hour+time.Second))
	wantString(t, "batches after the long key's window", held(), "[]")
	// The key is free: another request under it is a new batch, not a
	// mismatch.
	other := request("p1", "other", at(2*time.Hour+time.Second), "o4")
	other.IdempotencyKey, other.Fingerprint, other.IdempotencyTTL = "k-long", "another", time.Hour
	mustDispatch(t, s, other)
	wantOrder(t, s, "p1", "o1", dispatch.Assigned, time.Time{})
}

func testDefaultRetention(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0")
	mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2"))
	if _, _, err := complete(s, "p1", t0, "o1"); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	touch(t, s, "p1", at(24*time.Hour))
	wantOrder(t, s, "p1", "o1", dispatch.Completed, t0)
	touch(t, s, "p1", at(24*time.Hour+time.Second))
	wantGone(t, s, "p1", "o1")
	wantOrder(t, s, "p1", "o2", dispatch.Assigned, time.Time{})
}

// testRetentionBacklog finishes more orders than one call may remove: their
// ids are free as soon as they expire, whether or not they are removed yet,
// and a few mutating calls remove them all.
func testRetentionBacklog(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0")
	const n = 300
	done := ids("o", n)
	mustDispatch(t, s, request("p1", "b1", t0, append(done, "keep")...))
	if _, _, err := complete(s, "p1", at(time.Minute), done[:n/2]...); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	for _, id := range done[n/2:] {
		if _, err := s.Cancel(ctx, "p1", id, at(time.Minute)); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
	}
	later := at(2 * time.Hour)
	mustDispatch(t, s, request("p1", "b2", later, done[n-5:]...))
	for i := range 20 {
		touch(t, s, "p1", later.Add(time.Duration(i)*time.Second))
	}
	wantGone(t, s, "p1", done[:n-5]...)
	for _, id := range done[n-5:] {
		wantOrder(t, s, "p1", id, dispatch.Assigned, time.Time{})
	}
	wantOrder(t, s, "p1", "keep", dispatch.Assigned, time.Time{})
}

// testRetentionSteady runs a pool the way bulk clients do (retention 1h):
// every two hours a batch of n orders, all completed in one call. Each
// call may queue n orders to expire, and must remove more than it queues,
// or finished orders pile up for good: after the last cycle, every order
// of the cycles before it has left the store, not only passed its time.
func testRetentionSteady(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0")
	const n, cycles = 300, 5
	var old []string
	for c := range cycles {
		now := at(time.Duration(2*c) * time.Hour)
		batch := ids(fmt.Sprintf("c%d-", c), n)
		mustDispatch(t, s, request("p1", fmt.Sprintf("b%d", c), now, batch...))
		if _, _, err := complete(s, "p1", now, batch...); err != nil {
			t.Fatalf("cycle %d: Complete: %v", c, err)
		}
		if c < cycles-1 {
			old = append(old, batch...)
		}
	}
	wantGone(t, s, "p1", old...)
}

// testRetentionReads reads, with no write in between, before and after the
// time of a completed order (retention 1h) and of a batch: a record past
// its time reads as absent whether or not the store has removed it yet,
// and an assigned order never expires.
func testRetentionReads(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0")
	req := request("p1", "b1", t0, "o1", "o2")
	req.IdempotencyTTL = 30 * time.Minute
	mustDispatch(t, s, req)
	if _, _, err := complete(s, "p1", at(time.Minute), "o1"); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	before := Snapshot(t, s, "p1")
	for _, tc := range []struct {
		what  string
		read  func(now time.Time) error
		at    time.Duration
		found bool
	}{
		{"o1 at its expiry", orderAt(s, "o1"), 61 * time.Minute, true},
		{"o1 after its expiry", orderAt(s, "o1"), 61*time.Minute + time.Second, false},
		{"o1 before", orderAt(s, "o1"), 30 * time.Minute, true},
		{"o2, assigned, much later", orderAt(s, "o2"), 1000 * time.Hour, true},
		{"b1 at its expiry", batchAt(s, "b1"), time.Hour, true},
		{"b1 after its expiry", batchAt(s, "b1"), time.Hour + time.Second, false},
	} {
		err := tc.read(at(tc.at))
		if found := err == nil; found != tc.found {
			t.Errorf("%s: got %v, want found %v", tc.what, err, tc.found)
		}
		if err != nil && !errors.Is(err, dispatch.ErrOrderNotFound) && !errors.Is(err, dispatch.ErrBatchNotFound) {
			t.Errorf("%s: got %v, want a not-found error", tc.what, err)
		}
	}
	CheckUnchanged(t, s, before)
}

func orderAt(s dispatch.Store, id string) func(time.Time) error {
	return func(now time.Time) error { _, err := s.GetOrder(ctx, "p1", id, now); return err }
}

func batchAt(s dispatch.Store, id string) func(time.Time) error {
	return func(now time.Time) error { _, err := s.GetBatch(ctx, "p1", id, now); return err }
}
