package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// The fuzz targets below send arbitrary requests to the handler of New over
// the memory store and judge each answer by a model of DESIGN §1 and §4
// that shares no code with the api: the request's violations, each a status
// and a problem slug, computed independently of the order in which the
// handler checks them. A request with violations must be answered with one
// of them, as application/problem+json, and leave the store as it was; a
// request without must succeed, and the success is checked in full. Errors
// that depend on the store's state (404 pool, 409, a reused
// Idempotency-Key) may only answer a request without violations.

// Limits of the fuzzed server, small so that the fuzzer crosses them.
const (
	fuzzMaxBody  = 1024
	fuzzMaxBatch = 8
)

// fuzzNow is the server's clock; nothing expires.
var fuzzNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fuzzPools are the pools of the fuzzed server: p holds S1=1 (the order
// "held", sent with Idempotency-Key k-used), S2=5 (maxOrders 8) and S3=12;
// idle has a draining Scale only; full has one Scale with room for 2
// orders.
var fuzzPools = []string{"p", "idle", "full"}

// verdict is one way to refuse a request: a status and a problem slug.
type verdict struct {
	status int
	slug   string
}

func (v verdict) String() string { return fmt.Sprintf("%d %s", v.status, v.slug) }

var (
	badJSON = []verdict{{400, "malformed-json"}, {400, "trailing-data"}, {400, "too-deep"}}
	tooDeep = verdict{400, "too-deep"}
	// A path segment left empty may not reach the route at all.
	emptySegment = []verdict{{400, "invalid-id"}, {404, "not-found"}, {405, "method-not-allowed"}}
)

// fuzzContentTypes are the Content-Types a fuzz input chooses from (flags
// mod 8), and whether each is JSON; "" sends none.
var fuzzContentTypes = []struct {
	value string
	json  bool
}{
	{"application/json", true},
	{"application/json; charset=utf-8", true},
	{"Application/JSON", true},
	{"application/json", true},
	{"", false},
	{"text/plain", false},
	{"application/problem+json", false},
	{"application/jsonx", false},
}

// Flags of the fuzz inputs, above the Content-Type selector.
const (
	flagHideLength = 1 << 3 // send the body without a Content-Length
	flagKey        = 1 << 4 // send an Idempotency-Key (batches)
	flagKeyTwice   = 1 << 5 // send it twice
)

// fuzzServer is the handler under test over a fresh memory store.
type fuzzServer struct {
	t     *testing.T
	h     http.Handler
	store *memory.Store
	svc   *dispatch.Service
	used  *http.Request // the batch sent with Idempotency-Key k-used
	usedB []byte        // its body
	usedR []byte        // and the answer
}

// swapStore is the store of the handler that the fuzz inputs share: New
// registers Prometheus collectors, which costs more than the rest of an
// input, so each input swaps in a fresh memory store instead. A fuzz
// worker runs its inputs one at a time.
type swapStore struct{ dispatch.Store }

var fuzzShared struct {
	once  sync.Once
	store *swapStore
	svc   *dispatch.Service
	h     http.Handler
}

func newFuzzServer(t *testing.T) *fuzzServer {
	fuzzShared.once.Do(func() {
		fuzzShared.store = &swapStore{}
		fuzzShared.svc = dispatch.NewService(fuzzShared.store, dispatch.Config{
			MaxBatch: fuzzMaxBatch,
			Now:      func() time.Time { return fuzzNow },
			Rand:     func() uint64 { return 0 },
		})
		fuzzShared.h = api.New(fuzzShared.svc, api.Options{MaxBody: fuzzMaxBody})
	})
	st := memory.New(memory.Options{})
	fuzzShared.store.Store = st
	s := &fuzzServer{t: t, h: fuzzShared.h, store: st, svc: fuzzShared.svc}
	ctx := context.Background()
	i64 := func(v int64) *int64 { return &v }
	draining := dispatch.Draining
	for _, p := range fuzzPools {
		if _, _, err := st.PutPool(ctx, p, dispatch.PoolSpec{}, fuzzNow); err != nil {
			t.Fatal(err)
		}
	}
	for _, sc := range []struct {
		pool, id string
		spec     dispatch.ScaleSpec
	}{
		{"p", "S1", dispatch.ScaleSpec{}},
		{"p", "S2", dispatch.ScaleSpec{OrderCount: i64(5), MaxOrders: i64(8)}},
		{"p", "S3", dispatch.ScaleSpec{OrderCount: i64(12)}},
		{"idle", "D", dispatch.ScaleSpec{State: &draining}},
		{"full", "F", dispatch.ScaleSpec{MaxOrders: i64(2)}},
	} {
		if _, _, err := st.PutScale(ctx, sc.pool, sc.id, sc.spec, fuzzNow); err != nil {
			t.Fatal(err)
		}
	}
	s.usedB = []byte(`{"orders": [{"id": "held", "key": "cust-1"}]}`)
	s.used = s.request("POST", "/v1/pools/p/batches", "", s.usedB, flagKey, "k-used")
	rec := s.send(s.used)
	if rec.Code != 201 {
		t.Fatalf("setup batch: %d %s", rec.Code, rec.Body)
	}
	s.usedR = rec.Body.Bytes()
	return s
}

// request builds a request for the handler. flags choose the Content-Type
// (when there is a body), hide its length, and send key as
// Idempotency-Key, once or twice.
func (s *fuzzServer) request(method, path, rawQuery string, body []byte, flags uint8, key string) *http.Request {
	r := httptest.NewRequest(method, path, bytes.NewReader(body))
	r.URL.RawQuery = rawQuery
	if len(body) > 0 {
		if ct := fuzzContentTypes[flags%8].value; ct != "" {
			r.Header.Set("Content-Type", ct)
		}
	}
	if flags&flagHideLength != 0 {
		r.ContentLength = -1
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body)))
	}
	if flags&flagKey != 0 {
		r.Header["Idempotency-Key"] = []string{key}
		if flags&flagKeyTwice != 0 {
			r.Header["Idempotency-Key"] = []string{key, key}
		}
	}
	return r
}

