package api_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// Tokens of the tokens file of the tenancy tests.
const (
	euClient  = "eu-client-token-0123456789abcdef"
	euAdmin   = "eu-admin-token-0123456789abcdef"
	fileAdmin = "file-admin-token-0123456789abcdef"
)

// tenantTokens is the file's tokens: a client and an admin scoped to the
// eu pools (the admin to one more), and an unscoped admin.
func tenantTokens() []api.Token {
	return []api.Token{
		{Name: "eu-orders", SHA256: sha256.Sum256([]byte(euClient)), Role: api.RoleClient, Pools: []string{"eu-*"}},
		{Name: "eu-ops", SHA256: sha256.Sum256([]byte(euAdmin)), Role: api.RoleAdmin, Pools: []string{"eu-*", "shared"}},
		{Name: "ops", SHA256: sha256.Sum256([]byte(fileAdmin)), Role: api.RoleAdmin},
	}
}

// withTenants secures the server with the test tokens of the environment
// and the tenants' tokens in a TokenSet, which it returns through set.
func withTenants(t testing.TB, set **api.TokenSet) envOption {
	ts, err := api.NewTokenSet(tenantTokens())
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		*set = ts
	}
	return withAPI(func(o *api.Options) {
		o.AdminTokens = []string{adminToken}
		o.ClientTokens = []string{clientToken}
		o.Tokens = ts
	})
}

// tripwire is a store that panics on any call (its Store is nil): a
// server on it answers a request that reaches the store 500.
type tripwire struct{ dispatch.Store }

// scopeBodies are request bodies valid for each operation that takes one,
// so that an answer for a pool that does not exist gets as far as the
// pool; operations not listed (among them those that issues add later)
// are sent "{}" when their method takes a body.
var scopeBodies = map[string]string{
	"dispatch":       ordersJSON("o-1"),
	"completeOrders": `{"orders":[{"id":"o-1"}]}`,
	"failOrder":      `{"compId":"S1"}`,
}

// TestScopeMatrix calls every operation of openapi.yaml that names a pool
// with each scoped token, on a pool it may see and on one it may not, and
// checks that:
//   - on a pool it may not see, the answer is 404 pool-not-found, byte for
//     byte the answer an unscoped token gets for a pool of that name that
//     does not exist, whether the hidden pool exists or not;
//   - that answer comes without a store call (the same server on a store
//     that panics on every call answers the same);
//   - a token whose role is too low gets 403 on either pool, alike;
//   - on a pool it may see, the token is neither refused nor told the
//     pool is missing.
func TestScopeMatrix(t *testing.T) {
	full := newEnv(t, withTenants(t, nil))  // eu-1, us-1 and shared exist
	empty := newEnv(t, withTenants(t, nil)) // eu-1 exists, us-1 does not
	trip := newEnv(t, withTenants(t, nil), withStore(tripwire{}))
	for _, e := range []*env{full, empty} {
		e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/eu-1", "", bearer(adminToken)...)
	}
	full.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/us-1", "", bearer(adminToken)...)

	ids := strings.NewReplacer("{compId}", "S1", "{orderId}", "o-1", "{batchId}", "b-1")
	scoped := []struct {
		name, token, unscoped string // unscoped: a token of the same role that sees every pool
		role                  string
	}{
		{"eu-orders (client)", euClient, clientToken, "client"},
		{"eu-ops (admin)", euAdmin, adminToken, "admin"},
	}
	rank := map[string]int{"client": 1, "admin": 2}
	compared, operations := map[string]bool{}, 0
	for path, item := range loadSpec(t).Paths.Map() {
		if !strings.Contains(path, "{pool}") {
			continue
		}
		for method, op := range item.Operations() {
			operations++
			need, _ := op.Extensions["x-role"].(string)
			if need == "" {
				t.Errorf("%s %s names a pool but has no x-role", method, path)
				continue
			}
			body, ok := scopeBodies[op.OperationID]
			if !ok && (method == "POST" || method == "PUT") {
				body = "{}"
			}
			at := func(pool string) string { return strings.ReplaceAll(ids.Replace(path), "{pool}", pool) }
			for _, tok := range scoped {
				t.Run(op.OperationID+"/"+tok.name, func(t *testing.T) {
					empty := newEnv(t, withTenants(t, nil)) // no us-1: each call may change it
					hidden := full.do(t, method, at("us-1"), body, bearer(tok.token)...)
					hiddenMissing := empty.do(t, method, at("us-1"), body, bearer(tok.token)...)
					tripped := trip.do(t, method, at("us-1"), body, bearer(tok.token)...)
					if rank[tok.role] < rank[need] {
						for _, r := range []response{hidden, hiddenMissing, tripped} {
							if r.status != http.StatusForbidden || !bytes.Equal(r.body, hidden.body) {
								t.Errorf("a %s token on a %s operation: got %d %s, want the same 403 everywhere", tok.role, need, r.status, r.body)
							}
						}
						return
					}
					if p := hidden.problem(t); hidden.status != http.StatusNotFound || p.Type != problemPrefix+"pool-not-found" {
						t.Fatalf("on a hidden pool: got %d %s, want 404 pool-not-found", hidden.status, hidden.body)
					}
					if !bytes.Equal(hidden.body, hiddenMissing.body) || !bytes.Equal(hidden.body, tripped.body) || tripped.status != http.StatusNotFound {
						t.Errorf("a hidden pool that exists, one that does not, and one on a store that is never called differ:\n%s\n%s\n%d %s",
							hidden.body, hiddenMissing.body, tripped.status, tripped.body)
					}
					missing := empty.do(t, method, at("us-1"), body, bearer(tok.unscoped)...)
					if missing.status == http.StatusNotFound && strings.Contains(string(missing.body), "pool-not-found") {
						compared[op.OperationID] = true
						if !bytes.Equal(hidden.body, missing.body) || hidden.header.Get("Content-Type") != missing.header.Get("Content-Type") {
							t.Errorf("a hidden pool: %s\na pool that does not exist: %s", hidden.body, missing.body)
						}
					}
					full.do(t, "PUT", "/v1/pools/eu-1", "", bearer(adminToken)...) // a DELETE may have removed it
					if seen := full.do(t, method, at("eu-1"), body, bearer(tok.token)...); seen.status == http.StatusUnauthorized ||
						seen.status == http.StatusForbidden || strings.Contains(string(seen.body), "pool-not-found") {
						t.Errorf("on a pool it may see: got %d %s", seen.status, seen.body)
					}
				})
			}
		}
	}
	// Every operation that names a pool but putPool (which creates a pool
	// that does not exist), with at least one token: the missing pool's
	// answer got as far as the pool.
	if len(compared) < operations-1 {
		t.Errorf("compared %d answers with those for a pool that does not exist, want at least %d (one per operation but putPool); add a body to scopeBodies", len(compared), operations-1)
	}
}

