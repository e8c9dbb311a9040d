package redis_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// What the seeded random walks of the store (TestManyLikeOne,
// TestOwnTokenWalk) share: how they are seeded, how a pool is made, and
// how a Scale's orders are read whole and in pages.

// walkSeed returns the seed of a walk: def, or the number in the
// environment variable env when it is set (which walks another way).
func walkSeed(t *testing.T, env string, def uint64) uint64 {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", env, v, err)
	}
	return seed
}

// walkStrategies runs walk as a subtest per strategy, each with a source
// of its own drawn from seed.
func walkStrategies(t *testing.T, seed uint64, strategies []dispatch.Strategy,
	walk func(t *testing.T, strategy dispatch.Strategy, rng *rand.Rand)) {
	for i, strategy := range strategies {
		t.Run(string(strategy), func(t *testing.T) {
			walk(t, strategy, rand.New(rand.NewPCG(seed, uint64(i))))
		})
	}
}

// walkPool makes pool p with spec on s and each Scale of scales with the
// spec specOf gives it, at now, through both, which runs a call on every
// store of a walk and fails unless they answer alike.
func walkPool(both func(what string, f func(s dispatch.Store) (string, error)) (string, error), now time.Time,
	spec dispatch.PoolSpec, scales []string, specOf func(i int) dispatch.ScaleSpec) {
	both("PutPool", func(s dispatch.Store) (string, error) {
		_, _, err := s.PutPool(context.Background(), "p", spec, now)
		return "", err
	})
	for i, id := range scales {
		walkPutScale(both, now, id, specOf(i))
	}
}

// walkPutScale puts Scale id of pool p with spec at now through both.
func walkPutScale(both func(what string, f func(s dispatch.Store) (string, error)) (string, error), now time.Time, id string, spec dispatch.ScaleSpec) {
	both("PutScale "+id, func(s dispatch.Store) (string, error) {
		sc, _, err := s.PutScale(context.Background(), "p", id, spec, now)
		return fmt.Sprintf("%+v", sc), err
	})
}

// scaleOrdersWhole returns Scale id's orders of pool p in one page, as
// ordersLine writes them; a next page is an error.
func scaleOrdersWhole(s dispatch.Store, id string) (string, error) {
	os, next, err := s.ListScaleOrders(context.Background(), "p", id, dispatch.Page{Limit: dispatch.MaxLimit})
	if next != "" {
		return "", errors.New("a next page after all orders")
	}
	return ordersLine(os), err
}

// scaleOrdersPaged reads Scale id's orders of pool p in pages of limit,
// at most most pages, and returns how many it read; unless they list what
// whole does (scaleOrdersWhole), it returns what they listed and an
// error.
func scaleOrdersPaged(s dispatch.Store, id string, limit, most int, whole string) (int, string, error) {
	var all []dispatch.Order
	p := dispatch.Page{Limit: limit}
	pages := 0
	for range most {
		os, next, err := s.ListScaleOrders(context.Background(), "p", id, p)
		if err != nil {
			return pages, "", err
		}
		pages++
		all = append(all, os...)
		if next == "" {
			break
		}
		p.Cursor = next
	}
	if got := ordersLine(all); got != whole {
		return pages, got, fmt.Errorf("pages of %d differ from one page", limit)
	}
	return pages, "", nil
}

// ordersLine writes orders as the walk compares them, more cheaply than
// fmt's %+v (the race detector slows reflection).
func ordersLine(os []dispatch.Order) string {
	var b strings.Builder
	for _, o := range os {
		b.WriteString(o.ID)
		for _, f := range []string{o.CompID, o.BatchID, o.Key, string(o.State)} {
			b.WriteByte(' ')
			b.WriteString(f)
		}
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(o.AssignedAt.UnixMilli(), 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(o.CompletedAt.UnixMilli(), 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(o.Moves, 10))
		b.WriteByte('\n')
	}
	return b.String()
}
