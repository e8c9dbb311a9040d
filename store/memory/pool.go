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

	scales map[string]*scale
	// all ranks every Scale, for ListScales; eligible ranks the Scales that
	// may receive orders, for the strategies and Table.
	all, eligible ranking
	// unlimited counts the eligible Scales without maxOrders; room is the sum
	// of maxOrders − orderCount over the other eligible Scales.
	unlimited int
	room      int64

	orders  map[string]*order
	batches map[string]*batchRecord
	idem    map[string]*idemRecord
	expiry  expiryQueue
}

func newPool(name string, retention time.Duration, now time.Time) *pool {
	return &pool{
		name:      name,
		retention: retention,
		strategy:  dispatch.DefaultStrategy,
		createdAt: now,
		scales:    make(map[string]*scale),
		orders:    make(map[string]*order),
		batches:   make(map[string]*batchRecord),
		idem:      make(map[string]*idemRecord),
	}
}

func (p *pool) info() dispatch.Pool {
	return dispatch.Pool{
		Name:       p.name,
		Strategy:   p.strategy,
		SlowStart:  p.slowStart,
		ScaleCount: len(p.scales),
		CreatedAt:  p.createdAt,
	}
}

// scale is a Scale and what the store keeps about it besides.
type scale struct {
	dispatch.Scale
	// assigned holds the Scale's orders in state assigned; Outstanding is
	// always its size.
	assigned map[string]*order
	// avgMs is the exponentially weighted moving average (α = 0.2) of the
	// reported durations, for weighted-response-time; 0 until the first.
	avgMs float64
}

// ewmaAlpha is the weight of a new duration in avgMs.
const ewmaAlpha = 0.2

// observe feeds a reported duration (0: none) into avgMs.
func (sc *scale) observe(durationMs int64) {
	switch {
	case durationMs <= 0:
	case sc.avgMs == 0:
		sc.avgMs = float64(durationMs)
	default:
		sc.avgMs = (1-ewmaAlpha)*sc.avgMs + ewmaAlpha*float64(durationMs)
	}
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

// moveEligible applies changes to the eligible ranking and the free room.
func (p *pool) moveEligible(cs []slotChange) {
	rcs := make([]change, len(cs))
	for i, c := range cs {
		p.account(c.from, -1)
		p.account(c.to, +1)
		rcs[i] = change{from: c.from.load, to: c.to.load, wasIn: c.from.in, isIn: c.to.in}
	}
	p.eligible.apply(rcs)
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

// addScale puts a new Scale in the pool and its rankings.
func (p *pool) addScale(sc *scale) {
	p.scales[sc.CompID] = sc
	p.all.apply([]change{{to: sc.load(), isIn: true}})
	p.moveEligible([]slotChange{{to: sc.slot()}})
}

// removeScale takes a Scale out of the pool and its rankings.
func (p *pool) removeScale(sc *scale) {
	delete(p.scales, sc.CompID)
	p.all.apply([]change{{from: sc.load(), wasIn: true}})
	p.moveEligible([]slotChange{{from: sc.slot()}})
}
