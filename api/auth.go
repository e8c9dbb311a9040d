package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// role is what a bearer token may do. Roles are ordered: a higher role may
// do everything a lower one may.
type role int

const (
	roleNone   role = iota // no valid token
	roleClient             // dispatch, complete, cancel and read
	roleAdmin              // everything
)

func (r role) String() string {
	switch r {
	case roleClient:
		return "client"
	case roleAdmin:
		return "admin"
	}
	return "none"
}

// wwwAuthenticate is the challenge of every 401 (RFC 6750 §3).
const wwwAuthenticate = `Bearer realm="dispatcher"`

// authenticator checks bearer tokens against the configured ones. It keeps
// only their SHA-256 digests, so that every comparison is over 32 bytes and
// takes the same time whatever the length or content of the token sent.
type authenticator struct {
	admin, client [][sha256.Size]byte
}

// newAuthenticator returns the authenticator of the given tokens, or nil
// when there are none: the API is then open. It panics on an empty token,
// which the configuration must have rejected.
func newAuthenticator(admin, client []string) *authenticator {
	if len(admin)+len(client) == 0 {
		return nil
	}
	digests := func(tokens []string) [][sha256.Size]byte {
		out := make([][sha256.Size]byte, len(tokens))
		for i, t := range tokens {
			if t == "" {
				panic("api: an empty bearer token in Options")
			}
			out[i] = sha256.Sum256([]byte(t))
		}
		return out
	}
	return &authenticator{admin: digests(admin), client: digests(client)}
}

// roleOf returns the role of token. It compares the token's digest with
// every configured digest, in constant time and without stopping at a
// match, so the time taken tells nothing about which token matched. A token
// configured in both roles is admin.
func (a *authenticator) roleOf(token string) role {
	d := sha256.Sum256([]byte(token))
	match := func(set [][sha256.Size]byte) int {
		m := 0
		for i := range set {
			m |= subtle.ConstantTimeCompare(d[:], set[i][:])
		}
		return m
	}
	isAdmin, isClient := match(a.admin), match(a.client)
	switch {
	case isAdmin == 1:
		return roleAdmin
	case isClient == 1:
		return roleClient
	}
	return roleNone
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header (the scheme is case-insensitive, RFC 9110 §11.1) and whether the
// request sent one. Tokens are read from this header only, never from the
// query or the body, so they do not end up in access logs or caches.
func bearerToken(r *http.Request) (string, bool) {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return "", len(values) > 1 // several headers: sent, but invalid
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// require returns a middleware that lets a request through only with a
// token of role want or higher: 401 (with a WWW-Authenticate challenge)
// without a token or with an unknown one, 403 with a token of a lower role.
// Without configured tokens it lets every request through. Problem details
// never include the token.
func (s *server) require(want role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if s.auth == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, sent := bearerToken(r)
			if !sent {
				w.Header().Set("WWW-Authenticate", wwwAuthenticate)
				s.writeError(w, r, fmt.Errorf("%w: this route needs an Authorization: Bearer header", errUnauthorized))
				return
			}
			got := roleNone
			if token != "" {
				got = s.auth.roleOf(token)
			}
			if got == roleNone {
				w.Header().Set("WWW-Authenticate", wwwAuthenticate+`, error="invalid_token"`)
				s.writeError(w, r, fmt.Errorf("%w: the bearer token is not valid", errUnauthorized))
				return
			}
			if got < want {
				s.writeError(w, r, fmt.Errorf("%w: this route needs the %s role; the token has the %s role", errForbidden, want, got))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