// send serves a request, with a body that can be read again.
func (s *fuzzServer) send(r *http.Request) *httptest.ResponseRecorder {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if r.ContentLength < 0 {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body)))
	}
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, r)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return rec
}

// state is everything a client can read of the pools: the list, and each
// pool with its Scales and table; also of pool extra if it exists.
func (s *fuzzServer) state(extra string) []storetest.PoolSnapshot {
	s.t.Helper()
	pools, _, err := s.store.ListPools(context.Background(), dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil {
		s.t.Fatal(err)
	}
	var snaps []storetest.PoolSnapshot
	for _, p := range pools {
		snaps = append(snaps, storetest.Snapshot(s.t, s.store, p.Name))
	}
	if _, err := s.store.GetPool(context.Background(), extra); !errors.Is(err, dispatch.ErrPoolNotFound) {
		snaps = append(snaps, storetest.Snapshot(s.t, s.store, extra))
	}
	return snaps
}

// checkUnchanged fails t unless the store is as before shows it.
func (s *fuzzServer) checkUnchanged(t *testing.T, what fmt.Stringer, code int, extra string, before []storetest.PoolSnapshot) {
	t.Helper()
	if after := s.state(extra); !reflect.DeepEqual(after, before) {
		t.Fatalf("%s: answered %d, but the store changed:\nbefore %v\nafter  %v", what, code, before, after)
	}
}

// describe is a description of an input, formatted only when a check
// fails.
type describe func() string

func (d describe) String() string { return d() }

// checkRefused checks a refusal: one of the allowed verdicts, answered as
// application/problem+json with a type, title, status and detail.
func checkRefused(t *testing.T, what fmt.Stringer, rec *httptest.ResponseRecorder, allowed []verdict) {
	t.Helper()
	var p problemBody
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" || json.Unmarshal(rec.Body.Bytes(), &p) != nil {
		t.Fatalf("%s: got %d %q %s, want a problem", what, rec.Code, ct, rec.Body)
	}
	slug, ok := strings.CutPrefix(p.Type, problemPrefix)
	if !ok || p.Status != rec.Code || p.Title == "" || p.Detail == "" {
		t.Fatalf("%s: got %d with problem %s", what, rec.Code, rec.Body)
	}
	if !slices.Contains(allowed, verdict{rec.Code, slug}) {
		t.Fatalf("%s: got %d %s (%s), want one of %v", what, rec.Code, slug, p.Detail, allowed)
	}
}

