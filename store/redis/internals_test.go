package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// These tests look at the keys of the schema in doc.go, which the
// conformance suite cannot see: the own index, the batch refs, the queues.

func poolKey(pool, name string) string { return "dispatch:{pool:" + pool + "}:" + name }

// ownFields returns the own index of pool (its fields of the hash of
// records that begin with "|o"), by field without the prefix.
func ownFields(t testing.TB, c goredis.UniversalClient, pool string) map[string]string {
	t.Helper()
	all, err := c.HGetAll(context.Background(), poolKey(pool, "orders")).Result()
	if err != nil {
		t.Fatalf("HGETALL orders: %v", err)
	}
	own := map[string]string{}
	for f, v := range all {
		if rest, ok := strings.CutPrefix(f, "|o"); ok {
			own[rest] = v
		}
	}
	return own
}

// records counts the records of pool's one hash of records (layout 6) by
// kind: "orders" (fields without a '|' prefix), "batches" ("|b"), "refs"
// ("|r"), "keys" ("|i", Idempotency-Keys) and "own" ("|o", the own index).
func records(t testing.TB, c goredis.UniversalClient, pool string) map[string]int64 {
	t.Helper()
	fields, err := c.HKeys(context.Background(), poolKey(pool, "orders")).Result()
	if err != nil {
		t.Fatalf("HKEYS orders: %v", err)
	}
	n := map[string]int64{}
	for _, f := range fields {
		kind := "orders"
		if strings.HasPrefix(f, "|") && len(f) > 1 {
			kind = map[byte]string{'b': "batches", 'r': "refs", 'i': "keys", 'o': "own"}[f[1]]
		}
		n[kind]++
	}
	return n
}

