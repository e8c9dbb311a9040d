//go:build image

package imagetest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The stack: the image built from deploy/Dockerfile, Redis with AOF on a
// named volume, and the dispatcher replicas of compose.yaml on one podman
// network, started once for the whole package and shared by its tests.
// The tests reach every container at its address on the network (root
// podman routes it from the host), so no host port is taken.

const (
	prefix     = "dispimg" // names every container, the network and the volume
	imageName  = "localhost/dispatcher:imagetest"
	adminToken = "imagetest-admin-token-0123456789"
	userToken  = "imagetest-client-token-0123456789"
)

type stack struct {
	p        *podman
	repo     string
	compose  *composeFile
	network  string
	redis    string   // container name
	replicas []string // container names
	version  string   // the VERSION build arg
	revision string   // the REVISION build arg
	envFile  string   // the tokens, as compose's dispatcher.env
	built    time.Duration
	started  time.Duration
}

// startStack builds the image and starts Redis and the replicas. It
// removes what an earlier run may have left first.
func startStack(repo string) (*stack, error) {
	p, err := newPodman(repo)
	if err != nil {
		return nil, err
	}
	s := &stack{p: p, repo: repo, network: prefix + "_default", redis: prefix + "_redis_1"}
	s.teardown()
	return s, s.start()
}

func (s *stack) start() error {
	c, err := readCompose(filepath.Join(s.repo, "deploy", "compose.yaml"))
	if err != nil {
		return err
	}
	s.compose = c
	p, repo := s.p, s.repo
	s.version = "v0.0.0-imagetest." + strconv.FormatInt(time.Now().Unix(), 10)
	s.revision = "unknown"
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output(); err == nil {
		s.revision = strings.TrimSpace(string(out))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	start := time.Now()
	// No layer cache (--layers=false): podman 4.3 reuses a cached LABEL
	// layer when only a build arg it names changed (buildah issue 5501), and
	// would label the image with an earlier build's VERSION. The module and
	// build caches (RUN --mount=type=cache) still apply.
	if _, err := p.run(ctx, "build", "--pull=never", "--layers=false", "--file", filepath.Join(repo, "deploy", "Dockerfile"),
		"--tag", imageName, "--build-arg", "VERSION="+s.version, "--build-arg", "REVISION="+s.revision, repo); err != nil {
		return err
	}
	s.built = time.Since(start)

	start = time.Now()
	if _, err := p.run(ctx, "network", "create", "--label", "dispatcher.imagetest="+prefix, s.network); err != nil {
		return err
	}
	// Compose's service names are DNS names on the network: podman's CNI
	// backend has DNS only with the dnsname plugin, netavark with
	// aardvark-dns.
	if dns, err := p.run(ctx, "network", "inspect", "--format", "{{.DNSEnabled}}", s.network); err != nil || dns != "true" {
		return fmt.Errorf("podman network %s: DNS enabled %q (%v), want true: install golang-github-containernetworking-plugin-dnsname (CNI) or aardvark-dns (netavark)", s.network, dns, err)
	}
	if _, err := p.run(ctx, "volume", "create", "--label", "dispatcher.imagetest="+prefix, prefix+"_redis-data"); err != nil {
		return err
	}
	if err := s.startRedis(ctx, s.redis); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return err
	}
	s.envFile = filepath.Join(dir, "dispatcher.env")
	env := fmt.Sprintf("DISPATCHER_ADMIN_TOKENS=%s\nDISPATCHER_CLIENT_TOKENS=%s\n", adminToken, userToken)
	if err := os.WriteFile(s.envFile, []byte(env), 0o600); err != nil {
		return err
	}
	n := c.Services["dispatcher"].Deploy.Replicas
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s_dispatcher_%d", prefix, i)
		if err := s.startReplica(ctx, name); err != nil {
			return err
		}
		s.replicas = append(s.replicas, name)
	}
	for _, r := range s.replicas {
		if err := s.waitReady(ctx, r, time.Minute); err != nil {
			return err
		}
	}
	s.started = time.Since(start)
	return nil
}

// runService starts a container of a compose service on the network, with
// the service's settings, and extra options and arguments.
func (s *stack) runService(ctx context.Context, service, name string, extra []string, cmd ...string) error {
	svc := s.compose.Services[service]
	opts, err := svc.runArgs(prefix)
	if err != nil {
		return fmt.Errorf("compose.yaml %s: %w", service, err)
	}
	args := []string{"run", "--detach", "--name", name, "--label", "dispatcher.imagetest=" + prefix,
		"--network", s.network, "--network-alias", service,
		// Periodic health checks need systemd, which these machines lack;
		// the tests run them with `podman healthcheck run`.
		"--health-interval", "disable"}
	args = append(args, opts...)
	args = append(args, extra...)
	image := svc.Image
	if service == "dispatcher" {
		image = imageName
	}
	args = append(args, image)
	args = append(args, cmd...)
	_, err = s.p.run(ctx, args...)
	return err
}

func (s *stack) startRedis(ctx context.Context, name string) error {
	return s.runService(ctx, "redis", name, []string{"--health-cmd", `["redis-cli","ping"]`},
		s.compose.Services["redis"].Command...)
}

func (s *stack) startReplica(ctx context.Context, name string) error {
	return s.runService(ctx, "dispatcher", name, []string{"--env-file", s.envFile,
		"--health-cmd", `["/dispatcher","probe","-path","/readyz"]`})
}

// info inspects a container.
func (s *stack) info(tb testing.TB, name string) containerInfo {
	tb.Helper()
	var c containerInfo
	s.p.inspect(tb, "container", name, &c)
	return c
}

// url returns the base URL of a replica on the network.
func (s *stack) url(tb testing.TB, name string) string {
	tb.Helper()
	ip := s.info(tb, name).ip()
	if ip == "" {
		tb.Fatalf("%s: got no address on %s", name, s.network)
	}
	return "http://" + ip + ":8080"
}

// waitReady polls a replica's /readyz until it answers 200.
func (s *stack) waitReady(ctx context.Context, name string, d time.Duration) error {
	out, err := s.p.run(ctx, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name)
	if err != nil {
		return err
	}
	url := "http://" + out + ":8080/readyz"
	c := &http.Client{Timeout: time.Second}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(d)
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			logs, _ := s.p.run(ctx, "logs", "--tail", "20", name)
			return fmt.Errorf("%s: %s not 200 within %s: %v; logs:\n%s", name, url, d, err, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// teardown removes every container, the network and the volume of the
// stack, whatever state they are in.
func (s *stack) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, _ := s.p.run(ctx, "ps", "--all", "--quiet", "--filter", "label=dispatcher.imagetest="+prefix)
	if ids := strings.Fields(out); len(ids) > 0 {
		_, _ = s.p.run(ctx, append([]string{"rm", "--force", "--time", "0"}, ids...)...)
	}
	_, _ = s.p.run(ctx, "network", "rm", "--force", s.network)
	_, _ = s.p.run(ctx, "volume", "rm", "--force", prefix+"_redis-data")
	if s.envFile != "" {
		os.RemoveAll(filepath.Dir(s.envFile))
	}
}
