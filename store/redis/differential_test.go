package redis_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestDifferentialWaterfill runs the same random pools, batches and changes
// against the Redis store and store/memory. Batch after batch, the Lua
// waterfill must return exactly what balancing.WaterfillIDs returns for the
// eligible loads (rebuilt after each Scale that fills up, when Scales have
// maxOrders), and both stores must agree on every answer and every load.
func TestDifferentialWaterfill(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	c := newClient(t, redistest.Start(t))
	d := &differ{
		t:   t,
		rng: rng,
		c:   c,
		rs:  redis.New(c, redis.Options{}),
		ms:  memory.New(memory.Options{}),
		now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
	}
	for p := range 24 {
		d.pool(fmt.Sprintf("p%d", p), p%3 == 0)
	}
}

type differ struct {
	t       *testing.T
	rng     *rand.Rand
	c       goredis.UniversalClient
	rs, ms  dispatch.Store
	now     time.Time
	batches int
}

// both runs f on the two stores and fails unless they agree.
func (d *differ) both(what string, f func(s dispatch.Store) (string, error)) string {
	d.t.Helper()
	got, gerr := f(d.rs)
	want, werr := f(d.ms)
	if got != want || !sameError(gerr, werr) {
		d.t.Fatalf("%s: redis %q, %v; memory %q, %v", what, got, gerr, want, werr)
	}
	return got
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return errors.Is(a, dispatch.ErrNoEligibleScale) == errors.Is(b, dispatch.ErrNoEligibleScale) &&
		errors.Is(a, dispatch.ErrOrderExists) == errors.Is(b, dispatch.ErrOrderExists)
}

func (d *differ) tick() time.Time {
	d.now = d.now.Add(time.Second)
	return d.now
}

// randomID returns a compId whose byte order differs from a case-folding
// collation, to catch a string comparison by locale.
func (d *differ) randomID(i int) string {
	const first = "ABCabcXYZxyz019"
	const rest = "AaBbZz09._:-"
	var b strings.Builder
	b.WriteByte(first[d.rng.IntN(len(first))])
	for range d.rng.IntN(4) {
		b.WriteByte(rest[d.rng.IntN(len(rest))])
	}
	fmt.Fprintf(&b, "%d", i)
	return b.String()
}

func (d *differ) pool(name string, withMax bool) {
	ctx := context.Background()
	d.both("PutPool", func(s dispatch.Store) (string, error) {
		_, _, err := s.PutPool(ctx, name, dispatch.PoolSpec{}, d.now)
		return "", err
	})
	sizes := []int{1, 2, 3, 5, 8, 40, 200}
	spreads := []int64{0, 2, 20, dispatch.MaxOrderCount - 1<<20}
	n, spread := sizes[d.rng.IntN(len(sizes))], spreads[d.rng.IntN(len(spreads))]
	ids := make([]string, n)
	for i := range ids {
		ids[i] = d.randomID(i)
		d.putScale(name, ids[i], spread, withMax)
	}
	var outstanding []string
	for range 12 {
		m := 1 + d.rng.IntN([]int{4, 50, 300}[d.rng.IntN(3)])
		outstanding = append(outstanding, d.batch(name, m)...)
		switch d.rng.IntN(4) {
		case 0: // complete or cancel some orders
			k := d.rng.IntN(len(outstanding) + 1)
			for _, id := range outstanding[:k] {
				now := d.tick()
				d.both("finish "+id, func(s dispatch.Store) (string, error) {
					if len(id)%2 == 0 {
						_, err := s.Cancel(ctx, name, id, now)
						return "", err
					}
					_, n, err := s.Complete(ctx, name, []dispatch.Completion{{OrderID: id, DurationMs: 5}}, now)
					return fmt.Sprint(n), err
				})
			}
			outstanding = outstanding[k:]
		case 1: // change a Scale
			d.putScale(name, ids[d.rng.IntN(len(ids))], spread, withMax)
		}
		d.both("loads", func(s dispatch.Store) (string, error) { return loadsOf(s, name) })
		checkOwnIndex(d.t, d.c, d.rs, name)
	}
}

