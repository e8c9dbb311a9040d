package redis

import (
	"context"
	"fmt"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Snapshot reads the pool, its counters and its Scales for its watchers in
// one read-only script (lua/watch.lua): every Scale up to 2 × edge, else the
// edge lowest and highest and a histogram of all in buckets buckets.
// ErrPoolNotFound, ErrUnavailable.
func (s *Store) Snapshot(ctx context.Context, pool string, edge, buckets int) (dispatch.Snapshot, error) {
	v, err := s.call(ctx, fnWatch, pool, edge, buckets)
	if err != nil {
		return dispatch.Snapshot{}, translate(err, pool)
	}
	r, _ := v.([]any)
	if len(r) < 10 || (len(r)-10)%3 != 0 {
		return dispatch.Snapshot{}, fmt.Errorf("redis: watch replied %v", v)
	}
	p, err := decodePool(pool, r[:4])
	if err != nil {
		return dispatch.Snapshot{}, err
	}
	snap := dispatch.Snapshot{
		Pool: p,
		Counters: dispatch.Counters{
			Dispatched: asInt(r[4]), Completed: asInt(r[5]), Cancelled: asInt(r[6]),
			Moved: asInt(r[7]), Failed: asInt(r[8]),
		},
		Scales: make([]dispatch.Scale, 0, (len(r)-10)/3),
	}
	if h, _ := r[9].([]any); len(h) > 0 {
		if len(h) != 2+buckets {
			return dispatch.Snapshot{}, fmt.Errorf("redis: watch replied a histogram of %d fields", len(h))
		}
		snap.Histogram = &dispatch.Histogram{Min: asInt(h[0]), Width: asInt(h[1]), Counts: make([]int64, buckets)}
		for i := range buckets {
			snap.Histogram.Counts[i] = asInt(h[2+i])
		}
	}
	for i := 10; i < len(r); i += 3 {
		sc, err := decodeScale(asString(r[i]), asString(r[i+2]))
		if err != nil {
			return dispatch.Snapshot{}, err
		}
		snap.Scales = append(snap.Scales, sc)
	}
	return snap, nil
}
