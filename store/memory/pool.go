package memory

import (
	"sync"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// pool is all the state of one pool.
type pool struct {
	mu sync.RWMutex

	name      string
	retention time.Duration
	strategy  dispatch.Strategy
	slowStart time.Duration
	createdAt time.Time
	health    dispatch.HealthOptions
	hs        healthState

	scales map[string]*scale
	// all ranks every Scale, for ListScales; eligible ranks the Scales that
	// may receive orders, for the strategies and Table. byID holds the
	// eligible Scales in compId order (every Count 0), so that the cheap
	// Pickers (balancing.RankPicker) find a Scale by its rank in compId
	// order without reading the pool.
	all, eligible, byID ranking
	// unlimited counts the eligible Scales without maxOrders; room is the sum
	// of maxOrders − orderCount over the other eligible Scales.
	unlimited int
	room      int64

	// picker is the strategy's rule with its state between batches, for
	// the strategies that are Pickers (strategies.go); ring is the
	// consistent-hash ring, kept only while that is the strategy.
	picker balancing.Picker
	ring   *balancing.Ring

	orders map[string]*order
	// seq numbers orders as they come to a Scale (order.seq).
	seq     uint64
	batches map[string]*batchRecord
	idem    map[string]*batchRecord
	expiry  expiryQueue
	// counters are the pool's counts since its creation, for watchers.
	counters dispatch.Counters
}

func newPool(name string, retention time.Duration, now time.Time) *pool {
	return &pool{
		name:      name,
		retention: retention,
		strategy:  dispatch.DefaultStrategy,
		createdAt: now,
		health:    dispatch.DefaultHealthOptions(),
		scales:    make(map[string]*scale),
		orders:    make(map[string]*order),
		batches:   make(map[string]*batchRecord),
		idem:      make(map[string]*batchRecord),
	}
}

func (p *pool) info() dispatch.Pool {
	return dispatch.Pool{
		Name:       p.name,
		Strategy:   p.strategy,
		SlowStart:  p.slowStart,
		ScaleCount: len(p.scales),
		CreatedAt:  p.createdAt,
		Health:     p.health,
	}
}

// scale is a Scale and what the store keeps about it besides.
type scale struct {
	dispatch.Scale
	// assigned holds the Scale's orders in state assigned; Outstanding is
	// always its size.
	assigned map[string]*order
	// avgMs is the exponentially weighted moving average of the reported
	// durations (balancing.EWMA), for weighted-response-time; hasAvg says
	// whether any was reported. It is the Scale's data: a change of strategy
	// keeps it.
	avgMs  float64
	hasAvg bool
	// queue holds the assigned orders in order of arrival, with stale
	// entries of orders that left (queue.go).
	queue []queued
	stale int
}

// observe feeds a reported duration (0: none) into the Scale's average.
func (sc *scale) observe(durationMs int64) {
	if durationMs <= 0 {
		return
	}
	sc.avgMs = balancing.EWMA(sc.avgMs, sc.hasAvg, durationMs)
	sc.hasAvg = true
}

func (sc *scale) load() balancing.Load {
	return balancing.Load{ID: sc.CompID, Count: sc.OrderCount()}
}

// slot is a Scale's place among the eligible Scales: its load, whether it is
// there, and its maxOrders.
type slot struct {
	load balancing.Load
	in   bool
	max  int64
}

func (sc *scale) slot() slot {
	return slot{load: sc.load(), in: sc.Eligible(), max: sc.MaxOrders}
}

// slotChange moves one Scale among the eligible Scales.
type slotChange struct{ from, to slot }

// moveEligible applies changes to the eligible rankings and the free room.
func (p *pool) moveEligible(cs []slotChange) {
	rcs := make([]change, len(cs))
	var ids []change
	for i, c := range cs {
		p.account(c.from, -1)
		p.account(c.to, +1)
		rcs[i] = change{from: c.from.load, to: c.to.load, wasIn: c.from.in, isIn: c.to.in}
		if c.from.in != c.to.in {
			id := balancing.Load{ID: c.to.load.ID}
			if c.from.in {
				id.ID = c.from.load.ID
			}
			ids = append(ids, change{from: id, to: id, wasIn: c.from.in, isIn: c.to.in})
		}
	}
	p.eligible.apply(rcs)
	if len(ids) > 0 {
		p.byID.apply(ids)
	}
}

// account adds (sign +1) or removes (-1) a slot's share of the free room.
func (p *pool) account(s slot, sign int) {
	switch {
	case !s.in:
	case s.max == 0:
		p.unlimited += sign
	default:
		p.room += int64(sign) * (s.max - s.load.Count)
	}
}

// prior is a Scale as it was before a change.
type prior struct {
	sc  *scale
	was slot
}

// settle moves the Scales that changed since ps were taken to their new
// places in both rankings.
func (p *pool) settle(ps []prior) {
	all := make([]change, len(ps))
	el := make([]slotChange, len(ps))
	for i, x := range ps {
		is := x.sc.slot()
		all[i] = change{from: x.was.load, to: is.load, wasIn: true, isIn: true}
		el[i] = slotChange{from: x.was, to: is}
	}
	p.all.apply(all)
	p.moveEligible(el)
}

// addScale puts a new Scale in the pool, its rankings and its ring.
func (p *pool) addScale(sc *scale) {
	p.scales[sc.CompID] = sc
	p.all.apply([]change{{to: sc.load(), isIn: true}})
	p.moveEligible([]slotChange{{to: sc.slot()}})
	p.hs.reindex(sc.CompID, healthKey{}, false, keyOf(sc), true)
	if p.ring != nil {
		p.ring.Add(sc.CompID)
	}
}

// removeScale takes a Scale out of the pool, its rankings and its ring.
func (p *pool) removeScale(sc *scale) {
	delete(p.scales, sc.CompID)
	p.all.apply([]change{{from: sc.load(), wasIn: true}})
	p.moveEligible([]slotChange{{from: sc.slot()}})
	p.hs.reindex(sc.CompID, keyOf(sc), true, healthKey{}, false)
	if p.ring != nil {
		p.ring.Remove(sc.CompID)
	}
}
