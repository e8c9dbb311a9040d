package memory

import (
	"context"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// Snapshot reads the pool for its watchers: its counters, and every Scale
// or, beyond 2 × edge, the edge lowest and highest and a histogram of all.
// ErrPoolNotFound.
func (s *Store) Snapshot(_ context.Context, poolName string, edge, buckets int) (dispatch.Snapshot, error) {
	var snap dispatch.Snapshot
	err := s.read(poolName, func(p *pool) error {
		snap.Pool = p.info()
		snap.Counters = p.counters
		n := p.all.Len()
		take := func(start, count int) {
			p.all.scan(start, func(l balancing.Load) bool {
				snap.Scales = append(snap.Scales, p.scales[l.ID].Scale)
				count--
				return count > 0
			})
		}
		if n <= 2*edge {
			snap.Scales = make([]dispatch.Scale, 0, n)
			if n > 0 {
				take(0, n)
			}
			return nil
		}
		snap.Scales = make([]dispatch.Scale, 0, 2*edge)
		take(0, edge)
		take(n-edge, edge)
		lo, hi := p.all.At(0).Count, p.all.At(n-1).Count
		h := &dispatch.Histogram{Min: lo, Width: dispatch.HistogramWidth(lo, hi, buckets), Counts: make([]int64, buckets)}
		below := 0 // Scales under the bucket's start
		for i := range h.Counts {
			upTo := p.all.CountAtMost(lo + int64(i+1)*h.Width - 1)
			h.Counts[i] = int64(upTo - below)
			below = upTo
		}
		snap.Histogram = h
		return nil
	})
	return snap, err
}
