package balancing_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// strategyBatch is the number of orders one benchmark op picks.
const strategyBatch = 1000

// benchCands returns n candidates S0000 … with weights 1 to 5 and averages,
// all with 0 orders.
func benchCands(n int) []balancing.Candidate {
	cands := make([]balancing.Candidate, n)
	for i := range cands {
		cands[i] = balancing.Candidate{
			ID:     fmt.Sprintf("S%04d", i),
			Weight: int64(1 + i%5),
			AvgMs:  float64(10 + i%50),
			HasAvg: true,
		}
	}
	return cands
}

// BenchmarkStrategies picks batches of 1,000 orders with every Picker over
// N Scales, each pick seeing the earlier picks' loads, and reports ns/order.
func BenchmarkStrategies(b *testing.B) {
	rnd := randoms(8, 2*strategyBatch)
	for _, s := range pickers() {
		for _, n := range []int{10, 100, 1000} {
			b.Run(s.name+"/N="+strconv.Itoa(n), func(b *testing.B) {
				p, cands := s.new(), benchCands(n)
				ops := 0
				for b.Loop() {
					for k := range strategyBatch {
						cands[p.Pick(cands, rnd[2*k], rnd[2*k+1])].Count++
					}
					ops++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops*strategyBatch), "ns/order")
			})
		}
	}
}

// BenchmarkRingLookup looks up 1,000 keys on a ring of N Scales at
// DefaultVNodes points each and reports ns/order.
func BenchmarkRingLookup(b *testing.B) {
	keys := make([]string, strategyBatch)
	for i := range keys {
		keys[i] = "order-" + strconv.Itoa(i)
	}
	for _, n := range []int{10, 100, 1000} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("S%04d", i)
			}
			r := balancing.NewRing(balancing.DefaultVNodes, ids...)
			ops := 0
			for b.Loop() {
				for _, k := range keys {
					if _, ok := r.Lookup(k, nil); !ok {
						b.Fatal("no Scale")
					}
				}
				ops++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops*strategyBatch), "ns/order")
		})
	}
}
