package redis

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// A Redis that stops answering without closing its connections (a hung
// process, a host that froze, a partition that drops packets) holds every
// command for the read timeout, three times with go-redis's retries: some
// 9 s with NewClient's settings, for every request, for as long as it
// lasts. breaker fails commands at once instead, without sending them, once
// breakerTrips commands in a row have failed with a timeout; it lets one
// command through every breakerProbe, and the first that gets an answer
// (a reply, an error reply included) closes it again. Each client of
// NewClient has one, on a Cluster each node's client. Failures after the
// caller's own context ended do not count.
const breakerTrips = 3

// breakerProbe is how often an open breaker lets a command through (a
// variable for the tests).
var breakerProbe = time.Second

// ErrNotAnswering is the error of a command that a client did not send
// because Redis had stopped answering (breaker): nothing was sent, so
// nothing was applied.
var ErrNotAnswering = errors.New("not sent: Redis has not answered the last commands in time; commands fail at once until one gets an answer")

// breaker counts a client's timeouts in a row and short-circuits commands
// while open.
type breaker struct {
	// calm is set while the breaker is closed and counts no timeout: the
	// usual case, which a command passes without taking mu.
	calm      atomic.Bool
	mu        sync.Mutex
	fails     int       // commands in a row that failed with a timeout
	open      bool      // failing commands at once
	lastProbe time.Time // when an open breaker last let a command through
	probing   bool      // that command has not finished
}

// newBreaker returns a closed breaker.
func newBreaker() *breaker {
	b := &breaker{}
	b.calm.Store(true)
	return b
}

// allow reports whether a command may be sent now, and whether it is the
// probe of an open breaker.
func (b *breaker) allow(now time.Time) (ok, probe bool) {
	if b.calm.Load() {
		return true, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return true, false
	}
	if b.probing || now.Sub(b.lastProbe) < breakerProbe {
		return false, false
	}
	b.probing, b.lastProbe = true, now
	return true, true
}

// done records the outcome of a command that was sent, as the metrics
// classify it (errorCode): a timeout counts, an answer (a reply, an error
// reply included: no code, or a reply's word) closes; the rest (a refused
// dial, a pool timeout, a cancelled caller) says nothing of whether Redis
// answers, and go-redis fails refused dials fast itself.
func (b *breaker) done(now time.Time, probe bool, err error) {
	code := errorCode(err)
	timedOut := code == codeDeadline || code == codeTimeout
	if b.calm.Load() && !timedOut {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch code {
	case codeDeadline, codeTimeout:
		if b.fails++; b.fails >= breakerTrips && !b.open {
			b.open, b.lastProbe = true, now
		}
	case codeNetwork, codePoolTimeout, codeCanceled, codeNotAnswering:
	default:
		b.fails, b.open = 0, false
	}
	b.calm.Store(b.fails == 0 && !b.open)
}

func (b *breaker) DialHook(next goredis.DialHook) goredis.DialHook { return next }

// handshake names the commands go-redis sends to set up a new connection,
// through the client's hooks: the breaker lets them by, so that a probe
// that needs a new connection can get one; their failures reach the
// command that waited for the connection, which counts.
var handshake = map[string]bool{"hello": true, "auth": true, "client": true, "select": true, "readonly": true}

func (b *breaker) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) (err error) {
		if handshake[cmd.Name()] {
			return next(ctx, cmd)
		}
		ok, probe := b.allow(time.Now())
		if !ok {
			return heldBack(ctx)
		}
		markSent(ctx)
		err = errPanicked // until next returns
		defer func() { b.done(time.Now(), probe, verdict(ctx, err)) }()
		return next(ctx, cmd)
	}
}

func (b *breaker) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if !slices.ContainsFunc(cmds, func(c goredis.Cmder) bool { return !handshake[c.Name()] }) {
			return next(ctx, cmds)
		}
		ok, probe := b.allow(time.Now())
		if !ok {
			err := heldBack(ctx)
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		markSent(ctx)
		err := errPanicked // until next returns
		defer func() { b.done(time.Now(), probe, verdict(ctx, err)) }()
		err = next(ctx, cmds)
		return err
	}
}

// errPanicked and errCallerGone are outcomes that say nothing of whether
// Redis answers: a panic below the hook, and a failure after the caller's
// own context ended (a /readyz with its 1 s, a client that left), which a
// healthy Redis busy with another's long script may cause.
var (
	errPanicked   = errors.New("panicked")
	errCallerGone = errors.New("the caller's context ended")
)

// verdict is the outcome of a command for the breaker.
func verdict(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return errCallerGone
	}
	return err
}

// ErrHeldBack is the error of a command that a Cluster client sent to a
// node, and then, retrying or following a redirection, found held back by
// that node's breaker: an earlier attempt was sent, so it may have run.
var ErrHeldBack = errors.New("redis: not answering; the command was held back after an earlier attempt was sent")

// sentKey marks the context of one command of a Cluster client (attempts),
// whose redirections and retries call a node's client, and its breaker,
// again: the mark records that an attempt went out.
type sentKey struct{}

// sentMark returns the mark of ctx, or nil outside a Cluster client.
func sentMark(ctx context.Context) *atomic.Bool {
	s, _ := ctx.Value(sentKey{}).(*atomic.Bool)
	return s
}

// heldBack is the error of a command the breaker holds back: ErrNotAnswering,
// unless an earlier attempt of the same command was sent.
func heldBack(ctx context.Context) error {
	if s := sentMark(ctx); s != nil && s.Load() {
		return ErrHeldBack
	}
	return ErrNotAnswering
}

func markSent(ctx context.Context) {
	if s := sentMark(ctx); s != nil {
		s.Store(true)
	}
}

// attempts is the hook of a Cluster client that gives each of its commands
// and pipelines the mark of sentKey, above its retries and redirections.
type attempts struct{}

func (attempts) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (attempts) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		return next(context.WithValue(ctx, sentKey{}, new(atomic.Bool)), cmd)
	}
}

func (attempts) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		return next(context.WithValue(ctx, sentKey{}, new(atomic.Bool)), cmds)
	}
}

var _ goredis.Hook = (*breaker)(nil)
