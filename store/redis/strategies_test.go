package redis_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// TestDifferentialStrategies runs every strategy over random pools: Scales
// of random weights, states, maxOrders and loads that come and go, slow
// start, completions with durations, changes of strategy, batches with
// random numbers and keys. Each batch, a dry run first, must make exactly
// the picks of the balancing reference run over the candidates computed
// from the store's state with the same random numbers, its strategy state
// carried from batch to batch; store/memory must make them too, and the two
// stores must agree on every answer. Two Stores on two clients take turns,
// as replicas would, so the state must live in Redis.
func TestDifferentialStrategies(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("STRATEGIES_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (STRATEGIES_SEED=%[1]d reruns it)", seed)
	srv := redistest.Start(t)
	for _, st := range dispatch.Strategies {
		t.Run(string(st), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(len(st))))
			c := newClient(t, srv)
			s := &sim{
				t:   t,
				rng: rng,
				c:   c,
				rs:  []dispatch.Store{redis.New(c, redis.Options{}), redis.New(newClient(t, srv), redis.Options{})},
				ms:  memory.New(memory.Options{}),
				now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
			}
			for p := range 6 {
				s.pool(fmt.Sprintf("%s-%d", st, p), st)
			}
		})
	}
}

// sim drives one strategy's pools through both stores and the reference.
type sim struct {
	t       *testing.T
	rng     *rand.Rand
	c       goredis.UniversalClient
	rs      []dispatch.Store // replicas of the Redis store, taking turns
	ms      dispatch.Store   // store/memory
	now     time.Time
	calls   int
	batches int
}

// model is the reference's view of one pool: the strategy's state as the
// balancing Pickers keep it, the response-time averages, the assigned
// orders and the registered Scales.
type model struct {
	strategy dispatch.Strategy
	state    balancing.Picker   // nil for the stateless strategies
	avgs     map[string]float64 // compId → balancing.EWMA of its durations
	owner    map[string]string  // assigned order → compId
	scales   map[string]bool    // registered compIds
}

// redis returns the Redis store whose turn it is.
func (s *sim) redis() dispatch.Store {
	s.calls++
	return s.rs[s.calls%len(s.rs)]
}

func (s *sim) tick(max time.Duration) time.Time {
	s.now = s.now.Add(time.Millisecond + time.Duration(s.rng.Int64N(int64(max))))
	return s.now.Truncate(time.Millisecond)
}

// both runs f on Redis and on store/memory and fails unless they agree.
func (s *sim) both(what string, f func(st dispatch.Store) (string, error)) (string, error) {
	s.t.Helper()
	got, gerr := f(s.redis())
	want, werr := f(s.ms)
	if got != want || !sameErr(gerr, werr) {
		s.t.Fatalf("%s: redis %q, %v; memory %q, %v", what, got, gerr, want, werr)
	}
	return got, gerr
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	for _, e := range []error{dispatch.ErrNoEligibleScale, dispatch.ErrOrderExists, dispatch.ErrTooExpensive,
		dispatch.ErrScaleNotFound, dispatch.ErrOrderNotFound, dispatch.ErrOrderState} {
		if errors.Is(a, e) != errors.Is(b, e) {
			return false
		}
	}
	return true
}

func (s *sim) must(what string, f func(st dispatch.Store) (string, error)) string {
	s.t.Helper()
	got, err := s.both(what, f)
	if err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
	return got
}

// perOrder reports whether a strategy reads every eligible Scale for every
// order (balancing's registry says), and so has a cost cap.
func perOrder(st dispatch.Strategy) bool {
	sp, _ := st.Spec()
	return sp.Cost == balancing.Costly
}

// kind is the strategy's balancing.Kind.
func kind(st dispatch.Strategy) balancing.Kind {
	sp, _ := st.Spec()
	return sp.Kind
}

