package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// TestSentinel runs the conformance suite through Redis Sentinel (a
// primary, a replica and one sentinel), with a client of NewClient in
// sentinel mode on go-redis's failover URL, as the ACL user: in that URL
// the user and password of the data nodes go in the query (user:pass@
// would be the sentinel's).
func TestSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("Sentinel takes seconds")
	}
	_, primary, replica, sentinel := startSentinel(t)
	addACLUser(t, primary, replica)
	c, err := redis.NewClient(fmt.Sprintf("redis://%s/0?master_name=dispatch&username=dispatcher&password=%s",
		sentinel.Addr(), aclPassword), "sentinel")
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	admin := goredis.NewClient(&goredis.Options{Addr: primary.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	storetest.Run(t, func(t testing.TB, opts storetest.Options) dispatch.Store {
		if err := admin.FlushAll(context.Background()).Err(); err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
		return redis.New(c, redis.Options{Retention: opts.Retention, MaxScales: opts.MaxScales})
	})
}

// startSentinel starts a primary (with args), its replica and a sentinel
// that names them "dispatch", and returns a client of NewClient on them.
func startSentinel(t *testing.T, args ...string) (goredis.UniversalClient, *redistest.Server, *redistest.Server, *redistest.Server) {
	primary := redistest.StartWith(t, args...)
	replica := redistest.StartReplica(t, primary)
	sentinel := redistest.StartSentinel(t, "dispatch", primary, replica)
	c, err := redis.NewClient(fmt.Sprintf("redis://%s/0?master_name=dispatch", sentinel.Addr()), "sentinel")
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, primary, replica, sentinel
}

// TestSentinelFailover asks the sentinel to fail over while the store
// dispatches, and checks that the store follows to the new primary and that
// the pool's counts equal the batches the new primary holds.
//
// Sentinel does not fence the old primary: until the client hears of the
// switch, the old primary still takes writes, which it drops when the
// sentinel later makes it a replica; the test logs how many. A primary with
// min-replicas-to-write 1 refuses writes (NOREPLICAS, a 503 the client
// retries) as soon as its replica leaves it, and loses none.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("Sentinel takes seconds")
	}
	for _, tc := range []struct {
		name     string
		args     []string
		lossless bool
	}{
		{"default", nil, false},
		{"min-replicas-to-write", []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "10"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, primary, replica, sentinel := startSentinel(t, tc.args...)
			s := redis.New(c, redis.Options{})
			poolWithScales(t, s, "p", 2)
			if _, err := dispatchRetrying(s, "p", "before", 4); err != nil {
				t.Fatalf("dispatch before the failover: %v", err)
			}
			waitReplicated(t, primary, replica)
			sc := goredis.NewSentinelClient(&goredis.Options{Addr: sentinel.Addr()})
			defer sc.Close()
			rc := goredis.NewClient(&goredis.Options{Addr: replica.Addr()})
			defer rc.Close()
			start := time.Now()
			if err := sc.Failover(context.Background(), "dispatch").Err(); err != nil {
				t.Fatalf("SENTINEL FAILOVER: %v", err)
			}
			waitRole(t, replica, "master")
			// Dispatch until a batch lands on the new primary: the client has
			// followed the switch.
			var acked []string
			for i := 0; ; i++ {
				if time.Since(start) > 30*time.Second {
					t.Fatalf("no batch reached the new primary %s within 30s", replica.Addr())
				}
				id := fmt.Sprintf("after-%d", i)
				if _, err := dispatchRetrying(s, "p", id, 4); err != nil {
					t.Fatalf("dispatch during the failover: %v", err)
				}
				acked = append(acked, id)
				if ok, _ := rc.HExists(context.Background(), "dispatch:{pool:p}:orders", "|b"+id).Result(); ok {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			found, lost := int64(0), 0
			for _, id := range append(acked, "before") {
				if _, err := s.GetBatch(context.Background(), "p", id, time.Now()); err == nil {
					found += 4
				} else if errors.Is(err, dispatch.ErrBatchNotFound) {
					lost++
				} else {
					t.Fatalf("GetBatch %s: %v", id, err)
				}
			}
			t.Logf("the store wrote to the new primary %v after SENTINEL FAILOVER; %d acknowledged batches went to the old primary and are lost",
				time.Since(start).Round(time.Millisecond), lost)
			if tc.lossless && lost > 0 {
				t.Errorf("%d acknowledged batches lost, want none", lost)
			}
			if n := sumOutstanding(t, s, "p"); n != found {
				t.Errorf("outstanding orders after the failover: got %d, want the %d of the batches kept", n, found)
			}
			if n := records(t, rc, "p")["orders"]; n != found {
				t.Errorf("orders on the new primary %s: got %d; want %d", replica.Addr(), n, found)
			}
		})
	}
}

// waitReplicated waits until replica has everything primary has written.
func waitReplicated(t testing.TB, primary, replica *redistest.Server) {
	t.Helper()
	offset := func(s *redistest.Server, field string) string {
		c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
		defer c.Close()
		info, err := c.Info(context.Background(), "replication").Result()
		if err != nil {
			t.Fatalf("INFO replication on %s: %v", s.Addr(), err)
		}
		return infoField(info, field)
	}
	deadline := time.Now().Add(10 * time.Second)
	for offset(primary, "master_repl_offset") != offset(replica, "slave_repl_offset") {
		if time.Now().After(deadline) {
			t.Fatalf("replica %s did not catch up with %s", replica.Addr(), primary.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// infoField returns the value of field in the text of an INFO reply.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}
