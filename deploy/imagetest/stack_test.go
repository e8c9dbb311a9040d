//go:build image

package imagetest_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The stack: the image built from deploy/Dockerfile, and deploy/compose.yaml
// run by podman-compose (Debian's 1.0.3): Redis with AOF on a named volume,
// three replicas, nginx in front. Started once for the whole package and
// shared by its tests. The tests reach every container at its address on
// the project's network (root podman routes it from the host).
//
// What the stack runs beside compose.yaml, in compose.test.yaml:
//   - the dispatcher image under the tag the suite built (imageName);
//   - with a stand-in nginx older than 1.27.3 (../shared/containers/bases.sh
//     makes one from Debian's 1.22), nginx.conf without the upstream's
//     `resolve` parameter, which those versions lack (see nginxConf).
//
// And podman-compose 1.0.3 ignores stop_grace_period (it stops with -t 10):
// the tests stop replicas with compose.yaml's grace period themselves.

const (
	project    = "dispimg" // podman-compose's project: names the containers, network, volume
	imageName  = "localhost/dispatcher:imagetest"
	adminToken = "imagetest-admin-token-0123456789"
	userToken  = "imagetest-client-token-0123456789"
)

type stack struct {
	p        *podman
	repo     string
	dir      string // the copy of deploy/ podman-compose runs in
	compose  *composeFile
	network  string
	redis    string   // container names
	replicas []string //
	nginx    string   //
	port     int      // nginx's host port (DISPATCHER_PORT)
	grace    string   // compose.yaml's stop_grace_period, in seconds
	version  string   // the VERSION build arg
	revision string   // the REVISION build arg
	built    time.Duration
	started  time.Duration
	notes    []string // what the stack runs differently, for the log
	// nginxStatic: nginx resolves the replicas' name at start only (no
	// `resolve`), so replicas restarted with a new address rejoin it on a
	// reload.
	nginxStatic bool
}

// startStack builds the image and starts compose.yaml's services. It
// removes what an earlier run may have left first.
func startStack(repo string) (*stack, error) {
	p, err := newPodman(repo)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("podman-compose"); err != nil {
		return nil, fmt.Errorf("%w: podman-compose: %v", errNoPodman, err)
	}
	s := &stack{p: p, repo: repo, network: project + "_default",
		redis: project + "_redis_1", nginx: project + "_nginx_1"}
	s.teardown()
	return s, s.start()
}

