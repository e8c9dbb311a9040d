package balancing

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Load is one Scale as the waterfill table sees it: its compId and its
// orderCount.
type Load struct {
	ID    string
	Count int64
}

// String returns the load as "ID=Count", e.g. "S1=13".
func (l Load) String() string {
	return l.ID + "=" + strconv.FormatInt(l.Count, 10)
}

// Ranked is a read-only view of eligible Scales sorted by Count ascending,
// then ID ascending (byte order). A rank is an index into that order.
//
// Waterfill reads only the few entries it needs, so a Ranked backed by an
// index (a Redis ZSET, a B-tree) lets a small batch in a large pool avoid
// reading the whole pool.
type Ranked interface {
	// Len returns the number of entries.
	Len() int
	// At returns the entry at rank, 0 <= rank < Len().
	At(rank int) Load
	// CountAtMost returns the number of entries whose Count is <= c.
	CountAtMost(c int64) int
}

// Sorted is a Ranked backed by a slice sorted by (Count, ID). Build one with
// SortLoads.
type Sorted []Load

var _ Ranked = Sorted(nil)

// Len returns the number of entries.
func (s Sorted) Len() int { return len(s) }

// At returns the entry at rank.
func (s Sorted) At(rank int) Load { return s[rank] }

// CountAtMost returns the number of entries whose Count is <= c, by binary
// search.
func (s Sorted) CountAtMost(c int64) int {
	return sort.Search(len(s), func(i int) bool { return s[i].Count > c })
}

// SortLoads sorts loads in place by Count ascending, then ID ascending (byte
// order), and returns them as Sorted.
func SortLoads(loads []Load) Sorted {
	slices.SortFunc(loads, compareLoads)
	return Sorted(loads)
}

func compareLoads(a, b Load) int {
	if c := cmp.Compare(a.Count, b.Count); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}
