//go:build image

package imagetest_test

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestReplicasConfined checks each running replica as the kernel sees its
// process (/proc/PID of the container's process, read from the host), not
// only as podman reports its settings: a non-root user, a read-only root
// file system, no capability in any set, no_new_privs.
func TestReplicasConfined(t *testing.T) {
	s := shared(t)
	for _, name := range s.replicas {
		t.Run(name, func(t *testing.T) {
			c := s.info(t, name)
			if !c.State.Running || c.State.Pid == 0 {
				t.Fatalf("state %s pid %d, want running", c.State.Status, c.State.Pid)
			}
			status := procStatus(t, c.State.Pid)
			for _, f := range []string{"Uid", "Gid"} {
				if got, want := strings.Fields(status[f]), []string{"65532", "65532", "65532", "65532"}; !slices.Equal(got, want) {
					t.Errorf("%s (real, effective, saved, fs): got %v, want %v (the image's USER 65532:65532)", f, got, want)
				}
			}
			for _, f := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if got := status[f]; got != "0000000000000000" {
					t.Errorf("%s: got %s, want 0000000000000000 (cap_drop: ALL)", f, got)
				}
			}
			if got := status["NoNewPrivs"]; got != "1" {
				t.Errorf("NoNewPrivs: got %q, want 1 (security_opt no-new-privileges)", got)
			}
			if opts := rootMountOptions(t, c.State.Pid); !slices.Contains(opts, "ro") {
				t.Errorf("mount options of /: got %v, want ro (read_only: true)", opts)
			}
			// What podman says agrees.
			if c.Config.User != "65532:65532" {
				t.Errorf("podman inspect: Config.User: got %q, want 65532:65532", c.Config.User)
			}
			if !c.HostConfig.ReadonlyRootfs {
				t.Error("podman inspect: HostConfig.ReadonlyRootfs: got false, want true")
			}
			if len(c.EffectiveCaps) > 0 {
				t.Errorf("podman inspect: EffectiveCaps: got %v, want none", c.EffectiveCaps)
			}
		})
	}
}

// procStatus reads the "Key:\tvalue" lines of /proc/PID/status.
func procStatus(tb testing.TB, pid int) map[string]string {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// rootMountOptions returns the per-mount options of the process's /.
func rootMountOptions(tb testing.TB, pid int) []string {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// id parent major:minor root mountpoint options ...
	var opts []string
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == "/" {
			opts = strings.Split(f[5], ",") // the last mount on / is the one seen
		}
	}
	if opts == nil {
		tb.Fatalf("/proc/%d/mountinfo: got no mount on /", pid)
	}
	return opts
}

// TestReplicasReady checks /healthz and /readyz on every replica, and the
// health check the image can run on itself (`dispatcher probe`, as
// compose.yaml's healthcheck runs it), through podman.
func TestReplicasReady(t *testing.T) {
	s := shared(t)
	for _, name := range s.replicas {
		t.Run(name, func(t *testing.T) {
			base := s.url(t, name)
			for _, path := range []string{"/healthz", "/readyz"} {
				if status, body, _ := call(t, http.MethodGet, base+path, "", ""); status != http.StatusOK {
					t.Errorf("GET %s: got %d %s, want 200", path, status, body)
				}
			}
			if out, err := s.p.run(t.Context(), "healthcheck", "run", name); err != nil {
				t.Errorf("podman healthcheck run (dispatcher probe -path /readyz in the image): got %v %s, want healthy", err, out)
			}
		})
	}
}

// TestImageVersion checks that the VERSION and REVISION build args are
// what the image's labels say and what the service reports: `dispatcher
// -version`, the version on /healthz of every replica, and the
// dispatcher_build_info metric.
func TestImageVersion(t *testing.T) {
	s := shared(t)
	var img struct {
		Config struct{ Labels map[string]string }
		Size   int64
	}
	s.p.inspect(t, "image", imageName, &img)
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  s.version,
		"org.opencontainers.image.revision": s.revision,
	} {
		if got := img.Config.Labels[k]; got != want {
			t.Errorf("label %s: got %q, want %q (the build arg)", k, got, want)
		}
	}
	t.Logf("image %s: %.1f MB", imageName, float64(img.Size)/1e6)

	out := s.p.must(t, "run", "--rm", imageName, "-version")
	if want := "dispatcher " + s.version + " (revision " + s.revision + ","; !strings.HasPrefix(out, want) {
		t.Errorf("dispatcher -version: got %q, want it to start %q", out, want)
	}
	for _, r := range s.replicas {
		var h struct {
			Version string `json:"version"`
		}
		mustCall(t, http.MethodGet, s.url(t, r)+"/healthz", "", "", http.StatusOK, &h)
		if h.Version != s.version {
			t.Errorf("%s /healthz: version %q, want %q", r, h.Version, s.version)
		}
	}
	_, metrics, _ := call(t, http.MethodGet, s.url(t, s.replicas[0])+"/metrics", adminToken, "")
	want := fmt.Sprintf(`revision=%q,version=%q`, s.revision, s.version)
	found := false
	for line := range strings.SplitSeq(string(metrics), "\n") {
		found = found || strings.HasPrefix(line, "dispatcher_build_info{") && strings.Contains(line, want) && strings.HasSuffix(line, " 1")
	}
	if !found {
		t.Errorf("/metrics: got no dispatcher_build_info{…%s} 1", want)
	}
}
