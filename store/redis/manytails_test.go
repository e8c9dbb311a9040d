package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestManyCallSharesTails sends the same batches to two Redis servers: to
// one several in each DispatchMany call, which keeps the own index's
// tails in Lua across the call's batches and writes them at its end
// (own.lua's ownPend), to the other one Dispatch call each. The replies
// and the whole keyspace must be the same after every call. The batches
// are made for the edges of what the call shares: several batches on the
// same few Scales, tails that seal in the middle of a call (a UUID-named
// batch's ids, a named batch's tokens, single orders), batches that fail
// between good ones (an order an earlier batch of the call holds, a
// repeated order id, no eligible Scale), an Idempotency-Key sent twice in
// one call, Scales that lapse or come back between two batches of a call
// (the settling each batch starts with), a Scale with a maxOrders that
// fills, and completions between calls, which read and cut the tails.
func TestManyCallSharesTails(t *testing.T) {
	ctx := context.Background()
	ca, cb, many, each := manyAndEach(t)
	stores := []*redis.Store{many, each}
	rng := rand.New(rand.NewPCG(23, 1))
	now := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	hb := 2 * time.Second
	for _, s := range stores {
		if _, _, err := s.PutPool(ctx, "p", dispatch.PoolSpec{HeartbeatTimeout: &hb}, now); err != nil {
			t.Fatal(err)
		}
	}
	scales := []string{"A", "B", "C"}
	both := func(what string, f func(s *redis.Store) (string, error)) {
		t.Helper()
		got, gerr := f(many)
		want, werr := f(each)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%s:\nmany %q, %v\neach %q, %v", what, got, gerr, want, werr)
		}
	}
	beat := func(ids ...string) {
		for _, id := range ids {
			both("Heartbeat "+id, func(s *redis.Store) (string, error) {
				sc, err := s.Heartbeat(ctx, "p", id, nil, now)
				return fmt.Sprintf("%+v", sc), err
			})
		}
	}
	for _, id := range scales {
		both("PutScale "+id, func(s *redis.Store) (string, error) {
			sc, _, err := s.PutScale(ctx, "p", id, dispatch.ScaleSpec{}, now)
			return fmt.Sprintf("%+v", sc), err
		})
	}
	var orders []string // every order dispatched
	fails := map[string]int{}
	seq := 0
	var seen struct{ failed, sealed, lapsed, replays, calls int }
	request := func(at time.Time, n int) dispatch.DispatchRequest {
		seq++
		req := dispatch.DispatchRequest{Pool: "p", Now: at, MaxCost: dispatch.DefaultMaxCost, UniqueIDs: true}
		reuse := -1 // one batch in ten has an order id used before (EXISTS while held)
		if len(orders) > 0 && rng.IntN(10) == 0 {
			reuse = rng.IntN(n)
		}
		for len(req.Orders) < n {
			seq++
			id := fmt.Sprintf("o%d", seq)
			if len(req.Orders) == reuse {
				id = orders[len(orders)-1-rng.IntN(min(len(orders), 300))]
			}
			in := dispatch.OrderInput{ID: id}
			if rng.IntN(4) == 0 {
				in.Key = fmt.Sprintf("k%d", rng.IntN(3))
			}
			req.Orders = append(req.Orders, in)
			req.Rand = append(req.Rand, rng.Uint64N(1<<53), rng.Uint64N(1<<53))
		}
		switch r := rng.IntN(10); {
		case r < 6:
			req.BatchID = fmt.Sprintf("%s:%012x", req.Orders[0].ID, seq)
		case r < 8:
			req.BatchID = fmt.Sprintf("0190a1b2-c3d4-7e5f-8a9b-%012x", seq)
		default:
			req.BatchID = fmt.Sprintf("0190a1b2-c3d4-7e5f-8a9b-%012x", seq)
			req.IdempotencyKey, req.Fingerprint, req.IdempotencyTTL = fmt.Sprintf("key-%d", seq), "fp", 2*time.Hour
		}
		return req
	}
	for step := range 60 {
		k := 2 + rng.IntN(4)
		reqs := make([]dispatch.DispatchRequest, 0, k)
		at := now
		for range k {
			n := 2 + rng.IntN(40)
			switch rng.IntN(6) {
			case 0, 1:
				n = 1
			case 2: // (a token that stands for many orders: a tail sealed by w)
				n = 100 + rng.IntN(100)
			}
			req := request(at, n)
			switch rng.IntN(12) {
			case 0: // an order of an earlier batch of the call: EXISTS
				if len(reqs) > 0 {
					prev := reqs[rng.IntN(len(reqs))]
					req.Orders[len(req.Orders)-1].ID = prev.Orders[0].ID
				}
			case 1: // the Idempotency-Key of an earlier batch: a replay
				if len(reqs) > 0 && reqs[len(reqs)-1].IdempotencyKey != "" {
					req = reqs[len(reqs)-1]
					seen.replays++
				}
			case 2: // a repeated order id: DUP
				if len(req.Orders) > 1 {
					req.Orders[1].ID = req.Orders[0].ID
					req.UniqueIDs = false
				}
			}
			reqs = append(reqs, req)
			at = at.Add(400 * time.Millisecond) // (a lease may run out between two batches)
		}
		// Scale C misses its heartbeats now and then: it lapses inside a
		// call, or comes back between calls.
		beat("A", "B")
		if rng.IntN(4) > 0 {
			beat("C")
		} else {
			seen.lapsed++
		}
		if step == 20 { // a Scale with a maxOrders: the plan of every batch, NOELIG when full
			max := int64(30)
			both("PutScale D", func(s *redis.Store) (string, error) {
				sc, _, err := s.PutScale(ctx, "p", "D", dispatch.ScaleSpec{MaxOrders: &max}, now)
				return fmt.Sprintf("%+v", sc), err
			})
		}
		if step == 40 {
			both("DeleteScale D", func(s *redis.Store) (string, error) {
				return "", s.DeleteScale(ctx, "p", "D", true, now)
			})
		}
		sealedBefore := len(sealedChunks(t, ca))
		got := many.DispatchMany(ctx, reqs)
		seen.calls++
		for i, req := range reqs {
			b, replayed, err := each.Dispatch(ctx, req)
			want := fmt.Sprintf("%+v %v %v", b, replayed, err)
			if g := fmt.Sprintf("%+v %v %v", got[i].Batch, got[i].Replayed, got[i].Err); g != want {
				t.Fatalf("step %d, batch %d of %d (%s, %d orders):\nmany %s\neach %s", step, i, len(reqs), req.BatchID, len(req.Orders), g, want)
			}
			if err != nil {
				seen.failed++
				fails[strings.SplitN(err.Error(), ":", 2)[0]]++
			} else if !replayed {
				for _, o := range req.Orders {
					orders = append(orders, o.ID)
				}
			}
		}
		now = at
		sameKeyspace(t, ca, cb, fmt.Sprintf("step %d", step))
		if len(sealedChunks(t, ca)) > sealedBefore {
			seen.sealed++
		}
		// some orders complete, from the chunks and the tails alike
		var done []dispatch.Completion
		for range rng.IntN(40) {
			if len(orders) > 0 {
				done = append(done, dispatch.Completion{OrderID: orders[rng.IntN(len(orders))]})
			}
		}
		slices.SortFunc(done, func(a, b dispatch.Completion) int { return strings.Compare(a.OrderID, b.OrderID) })
		done = slices.CompactFunc(done, func(a, b dispatch.Completion) bool { return a.OrderID == b.OrderID })
		both("Complete", func(s *redis.Store) (string, error) {
			os, n, err := s.Complete(ctx, "p", done, now)
			return fmt.Sprintf("%d %v", n, len(os)), err
		})
		if step%5 == 4 {
			sameKeyspace(t, ca, cb, fmt.Sprintf("step %d, completed", step))
			checkOwnIndex(t, ca, many, "p")
		}
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
	}
	t.Logf("failures: %v", fails)
	t.Logf("%d calls, %d batches failed, %d calls sealed a chunk, %d replays sent, C silent %d times", seen.calls, seen.failed, seen.sealed, seen.replays, seen.lapsed)
	if seen.failed == 0 || seen.sealed == 0 || seen.replays == 0 || seen.lapsed == 0 {
		t.Errorf("the walk should fail batches, seal chunks, replay keys and lapse a Scale: %+v", seen)
	}
	// (C lapsed and came back, which the dispatches noticed first)
	journal := strings.Join(ca.LRange(ctx, poolKey("p", "journal"), 0, -1).Val(), " ")
	if !strings.Contains(journal, "C|u|l|") || !strings.Contains(journal, "C|l|u|") {
		t.Errorf("journal %q: C should have lapsed and come back", journal)
	}
}