// validID is the id rule of DESIGN §1, ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$,
// written out without regular expressions.
func validID(id string) bool {
	if len(id) < 1 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("._:-", rune(c))) {
			return false
		}
	}
	return true
}

// idViolations returns the verdicts of a path id: none for a valid one.
func idViolations(id string) []verdict {
	switch {
	case id == "":
		return emptySegment
	case !validID(id):
		return []verdict{{400, "invalid-id"}}
	}
	return nil
}

// transport returns the verdicts of a request's body as bytes: its size
// and its Content-Type.
func transport(body []byte, flags uint8) []verdict {
	var v []verdict
	if len(body) > fuzzMaxBody {
		v = append(v, verdict{413, "body-too-large"})
	}
	if len(body) > 0 && !fuzzContentTypes[flags%8].json {
		v = append(v, verdict{415, "unsupported-media-type"})
	}
	return v
}

// parseJSONObject decodes a body that must be one JSON object (RFC 8259),
// nested at most 32 levels; a body of JSON whitespace only is the empty
// object. Numbers stay json.Number. It returns nil and the verdicts when
// the body is no object; one nested too deeply has that verdict only.
func parseJSONObject(body []byte) (map[string]any, []verdict) {
	if len(bytes.Trim(body, " \t\r\n")) == 0 {
		return map[string]any{}, nil
	}
	if !json.Valid(body) {
		return nil, badJSON
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		panic("fuzz: json.Valid accepted what Decode refuses: " + err.Error())
	}
	if depth(v) > 32 {
		return nil, []verdict{tooDeep} // refused before it is decoded
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, []verdict{{400, "wrong-type"}}
	}
	return obj, nil
}

// depth is how deeply arrays and objects nest in v.
func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		for _, e := range v {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

// unknownMembers returns a verdict for each member of obj not in names.
func unknownMembers(obj map[string]any, names ...string) []verdict {
	var v []verdict
	for name := range obj {
		if !slices.Contains(names, name) {
			v = append(v, verdict{400, "unknown-field"})
		}
	}
	return v
}

// integer reads a member that must be a JSON integer: its value, or the
// verdict when it is another type or a number with a fraction or an
// exponent (400), or an integer beyond 64 bits (422, as every bound is
// smaller).
func integer(v any) (int64, *verdict) {
	n, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(n), ".eE") {
		return 0, &verdict{400, "wrong-type"}
	}
	b, _ := new(big.Int).SetString(string(n), 10)
	if !b.IsInt64() {
		return 0, &verdict{422, "out-of-range"}
	}
	return b.Int64(), nil
}

// text reads a member that must be a JSON string.
func text(v any) (string, *verdict) {
	s, ok := v.(string)
	if !ok {
		return "", &verdict{400, "wrong-type"}
	}
	return s, nil
}

func appendIf(vs []verdict, v *verdict) []verdict {
	if v != nil {
		return append(vs, *v)
	}
	return vs
}

// poolPathFor returns the path of a pool's resource: the pool name
// escaped as one path segment, then rest.
func poolPathFor(pool, rest string) string {
	return "/v1/pools/" + url.PathEscape(pool) + rest
}

