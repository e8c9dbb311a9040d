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
				benchmarkDispatch(b, scales, level)
			})
		}
	}
}

func benchmarkDispatch(b *testing.B, scales int, level bool) {
	const batch = 10
	ctx := context.Background()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := memory.New(memory.Options{})
	if _, _, err := s.PutPool(ctx, "p", dispatch.PoolSpec{}, now); err != nil {
		b.Fatal(err)
	}
	for i := range scales {
		count := int64(0)
		if !level {
			count = int64(i * 3)
		}
		if _, _, err := s.PutScale(ctx, "p", fmt.Sprintf("s%06d", i), dispatch.ScaleSpec{OrderCount: &count}, now); err != nil {
			b.Fatal(err)
		}
	}
	orders := make([]dispatch.OrderInput, batch)
	done := make([]dispatch.Completion, batch)
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		for i := range orders {
			orders[i].ID = fmt.Sprintf("o%d-%d", n, i)
			done[i].OrderID = orders[i].ID
		}
		req := dispatch.DispatchRequest{Pool: "p", BatchID: fmt.Sprint("b", n), Orders: orders, Now: now}
		if _, _, err := s.Dispatch(ctx, req); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Complete(ctx, "p", done, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/order")
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
				benchmarkStrategy(b, scales, st)
			})
		}
	}
}

func benchmarkStrategy(b *testing.B, scales int, st dispatch.Strategy) {
	const batch = 10
	ctx := context.Background()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := memory.New(memory.Options{})
	if _, _, err := s.PutPool(ctx, "p", dispatch.PoolSpec{}, now); err != nil {
		b.Fatal(err)
	}
	for i := range scales {
		w := int64(1 + i%5)
		if _, _, err := s.PutScale(ctx, "p", fmt.Sprintf("s%06d", i), dispatch.ScaleSpec{Weight: &w}, now); err != nil {
			b.Fatal(err)
		}
	}
	if _, _, err := s.PutPool(ctx, "p", dispatch.PoolSpec{Strategy: &st}, now); err != nil {
		b.Fatal(err)
	}
	orders := make([]dispatch.OrderInput, batch)
	done := make([]dispatch.Completion, batch)
	rnd := make([]uint64, 2*batch)
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		for i := range orders {
			orders[i].ID = fmt.Sprintf("o%d-%d", n, i)
			done[i] = dispatch.Completion{OrderID: orders[i].ID, DurationMs: int64(1 + (n+i)%100)}
		}
		for i := range rnd {
			rnd[i] = uint64(n*len(rnd)+i) * 0x9E3779B97F4A7C15 >> 11
		}
		req := dispatch.DispatchRequest{Pool: "p", BatchID: fmt.Sprint("b", n), Orders: orders, Now: now, Rand: rnd}
		if _, _, err := s.Dispatch(ctx, req); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Complete(ctx, "p", done, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/order")
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
				benchmarkDispatchHealth(b, scales, on)
			})
		}
	}
}

func benchmarkDispatchHealth(b *testing.B, scales int, on bool) {
	const batch = 10
	ctx := context.Background()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := memory.New(memory.Options{})
	spec := dispatch.PoolSpec{}
	if on {
		hour, fails := time.Hour, int64(3)
		spec = dispatch.PoolSpec{HeartbeatTimeout: &hour, MaxFails: &fails}
	}
	if _, _, err := s.PutPool(ctx, "p", spec, now); err != nil {
		b.Fatal(err)
	}
	for i := range scales {
		count := int64(i * 3)
		if _, _, err := s.PutScale(ctx, "p", fmt.Sprintf("s%06d", i), dispatch.ScaleSpec{OrderCount: &count}, now); err != nil {
			b.Fatal(err)
		}
	}
	orders := make([]dispatch.OrderInput, batch)
	done := make([]dispatch.Completion, batch)
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		at := now.Add(time.Duration(n) * time.Millisecond)
		for i := range orders {
			orders[i].ID = fmt.Sprintf("o%d-%d", n, i)
			done[i].OrderID = orders[i].ID
		}
		req := dispatch.DispatchRequest{Pool: "p", BatchID: fmt.Sprint("b", n), Orders: orders, Now: at}
		if _, _, err := s.Dispatch(ctx, req); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.Complete(ctx, "p", done, at); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/order")
}
