package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
)

// scriptError is a domain error a script reported as
// "DISPATCH CODE detail".
type scriptError struct{ code, detail string }

// replyText returns the message of the Redis error reply in err, if err
// holds one (and not a failure of the connection or the client).
func replyText(err error) (string, bool) {
	if err == nil {
		return "", false // without re, which escapes to errors.As
	}
	var re goredis.Error
	if !errors.As(err, &re) {
		return "", false
	}
	return re.Error(), true
}

// asScriptError returns the domain error in err, if there is one.
func asScriptError(err error) (scriptError, bool) {
	msg, ok := replyText(err)
	if !ok {
		return scriptError{}, false
	}
	return parseScriptError(msg)
}

// parseScriptError reads an error message "DISPATCH CODE detail".
func parseScriptError(msg string) (scriptError, bool) {
	msg, ok := strings.CutPrefix(msg, "DISPATCH ")
	if !ok {
		return scriptError{}, false
	}
	code, detail, _ := strings.Cut(msg, " ")
	return scriptError{code: code, detail: strings.TrimSpace(detail)}, true
}

// translate turns an error of a script call for pool into the errors of
// package dispatch: the domain errors the script reported, ErrUnavailable
// for an unreachable or unready Redis, and anything else (a bug) as is.
func translate(err error, pool string) error {
	if errors.Is(err, dispatch.ErrNotReplicated) {
		return err
	}
	if se, ok := asScriptError(err); ok {
		return se.domain(pool)
	}
	return unavailable(err)
}

// dispatchDomain is domain for a dispatch of req, whose key the script
// does not know.
func (se scriptError) dispatchDomain(req dispatch.DispatchRequest) error {
	if se.code == "IDEM" {
		return idemMismatch(req)
	}
	return se.domain(req.Pool)
}

func (se scriptError) domain(pool string) error {
	d := se.detail
	switch se.code {
	case "NOPOOL":
		return errorf(dispatch.ErrPoolNotFound, "pool %q", pool)
	case "NOSCALE":
		return errorf(dispatch.ErrScaleNotFound, "scale %q in pool %q", d, pool)
	case "NOORDER":
		return errorf(dispatch.ErrOrderNotFound, "order %q in pool %q", d, pool)
	case "NOBATCH":
		return errorf(dispatch.ErrBatchNotFound, "batch %q in pool %q", d, pool)
	case "EXISTS":
		return errorf(dispatch.ErrOrderExists, "order %q is already in pool %q", d, pool)
	case "NOELIG":
		if d == "none" {
			return errorf(dispatch.ErrNoEligibleScale, "pool %q has no active Scale below its maxOrders", pool)
		}
		return errorf(dispatch.ErrNoEligibleScale, "the eligible Scales of pool %q have room for %s orders, fewer than the batch has", pool, d)
	case "CAP":
		f := strings.Fields(d) // compId, orderCount, orders
		if len(f) != 3 {
			return errorf(dispatch.ErrNoEligibleScale, "%s", d)
		}
		return errorf(dispatch.ErrNoEligibleScale, "scale %q holds %s orders: %s more could take it past %d, the most a Scale holds; give it a maxOrders or another state",
			f[0], f[1], f[2], dispatch.MaxOrderCount)
	case "IDEM":
		return errorf(dispatch.ErrIdempotencyMismatch, "Idempotency-Key %q was used with another request", d)
	case "BUSY":
		id, n, _ := strings.Cut(d, " ")
		return errorf(dispatch.ErrScaleBusy, "scale %q has %s outstanding orders", id, n)
	case "SCALESTATE":
		id, state, _ := strings.Cut(d, " ")
		return errorf(dispatch.ErrScaleState, "scale %q is %s, not down", id, state)
	case "STATE":
		id, state, _ := strings.Cut(d, " ")
		return errorf(dispatch.ErrOrderState, "order %q is %s", id, state)
	case "FULL":
		return errorf(dispatch.ErrPoolFull, "pool %q holds %s Scales, the most a pool may", pool, d)
	case "EMPTY":
		return errorf(dispatch.ErrEmptyBatch, "a batch needs at least one order")
	case "DUP":
		return errorf(dispatch.ErrDuplicateOrder, "order %q appears more than once", d)
	case "INVALID":
		return errorf(dispatch.ErrInvalidRequest, "%s", d)
	case "TOOEXPENSIVE":
		f := strings.Fields(d) // strategy, eligible Scales, orders, cap
		if len(f) != 4 {
			return errorf(dispatch.ErrTooExpensive, "%s", d)
		}
		return errorf(dispatch.ErrTooExpensive, "strategy %s reads every eligible Scale for each order: %s eligible Scales × %s orders is over the cap of %s per batch; send smaller batches",
			f[0], f[1], f[2], f[3])
	case "STRATEGY":
		return errorf(dispatch.ErrUnknownStrategy, "pool %q has strategy %q", pool, d)
	case codeNoRand:
		return errNoRand
	case "LAYOUT":
		return fmt.Errorf("redis: pool %q is stored in the layout of an earlier build; see docs/operations.md, Upgrades", pool)
	}
	return fmt.Errorf("redis: unknown script error %s %s", se.code, d)
}

