package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Sharing WAITs.
//
// WAIT counts the writes of the connection it is sent on, and the command
// whose reply it confirms ran on whichever pooled connection go-redis
// chose (a read, or a replay, wrote nothing at all): a WAIT on a
// connection that has written nothing answers at once with every
// connected replica, however far behind. So a WAIT follows a write of its
// own, the mark, in one pipeline on one connection. The primary's
// replication stream is one sequence: the mark comes after every write the
// primary had applied before it, so a replica that acknowledges the mark
// holds all of them.
//
// That makes one WAIT enough for every command that was answered before
// its mark was sent, whichever connection, pool or client ran it: a
// round. Callers of one primary join the round that has not yet sent its
// mark, which is sent at once unless maxRoundsInFlight rounds are in
// flight; then it collects the callers that arrive until one of those
// answers. Under load a round serves every command answered meanwhile, so
// WAITs cost Redis one mark and WAIT per round rather than per command
// (TestWaitShared, BenchmarkWaitMixed).

// waiters holds the rounds of each primary, by node address ("" for the
// one primary of a Client that is not a Cluster's).
type waiters struct {
	policy   waitPolicy
	unshared bool // each caller its own round: for the benchmark's baseline
	mu       sync.Mutex
	nodes    map[string]*primaryRounds
}

func (w *waiters) of(node string) *primaryRounds {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nodes == nil {
		w.nodes = make(map[string]*primaryRounds)
	}
	p := w.nodes[node]
	if p == nil {
		p = &primaryRounds{policy: w.policy, unshared: w.unshared}
		w.nodes[node] = p
	}
	return p
}

// maxRoundsInFlight is how many rounds of one primary may be in flight at
// once. One would make a caller wait for the round in flight and then its
// own, 1.5 rounds on average; a few keep that near one round while callers
// that arrive when all are in flight still share the next.
const maxRoundsInFlight = 4

// primaryRounds are the rounds of one primary.
type primaryRounds struct {
	policy   waitPolicy
	unshared bool
	mu       sync.Mutex
	inFlight []*round
	next     *round // the round that callers join, not yet sent
}

// round is one mark and WAIT, which answers every caller that joined it.
type round struct {
	c      pipeliner // where the first caller's command ran
	mark   string    // a key of that caller, in its slot
	before []*round  // the rounds in flight when it opened
	done   chan struct{}
	err    error // set before done closes
	failed bool  // its own WAIT failed; set before done closes
}

// join returns the round that will confirm every write the primary had
// applied when join was called, and sends it at once unless
// maxRoundsInFlight are in flight.
func (p *primaryRounds) join(c pipeliner, mark string) *round {
	if p.unshared {
		r := &round{c: c, mark: mark, done: make(chan struct{})}
		go func() { r.err = p.send(r); close(r.done) }()
		return r
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == nil {
		p.next = &round{c: c, mark: mark, before: slices.Clone(p.inFlight), done: make(chan struct{})}
	}
	r := p.next
	if len(p.inFlight) < maxRoundsInFlight {
		p.start()
	}
	return r
}

// start sends the open round; p.mu is held.
func (p *primaryRounds) start() {
	r := p.next
	p.next = nil
	p.inFlight = append(p.inFlight, r)
	go p.finish(r)
}

// finish sends r, then answers it once the rounds before it have answered.
//
// A round fails if one that was in flight when it opened failed its WAIT:
// its callers' commands were answered while the primary was failing, and
// by the time it was sent a failover may have put another primary behind
// the same client, whose replicas would confirm writes they never held
// from a primary that never had them.
func (p *primaryRounds) finish(r *round) {
	err := p.send(r)
	r.failed = err != nil
	for _, b := range r.before {
		<-b.done
		if err == nil && b.failed {
			err = notReplicated(errors.New("answered while an earlier WAIT failed"))
		}
	}
	r.err, r.before = err, nil
	p.mu.Lock()
	p.inFlight = slices.DeleteFunc(p.inFlight, func(x *round) bool { return x == r })
	if p.next != nil {
		p.start()
	}
	p.mu.Unlock()
	close(r.done)
}

// send writes r's mark and WAITs for it on one connection, within the
// wait timeout and a margin for the round trip; no caller's context ends
// it, as it answers them all.
func (p *primaryRounds) send(r *round) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.policy.timeout+roundMargin)
	defer cancel()
	var acks *goredis.Cmd
	if _, err := r.c.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		pl.Set(ctx, r.mark, "1", waitMarkTTL)
		acks = pl.Do(ctx, "wait", p.policy.replicas, p.policy.timeout.Milliseconds())
		return nil
	}); err != nil {
		return notReplicated(fmt.Errorf("WAIT: %v", err))
	}
	n, err := acks.Int64()
	if err != nil {
		return notReplicated(fmt.Errorf("WAIT: %v", err))
	}
	if n < int64(p.policy.replicas) {
		return notReplicated(fmt.Errorf("%d of %d replicas acknowledged within %s", n, p.policy.replicas, p.policy.timeout))
	}
	return nil
}

// roundMargin is how long past the wait timeout a round may take for its
// round trip before it fails.
const roundMargin = 500 * time.Millisecond