func (s *stack) start() error {
	c, err := readCompose(filepath.Join(s.repo, "deploy", "compose.yaml"))
	if err != nil {
		return err
	}
	s.compose = c
	grace, err := time.ParseDuration(c.Services["dispatcher"].StopGracePeriod)
	if err != nil {
		return fmt.Errorf("compose.yaml: dispatcher stop_grace_period: %w", err)
	}
	s.grace = strconv.Itoa(int(grace.Seconds()))
	for i := 1; i <= c.Services["dispatcher"].Deploy.Replicas; i++ {
		s.replicas = append(s.replicas, fmt.Sprintf("%s_dispatcher_%d", project, i))
	}
	s.version = "v0.0.0-imagetest." + strconv.FormatInt(time.Now().Unix(), 10)
	s.revision = "unknown"
	if out, err := exec.Command("git", "-C", s.repo, "rev-parse", "HEAD").Output(); err == nil {
		s.revision = strings.TrimSpace(string(out))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	start := time.Now()
	// --format docker: an OCI image has no HEALTHCHECK, and compose.yaml
	// relies on the image's. No layer cache (--layers=false): podman 4.3
	// reuses a cached LABEL layer when only a build arg it names changed
	// (buildah issue 5501), and would label the image with an earlier
	// build's VERSION. The module and build caches (RUN --mount=type=cache)
	// still apply.
	if _, err := s.p.run(ctx, "build", "--pull=never", "--layers=false", "--format", "docker",
		"--file", filepath.Join(s.repo, "deploy", "Dockerfile"), "--tag", imageName,
		"--build-arg", "VERSION="+s.version, "--build-arg", "REVISION="+s.revision, s.repo); err != nil {
		return err
	}
	s.built = time.Since(start)
	// Each build leaves the previous one's image untagged: remove those.
	if _, err := s.p.run(ctx, "image", "prune", "--force", "--filter", "label=org.opencontainers.image.title=dispatcher"); err != nil {
		return err
	}

	start = time.Now()
	if err := s.prepare(ctx); err != nil {
		return err
	}
	if err := s.composeUp(ctx); err != nil {
		return err
	}
	// Compose's service names are DNS names on the network: podman's CNI
	// backend has DNS only with the dnsname plugin, netavark with
	// aardvark-dns.
	if dns, err := s.p.run(ctx, "network", "inspect", "--format", "{{.DNSEnabled}}", s.network); err != nil || dns != "true" {
		return fmt.Errorf("podman network %s: DNS enabled %q (%v), want true: install golang-github-containernetworking-plugin-dnsname (CNI) or aardvark-dns (netavark)", s.network, dns, err)
	}
	for _, r := range s.replicas {
		if err := s.waitReady(ctx, r, 2*time.Minute); err != nil {
			return err
		}
	}
	if err := waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/nginx-healthz", s.port), time.Minute); err != nil {
		logs, _ := s.p.run(ctx, "logs", "--tail", "20", s.nginx)
		return fmt.Errorf("nginx: %w; logs:\n%s", err, logs)
	}
	s.started = time.Since(start)
	return nil
}

// prepare copies compose.yaml and nginx.conf to a directory of their own,
// with the tokens' dispatcher.env and compose.test.yaml beside them.
func (s *stack) prepare(ctx context.Context) error {
	dir, err := os.MkdirTemp("", project)
	if err != nil {
		return err
	}
	s.dir = dir
	for _, f := range []string{"compose.yaml", "nginx.conf"} {
		data, err := os.ReadFile(filepath.Join(s.repo, "deploy", f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			return err
		}
	}
	env := fmt.Sprintf("DISPATCHER_ADMIN_TOKENS=%s\nDISPATCHER_CLIENT_TOKENS=%s\n", adminToken, userToken)
	if err := os.WriteFile(filepath.Join(dir, "dispatcher.env"), []byte(env), 0o600); err != nil {
		return err
	}
	override := "services:\n  dispatcher:\n    image: " + imageName + "\n"
	conf, err := s.nginxConf(ctx)
	if err != nil {
		return err
	}
	if conf != "" {
		if err := os.WriteFile(filepath.Join(dir, "nginx.test.conf"), []byte(conf), 0o644); err != nil {
			return err
		}
		override += "  nginx:\n    volumes:\n      - ./nginx.test.conf:/etc/nginx/nginx.conf:ro\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "compose.test.yaml"), []byte(override), 0o644); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	return ln.Close()
}

// nginxConf returns nginx.conf without the `resolve` parameter when the
// nginx image is older than 1.27.3, which lacks it, or "" when the image
// takes nginx.conf as it is.
func (s *stack) nginxConf(ctx context.Context) (string, error) {
	image := s.compose.Services["nginx"].Image
	out, err := s.p.run(ctx, "run", "--rm", image, "sh", "-c", "nginx -v 2>&1")
	if err != nil {
		return "", err
	}
	_, version, ok := strings.Cut(out, "nginx/")
	if !ok {
		return "", fmt.Errorf("nginx -v: got %q, want nginx/VERSION", out)
	}
	if !versionBelow(version, 1, 27, 3) {
		return "", nil
	}
	data, err := os.ReadFile(filepath.Join(s.repo, "deploy", "nginx.conf"))
	if err != nil {
		return "", err
	}
	conf := strings.Replace(string(data), " resolve ", " ", 1)
	if conf == string(data) {
		return "", fmt.Errorf("nginx.conf: no ` resolve ` to take out for nginx %s", version)
	}
	s.notes = append(s.notes, fmt.Sprintf("nginx %s (%s) lacks `resolve`: nginx.conf runs without it, and the tests reload nginx after replicas restart", version, image))
	s.nginxStatic = true
	return conf, nil
}

// versionBelow reports whether version (x.y.z) is below major.minor.patch.
func versionBelow(version string, want ...int) bool {
	parts := strings.Split(version, ".")
	for i, w := range want {
		n := 0
		if i < len(parts) {
			n, _ = strconv.Atoi(parts[i])
		}
		if n != w {
			return n < w
		}
	}
	return false
}

// composeUp runs `podman-compose up -d` on the stack's files, for the
// services named or for all.
func (s *stack) composeUp(ctx context.Context, services ...string) error {
	args := append([]string{"-p", project, "-f", "compose.yaml", "-f", "compose.test.yaml", "up", "-d"}, services...)
	return s.composeRun(ctx, args...)
}

func (s *stack) composeRun(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "podman-compose", args...)
	cmd.Dir = s.dir
	cmd.Env = append(s.p.env, "DISPATCHER_PORT="+strconv.Itoa(s.port))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("podman-compose %s: %w: %s", strings.Join(args, " "), err, tail(string(out), 20))
	}
	return nil
}

