package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// BenchmarkCalls reports redis-us/call, the time Redis spends in one call
// of each of the store's other functions (INFO commandstats), on a pool of
// 100 Scales: what a change to the call path or the library costs them;
// and redis-cpu-us/call, the CPU time of Redis's main thread per call (INFO
// cpu: the call with its reading, parsing and reply), which a loaded
// machine disturbs less.
// Run it with a fixed count (-benchtime=2000x): the orders to complete
// are dispatched first.
func BenchmarkCalls(b *testing.B) {
	ctx := context.Background()
	calls := []struct {
		name string
		// prep runs before the timed calls, with the number of calls to
		// come; call makes call i.
		prep func(st dispatch.Store, n int)
		call func(st dispatch.Store, i int) error
	}{
		{"complete", dispatchOrders, func(st dispatch.Store, i int) error {
			_, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: fmt.Sprintf("o-%d", i), DurationMs: 5}}, time.Now())
			return err
		}},
		{"get_order", dispatchOrders, func(st dispatch.Store, i int) error {
			_, err := st.GetOrder(ctx, "p", fmt.Sprintf("o-%d", i), time.Now())
			return err
		}},
		{"heartbeat", nil, func(st dispatch.Store, i int) error {
			_, err := st.Heartbeat(ctx, "p", fmt.Sprintf("scale-%05d", i%100), nil, time.Now())
			return err
		}},
		{"list_scales", nil, func(st dispatch.Store, _ int) error {
			_, _, err := st.ListScales(ctx, "p", dispatch.Page{Limit: 20})
			return err
		}},
		{"snapshot", nil, func(st dispatch.Store, _ int) error {
			_, err := st.Snapshot(ctx, "p", 10, 10)
			return err
		}},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			st, direct := benchPool(b, 100)
			if c.prep != nil {
				c.prep(st, b.N)
			}
			if err := direct.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			cpu := mainThreadCPU(b, direct)
			b.ResetTimer()
			for i := range b.N {
				if err := c.call(st, i); err != nil {
					b.Fatal(err)
				}
			}
			usec := commandStat(b, direct, "usec", "fcall", "fcall_ro")
			b.ReportMetric(float64(usec)/float64(b.N), "redis-us/call")
			b.ReportMetric(float64((mainThreadCPU(b, direct)-cpu).Microseconds())/float64(b.N), "redis-cpu-us/call")
		})
	}
}

// dispatchOrders dispatches orders o-0 … o-(n-1) into pool p, 1,000 a batch.
func dispatchOrders(st dispatch.Store, n int) {
	for from := 0; from < n; from += 1000 {
		req := dispatch.DispatchRequest{Pool: "p", BatchID: fmt.Sprintf("b-%d", from), Now: time.Now(), MaxCost: 1 << 40}
		for i := from; i < min(n, from+1000); i++ {
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o-%d", i)})
			req.Rand = append(req.Rand, uint64(i), uint64(i))
		}
		if _, _, err := st.Dispatch(context.Background(), req); err != nil {
			panic(err)
		}
	}
}
