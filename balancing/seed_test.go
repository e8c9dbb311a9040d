package balancing_test

import "github.com/dispatcher/dispatcher/balancing"

// seedDispatcher is a faithful port of the seed's Java OrderDispatcher (seed
// 000): init builds compIdArr and dispatchCountArr, and every
// getDispatchedcompId rescans the levels from 0. Only the arithmetic differs:
// int64 instead of Java's wrapping int, with the same MAX = 2^31-1. It is the
// oracle the fast Waterfill is tested against.
type seedDispatcher struct {
	compIDArr        []string
	dispatchCountArr []int64
}

// newSeedDispatcher is the seed's init; like the seed it expects the list
// sorted by orderCount (ties by compId, as DESIGN §2 fixes).
func newSeedDispatcher(sorted []balancing.Load) *seedDispatcher {
	d := &seedDispatcher{}
	if len(sorted) == 0 {
		return d
	}
	size := len(sorted)
	d.compIDArr = make([]string, size)
	d.dispatchCountArr = make([]int64, size)
	for i := range size {
		d.compIDArr[i] = sorted[i].ID
		if i == size-1 {
			d.dispatchCountArr[i] = balancing.LastLevel
		} else {
			d.dispatchCountArr[i] = sorted[i+1].Count - sorted[i].Count
			d.dispatchCountArr[i] *= int64(i + 1)
		}
	}
	return d
}

// next is the seed's getDispatchedcompId: its rank as well as its compId, and
// ok false where the seed returns null.
func (d *seedDispatcher) next() (rank int, compID string, ok bool) {
	for i := range d.dispatchCountArr {
		if d.dispatchCountArr[i] == 0 {
			continue
		}
		index := 0
		if i != 0 {
			index = int(d.dispatchCountArr[i] % int64(i+1))
		}
		d.dispatchCountArr[i]--
		return index, d.compIDArr[index], true
	}
	return 0, "", false
}

// seedWaterfill drives the seed with Waterfill's signature: it builds the
// seed's table from sorted and calls pick with the rank of each of up to m
// orders, stopping where pick returns false or the seed returns null.
func seedWaterfill(sorted balancing.Ranked, m int, pick func(rank int) bool) int {
	loads := make([]balancing.Load, sorted.Len())
	for i := range loads {
		loads[i] = sorted.At(i)
	}
	d := newSeedDispatcher(loads)
	for done := 0; done < m; {
		rank, _, ok := d.next()
		if !ok {
			return done
		}
		done++
		if !pick(rank) {
			return done
		}
	}
	return m
}

// seedRanks returns the ranks the seed picks for m orders over loads sorted
// by (Count, ID).
func seedRanks(sorted balancing.Sorted, m int) []int {
	var ranks []int
	seedWaterfill(sorted, m, func(rank int) bool {
		ranks = append(ranks, rank)
		return true
	})
	return ranks
}
