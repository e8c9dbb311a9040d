package redis_test

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// TestClusterConformance runs the conformance suite on a Redis Cluster of
// three masters, through a ClusterClient of NewClient: every script must
// touch only the keys it declares, all in one slot, and the pool list,
// which spans slots, must work across nodes. The subtests share the cluster
// and empty it first.
func TestClusterConformance(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	c, err := redis.NewClient(redistest.ClusterURL(nodes), "cluster")
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cc, ok := c.(*goredis.ClusterClient)
	if !ok {
		t.Fatalf("NewClient in cluster mode returned %T", c)
	}
	fresh := func(t testing.TB, opts storetest.Options) dispatch.Store {
		err := cc.ForEachMaster(context.Background(), func(ctx context.Context, m *goredis.Client) error {
			return m.FlushAll(ctx).Err()
		})
		if err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
		return redis.New(c, redis.Options{Retention: opts.Retention, MaxScales: opts.MaxScales})
	}
	storetest.Run(t, fresh)
	t.Run("Multi", func(t *testing.T) { storetest.RunMulti(t, fresh) })
}
