//go:build image

package imagetest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// podman runs podman commands with the settings of this machine: the
// CONTAINERS_CONF of the environment, else ../shared/containers/containers.conf
// beside the repository when it exists (runc, cgroupfs, no rlimits: see the
// README there).
type podman struct {
	env []string
}

var errNoPodman = errors.New("podman not found")

// newPodman finds podman and its settings.
func newPodman(repo string) (*podman, error) {
	if _, err := exec.LookPath("podman"); err != nil {
		return nil, fmt.Errorf("%w (.ci/run installs podman, runc, debootstrap and podman-compose from Debian): %v", errNoPodman, err)
	}
	p := &podman{env: os.Environ()}
	if os.Getenv("CONTAINERS_CONF") == "" {
		conf := filepath.Join(repo, "..", "shared", "containers", "containers.conf")
		if _, err := os.Stat(conf); err == nil {
			p.env = append(p.env, "CONTAINERS_CONF="+conf)
		}
	}
	return p, nil
}

// run runs podman with args and returns its standard output, trimmed; the
// error carries the standard error.
func (p *podman) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Env = p.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// must runs podman and stops the test on failure.
func (p *podman) must(tb testing.TB, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := p.run(ctx, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// inspect decodes `podman inspect` of one object into v.
func (p *podman) inspect(tb testing.TB, kind, name string, v any) {
	tb.Helper()
	out := p.must(tb, kind, "inspect", name)
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
		tb.Fatalf("podman %s inspect %s: got %d objects (%v), want 1", kind, name, len(list), err)
	}
	if err := json.Unmarshal(list[0], v); err != nil {
		tb.Fatalf("podman %s inspect %s: %v", kind, name, err)
	}
}

// containerInfo is the part of `podman container inspect` the tests read.
type containerInfo struct {
	Name  string
	State struct {
		Status   string
		Running  bool
		Pid      int
		ExitCode int
	}
	Config struct {
		User       string
		Labels     map[string]string
		StopSignal uint
	}
	HostConfig struct {
		ReadonlyRootfs bool
		CapDrop        []string
		CapAdd         []string
		SecurityOpt    []string
	}
	EffectiveCaps   []string
	NetworkSettings struct {
		Networks map[string]struct {
			IPAddress string
		}
	}
}

// ip returns the container's address on its one network.
func (c containerInfo) ip() string {
	for _, n := range c.NetworkSettings.Networks {
		if n.IPAddress != "" {
			return n.IPAddress
		}
	}
	return ""
}
