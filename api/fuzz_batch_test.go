package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// fuzzOrder is an order of a batch body as the model reads it.
type fuzzOrder struct {
	id, key string
}

// batchModel reads a batch body: its orders and its verdicts, and whether
// the orders could be read at all.
func batchModel(body []byte) ([]fuzzOrder, []verdict, bool) {
	root, bad := parseJSONObject(body)
	if root == nil {
		return nil, bad, false
	}
	bad = append(bad, unknownMembers(root, "orders")...)
	raw, ok := root["orders"]
	if !ok {
		return nil, bad, true
	}
	elems, ok := raw.([]any)
	if !ok {
		return nil, append(bad, verdict{400, "wrong-type"}), false
	}
	orders, read := make([]fuzzOrder, 0, len(elems)), true
	for _, e := range elems {
		obj, ok := e.(map[string]any)
		if !ok {
			bad, read = append(bad, verdict{400, "wrong-type"}), false
			continue
		}
		bad = append(bad, unknownMembers(obj, "id", "key")...)
		var o fuzzOrder
		if v, ok := obj["id"]; ok {
			s, vd := text(v)
			if bad = appendIf(bad, vd); vd == nil && s == "" {
				bad = append(bad, verdict{400, "invalid-id"}) // present, it must not be empty
			}
			o.id = s
		}
		if v, ok := obj["key"]; ok {
			s, vd := text(v)
			if bad = appendIf(bad, vd); vd == nil && s == "" {
				bad = append(bad, verdict{422, "invalid-key"})
			}
			o.key = s
		}
		orders = append(orders, o)
	}
	return orders, bad, read
}

