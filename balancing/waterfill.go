package balancing

// LastLevel is dispatchCountArr[N-1], the seed's Integer.MAX_VALUE: the
// number of orders the last level, which spans every Scale, takes before the
// table is exhausted.
const LastLevel int64 = 1<<31 - 1

// Waterfill runs the seed's dispatch for up to m orders over the table built
// from r, calling pick with the rank (index into r) of each order's Scale, in
// order. If pick returns false, Waterfill stops after that order: callers use
// this to rebuild the table when a Scale fills up. It returns the number of
// orders picked: m, unless pick stopped it, r is empty (0), or the table is
// exhausted (the seed then answers null; that takes more than LastLevel
// orders).
//
// Within a level i < N-1 the seed's value D = dispatchCountArr[i] is a
// multiple of i+1, so the ranks it emits are 0, i, i-1, …, 1, 0, i, …; the
// last level starts at LastLevel mod N and descends the same way. Levels of
// value 0 (ties) are skipped with one CountAtMost, so the cost is
// O(k log N + m) for k levels crossed, and r is read only at the levels'
// edges.
//
// Waterfill panics if m is negative, or if r's CountAtMost contradicts its
// order (r is not sorted), as far as the entries it reads show.
func Waterfill(r Ranked, m int, pick func(rank int) bool) int {
	if m < 0 {
		panic("balancing: Waterfill with negative order count")
	}
	n := r.Len()
	done := 0
	for next := 0; done < m && next < n; {
		lv := levelFrom(r, n, next, m-done)
		rank := lv.start
		for range lv.take {
			done++
			if !pick(rank) {
				return done
			}
			if rank == 0 {
				rank = lv.top
			} else {
				rank--
			}
		}
		next = lv.top + 1
	}
	return done
}

// level is the part of one table level that a batch uses.
type level struct {
	top   int // the level's index i: it spreads orders over ranks 0..i
	start int // the rank of its first order, D mod (i+1)
	take  int // min(D, the orders still wanted)
}

// levelFrom returns the first level at or after index next whose value is not
// 0, and how much of it a batch that still wants want > 0 orders takes.
func levelFrom(r Ranked, n, next, want int) level {
	v := r.At(next).Count
	top := r.CountAtMost(v) - 1
	if top < next || top >= n {
		panic("balancing: Ranked is not sorted by Count")
	}
	if top == n-1 {
		return level{top: top, start: int(LastLevel % int64(n)), take: int(min(int64(want), LastLevel))}
	}
	above := r.At(top + 1).Count
	if above <= v {
		panic("balancing: Ranked is not sorted by Count")
	}
	// D = (above - v) * (top+1) may not fit in an int64 for arbitrary counts,
	// so compare the difference with the rounds the batch needs instead; the
	// unsigned difference of two ordered int64 values is exact.
	diff := uint64(above) - uint64(v)
	width := uint64(top) + 1
	take := want
	if rounds := (uint64(want) + width - 1) / width; diff < rounds {
		take = int(diff * width)
	}
	return level{top: top, start: 0, take: take}
}

// WaterfillIDs is the convenience form of Waterfill: it sorts loads in place
// and returns the compIds of m orders in dispatch order (fewer only if the
// table is exhausted, or none if loads is empty). It panics if m is negative.
func WaterfillIDs(loads []Load, m int) []string {
	if m < 0 {
		panic("balancing: WaterfillIDs with negative order count")
	}
	s := SortLoads(loads)
	var ids []string
	if len(s) > 0 {
		ids = make([]string, 0, m)
	}
	Waterfill(s, m, func(rank int) bool {
		ids = append(ids, s[rank].ID)
		return true
	})
	return ids
}
