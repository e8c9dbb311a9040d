package memory

import "github.com/dispatcher/dispatcher/balancing"

// Ranking exposes the sorted structure behind the strategies to the tests of
// package memory_test.
type Ranking struct{ r ranking }

// Move is one change of a Ranking: From (if WasIn) out, To (if IsIn) in.
type Move struct {
	From, To    balancing.Load
	WasIn, IsIn bool
}

// Apply makes the moves, which name distinct IDs.
func (x *Ranking) Apply(ms []Move) {
	cs := make([]change, len(ms))
	for i, m := range ms {
		cs[i] = change{from: m.From, to: m.To, wasIn: m.WasIn, isIn: m.IsIn}
	}
	x.r.apply(cs)
}

// Ranked returns the ranking as the strategies read it.
func (x *Ranking) Ranked() balancing.Ranked { return &x.r }

// After returns the rank of the first entry that sorts after l.
func (x *Ranking) After(l balancing.Load) int { return x.r.after(l) }

// Scan returns the entries from rank start on.
func (x *Ranking) Scan(start int) []balancing.Load {
	var out []balancing.Load
	x.r.scan(start, func(l balancing.Load) bool {
		out = append(out, l)
		return true
	})
	return out
}

// BlockSizes returns the length of each block.
func (x *Ranking) BlockSizes() []int {
	out := make([]int, len(x.r.blocks))
	for i, b := range x.r.blocks {
		out[i] = len(b)
	}
	return out
}

// MaxBlock is the most entries a block holds.
const MaxBlock = maxBlock
