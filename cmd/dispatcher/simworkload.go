package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// simWorkload is the workload of `dispatcher simulate`: the same for every
// strategy, reproducible from its seed.
type simWorkload struct {
	Scales  int     // Scales in the pool
	Batches int     // batches, one per tick
	Load    float64 // orders offered per tick, as a share of the pool's capacity
	Keys    int     // distinct order keys (customers)
	Seed    uint64
	// Equal gives every Scale weight 1 and the same speed. Otherwise
	// weights are 1–5, and each Scale's speed is its weight times a factor
	// drawn from [1 − SpeedError, 1 + SpeedError]: an operator's weights
	// are estimates, and only loads and response times show the error.
	Equal      bool
	SpeedError float64
}

// simTick is the simulated time between two batches; simSlowStart the
// pool's slow-start window.
const (
	simTick      = 100 * time.Millisecond
	simSlowStart = 10 * time.Second
)

// simResult is what one strategy did with the workload.
type simResult struct {
	Strategy dispatch.Strategy
	// Spread, MaxMean and WeightedImbalance are means over the batches of
	// the second half of the run, measured right after each batch over the
	// active Scales: max − min orderCount, max orderCount ÷ mean, and
	// max(orderCount/weight) ÷ (Σ orderCount / Σ weight).
	Spread, MaxMean, WeightedImbalance float64
	// FinalSpread is max − min orderCount after the last batch.
	FinalSpread int64
	// MeanMs is the mean time from dispatch to completion of the orders
	// completed: the wait behind a Scale's queue plus the service.
	MeanMs float64
	// KeyMoves is the share of orders whose key went to another Scale
	// than the key's previous order.
	KeyMoves float64
	// NsPerOrder is the wall time of a dispatch call per order, the median
	// over the batches (a median, so that a pause of the machine does not
	// show).
	NsPerOrder float64
}

// simScale is a Scale as the simulation runs it: a queue served at a fixed
// rate, behind the backlog it started with.
type simScale struct {
	id      string
	weight  int64
	rate    float64 // orders served per tick
	credit  float64 // service the Scale may still give this tick
	backlog int64   // work from elsewhere (baseLoad), served first
	queue   []simOrder
	active  bool
}

type simOrder struct {
	id string
	at time.Time
}

func (sc *simScale) count() int64 { return sc.backlog + int64(len(sc.queue)) }

// simEpoch is the simulation's start time.
var simEpoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// newSimScales returns the workload's Scales: weights, speeds and initial
// loads (0–20) drawn from the seed.
func (w simWorkload) newSimScales() []*simScale {
	rng := rand.New(rand.NewPCG(w.Seed, 1))
	scales := make([]*simScale, w.Scales)
	for i := range scales {
		weight, speed := int64(1), 1.0
		if !w.Equal {
			weight, speed = 1+rng.Int64N(5), 1+w.SpeedError*(2*rng.Float64()-1)
		}
		scales[i] = &simScale{
			id:      fmt.Sprintf("s%03d", i),
			weight:  weight,
			rate:    float64(weight) * speed,
			backlog: rng.Int64N(21),
			active:  true,
		}
	}
	return scales
}

