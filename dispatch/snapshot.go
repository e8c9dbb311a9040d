package dispatch

import (
	"context"
	"time"
)

// The shape of a snapshot (DESIGN §9): every Scale of a pool of at most
// 2 × SnapshotEdge Scales; of a larger pool the SnapshotEdge lowest and the
// SnapshotEdge highest by orderCount, with a histogram of all of them in
// HistogramBuckets buckets.
const (
	SnapshotEdge     = 500
	HistogramBuckets = 20
)

// Counters are a pool's counts since its creation, each kept by the store
// in the same atomic operation as the changes it counts, so that a retried
// or coalesced call counts once.
type Counters struct {
	// Dispatched counts the orders of the batches recorded (replays and
	// dry runs excluded).
	Dispatched int64
	// Completed and Cancelled count the orders that left state assigned
	// for that state (a forced Scale deletion cancels).
	Completed, Cancelled int64
	// Moved counts the orders reassigned from one Scale to another.
	Moved int64
	// Failed counts the failure reports that counted against a Scale.
	Failed int64
}

// Histogram counts Scales by orderCount: bucket i holds those with
// Min + i·Width <= orderCount < Min + (i+1)·Width.
type Histogram struct {
	Min, Width int64
	Counts     []int64
}

// Snapshot is a pool as one read of the store saw it, for watchers.
type Snapshot struct {
	// At is when the Service asked the store.
	At       time.Time
	Pool     Pool
	Counters Counters
	// Scales are sorted by orderCount, then compId: all of the pool's
	// Scales when Histogram is nil; else the lowest, then the highest.
	Scales []Scale
	// Histogram covers every Scale of the pool; nil when Scales holds
	// them all.
	Histogram *Histogram
}

// Snapshot reads a pool for its watchers in one store call (see
// Store.Snapshot) with the sizes of DESIGN §9. ErrInvalidID,
// ErrPoolNotFound.
func (s *Service) Snapshot(ctx context.Context, pool string) (Snapshot, error) {
	if err := checkID("pool", pool); err != nil {
		return Snapshot{}, err
	}
	at := s.now()
	snap, err := s.store.Snapshot(ctx, pool, SnapshotEdge, HistogramBuckets)
	snap.At = at
	return snap, err
}

// HistogramWidth is the width of each of n buckets that cover the counts
// lo … hi (n > 0), so that every store cuts the same buckets.
func HistogramWidth(lo, hi int64, n int) int64 {
	return (hi-lo)/int64(n) + 1
}