// checkOwnIndex checks that each Scale's own index lists exactly its
// assigned orders, each once, in the chunk its record names: by its id, or
// by its batch's token, whose count is the number of the batch's orders
// still there through it (own.lua); and that its sealed chunks form one
// list, linked both ways, from the lowest chunk, which holds an order, to
// the tail.
func checkOwnIndex(t testing.TB, c goredis.UniversalClient, st dispatch.Store, pool string) {
	t.Helper()
	ctx := context.Background()
	fields := ownFields(t, c, pool)
	// ptr reads a pointer of an index ('' is def).
	ptr := func(s string, def int64) int64 {
		if s == "" {
			return def
		}
		v, err := strconv.ParseInt(s, 16, 64)
		if err != nil {
			t.Fatalf("own index pointer %q", s)
		}
		return v
	}
	listed := make(map[string]int64)
	seen := make(map[string]bool) // the orders listed, each once
	type tail struct{ ct, cl, p int64 }
	type sealed struct{ p, n int64 }
	tails := make(map[string]tail)
	chunks := make(map[string]map[int64]sealed)
	orders := poolKey(pool, "orders")
	for field, v := range fields {
		comp, chunk, isSealed := strings.Cut(field, " ")
		var list string
		if !isSealed {
			// the tail: "ct|cl|p|e,e,…," (no ".w" since own24)
			f := strings.SplitN(v, "|", 4)
			if len(f) != 4 || strings.Contains(f[2], ".") {
				t.Fatalf("own index tail of %s: %q", comp, v)
			}
			ct, cerr := strconv.ParseInt(f[0], 16, 64)
			cl, lerr := strconv.ParseInt(f[1], 16, 64)
			if cerr != nil || lerr != nil || cl > ct {
				t.Fatalf("own index tail of %s: %q", comp, v)
			}
			tails[comp] = tail{ct, cl, ptr(f[2], ct-1)}
			chunk, list = f[0], f[3]
		} else {
			// a sealed chunk: "p|n|e,e,…,", never empty
			f := strings.SplitN(v, "|", 3)
			x, err := strconv.ParseInt(chunk, 16, 64)
			if len(f) != 3 || err != nil || f[2] == "" {
				t.Fatalf("own index chunk %q: %q", field, v)
			}
			if chunks[comp] == nil {
				chunks[comp] = make(map[int64]sealed)
			}
			chunks[comp][x] = sealed{ptr(f[0], x-1), ptr(f[1], x+1)}
			list = f[2]
		}
		if list == "" {
			continue
		}
		// A tail is sealed before an entry joins it once its entries (an
		// id) or its value (a token) reach 256 bytes: all but the last
		// entry of a chunk are less.
		if last := strings.LastIndex(strings.TrimSuffix(list, ","), ","); last >= 256 {
			t.Errorf("own index of %s: chunk %s holds %d bytes before its last entry: %q", comp, chunk, last+1, list)
		}
		entries := strings.Split(strings.TrimSuffix(list, ","), ",")
		for ei, e := range entries {
			// an order's id, or a token "~ref.k" of k orders of a batch
			ids, ref, k := []string{e}, "", int64(1)
			if tok, ok := strings.CutPrefix(e, "~"); ok {
				r, ks, _ := strings.Cut(tok, ".")
				ref, k = r, ptr(ks, 0)
				// A token of 16 orders or more (OWNK; its k only falls
				// as its orders leave) sealed its tail as it joined: it
				// is the last entry of a sealed chunk.
				if k >= 16 && (!isSealed || ei != len(entries)-1) {
					t.Errorf("own index of %s: token %s of %d orders is not the last entry of a sealed chunk: chunk %s %q", comp, e, k, chunk, list)
				}
				// "compId,…,compId,|orderId,…,orderId" (layout 9)
				pairs, err := c.HGet(ctx, orders, "|p"+ref).Result()
				if err != nil || k <= 0 {
					t.Fatalf("own index of %s: token %s of assignments %q: %v", comp, e, pairs, err)
				}
				cs, ds, ok := strings.Cut(pairs, ",|")
				cf, df := strings.Split(cs, ","), strings.Split(ds, ",")
				if !ok || len(cf) != len(df) {
					t.Fatalf("own index of %s: token %s of assignments %q: not as many Scales as ids", comp, e, pairs)
				}
				ids = nil
				for i := range cf {
					if cf[i] == comp {
						ids = append(ids, df[i])
					}
				}
			}
			recs, err := c.HMGet(ctx, orders, ids...).Result()
			if err != nil {
				t.Fatalf("HMGET orders: %v", err)
			}
			var n int64
			for i, rec := range recs {
				// "<state><ref>[+moves]|doneAt|compId|chunk|key"
				f := strings.SplitN(fmt.Sprint(rec), "|", 5)
				if len(f) != 5 || f[0][0] != 'a' || f[2] != comp {
					if ref == "" {
						t.Fatalf("own index of %s lists %s in chunk %s: record %v", comp, ids[i], chunk, rec)
					}
					continue // (a token's order that has left)
				}
				head, moved := f[0][1:], strings.Contains(f[0], "+")
				byToken := head != "" && !moved && !strings.HasPrefix(f[3], ".")
				if ref != "" {
					if !byToken || head != ref || f[3] != chunk {
						continue // (moved since, or back by its own id)
					}
				} else if byToken || strings.TrimPrefix(f[3], ".") != chunk {
					t.Fatalf("own index of %s lists %s by its id in chunk %s: record %v", comp, ids[i], chunk, rec)
				}
				if seen[ids[i]] {
					t.Fatalf("own index lists %s twice (%s, chunk %s)", ids[i], comp, chunk)
				}
				seen[ids[i]] = true
				n++
			}
			if n != k {
				t.Fatalf("own index of %s: entry %s of chunk %s stands for %d assigned orders, want %d", comp, e, chunk, n, k)
			}
			listed[comp] += n
		}
	}
	// The sealed chunks of a Scale are one list from cl to the tail: n
	// leads from each to the next, p back, and nothing lies outside it.
	for comp, cs := range chunks {
		tl, ok := tails[comp]
		if !ok {
			t.Errorf("own index holds chunks of %s without a tail", comp)
			continue
		}
		prev, walked := tl.cl-1, 0
		for x := tl.cl; x < tl.ct; walked++ {
			sc, ok := cs[x]
			if !ok || walked > len(cs) {
				t.Errorf("scale %s: the walk from %x reaches chunk %x, which it does not hold (tail %+v)", comp, tl.cl, x, tl)
				break
			}
			if sc.p != prev && (prev >= tl.cl || sc.p >= tl.cl) {
				t.Errorf("scale %s: chunk %x points back to %x, want %x", comp, x, sc.p, prev)
			}
			if sc.n <= x {
				t.Errorf("scale %s: chunk %x points on to %x", comp, x, sc.n)
				break
			}
			prev, x = x, sc.n
		}
		if walked != len(cs) {
			t.Errorf("scale %s: the walk reads %d chunks, the index holds %d (tail %+v)", comp, walked, len(cs), tl)
		}
		if tl.p != prev && (prev >= tl.cl || tl.p >= tl.cl) {
			t.Errorf("scale %s: the tail points back to %x, want %x", comp, tl.p, prev)
		}
	}
	for comp, tl := range tails {
		if _, ok := chunks[comp][tl.cl]; tl.cl < tl.ct && !ok {
			t.Errorf("scale %s: lowest chunk %d (tail %d) holds no order", comp, tl.cl, tl.ct)
		}
	}
	scales, _, err := st.ListScales(ctx, pool, dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil {
		t.Fatalf("ListScales: %v", err)
	}
	for _, sc := range scales {
		if listed[sc.CompID] != sc.Outstanding {
			t.Errorf("own index of %s lists %d orders, want outstanding %d", sc.CompID, listed[sc.CompID], sc.Outstanding)
		}
		delete(listed, sc.CompID)
		delete(tails, sc.CompID)
	}
	for comp, n := range listed {
		t.Errorf("own index lists %d orders of %s, which is not registered", n, comp)
	}
	for comp := range tails {
		t.Errorf("own index keeps the tail of %s, which is not registered", comp)
	}
}

// poolOfA starts a Redis with pool "p" of one Scale, "A".
func poolOfA(t *testing.T) (goredis.UniversalClient, *redis.Store, *dispatch.Service) {
	t.Helper()
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	mustPool(t, svc, "p", "A")
	return c, st, svc
}

// TestLowestChunkAfterTailEmptied fills a Scale's first chunks, completes
// every order in them (the sealed chunks go, and the lowest chunk is the
// tail), and dispatches again: the walk must start at the tail.
func TestLowestChunkAfterTailEmptied(t *testing.T) {
	c, st, svc := poolOfA(t)
	ctx := context.Background()
	in := dispatch.DispatchInput{Pool: "p", Orders: make([]dispatch.OrderInput, 64)} // two sealed chunks and a tail
	b, _, err := svc.Dispatch(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	var done []dispatch.Completion
	for _, a := range b.Assignments {
		done = append(done, dispatch.Completion{OrderID: a.OrderID})
	}
	if _, err := svc.Complete(ctx, "p", done); err != nil {
		t.Fatal(err)
	}
	checkOwnIndex(t, c, st, "p")
	if _, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: make([]dispatch.OrderInput, 3)}); err != nil {
		t.Fatal(err)
	}
	checkOwnIndex(t, c, st, "p")
	page, _, err := svc.ListScaleOrders(ctx, "p", "A", dispatch.Page{})
	if err != nil || len(page) != 3 {
		t.Fatalf("ListScaleOrders: %d orders, %v; want the 3 outstanding", len(page), err)
	}
}

