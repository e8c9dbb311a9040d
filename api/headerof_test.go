package api

import (
	"net/http"
	"testing"
)

// TestHeaderOf checks that headerOf answers as Header.Get for the header
// names the API reads without canonicalizing them, and that those names
// are in canonical form, as net/http keeps a request's.
func TestHeaderOf(t *testing.T) {
	for _, key := range []string{"Content-Type", requestIDHeader, idempotencyKeyHeader, "Authorization"} {
		if c := http.CanonicalHeaderKey(key); c != key {
			t.Errorf("%q is read as is, but its canonical form is %q", key, c)
		}
		for _, h := range []http.Header{{}, {key: nil}, {key: {""}}, {key: {"a"}}, {key: {"a", "b"}}} {
			if got, want := headerOf(h, key), h.Get(key); got != want {
				t.Errorf("headerOf(%v, %q) = %q, Get says %q", h, key, got, want)
			}
		}
	}
}