// FuzzDecodeBatch sends POST /v1/pools/{pool}/batches with an arbitrary
// pool, query, Idempotency-Key, Content-Type and body. A request without
// violations is dispatched: 201 (200 for dryRun=true) with every order
// assigned exactly once, in request order, where waterfill puts it, and the
// store holding exactly that; a repeat with its Idempotency-Key replays it.
// Sent again, the batch the server set up with Idempotency-Key k-used is
// replayed; anything else with that key is 422. Every refusal is one of the
// request's violations and changes nothing, not even the key.
func FuzzDecodeBatch(f *testing.F) {
	asJSON := uint8(0)
	f.Add("p", "", "", []byte(`{"orders":[{"id":"o-1","key":"cust-9"},{"id":"o-2"},{}]}`), asJSON)
	f.Add("p", "dryRun=true", "", []byte(`{"orders":[{"id":"o-1"},{"id":"o-2"}]}`), asJSON)
	f.Add("p", "", "k-1", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON|flagKey)
	f.Add("p", "", "k-used", []byte(`{"orders": [{"id": "held", "key": "cust-1"}]}`), asJSON|flagKey) // the replay
	f.Add("p", "", "k-used", []byte(`{"orders":[{"id":"held","key":"cust-1"}]}`), asJSON|flagKey)     // another body
	f.Add("p", "", "k-1", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON|flagKey|flagKeyTwice)
	f.Add("p", "dryRun=true", "k-1", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON|flagKey)
	f.Add("p", "dryRun=yes", "", []byte(`{"orders":[{}]}`), asJSON)
	f.Add("p", "dryRun=true&dryRun=false", "", []byte(`{"orders":[{}]}`), asJSON)
	f.Add("p", "dryrun=true", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)             // 400: not dryRun
	f.Add("p", "", "", []byte(`{"orders":[{"id":"held"}]}`), asJSON)                       // 409
	f.Add("idle", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)                     // 409: no eligible Scale
	f.Add("full", "", "", []byte(`{"orders":[{"id":"a"},{"id":"b"},{"id":"c"}]}`), asJSON) // 409: no room
	f.Add("full", "", "", []byte(`{"orders":[{"id":"a"},{"id":"b"}]}`), asJSON)            // room for 2
	f.Add("nope", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)                     // 404
	f.Add("a/b", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)                      // 400: the pool id
	f.Add("%70", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)                      // the pool "%70" is not "p"
	f.Add("", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)
	f.Add("p", "", "", []byte(``), asJSON)                                                    // 422: no orders
	f.Add("p", "", "", []byte(" \t\r\n"), asJSON)                                             // 400: white space alone
	f.Add("p", "", "", []byte("\f"), asJSON)                                                  // not JSON whitespace
	f.Add("p", "", "", []byte(`{"orders":[]}`), asJSON)                                       // 422
	f.Add("p", "", "", []byte(`{"orders":[{},{},{},{},{},{},{},{},{}]}`), asJSON)             // 422: 9 orders
	f.Add("p", "", "", []byte(`{"orders":[{"id":"a"},{"id":"a"}]}`), asJSON)                  // 422: repeated
	f.Add("p", "", "", []byte(`{"orders":[{"id":""}]}`), asJSON)                              // 400
	f.Add("p", "", "", []byte(`{"orders":[{"key":""}]}`), asJSON)                             // 422
	f.Add("p", "", "", []byte(`{"orders":[{"key":"`+strings.Repeat("k", 257)+`"}]}`), asJSON) // 422
	f.Add("p", "", "", []byte(`{"orders":[{"id":"a\n"}]}`), asJSON)                           // 400
	f.Add("p", "", "", []byte(`{"orders":[{"id":"\u0061"}]}`), asJSON)                        // an escaped valid id
	f.Add("p", "", "", []byte(`{"orders":[{"id":"o-1"}],"orders":[{"id":5}]}`), asJSON)       // a member given twice
	f.Add("p", "", "", []byte(`{"orders":[{"id":"o-1","x":1}]}`), asJSON)                     // 400: unknown field
	f.Add("p", "", "", []byte(`{"Orders":[]}`), asJSON)                                       // 400: names are case-sensitive
	f.Add("p", "", "", []byte(`{"orders":[{"id":null}]}`), asJSON)                            // 400: wrong type
	f.Add("p", "", "", []byte(`{"orders":[1]}`), asJSON)                                      // 400: wrong type
	f.Add("p", "", "", []byte(`[]`), asJSON)                                                  // 400: wrong type
	f.Add("p", "", "", []byte(`{"orders":[{"id":"o-1"}]} {}`), asJSON)                        // 400: trailing data
	f.Add("p", "", "", []byte(`{"orders":[{"id":"o-1"},]}`), asJSON)                          // 400: malformed
	f.Add("p", "", "", []byte(strings.Repeat("[", 33)+strings.Repeat("]", 33)), asJSON)       // 400: too deep
	f.Add("p", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), uint8(4))                         // 415: no Content-Type
	f.Add("p", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), uint8(5))                         // 415: text/plain
	f.Add("p", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), uint8(2))                         // media types are case-insensitive
	f.Add("p", "", "", bytes.Repeat([]byte(" "), fuzzMaxBody+1), asJSON)                      // 413
	f.Add("p", "", "", bytes.Repeat([]byte(" "), fuzzMaxBody+1), asJSON|flagHideLength)       // 413, found reading
	f.Fuzz(func(t *testing.T, pool, rawQuery, key string, body []byte, flags uint8) {
		s := newFuzzServer(t)
		r := s.request("POST", poolPathFor(pool, "/batches"), rawQuery, body, flags, key)
		what := describe(func() string {
			return fmt.Sprintf("POST pool %q ?%s key %q (flags %#x) %q", pool, rawQuery, key, flags, body)
		})

		// The violations of the request, and of the state.
		bad := transport(body, flags)
		orders, bodyBad, read := batchModel(body)
		bad = append(bad, bodyBad...)
		bad = append(bad, idViolations(pool)...)
		q, _ := url.ParseQuery(rawQuery)
		for name := range q {
			if name != "dryRun" {
				bad = append(bad, verdict{400, "invalid-parameter"}) // a parameter the endpoint does not take
			}
		}
		dry := false
		switch vs := q["dryRun"]; {
		case len(vs) > 1 || len(vs) == 1 && vs[0] != "true" && vs[0] != "false":
			bad = append(bad, verdict{400, "invalid-parameter"})
		case len(vs) == 1:
			dry = vs[0] == "true"
		}
		sendsKey := flags&flagKey != 0
		switch {
		case sendsKey && flags&flagKeyTwice != 0:
			bad = append(bad, verdict{400, "invalid-request"})
		case sendsKey && !storetest.ValidID(key):
			bad = append(bad, verdict{400, "invalid-id"})
		}
		if sendsKey && dry {
			bad = append(bad, verdict{400, "invalid-request"})
		}
		switch {
		case read && len(orders) == 0:
			bad = append(bad, verdict{422, "empty-batch"})
		case read && len(orders) > fuzzMaxBatch:
			bad = append(bad, verdict{422, "batch-too-large"})
		}
		seen := make(map[string]bool)
		for _, o := range orders {
			if o.id != "" && !storetest.ValidID(o.id) {
				bad = append(bad, verdict{400, "invalid-id"})
			}
			if len(o.key) > dispatch.MaxKeyBytes {
				bad = append(bad, verdict{422, "invalid-key"})
			}
			if o.id != "" && seen[o.id] {
				bad = append(bad, verdict{422, "duplicate-order"})
			}
			seen[o.id] = true
		}
		var conflict []verdict
		replay := false
		if len(bad) == 0 {
			switch {
			case !slices.Contains(fuzzPools, pool):
				conflict = append(conflict, verdict{404, "pool-not-found"})
			case sendsKey && key == "k-used" && pool == "p":
				if replay = r.URL.EscapedPath() == s.used.URL.EscapedPath() && rawQuery == "" && bytes.Equal(body, s.usedB); !replay {
					conflict = append(conflict, verdict{422, "idempotency-mismatch"})
				}
			default:
				if pool == "p" && seen["held"] {
					conflict = append(conflict, verdict{409, "order-exists"})
				}
				if pool == "idle" || pool == "full" && len(orders) > 2 {
					conflict = append(conflict, verdict{409, "no-eligible-scale"})
				}
			}
		}

		before := s.state(pool)
		var scales []dispatch.Scale
		if len(bad)+len(conflict) == 0 {
			scales = s.scales(pool)
		}
		rec := s.send(r)
		switch {
		case len(bad) > 0:
			checkRefused(t, what, rec, bad)
		case len(conflict) > 0:
			checkRefused(t, what, rec, conflict)
		case replay:
			if rec.Code != 201 || rec.Header().Get("Idempotent-Replayed") != "true" || !bytes.Equal(rec.Body.Bytes(), s.usedR) {
				t.Fatalf("%s: got %d %v %s, want the replay %s", what, rec.Code, rec.Header(), rec.Body, s.usedR)
			}
		default:
			s.checkDispatched(t, what, r, rec, pool, orders, scales, dry, sendsKey)
			return
		}
		s.checkUnchanged(t, what, rec.Code, pool, before)
		for _, o := range orders {
			if o.id == "" || !slices.Contains(fuzzPools, pool) {
				continue
			}
			_, err := s.store.GetOrder(context.Background(), pool, o.id, fuzzNow)
			if held := pool == "p" && o.id == "held"; held == errors.Is(err, dispatch.ErrOrderNotFound) {
				t.Fatalf("%s: answered %d; order %q: %v", what, rec.Code, o.id, err)
			}
		}
		if sendsKey && storetest.ValidID(key) && key != "k-used" && !replay {
			// The key was not taken: it dispatches a new batch.
			_, replayed, err := s.svc.Dispatch(context.Background(), dispatch.DispatchInput{
				Pool: "p", Orders: []dispatch.OrderInput{{ID: "probe"}}, IdempotencyKey: key, Fingerprint: "probe"})
			if err != nil || replayed {
				t.Fatalf("%s: answered %d, but Idempotency-Key %q is taken: %v (replayed %v)", what, rec.Code, key, err, replayed)
			}
		}
	})
}

