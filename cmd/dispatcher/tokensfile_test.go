package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dispatcher/dispatcher/api"
)

// Tokens of the tokens file tests.
const (
	tokEU    = "eu-client-token-0123456789"
	tokEUNew = "eu-client-token-rotated-0123"
	tokOps   = "ops-admin-token-0123456789"
)

// tokenEntry is a token's entry in a tokens file; extra is more members
// (`, "pools": ["eu-*"]`).
func tokenEntry(name, token, role, extra string) string {
	d := sha256.Sum256([]byte(token))
	return fmt.Sprintf(`{"name": %q, "sha256": %q, "role": %q%s}`, name, hex.EncodeToString(d[:]), role, extra)
}

func tokensFile(entries ...string) string {
	return `{"tokens": [` + strings.Join(entries, ", ") + `]}`
}

// secretVolume lays out a directory as the kubelet lays out a Secret
// volume: each version in a timestamped directory, a ..data symlink to the
// current one, and the key's file a symlink through ..data. An update
// writes a new directory and swaps ..data atomically (a new symlink renamed
// over the old), then removes the old directory, as the kubelet's
// AtomicWriter does.
type secretVolume struct {
	t       *testing.T
	dir     string
	version int
	current string
}

func newSecretVolume(t *testing.T, content string) *secretVolume {
	v := &secretVolume{t: t, dir: t.TempDir()}
	v.update(content)
	if err := os.Symlink(filepath.Join("..data", "tokens.json"), filepath.Join(v.dir, "tokens.json")); err != nil {
		t.Fatal(err)
	}
	return v
}

// path is the file the service is told to read.
func (v *secretVolume) path() string { return filepath.Join(v.dir, "tokens.json") }

func (v *secretVolume) update(content string) {
	v.t.Helper()
	v.version++
	ts := fmt.Sprintf("..2026_12_01_15_00_%02d.%09d", v.version, v.version)
	must := func(err error) {
		if err != nil {
			v.t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(v.dir, ts), 0o755))
	must(os.WriteFile(filepath.Join(v.dir, ts, "tokens.json"), []byte(content), 0o644))
	must(os.Symlink(ts, filepath.Join(v.dir, "..data_tmp")))
	must(os.Rename(filepath.Join(v.dir, "..data_tmp"), filepath.Join(v.dir, "..data")))
	if v.current != "" {
		must(os.RemoveAll(filepath.Join(v.dir, v.current)))
	}
	v.current = ts
}

// eventually polls cond every 10 ms until it holds, failing t after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func statusOf(t *testing.T, url, token string) func() int {
	return func() int { s, _ := get(t, url, token); return s }
}

