package balancing

// cloner is a Picker with state, which it copies.
type cloner interface {
	clone() Picker
}

// Clone returns a copy of p that shares no state with it, so that a dry run
// or a model can pick ahead without moving the original's cursor, counter or
// current weights. Stateless pickers are returned as they are.
func Clone(p Picker) Picker {
	if c, ok := p.(cloner); ok {
		return c.clone()
	}
	return p
}
