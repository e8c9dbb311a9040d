package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/dispatcher/dispatcher/dispatch"
)

// wwwAuthenticate is the challenge of every 401 (RFC 6750 §3).
const wwwAuthenticate = `Bearer realm="dispatcher"`

// authenticator checks bearer tokens against the configured ones. It keeps
// only their SHA-256 digests, so that every comparison is over 32 bytes and
// takes the same time whatever the length or content of the token sent.
type authenticator struct {
	env []Token   // Options.AdminTokens and ClientTokens: unscoped, unlimited
	set *TokenSet // Options.Tokens; nil: none
}

// newAuthenticator returns the authenticator of the given tokens, or nil
// when there are none and no set: the API is then open. A set, even one
// holding no token, secures the API. It panics on an empty token, which
// the configuration must have rejected.
func newAuthenticator(admin, client []string, set *TokenSet) *authenticator {
	if len(admin)+len(client) == 0 && set == nil {
		return nil
	}
	a := &authenticator{set: set}
	add := func(tokens []string, r Role) {
		for i, t := range tokens {
			if t == "" {
				panic("api: an empty bearer token in Options")
			}
			a.env = append(a.env, Token{Name: fmt.Sprintf("env:%s:%d", r, i+1), SHA256: sha256.Sum256([]byte(t)), Role: r})
		}
	}
	// Admin tokens first: a token configured in both roles is admin.
	add(admin, RoleAdmin)
	add(client, RoleClient)
	return a
}

// lookup returns the configured token that token is, nil if none. It
// compares the token's digest with every configured digest, in constant
// time and without stopping at a match, so the time taken tells nothing
// about which token matched. The environment's tokens come first.
func (a *authenticator) lookup(token string) *Token {
	d := sha256.Sum256([]byte(token))
	var found *Token
	scan := func(set []Token) {
		for i := range set {
			if subtle.ConstantTimeCompare(d[:], set[i].SHA256[:]) == 1 && found == nil {
				found = &set[i]
			}
		}
	}
	scan(a.env)
	if a.set != nil {
		scan(a.set.load())
	}
	return found
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header (the scheme is case-insensitive, RFC 9110 §11.1) and whether the
// request sent one. Tokens are read from this header only, never from the
// query or the body, so they do not end up in access logs or caches.
func bearerToken(r *http.Request) (string, bool) {
	values := r.Header["Authorization"] // canonical, as net/http keeps it
	if len(values) != 1 {
		return "", len(values) > 1 // several headers: sent, but invalid
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// Reasons a request with a token is refused, as the metrics and the log
// name them.
const (
	deniedUnauthorized = "unauthorized" // no token, or an unknown one: 401
	deniedForbidden    = "forbidden"    // a role or scope too small for the route: 403
	deniedHiddenPool   = "hidden-pool"  // a pool outside the token's patterns: 404
	deniedRateLimited  = "rate-limited" // over the token's ratePerSec: 429
	deniedLimiterDown  = "limiter-down" // the limiter failed and fails closed: 503
)

// require returns a middleware that lets a request through only with a
// known token of role want or higher, within its rate, and on a pool its
// patterns match, in that order:
//   - 401 (with a WWW-Authenticate challenge) without a token or with an
//     unknown one;
//   - 429 over the token's ratePerSec (see limit), counted before the
//     checks below, so that a token that keeps knocking on what it may not
//     use is held back too;
//   - 403 with a token of a lower role;
//   - 404 pool-not-found for a pool the token may not see, exactly as for
//     a pool that does not exist, before any store read.
//
// Without configured tokens it lets every request through. Problem details
// never include the token.
func (s *server) require(want Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if s.auth == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info := infoOf(r)
			token, sent := bearerToken(r)
			if !sent {
				info.deny(s, "", deniedUnauthorized)
				w.Header().Set("WWW-Authenticate", wwwAuthenticate)
				s.writeError(w, r, fmt.Errorf("%w: this route needs an Authorization: Bearer header", errUnauthorized))
				return
			}
			var tok *Token
			if token != "" {
				tok = s.auth.lookup(token)
			}
			if tok == nil {
				info.deny(s, "", deniedUnauthorized)
				w.Header().Set("WWW-Authenticate", wwwAuthenticate+`, error="invalid_token"`)
				s.writeError(w, r, fmt.Errorf("%w: the bearer token is not valid", errUnauthorized))
				return
			}
			info.token = tok
			s.metrics.auth.tokenRequest(tok.Name)
			if err := s.limit(r, tok); err != nil {
				s.writeError(w, r, err)
				return
			}
			if tok.Role < want {
				info.deny(s, tok.Name, deniedForbidden)
				s.writeError(w, r, fmt.Errorf("%w: this route needs the %s role; the token has the %s role", errForbidden, want, tok.Role))
				return
			}
			if chi.URLParam(r, "pool") != "" {
				// An invalid name goes on to its 400, which a pool that
				// does not exist gets too, without a store read.
				if pool := pathID(r, "pool"); dispatch.IDPattern.MatchString(pool) && !tok.sees(pool) {
					info.deny(s, tok.Name, deniedHiddenPool)
					s.writeError(w, r, hiddenPool(pool))
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// hiddenPool is the error of a pool the token may not see: word for word
// the one the stores return for a pool that does not exist.
func hiddenPool(name string) error {
	return fmt.Errorf("%w: pool %q", dispatch.ErrPoolNotFound, name)
}

// unscoped lets a request through only with a token that sees every pool
// (or on an open API): 403 for a scoped one. /metrics takes it, as its
// labels name every busy pool.
func (s *server) unscoped(next http.Handler) http.Handler {
	if s.auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := infoOf(r)
		if tok := info.token; tok != nil && tok.scoped() {
			info.deny(s, tok.Name, deniedForbidden)
			s.writeError(w, r, fmt.Errorf("%w: this route needs a token that is not scoped to pools; token %q sees only %s",
				errForbidden, tok.Name, strings.Join(quoteAll(tok.Pools), ", ")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}

// visible returns the filter of the pools the request's token may see, nil
// for all of them.
func visible(r *http.Request) func(string) bool {
	tok := infoOf(r).token
	if tok == nil || !tok.scoped() {
		return nil
	}
	return tok.sees
}
