package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Defaults and bounds of Options.WaitTimeout.
const (
	// DefaultWaitTimeout is how long a dispatch waits for its replicas when
	// Options.WaitTimeout is zero.
	DefaultWaitTimeout = time.Second
	// MaxWaitTimeout is the longest Options.WaitTimeout: WAIT must answer
	// within the client's read timeout (3 s with NewClient), or go-redis
	// gives up on the connection and sends the WAIT again.
	MaxWaitTimeout = 2 * time.Second
)

// waitMarkTTL is how long the mark that a WAIT follows stays in Redis. Each
// dispatch of the pool overwrites it; the TTL removes it after the pool is
// deleted.
const waitMarkTTL = time.Minute

// waitPolicy is how many replicas must acknowledge a batch, and for how
// long to wait for them.
type waitPolicy struct {
	replicas int
	timeout  time.Duration
}

// newWaitPolicy reads Options.WaitReplicas and Options.WaitTimeout. It
// panics on values out of range, which are programmer mistakes: a
// configuration is validated before it reaches New.
func newWaitPolicy(opts Options) waitPolicy {
	if opts.WaitReplicas < 0 {
		panic(fmt.Sprintf("redis: New with WaitReplicas %d", opts.WaitReplicas))
	}
	if opts.WaitTimeout < 0 || opts.WaitTimeout > MaxWaitTimeout {
		panic(fmt.Sprintf("redis: New with WaitTimeout %s: want 0 (default %s) to %s", opts.WaitTimeout, DefaultWaitTimeout, MaxWaitTimeout))
	}
	if opts.WaitTimeout == 0 {
		opts.WaitTimeout = DefaultWaitTimeout
	}
	return waitPolicy{replicas: opts.WaitReplicas, timeout: opts.WaitTimeout}
}

// waitMarkKey is the key that a WAIT for pool writes first; it lives in the
// pool's hash slot, so on Cluster it is on the pool's primary.
func waitMarkKey(pool string) string { return "dispatch:{pool:" + pool + "}:wait" }

// nodeClient is the one method of *goredis.ClusterClient that waitReplicas
// needs: the client of the primary that holds a key.
type nodeClient interface {
	MasterForKey(ctx context.Context, key string) (*goredis.Client, error)
}

// pipeliner is what a Client and the client of one Cluster node share.
type pipeliner interface {
	Pipelined(ctx context.Context, fn func(goredis.Pipeliner) error) ([]goredis.Cmder, error)
}

// waitReplicas returns once Options.WaitReplicas replicas of the primary
// that holds pool have acknowledged every write up to batch batchID (a
// batch just dispatched, or the recorded batch of a replay), and nil at once
// when WaitReplicas is 0. If fewer acknowledge within Options.WaitTimeout,
// or Redis cannot be asked, it returns a *dispatch.IndeterminateError naming
// the batch: the batch is applied on the primary, but a failover now could
// lose it.
//
// WAIT counts the writes of the connection it is sent on, and the script
// ran on whichever pooled connection go-redis chose (a replay wrote nothing
// at all): a WAIT on a connection that has written nothing answers at once
// with every connected replica, however far behind. So the WAIT follows a
// write of its own, the mark, in one pipeline on one connection. The mark
// comes after the batch in the replication stream: a replica that
// acknowledges the mark holds the batch.
func (s *Store) waitReplicas(ctx context.Context, pool, batchID string) error {
	if s.wait.replicas == 0 {
		return nil
	}
	key := waitMarkKey(pool)
	// A Cluster pipeline would send the keyless WAIT to a random node: talk
	// to the pool's primary directly.
	var c pipeliner = s.c
	if nc, ok := s.c.(nodeClient); ok {
		node, err := nc.MasterForKey(ctx, key)
		if err != nil {
			return notReplicated(batchID, fmt.Errorf("redis: primary of pool %q: %w", pool, err))
		}
		c = node
	}
	var acks *goredis.Cmd
	if _, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, key, batchID, waitMarkTTL)
		acks = p.Do(ctx, "wait", s.wait.replicas, s.wait.timeout.Milliseconds())
		return nil
	}); err != nil {
		return notReplicated(batchID, fmt.Errorf("redis: WAIT: %w", err))
	}
	n, err := acks.Int64()
	if err != nil {
		return notReplicated(batchID, fmt.Errorf("redis: WAIT: %w", err))
	}
	if n < int64(s.wait.replicas) {
		return notReplicated(batchID, fmt.Errorf("redis: %d of %d replicas acknowledged the batch within %s", n, s.wait.replicas, s.wait.timeout))
	}
	return nil
}

// notReplicated is the error of a batch that is applied on the primary but
// not known to be on enough replicas.
func notReplicated(batchID string, err error) error {
	return &dispatch.IndeterminateError{BatchID: batchID, Err: err}
}
