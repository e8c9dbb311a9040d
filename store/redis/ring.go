package redis

import (
	"context"
	"fmt"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// Building a consistent-hash ring in steps (lua/ring_build.lua): ringStep
// Scales per call, ringAttempts tries while Scales come and go.
const (
	ringStep     = 50 // 5,000 points: some tens of ms of Redis per call
	ringAttempts = 3
	ringVNodes   = balancing.DefaultVNodes
	// ringInScript is the most Scales whose ring pool_put.lua builds in
	// one call when the steps could not keep up with the Scales: 100,000
	// points, some hundreds of ms of Redis. A larger pool's switch fails
	// instead of holding Redis for seconds or minutes.
	ringInScript = 1000
)

// errRingChurn is the error of a switch to consistent-hash whose ring the
// pool's registrations and deletions kept outdating.
var errRingChurn = fmt.Errorf("%w: the pool's Scales kept changing while its consistent-hash ring was built (%d tries); switch again once they settle",
	dispatch.ErrUnavailable, ringAttempts)

// buildRing places the ring of pool's Scales in steps of ringStep Scales,
// before PutPool switches the pool to consistent-hash, so that the switch
// does not build it in one long script; it hashes the points itself, which
// costs Go far less than Lua. A build cut short (a deadline) resumes where
// it stopped when PutPool is called again. It returns the version of the
// Scales the ring holds, which pool_put.lua checks, or "" when there is
// nothing to build in steps (no such pool, already hashing, few Scales) or
// the Scales kept changing: pool_put.lua then builds the ring itself, or,
// for more than ringInScript Scales, errRingChurn.
func (s *Store) buildRing(ctx context.Context, pool string) (string, error) {
	scales := 0
	for range ringAttempts {
		v, err := s.call(ctx, fnRingBuild, pool, "start")
		if se, ok := asScriptError(err); ok && se.code == "NOPOOL" {
			return "", nil // PutPool creates it, without Scales
		}
		if err != nil {
			return "", translate(err, pool)
		}
		r, _ := v.([]any)
		if len(r) != 2 || asString(r[0]) != "started" {
			return "", nil // already hashing
		}
		version := asString(r[1])
		ids, err := s.allScaleIDs(ctx, pool)
		if err != nil {
			return "", err
		}
		if scales = len(ids); scales <= ringStep {
			return "", nil
		}
		stale := false
		for i := 0; i < len(ids) && !stale; i += ringStep {
			args := []any{"add", version}
			for _, id := range ids[i:min(i+ringStep, len(ids))] {
				args = append(args, id)
				for _, p := range balancing.RingPoints(id, ringVNodes) {
					args = append(args, p)
				}
			}
			v, err := s.call(ctx, fnRingBuild, pool, args...)
			if err != nil {
				return "", translate(err, pool)
			}
			r, _ := v.([]any)
			if len(r) != 1 {
				return "", fmt.Errorf("redis: ring_build replied %v", v)
			}
			switch asString(r[0]) {
			case "added":
			case "stale":
				stale = true
			default:
				return "", nil // switched to consistent-hash meanwhile
			}
		}
		if !stale {
			return version, nil
		}
	}
	if scales > ringInScript {
		return "", errRingChurn
	}
	return "", nil
}

// allScaleIDs lists the compIds of pool's Scales, page by page.
func (s *Store) allScaleIDs(ctx context.Context, pool string) ([]string, error) {
	var ids []string
	p := dispatch.Page{Limit: dispatch.MaxLimit}
	for {
		scales, next, err := s.ListScales(ctx, pool, p)
		if err != nil {
			return nil, err
		}
		for _, sc := range scales {
			ids = append(ids, sc.CompID)
		}
		if next == "" {
			return ids, nil
		}
		p.Cursor = next
	}
}
