package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/api"
)

func TestParseTokensFile(t *testing.T) {
	d := hex.EncodeToString(func() []byte { s := sha256.Sum256([]byte("a-token-of-the-test-0123")); return s[:] }())
	d2 := strings.Repeat("ab", 32)
	tokens, err := api.ParseTokensFile([]byte(`{"tokens": [
		{"name": "eu-orders", "sha256": "` + d + `", "role": "client", "pools": ["eu-*", "shared"], "ratePerSec": 500},
		{"name": "ops", "sha256": "` + strings.ToUpper(d2) + `", "role": "admin"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(tokens) != 2 || tokens[0].Name != "eu-orders" || tokens[0].Role != api.RoleClient || tokens[0].RatePerSec != 500 ||
		strings.Join(tokens[0].Pools, ",") != "eu-*,shared" || hex.EncodeToString(tokens[0].SHA256[:]) != d {
		t.Errorf("got %+v", tokens[0])
	}
	if tokens[1].Role != api.RoleAdmin || tokens[1].Pools != nil || tokens[1].RatePerSec != 0 || hex.EncodeToString(tokens[1].SHA256[:]) != d2 {
		t.Errorf("got %+v", tokens[1])
	}

	entry := func(fields string) string { return `{"tokens": [{` + fields + `}]}` }
	ok := `"name": "a", "sha256": "` + d + `", "role": "client"`
	for _, c := range []struct{ name, file, want string }{
		{"not JSON", `{"tokens": [`, "not a tokens file"},
		{"trailing data", entry(ok) + ` {}`, "data after"},
		{"unknown member", entry(ok + `, "scope": "eu"`), "unknown field"},
		{"no token", `{"tokens": []}`, "holds no token"},
		{"no tokens member", `{}`, "holds no token"},
		{"short digest", entry(`"name": "a", "sha256": "abcd", "role": "client"`), "64 hex digits"},
		{"not hex", entry(`"name": "a", "sha256": "` + strings.Repeat("zz", 32) + `", "role": "client"`), "64 hex digits"},
		{"no role", entry(`"name": "a", "sha256": "` + d + `"`), "role"},
		{"unknown role", entry(`"name": "a", "sha256": "` + d + `", "role": "root"`), `role "root"`},
		{"bad name", entry(`"name": "env:admin:1", "sha256": "` + d + `", "role": "client"`), "name"},
		{"no name", entry(`"sha256": "` + d + `", "role": "client"`), "name"},
		{"empty pools", entry(ok + `, "pools": []`), "pools is empty"},
		{"bad pattern", entry(ok + `, "pools": ["eu-["]`), "path.Match"},
		{"rate 0", entry(ok + `, "ratePerSec": 0`), "ratePerSec 0"},
		{"negative rate", entry(ok + `, "ratePerSec": -1`), "ratePerSec"},
		{"huge rate", entry(ok + `, "ratePerSec": 1e9`), "ratePerSec"},
		{"name twice", `{"tokens": [{` + ok + `}, {"name": "a", "sha256": "` + d2 + `", "role": "admin"}]}`, "taken"},
		{"digest twice", `{"tokens": [{` + ok + `}, {"name": "b", "sha256": "` + d + `", "role": "admin"}]}`, "same sha256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := api.ParseTokensFile([]byte(c.file))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			if strings.Contains(strings.ToLower(err.Error()), d) || strings.Contains(strings.ToLower(err.Error()), d2) {
				t.Errorf("the error shows a digest: %v", err)
			}
		})
	}
}