func (s *sim) pool(name string, st dispatch.Strategy) {
	ctx := context.Background()
	m := &model{strategy: st, state: storetest.NewPicker(st), avgs: map[string]float64{}, owner: map[string]string{}, scales: map[string]bool{}}
	slow := []time.Duration{0, 0, time.Minute, time.Hour}[s.rng.IntN(4)]
	now := s.tick(time.Second)
	s.must("PutPool", func(d dispatch.Store) (string, error) {
		p, _, err := d.PutPool(ctx, name, dispatch.PoolSpec{Strategy: &st, SlowStart: &slow}, now)
		return fmt.Sprint(p.Strategy, p.SlowStart), err
	})
	n := []int{1, 2, 3, 5, 8, 40, 200}[s.rng.IntN(7)]
	next := 0
	newID := func() string {
		next++
		return s.randomID(next)
	}
	for range n {
		s.putScale(name, m, newID(), true)
	}
	for range 14 {
		size := 1 + s.rng.IntN([]int{4, 30, 300}[s.rng.IntN(3)])
		s.batch(name, m, size)
		switch s.rng.IntN(7) {
		case 0, 1: // complete or cancel some orders
			s.finish(name, m)
		case 2: // change a Scale
			if ids := slices.Sorted(maps.Keys(m.scales)); len(ids) > 0 {
				s.putScale(name, m, ids[s.rng.IntN(len(ids))], false)
			}
		case 3: // a Scale comes or goes
			ids := slices.Sorted(maps.Keys(m.scales))
			if len(ids) > 0 && s.rng.IntN(2) == 0 {
				s.deleteScale(name, m, ids[s.rng.IntN(len(ids))])
			} else {
				s.putScale(name, m, newID(), true)
			}
		case 4: // the strategy changes and comes back: its state starts over
			if s.rng.IntN(3) == 0 {
				other := dispatch.Strategies[s.rng.IntN(len(dispatch.Strategies))]
				for _, x := range []dispatch.Strategy{other, st} {
					now := s.tick(time.Second)
					s.must("PutPool "+string(x), func(d dispatch.Store) (string, error) {
						_, _, err := d.PutPool(ctx, name, dispatch.PoolSpec{Strategy: &x}, now)
						return "", err
					})
					if x != st {
						m.state = storetest.NewPicker(st)
					}
				}
			}
		}
		s.checkAverages(name, m)
		s.checkIndexes(name, st)
	}
}

// randomID returns a compId whose byte order differs from a case-folding
// collation, to catch a string comparison by locale.
func (s *sim) randomID(i int) string {
	const first = "ABCabcXYZxyz019"
	const rest = "AaBbZz09._:-"
	var b strings.Builder
	b.WriteByte(first[s.rng.IntN(len(first))])
	for range s.rng.IntN(4) {
		b.WriteByte(rest[s.rng.IntN(len(rest))])
	}
	b.WriteString(strconv.Itoa(i))
	return b.String()
}

func (s *sim) putScale(pool string, m *model, id string, isNew bool) {
	spec := dispatch.ScaleSpec{}
	if isNew || s.rng.IntN(2) == 0 {
		spec.Weight = ptr([]int64{1, 1, 2, 3, 5, 100, dispatch.MaxWeight}[s.rng.IntN(7)])
	}
	if isNew || s.rng.IntN(2) == 0 {
		spec.OrderCount = ptr([]int64{0, 1, 3, 20, 1000}[s.rng.IntN(5)])
	}
	switch s.rng.IntN(6) {
	case 0:
		spec.State = ptr(dispatch.Draining)
	case 1:
		spec.State = ptr(dispatch.Down)
	default:
		spec.State = ptr(dispatch.Active)
	}
	if s.rng.IntN(3) == 0 {
		// Room for a few orders: the Scale fills up within a batch.
		load := int64(0)
		if spec.OrderCount != nil {
			load = *spec.OrderCount
		} else if sc, err := s.rs[0].GetScale(context.Background(), pool, id); err == nil {
			load = sc.OrderCount()
		}
		spec.MaxOrders = ptr(load + s.rng.Int64N(8))
	}
	now := s.tick(20 * time.Second)
	s.must("PutScale "+id, func(d dispatch.Store) (string, error) {
		sc, _, err := d.PutScale(context.Background(), pool, id, spec, now)
		return fmt.Sprint(sc), err
	})
	m.scales[id] = true
}

