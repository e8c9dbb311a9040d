package api_test

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dispatcher/dispatcher/api"
)

// BenchmarkTenancy measures, through the whole handler of New without a
// network, what scoped tokens cost and what a hidden pool tells:
//   - read/*: GET a pool with an environment token, with a scoped token of
//     the file among 1 or 1,000 tokens (the lookup compares every digest),
//     and with a rate-limited one (LocalLimiter, never over);
//   - hidden/*: a scoped token on a pool outside its patterns that exists
//     and on one that does not: the same path, no store read, so the two
//     take the same time.
func BenchmarkTenancy(b *testing.B) {
	svc := benchService(b, 0, "eu-1", "us-1")
	server := func(n int) http.Handler {
		tokens := []api.Token{
			{Name: "eu-orders", SHA256: sha256.Sum256([]byte(euClient)), Role: api.RoleClient, Pools: []string{"eu-*"}},
			{Name: "metered", SHA256: sha256.Sum256([]byte(meteredToken)), Role: api.RoleClient, Pools: []string{"eu-*"}, RatePerSec: 1e6},
		}
		for i := len(tokens); i < n; i++ {
			tokens = append(tokens, api.Token{Name: fmt.Sprintf("t-%d", i), SHA256: sha256.Sum256(fmt.Appendf(nil, "token-%d", i)), Role: api.RoleClient, Pools: []string{"x-*"}})
		}
		set, err := api.NewTokenSet(tokens)
		if err != nil {
			b.Fatal(err)
		}
		return benchHandler(svc, api.Options{AdminTokens: []string{adminToken}, ClientTokens: []string{clientToken}, Tokens: set}, slog.LevelInfo)
	}
	few, many := server(2), server(1000)
	for _, c := range []struct {
		name, token, path string
		h                 http.Handler
		want              int
	}{
		{"read/env-token", clientToken, "/v1/pools/eu-1", few, http.StatusOK},
		{"read/scoped-of-2", euClient, "/v1/pools/eu-1", few, http.StatusOK},
		{"read/scoped-of-1000", euClient, "/v1/pools/eu-1", many, http.StatusOK},
		{"read/rate-limited", meteredToken, "/v1/pools/eu-1", few, http.StatusOK},
		{"hidden/exists", euClient, "/v1/pools/us-1", few, http.StatusNotFound},
		{"hidden/missing", euClient, "/v1/pools/us-2", few, http.StatusNotFound},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("GET", c.path, nil)
				r.Header.Set("Authorization", "Bearer "+c.token)
				benchServe(b, c.h, r, c.want)
			}
		})
	}
}