// startRedis starts compose.yaml's Redis again, after its container was
// removed.
func (s *stack) startRedis(ctx context.Context) error { return s.composeUp(ctx, "redis") }

// info inspects a container.
func (s *stack) info(tb testing.TB, name string) containerInfo {
	tb.Helper()
	var c containerInfo
	s.p.inspect(tb, "container", name, &c)
	return c
}

// url returns the base URL of a container's port 8080 on the network.
func (s *stack) url(tb testing.TB, name string) string {
	tb.Helper()
	ip := s.info(tb, name).ip()
	if ip == "" {
		tb.Fatalf("%s: got no address on %s", name, s.network)
	}
	return "http://" + ip + ":8080"
}

// refreshNginx makes nginx see the replicas' current addresses: a reload
// when it resolves them at start only, nothing when it re-resolves them
// itself (the `resolve` parameter).
func (s *stack) refreshNginx(tb testing.TB) {
	tb.Helper()
	if !s.nginxStatic {
		return
	}
	s.p.must(tb, "exec", s.nginx, "nginx", "-s", "reload")
	time.Sleep(2 * time.Second) // the new workers take over
}

// nginxURL is nginx's published port on the host.
func (s *stack) nginxURL() string { return fmt.Sprintf("http://127.0.0.1:%d", s.port) }

// waitReady polls a replica's /readyz until it answers 200.
func (s *stack) waitReady(ctx context.Context, name string, d time.Duration) error {
	out, err := s.p.run(ctx, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, "http://"+out+":8080/readyz", d); err != nil {
		logs, _ := s.p.run(ctx, "logs", "--tail", "20", name)
		return fmt.Errorf("%s: %w; logs:\n%s", name, err, logs)
	}
	return nil
}

// waitHTTP polls url until it answers 200.
func waitHTTP(ctx context.Context, url string, d time.Duration) error {
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
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not 200 within %s: %v", url, d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// teardown removes every container, the network and the volume of the
// project, whatever state they are in (podman-compose 1.0.3's down leaves
// the network).
func (s *stack) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, _ := s.p.run(ctx, "ps", "--all", "--quiet", "--filter", "label=io.podman.compose.project="+project)
	if ids := strings.Fields(out); len(ids) > 0 {
		_, _ = s.p.run(ctx, append([]string{"rm", "--force", "--time", "0"}, ids...)...)
	}
	_, _ = s.p.run(ctx, "network", "rm", "--force", s.network)
	_, _ = s.p.run(ctx, "volume", "rm", "--force", project+"_redis-data")
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}
