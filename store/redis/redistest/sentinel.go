package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// StartSentinel runs a Redis Sentinel that monitors primary under
// masterName with a quorum of one, and returns it once it knows the
// primary and every replica in replicas. It fails over when asked
// (SENTINEL FAILOVER), and on its own only after Sentinel's default of 30
// s without answers: a primary busy for a second with a large script on a
// loaded machine is not down (TestSentinel's conformance suite saw the
// sentinel fail over under it mid-suite, with a limit of a second, at a
// load average of 20). It stops with t.Cleanup.
func StartSentinel(t testing.TB, masterName string, primary *Server, replicas ...*Server) *Server {
	t.Helper()
	return startSentinels(t, 1, 1, masterName, primary.port, len(replicas), 30*time.Second)[0]
}

// StartSentinels runs n Redis Sentinels that monitor the primary at
// 127.0.0.1:port (a Server's, or a LagLink's in front of one) under
// masterName with quorum votes, declaring it down after a second without
// answers, and returns them once each knows the primary and replicas
// replicas. Their failover timeout is ten seconds, so that none
// reconfigures a replica that replicates through a LagLink (Sentinel
// "fixes" a replica of another address only after that long). Each gets a
// configuration file of its own, which Sentinel rewrites. They stop with
// t.Cleanup.
func StartSentinels(t testing.TB, n, quorum int, masterName string, port, replicas int) []*Server {
	t.Helper()
	return startSentinels(t, n, quorum, masterName, port, replicas, time.Second)
}

// startSentinels is StartSentinels with a primary declared down after
// downAfter without answers.
func startSentinels(t testing.TB, n, quorum int, masterName string, port, replicas int, downAfter time.Duration) []*Server {
	t.Helper()
	out := make([]*Server, n)
	for i := range out {
		conf := filepath.Join(t.TempDir(), "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
			"sentinel down-after-milliseconds %[1]s %[4]d\n"+
			"sentinel failover-timeout %[1]s 10000\n", masterName, port, quorum, downAfter.Milliseconds())
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatalf("redistest: sentinel config: %v", err)
		}
		out[i] = startConf(t, conf, "--sentinel")
	}
	for _, s := range out {
		c := goredis.NewSentinelClient(&goredis.Options{Addr: s.Addr()})
		waitFor(t, "sentinel "+s.Addr()+" knows "+masterName, func(ctx context.Context) (bool, string) {
			addr, err := c.GetMasterAddrByName(ctx, masterName).Result()
			if err != nil || len(addr) != 2 || addr[1] != strconv.Itoa(port) {
				return false, fmt.Sprint(addr, err)
			}
			// A replica the sentinel has not yet read INFO from is no
			// candidate for a failover (NOGOODSLAVE).
			rs, err := c.Replicas(ctx, masterName).Result()
			good := 0
			for _, r := range rs {
				if r["flags"] == "slave" && r["master-link-status"] == "ok" && r["info-refresh"] != "" &&
					r["info-refresh"] != "0" && r["role-reported"] == "slave" {
					good++
				}
			}
			// Every other sentinel must be known too, or there is no quorum.
			ss, err2 := c.Sentinels(ctx, masterName).Result()
			return err == nil && err2 == nil && good == replicas && len(ss) == n-1, fmt.Sprint(rs, ss, err, err2)
		})
		_ = c.Close()
	}
	return out
}