func (s *sim) deleteScale(pool string, m *model, id string) {
	now := s.tick(time.Second)
	s.must("DeleteScale "+id, func(d dispatch.Store) (string, error) {
		return "", d.DeleteScale(context.Background(), pool, id, true, now)
	})
	delete(m.scales, id)
	delete(m.avgs, id)
	for o, c := range m.owner {
		if c == id {
			delete(m.owner, o)
		}
	}
}

// finish completes (with a duration, or none) or cancels some orders.
func (s *sim) finish(pool string, m *model) {
	ctx := context.Background()
	orders := slices.Sorted(maps.Keys(m.owner))
	var cs []dispatch.Completion
	for _, o := range orders {
		if s.rng.IntN(3) != 0 {
			continue
		}
		if s.rng.IntN(5) == 0 {
			now := s.tick(time.Second)
			s.must("Cancel "+o, func(d dispatch.Store) (string, error) {
				_, err := d.Cancel(ctx, pool, o, now)
				return "", err
			})
			delete(m.owner, o)
			continue
		}
		d := []int64{0, 1, 7, 120, 3000, s.rng.Int64N(dispatch.MaxOrderCount)}[s.rng.IntN(6)]
		if s.rng.IntN(2) == 0 {
			d = s.rng.Int64N(500)
		}
		cs = append(cs, dispatch.Completion{OrderID: o, DurationMs: d})
	}
	if len(cs) == 0 {
		return
	}
	now := s.tick(time.Second)
	s.must("Complete", func(d dispatch.Store) (string, error) {
		_, n, err := d.Complete(ctx, pool, cs, now)
		return fmt.Sprint(n), err
	})
	for _, c := range cs {
		if id := m.owner[c.OrderID]; c.DurationMs > 0 {
			a, has := m.avgs[id]
			m.avgs[id] = balancing.EWMA(a, has, c.DurationMs)
		}
		delete(m.owner, c.OrderID)
	}
}

// checkAverages compares the averages Redis keeps with the reference's,
// bit for bit.
func (s *sim) checkAverages(pool string, m *model) {
	recs, err := s.c.HGetAll(context.Background(), poolKey(pool, "scales")).Result()
	if err != nil {
		s.t.Fatalf("HGETALL scales: %v", err)
	}
	for id, rec := range recs {
		f := strings.Split(rec, "|") // weight|state|maxOrders|baseLoad|activeSince|avgMs
		want, has := m.avgs[id]
		if f[5] == "" {
			if has {
				s.t.Fatalf("Scale %s has no average, want %v", id, want)
			}
			continue
		}
		got, err := strconv.ParseFloat(f[5], 64)
		if err != nil || !has || math.Float64bits(got) != math.Float64bits(want) {
			s.t.Fatalf("Scale %s: average %q, want %v (%v)", id, f[5], want, has)
		}
	}
}