// fuzzCreatedAt is fuzzNow as the API writes times.
const fuzzCreatedAt = "2025-03-01T12:00:00.000Z"

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
	f.Add("p", "", "", []byte(`{"orders":[{"id":"held"}]}`), asJSON)                       // 409
	f.Add("idle", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)                     // 409: no eligible Scale
	f.Add("full", "", "", []byte(`{"orders":[{"id":"a"},{"id":"b"},{"id":"c"}]}`), asJSON) // 409: no room
	f.Add("full", "", "", []byte(`{"orders":[{"id":"a"},{"id":"b"}]}`), asJSON)            // room for 2
	f.Add("nope", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)                     // 404
	f.Add("a/b", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)                      // 400: the pool id
	f.Add("%70", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)                      // the pool "%70" is not "p"
	f.Add("", "", "", []byte(`{"orders":[{"id":"o-1"}]}`), asJSON)
	f.Add("p", "", "", []byte(``), asJSON)                                                    // 422: no orders
	f.Add("p", "", "", []byte(" \t\r\n"), asJSON)                                             // JSON whitespace: no orders
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
		case sendsKey && !validID(key):
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
			if o.id != "" && !validID(o.id) {
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
		if sendsKey && validID(key) && key != "k-used" && !replay {
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
	case !dry && (b.BatchID == nil || !validID(*b.BatchID) || loc != "/v1/pools/"+pool+"/batches/"+*b.BatchID):
		t.Fatalf("%s: got batch id %v, Location %q", what, b.BatchID, loc)
	}
	picks := waterfillPicks(slices.Clone(scales), len(orders))
	ids := make(map[string]bool)
	for i, a := range b.Assignments {
		if o := orders[i]; o.id != "" && a.OrderID != o.id || !validID(a.OrderID) || ids[a.OrderID] || a.OrderID == "held" {
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

// scaleModel reads a Scale body: the spec and its verdicts.
func scaleModel(body []byte) (dispatch.ScaleSpec, []verdict) {
	var spec dispatch.ScaleSpec
	root, bad := parseJSONObject(body)
	if root == nil {
		return spec, bad
	}
	bad = append(bad, unknownMembers(root, "weight", "state", "maxOrders", "orderCount")...)
	number := func(name string, lo, hi int64) *int64 {
		raw, ok := root[name]
		if !ok {
			return nil
		}
		v, vd := integer(raw)
		if bad = appendIf(bad, vd); vd != nil {
			return nil
		}
		if v < lo || v > hi {
			bad = append(bad, verdict{422, "out-of-range"})
		}
		return &v
	}
	spec.Weight = number("weight", 1, 1_000_000)
	spec.MaxOrders = number("maxOrders", 0, 1<<31-1)
	spec.OrderCount = number("orderCount", 0, 1<<31-1)
	if raw, ok := root["state"]; ok {
		v, vd := text(raw)
		bad = appendIf(bad, vd)
		if vd == nil && v != "active" && v != "draining" && v != "down" {
			bad = append(bad, verdict{422, "invalid-state"})
		}
		st := dispatch.ScaleState(v)
		spec.State = &st
	}
	return spec, bad
}

// FuzzDecodeScale sends PUT /v1/pools/{pool}/scales/{compId} with an
// arbitrary pool, compId, Content-Type and body. A request without
// violations registers the Scale (201 with Location) or updates it (200):
// the fields sent change, the others keep their value or default, the
// orderCount sent sets baseLoad to max(0, orderCount − outstanding), and
// nothing else changes. Every refusal is one of the request's violations
// and changes nothing.
func FuzzDecodeScale(f *testing.F) {
	asJSON := uint8(0)
	f.Add("p", "S4", []byte(`{"weight":3,"state":"active","maxOrders":10,"orderCount":7}`), asJSON)
	f.Add("p", "S1", []byte(`{"orderCount":0}`), asJSON) // S1 holds an order: baseLoad stays 0
	f.Add("p", "S3", []byte(`{"state":"down"}`), asJSON)
	f.Add("p", "S2", []byte(``), asJSON)
	f.Add("full", "F", []byte(`{"maxOrders":0}`), asJSON)
	f.Add("p", "S4", []byte(`{"weight":0}`), asJSON)
	f.Add("p", "S4", []byte(`{"weight":1000001}`), asJSON)
	f.Add("p", "S4", []byte(`{"weight":-0}`), asJSON)
	f.Add("p", "S4", []byte(`{"maxOrders":2147483648}`), asJSON)
	f.Add("p", "S4", []byte(`{"orderCount":-1}`), asJSON)
	f.Add("p", "S4", []byte(`{"orderCount":99999999999999999999}`), asJSON) // beyond 64 bits: 422
	f.Add("p", "S4", []byte(`{"weight":1.0}`), asJSON)                      // 400: a fraction
	f.Add("p", "S4", []byte(`{"weight":1e2}`), asJSON)                      // 400: an exponent
	f.Add("p", "S4", []byte(`{"weight":"2"}`), asJSON)
	f.Add("p", "S4", []byte(`{"state":"idle"}`), asJSON)
	f.Add("p", "S4", []byte(`{"state":null}`), asJSON)
	f.Add("p", "S4", []byte(`{"weight":2,"x":1}`), asJSON)
	f.Add("p", "S 4", []byte(`{}`), asJSON)
	f.Add("p", "", []byte(`{}`), asJSON)
	f.Add("nope", "S1", []byte(`{}`), asJSON)
	f.Add("p", "S4", []byte(`{}`), uint8(5))
	f.Fuzz(func(t *testing.T, pool, compID string, body []byte, flags uint8) {
		flags &^= flagKey
		s := newFuzzServer(t)
		r := s.request("PUT", poolPathFor(pool, "/scales/"+url.PathEscape(compID)), "", body, flags, "")
		what := describe(func() string { return fmt.Sprintf("PUT pool %q Scale %q (flags %#x) %q", pool, compID, flags, body) })
		bad := transport(body, flags)
		spec, bodyBad := scaleModel(body)
		bad = append(bad, bodyBad...)
		bad = append(bad, idViolations(pool)...)
		bad = append(bad, idViolations(compID)...)
		var conflict []verdict
		if len(bad) == 0 && !slices.Contains(fuzzPools, pool) {
			conflict = append(conflict, verdict{404, "pool-not-found"})
		}

		before := s.state(pool)
		var scales []dispatch.Scale
		if len(bad)+len(conflict) == 0 {
			scales = s.scales(pool)
		}
		rec := s.send(r)
		if len(bad)+len(conflict) > 0 {
			checkRefused(t, what, rec, append(bad, conflict...))
			s.checkUnchanged(t, what, rec.Code, pool, before)
			return
		}

		// The Scale as it must be now.
		i := slices.IndexFunc(scales, func(sc dispatch.Scale) bool { return sc.CompID == compID })
		want, status := dispatch.Scale{CompID: compID, Weight: 1, State: dispatch.Active}, 201
		if i >= 0 {
			want, status = scales[i], 200
		}
		if spec.Weight != nil {
			want.Weight = *spec.Weight
		}
		if spec.MaxOrders != nil {
			want.MaxOrders = *spec.MaxOrders
		}
		if spec.State != nil {
			want.State = *spec.State
		}
		if spec.OrderCount != nil {
			want.BaseLoad = max(0, *spec.OrderCount-want.Outstanding)
		}
		var got scaleBody
		if rec.Code != status || rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
			t.Fatalf("%s: got %d %s, want %d and a Scale", what, rec.Code, rec.Body, status)
		}
		if loc := rec.Header().Get("Location"); status == 201 && loc != "/v1/pools/"+pool+"/scales/"+compID || status == 200 && loc != "" {
			t.Fatalf("%s: got Location %q", what, loc)
		}
		if wantBody := (scaleBody{want.CompID, want.Weight, string(want.State), want.MaxOrders, want.OrderCount(), want.Outstanding, want.BaseLoad}); got != wantBody {
			t.Fatalf("%s: got %+v, want %+v", what, got, wantBody)
		}

		// Only that Scale changed, and the table is waterfill's over the
		// eligible Scales.
		after := s.scales(pool)
		var eligible []balancing.Load
		for _, sc := range after {
			j := slices.IndexFunc(scales, func(x dispatch.Scale) bool { return x.CompID == sc.CompID })
			switch {
			case sc.CompID == compID:
				if sc.Weight != want.Weight || sc.State != want.State || sc.MaxOrders != want.MaxOrders ||
					sc.Outstanding != want.Outstanding || sc.BaseLoad != want.BaseLoad {
					t.Fatalf("%s: the store has %+v, want %+v", what, sc, want)
				}
			case j < 0 || sc != scales[j]:
				t.Fatalf("%s: Scale %s changed: %+v", what, sc.CompID, sc)
			}
			if sc.Eligible() {
				eligible = append(eligible, balancing.Load{ID: sc.CompID, Count: sc.OrderCount()})
			}
		}
		if len(after) != len(scales)+btoi(status == 201) {
			t.Fatalf("%s: %d Scales after, %d before", what, len(after), len(scales))
		}
		tab, err := s.store.Table(context.Background(), pool)
		ids, counts := balancing.Table(balancing.SortLoads(eligible))
		if err != nil || !slices.Equal(tab.CompIDs, ids) || !slices.Equal(tab.DispatchCounts, counts) {
			t.Fatalf("%s: table %v %v (%v), want %v %v", what, tab.CompIDs, tab.DispatchCounts, err, ids, counts)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// designStrategies are the strategy names of DESIGN §3.
var designStrategies = []string{
	"waterfill", "weighted-waterfill", "random", "weighted-random", "round-robin", "weighted-round-robin",
	"smooth-weighted-round-robin", "weighted-response-time", "least-connections", "power-of-two", "consistent-hash",
}

// FuzzDecodePool sends PUT /v1/pools/{pool} with an arbitrary pool,
// Content-Type and body. A request without violations creates the pool
// (201 with Location) or updates it (200): the fields sent change, the
// others keep their value or default, and no other pool and none of its
// Scales changes. Every refusal is one of the request's violations and
// changes nothing.
func FuzzDecodePool(f *testing.F) {
	asJSON := uint8(0)
	f.Add("q", []byte(`{"strategy":"round-robin","slowStartSeconds":600}`), asJSON)
	f.Add("p", []byte(`{"strategy":"consistent-hash"}`), asJSON)
	f.Add("full", []byte(`{"slowStartSeconds":86400}`), asJSON)
	f.Add("idle", []byte(``), asJSON)
	f.Add("q", []byte(`{"strategy":"fastest"}`), asJSON)
	f.Add("q", []byte(`{"strategy":"Waterfill"}`), asJSON)
	f.Add("q", []byte(`{"slowStartSeconds":86401}`), asJSON)
	f.Add("q", []byte(`{"slowStartSeconds":-1}`), asJSON)
	f.Add("q", []byte(`{"slowStartSeconds":9223372036854775808}`), asJSON)
	f.Add("q", []byte(`{"slowStartSeconds":60.5}`), asJSON)
	f.Add("q", []byte(`{"strategy":null}`), asJSON)
	f.Add("q", []byte(`{"name":"q"}`), asJSON)
	f.Add("q", []byte("\v"), asJSON)
	f.Add("q", []byte("\u00a0"), asJSON)
	f.Add(strings.Repeat("q", 129), []byte(`{}`), asJSON)
	f.Add("-q", []byte(`{}`), asJSON)
	f.Add("q.1:a_b", []byte(`{}`), asJSON)
	f.Add("%71", []byte(`{}`), asJSON)
	f.Add("", []byte(`{}`), asJSON)
	f.Fuzz(func(t *testing.T, pool string, body []byte, flags uint8) {
		flags &^= flagKey
		s := newFuzzServer(t)
		r := s.request("PUT", poolPathFor(pool, ""), "", body, flags, "")
		what := describe(func() string { return fmt.Sprintf("PUT pool %q (flags %#x) %q", pool, flags, body) })
		bad := transport(body, flags)
		root, bodyBad := parseJSONObject(body)
		bad = append(bad, bodyBad...)
		bad = append(bad, idViolations(pool)...)
		var strategy *string
		var slowStart *int64
		if root != nil {
			bad = append(bad, unknownMembers(root, "strategy", "slowStartSeconds")...)
			if raw, ok := root["strategy"]; ok {
				v, vd := text(raw)
				if bad = appendIf(bad, vd); vd == nil {
					if !slices.Contains(designStrategies, v) {
						bad = append(bad, verdict{422, "unknown-strategy"})
					}
					strategy = &v
				}
			}
			if raw, ok := root["slowStartSeconds"]; ok {
				v, vd := integer(raw)
				if bad = appendIf(bad, vd); vd == nil {
					if v < 0 || v > 86400 {
						bad = append(bad, verdict{422, "out-of-range"})
					}
					slowStart = &v
				}
			}
		}

		before := s.state(pool)
		rec := s.send(r)
		if len(bad) > 0 {
			checkRefused(t, what, rec, bad)
			s.checkUnchanged(t, what, rec.Code, pool, before)
			return
		}
		want, status := poolBody{Name: pool, Strategy: "waterfill", CreatedAt: fuzzCreatedAt}, 201
		var scales []dispatch.Scale
		if slices.Contains(fuzzPools, pool) {
			p, err := s.store.GetPool(context.Background(), pool)
			if err != nil {
				t.Fatal(err)
			}
			want = poolBody{Name: pool, Strategy: string(p.Strategy), SlowStartSeconds: int64(p.SlowStart / time.Second),
				ScaleCount: p.ScaleCount, CreatedAt: fuzzCreatedAt}
			status = 200
			scales = s.scales(pool)
		}
		if strategy != nil {
			want.Strategy = *strategy
		}
		if slowStart != nil {
			want.SlowStartSeconds = *slowStart
		}
		var got poolBody
		if rec.Code != status || rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
			t.Fatalf("%s: got %d %s, want %d and a pool", what, rec.Code, rec.Body, status)
		}
		if loc := rec.Header().Get("Location"); status == 201 && loc != "/v1/pools/"+pool || status == 200 && loc != "" {
			t.Fatalf("%s: got Location %q", what, loc)
		}
		if got != want {
			t.Fatalf("%s: got %+v, want %+v", what, got, want)
		}
		if p, err := s.store.GetPool(context.Background(), pool); err != nil || p.Name != pool || string(p.Strategy) != want.Strategy ||
			p.SlowStart != time.Duration(want.SlowStartSeconds)*time.Second || p.ScaleCount != want.ScaleCount {
			t.Fatalf("%s: the store has %+v, %v; want %+v", what, p, err, want)
		}
		if after := s.scales(pool); !slices.Equal(after, scales) && len(after)+len(scales) > 0 {
			t.Fatalf("%s: the Scales changed from %+v to %+v", what, scales, after)
		}
		for _, snap := range before {
			if snap.Pool.Name != pool && !reflect.DeepEqual(storetest.Snapshot(t, s.store, snap.Pool.Name), snap) {
				t.Fatalf("%s: pool %s changed", what, snap.Pool.Name)
			}
		}
	})
}
