package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sync/atomic"
)

// Role is what a bearer token may do. Roles are ordered: a higher role may
// do everything a lower one may.
type Role int

// The roles of DESIGN §6.
const (
	RoleNone   Role = iota // no valid token
	RoleClient             // dispatch, complete, cancel and read
	RoleAdmin              // everything
)

// String returns the role's name in the tokens file: client or admin.
func (r Role) String() string {
	switch r {
	case RoleClient:
		return "client"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// Token is a bearer token as the server knows it: by the SHA-256 digest of
// the token, never the token itself.
type Token struct {
	// Name names the token in logs and metrics, which never show the token
	// nor its digest.
	Name string
	// SHA256 is the digest of the token.
	SHA256 [sha256.Size]byte
	// Role is what the token may do.
	Role Role
	// Pools are the path.Match patterns of the pools the token may see;
	// nil: every pool (an unscoped token).
	Pools []string
	// RatePerSec is how many requests a second the token may make, all
	// replicas together (Options.Limiter); 0: no limit.
	RatePerSec float64
}

// scoped reports whether the token sees only some pools.
func (t *Token) scoped() bool { return t.Pools != nil }

// sees reports whether the token may see pool.
func (t *Token) sees(pool string) bool {
	if t.Pools == nil {
		return true
	}
	for _, p := range t.Pools {
		if ok, _ := path.Match(p, pool); ok {
			return true
		}
	}
	return false
}

// tokenName is what a token's name must match: an id without the colon,
// which the names of the tokens of the environment variables use
// ("env:admin:1"), so that a file can never name one of those.
var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// MaxRatePerSec bounds a token's ratePerSec.
const MaxRatePerSec = 1_000_000

// check reports what is wrong with t.
func (t *Token) check() error {
	var errs []error
	if !tokenName.MatchString(t.Name) {
		errs = append(errs, fmt.Errorf("name %q: want 1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit", t.Name))
	}
	if t.Role != RoleClient && t.Role != RoleAdmin {
		errs = append(errs, fmt.Errorf("role %s: want client or admin", t.Role))
	}
	if t.Pools != nil && len(t.Pools) == 0 {
		errs = append(errs, errors.New("pools is empty: the token would see no pool; leave pools out for every pool"))
	}
	for _, p := range t.Pools {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			errs = append(errs, fmt.Errorf("pool pattern %q is not a path.Match pattern", p))
		}
	}
	if t.RatePerSec < 0 || t.RatePerSec > MaxRatePerSec || t.RatePerSec != t.RatePerSec {
		errs = append(errs, fmt.Errorf("ratePerSec %v: want 0 (no limit) to %d", t.RatePerSec, MaxRatePerSec))
	}
	return errors.Join(errs...)
}

// checkTokens reports every invalid token and every name or digest that
// two tokens share. Errors name tokens by their name, never by digest.
func checkTokens(tokens []Token) error {
	var errs []error
	names := map[string]bool{}
	digests := map[[sha256.Size]byte]string{}
	for i := range tokens {
		t := &tokens[i]
		if err := t.check(); err != nil {
			errs = append(errs, fmt.Errorf("token %d (%q): %w", i+1, t.Name, err))
		}
		if names[t.Name] {
			errs = append(errs, fmt.Errorf("token %d: the name %q is taken by another token", i+1, t.Name))
		}
		names[t.Name] = true
		if t.SHA256 == ([sha256.Size]byte{}) {
			continue // unset: a digest that did not parse, reported as such
		}
		if other, ok := digests[t.SHA256]; ok {
			errs = append(errs, fmt.Errorf("tokens %q and %q have the same sha256: the same token", other, t.Name))
		}
		digests[t.SHA256] = t.Name
	}
	return errors.Join(errs...)
}

// TokenSet is the tokens the API accepts besides Options.AdminTokens and
// Options.ClientTokens, replaceable while the API serves: a reloaded
// tokens file takes effect with the next request, and requests under way
// finish with the set they started with.
type TokenSet struct {
	cur atomic.Pointer[[]Token]
}

// NewTokenSet returns a set holding tokens: an error, naming every problem,
// if one is invalid (see Replace).
func NewTokenSet(tokens []Token) (*TokenSet, error) {
	s := &TokenSet{}
	if err := s.Replace(tokens); err != nil {
		return nil, err
	}
	return s, nil
}

// Replace makes tokens the set. It changes nothing and returns an error
// naming every problem when a token is invalid: a name that is not 1 to 64
// of A-Z a-z 0-9 . _ - (starting with a letter or digit), a role other
// than client or admin, an empty or malformed pool pattern, a ratePerSec
// outside [0, MaxRatePerSec], or a name or digest that two tokens share.
func (s *TokenSet) Replace(tokens []Token) error {
	if err := checkTokens(tokens); err != nil {
		return err
	}
	own := make([]Token, len(tokens))
	for i, t := range tokens {
		t.Pools = clonePatterns(t.Pools)
		own[i] = t
	}
	s.cur.Store(&own)
	return nil
}

// Names returns the names of the tokens in the set, in its order.
func (s *TokenSet) Names() []string {
	cur := s.load()
	out := make([]string, len(cur))
	for i, t := range cur {
		out[i] = t.Name
	}
	return out
}

func (s *TokenSet) load() []Token {
	if p := s.cur.Load(); p != nil {
		return *p
	}
	return nil
}

func clonePatterns(p []string) []string {
	if p == nil {
		return nil
	}
	return append(make([]string, 0, len(p)), p...)
}

// tokenFileEntry is one token of a tokens file (DESIGN §11).
type tokenFileEntry struct {
	Name       string   `json:"name"`
	SHA256     string   `json:"sha256"`
	Role       string   `json:"role"`
	Pools      []string `json:"pools"`
	RatePerSec *float64 `json:"ratePerSec"`
}

// ParseTokensFile reads a tokens file:
//
//	{"tokens": [{"name": "eu-orders", "sha256": "<64 hex digits>",
//	  "role": "client", "pools": ["eu-*"], "ratePerSec": 500}]}
//
// pools (absent: every pool) and ratePerSec (absent: no limit) are
// optional. It returns an error naming every problem, never a digest: JSON
// that is malformed or has unknown members, a digest that is not 64 hex
// digits, no token at all, or a token that Replace would refuse.
func ParseTokensFile(b []byte) ([]Token, error) {
	var f struct {
		Tokens []tokenFileEntry `json:"tokens"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a tokens file: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a tokens file: data after the JSON object")
	}
	if len(f.Tokens) == 0 {
		return nil, errors.New(`holds no token: want {"tokens": [{"name", "sha256", "role"}, …]}`)
	}
	var errs []error
	tokens := make([]Token, len(f.Tokens))
	for i, e := range f.Tokens {
		t := Token{Name: e.Name, Pools: e.Pools}
		switch e.Role {
		case "client":
			t.Role = RoleClient
		case "admin":
			t.Role = RoleAdmin
		default:
			errs = append(errs, fmt.Errorf("token %d (%q): role %q: want client or admin", i+1, e.Name, e.Role))
			t.Role = RoleClient // reported; keeps check from saying it again
		}
		if d, err := hex.DecodeString(e.SHA256); err != nil || len(d) != sha256.Size {
			errs = append(errs, fmt.Errorf("token %d (%q): sha256 is not 64 hex digits (dispatcher token makes a token and its line)", i+1, e.Name))
		} else {
			t.SHA256 = [sha256.Size]byte(d)
		}
		if e.RatePerSec != nil {
			t.RatePerSec = *e.RatePerSec
			if t.RatePerSec == 0 {
				errs = append(errs, fmt.Errorf("token %d (%q): ratePerSec 0 would refuse every request; leave it out for no limit", i+1, e.Name))
			}
		}
		tokens[i] = t
	}
	if err := errors.Join(append(errs, checkTokens(tokens))...); err != nil {
		return nil, err
	}
	return tokens, nil
}
