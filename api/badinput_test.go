package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// badInputEnv is a server holding:
//   - pool p: S1 with orders held and h2 assigned, done completed and cx
//     cancelled (so S1 is busy), and an idle S2 at orderCount 100; the
//     batch went with Idempotency-Key k-used;
//   - pool idle: one draining Scale, so no Scale is eligible;
//   - pool solo: one Scale X holding order s-1, so a failure report of
//     s-1 has nowhere to move it.
//
// opts choose the store (the memory store by default). It returns the env
// and the paths whose answers must not change.
func badInputEnv(t *testing.T, opts ...envOption) (*env, []string, []string) {
	e := newEnv(t, opts...)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p", "")
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p/scales/S1", "")
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p/scales/S2", `{"orderCount": 100}`)
	var batch batchBody
	e.must(t, http.StatusCreated, &batch, "POST", "/v1/pools/p/batches", ordersJSON("held", "h2", "done", "cx"), "Idempotency-Key", "k-used")
	if batch.picks() != "S1 S1 S1 S1" {
		t.Fatalf("setup batch went to %s, want S1 only", batch.picks())
	}
	e.must(t, http.StatusOK, nil, "POST", "/v1/pools/p/orders/done/complete", "")
	e.must(t, http.StatusOK, nil, "POST", "/v1/pools/p/orders/cx/cancel", "")
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/idle", "")
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/idle/scales/D", `{"state": "draining"}`)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/solo", `{"maxFails": 1}`)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/solo/scales/X", "")
	e.must(t, http.StatusCreated, nil, "POST", "/v1/pools/solo/batches", ordersJSON("s-1"))

	pools := []string{"p", "idle", "solo"}
	probes := []string{"/v1/pools/p/batches/" + *batch.BatchID, "/v1/pools/nope", "/v1/pools/solo/orders/s-1"}
	for _, id := range []string{"held", "h2", "done", "cx", "n-1", "n-2"} {
		probes = append(probes, "/v1/pools/p/orders/"+id)
	}
	return e, pools, probes
}

// badCase is a request the API must refuse without changing anything.
type badCase struct {
	name         string
	method, path string
	body         string
	headers      []string
	status       int
	slug         string
}

