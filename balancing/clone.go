package balancing

import "maps"

// Clone returns a copy of p that shares no state with it, so that a dry run
// or a model can pick ahead without moving the original's cursor, counter or
// current weights. Stateless pickers are returned as they are.
func Clone(p Picker) Picker {
	switch p := p.(type) {
	case *RoundRobin:
		c := *p
		return &c
	case *WeightedRoundRobin:
		c := *p
		return &c
	case *SmoothWeightedRoundRobin:
		return &SmoothWeightedRoundRobin{Current: maps.Clone(p.Current)}
	case *WeightedResponseTime:
		c := *p
		return &c
	case *LeastConnections:
		return &LeastConnections{Current: maps.Clone(p.Current)}
	}
	return p
}
