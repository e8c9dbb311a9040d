package redis_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// waitMode is which answers of a mixed load wait for the replica.
type waitMode struct {
	name             string
	dispatch, finish *dispatch.Service // who dispatches, who completes
	read             *dispatch.Service // who reads each order back; nil: no reads
}

// BenchmarkWaitMixed measures what WAITs cost a mixed load on a real
// primary and replica: waitClients clients, each dispatching one order,
// then completing it (and in the +read modes reading it back), through
// dispatch.Services on one Redis. The modes run in turns, waitRounds times
// each for waitSlice, in one run, so that the machine's drift falls on all
// alike:
//
//	none            no WAIT
//	dispatch-only/unshared  WAIT on dispatches only, one per call (as before WAITs covered every answer)
//	dispatch-only   WAIT on dispatches only, shared
//	all/unshared    WAIT on every answer, one per call
//	all             WAIT on every answer, shared (the store as it is)
//	none+read, all+read  the same with a GET of each completed order
//
// It reports orders/s and the p50 and p99 latency of a dispatch and a
// complete per mode, and orders/s as a ratio to dispatch-only/unshared.
// Run it alone: go test -run '^$' -bench BenchmarkWaitMixed -benchtime 1x ./store/redis/
func BenchmarkWaitMixed(b *testing.B) {
	const waitClients, waitRounds, waitSlice = 16, 3, 3 * time.Second
	primary := redistest.Start(b)
	redistest.StartReplica(b, primary)
	plain := redis.New(newClient(b, primary), redis.Options{})
	waits := redis.New(newClient(b, primary), redis.Options{WaitReplicas: 1})
	unshared := redis.New(newClient(b, primary), redis.Options{WaitReplicas: 1})
	redis.UnshareWaits(unshared)
	poolWithScales(b, plain, "p", 10)
	svc := func(s dispatch.Store) *dispatch.Service { return dispatch.NewService(s, dispatch.Config{}) }
	sp, sw, su := svc(plain), svc(waits), svc(unshared)
	modes := []*waitMode{
		{name: "none", dispatch: sp, finish: sp},
		{name: "dispatch-only/unshared", dispatch: su, finish: sp},
		{name: "dispatch-only", dispatch: sw, finish: sp},
		{name: "all/unshared", dispatch: su, finish: su},
		{name: "all", dispatch: sw, finish: sw},
		{name: "none+read", dispatch: sp, finish: sp, read: sp},
		{name: "all+read", dispatch: sw, finish: sw, read: sw},
	}
	type result struct {
		orders           int64
		elapsed          time.Duration
		dispatch, finish []time.Duration
	}
	results := make(map[string]*result)
	var seq atomic.Int64
	b.ResetTimer()
	for range b.N {
		for range waitRounds {
			for _, m := range modes {
				r := results[m.name]
				if r == nil {
					r = &result{}
					results[m.name] = r
				}
				var mu sync.Mutex
				var wg sync.WaitGroup
				start := time.Now()
				for range waitClients {
					wg.Go(func() {
						ctx := context.Background()
						var ds, fs []time.Duration
						var n int64
						for time.Since(start) < waitSlice {
							id := fmt.Sprintf("o%d", seq.Add(1))
							t0 := time.Now()
							if _, _, err := m.dispatch.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: id}}}); err != nil {
								b.Errorf("%s: dispatch: %v", m.name, err)
								return
							}
							t1 := time.Now()
							if _, err := m.finish.CompleteOrder(ctx, "p", id, 0); err != nil {
								b.Errorf("%s: complete: %v", m.name, err)
								return
							}
							ds, fs = append(ds, t1.Sub(t0)), append(fs, time.Since(t1))
							if m.read != nil {
								if _, err := m.read.GetOrder(ctx, "p", id); err != nil {
									b.Errorf("%s: read: %v", m.name, err)
									return
								}
							}
							n++
						}
						mu.Lock()
						r.orders += n
						r.dispatch, r.finish = append(r.dispatch, ds...), append(r.finish, fs...)
						mu.Unlock()
					})
				}
				wg.Wait()
				r.elapsed += time.Since(start)
			}
		}
	}
	b.StopTimer()
	rate := func(name string) float64 { r := results[name]; return float64(r.orders) / r.elapsed.Seconds() }
	base := rate("dispatch-only/unshared")
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	for _, m := range modes {
		r := results[m.name]
		b.ReportMetric(rate(m.name), m.name+"-orders/s")
		b.ReportMetric(rate(m.name)/base, m.name+"-x")
		b.Logf("%-24s %8.0f orders/s  %.2fx  dispatch p50 %.2f ms p99 %.2f ms  complete p50 %.2f ms p99 %.2f ms",
			m.name, rate(m.name), rate(m.name)/base, pct(r.dispatch, .5), pct(r.dispatch, .99), pct(r.finish, .5), pct(r.finish, .99))
	}
}