// badInputStores are the stores TestBadInput runs its table over: each
// returns the options of a fresh, empty store for newEnv.
var badInputStores = []struct {
	name  string
	store func(t *testing.T) []envOption
}{
	{"memory", func(*testing.T) []envOption { return nil }},
	{"redis", func(t *testing.T) []envOption {
		// One redis-server for the whole run: the table sets the env up
		// once and its cases change nothing.
		srv := redistest.Start(t)
		c, err := redis.NewClient(srv.URL(), "single")
		if err != nil {
			t.Fatalf("redis.NewClient: %v", err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if err := c.FlushAll(context.Background()).Err(); err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
		return []envOption{withStore(redis.New(c, redis.Options{}))}
	}},
}

// TestBadInput sends every kind of bad input of DESIGN §4, on each store,
// and checks the status, the problem type and that the store is exactly as
// before.
func TestBadInput(t *testing.T) {
	for _, st := range badInputStores {
		t.Run(st.name, func(t *testing.T) { testBadInput(t, st.store(t)...) })
	}
}

// testBadInput runs the table of badCases over an env on the store of opts.
func testBadInput(t *testing.T, opts ...envOption) {
	e, pools, probes := badInputEnv(t, opts...)
	before := e.snapshot(t, pools, probes...)
	for _, c := range badCases() {
		t.Run(c.name, func(t *testing.T) {
			resp := e.do(t, c.method, c.path, c.body, c.headers...)
			if resp.status != c.status {
				t.Errorf("%s %s: got status %d, want %d; body %s", c.method, c.path, resp.status, c.status, resp.body)
			}
			p := resp.problem(t)
			if p.Type != problemPrefix+c.slug {
				t.Errorf("got type %s, want %s%s; detail %q", p.Type, problemPrefix, c.slug, p.Detail)
			}
			if p.Title == "" || p.Detail == "" {
				t.Errorf("problem without title or detail: %s", resp.body)
			}
			if c.status == http.StatusMethodNotAllowed && resp.header.Get("Allow") == "" {
				t.Errorf("405 without Allow")
			}
			if after := e.snapshot(t, pools, probes...); after != before {
				t.Errorf("the store changed:\nbefore %s\nafter  %s", before, after)
				before = after
			}
		})
	}
}

func badCases() []badCase {
	const (
		scale = "/v1/pools/p/scales/S1"
		pool  = "/v1/pools/p"
		batch = "/v1/pools/p/batches"
		comp  = "/v1/pools/p/completions"
		idem  = "Idempotency-Key"
		ct    = "Content-Type"
		ok1   = `{"orders":[{"id":"n-1"}]}`
		beat  = "/v1/pools/p/scales/S1/heartbeat"
		fail  = "/v1/pools/p/orders/held/fail"
	)
	long := strings.Repeat("x", 129)
	c := func(name, method, path, body string, code int, slug string, headers ...string) badCase {
		return badCase{name, method, path, body, headers, code, slug}
	}
	many := make([]string, testMaxBatch+1)
	for i := range many {
		many[i] = fmt.Sprintf("n-%d", i+1)
	}
	return []badCase{
		// 400: malformed JSON.
		c("malformed: cut short", "PUT", scale, `{"weight":`, 400, "malformed-json"),
		c("malformed: trailing comma", "POST", batch, `{"orders":[{"id":"n-1"},]}`, 400, "malformed-json"),
		c("malformed: not JSON", "PUT", pool, `strategy=waterfill`, 400, "malformed-json"),
		c("malformed: white space alone", "PUT", scale, " \t\r\n", 400, "malformed-json"),
		c("malformed: white space alone, batch", "POST", batch, " ", 400, "malformed-json"),
		c("malformed: single quotes", "POST", comp, `{'orders':[]}`, 400, "malformed-json"),
		c("malformed: key not UTF-8", "POST", batch, "{\"orders\":[{\"id\":\"n-1\",\"key\":\"ab\xc3\"}]}", 400, "malformed-json"),
		c("malformed: strategy not UTF-8", "PUT", pool, "{\"strategy\":\"\xffwaterfill\"}", 400, "malformed-json"),
		c("malformed: key a lone high surrogate", "POST", batch, `{"orders":[{"id":"n-1","key":"\ud800x"}]}`, 400, "malformed-json"),
		c("malformed: key a lone low surrogate", "POST", batch, `{"orders":[{"id":"n-1","key":"a\udc00"}]}`, 400, "malformed-json"),
		c("malformed: key two high surrogates", "POST", batch, `{"orders":[{"id":"n-1","key":"\ud800\ud800"}]}`, 400, "malformed-json"),
		c("malformed: orders twice", "POST", batch, `{"orders":[{"id":"n-1"}],"orders":[{"id":"n-2"}]}`, 400, "malformed-json"),
		c("malformed: id twice", "POST", batch, `{"orders":[{"id":"n-1","id":"n-2"}]}`, 400, "malformed-json"),
		c("malformed: weight twice", "PUT", scale, `{"weight":0,"weight":5}`, 400, "malformed-json"),
		c("malformed: a name twice, once escaped", "PUT", pool, `{"strategy":"random","strat\u0065gy":"waterfill"}`, 400, "malformed-json"),
		// 400: wrong types.
		c("wrong type: body is an array", "PUT", pool, `[]`, 400, "wrong-type"),
		c("wrong type: body is null", "POST", batch, `null`, 400, "wrong-type"),
		c("wrong type: weight string", "PUT", scale, `{"weight":"5"}`, 400, "wrong-type"),
		c("wrong type: weight fraction", "PUT", scale, `{"weight":1.5}`, 400, "wrong-type"),
		c("wrong type: weight exponent", "PUT", scale, `{"weight":1e3}`, 400, "wrong-type"),
		c("wrong type: weight null", "PUT", scale, `{"weight":null}`, 400, "wrong-type"),
		c("wrong type: state number", "PUT", scale, `{"state":5}`, 400, "wrong-type"),
		c("wrong type: strategy null", "PUT", pool, `{"strategy":null}`, 400, "wrong-type"),
		c("wrong type: slowStartSeconds bool", "PUT", pool, `{"slowStartSeconds":true}`, 400, "wrong-type"),
		c("wrong type: orders string", "POST", batch, `{"orders":"n-1"}`, 400, "wrong-type"),
		c("wrong type: order number", "POST", batch, `{"orders":[1]}`, 400, "wrong-type"),
		c("wrong type: order null", "POST", batch, `{"orders":[null]}`, 400, "wrong-type"),
		c("wrong type: order id number", "POST", batch, `{"orders":[{"id":5}]}`, 400, "wrong-type"),
		c("wrong type: order key bool", "POST", batch, `{"orders":[{"id":"n-1","key":true}]}`, 400, "wrong-type"),
		c("wrong type: durationMs fraction", "POST", "/v1/pools/p/orders/held/complete", `{"durationMs":1.5}`, 400, "wrong-type"),
		c("wrong type: completion id number", "POST", comp, `{"orders":[{"id":7}]}`, 400, "wrong-type"),
		// 400: unknown fields.
		c("unknown field: pool", "PUT", pool, `{"strategi":"waterfill"}`, 400, "unknown-field"),
		c("unknown field: other case", "PUT", scale, `{"Weight":2}`, 400, "unknown-field"),
		c("unknown field: order", "POST", batch, `{"orders":[{"id":"n-1","kye":"x"}]}`, 400, "unknown-field"),
		c("unknown field: batch", "POST", batch, `{"orders":[{"id":"n-1"}],"dryRun":true}`, 400, "unknown-field"),
		c("unknown field: cancel", "POST", "/v1/pools/p/orders/held/cancel", `{"reason":"x"}`, 400, "unknown-field"),
		c("unknown field: completion", "POST", comp, `{"orders":[{"id":"held","ms":1}]}`, 400, "unknown-field"),
		c("unknown field: heartbeat", "POST", beat, `{"orderCnt":1}`, 400, "unknown-field"),
		c("unknown field: heartbeat state", "POST", beat, `{"state":"down"}`, 400, "unknown-field"),
		c("unknown field: fail", "POST", fail, `{"compId":"S1","why":"x"}`, 400, "unknown-field"),
		c("unknown field: pool option", "PUT", pool, `{"heartbeatTimeout":5000}`, 400, "unknown-field"),
		c("wrong type: heartbeat orderCount", "POST", beat, `{"orderCount":"3"}`, 400, "wrong-type"),
		c("wrong type: fail compId", "POST", fail, `{"compId":7}`, 400, "wrong-type"),
		c("wrong type: fail reason", "POST", fail, `{"compId":"S1","reason":null}`, 400, "wrong-type"),
		c("wrong type: onLapse", "PUT", pool, `{"onLapse":true}`, 400, "wrong-type"),
		c("wrong type: heartbeatTimeoutMs fraction", "PUT", pool, `{"heartbeatTimeoutMs":1500.5}`, 400, "wrong-type"),
		c("fail without compId", "POST", fail, `{}`, 400, "invalid-id"),
		c("fail without body", "POST", fail, ``, 400, "invalid-id"),
		c("fail with a reason and no compId", "POST", fail, `{"reason":"timeout"}`, 400, "invalid-id"),
		c("fail compId bad", "POST", fail, `{"compId":"S 1"}`, 400, "invalid-id"),
		c("path id: heartbeat", "POST", "/v1/pools/p/scales/S!/heartbeat", "", 400, "invalid-id"),
		c("path id: fail", "POST", "/v1/pools/p/orders/h!/fail", `{"compId":"S1"}`, 400, "invalid-id"),
		// 400: trailing data.
		c("trailing: second object", "PUT", pool, `{} {}`, 400, "trailing-data"),
		c("trailing: garbage", "POST", batch, ok1+`x`, 400, "trailing-data"),
		c("trailing: brace", "PUT", scale, `{"weight":2}}`, 400, "trailing-data"),
		// 400: ids that break the pattern, in the body.
		c("body id: space", "POST", batch, `{"orders":[{"id":"bad id"}]}`, 400, "invalid-id"),
		c("body id: empty", "POST", batch, `{"orders":[{"id":""}]}`, 400, "invalid-id"),
		c("body id: leading dash", "POST", batch, `{"orders":[{"id":"-n"}]}`, 400, "invalid-id"),
		c("body id: 129 chars", "POST", batch, `{"orders":[{"id":"`+long+`"}]}`, 400, "invalid-id"),
		c("body id: completion", "POST", comp, `{"orders":[{"id":"a/b"}]}`, 400, "invalid-id"),
		c("body id: completion without id", "POST", comp, `{"orders":[{"durationMs":1}]}`, 400, "invalid-id"),
		// 400: ids that break the pattern, in the path.
		c("path id: pool", "GET", "/v1/pools/bad!id", "", 400, "invalid-id"),
		c("path id: put pool", "PUT", "/v1/pools/-p", "", 400, "invalid-id"),
		c("path id: escaped space", "PUT", "/v1/pools/p/scales/S%201", "", 400, "invalid-id"),
		c("path id: compId", "DELETE", "/v1/pools/p/scales/_S1", "", 400, "invalid-id"),
		c("path id: order 129 chars", "GET", "/v1/pools/p/orders/"+long, "", 400, "invalid-id"),
		c("path id: complete", "POST", "/v1/pools/p/orders/he$ld/complete", "", 400, "invalid-id"),
		c("path id: batch", "GET", "/v1/pools/p/batches/b!", "", 400, "invalid-id"),
		c("path id: dispatch", "POST", "/v1/pools/p!/batches", ok1, 400, "invalid-id"),
		// 400: headers and query parameters.
		c("dryRun: yes", "POST", batch+"?dryRun=yes", ok1, 400, "invalid-parameter"),
		c("dryRun: 1", "POST", batch+"?dryRun=1", ok1, 400, "invalid-parameter"),
		c("dryRun: empty", "POST", batch+"?dryRun=", ok1, 400, "invalid-parameter"),
		c("dryRun: repeated", "POST", batch+"?dryRun=true&dryRun=true", ok1, 400, "invalid-parameter"),
		c("dryRun: mistyped", "POST", batch+"?dryrun=true", ok1, 400, "invalid-parameter"),
		c("unknown parameter: PUT scale", "PUT", scale+"?weight=5", `{}`, 400, "invalid-parameter"),
		c("unknown parameter: completions", "POST", comp+"?force=true", `{"orders":[{"id":"o-1"}]}`, 400, "invalid-parameter"),
		c("unknown parameter: list", "GET", "/v1/pools?limt=5", "", 400, "invalid-parameter"),
		c("dryRun with Idempotency-Key", "POST", batch+"?dryRun=true", ok1, 400, "invalid-request", idem, "k-2"),
		c("Idempotency-Key: bad", "POST", batch, ok1, 400, "invalid-id", idem, "bad key"),
		c("Idempotency-Key: empty", "POST", batch, ok1, 400, "invalid-id", idem, ""),
		c("Idempotency-Key: twice", "POST", batch, ok1, 400, "invalid-request", idem, "k-2", idem, "k-3"),
		c("force: yes", "DELETE", scale+"?force=yes", "", 400, "invalid-parameter"),
		c("limit: word", "GET", "/v1/pools?limit=ten", "", 400, "invalid-parameter"),
		c("limit: fraction", "GET", "/v1/pools/p/scales?limit=1.5", "", 400, "invalid-parameter"),
		c("limit: empty", "GET", "/v1/pools?limit=", "", 400, "invalid-parameter"),
		c("cursor: empty", "GET", "/v1/pools?cursor=", "", 400, "invalid-parameter"),
		c("cursor: bad pool name", "GET", "/v1/pools?cursor=a%20b", "", 400, "invalid-id"),
		c("cursor: not from the list", "GET", "/v1/pools/p/scales?cursor=zz", "", 400, "invalid-request"),

		// 413.
		c("body too large", "POST", batch, `{"orders":[`+strings.Repeat(" ", testMaxBody)+`]}`, 413, "body-too-large"),
		c("body too large: PUT", "PUT", scale, `{"weight":1`+strings.Repeat(" ", testMaxBody)+`}`, 413, "body-too-large"),

		// 415.
		c("media: text/plain", "PUT", pool, `{}`, 415, "unsupported-media-type", ct, "text/plain"),
		c("media: none", "POST", batch, ok1, 415, "unsupported-media-type", ct, ""),
		c("media: problem+json", "POST", comp, `{"orders":[{"id":"held"}]}`, 415, "unsupported-media-type", ct, "application/problem+json"),
		c("media: malformed", "PUT", scale, `{}`, 415, "unsupported-media-type", ct, "application/"),

		// 422.
		c("empty batch", "POST", batch, `{"orders":[]}`, 422, "empty-batch"),
		c("empty batch: no orders", "POST", batch, `{}`, 422, "empty-batch"),
		c("empty batch: no body", "POST", batch, "", 422, "empty-batch"),
		c("empty completions", "POST", comp, `{"orders":[]}`, 422, "empty-batch"),
		c("batch over max", "POST", batch, ordersJSON(many...), 422, "batch-too-large"),
		c("completions over max", "POST", comp, ordersJSON(many...), 422, "batch-too-large"),
		c("repeated id", "POST", batch, ordersJSON("n-1", "n-2", "n-1"), 422, "duplicate-order"),
		c("repeated id: dry run", "POST", batch+"?dryRun=true", ordersJSON("n-1", "n-2", "n-1"), 422, "duplicate-order"),
		c("repeated id: a used Idempotency-Key", "POST", batch, ordersJSON("held", "h2", "held"), 422, "duplicate-order", idem, "k-used"),
		c("repeated id: completions", "POST", comp, ordersJSON("held", "held"), 422, "duplicate-order"),
		c("unknown strategy", "PUT", pool, `{"strategy":"fastest"}`, 422, "unknown-strategy"),
		c("unknown strategy: new pool", "PUT", "/v1/pools/nope", `{"strategy":"Waterfill"}`, 422, "unknown-strategy"),
		c("weight 0", "PUT", scale, `{"weight":0}`, 422, "out-of-range"),
		c("weight 1000001", "PUT", scale, `{"weight":1000001}`, 422, "out-of-range"),
		c("weight beyond 64 bits", "PUT", scale, `{"weight":99999999999999999999}`, 422, "out-of-range"),
		c("maxOrders -1", "PUT", scale, `{"maxOrders":-1}`, 422, "out-of-range"),
		c("orderCount 2^31", "PUT", scale, `{"orderCount":2147483648}`, 422, "out-of-range"),
		c("orderCount -1", "PUT", "/v1/pools/p/scales/S9", `{"orderCount":-1}`, 422, "out-of-range"),
		c("slowStartSeconds -1", "PUT", pool, `{"slowStartSeconds":-1}`, 422, "out-of-range"),
		c("slowStartSeconds 86401", "PUT", pool, `{"slowStartSeconds":86401}`, 422, "out-of-range"),
		c("slowStartSeconds huge", "PUT", pool, `{"slowStartSeconds":9223372036854775807}`, 422, "out-of-range"),
		c("durationMs -1", "POST", "/v1/pools/p/orders/held/complete", `{"durationMs":-1}`, 422, "out-of-range"),
		c("durationMs 2^31", "POST", comp, `{"orders":[{"id":"held","durationMs":2147483648}]}`, 422, "out-of-range"),
		c("limit 0", "GET", "/v1/pools?limit=0", "", 422, "out-of-range"),
		c("limit 10001", "GET", "/v1/pools?limit=10001", "", 422, "out-of-range"),
		c("limit -1", "GET", "/v1/pools/p/scales?limit=-1", "", 422, "out-of-range"),
		c("limit 0: scales", "GET", "/v1/pools/p/scales?limit=0", "", 422, "out-of-range"),
		c("limit beyond 64 bits", "GET", "/v1/pools/p/scales?limit=99999999999999999999", "", 422, "out-of-range"),
		c("key empty", "POST", batch, `{"orders":[{"id":"n-1","key":""}]}`, 422, "invalid-key"),
		c("key 257 bytes", "POST", batch, `{"orders":[{"id":"n-1","key":"`+strings.Repeat("k", 257)+`"}]}`, 422, "invalid-key"),
		c("key 129 runes of 2 bytes", "POST", batch, `{"orders":[{"id":"n-1","key":"`+strings.Repeat("é", 129)+`"}]}`, 422, "invalid-key"),
		c("heartbeatTimeoutMs 999", "PUT", pool, `{"heartbeatTimeoutMs":999}`, 422, "out-of-range"),
		c("heartbeatTimeoutMs -1", "PUT", pool, `{"heartbeatTimeoutMs":-1}`, 422, "out-of-range"),
		c("heartbeatTimeoutMs 3600001", "PUT", pool, `{"heartbeatTimeoutMs":3600001}`, 422, "out-of-range"),
		c("heartbeatTimeoutMs huge", "PUT", pool, `{"heartbeatTimeoutMs":9223372036854775807}`, 422, "out-of-range"),
		c("maxFails -1", "PUT", pool, `{"maxFails":-1}`, 422, "out-of-range"),
		c("maxFails 10001", "PUT", pool, `{"maxFails":10001}`, 422, "out-of-range"),
		c("failWindowMs 0", "PUT", pool, `{"failWindowMs":0}`, 422, "out-of-range"),
		c("failWindowMs 3600001", "PUT", pool, `{"failWindowMs":3600001}`, 422, "out-of-range"),
		c("ejectMs 999", "PUT", pool, `{"ejectMs":999}`, 422, "out-of-range"),
		c("ejectMs with a valid option", "PUT", pool, `{"maxFails":3,"ejectMs":99999999999}`, 422, "out-of-range"),
		c("onLapse unknown", "PUT", pool, `{"onLapse":"drop"}`, 422, "invalid-on-lapse"),
		c("onLapse case", "PUT", pool, `{"heartbeatTimeoutMs":5000,"onLapse":"Reassign"}`, 422, "invalid-on-lapse"),
		c("heartbeat orderCount -1", "POST", beat, `{"orderCount":-1}`, 422, "out-of-range"),
		c("heartbeat orderCount 2^31", "POST", beat, `{"orderCount":2147483648}`, 422, "out-of-range"),
		c("fail reason 257 bytes", "POST", fail, `{"compId":"S1","reason":"`+strings.Repeat("r", 257)+`"}`, 422, "invalid-reason"),
		c("bad state", "PUT", scale, `{"state":"sleeping"}`, 422, "invalid-state"),
		c("bad state: case", "PUT", scale, `{"state":"Active"}`, 422, "invalid-state"),
		c("idempotency key reused", "POST", batch, ok1, 422, "idempotency-mismatch", idem, "k-used"),
		c("idempotency key reused: same orders, other bytes", "POST", batch, ordersJSON("held", "h2", "done", "cx")+" ", 422, "idempotency-mismatch", idem, "k-used"),

		// 404.
		c("unknown pool", "GET", "/v1/pools/nope", "", 404, "pool-not-found"),
		c("unknown pool: delete", "DELETE", "/v1/pools/nope", "", 404, "pool-not-found"),
		c("unknown pool: scale", "PUT", "/v1/pools/nope/scales/S1", `{"weight":2}`, 404, "pool-not-found"),
		c("unknown pool: scales", "GET", "/v1/pools/nope/scales", "", 404, "pool-not-found"),
		c("unknown pool: dispatch", "POST", "/v1/pools/nope/batches", ok1, 404, "pool-not-found"),
		c("unknown pool: table", "GET", "/v1/pools/nope/table", "", 404, "pool-not-found"),
		c("unknown pool: completions", "POST", "/v1/pools/nope/completions", ordersJSON("held"), 404, "pool-not-found"),
		c("unknown scale", "GET", "/v1/pools/p/scales/S9", "", 404, "scale-not-found"),
		c("unknown scale: delete", "DELETE", "/v1/pools/p/scales/S9", "", 404, "scale-not-found"),
		c("unknown scale: heartbeat", "POST", "/v1/pools/p/scales/S9/heartbeat", "", 404, "scale-not-found"),
		c("unknown scale: heartbeat with orderCount", "POST", "/v1/pools/p/scales/S9/heartbeat", `{"orderCount":3}`, 404, "scale-not-found"),
		c("unknown pool: heartbeat", "POST", "/v1/pools/nope/scales/S1/heartbeat", `{}`, 404, "pool-not-found"),
		c("unknown order: fail", "POST", "/v1/pools/p/orders/n-1/fail", `{"compId":"S1"}`, 404, "order-not-found"),
		c("unknown pool: fail", "POST", "/v1/pools/nope/orders/held/fail", `{"compId":"S1"}`, 404, "pool-not-found"),
		c("unknown order", "GET", "/v1/pools/p/orders/n-1", "", 404, "order-not-found"),
		c("unknown order: complete", "POST", "/v1/pools/p/orders/n-1/complete", "", 404, "order-not-found"),
		c("unknown order: cancel", "POST", "/v1/pools/p/orders/n-1/cancel", "", 404, "order-not-found"),
		c("unknown order: completions, all or none", "POST", comp, ordersJSON("held", "n-1"), 404, "order-not-found"),
		c("unknown order: other pool", "GET", "/v1/pools/idle/orders/held", "", 404, "order-not-found"),
		c("unknown batch", "GET", "/v1/pools/p/batches/b-1", "", 404, "batch-not-found"),
		c("unknown route", "GET", "/v2/pools", "", 404, "not-found"),
		c("unknown route: under a pool", "GET", "/v1/pools/p/nothing", "", 404, "not-found"),
		c("unknown route: root", "GET", "/", "", 404, "not-found"),
		c("unknown route: POST", "POST", "/v1/pools/p/orders", ok1, 404, "not-found"),

		// 405.
		c("method: PATCH pool", "PATCH", pool, `{}`, 405, "method-not-allowed"),
		c("method: DELETE pools", "DELETE", "/v1/pools", "", 405, "method-not-allowed"),
		c("method: POST healthz", "POST", "/healthz", "", 405, "method-not-allowed"),
		c("method: GET batches", "GET", batch, "", 405, "method-not-allowed"),
		c("method: PUT complete", "PUT", "/v1/pools/p/orders/held/complete", "", 405, "method-not-allowed"),

		// 409.
		c("order id held", "POST", batch, ordersJSON("held"), 409, "order-exists"),
		c("order id held: whole batch refused", "POST", batch, ordersJSON("n-1", "n-2", "done"), 409, "order-exists"),
		c("order id held: dry run", "POST", batch+"?dryRun=true", ordersJSON("n-1", "cx"), 409, "order-exists"),
		c("order id held: with a new key", "POST", batch, ordersJSON("n-1", "h2"), 409, "order-exists", idem, "k-new"),
		c("no eligible scale", "POST", "/v1/pools/idle/batches", ok1, 409, "no-eligible-scale"),
		c("no eligible scale: dry run", "POST", "/v1/pools/idle/batches?dryRun=true", ok1, 409, "no-eligible-scale"),
		c("busy scale", "DELETE", scale, "", 409, "scale-busy"),
		c("busy scale: force=false", "DELETE", scale+"?force=false", "", 409, "scale-busy"),
		c("complete a cancelled order", "POST", "/v1/pools/p/orders/cx/complete", `{"durationMs":5}`, 409, "order-state"),
		c("cancel a completed order", "POST", "/v1/pools/p/orders/done/cancel", "", 409, "order-state"),
		c("completions with a cancelled order", "POST", comp, ordersJSON("held", "cx"), 409, "order-state"),
		c("fail with no other Scale", "POST", "/v1/pools/solo/orders/s-1/fail", `{"compId":"X"}`, 409, "no-eligible-scale"),
		c("method: GET heartbeat", "GET", beat, "", 405, "method-not-allowed"),
	}
}
