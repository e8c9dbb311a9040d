package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// StartCluster runs a Redis Cluster of n masters (no replicas) on free
// ports, with the 16384 slots split evenly, and returns its nodes once every
// node sees the cluster ok. The nodes stop with t.Cleanup.
func StartCluster(t testing.TB, n int) []*Server {
	t.Helper()
	nodes := make([]*Server, n)
	for i := range nodes {
		nodes[i] = start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
	}
	ctx := context.Background()
	clients := make([]*goredis.Client, n)
	for i, s := range nodes {
		clients[i] = goredis.NewClient(&goredis.Options{Addr: s.Addr()})
		defer clients[i].Close()
	}
	for i, c := range clients {
		lo, hi := i*16384/n, (i+1)*16384/n-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			t.Fatalf("redistest: CLUSTER ADDSLOTSRANGE on %s: %v", nodes[i].Addr(), err)
		}
	}
	for _, c := range clients[1:] {
		if err := c.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(nodes[0].port)).Err(); err != nil {
			t.Fatalf("redistest: CLUSTER MEET: %v", err)
		}
	}
	deadline := time.Now().Add(clusterTimeout)
	for _, c := range clients {
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster not ok in time: %s %v", info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nodes
}

// ClusterURL returns a URL of the cluster for goredis.ParseClusterURL.
func ClusterURL(nodes []*Server) string {
	var b strings.Builder
	b.WriteString("redis://" + nodes[0].Addr())
	for i, s := range nodes[1:] {
		if i == 0 {
			b.WriteString("?")
		} else {
			b.WriteString("&")
		}
		b.WriteString("addr=" + s.Addr())
	}
	return b.String()
}
