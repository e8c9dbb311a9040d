package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	dispatcher "github.com/dispatcher/dispatcher"
	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// Limits of the test server, small so that tests can cross them cheaply.
const (
	testMaxBatch = 50
	testMaxBody  = 16 << 10
)

// fixedTime is when stores set up directly by tests say things happened.
var fixedTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a dispatcher served over real HTTP on the memory store, with a
// client whose every request and response is checked against openapi.yaml.
type env struct {
	url    string
	client *http.Client
	store  dispatch.Store
	svc    *dispatch.Service
	logs   *syncBuffer
}

// envOption changes the wiring of newEnv.
type envOption func(*envConfig)

type envConfig struct {
	store dispatch.Store
	cfg   dispatch.Config
	api   api.Options
}

// withStore serves the given store instead of a fresh memory store.
func withStore(s dispatch.Store) envOption { return func(c *envConfig) { c.store = s } }

// withConfig changes the dispatch.Config of the Service.
func withConfig(f func(*dispatch.Config)) envOption { return func(c *envConfig) { f(&c.cfg) } }

// withAPI changes the api.Options; the test's limits, logger and spec are
// set before.
func withAPI(f func(*api.Options)) envOption { return func(c *envConfig) { f(&c.api) } }

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	logs := &syncBuffer{}
	c := envConfig{
		store: memory.New(memory.Options{}),
		cfg:   dispatch.Config{MaxBatch: testMaxBatch},
		api: api.Options{
			MaxBody: testMaxBody,
			Logger:  slog.New(slog.NewJSONHandler(logs, nil)),
			Spec:    dispatcher.OpenAPI,
		},
	}
	for _, o := range opts {
		o(&c)
	}
	svc := dispatch.NewService(c.store, c.cfg)
	h := api.New(svc, c.api)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	secured := len(c.api.AdminTokens)+len(c.api.ClientTokens) > 0 || c.api.Tokens != nil
	return &env{
		url:    srv.URL,
		client: &http.Client{Transport: newSpecCheck(t, srv.Client().Transport, secured)},
		store:  c.store,
		svc:    svc,
		logs:   logs,
	}
}

// loadSpec loads and validates the embedded openapi.yaml.
func loadSpec(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(dispatcher.OpenAPI)
	if err != nil {
		t.Fatalf("loading openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not valid: %v", err)
	}
	return doc
}

// specCheck is an http.RoundTripper that checks every exchange against
// openapi.yaml and fails the request (so the test) when
//   - the response does not match what the spec says of the operation and
//     status (undocumented statuses, headers, bodies and members included),
//   - a response without content in the spec has a body, or
//   - the spec rejects the request but the server accepted it.
//
// Requests for routes the spec does not have are checked against the
// NotFound and MethodNotAllowed responses. For a server with tokens
// (secured), the spec's security requirements hold: an operation that needs
// a token and was answered without an Authorization: Bearer header fails.
type specCheck struct {
	base     http.RoundTripper
	router   routers.Router
	fallback *routers.Route
	opts     *openapi3filter.Options
}

func newSpecCheck(t testing.TB, base http.RoundTripper, secured bool) *specCheck {
	t.Helper()
	doc := loadSpec(t)
	// The spec's servers name the address of `make run`; the router would
	// match only requests to it, and the test servers listen elsewhere.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("routing openapi.yaml: %v", err)
	}
	fallback := openapi3.NewResponses()
	fallback.Set("404", doc.Components.Responses["NotFound"])
	fallback.Set("405", doc.Components.Responses["MethodNotAllowed"])
	auth := openapi3filter.NoopAuthenticationFunc
	if secured {
		auth = requireBearer
	}
	return &specCheck{
		base:     base,
		router:   router,
		fallback: &routers.Route{Spec: doc, Operation: &openapi3.Operation{Responses: fallback}},
		opts: &openapi3filter.Options{IncludeResponseStatus: true, SkipSettingDefaults: true, MultiError: true,
			AuthenticationFunc: auth},
	}
}

func (c *specCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := context.Background()
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	vreq := req.Clone(ctx)
	vreq.Body = io.NopCloser(bytes.NewReader(body))
	in := &openapi3filter.RequestValidationInput{Request: vreq, Options: c.opts}
	var reqErr error
	route, params, routeErr := c.router.FindRoute(vreq)
	for _, v := range params {
		if v == "" { // the legacy router lets a parameter match nothing: /v1/pools is not /v1/pools/{pool}
			routeErr = routers.ErrPathNotFound
		}
	}
	if routeErr != nil {
		in.Route = c.fallback
	} else {
		in.Route, in.PathParams = route, params
		reqErr = openapi3filter.ValidateRequest(ctx, in)
	}

	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	var rbody []byte
	if stream {
		// A watch never ends: keep its first event and hang up. Its body
		// is events, not one document: checked in watch_test.go.
		rbody, err = bufio.NewReader(resp.Body).ReadBytes('\n')
	} else {
		rbody, err = io.ReadAll(resp.Body)
	}
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(rbody))

	what := fmt.Sprintf("%s %s → %d", req.Method, req.URL.RequestURI(), resp.StatusCode)
	opts := c.opts
	if stream {
		o := *c.opts
		o.ExcludeResponseBody = true
		opts = &o
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: opts}
	out.SetBodyBytes(rbody)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return nil, fmt.Errorf("openapi.yaml does not describe %s: %v\nbody: %s", what, err, rbody)
	}
	if ref := in.Route.Operation.Responses.Status(resp.StatusCode); ref != nil && len(ref.Value.Content) == 0 && len(rbody) > 0 {
		return nil, fmt.Errorf("openapi.yaml gives %s no content, but it has a body: %s", what, rbody)
	}
	if reqErr != nil && resp.StatusCode < 400 {
		return nil, fmt.Errorf("openapi.yaml rejects the request of %s, but the server accepted it: %v", what, reqErr)
	}
	if routeErr != nil && resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		return nil, fmt.Errorf("openapi.yaml has no route for %s: %v", what, routeErr)
	}
	return resp, nil
}

