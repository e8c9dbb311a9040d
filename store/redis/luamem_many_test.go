package redis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestLuaHeapKeepsNoCoalescedBatch is TestLuaHeapKeepsNoBatch for calls
// of several batches (dispatch_many.lua, the coalescer's): four calls,
// each of a batch named after its first order, a batch with a batch id and
// a batch with order keys and an Idempotency-Key, about 3,000 orders each
// with 100-byte ids and keys, each call's batches one order smaller than
// the last call's (a table that keeps what lies past a batch's n keeps one
// more each call); then only calls of one small batch, which run no code
// of dispatch_many.lua and write over nothing that a call of several
// keeps. The functions' Lua memory (used_memory_vm_functions) may not
// have grown by a quarter of what one of the big calls sent: a table that
// dispatch_many.lua or what it calls keeps from call to call (a call's
// pending tails, its records list) may keep what a batch made (its ids,
// its records' strings) only until the call ends.
func TestLuaHeapKeepsNoCoalescedBatch(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{Retention: time.Hour})
	svc := dispatch.NewService(st, dispatch.Config{})
	ctx := context.Background()
	putWaterfillPool(t, svc, "p", scaleNames(16))
	request := func(ids, keys []string) dispatch.DispatchRequest {
		req := dispatch.DispatchRequest{Pool: "p", Now: time.Now(), UniqueIDs: true, MaxCost: dispatch.DefaultMaxCost,
			Orders: make([]dispatch.OrderInput, len(ids))}
		for i, id := range ids {
			req.Orders[i].ID = id
			if keys != nil {
				req.Orders[i].Key = keys[i]
			}
		}
		return req
	}
	named := func(ids []string) dispatch.DispatchRequest {
		req := request(ids, nil)
		if req.BatchID = st.BatchID(req); req.BatchID == "" {
			t.Fatal("the batch is not named after its first order")
		}
		return req
	}
	many := func(reqs ...dispatch.DispatchRequest) {
		t.Helper()
		for i, r := range st.DispatchMany(ctx, reqs) {
			if r.Err != nil || len(r.Batch.Assignments) != len(reqs[i].Orders) {
				t.Fatalf("batch %d of %d orders: %d assignments, %v", i, len(reqs[i].Orders), len(r.Batch.Assignments), r.Err)
			}
		}
	}
	small := func(tag string, k int) {
		t.Helper()
		for i := range k {
			if _, _, err := st.Dispatch(ctx, named([]string{fmt.Sprintf("%s-%d-a", tag, i), fmt.Sprintf("%s-%d-b", tag, i)})); err != nil {
				t.Fatal(err)
			}
		}
	}
	long := func(kind string, call, o int) string {
		return fmt.Sprintf("%s-%s-%03d-%05d", strings.Repeat("x", 90), kind, call, o)
	}

	// (every path of a call of several, with small batches first: what a
	// kept table needs for itself is there before the measure starts)
	for i := range 50 {
		b := request([]string{fmt.Sprintf("wb-%d-a", i), fmt.Sprintf("wb-%d-b", i)}, nil)
		b.BatchID = fmt.Sprintf("wb-%d", i)
		k := request([]string{fmt.Sprintf("wk-%d-a", i), fmt.Sprintf("wk-%d-b", i)}, []string{"ka", "kb"})
		k.BatchID = fmt.Sprintf("wk-%d", i)
		many(named([]string{fmt.Sprintf("wn-%d-a", i), fmt.Sprintf("wn-%d-b", i)}), b, k)
	}
	small("warm", 500)
	before := luaMemory(t, c)
	sent := 0
	const calls = 4
	for call := range calls {
		var reqs []dispatch.DispatchRequest
		for _, kind := range []string{"n", "b", "k"} {
			ids, keys := make([]string, 3000-call), make([]string, 3000-call)
			for o := range ids {
				ids[o], keys[o] = long(kind, call, o), long(kind+"key", call, o)
				sent += len(ids[o]) + 1
			}
			switch kind {
			case "n":
				reqs = append(reqs, named(ids))
			case "b":
				r := request(ids, nil)
				r.BatchID = fmt.Sprintf("b-%d", call)
				reqs = append(reqs, r)
			default:
				r := request(ids, keys)
				r.BatchID = fmt.Sprintf("k-%d", call)
				r.IdempotencyKey, r.Fingerprint, r.IdempotencyTTL = fmt.Sprintf("key-%d", call), "fp", time.Hour
				for _, k := range keys {
					sent += len(k) + 1
				}
				reqs = append(reqs, r)
			}
		}
		many(reqs...)
	}
	small("after", 2000)
	// (a table kept from call to call holds one call's batches at most:
	// a quarter of what one call sent)
	if grew, most := luaMemory(t, c)-before, int64(sent)/calls/4; grew > most {
		t.Errorf("the functions' Lua memory grew by %d bytes after %d calls that sent %d bytes of ids and keys, want under %d", grew, calls, sent, most)
	}
}