// TestEveryOperationMayLimit: every operation that takes a token lists
// 401 and 429, so that the scoped and rate-limited answers of new
// operations are documented too.
func TestEveryOperationMayLimit(t *testing.T) {
	for path, item := range loadSpec(t).Paths.Map() {
		for method, op := range item.Operations() {
			if _, ok := op.Extensions["x-role"]; !ok {
				continue
			}
			for _, status := range []string{"401", "429"} {
				if op.Responses.Value(status) == nil {
					t.Errorf("%s %s does not list %s", method, path, status)
				}
			}
		}
	}
}

// TestListPoolsScoped pages through pools of which a scoped token may see
// a few, interleaved with many it may not.
func TestListPoolsScoped(t *testing.T) {
	e := newEnv(t, withTenants(t, nil))
	var want []string
	for i := range 40 {
		name := fmt.Sprintf("ca-%02d", i)
		if i%9 == 4 {
			name = fmt.Sprintf("eu-%02d", i)
			want = append(want, name)
		}
		e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/"+name, "", bearer(adminToken)...)
	}
	// ca-* and eu-* interleave by name only if the hidden ones sort on
	// both sides: add some after.
	for _, name := range []string{"fr-1", "zz-9"} {
		e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/"+name, "", bearer(adminToken)...)
	}
	for _, limit := range []int{1, 2, 5, 1000} {
		var got []string
		cursor, pages := "", 0
		for {
			path := fmt.Sprintf("/v1/pools?limit=%d", limit)
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			var page poolListBody
			e.must(t, http.StatusOK, &page, "GET", path, "", bearer(euClient)...)
			pages++
			for _, p := range page.Pools {
				got = append(got, p.Name)
			}
			if page.NextCursor == nil {
				break
			}
			if len(page.Pools) != limit || pages > 10 {
				t.Fatalf("limit %d: a page of %d with a next cursor", limit, len(page.Pools))
			}
			cursor = *page.NextCursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: got %v, want %v", limit, got, want)
		}
		if wantPages := (len(want) + limit - 1) / limit; pages != wantPages {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, wantPages)
		}
	}
	// Unscoped tokens, of the file and of the environment, see all.
	for _, tok := range []string{clientToken, fileAdmin} {
		var page poolListBody
		e.must(t, http.StatusOK, &page, "GET", "/v1/pools", "", bearer(tok)...)
		if len(page.Pools) != 42 {
			t.Errorf("an unscoped token lists %d pools, want 42", len(page.Pools))
		}
	}
}

