package redis

import (
	"context"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
)

// DefaultRetention is how long completed and cancelled orders stay
// queryable when Options.Retention is zero.
const DefaultRetention = 24 * time.Hour

// Options tunes a Store.
type Options struct {
	// Retention is how long completed and cancelled orders stay queryable
	// after they finish (default DefaultRetention). A batch record lives
	// Retention after it is created, or with an Idempotency-Key the
	// request's IdempotencyTTL, as the key does; and at least as long as a
	// re-sent call may still arrive (resend.go).
	Retention time.Duration
	// WaitReplicas, if positive, makes every answer of the Store, a
	// write's or a read's, wait until that many replicas acknowledge
	// everything it rests on (Redis WAIT), at most WaitTimeout (default
	// DefaultWaitTimeout, at most MaxWaitTimeout). Fewer make the call fail
	// with an error that wraps dispatch.ErrNotReplicated (for a dispatch a
	// *dispatch.IndeterminateError naming the batch): the write is applied
	// on the primary but a failover may undo it. See wait.go.
	WaitReplicas int
	WaitTimeout  time.Duration
	// MaxScales is the most Scales a pool may hold (default and at most
	// dispatch.MaxScales); registering one more fails with
	// dispatch.ErrPoolFull.
	MaxScales int
}

// Client lists the go-redis calls the Store makes, so that a
// *goredis.Client, a *goredis.ClusterClient or any goredis.UniversalClient
// fits.
type Client interface {
	// The store's function library (functions.go): FCALL and FCALL_RO
	// by Do, with heads made once per pool (heads.go).
	Do(ctx context.Context, args ...any) *goredis.Cmd
	FunctionLoad(ctx context.Context, code string) *goredis.StringCmd

	// The pool list, which spans slots and so is kept outside the library.
	ZAdd(ctx context.Context, key string, members ...goredis.Z) *goredis.IntCmd
	ZRem(ctx context.Context, key string, members ...any) *goredis.IntCmd
	ZRangeArgs(ctx context.Context, z goredis.ZRangeArgs) *goredis.StringSliceCmd
	Exists(ctx context.Context, keys ...string) *goredis.IntCmd
	Pipelined(ctx context.Context, fn func(goredis.Pipeliner) error) ([]goredis.Cmder, error)

	Ping(ctx context.Context) *goredis.StatusCmd
}

var (
	_ Client = (*goredis.Client)(nil)
	_ Client = (*goredis.ClusterClient)(nil)
	_ Client = goredis.UniversalClient(nil)
)

// Store is the Redis store. It holds no state of its own, so any number of
// Stores, in any number of processes, may share one Redis. It is safe for
// concurrent use. Create one with New.
type Store struct {
	c         Client
	retention time.Duration
	maxScales int
	wait      waitPolicy
	waiters   *waiters
	heads     *heads
	settings  atomic.Pointer[settingsMemo] // the last settings argument (settingsArg)
}

var _ dispatch.Store = (*Store)(nil)

// New returns a Store over c. It panics if c is nil.
func New(c Client, opts Options) *Store {
	if c == nil {
		panic("redis: New with a nil Client")
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.MaxScales <= 0 || opts.MaxScales > dispatch.MaxScales {
		opts.MaxScales = dispatch.MaxScales
	}
	w := newWaitPolicy(opts)
	return &Store{c: c, retention: opts.Retention, maxScales: opts.MaxScales, wait: w, waiters: &waiters{policy: w},
		heads: &heads{}}
}

// Ping reports whether Redis answers: ErrUnavailable if not.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.c.Ping(ctx).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// poolsKey is the list of pool names; it spans slots.
const poolsKey = "dispatch:pools"

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMs(v int64) time.Time { return time.UnixMilli(v).UTC() }
