package balancing

import (
	"strconv"
	"strings"
)

// Candidate is an eligible Scale as the strategies see it. A Picker receives
// its candidates sorted by ID (byte order), so that the Go reference and the
// Lua scripts walk them in the same order.
type Candidate struct {
	ID     string
	Count  int64   // orderCount (baseLoad + outstanding)
	Weight int64   // effective weight, >= 1 (slow start already applied by the caller)
	AvgMs  float64 // EWMA of reported durations (weighted-response-time); valid only if HasAvg
	HasAvg bool
}

// String returns the candidate as "ID=Count/Weight", followed by "@AvgMs"
// when it has an average, e.g. "A=3/2" or "B=0/1@12.5".
func (c Candidate) String() string {
	var b strings.Builder
	b.WriteString(c.ID)
	b.WriteByte('=')
	b.WriteString(strconv.FormatInt(c.Count, 10))
	b.WriteByte('/')
	b.WriteString(strconv.FormatInt(c.Weight, 10))
	if c.HasAvg {
		b.WriteByte('@')
		b.WriteString(strconv.FormatFloat(c.AvgMs, 'g', -1, 64))
	}
	return b.String()
}

// Picker is one strategy with its state. Pick returns the index in cands
// (sorted by ID, non-empty) of the Scale that gets the next order, given two
// uniform integers in [0, 2^53). The caller then increments cands[i].Count,
// removes a Scale that became full or ineligible, and calls Pick again for the
// next order of the batch — each pick sees the earlier picks' loads.
//
// Every implementation uses integer arithmetic below 2^53 (ratios compared by
// cross-multiplication), takes its randomness only from r1 and r2, and never
// depends on Go's map order, so that a Redis Lua port makes the same picks.
type Picker interface {
	Pick(cands []Candidate, r1, r2 uint64) int
}

// Run picks m orders with p over cands, raising the Count of each order's
// Scale in cands before the next pick, and returns the compIds in pick order.
// rnd holds two random numbers per order (r1, r2 of order k at 2k and 2k+1);
// a nil rnd stands for zeros, for the strategies that use no randomness. Run
// knows no maxOrders: every candidate stays eligible. It returns nil when
// cands is empty, and panics if m is negative or a non-nil rnd is shorter
// than 2m.
func Run(p Picker, cands []Candidate, m int, rnd []uint64) []string {
	if m < 0 {
		panic("balancing: Run with negative order count")
	}
	if rnd != nil && len(rnd) < 2*m {
		panic("balancing: Run needs two random numbers per order")
	}
	if len(cands) == 0 {
		return nil
	}
	ids := make([]string, 0, m)
	for k := range m {
		var r1, r2 uint64
		if rnd != nil {
			r1, r2 = rnd[2*k], rnd[2*k+1]
		}
		i := p.Pick(cands, r1, r2)
		cands[i].Count++
		ids = append(ids, cands[i].ID)
	}
	return ids
}

// lessLoaded reports whether a carries less load per weight than b:
// a.Count/a.Weight < b.Count/b.Weight, cross-multiplied so that it is exact
// (counts < 2^31 and weights <= 10^6 keep the products below 2^53).
func lessLoaded(a, b Candidate) bool {
	return a.Count*b.Weight < b.Count*a.Weight
}

// totalWeight returns the sum of the candidates' weights, panicking if it is
// below 1: the caller broke the contract that every weight is >= 1.
func totalWeight(cands []Candidate, who string) int64 {
	var total int64
	for _, c := range cands {
		total += c.Weight
	}
	if total < 1 {
		panic("balancing: " + who + " with total weight < 1")
	}
	return total
}