// transientPrefixes are the Redis errors of a server that is up but cannot
// serve now: loading, a replica, a failover or resharding under way, out of
// memory, busy with a script.
var transientPrefixes = []string{
	"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS",
	"OOM", "BUSY", "MOVED", "ASK", "NOAUTH", "WRONGPASS", "NOPERM",
	"ERR max number of clients",
}

// unavailable wraps a failure to reach Redis in dispatch.ErrUnavailable,
// and an OOM answer in dispatch.ErrStoreFull. Other errors, such as a
// script bug, are returned as they are (a 500).
func unavailable(err error) error {
	if err == nil || errors.Is(err, dispatch.ErrNotReplicated) {
		return err
	}
	if isOOM(err) {
		return fmt.Errorf("%w: redis: %w", dispatch.ErrStoreFull, err)
	}
	if isBug(err) {
		return fmt.Errorf("redis: %w", err)
	}
	return fmt.Errorf("%w: redis: %w", dispatch.ErrUnavailable, err)
}

// isOOM reports whether err is Redis's answer to a write while it is at
// maxmemory (with noeviction): "OOM command not allowed …", directly or
// from within a script, which fails at its first write and so changes
// nothing.
func isOOM(err error) bool {
	msg, ok := replyText(err)
	return ok && (strings.HasPrefix(msg, "OOM ") || strings.Contains(msg, "-OOM ") ||
		strings.Contains(msg, "OOM command not allowed"))
}

// isBug reports whether err is an error reply of a Redis that is up and
// serving: a script that failed, a command misused.
func isBug(err error) bool {
	msg, ok := replyText(err)
	if !ok {
		return false
	}
	for _, p := range transientPrefixes {
		if strings.HasPrefix(msg, p) {
			return false
		}
	}
	return true
}

// raisedInScript reports whether err is an error that a running script
// raised, its own or one of a command it called: Redis names the script
// in it ("… script: dispatch_<hash>, on @user_function:<line>.").
func raisedInScript(err error) bool {
	msg, ok := replyText(err)
	return ok && strings.Contains(msg, " script: ")
}

// notSent reports whether err proves that the last attempt of a command
// never reached Redis: no connection could be made or taken from the pool.
// After any other failure a script may have run. (ErrNotAnswering proves
// more, that no attempt did: dispatchFailure reads it first.)
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, goredis.ErrPoolTimeout) || errors.Is(err, goredis.ErrClosed)
}

// dispatchFailure translates the error of a dispatch script call. A
// dispatch that may have reached Redis without an answer is indeterminate:
// even an error reply may follow a first run whose reply was lost, since
// go-redis retries.
func dispatchFailure(ctx context.Context, err error, req dispatch.DispatchRequest) error {
	if errors.Is(err, dispatch.ErrNotReplicated) {
		// A domain error answered, held back: the call may yet follow a
		// first run whose reply was lost.
		if req.DryRun {
			return err
		}
		return &dispatch.IndeterminateError{BatchID: req.BatchID, Err: err}
	}
	if se, ok := asScriptError(err); ok {
		return se.dispatchDomain(req)
	}
	if errors.Is(err, ErrNotAnswering) {
		return fmt.Errorf("%w: redis: %w", dispatch.ErrNotSent, err)
	}
	if !req.DryRun && raisedInScript(err) {
		// Redis keeps what a script wrote before it raised: the batch, or
		// those of a call of several that ran before (their tails and meta
		// come at the call's end), may be applied.
		return &dispatch.IndeterminateError{BatchID: req.BatchID, Err: fmt.Errorf("redis: %w", err)}
	}
	if req.DryRun || notSent(err) || isBug(err) {
		return unavailable(err)
	}
	if isOOM(err) {
		// This attempt was refused, but one that go-redis sent before it
		// (a read timeout) may have run: still indeterminate.
		err = unavailable(err)
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%w)", err, ctx.Err())
	}
	return &dispatch.IndeterminateError{BatchID: req.BatchID, Err: fmt.Errorf("redis: %w", err)}
}

// errorf wraps a sentinel of package dispatch with a detail for the caller.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}