// run runs the workload with strategy st over a fresh embedded store,
// through a dispatch.Service whose clock and randomness the simulation
// drives. One Scale (the eighth) drains at a third of the run and returns
// at two thirds.
func (w simWorkload) run(ctx context.Context, st dispatch.Strategy) (simResult, error) {
	// The pool and its Scales exist since long before the first batch, so
	// that only the Scale that returns warms up.
	now := simEpoch.Add(-time.Hour)
	svcRand := rand.New(rand.NewPCG(w.Seed, 2))
	batchIDs := 0
	svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{
		Now:   func() time.Time { return now },
		Rand:  func() uint64 { return svcRand.Uint64N(1 << 53) },
		NewID: func() string { batchIDs++; return fmt.Sprint("b", batchIDs) },
	})
	const pool = "sim"
	if _, _, err := svc.PutPool(ctx, pool, dispatch.PoolSpec{Strategy: &st, SlowStart: ptrTo(simSlowStart)}); err != nil {
		return simResult{}, err
	}
	scales := w.newSimScales()
	byID := make(map[string]*simScale, len(scales))
	var capacity float64
	for _, sc := range scales {
		byID[sc.id] = sc
		capacity += sc.rate
		if _, _, err := svc.PutScale(ctx, pool, sc.id, dispatch.ScaleSpec{Weight: &sc.weight, OrderCount: &sc.backlog}); err != nil {
			return simResult{}, err
		}
	}
	churn := scales[7%len(scales)]
	orders := rand.New(rand.NewPCG(w.Seed, 3))
	lastScale := make(map[string]string)
	res := simResult{Strategy: st}
	var (
		moved, keyed int
		nsPerOrder   []float64
		done         int
		doneMs       float64
		measured     int
	)
	for tick := range w.Batches {
		now = simEpoch.Add(time.Duration(tick) * simTick)
		switch tick {
		case w.Batches / 3:
			churn.active = false
			if err := setSimState(ctx, svc, pool, churn.id, dispatch.Draining); err != nil {
				return simResult{}, err
			}
		case 2 * w.Batches / 3:
			churn.active = true
			if err := setSimState(ctx, svc, pool, churn.id, dispatch.Active); err != nil {
				return simResult{}, err
			}
		}

		n := min(svc.MaxBatch(), max(1, int(w.Load*capacity*(0.5+orders.Float64()))))
		in := dispatch.DispatchInput{Pool: pool, Orders: make([]dispatch.OrderInput, n)}
		for i := range in.Orders {
			in.Orders[i] = dispatch.OrderInput{ID: fmt.Sprintf("o%d-%d", tick, i), Key: fmt.Sprint("cust-", orders.IntN(w.Keys))}
		}
		start := time.Now()
		b, _, err := svc.Dispatch(ctx, in)
		nsPerOrder = append(nsPerOrder, float64(time.Since(start).Nanoseconds())/float64(n))
		if err != nil {
			return simResult{}, fmt.Errorf("%s, batch %d: %w", st, tick, err)
		}
		for i, a := range b.Assignments {
			sc := byID[a.CompID]
			sc.queue = append(sc.queue, simOrder{id: a.OrderID, at: now})
			key := in.Orders[i].Key
			if prev, ok := lastScale[key]; ok {
				keyed++
				if prev != a.CompID {
					moved++
				}
			}
			lastScale[key] = a.CompID
		}

		spread, maxMean, wImb := simBalance(scales)
		if tick >= w.Batches/2 {
			res.Spread += float64(spread)
			res.MaxMean += maxMean
			res.WeightedImbalance += wImb
			measured++
		}
		res.FinalSpread = spread

		cs, worked, ms := serveTick(scales, now)
		done += len(cs)
		doneMs += ms
		now = now.Add(simTick)
		for len(cs) > 0 {
			k := min(len(cs), svc.MaxBatch())
			if _, err := svc.Complete(ctx, pool, cs[:k]); err != nil {
				return simResult{}, fmt.Errorf("%s, completions after batch %d: %w", st, tick, err)
			}
			cs = cs[k:]
		}
		for _, sc := range worked {
			c := sc.count()
			if _, _, err := svc.PutScale(ctx, pool, sc.id, dispatch.ScaleSpec{OrderCount: &c}); err != nil {
				return simResult{}, err
			}
		}
	}
	if measured > 0 {
		res.Spread /= float64(measured)
		res.MaxMean /= float64(measured)
		res.WeightedImbalance /= float64(measured)
	}
	if done > 0 {
		res.MeanMs = doneMs / float64(done)
	}
	if keyed > 0 {
		res.KeyMoves = float64(moved) / float64(keyed)
	}
	slices.Sort(nsPerOrder)
	res.NsPerOrder = nsPerOrder[len(nsPerOrder)/2]
	return res, nil
}

// serveTick lets every Scale serve one tick from start: its backlog first,
// then its queue in order. It returns the completions, each with its time
// from dispatch in ms, the Scales whose backlog shrank (to report their new
// load), and the sum of the completions' times.
func serveTick(scales []*simScale, start time.Time) ([]dispatch.Completion, []*simScale, float64) {
	var cs []dispatch.Completion
	var worked []*simScale
	var sumMs float64
	for _, sc := range scales {
		sc.credit += sc.rate
		served := 0
		backlog := sc.backlog
		for sc.credit >= 1 && sc.count() > 0 {
			sc.credit--
			served++
			if sc.backlog > 0 {
				sc.backlog--
				continue
			}
			o := sc.queue[0]
			sc.queue = sc.queue[1:]
			at := start.Add(time.Duration(float64(served) / sc.rate * float64(simTick)))
			ms := at.Sub(o.at).Milliseconds()
			cs = append(cs, dispatch.Completion{OrderID: o.id, DurationMs: max(1, ms)})
			sumMs += float64(ms)
		}
		if sc.count() == 0 {
			// An idle Scale banks no service for later.
			sc.credit = min(sc.credit, 1)
		}
		if sc.backlog != backlog {
			worked = append(worked, sc)
		}
	}
	return cs, worked, sumMs
}

// simBalance measures the active Scales: max − min orderCount, max
// orderCount ÷ mean, and max(orderCount/weight) ÷ (Σ orderCount/Σ weight).
func simBalance(scales []*simScale) (spread int64, maxMean, weighted float64) {
	var lo, hi, sum, sumW int64
	var maxPerW float64
	n := 0
	for _, sc := range scales {
		if !sc.active {
			continue
		}
		c := sc.count()
		if n == 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
		sum += c
		sumW += sc.weight
		maxPerW = max(maxPerW, float64(c)/float64(sc.weight))
		n++
	}
	if n == 0 || sum == 0 {
		return hi - lo, 1, 1
	}
	return hi - lo, float64(hi) / (float64(sum) / float64(n)), maxPerW / (float64(sum) / float64(sumW))
}

func setSimState(ctx context.Context, svc *dispatch.Service, pool, compID string, state dispatch.ScaleState) error {
	_, _, err := svc.PutScale(ctx, pool, compID, dispatch.ScaleSpec{State: &state})
	return err
}

func ptrTo[T any](v T) *T { return &v }