// TestOwnIndexAndForceDelete fills several chunks of one Scale's own index,
// finishes orders out of order, and force-deletes the Scale: every order
// still assigned is cancelled, and the index is empty.
func TestOwnIndexAndForceDelete(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	st := redis.New(c, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	ctx := context.Background()
	mustPool(t, svc, "p", "A", "B")
	var ids []string
	for b := range 6 {
		in := dispatch.DispatchInput{Pool: "p"}
		for j := range 50 {
			id := fmt.Sprintf("o%d-%d", b, j)
			in.Orders = append(in.Orders, dispatch.OrderInput{ID: id})
			ids = append(ids, id)
		}
		if _, _, err := svc.Dispatch(ctx, in); err != nil {
			t.Fatal(err)
		}
		checkOwnIndex(t, c, st, "p")
	}
	// Finish the oldest orders (the low chunks empty) and a scattering.
	for i, id := range ids {
		if i < 140 || i%7 == 0 {
			if _, err := svc.CompleteOrder(ctx, "p", id, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkOwnIndex(t, c, st, "p")
	a, err := st.GetScale(ctx, "p", "A")
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteScale(ctx, "p", "A", false); err == nil {
		t.Fatalf("DeleteScale of a busy Scale without force: no error")
	}
	if err := svc.DeleteScale(ctx, "p", "A", true); err != nil {
		t.Fatalf("DeleteScale with force: %v", err)
	}
	var cancelled int64
	for _, id := range ids {
		o, err := st.GetOrder(ctx, "p", id, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if o.CompID == "A" && o.State == dispatch.Assigned {
			t.Fatalf("order %s still assigned to the deleted Scale", id)
		}
		if o.State == dispatch.Cancelled {
			cancelled++
		}
	}
	if cancelled != a.Outstanding {
		t.Errorf("cancelled %d orders, want A's %d outstanding", cancelled, a.Outstanding)
	}
	checkOwnIndex(t, c, st, "p")
	for f := range ownFields(t, c, "p") {
		if f == "A" || strings.HasPrefix(f, "A ") {
			t.Errorf("own index keeps field %q of the deleted Scale", f)
		}
	}
}

// TestNothingLeaks finishes every order and lets retention, batch and key
// lifetimes pass: a few mutating calls later, the pool holds its Scales and
// nothing else, and a dry run leaves no scratch key.
func TestNothingLeaks(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	st := redis.New(c, redis.Options{Retention: time.Hour})
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, _, err := st.PutPool(ctx, "p", dispatch.PoolSpec{}, t0); err != nil {
		t.Fatal(err)
	}
	max := int64(3)
	for _, id := range []string{"A", "B", "C"} {
		if _, _, err := st.PutScale(ctx, "p", id, dispatch.ScaleSpec{MaxOrders: &max}, t0); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for b := range 3 {
		req := dispatch.DispatchRequest{Pool: "p", BatchID: fmt.Sprintf("b%d", b), Now: t0,
			IdempotencyKey: fmt.Sprintf("k%d", b), Fingerprint: "fp", IdempotencyTTL: 24 * time.Hour}
		for j := range 3 {
			id := fmt.Sprintf("o%d-%d", b, j)
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: id, Key: "key|with|bars"})
			ids = append(ids, id)
		}
		if b == 1 {
			dry := req
			dry.DryRun, dry.BatchID, dry.IdempotencyKey = true, "", ""
			dry.Orders = append(dry.Orders, dry.Orders...)[:5] // crosses a full Scale
			for j := range dry.Orders {
				dry.Orders[j].ID = fmt.Sprintf("dry%d", j)
			}
			if _, _, err := st.Dispatch(ctx, dry); err != nil {
				t.Fatalf("dry run: %v", err)
			}
		}
		if _, _, err := st.Dispatch(ctx, req); err != nil {
			t.Fatalf("Dispatch %d: %v", b, err)
		}
	}
	if n, _ := c.Exists(ctx, poolKey("p", "tmp")).Result(); n != 0 {
		t.Errorf("a dry run left its scratch key")
	}
	o, err := st.GetOrder(ctx, "p", "o0-0", time.Now())
	if err != nil || o.Key != "key|with|bars" || o.BatchID != "b0" || !o.AssignedAt.Equal(t0) {
		t.Fatalf("GetOrder: %+v, %v", o, err)
	}
	if _, err := st.Cancel(ctx, "p", ids[0], t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var cs []dispatch.Completion
	for _, id := range ids[1:] {
		cs = append(cs, dispatch.Completion{OrderID: id})
	}
	if _, _, err := st.Complete(ctx, "p", cs, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(25 * time.Hour)
	for i := range 3 {
		if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, later.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"orders", "oexp", "bexp", "iexp", "tmp"} {
		if n, _ := c.Exists(ctx, poolKey("p", k)).Result(); n != 0 {
			v, _ := c.Do(ctx, "DUMP", poolKey("p", k)).Text()
			t.Errorf("%s still holds data after every lifetime passed (%q)", k, v)
		}
	}
	checkOwnIndex(t, c, st, "p")
}

// TestEarlierLayoutRefused dispatches into a pool whose meta lacks the
// layout field, as pools written by builds before it have: the dispatch
// fails naming the layout, and the pool is left as it was.
func TestEarlierLayoutRefused(t *testing.T) {
	c, _, svc := poolOfA(t)
	ctx := context.Background()
	if err := c.HDel(ctx, poolKey("p", "meta"), "lv").Err(); err != nil {
		t.Fatal(err)
	}
	before, err := c.HGetAll(ctx, poolKey("p", "meta")).Result()
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o-1"}}})
	if err == nil || !strings.Contains(err.Error(), "layout of an earlier build") {
		t.Fatalf("Dispatch into a pool of an earlier layout: %v, want the layout named", err)
	}
	after, _ := c.HGetAll(ctx, poolKey("p", "meta")).Result()
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("meta changed: %v, was %v", after, before)
	}
	if n := records(t, c, "p")["orders"]; n != 0 {
		t.Errorf("%d orders stored", n)
	}
}

// TestCursorPastEmptiedIndex pages a Scale's orders with a cursor in a high
// chunk, lets every order complete (the index goes and the chunks count
// from 0 again) and dispatches anew: the old cursor names a chunk past the
// new tail, and the next page starts over rather than coming back empty.
func TestCursorPastEmptiedIndex(t *testing.T) {
	_, _, svc := poolOfA(t)
	ctx := context.Background()
	var done []dispatch.Completion
	for b := range 3 {
		in := dispatch.DispatchInput{Pool: "p"}
		for j := range 40 {
			id := fmt.Sprintf("order-%d-%02d", b, j)
			in.Orders = append(in.Orders, dispatch.OrderInput{ID: id})
			done = append(done, dispatch.Completion{OrderID: id})
		}
		if _, _, err := svc.Dispatch(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	page, cursor, err := svc.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: 100})
	if err != nil || len(page) != 100 || cursor == "" {
		t.Fatalf("first page: %d orders, cursor %q, %v", len(page), cursor, err)
	}
	if _, err := svc.Complete(ctx, "p", done); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "new-1"}, {ID: "new-2"}}}); err != nil {
		t.Fatal(err)
	}
	page, next, err := svc.ListScaleOrders(ctx, "p", "A", dispatch.Page{Cursor: cursor, Limit: 100})
	if err != nil || len(page) != 2 || next != "" || page[0].ID != "new-1" || page[1].ID != "new-2" {
		t.Fatalf("page after the index emptied: %+v, next %q, %v; want new-1 and new-2", page, next, err)
	}
}