// requireBearer is the spec check's view of the bearer scheme: the request
// must send a bearer token; whether the server knows it is for the server
// to say.
func requireBearer(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme, token, _ := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return errors.New("no bearer token")
	}
	return nil
}

// response is an answer read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; body "" sends none. Headers come in name, value
// pairs; a body is sent as application/json unless they set Content-Type
// ("" removes it).
func (e *env) do(t testing.TB, method, path, body string, headers ...string) response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		switch name, value := headers[i], headers[i+1]; {
		case name == "Content-Type" && value == "":
			req.Header.Del(name)
		case name == "Content-Type":
			req.Header.Set(name, value)
		default:
			req.Header[http.CanonicalHeaderKey(name)] = append(req.Header[http.CanonicalHeaderKey(name)], value)
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// must sends a request and fails t unless it is answered with status; it
// decodes the body into out when out is not nil.
func (e *env) must(t testing.TB, status int, out any, method, path, body string, headers ...string) response {
	t.Helper()
	resp := e.do(t, method, path, body, headers...)
	if resp.status != status {
		t.Fatalf("%s %s: got status %d, want %d; body: %s", method, path, resp.status, status, resp.body)
	}
	if out != nil {
		if err := json.Unmarshal(resp.body, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, resp.body, err)
		}
	}
	return resp
}

// problemBody is the body of an error.
type problemBody struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Status  int    `json:"status"`
	Detail  string `json:"detail"`
	BatchID string `json:"batchId"`
}

// problem decodes a problem answer, failing t if it is not one.
func (r response) problem(t testing.TB) problemBody {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("got Content-Type %q, want application/problem+json", ct)
	}
	var p problemBody
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("decoding problem %s: %v", r.body, err)
	}
	if p.Status != r.status {
		t.Errorf("problem status %d, response status %d", p.Status, r.status)
	}
	return p
}

const problemPrefix = "urn:dispatcher:problem:"

// Response bodies, as the API spells them.
type (
	poolBody struct {
		Name             string `json:"name"`
		Strategy         string `json:"strategy"`
		SlowStartSeconds int64  `json:"slowStartSeconds"`
		ScaleCount       int    `json:"scaleCount"`
		CreatedAt        string `json:"createdAt"`
	}
	poolListBody struct {
		Pools      []poolBody `json:"pools"`
		NextCursor *string    `json:"nextCursor"`
	}
	scaleBody struct {
		CompID      string `json:"compId"`
		Weight      int64  `json:"weight"`
		State       string `json:"state"`
		MaxOrders   int64  `json:"maxOrders"`
		OrderCount  int64  `json:"orderCount"`
		Outstanding int64  `json:"outstanding"`
		BaseLoad    int64  `json:"baseLoad"`
	}
	scaleListBody struct {
		Scales     []scaleBody `json:"scales"`
		NextCursor *string     `json:"nextCursor"`
	}
	assignmentBody struct {
		OrderID string `json:"orderId"`
		CompID  string `json:"compId"`
	}
	batchBody struct {
		BatchID     *string          `json:"batchId"`
		Pool        string           `json:"pool"`
		Strategy    string           `json:"strategy"`
		CreatedAt   string           `json:"createdAt"`
		Assignments []assignmentBody `json:"assignments"`
	}
	orderBody struct {
		OrderID     string  `json:"orderId"`
		CompID      string  `json:"compId"`
		BatchID     string  `json:"batchId"`
		Key         *string `json:"key"`
		State       string  `json:"state"`
		AssignedAt  string  `json:"assignedAt"`
		CompletedAt *string `json:"completedAt"`
	}
	tableBody struct {
		CompIDs        []string `json:"compIdArr"`
		DispatchCounts []int64  `json:"dispatchCountArr"`
	}
)

// picks renders a batch's assignments as "S1 S2 …".
func (b batchBody) picks() string {
	s := make([]string, len(b.Assignments))
	for i, a := range b.Assignments {
		s[i] = a.CompID
	}
	return strings.Join(s, " ")
}

// ordersJSON is a batch body of orders with the given ids.
func ordersJSON(ids ...string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf(`{"id":%q}`, id)
	}
	return `{"orders":[` + strings.Join(parts, ",") + `]}`
}

// numbered returns n ids prefix01, prefix02, ….
func numbered(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%02d", prefix, i+1)
	}
	return ids
}

// snapshot is what a client and the store can read of some pools and
// orders: the pool list, each pool, all its Scales (with the fields only the
// store shows) and its table, and each probed order and batch (404s
// included). Two equal snapshots mean nothing visible changed.
func (e *env) snapshot(t testing.TB, pools []string, probes ...string) string {
	t.Helper()
	var b strings.Builder
	get := func(path string) {
		resp := e.do(t, http.MethodGet, path, "")
		fmt.Fprintf(&b, "GET %s %d %s", path, resp.status, resp.body)
	}
	get("/v1/pools?limit=10000")
	for _, p := range pools {
		get("/v1/pools/" + p)
		get("/v1/pools/" + p + "/scales?limit=10000")
		get("/v1/pools/" + p + "/table")
		scales, _, err := e.store.ListScales(context.Background(), p, dispatch.Page{Limit: 10000})
		fmt.Fprintf(&b, "store %s: %+v %v\n", p, scales, err)
	}
	for _, path := range probes {
		get(path)
	}
	return b.String()
}

// syncBuffer is a bytes.Buffer safe for concurrent use: the server logs
// from its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
