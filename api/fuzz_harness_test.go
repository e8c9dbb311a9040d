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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// The fuzz targets (FuzzDecodeBatch in fuzz_batch_test.go, FuzzDecodeScale
// and FuzzDecodePool in fuzz_scale_pool_test.go) send arbitrary requests to
// the handler of New over the memory store and judge each answer by a model
// of DESIGN §1 and §4 that shares no code with the api: the request's
// violations, each a status and a problem slug, computed independently of
// the order in which the handler checks them. A request with violations must
// be answered with one of them, as application/problem+json, and leave the
// store as it was; a request without must succeed, and the success is
// checked in full. Errors that depend on the store's state (404 pool, 409, a
// reused Idempotency-Key) may only answer a request without violations.

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

// sendRefusable sends r, which changes pool if anything. When bad lists
// the verdicts r deserves, it checks that r was refused with one of them
// and that the store did not change, and reports false; else true. before
// is pool's state before r.
func (s *fuzzServer) sendRefusable(t *testing.T, what fmt.Stringer, r *http.Request, pool string, bad []verdict) (rec *httptest.ResponseRecorder, before []storetest.PoolSnapshot, taken bool) {
	t.Helper()
	before = s.state(pool)
	rec = s.send(r)
	if len(bad) > 0 {
		checkRefused(t, what, rec, bad)
		s.checkUnchanged(t, what, rec.Code, pool, before)
		return rec, before, false
	}
	return rec, before, true
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

// idViolations returns the verdicts of a path id: none for a valid one.
func idViolations(id string) []verdict {
	switch {
	case id == "":
		return emptySegment
	case !storetest.ValidID(id):
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
// nested at most 32 levels; a body of no bytes is the empty object (one of
// white space alone is malformed). Numbers stay json.Number. It returns nil and the verdicts when
// the body is no object; one nested too deeply has that verdict only.
func parseJSONObject(body []byte) (map[string]any, []verdict) {
	if len(body) == 0 {
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
	if !utf8.Valid(body) || halfSurrogate(body) || repeatsName(json.NewDecoder(bytes.NewReader(body))) {
		return nil, []verdict{{400, "malformed-json"}} // read otherwise than sent
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, []verdict{{400, "wrong-type"}}
	}
	return obj, nil
}

// escapes matches each escape of a valid JSON text, left to right.
var escapes = regexp.MustCompile(`\\(u[0-9a-fA-F]{4}|.)`)

// halfSurrogate reports whether a \u escape of the valid JSON text body is
// half of a UTF-16 surrogate pair whose other half is not the escape right
// next to it.
func halfSurrogate(body []byte) bool {
	type unit struct {
		at, end int
		r       rune // -1: not a \u escape
	}
	var units []unit
	for _, m := range escapes.FindAllSubmatchIndex(body, -1) {
		u := unit{m[0], m[1], -1}
		if body[m[2]] == 'u' {
			n, _ := strconv.ParseUint(string(body[m[2]+1:m[3]]), 16, 16)
			u.r = rune(n)
		}
		units = append(units, u)
	}
	for i := 0; i < len(units); i++ {
		if !utf16.IsSurrogate(units[i].r) {
			continue
		}
		if i+1 == len(units) || units[i+1].at != units[i].end ||
			utf16.DecodeRune(units[i].r, units[i+1].r) == utf8.RuneError {
			return true
		}
		i++ // a pair
	}
	return false
}

// repeatsName reads one JSON value from dec and reports whether an object
// in it names a member twice.
func repeatsName(dec *json.Decoder) bool {
	t, _ := dec.Token()
	switch t {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			name, _ := dec.Token()
			if seen[name.(string)] {
				return true
			}
			seen[name.(string)] = true
			if repeatsName(dec) {
				return true
			}
		}
		_, _ = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if repeatsName(dec) {
				return true
			}
		}
		_, _ = dec.Token()
	}
	return false
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
