package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Tokens of the tests, long enough to be accepted.
const (
	tokA = "admin-aaaaaaaaaaaaaaaa"
	tokB = "admin-bbbbbbbbbbbbbbbb"
	tokC = "client-cccccccccccccccc"
)

// writeFile writes content to a file in a fresh directory and returns its
// path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseConfigTokens(t *testing.T) {
	file := writeFile(t, "  "+tokA+"\n\n"+tokB+" ,\r\n")
	for _, tc := range []struct {
		name          string
		env           map[string]string
		args          []string
		admin, client tokenList
	}{
		{"none", nil, nil, nil, nil},
		{"inline, rotation", map[string]string{
			"DISPATCHER_ADMIN_TOKENS":  tokA + ", " + tokB,
			"DISPATCHER_CLIENT_TOKENS": tokC,
		}, nil, tokenList{tokA, tokB}, tokenList{tokC}},
		{"file", map[string]string{"DISPATCHER_ADMIN_TOKENS_FILE": file}, nil, tokenList{tokA, tokB}, nil},
		{"file by flag", map[string]string{"DISPATCHER_CLIENT_TOKENS": tokC}, []string{"-admin-tokens-file", file}, tokenList{tokA, tokB}, tokenList{tokC}},
		{"client tokens only", map[string]string{"DISPATCHER_CLIENT_TOKENS_FILE": writeFile(t, tokC)}, nil, nil, tokenList{tokC}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseConfig(tc.args, envOf(tc.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.AdminTokens, tc.admin) || !reflect.DeepEqual(c.ClientTokens, tc.client) {
				t.Errorf("got admin %q client %q, want %q %q", []string(c.AdminTokens), []string(c.ClientTokens), []string(tc.admin), []string(tc.client))
			}
		})
	}
}

func TestParseConfigRejectsTokens(t *testing.T) {
	short := "short-secret"
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"variable and file", map[string]string{"DISPATCHER_ADMIN_TOKENS": tokA, "DISPATCHER_ADMIN_TOKENS_FILE": writeFile(t, tokB)}, nil, "given both inline"},
		{"variable and flag", map[string]string{"DISPATCHER_CLIENT_TOKENS": tokC}, []string{"-client-tokens-file", writeFile(t, tokC)}, "given both inline"},
		{"empty file", map[string]string{"DISPATCHER_ADMIN_TOKENS_FILE": writeFile(t, " \n,\n")}, nil, "holds no token"},
		{"only separators", map[string]string{"DISPATCHER_CLIENT_TOKENS": " , "}, nil, "holds no token"},
		{"missing file", map[string]string{"DISPATCHER_CLIENT_TOKENS_FILE": "/nonexistent/tokens"}, nil, "no such file"},
		{"short token", map[string]string{"DISPATCHER_ADMIN_TOKENS": tokA + "," + short}, nil, "token 2 has 12 characters"},
		{"bad character", map[string]string{"DISPATCHER_CLIENT_TOKENS": "client token with spaces"}, nil, "token 1 has a character outside"},
		{"one token, two roles", map[string]string{"DISPATCHER_ADMIN_TOKENS": tokA, "DISPATCHER_CLIENT_TOKENS": tokC + "," + tokA}, nil, "both an admin and a client token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(tc.args, envOf(tc.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			for _, tok := range []string{tokA, tokB, tokC, short, "with spaces"} {
				if strings.Contains(err.Error(), tok) {
					t.Errorf("the error shows a token: %v", err)
				}
			}
		})
	}
}

func TestValidToken(t *testing.T) {
	for tok, want := range map[string]bool{
		"abcXYZ019-._~+/": true, "YWJjZGVm==": true, "=": false, "a=b": false, "a b": false, "a\"b": false, "é": false,
	} {
		if got := validToken(tok); got != want {
			t.Errorf("validToken(%q) = %v, want %v", tok, got, want)
		}
	}
}

// TestConfigMasksTokens prints and logs a config in every way and checks
// that the tokens never show.
func TestConfigMasksTokens(t *testing.T) {
	c := defaultConfig()
	c.AdminTokens, c.ClientTokens = tokenList{tokA, tokB}, tokenList{tokC}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%v %+v %#v %s\n", c, c, c, c.AdminTokens)
	log := slog.New(slog.NewJSONHandler(&out, nil))
	log.Info("config", "config", c, "admin", c.AdminTokens)
	slog.New(slog.NewTextHandler(&out, nil)).Info("config", "client", c.ClientTokens)
	for _, tok := range []string{tokA, tokB, tokC} {
		if strings.Contains(out.String(), tok) {
			t.Errorf("a token shows:\n%s", out.String())
		}
	}
	if !strings.Contains(out.String(), "2 tokens") || !strings.Contains(out.String(), "1 token") {
		t.Errorf("want the token counts:\n%s", out.String())
	}
	if got := authSummary(c.AdminTokens, c.ClientTokens, nil); got != "2 admin tokens, 1 client token" {
		t.Errorf("authSummary: got %q", got)
	}
}
