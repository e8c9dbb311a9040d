package dispatch

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

// Strategies lists every strategy the service implements.
var Strategies = []Strategy{
	Waterfill, WeightedWaterfill, Random, WeightedRandom, RoundRobin, WeightedRoundRobin,
	SmoothWeightedRoundRobin, WeightedResponseTime, LeastConnections, PowerOfTwo, ConsistentHash,
}

// Valid reports whether s is a strategy the service implements.
func (s Strategy) Valid() bool {
	for _, k := range Strategies {
		if s == k {
			return true
		}
	}
	return false
}
