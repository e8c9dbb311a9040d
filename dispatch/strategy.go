package dispatch

// Strategy names how a pool picks Scales.
type Strategy string

// The strategies a pool can choose.
const (
	// Waterfill is the seed's static load balancing: fill the lowest Scales
	// first; it ignores weight.
	Waterfill Strategy = "waterfill"
)

// DefaultStrategy is the strategy of a pool created without one.
const DefaultStrategy = Waterfill

// Strategies lists every strategy the service implements.
var Strategies = []Strategy{Waterfill}

// Valid reports whether s is a strategy the service implements.
func (s Strategy) Valid() bool {
	for _, k := range Strategies {
		if s == k {
			return true
		}
	}
	return false
}
