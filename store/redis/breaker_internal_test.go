package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// replyErr is an error reply of Redis, as goredis.Error sees one.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

var _ goredis.Error = replyErr("")

// TestBreakerStates: three timeouts in a row open the breaker, an answer in
// between resets the count, an open breaker lets one probe through per
// breakerProbe, and an answer to it (an error reply counts) closes it.
func TestBreakerStates(t *testing.T) {
	timeout := fmt.Errorf("read: %w", os.ErrDeadlineExceeded)
	reply := replyErr("ERR something")
	b := newBreaker()
	t0 := time.Unix(1000, 0)
	send := func(at time.Duration, err error) (ok bool) {
		t.Helper()
		ok, probe := b.allow(t0.Add(at))
		if ok {
			b.done(t0.Add(at), probe, err)
		}
		return ok
	}
	for i, step := range []struct {
		at   time.Duration
		err  error
		want bool // sent
	}{
		{0, timeout, true},
		{1, timeout, true},
		{2, nil, true}, // an answer: the count starts again
		{3, timeout, true},
		{4, timeout, true},
		{5, context.Canceled, true}, // says nothing either way
		{6, timeout, true},          // the third in a row: open
		{7, nil, false},
		{breakerProbe / 2, nil, false},
		{breakerProbe + 6, timeout, true}, // the probe, and it times out
		{breakerProbe + 7, nil, false},
		{2*breakerProbe + 6, reply, true}, // the next probe gets an answer
		{2*breakerProbe + 7, nil, true},   // closed
	} {
		if got := send(step.at, step.err); got != step.want {
			t.Fatalf("step %d at %v: sent %v, want %v (fails %d, open %v)", i, step.at, got, step.want, b.fails, b.open)
		}
	}
	if !errors.Is(ErrNotAnswering, ErrNotAnswering) || !notSent(ErrNotAnswering) {
		t.Error("ErrNotAnswering does not read as not sent")
	}
}
