package redis

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"
)

// A script may run again for one call: go-redis re-sends it after a
// dropped connection or a read timeout, and busyHook after a BUSY answer.
// Two records exist for that alone, and each lives as long as a re-sent
// run can matter to it, so that Redis holds them for seconds, not for a
// fixed half minute at every call:
//
//   - a call's reply key (runCall) serves a re-run's reply to the Go call
//     that is still waiting for it. Once that call has returned, nobody
//     reads a reply of its command any more, so the key may leave when the
//     call's deadline passes: it lives resendWindow(ctx) + replyMargin.
//   - a batch record also keeps a re-sent dispatch from applying its batch
//     twice, or failing on its own orders. That holds until the command
//     itself has run for the last time, which may be after the Go call has
//     given up: a command written just before the deadline can wait in
//     Redis behind a running script until Redis answers BUSY, after its
//     busy-reply-threshold (5 s by default). So a batch record lives at
//     least resendWindow(ctx) + queueMargin, whatever the retention.
const (
	// maxResend bounds the time from a call's first run to its last re-send
	// when its context has no deadline: busyHook's busyMaxWait, plus the
	// last send's (1+maxRetries) attempts of at most writeTimeout +
	// readTimeout each and their backoffs, about 28.5 s.
	maxResend = 30 * time.Second
	// replyMargin covers the clocks: Redis counts a key's PX from when the
	// first run sets it, which is after the Go call measured its deadline,
	// so the key outlives the deadline by the margin however long the
	// command took to arrive.
	replyMargin = time.Second
	// queueMargin is Redis's default busy-reply-threshold (lua-time-limit):
	// the longest a command waits behind a running script before Redis
	// answers it BUSY instead of running it. An operator who raises it
	// must raise this with it (docs/operations.md).
	queueMargin = 5 * time.Second
)

// resendWindow is how long after a call starts go-redis may still send it:
// until ctx's deadline, and at most maxResend.
func resendWindow(ctx context.Context) time.Duration {
	w := maxResend
	if d, ok := ctx.Deadline(); ok {
		w = min(w, max(time.Until(d), 0))
	}
	return w
}

// callToken returns a random call token for runCall that carries how long
// the script keeps its reply ("<random>:<ms>", lib.lua's callPut): a script
// that runs twice for one call (go-redis re-sent it) finds the reply its
// first run kept under the token and answers as that run did.
func callToken(ctx context.Context) string {
	ttl := (resendWindow(ctx) + replyMargin).Milliseconds()
	return strconv.FormatUint(rand.Uint64(), 36) + ":" + strconv.FormatInt(ttl, 10)
}

// maxFloor bounds batchFloor.
const maxFloor = maxResend + queueMargin

// batchFloor is the least time a batch record dispatched under ctx stays
// in Redis, whatever its window (see above).
func batchFloor(ctx context.Context) time.Duration { return resendWindow(ctx) + queueMargin }
