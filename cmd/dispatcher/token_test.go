package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenCommand makes a token with `dispatcher token`, puts its line in
// a tokens file, and calls the service with the token.
func TestTokenCommand(t *testing.T) {
	var out bytes.Buffer
	args := []string{"token", "-name", "eu-orders", "-pools", "eu-*, shared", "-rate", "50"}
	if err := run(context.Background(), args, envOf(nil), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %q, want two lines", out.String())
	}
	token, line := lines[0], lines[1]
	if len(token) != 43 || !validToken(token) {
		t.Errorf("token %q: want 43 characters of token68", token)
	}
	d := sha256.Sum256([]byte(token))
	if want := `{"name":"eu-orders","sha256":"` + hex.EncodeToString(d[:]) + `","role":"client","pools":["eu-*","shared"],"ratePerSec":50}`; line != want {
		t.Errorf("line\ngot  %s\nwant %s", line, want)
	}
	var again bytes.Buffer
	if err := run(context.Background(), args, envOf(nil), &again, io.Discard); err != nil || strings.HasPrefix(again.String(), token) {
		t.Errorf("a second token is the first: %v", err)
	}

	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte(`{"tokens": [`+line+`]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, _ := startRun(t, nil, map[string]string{"DISPATCHER_TOKENS_FILE": path})
	if s, body := get(t, "http://"+addr+"/v1/pools", token); s != http.StatusOK {
		t.Errorf("GET /v1/pools with the new token: %d %s", s, body)
	}
}

func TestTokenCommandRejects(t *testing.T) {
	for _, args := range [][]string{
		{"token"},                              // no name
		{"token", "-name", "a:b"},              // a name the file refuses
		{"token", "-name", "a", "-role", "x"},  // no such role
		{"token", "-name", "a", "-pools", "["}, // a bad pattern
		{"token", "-name", "a", "extra"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, envOf(nil), &out, io.Discard); err == nil || out.Len() > 0 {
			t.Errorf("%v: got %v and %q, want an error and nothing printed", args, err, out.String())
		}
	}
}