// TestScopedAdmin: an admin scoped to some pools creates, changes and
// deletes only those, and may not read /metrics.
func TestScopedAdmin(t *testing.T) {
	e := newEnv(t, withTenants(t, nil))
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/us-1", "", bearer(adminToken)...)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/eu-new", "", bearer(euAdmin)...)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/shared", "", bearer(euAdmin)...)
	e.must(t, http.StatusNotFound, nil, "PUT", "/v1/pools/us-new", "", bearer(euAdmin)...)
	e.must(t, http.StatusNotFound, nil, "GET", "/v1/pools/us-new", "", bearer(adminToken)...)
	e.must(t, http.StatusNotFound, nil, "DELETE", "/v1/pools/us-1", "", bearer(euAdmin)...)
	e.must(t, http.StatusNotFound, nil, "PUT", "/v1/pools/us-1/scales/S1", `{"weight":2}`, bearer(euAdmin)...)
	e.must(t, http.StatusOK, nil, "GET", "/v1/pools/us-1", "", bearer(adminToken)...)
	e.must(t, http.StatusNotFound, nil, "GET", "/v1/pools/us-1/scales/S1", "", bearer(adminToken)...)
	e.must(t, http.StatusNoContent, nil, "DELETE", "/v1/pools/eu-new", "", bearer(euAdmin)...)

	resp := e.must(t, http.StatusForbidden, nil, "GET", "/metrics", "", bearer(euAdmin)...)
	if p := resp.problem(t); !strings.Contains(p.Detail, "not scoped") {
		t.Errorf("403 on /metrics: %s, want it to say the token is scoped", resp.body)
	}
	e.must(t, http.StatusOK, nil, "GET", "/metrics", "", bearer(fileAdmin)...)
	e.must(t, http.StatusOK, nil, "GET", "/metrics", "", bearer(adminToken)...)
	e.must(t, http.StatusForbidden, nil, "GET", "/metrics", "", bearer(euClient)...)
}

// TestTokenSetReplace: a replaced set takes effect with the next request;
// an invalid one changes nothing.
func TestTokenSetReplace(t *testing.T) {
	var set *api.TokenSet
	e := newEnv(t, withTenants(t, &set))
	e.must(t, http.StatusOK, nil, "GET", "/v1/pools", "", bearer(euClient)...)
	const newToken = "eu-client-rotated-0123456789abcdef"
	tokens := tenantTokens()
	tokens[0].SHA256 = sha256.Sum256([]byte(newToken))
	if err := set.Replace(tokens); err != nil {
		t.Fatal(err)
	}
	e.must(t, http.StatusUnauthorized, nil, "GET", "/v1/pools", "", bearer(euClient)...)
	e.must(t, http.StatusOK, nil, "GET", "/v1/pools", "", bearer(newToken)...)
	e.must(t, http.StatusOK, nil, "GET", "/v1/pools", "", bearer(clientToken)...) // the environment's stay

	bad := append(tenantTokens(), api.Token{Name: "eu-orders", SHA256: sha256.Sum256([]byte("x")), Role: api.RoleClient})
	if err := set.Replace(bad); err == nil || !strings.Contains(err.Error(), "taken") {
		t.Errorf("Replace with a name twice: got %v, want an error", err)
	}
	e.must(t, http.StatusOK, nil, "GET", "/v1/pools", "", bearer(newToken)...)
	if got := set.Names(); !slices.Equal(got, []string{"eu-orders", "eu-ops", "ops"}) {
		t.Errorf("Names: got %v", got)
	}
}

// TestEmptyTokenSetSecures: a server with a TokenSet but no token at all
// is not open.
func TestEmptyTokenSetSecures(t *testing.T) {
	set, err := api.NewTokenSet(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := api.New(dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{}), api.Options{Tokens: set})
	req, _ := http.NewRequest("GET", "/v1/pools", nil)
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	if rec.status != http.StatusUnauthorized {
		t.Errorf("got %d, want 401", rec.status)
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(status int) { r.status = status }
