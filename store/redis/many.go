package redis

import (
	"context"
	"errors"
	"fmt"

	"github.com/dispatcher/dispatcher/dispatch"
)

// DispatchMany applies several batches of one pool in one script call
// (lua/dispatch_many.lua, a function of the dispatch library), one after
// another, each as Dispatch would apply it alone: all or nothing, seeing
// the batches before it. A failure of the call fails every request as it
// would fail Dispatch. With Options.WaitReplicas, one WAIT covers every
// batch of the call.
func (s *Store) DispatchMany(ctx context.Context, reqs []dispatch.DispatchRequest) []dispatch.DispatchResult {
	out := make([]dispatch.DispatchResult, len(reqs))
	if len(reqs) == 0 {
		return out
	}
	pool := reqs[0].Pool
	args := make([]any, 0, 1+len(reqs)*13)
	args = append(args, len(reqs))
	floor := batchFloor(ctx)
	for i, req := range reqs {
		if req.Pool != pool || req.DryRun {
			panic(fmt.Sprintf("redis: DispatchMany request %d: pool %q (want %q), dry run %v", i, req.Pool, pool, req.DryRun))
		}
		at := len(args)
		args = append(args, 0)
		var err error
		if args, err = s.dispatchArgs(args, req, floor); err != nil {
			return failAll(out, err)
		}
		args[at] = len(args) - at - 1
	}
	v, err := s.call(ctx, fnDispatchMany, pool, args...)
	if err != nil {
		for i, req := range reqs {
			out[i].Err = dispatchFailure(ctx, err, req)
		}
		return out
	}
	rs, _ := v.([]any)
	if len(rs) != len(reqs) {
		return failAll(out, fmt.Errorf("redis: dispatch_many replied %d results for %d batches", len(rs), len(reqs)))
	}
	last := ""
	for i, req := range reqs {
		r := &out[i]
		if e, ok := rs[i].([]any); ok && len(e) == 2 && asString(e[0]) == "error" {
			se, ok := parseScriptError(asString(e[1]))
			if !ok {
				r.Err = fmt.Errorf("redis: dispatch_many: %v", e[1])
				continue
			}
			r.Err = se.domain(pool)
			continue
		}
		r.Batch, r.Replayed, r.Err = decodeDispatch(req, rs[i])
		if r.Err == nil {
			last = r.Batch.ID
		}
	}
	if last == "" {
		return out
	}
	// The mark that WAIT follows comes after the call's last write, so a
	// replica that acknowledges it holds every batch of the call.
	if err := s.waitReplicas(ctx, pool, last); err != nil {
		if ie, ok := errors.AsType[*dispatch.IndeterminateError](err); ok {
			err = ie.Err
		}
		for i := range out {
			if out[i].Err == nil {
				out[i] = dispatch.DispatchResult{Err: notReplicated(out[i].Batch.ID, err)}
			}
		}
	}
	return out
}

// failAll sets err as the result of every request.
func failAll(out []dispatch.DispatchResult, err error) []dispatch.DispatchResult {
	for i := range out {
		out[i] = dispatch.DispatchResult{Err: err}
	}
	return out
}
