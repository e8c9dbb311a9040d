package redis

import (
	"context"
	"errors"
	"fmt"
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
// mark; one round at a time is in flight, and the callers that arrive
// meanwhile make the next. Under load a round serves every command
// answered during the round before it, so WAITs cost one round trip per
// round rather than per command (TestWaitShared, BenchmarkWaitMixed).

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

// primaryRounds are the rounds of one primary.
type primaryRounds struct {
	policy   waitPolicy
	unshared bool
	mu       sync.Mutex
	busy     bool   // a round is in flight
	next     *round // the round that callers join, not yet sent
}

// round is one mark and WAIT, which answers every caller that joined it.
type round struct {
	c    pipeliner // where the first caller's command ran
	mark string    // a key of that caller, in its slot
	done chan struct{}
	err  error // set before done closes
}

// join returns the round that will confirm every write the primary had
// applied when join was called. It starts the round at once when none is
// in flight.
func (p *primaryRounds) join(c pipeliner, mark string) *round {
	if p.unshared {
		r := &round{c: c, mark: mark, done: make(chan struct{})}
		go func() { r.err = p.send(r); close(r.done) }()
		return r
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == nil {
		p.next = &round{c: c, mark: mark, done: make(chan struct{})}
	}
	r := p.next
	if !p.busy {
		p.busy = true
		go p.run()
	}
	return r
}

// run sends the rounds one after another while callers wait.
//
// A round that follows one that failed fails too, without asking Redis:
// its callers' commands were answered while the primary was failing, and
// by the time it would be sent a failover may have put another primary
// behind the same client, whose replicas would confirm writes they never
// held from a primary that never had them.
func (p *primaryRounds) run() {
	failed := false
	for {
		p.mu.Lock()
		r := p.next
		p.next = nil
		if r == nil {
			p.busy = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		if failed {
			r.err = notReplicated(errors.New("answered while the WAIT before it failed"))
			failed = false
		} else {
			r.err = p.send(r)
			failed = r.err != nil
		}
		close(r.done)
	}
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