// scales returns all the Scales of pool.
func (s *fuzzServer) scales(pool string) []dispatch.Scale {
	s.t.Helper()
	scales, _, err := s.store.ListScales(context.Background(), pool, dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil {
		s.t.Fatalf("ListScales %s: %v", pool, err)
	}
	return scales
}

// waterfillPicks returns the compIds of n orders as DESIGN §2 assigns them
// over scales: waterfill over the eligible Scales, the table rebuilt
// whenever a Scale reaches its maxOrders. The caller has checked that
// there is room.
func waterfillPicks(scales []dispatch.Scale, n int) []string {
	byID := make(map[string]*dispatch.Scale)
	for i := range scales {
		byID[scales[i].CompID] = &scales[i]
	}
	var picks []string
	for len(picks) < n {
		var loads []balancing.Load
		for _, sc := range scales {
			if sc.Eligible() {
				loads = append(loads, balancing.Load{ID: sc.CompID, Count: sc.OrderCount()})
			}
		}
		sorted := balancing.SortLoads(loads)
		if balancing.Waterfill(sorted, n-len(picks), func(rank int) bool {
			sc := byID[sorted[rank].ID]
			sc.Outstanding++
			picks = append(picks, sc.CompID)
			return sc.Eligible()
		}) == 0 {
			panic("fuzz: no room for the batch")
		}
	}
	return picks
}

// checkDispatched checks a batch that had to succeed, and the store after.
func (s *fuzzServer) checkDispatched(t *testing.T, what fmt.Stringer, r *http.Request, rec *httptest.ResponseRecorder,
	pool string, orders []fuzzOrder, scales []dispatch.Scale, dry, sendsKey bool) {
	t.Helper()
	var b batchBody
	want := 201
	if dry {
		want = 200
	}
	if rec.Code != want || rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &b) != nil {
		t.Fatalf("%s: got %d %s, want %d and a batch", what, rec.Code, rec.Body, want)
	}
	if b.Pool != pool || b.Strategy != "waterfill" || b.CreatedAt != fuzzCreatedAt || len(b.Assignments) != len(orders) {
		t.Fatalf("%s: got %s, want %d assignments in pool %s by waterfill at %s", what, rec.Body, len(orders), pool, fuzzCreatedAt)
	}
	switch loc := rec.Header().Get("Location"); {
	case dry && (b.BatchID != nil || loc != ""):
		t.Fatalf("%s: a dry run got batch id %v, Location %q", what, *b.BatchID, loc)
	case !dry && (b.BatchID == nil || !storetest.ValidID(*b.BatchID) || loc != "/v1/pools/"+pool+"/batches/"+*b.BatchID):
		t.Fatalf("%s: got batch id %v, Location %q", what, b.BatchID, loc)
	}
	picks := waterfillPicks(slices.Clone(scales), len(orders))
	ids := make(map[string]bool)
	for i, a := range b.Assignments {
		if o := orders[i]; o.id != "" && a.OrderID != o.id || !storetest.ValidID(a.OrderID) || ids[a.OrderID] || a.OrderID == "held" {
			t.Fatalf("%s: assignment %d is order %q, want %q (or a new id)", what, i, a.OrderID, orders[i].id)
		}
		ids[a.OrderID] = true
		if a.CompID != picks[i] {
			t.Fatalf("%s: assignment %d went to %s, waterfill gives %s (%v)", what, i, a.CompID, picks[i], picks)
		}
	}
	if dry {
		for id := range ids {
			if _, err := s.store.GetOrder(context.Background(), pool, id, fuzzNow); !errors.Is(err, dispatch.ErrOrderNotFound) {
				t.Fatalf("%s: a dry run recorded order %q: %v", what, id, err)
			}
		}
		after := s.scales(pool)
		if !slices.Equal(after, scales) {
			t.Fatalf("%s: a dry run changed the Scales from %+v to %+v", what, scales, after)
		}
		return
	}

	// Every order recorded once on its Scale, and the counts add up.
	added := make(map[string]int64)
	for i, a := range b.Assignments {
		added[a.CompID]++
		o, err := s.store.GetOrder(context.Background(), pool, a.OrderID, fuzzNow)
		if err != nil || o.CompID != a.CompID || o.BatchID != *b.BatchID || o.Key != orders[i].key || o.State != dispatch.Assigned {
			t.Fatalf("%s: order %q is %+v, %v; want assigned to %s in batch %s", what, a.OrderID, o, err, a.CompID, *b.BatchID)
		}
	}
	for _, sc := range s.scales(pool) {
		i := slices.IndexFunc(scales, func(x dispatch.Scale) bool { return x.CompID == sc.CompID })
		want := scales[i]
		want.Outstanding += added[sc.CompID]
		if sc != want {
			t.Fatalf("%s: Scale %+v after the batch, want %+v", what, sc, want)
		}
	}
	got, err := s.store.GetBatch(context.Background(), pool, *b.BatchID, fuzzNow)
	if err != nil || len(got.Assignments) != len(b.Assignments) {
		t.Fatalf("%s: batch %s recorded as %+v, %v", what, *b.BatchID, got, err)
	}
	for i, a := range got.Assignments {
		if a.OrderID != b.Assignments[i].OrderID || a.CompID != b.Assignments[i].CompID {
			t.Fatalf("%s: batch %s recorded as %+v, answered %s", what, *b.BatchID, got, rec.Body)
		}
	}
	if sendsKey {
		again := s.send(r)
		if again.Code != 201 || again.Header().Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body.Bytes(), rec.Body.Bytes()) {
			t.Fatalf("%s: sent again with its key: %d %s, want the replay of %s", what, again.Code, again.Body, rec.Body)
		}
	}
}
