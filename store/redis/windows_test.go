package redis_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestCallReplyWindow: a call's reply key lives as long as the call may
// still wait for a re-sent run's reply: until its context's deadline (and
// a second more), or, without a deadline, as long as go-redis may re-send
// (30 s and the second).
func TestCallReplyWindow(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	st := redis.New(c, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	mustPool(t, svc, "p", "A")
	for _, tc := range []struct {
		name     string
		deadline time.Duration // 0: none
		min, max time.Duration
	}{
		{"deadline 2s", 2 * time.Second, 2 * time.Second, 3 * time.Second},
		{"no deadline", 0, 30 * time.Second, 31 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			id := dispatchOne(t, svc, "p")
			if old := callKeys(t, c, "p"); len(old) > 0 {
				if err := c.Del(context.Background(), old...).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := svc.Complete(ctx, "p", []dispatch.Completion{{OrderID: id}}); err != nil {
				t.Fatal(err)
			}
			keys := callKeys(t, c, "p")
			if len(keys) != 1 {
				t.Fatalf("call keys: got %v, want one", keys)
			}
			ttl, err := c.PTTL(context.Background(), keys[0]).Result()
			if err != nil {
				t.Fatal(err)
			}
			// The TTL was measured from just before the call; allow a
			// second for the call itself on a loaded machine.
			if ttl < tc.min-time.Second || ttl > tc.max {
				t.Errorf("reply key TTL: got %s, want %s to %s", ttl, tc.min, tc.max)
			}
		})
	}
}

// TestBatchRecordWindows: a batch without an Idempotency-Key is named
// after its order and lives in the order's record, readable for the
// retention after it was made and not after (checkNamedWindow); one with a
// key is queued to leave the idempotency TTL after; and none leaves before
// a re-sent dispatch could still arrive: the call's deadline and 5 s
// (Redis's busy-reply-threshold) past it, however short the retention,
// which takes a batch of its own, queued, as it may outlast its order.
func TestBatchRecordWindows(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	for _, tc := range []struct {
		name      string
		retention time.Duration
		key       string
		deadline  time.Duration // 0: none
		queue     string
		window    time.Duration
		named     bool // (named after its order: no record of its own)
	}{
		{"no key", time.Hour, "", 0, "bexp", time.Hour, true},
		{"key", time.Hour, "k1", 0, "iexp", 2 * time.Hour, false},
		{"short retention, deadline", 100 * time.Millisecond, "", 2 * time.Second, "bexp", 7 * time.Second, false},
		{"short retention, no deadline", 100 * time.Millisecond, "", 0, "bexp", 35 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := strings.ReplaceAll(tc.name, " ", "-")
			pool = strings.ReplaceAll(pool, ",", "")
			st := redis.New(c, redis.Options{Retention: tc.retention})
			svc := dispatch.NewService(st, dispatch.Config{IdempotencyTTL: 2 * time.Hour, NoCoalesce: true})
			mustPool(t, svc, pool, "A")
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			b, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: pool, IdempotencyKey: tc.key, Fingerprint: "fp",
				Orders: []dispatch.OrderInput{{ID: "o1"}}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.named {
				checkNamedWindow(t, c, st, pool, b, tc.window)
				return
			}
			rec, err := c.HGet(ctx, poolKey(pool, "orders"), "|b"+redis.PackBatchID(b.ID)).Result()
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Split(rec, "|")
			created, _ := strconv.ParseInt(f[0], 10, 64)
			expires, _ := strconv.ParseInt(f[1], 10, 64)
			got := time.Duration(expires-created) * time.Millisecond
			// A deadline has run down a little by the time it is read.
			if got > tc.window || got < tc.window-time.Second {
				t.Errorf("batch record window: got %s, want %s (less the call's own time)", got, tc.window)
			}
			q, err := c.LRange(ctx, poolKey(pool, tc.queue), 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			// A batch without a key is queued by its id (packed,
			// batchid.go), a key by its hash (idem.go).
			want := f[1] + "|" + redis.PackBatchID(b.ID)
			if tc.key != "" {
				h := sha256.Sum256([]byte(tc.key))
				want = f[1] + "|" + string(h[:12])
			}
			if len(q) != 1 || q[0] != want {
				t.Errorf("queue %s: got %q, want [%q]", tc.queue, q, want)
			}
		})
	}
}

// checkNamedWindow checks batch b of pool, named after its order: it has
// no record and no queue entry of its own, reads back at the end of its
// window and not after it.
func checkNamedWindow(t *testing.T, c goredis.UniversalClient, st *redis.Store, pool string, b dispatch.Batch, window time.Duration) {
	t.Helper()
	ctx := context.Background()
	if !strings.HasPrefix(b.ID, "o1:") {
		t.Errorf("batch id %q, want it named after o1", b.ID)
	}
	fields, err := c.HKeys(ctx, poolKey(pool, "orders")).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if strings.HasPrefix(f, "|b") {
			t.Errorf("a named batch has a record of its own, %q", f)
		}
	}
	if n, err := c.LLen(ctx, poolKey(pool, "bexp")).Result(); err != nil || n != 0 {
		t.Errorf("batch queue: %d entries, %v; want none", n, err)
	}
	if _, err := st.GetBatch(ctx, pool, b.ID, b.CreatedAt.Add(window)); err != nil {
		t.Errorf("GetBatch at the end of its window: %v", err)
	}
	if _, err := st.GetBatch(ctx, pool, b.ID, b.CreatedAt.Add(window+time.Millisecond)); !errors.Is(err, dispatch.ErrBatchNotFound) {
		t.Errorf("GetBatch after its window: %v, want %v", err, dispatch.ErrBatchNotFound)
	}
}

// dispatchOne dispatches one order with a generated id and returns the id.
func dispatchOne(t testing.TB, svc *dispatch.Service, pool string) string {
	t.Helper()
	b, _, err := svc.Dispatch(context.Background(), dispatch.DispatchInput{Pool: pool, Orders: []dispatch.OrderInput{{}}})
	if err != nil {
		t.Fatal(err)
	}
	return b.Assignments[0].OrderID
}

// callKeys returns the reply keys of pool's calls.
func callKeys(t testing.TB, c goredis.UniversalClient, pool string) []string {
	t.Helper()
	keys, err := c.Keys(context.Background(), poolKey(pool, "call:*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
