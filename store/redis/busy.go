package redis

import (
	"context"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// While a script runs longer than Redis's busy-reply-threshold (5 s by
// default), Redis answers every other command BUSY. Such a script is a
// cost-capped batch of a strategy that reads every Scale per order, up to
// 10^7 steps (DESIGN §3), on a slow or loaded machine; or this very call,
// which go-redis sent again after its read timeout. busyHook sends a
// command that was answered BUSY again, after a pause that grows from
// busyMinPause to busyMaxPause, until the answer is another, the caller's
// context ends or busyMaxWait has passed: a dispatch re-sent in this way
// finds its batch recorded by the first run (scripts are idempotent by
// batch id) and answers as that run did, where it used to fail as
// indeterminate (503) although applied.
const (
	busyMinPause = 10 * time.Millisecond
	busyMaxPause = 200 * time.Millisecond
	busyMaxWait  = 10 * time.Second
)

// busyHook is the go-redis hook that rides out BUSY answers; NewClient
// adds it to every client, and to each node's client of a Cluster (whose
// commands and pipelines, WAIT's included, run through those).
type busyHook struct{}

func (busyHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (busyHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		var err error
		return whileBusy(ctx, func() error { err = next(ctx, cmd); return err }, func() bool { return isBusy(err) })
	}
}

// ProcessPipelineHook sends a pipeline again, whole, while Redis answered
// a command of it BUSY: the store's pipelines (reads, and the mark and WAIT
// of wait.go) may run twice.
func (busyHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		busy := func() bool {
			for _, c := range cmds {
				if isBusy(c.Err()) {
					return true
				}
			}
			return false
		}
		return whileBusy(ctx, func() error {
			for _, c := range cmds {
				c.SetErr(nil)
			}
			return next(ctx, cmds)
		}, busy)
	}
}

// whileBusy calls send, and again while busy reports a BUSY answer, after
// the pauses above, until ctx ends or busyMaxWait has passed; it returns
// the last send's error.
func whileBusy(ctx context.Context, send func() error, busy func() bool) error {
	err := send()
	if !busy() {
		return err
	}
	give := time.NewTimer(busyMaxWait)
	defer give.Stop()
	for pause := busyMinPause; busy(); pause = min(2*pause, busyMaxPause) {
		wait := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			wait.Stop()
			return err
		case <-give.C:
			wait.Stop()
			return err
		case <-wait.C:
		}
		err = send()
	}
	return err
}

// isBusy reports whether err is Redis's BUSY answer (not BUSYKEY, nor the
// scripts' DISPATCH BUSY).
func isBusy(err error) bool {
	msg, ok := replyText(err)
	return ok && strings.HasPrefix(msg, "BUSY ")
}

var _ goredis.Hook = busyHook{}
