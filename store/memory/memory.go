// Package memory is the embedded store: a [dispatch.Store] that keeps every
// pool in the memory of one process, for a dispatcher that runs without
// Redis. It has the semantics of the Redis store, call for call; the
// conformance suite in store/storetest checks both.
//
// Each pool has its own lock, so requests for different pools run in
// parallel; a store-wide lock guards only the set of pools. Every method
// validates everything before its first change and applies all or nothing.
//
// A pool keeps its eligible Scales in a ranking sorted by (orderCount,
// compId) that each change updates in place, so a small batch in a pool of
// 100,000 Scales does not sort the pool, and in a second ranking by compId
// alone, over which the cheap Pickers of balancing's registry (random,
// round-robin, power-of-two) pick by rank in O(log N). The costly ones run
// their balancing Picker over all the eligible Scales; consistent-hash
// keeps a balancing.Ring of every Scale while it is the pool's strategy.
// The strategy's Picker holds its state (cursor, counter, current weights)
// with the pool, and only a real dispatch changes it; the response-time
// averages live with the Scales. Completed and cancelled orders,
// batch records and idempotency records leave by a time-ordered queue from
// which every successful mutating call removes at most 128 expired entries;
// until then a record that has expired counts as absent for every method that
// is given the time.
package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// DefaultRetention is how long completed and cancelled orders stay
// queryable when Options.Retention is zero.
const DefaultRetention = 24 * time.Hour

// Options tunes a Store.
type Options struct {
	// Retention is how long completed and cancelled orders stay queryable
	// after CompletedAt (default DefaultRetention). A batch record lives
	// Retention after it is created, or with an Idempotency-Key the
	// request's IdempotencyTTL, as the key does.
	Retention time.Duration
	// MaxScales is the most Scales a pool may hold (default and at most
	// dispatch.MaxScales); registering one more fails with
	// dispatch.ErrPoolFull.
	MaxScales int
}

// Store is the embedded store. It is safe for concurrent use. Create one
// with New.
type Store struct {
	retention time.Duration
	maxScales int

	mu    sync.RWMutex // guards pools and names; held for reading by every pool operation
	pools map[string]*pool
	names []string // the keys of pools, sorted
}

var _ dispatch.Store = (*Store)(nil)

// New returns an empty Store.
func New(opts Options) *Store {
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.MaxScales <= 0 || opts.MaxScales > dispatch.MaxScales {
		opts.MaxScales = dispatch.MaxScales
	}
	return &Store{retention: opts.Retention, maxScales: opts.MaxScales, pools: make(map[string]*pool)}
}

// Ping reports that the store is reachable: it always is.
func (s *Store) Ping(context.Context) error { return nil }

// write runs f with the pool locked for writing: ErrPoolNotFound.
func (s *Store) write(name string, f func(p *pool) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.pools[name]
	if !ok {
		return poolNotFound(name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return f(p)
}

// read runs f with the pool locked for reading: ErrPoolNotFound. f must not
// change the pool.
func (s *Store) read(name string, f func(p *pool) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.pools[name]
	if !ok {
		return poolNotFound(name)
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return f(p)
}

// insertName adds a new pool name to the sorted list; s.mu must be held for
// writing.
func (s *Store) insertName(name string) {
	i, _ := slices.BinarySearch(s.names, name)
	s.names = slices.Insert(s.names, i, name)
}

// removeName removes a pool name from the sorted list; s.mu must be held for
// writing.
func (s *Store) removeName(name string) {
	if i, ok := slices.BinarySearch(s.names, name); ok {
		s.names = slices.Delete(s.names, i, i+1)
	}
}

func poolNotFound(name string) error {
	return errorf(dispatch.ErrPoolNotFound, "pool %q", name)
}

// errorf wraps a sentinel of package dispatch with a detail for the caller.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}
