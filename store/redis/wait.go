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
	// DefaultWaitTimeout is how long an answer waits for its replicas when
	// Options.WaitTimeout is zero.
	DefaultWaitTimeout = time.Second
	// MaxWaitTimeout is the longest Options.WaitTimeout: WAIT must answer
	// within the client's read timeout (3 s with NewClient), or go-redis
	// gives up on the connection and sends the WAIT again.
	MaxWaitTimeout = 2 * time.Second
)

// waitMarkTTL is how long the mark that a WAIT follows stays in Redis. Each
// round overwrites it; the TTL removes it after the pool is deleted.
const waitMarkTTL = time.Minute

// waitPolicy is how many replicas must acknowledge what an answer rests
// on, and for how long to wait for them.
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

// waitMarkKey is the mark a WAIT for key writes first: a key in key's hash
// slot, so on Cluster it is on the primary that holds key, and under
// dispatch:, the keys the dispatcher's ACL user may write. For a pool's key
// it is dispatch:{pool:NAME}:wait; for the pool list, which has no hash
// tag, dispatch:{dispatch:pools}:wait, whose tag hashes as the list's
// whole name.
func waitMarkKey(key string) string {
	if key == poolsKey {
		return "dispatch:{" + poolsKey + "}:wait"
	}
	return "dispatch:" + hashTag(key) + ":wait"
}

// hashTag returns the "{…}" of a pool's key.
func hashTag(key string) string {
	i := -1
	for j := range len(key) {
		if key[j] == '{' && i < 0 {
			i = j
		}
		if key[j] == '}' && i >= 0 {
			return key[i : j+1]
		}
	}
	panic("redis: key without a hash tag: " + key)
}

// The one path of every answer.
//
// With Options.WaitReplicas set, no answer of the Store rests on state
// that a failover could roll back: every reply of Redis that a method
// answers from, a write's or a read's, a result or a domain error (an
// order that exists, a pool that does not), is released only once
// WaitReplicas replicas of the primary that gave it have acknowledged
// everything that primary had done when it replied. fcall (functions.go),
// under call and callToken, passes every function call through answered,
// and the commands on the pool list do the same, so a method added later
// that calls a function gets the WAIT without a line of its own: the
// heartbeats, failure reports and ejections of Scale health, any
// background job. A method that talks to Redis another way must call
// answered itself.

// answered returns v and err, the reply of Redis to a command on key, once
// the primary's replicas have acknowledged it (confirm), when Redis
// answered: a reply, or a domain error a script reported. A failure to
// reach Redis, or an error reply of a Redis that cannot serve now, is
// returned as it is: it shows no state. If the replicas do not confirm, it
// returns v with an error that wraps dispatch.ErrNotReplicated, and nil
// for a domain error, which is not to be shown either. A refusal that the
// Store sends again instead of answering (resent) is returned as it is:
// its answer is the next call's, which that call's WAIT confirms.
func (s *Store) answered(ctx context.Context, key string, v any, err error) (any, error) {
	if s.wait.replicas == 0 {
		return v, err
	}
	if _, domain := asScriptError(err); err != nil && !domain || resent(v, err) {
		return v, err
	}
	if werr := s.confirm(ctx, key); werr != nil {
		if err != nil {
			return nil, werr
		}
		return v, werr
	}
	return v, err
}

// confirm returns nil once Options.WaitReplicas replicas of the primary
// that holds each key have acknowledged every write that primary had
// applied when confirm was called, and at once when WaitReplicas is 0. If
// fewer acknowledge within Options.WaitTimeout, or Redis cannot be asked,
// it returns an error that wraps dispatch.ErrNotReplicated: what the
// caller wrote or read is on the primary, but a failover now could undo
// it. Concurrent callers share WAITs (waiters).
func (s *Store) confirm(ctx context.Context, keys ...string) error {
	if s.wait.replicas == 0 {
		return nil
	}
	// One round per primary: the keys of one primary need one.
	rounds := make(map[string]*round, 1)
	for _, key := range keys {
		// A Cluster pipeline would send the keyless WAIT to a random
		// node: talk to the primary of key's slot directly.
		var c pipeliner = s.c
		node := ""
		if nc, ok := s.c.(nodeClient); ok {
			n, err := nc.MasterForKey(ctx, key)
			if err != nil {
				return notReplicated(fmt.Errorf("primary of %s: %v", key, err))
			}
			c, node = n, n.Options().Addr
		}
		if rounds[node] == nil {
			rounds[node] = s.waiters.of(node).join(c, waitMarkKey(key))
		}
	}
	for _, r := range rounds {
		select {
		case <-r.done:
			if r.err != nil {
				return r.err
			}
		case <-ctx.Done():
			return notReplicated(ctx.Err())
		}
	}
	return nil
}

// nodeClient is the one method of *goredis.ClusterClient that confirm
// needs: the client of the primary that holds a key.
type nodeClient interface {
	MasterForKey(ctx context.Context, key string) (*goredis.Client, error)
}

// pipeliner is what a Client and the client of one Cluster node share.
type pipeliner interface {
	Pipelined(ctx context.Context, fn func(goredis.Pipeliner) error) ([]goredis.Cmder, error)
}

// notReplicated is the error of an answer that is on the primary but not
// known to be on enough replicas. It wraps cause, so that a context that
// ended shows as such.
func notReplicated(cause error) error {
	return fmt.Errorf("%w: %w", dispatch.ErrNotReplicated, cause)
}
