package redis_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestOneHashOfRecords dispatches a batch of one order with an
// Idempotency-Key and a batch of two without (layouts 6 and 7; a single
// order without a key, whose batch it holds, is TestNamedBatchRecord's): the pool's
// records share the hash orders, the single order holds its batch id and
// time instead of a ref, the batch of two has one ref; each reads back
// through the store, and once every window has passed nothing is left.
func TestOneHashOfRecords(t *testing.T) {
	c, st, _ := poolOfA(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	single := dispatch.DispatchRequest{Pool: "p", BatchID: "0190d1a2-7b3c-7def-8123-456789abcdef", Now: t0,
		IdempotencyKey: "k", Fingerprint: "fp", IdempotencyTTL: time.Hour,
		Orders: []dispatch.OrderInput{{ID: "o1", Key: "a|b"}}}
	pair := dispatch.DispatchRequest{Pool: "p", BatchID: "b2", Now: t0,
		Orders: []dispatch.OrderInput{{ID: "o2"}, {ID: "o3"}}}
	for _, req := range []dispatch.DispatchRequest{single, pair} {
		if _, _, err := st.Dispatch(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	fields, err := c.HKeys(ctx, poolKey("p", "orders")).Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(fields)
	packed := redis.PackBatchID(single.BatchID)
	want := []string{"o1", "o2", "o3", "|b" + packed, "|bb2", "|i", "|oA", "|r1"}
	var got []string
	for _, f := range fields {
		if strings.HasPrefix(f, "|i") {
			f = "|i" // (the key's hash)
		}
		got = append(got, f)
	}
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("fields of orders: %q, want %q", got, want)
	}
	if len(packed) != 23 {
		t.Errorf("a UUID batch id is kept as %q, want 23 characters", packed)
	}
	rec, _ := c.HGet(ctx, poolKey("p", "orders"), "o1").Result()
	if want := fmt.Sprintf("a||A|0|%s|%d|a|b", packed, t0.UnixMilli()); rec != want {
		t.Errorf("record of the single order: %q, want %q", rec, want)
	}
	for _, id := range []string{"o1", "o2", "o3"} {
		o, err := st.GetOrder(ctx, "p", id, t0)
		wantBatch := map[bool]string{true: single.BatchID, false: pair.BatchID}[id == "o1"]
		if err != nil || o.BatchID != wantBatch || !o.AssignedAt.Equal(t0) || o.CompID != "A" {
			t.Errorf("GetOrder %s: %+v, %v; want batch %s at %v on A", id, o, err, wantBatch, t0)
		}
	}
	if b, err := st.GetBatch(ctx, "p", single.BatchID, t0); err != nil || b.ID != single.BatchID || len(b.Assignments) != 1 {
		t.Errorf("GetBatch: %+v, %v", b, err)
	}
	// A retry by batch id and a replay by key find the batch in the hash.
	if b, replayed, err := st.Dispatch(ctx, single); err != nil || replayed || b.ID != single.BatchID {
		t.Errorf("retried batch: %+v, %v, %v", b, replayed, err)
	}
	again := single
	again.BatchID = "other"
	if b, replayed, err := st.Dispatch(ctx, again); err != nil || !replayed || b.ID != single.BatchID {
		t.Errorf("replay: %+v, %v, %v; want batch %s replayed", b, replayed, err, single.BatchID)
	}
	again.Fingerprint = "changed"
	if _, _, err := st.Dispatch(ctx, again); err == nil {
		t.Error("a changed request under a held key was accepted")
	}
	for _, id := range []string{"o1", "o2", "o3"} {
		if _, err := st.Cancel(ctx, "p", id, t0); err != nil {
			t.Fatal(err)
		}
	}
	// Past every window (retention 24 h, the key's hour), calls sweep the rest.
	later := t0.Add(25 * time.Hour)
	for i := range 3 {
		if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, later.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.Exists(ctx, poolKey("p", "orders")).Result(); err != nil || n != 0 {
		left, _ := c.HKeys(ctx, poolKey("p", "orders")).Result()
		t.Errorf("orders still holds %q after every window passed", left)
	}
}

// TestSingleOrderCommands counts the Redis commands inside the FCALLs of
// single-order dispatches on a pool of 16 Scales with nothing due (INFO
// commandstats): its meta is read with one HMGET and its order, which
// holds its batch (layout 7), with its Scale's own tail in one HMGET (the
// waterfill picks the Scale first), the order and the own tail written
// with one HSET; with the waterfill's two reads and increment and meta's
// HINCRBY, seven, and now and then one more where the waterfill reads
// past a level. Then of the
// completions of 40 of them, one at a time: the order's record and its own
// tail are written with one HSET, and the order of a batch of one needs no
// ref to show its batch: 12, and an HDEL where a tail empties. A change
// that adds a command per order fails here.
func TestSingleOrderCommands(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	scales := make([]string, 16)
	for i := range scales {
		scales[i] = fmt.Sprintf("S%02d", i)
	}
	mustPool(t, svc, "p", scales...)
	ctx := context.Background()
	for range 5 { // (the first calls make the keys)
		dispatchOne(t, svc, "p")
	}
	const n = 80
	var ids []string
	per := commandsPer(t, c, n, func() {
		for range n {
			ids = append(ids, dispatchOne(t, svc, "p"))
		}
	})
	if per > 7.5 {
		t.Errorf("%.2f commands per single-order dispatch, want at most 7.5", per)
	}
	const done = 40
	per = commandsPer(t, c, done, func() {
		for _, id := range ids[:done] {
			if _, err := svc.Complete(ctx, "p", []dispatch.Completion{{OrderID: id}}); err != nil {
				t.Fatal(err)
			}
		}
	})
	if per > 12.5 {
		t.Errorf("%.2f commands per completion of one order, want at most 12.5", per)
	}
}

// commandsPer runs f, which makes calls FCALLs, and returns the Redis
// commands they ran per call (INFO commandstats, reset before).
func commandsPer(t *testing.T, c goredis.UniversalClient, calls int, f func()) float64 {
	t.Helper()
	ctx := context.Background()
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	f()
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	cmds, fcalls := 0, 0
	for _, l := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "cmdstat_"), ":")
		if !ok || strings.HasPrefix(l, "#") {
			continue
		}
		var n int
		fmt.Sscanf(rest, "calls=%d,", &n)
		switch {
		case name == "fcall":
			fcalls = n
		case name == "info" || strings.HasPrefix(name, "config"):
		default:
			cmds += n
		}
	}
	if fcalls != calls {
		t.Fatalf("%d FCALLs for %d calls", fcalls, calls)
	}
	t.Logf("%.2f commands per call (commandstats:\n%s)", float64(cmds)/float64(calls), info)
	return float64(cmds) / float64(calls)
}
