package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// TestVersion checks the three places that name the build: -version, the
// version member of /healthz and the dispatcher_build_info metric, with
// the version the linker sets (as deploy/Dockerfile does) and without it.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, envOf(nil), &out, io.Discard); err != nil {
		t.Fatalf("-version: %v", err)
	}
	// go test builds without a module version: "devel", and a revision
	// only when the build stamps VCS information.
	if got := out.String(); !strings.HasPrefix(got, "dispatcher devel (revision ") || !strings.HasSuffix(got, ", "+runtime.Version()+")\n") {
		t.Errorf("-version printed %q", got)
	}

	version, revision = "v1.2.3", "abc123"
	t.Cleanup(func() { version, revision = "", "" })
	out.Reset()
	if err := run(context.Background(), []string{"-version"}, envOf(nil), &out, io.Discard); err != nil {
		t.Fatalf("-version: %v", err)
	}
	if got, want := out.String(), "dispatcher v1.2.3 (revision abc123, "+runtime.Version()+")\n"; got != want {
		t.Errorf("-version with the linker's values printed %q, want %q", got, want)
	}

	addr, _ := startRun(t, nil, nil)
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health struct{ Status, Version string }
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if err != nil || health.Status != "ok" || health.Version != "v1.2.3" {
		t.Errorf("/healthz: %+v, %v; want status ok, version v1.2.3", health, err)
	}
	resp, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `dispatcher_build_info{goversion="` + runtime.Version() + `",revision="abc123",version="v1.2.3"} 1`
	if !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}