// manyAndEach starts two Redis servers with a Store of an hour's
// retention on each: many, to be given several batches a DispatchMany
// call, and each, to be given the same batches one Dispatch call each.
func manyAndEach(t *testing.T) (ca, cb goredis.UniversalClient, many, each *redis.Store) {
	ca, cb = newClient(t, redistest.Start(t)), newClient(t, redistest.Start(t))
	return ca, cb, redis.New(ca, redis.Options{Retention: time.Hour}), redis.New(cb, redis.Options{Retention: time.Hour})
}

// sealedChunks returns the own index's sealed chunks' fields.
func sealedChunks(t *testing.T, c goredis.UniversalClient) []string {
	var out []string
	for f := range ownFields(t, c, "p") {
		if strings.Contains(f, " ") {
			out = append(out, f)
		}
	}
	return out
}

// sameKeyspace fails unless the two Redis servers hold the same keys with
// the same contents.
func sameKeyspace(t *testing.T, a, b goredis.UniversalClient, when string) {
	t.Helper()
	da, db := dumpKeyspace(t, a), dumpKeyspace(t, b)
	if da == db {
		return
	}
	la, lb := strings.Split(da, "\n"), strings.Split(db, "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			t.Fatalf("%s: the keyspaces differ at line %d:\nmany %q\neach %q", when, i, x, y)
		}
	}
}

// dumpKeyspace writes every key of a Redis server and its contents, one
// line a member, sorted, but for the calls' replies.
func dumpKeyspace(t *testing.T, c goredis.UniversalClient) string {
	ctx := context.Background()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, k := range keys {
		if strings.Contains(k, ":call:") {
			continue // (a call's reply, under a random token: lib.lua's callPut)
		}
		typ := c.Type(ctx, k).Val()
		switch typ {
		case "hash":
			for f, v := range c.HGetAll(ctx, k).Val() {
				lines = append(lines, k+" "+f+" = "+v)
			}
		case "zset":
			for i, z := range c.ZRangeWithScores(ctx, k, 0, -1).Val() {
				lines = append(lines, fmt.Sprintf("%s %06d %v %v", k, i, z.Member, z.Score))
			}
		case "list":
			for i, v := range c.LRange(ctx, k, 0, -1).Val() {
				lines = append(lines, fmt.Sprintf("%s %06d %s", k, i, v))
			}
		case "string":
			lines = append(lines, k+" = "+c.Get(ctx, k).Val())
		default:
			lines = append(lines, k+" "+typ)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
