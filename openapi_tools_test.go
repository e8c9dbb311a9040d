package dispatcher_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tools of TestOpenAPITools, at pinned versions: the npm ones in
// tools/openapi/package-lock.json, the Go ones here (fetched through the
// module proxy, as the Makefile fetches staticcheck).
const (
	oapiCodegen    = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"
	oapiRuntime    = "github.com/oapi-codegen/runtime v1.9.0"
	oapiRuntimeYAM = "go.yaml.in/yaml/v3 v3.0.6"
)

// toolsDir holds package.json, its lock file and the linters' rulesets.
const toolsDir = "tools/openapi"

// TestOpenAPITools runs on openapi.yaml what a user of the API would:
// Redocly's recommended lint (no error, no warning but those explained in
// tools/openapi/.redocly.lint-ignore.yaml), Spectral's spectral:oas (no
// warning but the one explained in tools/openapi/.spectral.yaml),
// oapi-codegen -generate types,client and openapi-typescript, each without
// options beyond the package name, and compiles what they generate.
//
// It needs node and npm (with the npm registry) and the Go module proxy;
// npm ci runs when package-lock.json changed since the last run.
func TestOpenAPITools(t *testing.T) {
	t.Run("oapi-codegen", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		gen := run(t, ".", goEnv(), "go", "run", oapiCodegen, "-generate", "types,client", "-package", "dispatcherapi", "openapi.yaml")
		if !bytes.Contains(gen, []byte("func (c *Client) Dispatch(")) {
			t.Fatalf("oapi-codegen generated no Dispatch method:\n%.2000s", gen)
		}
		// The problems are typed: status an integer, type a string enum.
		for _, want := range []string{"Status BadRequestStatus `json:\"status\"`", "type BadRequestStatus int", "type ProblemType string"} {
			if !bytes.Contains(gen, []byte(want)) {
				t.Errorf("generated code lacks %q", want)
			}
		}
		write(t, filepath.Join(dir, "api.go"), gen)
		write(t, filepath.Join(dir, "go.mod"), []byte("module example.com/dispatcherapi\n\ngo 1.26\n\nrequire (\n\t"+oapiRuntime+"\n\t"+oapiRuntimeYAM+"\n)\n"))
		run(t, dir, goEnv(), "go", "mod", "tidy")
		run(t, dir, goEnv(), "go", "build", "./...")
	})
	t.Run("npm", func(t *testing.T) {
		t.Parallel()
		npmInstall(t)
		bin := func(name string) string {
			abs, _ := filepath.Abs(filepath.Join(toolsDir, "node_modules", ".bin", name))
			return abs
		}

		t.Run("redocly", func(t *testing.T) {
			out := run(t, toolsDir, nodeEnv(), bin("redocly"), "lint", "../../openapi.yaml", "--config", "redocly.yaml", "--format", "json")
			var report struct {
				Totals   struct{ Errors, Warnings, Ignored int } `json:"totals"`
				Problems []struct {
					RuleID, Message string
					Location        []struct{ Pointer string }
				} `json:"problems"`
			}
			if err := json.Unmarshal(jsonPart(out), &report); err != nil {
				t.Fatalf("redocly's report: %v\n%s", err, out)
			}
			for _, p := range report.Problems {
				t.Errorf("redocly: %s: %s %v", p.RuleID, p.Message, p.Location)
			}
			if report.Totals.Errors+report.Totals.Warnings > 0 {
				t.Errorf("redocly: %d errors, %d warnings", report.Totals.Errors, report.Totals.Warnings)
			}
			// The three of .redocly.lint-ignore.yaml; also proves the
			// report was read. Fewer: remove the stale entries there.
			if report.Totals.Ignored != 3 {
				t.Errorf("redocly ignored %d warnings, want the 3 explained in .redocly.lint-ignore.yaml", report.Totals.Ignored)
			}
		})
		t.Run("spectral", func(t *testing.T) {
			run(t, toolsDir, nodeEnv(), bin("spectral"), "lint", "../../openapi.yaml", "--ruleset", ".spectral.yaml", "--fail-severity", "warn")
		})
		t.Run("openapi-typescript", func(t *testing.T) {
			dir := t.TempDir()
			schema := filepath.Join(dir, "schema.d.ts")
			run(t, toolsDir, nodeEnv(), bin("openapi-typescript"), "../../openapi.yaml", "--output", schema)
			use := `import type { paths, components } from "./schema";
type Batch = paths["/v1/pools/{pool}/batches"]["post"]["responses"][201]["content"]["application/json"];
const b: Batch = { batchId: "b-1", pool: "eu", strategy: "waterfill", createdAt: "2025-01-02T03:04:05.678Z", assignments: [{ orderId: "o-1", compId: "S1" }] };
const s: components["schemas"]["Problem"]["status"] = 404;
export { b, s };
`
			write(t, filepath.Join(dir, "use.ts"), []byte(use))
			run(t, dir, nodeEnv(), bin("tsc"), "--noEmit", "--strict", "--skipLibCheck", "false", "use.ts", "schema.d.ts")
		})
	})
}

// npmInstall runs npm ci in toolsDir, unless node_modules was installed
// from the same package-lock.json.
func npmInstall(t *testing.T) {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(toolsDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	stamp := filepath.Join(toolsDir, "node_modules", ".dispatcher-lock-sha256")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == hex.EncodeToString(sum[:]) {
		return
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm not found (%v): TestOpenAPITools runs the OpenAPI linters and generators with Node.js ≥ 20.19 and npm", err)
	}
	run(t, toolsDir, nodeEnv(), "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	write(t, stamp, []byte(hex.EncodeToString(sum[:])))
}

// run runs a command in dir with env added, fails the test unless it exits
// 0, and returns its standard output.
func run(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%.4000s\nstderr:\n%.4000s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.Bytes()
}

// goEnv runs Go outside the repository's workspace, fetching modules as
// needed.
func goEnv() []string { return []string{"GOWORK=off", "GOFLAGS=-mod=mod"} }

// nodeEnv keeps the Node.js tools quiet and from sending telemetry.
func nodeEnv() []string {
	return []string{"REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "DO_NOT_TRACK=1",
		"SCARF_ANALYTICS=false", "NO_UPDATE_NOTIFIER=1", "npm_config_update_notifier=false"}
}

// jsonPart returns out from its first '{' on: redocly may print a notice
// before its report.
func jsonPart(out []byte) []byte {
	if i := bytes.IndexByte(out, '{'); i >= 0 {
		return out[i:]
	}
	return out
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
