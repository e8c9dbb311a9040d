package redistest

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Kill stops the server at once with SIGKILL, as a crash would, and waits
// for it to exit; killing a stopped server does nothing. Restart starts it
// again.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Port returns the server's port.
func (s *Server) Port() int { return s.port }

// StartReplica runs a new redis-server replicating primary, with args
// beyond the defaults, and returns it once its link to primary is up. It
// sets the primary's repl-diskless-sync-delay to 0, so that the first sync
// starts at once rather than after 5 s.
func StartReplica(t testing.TB, primary *Server, args ...string) *Server {
	t.Helper()
	pc := goredis.NewClient(&goredis.Options{Addr: primary.Addr()})
	defer pc.Close()
	if err := pc.ConfigSet(context.Background(), "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatalf("redistest: CONFIG SET on %s: %v", primary.Addr(), err)
	}
	r := start(t, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.port)}, args...)...)
	c := goredis.NewClient(&goredis.Options{Addr: r.Addr()})
	defer c.Close()
	waitFor(t, "replica "+r.Addr()+" linked to "+primary.Addr(), func(ctx context.Context) (bool, string) {
		info, err := c.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up"), info
	})
	return r
}

// StartClusterReplicas runs a Redis Cluster of primaries primaries, each
// with replicas replicas, the way an operator builds one:
// `redis-cli --cluster create … --cluster-replicas N --cluster-yes`. It
// returns the nodes (redis-cli picks which are primaries: ask Role, or the
// cluster which node owns a key) once every node sees cluster_state:ok,
// every node knows every other, and every replica's link to its primary is
// up. nodeTimeout is cluster-node-timeout: how long a primary may be
// unreachable before its replica takes over. The nodes stop with
// t.Cleanup. It fails t if redis-cli is missing.
func StartClusterReplicas(t testing.TB, primaries, replicas int, nodeTimeout time.Duration) []*Server {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redistest: redis-cli not found in PATH (%v); the Redis Cluster tests need it: "+
			"install it with `apt-get install redis-tools` (Debian/Ubuntu) or `brew install redis` (macOS)", err)
	}
	n := primaries * (1 + replicas)
	nodes := make([]*Server, n)
	args := []string{"--cluster", "create"}
	for i := range nodes {
		nodes[i] = start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
			"--repl-diskless-sync-delay", "0")
		args = append(args, nodes[i].Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 2*startTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	WaitClusterOK(t, nodes)
	return nodes
}

// WaitClusterOK waits until every running node of nodes reports
// cluster_state:ok and knows every node, and every running replica's link
// to its primary is up. It fails t after a while.
func WaitClusterOK(t testing.TB, nodes []*Server) {
	t.Helper()
	want := "cluster_known_nodes:" + strconv.Itoa(len(nodes)) + "\r"
	for _, s := range nodes {
		if s.cmd == nil {
			continue
		}
		c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
		waitFor(t, "cluster ok on "+s.Addr(), func(ctx context.Context) (bool, string) {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, want) {
				return false, info
			}
			repl, err := c.Info(ctx, "replication").Result()
			return err == nil && (strings.Contains(repl, "role:master") ||
				strings.Contains(repl, "master_link_status:up")), repl
		})
		_ = c.Close()
	}
}

// Role returns "master" or "slave", as INFO replication says.
func (s *Server) Role(t testing.TB) string {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	defer c.Close()
	info, err := c.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Fatalf("redistest: INFO replication on %s: %v", s.Addr(), err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if role, ok := strings.CutPrefix(line, "role:"); ok {
			return role
		}
	}
	t.Fatalf("redistest: no role in INFO replication of %s: %s", s.Addr(), info)
	return ""
}

// waitFor polls ok until it holds, and fails t with what it last saw after
// startTimeout.
func waitFor(t testing.TB, what string, ok func(ctx context.Context) (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		done, last := ok(ctx)
		cancel()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: %s: not in %s; last saw:\n%s", what, startTimeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
