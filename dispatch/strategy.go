package dispatch

import "github.com/dispatcher/dispatcher/balancing"

// Strategy names how a pool picks Scales (DESIGN §3).
type Strategy string

// The strategies a pool can choose.
const (
	// Waterfill is the seed's static load balancing: fill the lowest Scales
	// first; it ignores weight.
	Waterfill Strategy = "waterfill"
	// WeightedWaterfill sends each order to the Scale with the lowest
	// (orderCount+1)/weight.
	WeightedWaterfill Strategy = "weighted-waterfill"
	// Random picks uniformly among the eligible Scales.
	Random Strategy = "random"
	// WeightedRandom picks at random in proportion to weight.
	WeightedRandom Strategy = "weighted-random"
	// RoundRobin takes the next eligible compId after the last one picked.
	RoundRobin Strategy = "round-robin"
	// WeightedRoundRobin walks a pool counter along the weight axis.
	WeightedRoundRobin Strategy = "weighted-round-robin"
	// SmoothWeightedRoundRobin is nginx's smooth weighted round robin.
	SmoothWeightedRoundRobin Strategy = "smooth-weighted-round-robin"
	// WeightedResponseTime favours Scales with short reported durations
	// (Ribbon's rule, without its bugs).
	WeightedResponseTime Strategy = "weighted-response-time"
	// LeastConnections picks the lowest orderCount/weight, ties by smooth
	// weighted round robin (nginx least_conn).
	LeastConnections Strategy = "least-connections"
	// PowerOfTwo draws two Scales and keeps the less loaded one.
	PowerOfTwo Strategy = "power-of-two"
	// ConsistentHash maps an order's key (its id without one) onto a ring
	// of virtual nodes.
	ConsistentHash Strategy = "consistent-hash"
)

// DefaultStrategy is the strategy of a pool created without one.
const DefaultStrategy = Waterfill

// Strategies lists every strategy the service implements: the names of
// balancing's registry, in its order.
var Strategies = func() []Strategy {
	var out []Strategy
	for _, s := range balancing.Strategies() {
		out = append(out, Strategy(s.Name))
	}
	return out
}()

// Spec returns the strategy's entry in balancing's registry (how it runs,
// its cost, whether it keeps state or reads weights), and whether s is a
// strategy the service implements.
func (s Strategy) Spec() (balancing.Strategy, bool) {
	return balancing.Lookup(string(s))
}

// Valid reports whether s is a strategy the service implements.
func (s Strategy) Valid() bool {
	_, ok := s.Spec()
	return ok
}