// TestTokensFileSecretSwap serves with a tokens file in a Kubernetes Secret
// volume and updates the Secret as the kubelet does: a rotation (old and
// new token both valid, then the old one removed), then a broken file,
// which changes nothing and is logged, then a fixed one.
func TestTokensFileSecretSwap(t *testing.T) {
	vol := newSecretVolume(t, tokensFile(
		tokenEntry("eu-orders", tokEU, "client", `, "pools": ["eu-*"]`),
		tokenEntry("ops", tokOps, "admin", "")))
	addr, sink := startRun(t, nil, map[string]string{
		"DISPATCHER_TOKENS_FILE":           vol.path(),
		"DISPATCHER_TOKENS_CHECK_INTERVAL": "20ms",
		"DISPATCHER_ADMIN_TOKENS":          tokA,
	})
	base := "http://" + addr
	do(t, "PUT", base+"/v1/pools/eu-1", "", http.StatusUnauthorized) // no token
	for _, tok := range []string{tokA, tokOps} {
		req, _ := http.NewRequest("PUT", base+"/v1/pools/"+map[string]string{tokA: "eu-1", tokOps: "us-1"}[tok], nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("PUT a pool: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	eu, euNew, ops, env := statusOf(t, base+"/v1/pools/eu-1", tokEU), statusOf(t, base+"/v1/pools/eu-1", tokEUNew),
		statusOf(t, base+"/v1/pools/us-1", tokOps), statusOf(t, base+"/v1/pools/us-1", tokA)
	if s := statusOf(t, base+"/v1/pools/us-1", tokEU)(); s != http.StatusNotFound {
		t.Errorf("the scoped token on another pool: got %d, want 404", s)
	}
	if eu() != 200 || euNew() != 401 || ops() != 200 || env() != 200 {
		t.Fatalf("before the update: eu %d, euNew %d, ops %d, env %d", eu(), euNew(), ops(), env())
	}

	// Rotation, step 1: both tokens valid.
	vol.update(tokensFile(
		tokenEntry("eu-orders", tokEU, "client", `, "pools": ["eu-*"]`),
		tokenEntry("eu-orders-next", tokEUNew, "client", `, "pools": ["eu-*"]`),
		tokenEntry("ops", tokOps, "admin", "")))
	eventually(t, "the new token is accepted", func() bool { return euNew() == 200 })
	if eu() != 200 {
		t.Errorf("during the rotation the old token: got %d, want 200", eu())
	}
	// Step 2: the old token gone.
	vol.update(tokensFile(
		tokenEntry("eu-orders-next", tokEUNew, "client", `, "pools": ["eu-*"]`),
		tokenEntry("ops", tokOps, "admin", "")))
	eventually(t, "the old token is refused", func() bool { return eu() == 401 })

	// A broken file: logged, and the tokens in force stay.
	vol.update(`{"tokens": [{"name": "eu-orders", "sha256": "not hex", "role": "client"}]}`)
	eventually(t, "the broken file is logged", func() bool { return strings.Contains(sink.String(), "tokens file not loaded") })
	if euNew() != 200 || ops() != 200 || env() != 200 {
		t.Errorf("after a broken file: euNew %d, ops %d, env %d, want 200", euNew(), ops(), env())
	}
	rec, _ := logRecord(sink.String(), "tokens file not loaded: the tokens loaded before stay in force")
	if !strings.Contains(fmt.Sprint(rec["error"]), "64 hex digits") || fmt.Sprint(rec["tokensInForce"]) != "2" {
		t.Errorf("the log says %v, want why and how many tokens stay", rec)
	}
	time.Sleep(100 * time.Millisecond) // several checks of the same broken content
	if n := strings.Count(sink.String(), "tokens file not loaded"); n != 1 {
		t.Errorf("the broken file is logged %d times, want once", n)
	}

	// Fixed: ops removed, so only the environment's admin stays admin.
	vol.update(tokensFile(tokenEntry("eu-orders-next", tokEUNew, "client", `, "pools": ["eu-*"]`)))
	eventually(t, "the fixed file is loaded", func() bool { return ops() == 401 })
	if euNew() != 200 || env() != 200 {
		t.Errorf("after the fix: euNew %d, env %d, want 200", euNew(), env())
	}
	logs := sink.String()
	for _, secret := range []string{tokEU, tokEUNew, tokOps, tokA, hexDigest(tokEU), hexDigest(tokEUNew), hexDigest(tokOps)} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log shows a token or a digest: %s", secret)
		}
	}
	if !strings.Contains(logs, "eu-orders-next") {
		t.Errorf("the log does not name the loaded tokens:\n%s", logs)
	}
}

func hexDigest(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

// TestTokensFileSIGHUP: a file rewritten in place is loaded on SIGHUP
// (the check interval is too long to see it).
func TestTokensFileSIGHUP(t *testing.T) {
	// Keep SIGHUP from stopping the test binary should run not be
	// listening for it.
	guard := make(chan os.Signal, 4)
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)

	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte(tokensFile(tokenEntry("eu-orders", tokEU, "client", ""))), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, sink := startRun(t, nil, map[string]string{
		"DISPATCHER_TOKENS_FILE":           path,
		"DISPATCHER_TOKENS_CHECK_INTERVAL": "1h",
	})
	url := "http://" + addr + "/v1/pools"
	if s, _ := get(t, url, tokEU); s != 200 {
		t.Fatalf("got %d, want 200", s)
	}
	if err := os.WriteFile(path, []byte(tokensFile(tokenEntry("eu-orders", tokEUNew, "client", ""))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new token is accepted after SIGHUP", func() bool { s, _ := get(t, url, tokEUNew); return s == 200 })
	if s, _ := get(t, url, tokEU); s != 401 {
		t.Errorf("the old token after SIGHUP: got %d, want 401", s)
	}
	if !strings.Contains(sink.String(), "SIGHUP: loading the tokens file") {
		t.Errorf("the log does not show the SIGHUP")
	}
}

// TestParseConfigTokensFile: a tokens file that does not load stops the
// start-up, and so does a token that is both in the file and in an
// environment variable.
func TestParseConfigTokensFile(t *testing.T) {
	good := writeFile(t, tokensFile(tokenEntry("eu-orders", tokEU, "client", `, "pools": ["eu-*"], "ratePerSec": 5`)))
	c, err := parseConfig(nil, envOf(map[string]string{"DISPATCHER_TOKENS_FILE": good}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.FileTokens) != 1 || c.FileTokens[0].RatePerSec != 5 || c.RateLimitOnError != "open" {
		t.Errorf("got %#v, on error %s", c.FileTokens, c.RateLimitOnError)
	}
	if s := fmt.Sprintf("%v %#v", c.FileTokens, c.FileTokens); strings.Contains(s, hexDigest(tokEU)) || !strings.Contains(s, "eu-orders") {
		t.Errorf("the tokens print as %s", s)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"missing file", map[string]string{"DISPATCHER_TOKENS_FILE": filepath.Join(t.TempDir(), "nope")}, "no such file"},
		{"broken file", map[string]string{"DISPATCHER_TOKENS_FILE": writeFile(t, `{"tokens": []}`)}, "holds no token"},
		{"token in both", map[string]string{"DISPATCHER_TOKENS_FILE": good, "DISPATCHER_CLIENT_TOKENS": tokEU}, "give it one place"},
		{"on error", map[string]string{"DISPATCHER_RATE_LIMIT_ON_ERROR": "maybe"}, "want open or closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(nil, envOf(tc.env), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestTenancyExample: the tokens.json of deploy/k8s/tenancy.example.yaml
// is refused as it is (its placeholders are not digests), and loads once
// each placeholder is replaced by a digest.
func TestTenancyExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "k8s", "tenancy.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var secret struct {
		Kind       string            `yaml:"kind"`
		StringData map[string]string `yaml:"stringData"`
	}
	if err := yaml.Unmarshal(b, &secret); err != nil || secret.Kind != "Secret" {
		t.Fatalf("not a Secret: %v", err)
	}
	file := secret.StringData["tokens.json"]
	if _, err := api.ParseTokensFile([]byte(file)); err == nil || !strings.Contains(err.Error(), "64 hex digits") {
		t.Errorf("the example with its placeholders: got %v, want refused", err)
	}
	placeholder := regexp.MustCompile(`<REPLACE-ME-[A-Za-z0-9-]+>`)
	n := 0
	filled := placeholder.ReplaceAllStringFunc(file, func(string) string { n++; return hexDigest(fmt.Sprint("token-", n)) })
	tokens, err := api.ParseTokensFile([]byte(filled))
	if err != nil || len(tokens) != n || n < 2 {
		t.Fatalf("the example filled in: %d tokens of %d placeholders, %v", len(tokens), n, err)
	}
	if !strings.Contains(string(b), "DISPATCHER_TOKENS_FILE, value: /run/secrets/dispatcher-tenants/tokens.json") ||
		!strings.Contains(string(b), "mountPath: /run/secrets/dispatcher-tenants,") {
		t.Error("the example's patch does not mount the Secret where DISPATCHER_TOKENS_FILE points")
	}
}
