package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// minTokenLen is the shortest bearer token accepted: a token is a
// password that every request carries, so it must not be guessable.
const minTokenLen = 16

// tokenList is the bearer tokens of one role. It prints, logs and
// marshals as its count, never its values, so that printing or logging a
// config cannot leak a token.
type tokenList []string

// String says how many tokens the list holds.
func (l tokenList) String() string { return fmt.Sprintf("%d %s", len(l), plural(len(l), "token")) }

// GoString masks the tokens for %#v as String does for %v.
func (l tokenList) GoString() string { return "tokenList(" + l.String() + ")" }

// LogValue masks the tokens in slog output.
func (l tokenList) LogValue() slog.Value { return slog.StringValue(l.String()) }

// MarshalJSON masks the tokens in JSON, where slog's JSON handler puts a
// config logged whole.
func (l tokenList) MarshalJSON() ([]byte, error) { return json.Marshal(l.String()) }

// loadTokens returns the tokens of the variable DISPATCHER_<name>, given
// either inline (value) or in a file (path, from DISPATCHER_<name>_FILE or
// its flag), but not both. Tokens are separated by commas or newlines and
// trimmed of whitespace. A variable or file that is set must hold at least
// one token, so that a secret mounted empty stops the start-up instead of
// leaving the service open. Errors never include a token.
func loadTokens(name, value, path string) (tokenList, error) {
	v := "DISPATCHER_" + name
	switch {
	case value != "" && path != "":
		return nil, fmt.Errorf("%s are given both inline (%s) and in a file (%s_FILE or -%s-file): set one",
			strings.ToLower(strings.ReplaceAll(name, "_", " ")), v, v, strings.ToLower(strings.ReplaceAll(name, "_", "-")))
	case path != "":
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s_FILE: %w", v, err)
		}
		value, v = string(b), v+"_FILE "+path
	case value == "":
		return nil, nil
	}
	tokens, err := splitTokens(value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v, err)
	}
	return tokens, nil
}

// splitTokens splits s at commas and newlines, trims the tokens and checks
// each: at least minTokenLen characters of RFC 6750's token68 alphabet, so
// that any client can send it in an Authorization header.
func splitTokens(s string) (tokenList, error) {
	var tokens tokenList
	var errs []error
	for i, t := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			continue
		case len(t) < minTokenLen:
			errs = append(errs, fmt.Errorf("token %d has %d characters, want at least %d (e.g. openssl rand -hex 32)", i+1, len(t), minTokenLen))
		case !validToken(t):
			errs = append(errs, fmt.Errorf("token %d has a character outside A-Z a-z 0-9 - . _ ~ + / and a trailing =", i+1))
		default:
			tokens = append(tokens, t)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(tokens) == 0 {
		return nil, errors.New("holds no token")
	}
	return tokens, nil
}

// validToken reports whether t is an RFC 6750 b64token: letters, digits,
// - . _ ~ + / and then only =.
func validToken(t string) bool {
	body := strings.TrimRight(t, "=")
	if body == "" {
		return false
	}
	for _, c := range []byte(body) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~+/", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// authSummary describes the configured tokens for the start-up log: how
// many of each role, and the names of the file's, never their values nor
// digests.
func authSummary(admin, client tokenList, file fileTokens) string {
	if len(admin)+len(client)+len(file) == 0 {
		return "open: no tokens"
	}
	s := fmt.Sprintf("%d admin %s, %d client %s", len(admin), plural(len(admin), "token"), len(client), plural(len(client), "token"))
	if len(file) > 0 {
		s += ", file: " + file.String()
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
