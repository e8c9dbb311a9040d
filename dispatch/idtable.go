package dispatch

import "hash/maphash"

// idSeed seeds the hashes of idTable, once per process.
var idSeed = maphash.MakeSeed()

// idTable is a set of the order ids of one batch, for finding a repeated
// one: an open-addressed table of indices into the batch's orders (1 +
// the index; 0 is an empty slot), at most half full, probed linearly.
// It costs one allocation and a hash per id, where a map[string]struct{}
// cost several allocations and grew its groups as ids were added.
type idTable []int32

// newIDTable returns an empty table for up to n ids.
func newIDTable(n int) idTable {
	size := 1
	for size < 2*n {
		size <<= 1
	}
	return make(idTable, size)
}

// add reports whether the id of orders[i] is the id of one of the orders
// the table holds, and adds i when it is not.
func (t idTable) add(orders []OrderInput, i int) bool {
	id := orders[i].ID
	mask := uint64(len(t) - 1)
	for h := maphash.String(idSeed, id) & mask; ; h = (h + 1) & mask {
		j := t[h]
		if j == 0 {
			t[h] = int32(i + 1)
			return false
		}
		if orders[j-1].ID == id {
			return true
		}
	}
}
