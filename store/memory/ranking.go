package memory

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/dispatcher/dispatcher/balancing"
)

// ranking is a set of loads with distinct IDs, sorted by (Count, ID): the
// balancing.Ranked that the strategies read. It is a list of sorted blocks
// of at most maxBlock entries, with the rank at which each block starts, so
// that moving one entry costs O(maxBlock + N/maxBlock) instead of shifting
// up to N entries: in a level pool, where most Scales share one count, a
// Scale that gets an order moves past all of them.
type ranking struct {
	blocks [][]balancing.Load
	// starts[b] is the rank of blocks[b][0]; starts[len(blocks)] is Len().
	starts []int
}

var _ balancing.Ranked = (*ranking)(nil)

// change moves one entry: from (if wasIn) is taken out, to (if isIn) put in.
type change struct {
	from, to    balancing.Load
	wasIn, isIn bool
}

const (
	maxBlock = 512
	minBlock = maxBlock / 4 // a smaller block joins a neighbour

	mergeAbove = 32
	mergeShare = 16
)

func compareLoads(a, b balancing.Load) int {
	if c := cmp.Compare(a.Count, b.Count); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Len returns the number of entries.
func (r *ranking) Len() int {
	if len(r.starts) == 0 {
		return 0
	}
	return r.starts[len(r.starts)-1]
}

// At returns the entry at rank, 0 <= rank < Len().
func (r *ranking) At(rank int) balancing.Load {
	b := sort.Search(len(r.blocks), func(b int) bool { return r.starts[b+1] > rank })
	return r.blocks[b][rank-r.starts[b]]
}

// CountAtMost returns the number of entries whose Count is <= c.
func (r *ranking) CountAtMost(c int64) int {
	b := sort.Search(len(r.blocks), func(b int) bool { return last(r.blocks[b]).Count > c })
	if b == len(r.blocks) {
		return r.Len()
	}
	blk := r.blocks[b]
	return r.starts[b] + sort.Search(len(blk), func(i int) bool { return blk[i].Count > c })
}

// after returns the rank of the first entry that sorts after l.
func (r *ranking) after(l balancing.Load) int {
	b, i, found := r.locate(l)
	if found {
		i++
	}
	if b == len(r.blocks) {
		return r.Len()
	}
	return r.starts[b] + i
}

// locate returns the block and the index in it where l is or would go, and
// whether it is there; block len(r.blocks) when the ranking is empty.
func (r *ranking) locate(l balancing.Load) (b, i int, found bool) {
	b = sort.Search(len(r.blocks), func(b int) bool { return compareLoads(last(r.blocks[b]), l) >= 0 })
	if b == len(r.blocks) {
		if b == 0 {
			return 0, 0, false
		}
		return b - 1, len(r.blocks[b-1]), false
	}
	i, found = slices.BinarySearchFunc(r.blocks[b], l, compareLoads)
	return b, i, found
}

// apply makes the changes, which name distinct IDs. Many changes at once
// (more than mergeAbove and one in mergeShare of the entries) are merged in
// one pass over the ranking, which costs more per entry than a move.
func (r *ranking) apply(cs []change) {
	if len(cs) > mergeAbove && len(cs) > r.Len()/mergeShare {
		r.merge(cs)
		return
	}
	for _, c := range cs {
		if c.wasIn {
			r.remove(c.from)
		}
		if c.isIn {
			r.insert(c.to)
		}
	}
}

func (r *ranking) insert(l balancing.Load) {
	if len(r.blocks) == 0 {
		r.blocks, r.starts = [][]balancing.Load{{l}}, []int{0, 1}
		return
	}
	b, i, _ := r.locate(l)
	r.blocks[b] = slices.Insert(r.blocks[b], i, l)
	r.shift(b, 1)
	if len(r.blocks[b]) > maxBlock {
		r.split(b)
	}
}

func (r *ranking) remove(l balancing.Load) {
	b, i, found := r.locate(l)
	if !found {
		panic("memory: ranking has no entry " + l.String())
	}
	r.blocks[b] = slices.Delete(r.blocks[b], i, i+1)
	r.shift(b, -1)
	switch {
	case len(r.blocks[b]) == 0:
		r.blocks = slices.Delete(r.blocks, b, b+1)
		r.starts = slices.Delete(r.starts, b+1, b+2)
	case len(r.blocks[b]) < minBlock && len(r.blocks) > 1:
		r.join(min(b, len(r.blocks)-2))
	}
}

// shift moves the starts of the blocks after b by d.
func (r *ranking) shift(b, d int) {
	for j := b + 1; j < len(r.starts); j++ {
		r.starts[j] += d
	}
}

// split cuts block b in two; the halves share no memory, so that inserting
// into one cannot overwrite the other.
func (r *ranking) split(b int) {
	blk := r.blocks[b]
	h := len(blk) / 2
	r.blocks[b] = blk[:h:h]
	r.blocks = slices.Insert(r.blocks, b+1, slices.Clone(blk[h:]))
	r.starts = slices.Insert(r.starts, b+1, r.starts[b]+h)
}

// join appends block b+1 to block b, and splits the result if it is too
// large.
func (r *ranking) join(b int) {
	r.blocks[b] = append(r.blocks[b], r.blocks[b+1]...)
	r.blocks = slices.Delete(r.blocks, b+1, b+2)
	r.starts = slices.Delete(r.starts, b+1, b+2)
	if len(r.blocks[b]) > maxBlock {
		r.split(b)
	}
}

// merge makes many changes at once: it drops the old entries, merges the
// sorted new ones in and cuts the result into half-full blocks.
func (r *ranking) merge(cs []change) {
	drop := make(map[string]struct{}, len(cs))
	var add []balancing.Load
	for _, c := range cs {
		if c.wasIn {
			drop[c.from.ID] = struct{}{}
		}
		if c.isIn {
			add = append(add, c.to)
		}
	}
	kept := make([]balancing.Load, 0, r.Len()+len(add))
	for _, blk := range r.blocks {
		for _, l := range blk {
			if _, ok := drop[l.ID]; !ok {
				kept = append(kept, l)
			}
		}
	}
	slices.SortFunc(add, compareLoads)
	all := make([]balancing.Load, 0, len(kept)+len(add))
	i, j := 0, 0
	for i < len(kept) || j < len(add) {
		if j == len(add) || (i < len(kept) && compareLoads(kept[i], add[j]) < 0) {
			all = append(all, kept[i])
			i++
		} else {
			all = append(all, add[j])
			j++
		}
	}
	r.blocks, r.starts = nil, []int{0}
	for len(all) > 0 {
		n := min(len(all), maxBlock/2)
		r.blocks = append(r.blocks, all[:n:n])
		r.starts = append(r.starts, r.starts[len(r.starts)-1]+n)
		all = all[n:]
	}
}

// scan calls f for the entries from rank start on, until f returns false.
func (r *ranking) scan(start int, f func(balancing.Load) bool) {
	if start >= r.Len() {
		return
	}
	b := sort.Search(len(r.blocks), func(b int) bool { return r.starts[b+1] > start })
	for i := start - r.starts[b]; b < len(r.blocks); b, i = b+1, 0 {
		for _, l := range r.blocks[b][i:] {
			if !f(l) {
				return
			}
		}
	}
}

func last(blk []balancing.Load) balancing.Load { return blk[len(blk)-1] }
