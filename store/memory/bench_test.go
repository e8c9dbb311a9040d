package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// BenchmarkDispatch dispatches batches of 10 orders and completes them
// again, in pools of 10 to 100,000 Scales whose loads are spread or level:
// the cost per order should barely grow with the pool.
func BenchmarkDispatch(b *testing.B) {
	for _, scales := range []int{10, 1000, 100_000} {
		for _, level := range []bool{false, true} {
			b.Run(fmt.Sprintf("scales=%d/level=%v", scales, level), func(b *testing.B) {
				s := benchStore(b, dispatch.PoolSpec{}, scales, func(i int) dispatch.ScaleSpec {
					count := int64(i * 3)
					if level {
						count = 0
					}
					return dispatch.ScaleSpec{OrderCount: &count}
				})
				benchBatches(b, s, benchLoad{})
			})
		}
	}
}

// BenchmarkStrategies dispatches batches of 10 orders with every strategy
// in pools of 1,000 and 100,000 level Scales of weights 1–5, completing
// them again. waterfill, random, round-robin, power-of-two and
// consistent-hash cost about the same in both pools; the others read every
// eligible Scale for every order, so theirs grows with the pool.
// consistent-hash runs at 1,000 Scales only: its ring would hold 10^7
// points at 100,000.
func BenchmarkStrategies(b *testing.B) {
	for _, scales := range []int{1000, 100_000} {
		for _, st := range dispatch.Strategies {
			if sp, _ := st.Spec(); sp.Kind == balancing.Hashed && scales > 1000 {
				continue
			}
			b.Run(fmt.Sprintf("scales=%d/%s", scales, st), func(b *testing.B) {
				// The strategy is set once the Scales are in, as an
				// operator would switch a running pool.
				s := benchStore(b, dispatch.PoolSpec{}, scales, func(i int) dispatch.ScaleSpec {
					w := int64(1 + i%5)
					return dispatch.ScaleSpec{Weight: &w}
				})
				if _, _, err := s.PutPool(context.Background(), "p", dispatch.PoolSpec{Strategy: &st}, benchNow); err != nil {
					b.Fatal(err)
				}
				benchBatches(b, s, benchLoad{varied: true})
			})
		}
	}
}

// BenchmarkDispatchHealth is BenchmarkDispatch's spread pools of 10 and
// 100,000 Scales with the health options off and on (heartbeats every
// hour, ejection after 3 reports), the clock moving 1 ms a batch: with
// them on, each dispatch checks the leases first, and should still not
// read the pool.
func BenchmarkDispatchHealth(b *testing.B) {
	for _, scales := range []int{10, 100_000} {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("scales=%d/health=%v", scales, on), func(b *testing.B) {
				spec := dispatch.PoolSpec{}
				if on {
					hour, fails := time.Hour, int64(3)
					spec = dispatch.PoolSpec{HeartbeatTimeout: &hour, MaxFails: &fails}
				}
				s := benchStore(b, spec, scales, func(i int) dispatch.ScaleSpec {
					count := int64(i * 3)
					return dispatch.ScaleSpec{OrderCount: &count}
				})
				benchBatches(b, s, benchLoad{tick: time.Millisecond})
			})
		}
	}
}

// benchBatch is the size of the benchmarks' batches; benchNow their clock.
const benchBatch = 10

var benchNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// benchStore returns a memory store holding pool p of spec, with Scales
// s000000, s000001, … of the specs scale gives.
func benchStore(b *testing.B, spec dispatch.PoolSpec, scales int, scale func(i int) dispatch.ScaleSpec) *memory.Store {
	b.Helper()
	ctx := context.Background()
	s := memory.New(memory.Options{})
	if _, _, err := s.PutPool(ctx, "p", spec, benchNow); err != nil {
		b.Fatal(err)
	}
	for i := range scales {
		if _, _, err := s.PutScale(ctx, "p", fmt.Sprintf("s%06d", i), scale(i), benchNow); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// benchLoad shapes benchBatches' batches.
type benchLoad struct {
	// tick moves the clock from one batch to the next (0: it stands).
	tick time.Duration
	// varied gives each batch random numbers and each completion a
	// duration, for the strategies that read them.
	varied bool
}

// benchBatches dispatches batches of benchBatch orders into pool p of s
// and completes them again, for the benchmark's time, and reports
// ns/order.
func benchBatches(b *testing.B, s *memory.Store, load benchLoad) {
	ctx := context.Background()
	orders := make([]dispatch.OrderInput, benchBatch)
	done := make([]dispatch.Completion, benchBatch)
	var rnd []uint64
	if load.varied {
		rnd = make([]uint64, 2*benchBatch)
	}
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		at := benchNow.Add(time.Duration(n) * load.tick)
		for i := range orders {
			orders[i].ID = fmt.Sprintf("o%d-%d", n, i)
			done[i].OrderID = orders[i].ID
			if load.varied {
				done[i].DurationMs = int64(1 + (n+i)%100)
			}
		}
		for i := range rnd {
			rnd[i] = uint64(n*len(rnd)+i) * 0x9E3779B97F4A7C15 >> 11
		}
		req := dispatch.DispatchRequest{Pool: "p", BatchID: fmt.Sprint("b", n), Orders: orders, Now: at, Rand: rnd}
		if _, _, err := s.Dispatch(ctx, req); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Complete(ctx, "p", done, at); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/order")
}
