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
// batch of the call. As Dispatch, it sends random numbers only to a pool
// whose strategy it believes draws; the batches the script refuses for
// want of them go again, with them, in a second call: the first refused
// and every one after it, which dispatch_many.lua leaves unrun, so that
// the batches keep their order.
func (s *Store) DispatchMany(ctx context.Context, reqs []dispatch.DispatchRequest) []dispatch.DispatchResult {
	if len(reqs) == 0 {
		return []dispatch.DispatchResult{}
	}
	ph := s.heads.of(reqs[0].Pool)
	out := s.dispatchMany(ctx, ph, reqs, ph.draws.Load())
	var again []int
	for i := range out {
		if errors.Is(out[i].Err, errNoRand) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return out
	}
	ph.draws.Store(true)
	retry := make([]dispatch.DispatchRequest, len(again))
	for k, i := range again {
		retry[k] = reqs[i]
	}
	for k, r := range s.dispatchMany(ctx, ph, retry, true) {
		out[again[k]] = r
	}
	return out
}

// dispatchMany is one call of DispatchMany, with random numbers if draws.
func (s *Store) dispatchMany(ctx context.Context, ph *poolHeads, reqs []dispatch.DispatchRequest, draws bool) []dispatch.DispatchResult {
	out := make([]dispatch.DispatchResult, len(reqs))
	pool := reqs[0].Pool
	n := 1
	for _, req := range reqs {
		n += 1 + dispatchArgsLen(req)
	}
	args := ph.start(fnDispatchMany, pool, "", n)
	args = append(args, len(reqs))
	floor := batchFloor(ctx)
	for i, req := range reqs {
		if req.Pool != pool || req.DryRun {
			panic(fmt.Sprintf("redis: DispatchMany request %d: pool %q (want %q), dry run %v", i, req.Pool, pool, req.DryRun))
		}
		at := len(args)
		args = append(args, 0)
		var err error
		if args, err = s.dispatchArgs(args, req, floor, draws); err != nil {
			return failAll(out, err)
		}
		args[at] = len(args) - at - 1
	}
	v, err := s.send(ctx, ph, args)
	if err != nil && (v == nil || !errors.Is(err, dispatch.ErrNotReplicated)) {
		for i, req := range reqs {
			out[i].Err = dispatchFailure(ctx, err, req)
		}
		return out
	}
	// Every reply of the call, results and domain errors alike, waits for
	// one WAIT (answered): if it fell short (err), a batch that succeeded is
	// on the primary only and one that failed is not to be shown. A batch
	// refused with NORAND, which wrote nothing, is not answered from this
	// call but sent again (DispatchMany), and that call's WAIT decides.
	notRepl := err
	rs, _ := v.([]any)
	if len(rs) != len(reqs) {
		return failAll(out, fmt.Errorf("redis: dispatch_many replied %d results for %d batches", len(rs), len(reqs)))
	}
	for i, req := range reqs {
		r := &out[i]
		if e, ok := rs[i].([]any); ok && (len(e) == 2 || len(e) == 3) && asString(e[0]) == "error" {
			se, ok := parseScriptError(asString(e[1]))
			switch {
			case len(e) == 3:
				// a runtime error after the batch wrote: what it wrote stays
				r.Err = &dispatch.IndeterminateError{BatchID: req.BatchID, Err: fmt.Errorf("redis: dispatch_many: %v", e[1])}
			case !ok:
				r.Err = fmt.Errorf("redis: dispatch_many: %v", e[1])
			case se.code == codeNoRand:
				r.Err = errNoRand
			case notRepl != nil:
				r.Err = &dispatch.IndeterminateError{BatchID: req.BatchID, Err: notRepl}
			default:
				r.Err = se.dispatchDomain(req)
			}
			continue
		}
		r.Batch, r.Replayed, r.Err = decodeDispatch(req, rs[i])
		if r.Err == nil && !r.Replayed {
			ph.learn(string(r.Batch.Strategy))
		}
		if r.Err == nil && notRepl != nil {
			*r = dispatch.DispatchResult{Err: &dispatch.IndeterminateError{BatchID: r.Batch.ID, Err: notRepl}}
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