func (d *differ) putScale(pool, id string, spread int64, withMax bool) {
	spec := dispatch.ScaleSpec{OrderCount: ptr(d.rng.Int64N(spread + 1))}
	if d.rng.IntN(8) == 0 {
		spec.State = ptr([]dispatch.ScaleState{dispatch.Draining, dispatch.Down}[d.rng.IntN(2)])
	} else {
		spec.State = ptr(dispatch.Active)
	}
	if withMax && d.rng.IntN(2) == 0 {
		spec.MaxOrders = ptr(*spec.OrderCount + d.rng.Int64N(6)) // 0 extra: full at once
	}
	now := d.tick()
	d.both("PutScale", func(s dispatch.Store) (string, error) {
		sc, _, err := s.PutScale(context.Background(), pool, id, spec, now)
		return fmt.Sprint(sc), err
	})
}

// batch dispatches m orders to both stores, a dry run first, checks the
// assignments against the reference, and returns the order ids assigned.
func (d *differ) batch(pool string, m int) []string {
	ctx := context.Background()
	d.batches++
	req := dispatch.DispatchRequest{
		Pool:           pool,
		BatchID:        fmt.Sprintf("b%d", d.batches),
		Now:            d.tick(),
		IdempotencyTTL: dispatch.DefaultIdempotencyTTL,
	}
	for j := range m {
		req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d-%d", d.batches, j)})
	}
	scales, _, err := d.rs.ListScales(ctx, pool, dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil {
		d.t.Fatalf("ListScales: %v", err)
	}
	want, ok := reference(scales, m)

	dry := req
	dry.DryRun, dry.BatchID = true, ""
	for _, r := range []dispatch.DispatchRequest{dry, req} {
		got := d.both(fmt.Sprintf("Dispatch %s dry=%v", req.BatchID, r.DryRun), func(s dispatch.Store) (string, error) {
			b, _, err := s.Dispatch(ctx, r)
			return assigned(b), err
		})
		if !ok {
			return nil // both refused: checked by both
		}
		if got != want {
			d.t.Fatalf("batch %s of %d orders over %v: got %s, want %s", req.BatchID, m, scales, got, want)
		}
	}
	ids := make([]string, m)
	for j, o := range req.Orders {
		ids[j] = o.ID
	}
	return ids
}

// reference dispatches m orders over scales with balancing: WaterfillIDs of
// the eligible loads, rebuilt after each Scale that reaches its maxOrders.
// It reports false if the eligible Scales have no room for m orders.
func reference(scales []dispatch.Scale, m int) (string, bool) {
	count := make(map[string]int64)
	var room int64
	unlimited := false
	for _, sc := range scales {
		count[sc.CompID] = sc.OrderCount()
		if sc.Eligible() {
			room += sc.MaxOrders - sc.OrderCount()
			unlimited = unlimited || sc.MaxOrders == 0
		}
	}
	if !unlimited && room < int64(m) {
		return "", false
	}
	var out []string
	for len(out) < m {
		var loads []balancing.Load
		maxOf := make(map[string]int64)
		for _, sc := range scales {
			c := count[sc.CompID]
			if sc.State == dispatch.Active && (sc.MaxOrders == 0 || c < sc.MaxOrders) {
				loads = append(loads, balancing.Load{ID: sc.CompID, Count: c})
				maxOf[sc.CompID] = sc.MaxOrders
			}
		}
		picks := balancing.WaterfillIDs(loads, m-len(out))
		for _, id := range picks {
			out = append(out, id)
			count[id]++
			if maxOf[id] != 0 && count[id] == maxOf[id] {
				break // the table is rebuilt without it
			}
		}
	}
	return strings.Join(out, " "), true
}

func assigned(b dispatch.Batch) string {
	ids := make([]string, len(b.Assignments))
	for i, a := range b.Assignments {
		ids[i] = a.CompID
	}
	return strings.Join(ids, " ")
}

// loadsOf lists a pool's Scales as "compId=orderCount/outstanding" in list
// order.
func loadsOf(s dispatch.Store, pool string) (string, error) {
	scales, _, err := s.ListScales(context.Background(), pool, dispatch.Page{Limit: dispatch.MaxLimit})
	var b strings.Builder
	for _, sc := range scales {
		fmt.Fprintf(&b, "%s=%d/%d ", sc.CompID, sc.OrderCount(), sc.Outstanding)
	}
	return b.String(), err
}

func ptr[T any](v T) *T { return &v }
