package balancing

import "sort"

// Ranks is the eligible Scales in compId order (byte order), read one at a
// time by rank: how a store that keeps them in an index lets a cheap
// strategy read O(log n) of them per pick instead of building every
// Candidate. Counts include the batch's earlier picks.
type Ranks interface {
	// Len returns the number of eligible Scales.
	Len() int
	// At returns the Scale at rank i, 0 <= i < Len().
	At(i int) Candidate
	// After returns the rank of the first Scale whose ID is greater than
	// id, or Len() if there is none.
	After(id string) int
}

// RankPicker is a Picker whose rule reads a few Scales by rank. Its Pick
// over a slice and its PickRank over the same Scales as Ranks make the same
// pick and leave the same state: Pick is PickRank over Candidates.
type RankPicker interface {
	Picker
	// PickRank returns the rank of the Scale that gets the next order,
	// given two uniform integers in [0, 2^53); r is not empty.
	PickRank(r Ranks, r1, r2 uint64) int
}

// Candidates is Ranks over a slice of candidates sorted by ID.
type Candidates []Candidate

var _ Ranks = Candidates(nil)

// Len returns the number of candidates.
func (c Candidates) Len() int { return len(c) }

// At returns candidate i.
func (c Candidates) At(i int) Candidate { return c[i] }

// After returns the index of the first candidate whose ID is greater than
// id, by binary search.
func (c Candidates) After(id string) int {
	return sort.Search(len(c), func(i int) bool { return c[i].ID > id })
}
