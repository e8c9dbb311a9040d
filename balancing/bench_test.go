package balancing_test

import (
	"strconv"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// benchOrders is the batch size of one benchmark op.
const benchOrders = 1_000_000

// BenchmarkWaterfill dispatches a million orders over N Scales holding
// 0, 1, …, N-1 orders.
func BenchmarkWaterfill(b *testing.B) {
	benchmarkDispatch(b, balancing.Waterfill)
}

// BenchmarkSeedWaterfill runs the seed's port, which rescans the levels for
// every order, on the same inputs. One op at N=10000 takes well under a
// second, so it keeps the full million orders; compare ns/order.
func BenchmarkSeedWaterfill(b *testing.B) {
	benchmarkDispatch(b, seedWaterfill)
}

func benchmarkDispatch(b *testing.B, run waterfillFunc) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			loads := make([]balancing.Load, n)
			for i := range loads {
				loads[i] = balancing.Load{ID: "S" + strconv.Itoa(i), Count: int64(i)}
			}
			s := balancing.SortLoads(loads)
			pick := func(int) bool { return true }
			ops := 0
			for b.Loop() {
				if got := run(s, benchOrders, pick); got != benchOrders {
					b.Fatalf("got %d orders, want %d", got, benchOrders)
				}
				ops++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops*benchOrders), "ns/order")
		})
	}
}
