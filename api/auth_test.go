package api_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// Tokens of the secured test servers: two admin tokens, as during a
// rotation, and one client token.
const (
	adminToken    = "admin-token-0123456789abcdef"
	adminTokenNew = "admin-token-rotated-fedcba9876"
	clientToken   = "client-token-0123456789abcdef"
	unknownToken  = "unknown-token-0123456789abcdef"
)

// withTokens secures the server with the test tokens.
func withTokens() envOption {
	return withAPI(func(o *api.Options) {
		o.AdminTokens = []string{adminToken, adminTokenNew}
		o.ClientTokens = []string{clientToken}
	})
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// challenge and invalidToken are the WWW-Authenticate values of a 401
// without and with a token.
const (
	challenge    = `Bearer realm="dispatcher"`
	invalidToken = `Bearer realm="dispatcher", error="invalid_token"`
)

// TestAuthMatrix calls an open, a client and two admin routes as every
// kind of caller.
func TestAuthMatrix(t *testing.T) {
	e := newEnv(t, withTokens())
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p", "", bearer(adminToken)...)

	type caller struct {
		name    string
		query   string // appended to the path
		headers []string
		role    string // "", "client" or "admin": what the server must see
		www     string // the challenge of a 401
	}
	callers := []caller{
		{"no token", "", nil, "", challenge},
		{"unknown token", "", bearer(unknownToken), "", invalidToken},
		{"empty bearer", "", []string{"Authorization", "Bearer "}, "", invalidToken},
		{"basic scheme", "", []string{"Authorization", "Basic " + adminToken}, "", challenge},
		{"token prefix", "", bearer(adminToken[:len(adminToken)-1]), "", invalidToken},
		{"token in the query", "?access_token=" + adminToken, nil, "", challenge},
		{"two headers", "", append(bearer(adminToken), bearer(adminToken)...), "", invalidToken},
		{"client", "", bearer(clientToken), "client", ""},
		{"admin", "", bearer(adminToken), "admin", ""},
		{"admin, rotated token", "", bearer(adminTokenNew), "admin", ""},
		{"admin, lower-case scheme", "", []string{"Authorization", "bearer " + adminToken}, "admin", ""},
	}
	routes := []struct {
		name, method, path, body string
		need                     string // "", "client" or "admin"
		ok                       int
	}{
		{"open", "GET", "/healthz", "", "", http.StatusOK},
		{"client read", "GET", "/v1/pools/p", "", "client", http.StatusOK},
		{"client dispatch (dry run)", "POST", "/v1/pools/p/batches?dryRun=true", ordersJSON("o-1"), "client", http.StatusConflict},
		{"admin write", "PUT", "/v1/pools/p", "", "admin", http.StatusOK},
		{"admin metrics", "GET", "/metrics", "", "admin", http.StatusOK},
	}
	rank := map[string]int{"": 0, "client": 1, "admin": 2}
	for _, c := range callers {
		for _, rt := range routes {
			t.Run(c.name+"/"+rt.name, func(t *testing.T) {
				path := rt.path
				if c.query != "" {
					path += c.query
					if strings.Contains(rt.path, "?") {
						path = rt.path + "&" + c.query[1:]
					}
				}
				resp := e.do(t, rt.method, path, rt.body, c.headers...)
				switch {
				case rank[c.role] >= rank[rt.need]:
					if resp.status != rt.ok {
						t.Fatalf("got %d, want %d; body %s", resp.status, rt.ok, resp.body)
					}
				case c.role == "":
					if resp.status != http.StatusUnauthorized {
						t.Fatalf("got %d, want 401; body %s", resp.status, resp.body)
					}
					if p := resp.problem(t); p.Type != problemPrefix+"unauthorized" {
						t.Errorf("got type %s, want unauthorized", p.Type)
					}
					if got := resp.header.Get("WWW-Authenticate"); got != c.www {
						t.Errorf("WWW-Authenticate %q, want %q", got, c.www)
					}
				default:
					if resp.status != http.StatusForbidden {
						t.Fatalf("got %d, want 403; body %s", resp.status, resp.body)
					}
					if p := resp.problem(t); p.Type != problemPrefix+"forbidden" || !strings.Contains(p.Detail, "admin role") {
						t.Errorf("got %s, want forbidden naming the admin role", resp.body)
					}
					if got := resp.header.Get("WWW-Authenticate"); got != "" {
						t.Errorf("403 with WWW-Authenticate %q", got)
					}
				}
			})
		}
	}
}

// TestAuthRolesMatchSpec calls every operation of openapi.yaml without a
// token, with a client token and with an admin token, and checks that the
// server enforces the role the spec states (security: [] or x-role).
func TestAuthRolesMatchSpec(t *testing.T) {
	e := newEnv(t, withTokens())
	ids := strings.NewReplacer("{pool}", "ghost", "{compId}", "S1", "{orderId}", "o-1", "{batchId}", "b-1")
	for path, item := range loadSpec(t).Paths.Map() {
		for method, op := range item.Operations() {
			need, _ := op.Extensions["x-role"].(string)
			open := op.Security != nil && len(*op.Security) == 0
			if open == (need != "") {
				t.Errorf("%s %s: give it either security: [] or an x-role (got %q)", method, path, need)
				continue
			}
			p := ids.Replace(path)
			if resp := e.do(t, method, p, ""); !open && resp.status != http.StatusUnauthorized {
				t.Errorf("%s %s without a token: got %d, want 401", method, path, resp.status)
			} else if open && resp.status == http.StatusUnauthorized {
				t.Errorf("%s %s is open, but answered 401", method, path)
			}
			resp := e.do(t, method, p, "", bearer(clientToken)...)
			if forbidden := resp.status == http.StatusForbidden; forbidden != (need == "admin") {
				t.Errorf("%s %s (x-role %q) with a client token: got %d", method, path, need, resp.status)
			}
			if resp := e.do(t, method, p, "", bearer(adminToken)...); resp.status == http.StatusUnauthorized || resp.status == http.StatusForbidden {
				t.Errorf("%s %s with an admin token: got %d", method, path, resp.status)
			}
		}
	}
}

// TestAuthOpenWithoutTokens checks that a server without tokens answers
// every role's routes without a token, and ignores tokens sent.
func TestAuthOpenWithoutTokens(t *testing.T) {
	e := newEnv(t)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p", "")
	e.must(t, http.StatusOK, nil, "GET", "/v1/pools/p", "", bearer(unknownToken)...)
	e.must(t, http.StatusOK, nil, "GET", "/metrics", "")
	e.must(t, http.StatusNoContent, nil, "DELETE", "/v1/pools/p", "")
}

// TestTokensNeverLogged drives every path a token can take (accepted,
// unknown, wrong role, a failing request, a panic) and checks that neither
// the log nor any answer shows it.
func TestTokensNeverLogged(t *testing.T) {
	mem := memory.New(memory.Options{})
	if _, _, err := mem.PutPool(context.Background(), "p", dispatch.PoolSpec{}, fixedTime); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withTokens(), withStore(faultyStore{Store: mem, err: errors.New("disk on fire")}))
	var answers strings.Builder
	for _, req := range []struct {
		method, path string
		headers      []string
	}{
		{"GET", "/v1/pools", bearer(adminToken)},
		{"GET", "/v1/pools/p", bearer(clientToken)}, // 500 from the store
		{"PUT", "/v1/pools/q", bearer(clientToken)},
		{"GET", "/v1/pools", bearer(unknownToken)},
		{"GET", "/metrics", bearer(adminTokenNew)},
		{"GET", "/v1/pools", []string{"Authorization", "Basic " + adminToken}},
	} {
		resp := e.do(t, req.method, req.path, "", req.headers...)
		answers.Write(resp.body)
		for name, vs := range resp.header {
			answers.WriteString(name + ": " + strings.Join(vs, ",") + "\n")
		}
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "disk on fire") || !strings.Contains(logs, `"status":403`) {
		t.Fatalf("the log misses the requests:\n%s", logs)
	}
	for _, tok := range []string{adminToken, adminTokenNew, clientToken, unknownToken} {
		if strings.Contains(logs, tok) {
			t.Errorf("the log shows token %s:\n%s", tok, logs)
		}
		if strings.Contains(answers.String(), tok) {
			t.Errorf("an answer shows token %s:\n%s", tok, answers.String())
		}
	}
}

// TestSpecCheckSecured makes sure that the validating client of a secured
// server fails when an operation that needs a token is answered without
// one.
func TestSpecCheckSecured(t *testing.T) {
	answer := roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/plain"}}, Body: http.NoBody}, nil
	})
	client := &http.Client{Transport: newSpecCheck(t, answer, true)}
	for _, c := range []struct {
		token   string
		wantErr bool
	}{{"", true}, {adminToken, false}} {
		req, _ := http.NewRequest("GET", "http://dispatcher.test/metrics", nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if gotErr := err != nil; gotErr != c.wantErr {
			t.Errorf("token %q: got error %v, want error %v", c.token, err, c.wantErr)
		}
	}
}

func TestNewPanicsOnEmptyToken(t *testing.T) {
	defer func() {
		if v := recover(); v == nil || !strings.HasPrefix(v.(string), "api: ") {
			t.Errorf("got panic %v, want one naming the package", v)
		}
	}()
	api.New(dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{}), api.Options{ClientTokens: []string{""}})
}
