package memory

import (
	"container/heap"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// sweepLimit bounds the expired records one call removes, so that no call
// pays for a backlog all at once.
const sweepLimit = 128

// order is an order and when it leaves the store (zero while assigned).
type order struct {
	dispatch.Order
	expires time.Time
	// seq orders a Scale's outstanding orders by when they came to it.
	seq uint64
}

// live reports whether the order is still held at now: assigned orders
// always are; the others until now passes their expiry.
func (o *order) live(now time.Time) bool {
	return o.State == dispatch.Assigned || !now.After(o.expires)
}

// batchRecord is a batch as first answered, kept for GetBatch and for
// retries with the same batch id, and its Idempotency-Key (key and the
// fingerprint of the request it came with; none: "") for replays. The key
// leaves with the batch.
type batchRecord struct {
	batch            dispatch.Batch
	expires          time.Time
	key, fingerprint string
}

// live reports whether the batch is held at now: until its time has passed.
func (r *batchRecord) live(now time.Time) bool { return !now.After(r.expires) }

// expiryEntry says that rec leaves the store after at.
type expiryEntry struct {
	at  time.Time
	rec any // *order or *batchRecord
}

// expiryQueue is a min-heap of expiryEntry by at.
type expiryQueue []expiryEntry

func (q expiryQueue) Len() int           { return len(q) }
func (q expiryQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q expiryQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *expiryQueue) Push(x any)        { *q = append(*q, x.(expiryEntry)) }
func (q *expiryQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = expiryEntry{}
	*q = old[:len(old)-1]
	return e
}

func (p *pool) expireAt(at time.Time, rec any) {
	heap.Push(&p.expiry, expiryEntry{at: at, rec: rec})
}

// sweep removes at most sweepLimit records that expired before now. An
// entry whose record has since been replaced (an order id, batch id or key
// reused after it expired) removes nothing.
func (p *pool) sweep(now time.Time) { p.sweepFor(now, 0) }

// sweepFor is sweep after a call that queued added records to expire (the
// orders it finished): it removes at most sweepLimit for every sweepLimit
// of them and sweepLimit more, so that calls remove more than they add and
// a backlog drains, at a cost in proportion to the call's own.
func (p *pool) sweepFor(now time.Time, added int) {
	limit := sweepLimit * (added/sweepLimit + 1)
	for n := 0; n < limit && len(p.expiry) > 0 && now.After(p.expiry[0].at); n++ {
		switch r := heap.Pop(&p.expiry).(expiryEntry).rec.(type) {
		case *order:
			if p.orders[r.ID] == r {
				delete(p.orders, r.ID)
			}
		case *batchRecord:
			if p.batches[r.batch.ID] == r {
				delete(p.batches, r.batch.ID)
			}
			if r.key != "" && p.idem[r.key] == r {
				delete(p.idem, r.key)
			}
		}
	}
}
