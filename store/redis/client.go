package redis

import (
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Client settings for the dispatcher, applied where the URL sets nothing.
const (
	// dialTimeout: Redis is near the dispatcher; a connection that takes
	// longer than this is not coming, and the caller should get its 503
	// quickly rather than after go-redis's 5 s.
	dialTimeout = 2 * time.Second
	// readTimeout and writeTimeout bound one command on a live connection
	// (a hung or partitioned Redis). They must exceed the slowest script:
	// a dispatch of 10,000 orders or a page of 10,000 Scales takes tens of
	// milliseconds, a force delete of a Scale with many orders more.
	readTimeout  = 3 * time.Second
	writeTimeout = 3 * time.Second
	// maxRetries: go-redis re-sends a command after a dropped connection or
	// a read timeout. Every script is idempotent (see the package doc), so a
	// retry is safe and rides out a connection cut or a quick failover; two
	// keep the worst case near (1+2) × readTimeout.
	maxRetries      = 2
	minRetryBackoff = 8 * time.Millisecond
	maxRetryBackoff = 256 * time.Millisecond
	// dialerRetries: one dial per command attempt. go-redis's default of 5
	// with 100 ms pauses, times the command retries, would hold a request
	// for seconds while Redis is down; the request should fail fast (503)
	// and the pool's own probe reconnects once Redis is back.
	dialerRetries = 1
	// poolTimeout: when every connection is busy, wait this long for one,
	// then fail (503) rather than queue behind a stalled Redis for
	// readTimeout + 1 s.
	poolTimeout = time.Second
	// clusterReloadInterval: a Cluster client re-reads the slot map on a
	// MOVED reply, but not when a primary stops answering; it keeps
	// dialling the dead node until its map is this old (go-redis: 60 s).
	// After a crash the replica takes over in cluster-node-timeout plus
	// about a second; re-reading every second (one CLUSTER SLOTS, only
	// while commands flow) follows it within a second.
	clusterReloadInterval = time.Second
)

// poolSize: Redis runs scripts one at a time, so connections beyond the
// requests in flight add nothing; each in-flight request holds one. Ten per
// CPU (go-redis's default, said here on purpose) covers the concurrency an
// HTTP server of this size sustains.
func poolSize() int { return 10 * runtime.GOMAXPROCS(0) }

// An Option sets what a go-redis URL cannot say.
type Option func(*clientOptions)

type clientOptions struct {
	caFile, certFile, keyFile string
	hooks                     []goredis.Hook
}

// WithHook adds h above the hooks NewClient gives every client, so that h
// sees each command as the store made it: once, however often it was sent
// again after BUSY, and also when the breaker held it back without sending
// it. On a Cluster h goes on the cluster client, above its retries and
// redirections.
func WithHook(h goredis.Hook) Option {
	return func(o *clientOptions) { o.hooks = append(o.hooks, h) }
}

// NewClient returns a go-redis client for url in mode "single" (a redis://
// or rediss:// URL), "cluster" (redis://h1:p1?addr=h2:p2&addr=h3:p3) or
// "sentinel" (redis://…?master_name=NAME&addr=…), with the timeouts and
// retries above wherever the URL does not set them, and opts. Every client
// has ContextTimeoutEnabled, so a request's deadline or cancellation bounds
// its Redis calls too, and sends a command Redis answered BUSY again
// (busy.go).
func NewClient(url, mode string, opts ...Option) (goredis.UniversalClient, error) {
	var o clientOptions
	for _, apply := range opts {
		apply(&o)
	}
	switch mode {
	case "", "single":
		opt, err := goredis.ParseURL(url)
		if err != nil {
			return nil, urlError(url, err)
		}
		opt.ContextTimeoutEnabled = true
		tune(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.MaxRetries,
			&opt.MinRetryBackoff, &opt.MaxRetryBackoff, &opt.PoolSize, &opt.DialerRetries)
		if opt.TLSConfig, err = o.tls(opt.TLSConfig); err != nil {
			return nil, err
		}
		return withHooks(goredis.NewClient(opt), o.hooks), nil
	case "cluster":
		opt, err := goredis.ParseClusterURL(url)
		if err != nil {
			return nil, urlError(url, err)
		}
		opt.ContextTimeoutEnabled = true
		tune(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.MaxRetries,
			&opt.MinRetryBackoff, &opt.MaxRetryBackoff, &opt.PoolSize, &opt.DialerRetries)
		if opt.TLSConfig, err = o.tls(opt.TLSConfig); err != nil {
			return nil, err
		}
		opt.ClusterStateReloadInterval = clusterReloadInterval
		return withHooks(goredis.NewClusterClient(opt), o.hooks), nil
	case "sentinel":
		opt, err := goredis.ParseFailoverURL(url)
		if err != nil {
			return nil, urlError(url, err)
		}
		if opt.MasterName == "" {
			return nil, fmt.Errorf("redis: DISPATCHER_REDIS_URL: sentinel mode needs ?master_name=NAME")
		}
		opt.ContextTimeoutEnabled = true
		tune(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.MaxRetries,
			&opt.MinRetryBackoff, &opt.MaxRetryBackoff, &opt.PoolSize, &opt.DialerRetries)
		if opt.TLSConfig, err = o.tls(opt.TLSConfig); err != nil {
			return nil, err
		}
		return withHooks(goredis.NewFailoverClient(opt), o.hooks), nil
	}
	return nil, fmt.Errorf("redis: DISPATCHER_REDIS_MODE %q: want single, cluster or sentinel", mode)
}

// withHooks adds the caller's hooks (WithHook), then the hooks every client
// of NewClient has: a breaker, then busyHook; on a Cluster the latter two
// to the client of each node, through which every command goes
// (waitReplicas talks to a node's client directly), so that one node that
// stops answering does not stop the others' pools.
func withHooks(c goredis.UniversalClient, hooks []goredis.Hook) goredis.UniversalClient {
	for _, h := range hooks {
		c.AddHook(h)
	}
	add := func(c interface{ AddHook(goredis.Hook) }) {
		c.AddHook(newBreaker())
		c.AddHook(busyHook{})
	}
	if cc, ok := c.(*goredis.ClusterClient); ok {
		cc.AddHook(attempts{})
		cc.OnNewNode(func(n *goredis.Client) { add(n) })
		return c
	}
	add(c)
	return c
}

// urlError is the error of Redis URL u that did not parse. The parsers
// quote what they could not read, which may be part of a password (one
// with a '/', '#' or '?' that was not percent-encoded ends the user
// information early): a URL with user information gets no parser text.
func urlError(u string, err error) error {
	if strings.Contains(u, "@") {
		return errors.New("redis: DISPATCHER_REDIS_URL does not parse (its error is not shown, as it may quote the password): " +
			"percent-encode the characters / # ? @ % : in the user name and password")
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("redis: DISPATCHER_REDIS_URL does not parse: %v", ue.Err)
	}
	return fmt.Errorf("redis: DISPATCHER_REDIS_URL: %w", err)
}

// tune sets the fields the URL left at zero; the three option types of
// go-redis share these fields but no interface.
func tune(dial, read, write, pool *time.Duration, retries *int, minBackoff, maxBackoff *time.Duration, size, dialRetries *int) {
	setDuration(dial, dialTimeout)
	setDuration(read, readTimeout)
	setDuration(write, writeTimeout)
	setDuration(pool, poolTimeout)
	setDuration(minBackoff, minRetryBackoff)
	setDuration(maxBackoff, maxRetryBackoff)
	if *retries == 0 {
		*retries = maxRetries
	}
	if *size == 0 {
		*size = poolSize()
	}
	if *dialRetries == 0 {
		*dialRetries = dialerRetries
	}
}

func setDuration(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}