// checkIndexes checks lex, which must hold the eligible Scales, and ring,
// which must hold DefaultVNodes points of every registered Scale while the
// strategy is consistent-hash and not exist otherwise.
func (s *sim) checkIndexes(pool string, st dispatch.Strategy) {
	ctx := context.Background()
	scales, _, err := s.rs[0].ListScales(ctx, pool, dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil {
		s.t.Fatalf("ListScales: %v", err)
	}
	var elig []string
	want := make(map[string]float64)
	for _, sc := range scales {
		if sc.Eligible() {
			elig = append(elig, sc.CompID)
		}
		if kind(st) == balancing.Hashed {
			for j, at := range balancing.RingPoints(sc.CompID, balancing.DefaultVNodes) {
				want[sc.CompID+"#"+strconv.Itoa(j)] = float64(at)
			}
		}
	}
	slices.Sort(elig)
	lex, err := s.c.ZRange(ctx, poolKey(pool, "lex"), 0, -1).Result()
	if err != nil || !slices.Equal(lex, elig) {
		s.t.Fatalf("lex holds %v (%v), want the eligible Scales %v", lex, err, elig)
	}
	ring, err := s.c.ZRangeWithScores(ctx, poolKey(pool, "ring"), 0, -1).Result()
	if err != nil {
		s.t.Fatalf("ZRANGE ring: %v", err)
	}
	got := make(map[string]float64, len(ring))
	for _, z := range ring {
		got[z.Member.(string)] = z.Score
	}
	if !maps.Equal(got, want) {
		s.t.Fatalf("ring holds %d points, want %d (the points of %d Scales)", len(got), len(want), len(scales))
	}
}

// batch dispatches size orders, a dry run first, and checks both against
// the reference.
func (s *sim) batch(pool string, m *model, size int) {
	ctx := context.Background()
	s.batches++
	req := dispatch.DispatchRequest{
		Pool:           pool,
		BatchID:        fmt.Sprintf("b%d", s.batches),
		Now:            s.tick(10 * time.Second),
		IdempotencyTTL: dispatch.DefaultIdempotencyTTL,
		MaxCost:        []int64{dispatch.DefaultMaxCost, 2000}[s.rng.IntN(2)],
	}
	for j := range size {
		o := dispatch.OrderInput{ID: fmt.Sprintf("o%d-%d", s.batches, j)}
		if s.rng.IntN(2) == 0 {
			o.Key = fmt.Sprintf("key-%d", s.rng.IntN(20))
		}
		req.Orders = append(req.Orders, o)
		req.Rand = append(req.Rand, s.rng.Uint64N(1<<53), s.rng.Uint64N(1<<53))
	}
	scales, _, err := s.rs[0].ListScales(ctx, pool, dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil {
		s.t.Fatalf("ListScales: %v", err)
	}
	p, err := s.rs[0].GetPool(ctx, pool)
	if err != nil {
		s.t.Fatalf("GetPool: %v", err)
	}
	dry := req
	dry.DryRun, dry.BatchID = true, ""
	want, state, werr := m.picks(scales, p.SlowStart, req)
	for _, r := range []dispatch.DispatchRequest{dry, req} {
		before := s.state(pool)
		got, err := s.both(fmt.Sprintf("Dispatch %s dry=%v", req.BatchID, r.DryRun), func(d dispatch.Store) (string, error) {
			b, _, err := d.Dispatch(ctx, r)
			return assigned(b), err
		})
		if (werr == nil) != (err == nil) || !errors.Is(err, werr) {
			s.t.Fatalf("batch %s (%s, %d orders, dry=%v) over %v: got error %v, want %v",
				req.BatchID, m.strategy, size, r.DryRun, scales, err, werr)
		}
		if err != nil || r.DryRun {
			if after := s.state(pool); after != before {
				s.t.Fatalf("batch %s (dry=%v, %v) changed the pool:\n%s\nto\n%s", req.BatchID, r.DryRun, err, before, after)
			}
		}
		if err != nil {
			return
		}
		if got != strings.Join(want, " ") {
			s.t.Fatalf("batch %s (%s, %d orders, dry=%v) over %v:\ngot  %s\nwant %s",
				req.BatchID, m.strategy, size, r.DryRun, scales, got, strings.Join(want, " "))
		}
	}
	m.state = state
	s.checkState(pool, m)
	for i, id := range want {
		m.owner[req.Orders[i].ID] = id
	}
	checkOwnIndex(s.t, s.c, s.rs[0], pool)
}

// checkState compares the strategy's state in Redis with the reference's.
func (s *sim) checkState(pool string, m *model) {
	v, err := s.c.HGetAll(context.Background(), poolKey(pool, "strat")).Result()
	if err != nil {
		s.t.Fatalf("HGETALL strat: %v", err)
	}
	want := map[string]string{}
	switch p := m.state.(type) {
	case *balancing.RoundRobin:
		want["last"] = p.Last
	case *balancing.WeightedResponseTime:
		if p.RR.Last != "" {
			want["last"] = p.RR.Last
		}
	case *balancing.WeightedRoundRobin:
		want["c"] = strconv.FormatUint(p.Counter, 10)
	case *balancing.SmoothWeightedRoundRobin:
		for id, c := range p.Current {
			want[id] = strconv.FormatInt(c, 10)
		}
	case *balancing.LeastConnections:
		for id, c := range p.Current {
			want[id] = strconv.FormatInt(c, 10)
		}
	}
	if !maps.Equal(v, want) {
		s.t.Fatalf("strat holds %v, want %v", v, want)
	}
}

// picks returns what the reference gives a batch over scales (the pool's
// Scales before it) and the strategy's state after it, or the error the
// stores must answer.
func (m *model) picks(scales []dispatch.Scale, slowStart time.Duration, req dispatch.DispatchRequest) ([]string, balancing.Picker, error) {
	n := len(req.Orders)
	byID := make(map[string]dispatch.Scale, len(scales))
	count := make(map[string]int64, len(scales))
	var eligible, room int64
	unlimited := false
	for _, sc := range scales {
		byID[sc.CompID] = sc
		count[sc.CompID] = sc.OrderCount()
		if sc.Eligible() {
			eligible++
			if sc.MaxOrders == 0 {
				unlimited = true
			} else {
				room += sc.MaxOrders - sc.OrderCount()
			}
		}
	}
	if eligible == 0 || (!unlimited && room < int64(n)) {
		return nil, nil, dispatch.ErrNoEligibleScale
	}
	if kind(m.strategy) == balancing.Levels {
		got, _ := reference(scales, n)
		return strings.Fields(got), nil, nil
	}
	if perOrder(m.strategy) && eligible*int64(n) > req.MaxCost {
		return nil, nil, dispatch.ErrTooExpensive
	}
	ids := slices.Sorted(maps.Keys(byID))
	isEligible := func(id string) bool {
		sc := byID[id]
		return sc.State == dispatch.Active && (sc.MaxOrders == 0 || count[id] < sc.MaxOrders)
	}
	var ring *balancing.Ring
	if kind(m.strategy) == balancing.Hashed {
		ring = balancing.NewRing(balancing.DefaultVNodes, ids...)
	}
	p := balancing.Clone(m.state)
	out := make([]string, 0, n)
	for i, o := range req.Orders {
		var id string
		if ring != nil {
			key := o.Key
			if key == "" {
				key = o.ID
			}
			id, _ = ring.Lookup(key, isEligible)
		} else {
			var cands []balancing.Candidate
			for _, cid := range ids {
				if !isEligible(cid) {
					continue
				}
				sc := byID[cid]
				avg, has := m.avgs[cid]
				cands = append(cands, balancing.Candidate{
					ID:     cid,
					Count:  count[cid],
					Weight: balancing.SlowStartWeight(sc.Weight, req.Now.UnixMilli()-sc.ActiveSince.UnixMilli(), slowStart.Milliseconds()),
					AvgMs:  avg,
					HasAvg: has,
				})
			}
			id = cands[p.Pick(cands, req.Rand[2*i], req.Rand[2*i+1])].ID
		}
		count[id]++
		out = append(out, id)
	}
	return out, p, nil
}

// state dumps the keys of the pool that a dry run or a refused batch must
// leave as they were (every key but the records a batch adds to).
func (s *sim) state(pool string) string {
	ctx := context.Background()
	var b strings.Builder
	for _, k := range []string{"meta", "scales", "strat"} {
		v, err := s.c.HGetAll(ctx, poolKey(pool, k)).Result()
		if err != nil {
			s.t.Fatalf("HGETALL %s: %v", k, err)
		}
		delete(v, "rc")
		fmt.Fprintf(&b, "%s %v\n", k, v)
	}
	for _, k := range []string{"load", "elig", "lex", "ring"} {
		v, err := s.c.ZRangeWithScores(ctx, poolKey(pool, k), 0, 999).Result()
		if err != nil {
			s.t.Fatalf("ZRANGE %s: %v", k, err)
		}
		n, _ := s.c.ZCard(ctx, poolKey(pool, k)).Result()
		fmt.Fprintf(&b, "%s %d %v\n", k, n, v)
	}
	return b.String()
}
