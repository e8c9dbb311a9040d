package balancing_test

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// Bounds of the fuzzed inputs, so that one execution stays well under a
// millisecond even with the seed port, which costs O(N) per order.
const (
	fuzzMaxScales = 100
	fuzzMaxOrders = 2000
	fuzzMaxCands  = 64
	fuzzMaxPicks  = 300
	fuzzMaxWeight = 1_000_000 // DESIGN §1
)

// fuzzLoads decodes the Scales of FuzzWaterfill. ids is a comma-separated
// list of compIds (a repeated one gets a suffix, a missing one is generated);
// counts holds the orderCounts, read according to mode:
//
//	0: one byte each, 0…255 (many ties)
//	1: four bytes each, big-endian, masked to 0…2^31−1
//	2: one byte each, counted down from 2^31−1 (the ceiling)
//	3: two bytes each: a selector byte (even: small, odd: near the ceiling)
//	   and a value byte, for tables that mix both ends
func fuzzLoads(ids string, counts []byte, mode uint8) []balancing.Load {
	width := [...]int{1, 4, 1, 2}[mode%4]
	n := min(len(counts)/width, fuzzMaxScales)
	names := strings.Split(ids, ",")
	seen := make(map[string]bool, n)
	loads := make([]balancing.Load, n)
	for i := range loads {
		b := counts[i*width : (i+1)*width]
		var c int64
		switch mode % 4 {
		case 0:
			c = int64(b[0])
		case 1:
			c = int64(binary.BigEndian.Uint32(b) & math.MaxInt32)
		case 2:
			c = balancing.LastLevel - int64(b[0])
		case 3:
			if c = int64(b[1]); b[0]%2 == 1 {
				c = balancing.LastLevel - c
			}
		}
		id := "s" + strconv.Itoa(i)
		if i < len(names) && names[i] != "" {
			id = names[i]
		}
		for seen[id] {
			id += "~"
		}
		seen[id] = true
		loads[i] = balancing.Load{ID: id, Count: c}
	}
	return loads
}

// FuzzWaterfill checks Waterfill against the seed's algorithm (the port in
// seed_test.go) on arbitrary tables: the same ranks for the same input,
// whole batches, batches stopped part-way and batches over Scales with a
// maxOrders, and on each the properties of DESIGN §2: every order assigned
// exactly once, counts that add up, and the water level.
func FuzzWaterfill(f *testing.F) {
	f.Add("S1,S2,S3", []byte{1, 5, 12}, uint8(0), uint16(22), uint16(65535), []byte(nil))                               // the seed's worked example
	f.Add("S1,S2,S3", []byte{1, 5, 12}, uint8(0), uint16(22), uint16(4), []byte(nil))                                   // stopped after 5 orders
	f.Add("A,B,C", []byte{3, 3, 3}, uint8(0), uint16(7), uint16(65535), []byte(nil))                                    // one level: starts at 2^31-1 mod 3
	f.Add("a,Z,B", []byte{0, 0, 0}, uint8(0), uint16(4), uint16(65535), []byte(nil))                                    // ties by byte order
	f.Add("", []byte{}, uint8(0), uint16(3), uint16(65535), []byte(nil))                                                // no Scales
	f.Add("A", []byte{7}, uint8(0), uint16(2000), uint16(65535), []byte(nil))                                           // a single Scale
	f.Add("A,B,C", []byte{0, 0, 0, 0, 0, 0, 0, 1, 127, 255, 255, 255}, uint8(1), uint16(5), uint16(65535), []byte(nil)) // a Java int would wrap
	f.Add("A,B,C,D", []byte{0, 1, 200, 255}, uint8(2), uint16(1500), uint16(65535), []byte(nil))                        // at the ceiling
	f.Add("x,y,z,w", []byte{0, 3, 1, 0, 0, 9, 1, 200}, uint8(3), uint16(900), uint16(65535), []byte(nil))
	f.Add("A,B,C,D", []byte{1, 1, 5, 9}, uint8(0), uint16(40), uint16(65535), []byte{3, 16, 0, 1}) // caps: the table is rebuilt
	f.Add("A,B", []byte{4, 4}, uint8(0), uint16(30), uint16(65535), []byte{1, 200})                // a Scale full from the start
	f.Fuzz(func(t *testing.T, ids string, counts []byte, mode uint8, m16, stop16 uint16, caps []byte) {
		loads := fuzzLoads(ids, counts, mode)
		m := int(m16) % (fuzzMaxOrders + 1)
		sorted := balancing.SortLoads(slices.Clone(loads))
		if !slices.IsSortedFunc(sorted, func(a, b balancing.Load) int {
			return cmp.Or(cmp.Compare(a.Count, b.Count), strings.Compare(a.ID, b.ID))
		}) {
			t.Fatalf("SortLoads(%v) = %v: not sorted by (Count, ID)", loads, sorted)
		}
		checkCountAtMost(t, sorted)
		checkTable(t, sorted)

		// A whole batch: the seed's ranks, m of them (none without Scales).
		var got []int
		calls := 0
		n := balancing.Waterfill(sorted, m, func(rank int) bool {
			calls++
			if rank < 0 || rank >= len(sorted) {
				t.Fatalf("%d orders over %v: rank %d out of range", m, sorted, rank)
			}
			got = append(got, rank)
			return true
		})
		want := seedRanks(sorted, m)
		if !slices.Equal(got, want) {
			t.Fatalf("%d orders over %v:\ngot  %v\nseed %v", m, sorted, got, want)
		}
		wantN := m
		if len(sorted) == 0 {
			wantN = 0
		}
		if n != wantN || calls != wantN {
			t.Fatalf("%d orders over %d Scales: Waterfill returned %d after %d picks, want %d", m, len(sorted), n, calls, wantN)
		}
		ids1 := balancing.WaterfillIDs(slices.Clone(loads), m)
		for i, rank := range got {
			if ids1[i] != sorted[rank].ID {
				t.Fatalf("WaterfillIDs order %d: got %s, Waterfill gives %s", i, ids1[i], sorted[rank].ID)
			}
		}
		if len(ids1) != len(got) {
			t.Fatalf("WaterfillIDs gave %d orders, Waterfill %d", len(ids1), len(got))
		}
		checkCountsAddUp(t, sorted, got)
		checkWaterLevel(t, sorted, got)
		checkBelowUnreceived(t, sorted, got)

		// A batch that pick stops after order stop: the prefix, in both.
		if stop := int(stop16); stop < m && len(sorted) > 0 {
			for name, run := range map[string]waterfillFunc{"Waterfill": balancing.Waterfill, "seed": seedWaterfill} {
				var part []int
				n := run(sorted, m, func(rank int) bool {
					part = append(part, rank)
					return len(part) <= stop
				})
				if n != stop+1 || !slices.Equal(part, got[:stop+1]) {
					t.Fatalf("%s stopped after order %d of %d: returned %d with %v, want %d with %v",
						name, stop, m, n, part, stop+1, got[:stop+1])
				}
			}
		}

		// Scales with a maxOrders leave the table when full, which is
		// rebuilt for the remaining orders: still the seed's sequence.
		if len(caps) > 0 {
			capOf := make(map[string]int64)
			for i, l := range loads {
				if i < len(caps) && caps[i] != 0 {
					capOf[l.ID] = max(1, l.Count+int64(int8(caps[i])))
				}
			}
			capped := cappedIDs(loads, capOf, m, balancing.Waterfill)
			if seed := cappedIDs(loads, capOf, m, seedWaterfill); !slices.Equal(capped, seed) {
				t.Fatalf("%d orders over %v with caps %v:\ngot  %v\nseed %v", m, loads, capOf, capped, seed)
			}
			checkCapped(t, loads, capOf, m, capped)
		}
	})
}

// checkCountAtMost compares Sorted.CountAtMost with a count of the entries,
// at every count in the table and either side of it.
func checkCountAtMost(t *testing.T, sorted balancing.Sorted) {
	t.Helper()
	for _, l := range sorted {
		for _, c := range []int64{l.Count - 1, l.Count, l.Count + 1} {
			want := 0
			for _, e := range sorted {
				if e.Count <= c {
					want++
				}
			}
			if got := sorted.CountAtMost(c); got != want {
				t.Fatalf("CountAtMost(%d) over %v = %d, want %d", c, sorted, got, want)
			}
		}
	}
}

// checkTable compares Table with the seed's init.
func checkTable(t *testing.T, sorted balancing.Sorted) {
	t.Helper()
	seed := newSeedDispatcher(sorted)
	ids, counts := balancing.Table(sorted)
	if !slices.Equal(ids, seed.compIDArr) && len(ids)+len(seed.compIDArr) > 0 {
		t.Fatalf("Table(%v) compIdArr = %v, seed %v", sorted, ids, seed.compIDArr)
	}
	if !slices.Equal(counts, seed.dispatchCountArr) && len(counts)+len(seed.dispatchCountArr) > 0 {
		t.Fatalf("Table(%v) dispatchCountArr = %v, seed %v", sorted, counts, seed.dispatchCountArr)
	}
}

// checkCountsAddUp checks that the picks raise the table's total by exactly
// their number, one per order on the Scale picked.
func checkCountsAddUp(t *testing.T, sorted balancing.Sorted, ranks []int) {
	t.Helper()
	after := slices.Clone(sorted)
	addOrders(after, idsOf(sorted, ranks))
	var before, total int64
	for i := range sorted {
		before += sorted[i].Count
		total += after[i].Count
		picked := int64(0)
		for _, r := range ranks {
			if r == i {
				picked++
			}
		}
		if after[i].Count != sorted[i].Count+picked {
			t.Fatalf("%v: got %d after %d picks", sorted[i], after[i].Count, picked)
		}
	}
	if total != before+int64(len(ranks)) {
		t.Fatalf("%d orders over %v: total %d, want %d", len(ranks), sorted, total, before+int64(len(ranks)))
	}
}

// checkBelowUnreceived checks that the water fills from the bottom: no
// Scale received an order while one with a lower count received none.
func checkBelowUnreceived(t *testing.T, sorted balancing.Sorted, ranks []int) {
	t.Helper()
	received := make([]bool, len(sorted))
	for _, r := range ranks {
		received[r] = true
	}
	for i, r := range sorted {
		for j, u := range sorted {
			if received[i] && !received[j] && u.Count < r.Count {
				t.Fatalf("%d orders over %v: %v received orders, %v none", len(ranks), sorted, r, u)
			}
		}
	}
}

// checkCapped checks a dispatch over Scales with caps: as many orders as
// there is room for (up to m), none on a Scale that was full, and no Scale
// raised above its cap.
func checkCapped(t *testing.T, loads []balancing.Load, caps map[string]int64, m int, ids []string) {
	t.Helper()
	room, unlimited := int64(0), false
	for _, l := range loads {
		if c, ok := caps[l.ID]; !ok {
			unlimited = true
		} else if l.Count < c {
			room += c - l.Count
		}
	}
	want := m
	if len(loads) == 0 {
		want = 0
	} else if !unlimited {
		want = int(min(int64(m), room))
	}
	if len(ids) != want {
		t.Fatalf("%d orders over %v with caps %v: %d picked, want %d", m, loads, caps, len(ids), want)
	}
	after := slices.Clone(loads)
	addOrders(after, ids)
	for i, l := range after {
		if c, ok := caps[l.ID]; ok && l.Count != loads[i].Count && l.Count > c {
			t.Fatalf("%d orders over %v with caps %v: %v above its cap %d", m, loads, caps, l, c)
		}
	}
}

func idsOf(sorted balancing.Sorted, ranks []int) []string {
	ids := make([]string, len(ranks))
	for i, r := range ranks {
		ids[i] = sorted[r].ID
	}
	return ids
}

// fuzzCands decodes the candidates of FuzzPickers: 10 bytes each, in ID
// order (c00, c01, …):
//
//	[0]    flags: 1 has an average, 2 small weight (1…4), 4 small count
//	       (0…3), 8 average 2^31−1, 16 average 0
//	[1:4]  weight, big-endian, mod 10^6, plus 1
//	[4:8]  count, big-endian, masked to 0…2^31−1
//	[8:10] average in quarter milliseconds
func fuzzCands(spec []byte) []balancing.Candidate {
	n := min(len(spec)/10, fuzzMaxCands)
	cands := make([]balancing.Candidate, n)
	for i := range cands {
		b := spec[i*10 : (i+1)*10]
		c := balancing.Candidate{ID: fmt.Sprintf("c%02d", i)}
		c.Weight = int64(uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3]))%fuzzMaxWeight + 1
		if b[0]&2 != 0 {
			c.Weight = int64(b[1]%4) + 1
		}
		c.Count = int64(binary.BigEndian.Uint32(b[4:8]) & math.MaxInt32)
		if b[0]&4 != 0 {
			c.Count = int64(b[4] % 4)
		}
		if b[0]&1 != 0 {
			c.HasAvg = true
			c.AvgMs = float64(binary.BigEndian.Uint16(b[8:10])) / 4
			switch {
			case b[0]&8 != 0:
				c.AvgMs = math.MaxInt32
			case b[0]&16 != 0:
				c.AvgMs = 0
			}
		}
		cands[i] = c
	}
	return cands
}

// fuzzPicker is a Picker with the state a fuzz input gives it.
type fuzzPicker struct {
	name string
	new  func() balancing.Picker
}

// fuzzPickers lists every Picker, round robin starting after last and
// weighted round robin at counter.
func fuzzPickers(last string, counter uint64) []fuzzPicker {
	counter %= 1 << 53
	return []fuzzPicker{
		{"random", func() balancing.Picker { return balancing.Random{} }},
		{"weighted-random", func() balancing.Picker { return balancing.WeightedRandom{} }},
		{"round-robin", func() balancing.Picker { return &balancing.RoundRobin{Last: last} }},
		{"weighted-round-robin", func() balancing.Picker { return &balancing.WeightedRoundRobin{Counter: counter} }},
		{"smooth-weighted-round-robin", func() balancing.Picker { return &balancing.SmoothWeightedRoundRobin{} }},
		{"weighted-response-time", func() balancing.Picker {
			return &balancing.WeightedResponseTime{RR: balancing.RoundRobin{Last: last}}
		}},
		{"least-connections", func() balancing.Picker { return &balancing.LeastConnections{} }},
		{"power-of-two", func() balancing.Picker { return balancing.PowerOfTwo{} }},
		{"weighted-waterfill", func() balancing.Picker { return balancing.WeightedWaterfill{} }},
	}
}

// FuzzPickers runs every Picker over arbitrary candidates (weights 1…10^6,
// counts up to 2^31−1, response-time averages) and random numbers, with a
// Scale leaving or joining half-way through the batch if flags say so. Each
// pick must be in range and be the one its rule (DESIGN §3, the doc
// comments) names, Run must give the same m picks and state as picking one
// by one, and the counts must add up.
//
// flags: 1 every random number 2^53−1, 2 every random number 0, 4 a Scale
// leaves half-way, 8 a Scale (weight 1, count 0) joins half-way.
func FuzzPickers(f *testing.F) {
	cand := func(flags byte, weight uint32, count uint32, avgQuarterMs uint16) []byte {
		return []byte{flags, byte(weight >> 16), byte(weight >> 8), byte(weight),
			byte(count >> 24), byte(count >> 16), byte(count >> 8), byte(count),
			byte(avgQuarterMs >> 8), byte(avgQuarterMs)}
	}
	cat := func(cs ...[]byte) []byte { return slices.Concat(cs...) }
	// weights 5,1,1: nginx's A A B A C A A
	f.Add(cat(cand(0, 4, 0, 0), cand(0, 0, 0, 0), cand(0, 0, 0, 0)), uint64(1), uint16(14), "", uint64(0), uint8(0))
	// weights 4,6,3,2,5 on the weight axis
	f.Add(cat(cand(0, 3, 0, 0), cand(0, 5, 0, 0), cand(0, 2, 0, 0), cand(0, 1, 0, 0), cand(0, 4, 0, 0)), uint64(2), uint16(40), "", uint64(7), uint8(0))
	// response times 100 ms and 10 ms
	f.Add(cat(cand(1, 0, 0, 400), cand(1, 0, 0, 40)), uint64(3), uint16(50), "", uint64(0), uint8(0))
	// a Scale without an average among two with one; all averages 0
	f.Add(cat(cand(1, 0, 0, 400), cand(0, 0, 0, 0), cand(1, 0, 0, 1)), uint64(4), uint16(30), "c01", uint64(0), uint8(0))
	f.Add(cat(cand(17, 0, 0, 0), cand(17, 0, 0, 0)), uint64(5), uint16(6), "", uint64(0), uint8(1))
	// ties in load per weight for least-connections, a Scale leaving
	f.Add(cat(cand(0, 1, 4, 0), cand(0, 0, 2, 0), cand(0, 3, 8, 0), cand(0, 0, 9, 0)), uint64(6), uint16(60), "", uint64(0), uint8(4))
	// the largest weights and counts, a Scale joining
	f.Add(cat(cand(9, 999999, math.MaxInt32, 0), cand(9, 999999, math.MaxInt32-1, 0)), uint64(7), uint16(300), "zz", uint64(1<<53-1), uint8(8|1))
	f.Add(cat(cand(6, 0, 0, 0)), uint64(8), uint16(5), "", uint64(0), uint8(2))
	f.Add([]byte{}, uint64(9), uint16(5), "", uint64(0), uint8(0))
	f.Fuzz(func(t *testing.T, spec []byte, seed uint64, m16 uint16, last string, counter uint64, flags uint8) {
		cands := fuzzCands(spec)
		m := int(m16) % (fuzzMaxPicks + 1)
		rnd := randoms(seed, 2*m)
		for i := range rnd {
			switch {
			case flags&1 != 0:
				rnd[i] = max53
			case flags&2 != 0:
				rnd[i] = 0
			}
		}
		half := m / 2
		change := func(cs []balancing.Candidate) []balancing.Candidate {
			if flags&4 != 0 && len(cs) > 1 {
				cs = slices.Delete(cs, int(seed%uint64(len(cs))), int(seed%uint64(len(cs)))+1)
			}
			if flags&8 != 0 {
				cs = append(cs, balancing.Candidate{ID: "zz", Weight: 1})
			}
			return cs
		}
		for _, fp := range fuzzPickers(last, counter) {
			if len(cands) == 0 {
				if ids := balancing.Run(fp.new(), nil, m, rnd); ids != nil {
					t.Fatalf("%s: Run over no candidates = %v, want nil", fp.name, ids)
				}
				continue
			}
			// One pick at a time, each checked against its rule.
			p, cur := fp.new(), slices.Clone(cands)
			o := newPickOracle(p)
			want := make(map[string]int64)
			for _, c := range cands {
				want[c.ID] = c.Count
			}
			var ids []string
			for k := 0; ; k++ {
				if k == half {
					cur = change(cur)
					for _, c := range cur {
						want[c.ID] = c.Count
					}
				}
				if k == m {
					break
				}
				i := o.check(t, fp.name, cur, rnd[2*k], rnd[2*k+1])
				cur[i].Count++
				want[cur[i].ID]++
				ids = append(ids, cur[i].ID)
			}
			for _, c := range cur {
				if c.Count != want[c.ID] {
					t.Fatalf("%s: %v after the batch, want count %d", fp.name, c, want[c.ID])
				}
			}

			// Run, in the same two halves: the same picks and state.
			p2, cur2 := fp.new(), slices.Clone(cands)
			ids2 := balancing.Run(p2, cur2, half, rnd[:2*half])
			cur2 = change(cur2)
			ids2 = append(ids2, balancing.Run(p2, cur2, m-half, rnd[2*half:])...)
			if len(ids2) != m || !slices.Equal(ids, ids2) {
				t.Fatalf("%s over %s: Run gave %d picks %v, one by one %v", fp.name, formatCands(cands), len(ids2), ids2, ids)
			}
			if !slices.Equal(cur, cur2) {
				t.Fatalf("%s: Run left %s, one by one %s", fp.name, formatCands(cur2), formatCands(cur))
			}
			if !reflect.DeepEqual(p, p2) {
				t.Fatalf("%s: Run left state %+v, one by one %+v", fp.name, p2, p)
			}
		}
	})
}

// pickOracle checks each pick of one Picker against the rule of its
// strategy, keeping its own copy of the state where the rule needs one.
type pickOracle struct {
	p       balancing.Picker
	current map[string]int64 // smooth weighted round robin, least connections
	rr      string           // round robin's last pick
}

func newPickOracle(p balancing.Picker) *pickOracle {
	o := &pickOracle{p: p, current: make(map[string]int64)}
	switch p := p.(type) {
	case *balancing.RoundRobin:
		o.rr = p.Last
	case *balancing.WeightedResponseTime:
		o.rr = p.RR.Last
	}
	return o
}

// check picks once with r1 and r2 and fails t unless the index is in range
// and is the pick the rule gives. It returns the index.
func (o *pickOracle) check(t *testing.T, name string, cands []balancing.Candidate, r1, r2 uint64) int {
	t.Helper()
	var counter uint64
	if p, ok := o.p.(*balancing.WeightedRoundRobin); ok {
		counter = p.Counter
	}
	i := o.p.Pick(cands, r1, r2)
	if i < 0 || i >= len(cands) {
		t.Fatalf("%s: Pick over %s (r1 %d, r2 %d) = %d, out of range", name, formatCands(cands), r1, r2, i)
	}
	want := -1
	switch p := o.p.(type) {
	case balancing.Random:
		want = int(r1 % uint64(len(cands)))
	case balancing.WeightedRandom:
		want = axisIndex(cands, int64(r1%uint64(weightSum(cands))))
	case *balancing.RoundRobin:
		want = o.roundRobin(cands)
	case *balancing.WeightedRoundRobin:
		want = axisIndex(cands, int64(counter%uint64(weightSum(cands))))
		if p.Counter != counter+1 {
			t.Fatalf("%s: counter %d after a pick from %d", name, p.Counter, counter)
		}
	case *balancing.SmoothWeightedRoundRobin:
		want = o.smooth(cands, func(balancing.Candidate) bool { return true })
		o.checkCurrent(t, name, cands, p.Current)
	case *balancing.WeightedResponseTime:
		want = o.responseTime(cands, r1)
	case *balancing.LeastConnections:
		low := cands[0]
		for _, c := range cands[1:] {
			if c.Count*low.Weight < low.Count*c.Weight {
				low = c
			}
		}
		if c := cands[i]; c.Count*low.Weight != low.Count*c.Weight {
			t.Fatalf("%s: picked %v over %s, but %v carries less per weight", name, c, formatCands(cands), low)
		}
		tied := func(c balancing.Candidate) bool { return c.Count*low.Weight == low.Count*c.Weight }
		n := 0
		for _, c := range cands {
			if tied(c) {
				n++
			}
		}
		o.forget(cands)
		if want = slices.IndexFunc(cands, tied); n > 1 {
			want = o.smooth(cands, tied)
		}
		o.checkCurrent(t, name, cands, p.Current)
	case balancing.PowerOfTwo:
		n := uint64(len(cands))
		if want = 0; n > 1 {
			a, b := int(r1%n), int(r2%(n-1))
			if b >= a {
				b++
			}
			want = a
			if cands[b].Count*cands[a].Weight < cands[a].Count*cands[b].Weight {
				want = b
			}
		}
	case balancing.WeightedWaterfill:
		want = 0
		for j, c := range cands {
			if b := cands[want]; (c.Count+1)*b.Weight < (b.Count+1)*c.Weight {
				want = j
			}
		}
	default:
		t.Fatalf("%s: no rule for %T", name, o.p)
	}
	if i != want {
		t.Fatalf("%s: Pick over %s (r1 %d, r2 %d) = %d (%s), the rule gives %d",
			name, formatCands(cands), r1, r2, i, cands[i].ID, want)
	}
	return i
}

// roundRobin is round robin's rule: the first candidate after the last
// pick in byte order, else the first.
func (o *pickOracle) roundRobin(cands []balancing.Candidate) int {
	i := slices.IndexFunc(cands, func(c balancing.Candidate) bool { return c.ID > o.rr })
	if i < 0 {
		i = 0
	}
	o.rr = cands[i].ID
	return i
}

// smooth is one round of nginx's smooth weighted round robin over the
// candidates in: each adds its weight, the first highest wins and gives
// back their total. A Scale that is not a candidate is forgotten.
func (o *pickOracle) smooth(cands []balancing.Candidate, in func(balancing.Candidate) bool) int {
	o.forget(cands)
	best, total := -1, int64(0)
	for i, c := range cands {
		if !in(c) {
			continue
		}
		o.current[c.ID] += c.Weight
		total += c.Weight
		if best < 0 || o.current[c.ID] > o.current[cands[best].ID] {
			best = i
		}
	}
	o.current[cands[best].ID] -= total
	return best
}

func (o *pickOracle) forget(cands []balancing.Candidate) {
	maps.DeleteFunc(o.current, func(id string, _ int64) bool {
		return !slices.ContainsFunc(cands, func(c balancing.Candidate) bool { return c.ID == id })
	})
}

// checkCurrent compares a Picker's current weights with the oracle's, a
// missing entry counting as 0, and checks that it holds none of a Scale
// that left.
func (o *pickOracle) checkCurrent(t *testing.T, name string, cands []balancing.Candidate, got map[string]int64) {
	t.Helper()
	for id, v := range got {
		if !slices.ContainsFunc(cands, func(c balancing.Candidate) bool { return c.ID == id }) {
			t.Fatalf("%s: current weights %v keep %s, which is not a candidate of %s", name, got, id, formatCands(cands))
		}
		if v != o.current[id] {
			t.Fatalf("%s over %s: current weights %v, the rule gives %v", name, formatCands(cands), got, o.current)
		}
	}
	for id, v := range o.current {
		if _, ok := got[id]; !ok && v != 0 {
			t.Fatalf("%s over %s: current weights %v, the rule gives %v", name, formatCands(cands), got, o.current)
		}
	}
}

// responseTime is the rule of WeightedResponseTime as its doc comment
// states it, operation by operation in float64.
func (o *pickOracle) responseTime(cands []balancing.Candidate, r1 uint64) int {
	k, known := 0, 0.0
	for _, c := range cands {
		if c.HasAvg {
			k++
			known += c.AvgMs
		}
	}
	if k < 2 {
		return o.roundRobin(cands)
	}
	mean := known / float64(k)
	a := make([]float64, len(cands))
	total := 0.0
	for i, c := range cands {
		if a[i] = mean; c.HasAvg {
			a[i] = c.AvgMs
		}
		total += a[i]
	}
	acc := make([]float64, len(cands))
	w := 0.0
	for i := range cands {
		w += total - a[i]
		acc[i] = w
	}
	if !(w >= balancing.MinResponseTimeWeight) || math.IsInf(w, 1) {
		return o.roundRobin(cands)
	}
	u := float64(r1) / (1 << 53) * w
	for i := range acc {
		if u < acc[i] {
			if total-a[i] <= 0 {
				return -1 // a Scale of weight 0 is never picked
			}
			return i
		}
	}
	return -1 // the draw stays below the total weight
}

func weightSum(cands []balancing.Candidate) int64 {
	var w int64
	for _, c := range cands {
		w += c.Weight
	}
	return w
}

// axisIndex returns the candidate whose interval on the weight axis holds
// pos.
func axisIndex(cands []balancing.Candidate, pos int64) int {
	for i, c := range cands {
		if pos < c.Weight {
			return i
		}
		pos -= c.Weight
	}
	return -1
}

// FuzzRing checks consistent hashing on arbitrary Scales, keys and eligible
// sets against a brute-force walk over every point: Lookup returns the
// Scale of the first eligible point at or after the key's, wrapping, or
// false exactly when no Scale on the ring is eligible. Removing a Scale
// moves only its keys, to where skipping it sent them, and adding it back
// restores the ring.
//
// ids is a comma-separated list of compIds; bit j of mask (mod 64) makes
// the j-th distinct one eligible; key and seven keys derived from it are
// looked up; remove is removed and added back.
func FuzzRing(f *testing.F) {
	f.Add("S00,S01,S02,S03", uint8(99), "order-1", uint64(0b1011), "S01")
	f.Add("A,B,C", uint8(2), "", uint64(0), "B")        // nothing eligible
	f.Add("A", uint8(0), "k", uint64(1), "A")           // one point, then an empty ring
	f.Add("", uint8(5), "cust-9", uint64(1), "nope")    // the compId "" only
	f.Add("A,A,B,a", uint8(7), "x", uint64(0b110), "a") // a repeated id is placed once
	f.Add("A,B", uint8(1), "order-1", uint64(3), "C")   // removing an absent Scale
	f.Fuzz(func(t *testing.T, ids string, vnodes uint8, key string, mask uint64, remove string) {
		// The first 32 distinct ids, and every occurrence of them.
		var members, placed []string
		for _, id := range strings.Split(ids, ",") {
			if !slices.Contains(members, id) {
				if len(members) == 32 {
					continue
				}
				members = append(members, id)
			}
			placed = append(placed, id)
		}
		v := int(vnodes)%balancing.DefaultVNodes + 1
		if len(members)*v > 3200 {
			v = 3200 / len(members)
		}
		eligible := func(id string) bool {
			j := slices.Index(members, id)
			return j >= 0 && mask>>(j%64)&1 == 1
		}
		keys := []string{key}
		for i := 1; i < 8; i++ {
			keys = append(keys, key+"/"+strconv.Itoa(i))
		}

		r := balancing.NewRing(v, placed...)
		if r.Len() != len(members)*v {
			t.Fatalf("NewRing(%d, %q): %d points, want %d", v, placed, r.Len(), len(members)*v)
		}
		for _, id := range members {
			if !r.Has(id) {
				t.Fatalf("NewRing(%d, %q) does not have %q", v, members, id)
			}
		}
		before := make([]string, len(keys))
		for i, k := range keys {
			checkLookup(t, r, members, v, k, eligible)
			checkLookup(t, r, members, v, k, nil)
			before[i], _ = r.Lookup(k, nil)
		}

		// Remove moves only the removed Scale's keys, to where skipping
		// it would have sent them.
		skipped := make([]string, len(keys))
		for i, k := range keys {
			skipped[i], _ = r.Lookup(k, func(id string) bool { return id != remove })
		}
		wasMember := r.Has(remove)
		r.Remove(remove)
		rest := slices.DeleteFunc(slices.Clone(members), func(id string) bool { return id == remove })
		if r.Has(remove) || r.Len() != len(rest)*v {
			t.Fatalf("after Remove(%q) from %q: Has %v, %d points, want false, %d", remove, members, r.Has(remove), r.Len(), len(rest)*v)
		}
		for i, k := range keys {
			got, _ := r.Lookup(k, nil)
			if before[i] != remove && got != before[i] {
				t.Fatalf("Remove(%q) from %q moved key %q from %q to %q", remove, members, k, before[i], got)
			}
			if got != skipped[i] {
				t.Fatalf("after Remove(%q) from %q, key %q goes to %q; skipping it sent it to %q", remove, members, k, got, skipped[i])
			}
			checkLookup(t, r, rest, v, k, eligible)
		}

		// Adding it back restores every key.
		if wasMember {
			r.Add(remove)
			r.Add(remove)
			if r.Len() != len(members)*v {
				t.Fatalf("after Remove and Add(%q) to %q: %d points, want %d", remove, members, r.Len(), len(members)*v)
			}
			for i, k := range keys {
				if got, _ := r.Lookup(k, nil); got != before[i] {
					t.Fatalf("after Remove and Add(%q) to %q, key %q goes to %q, before %q", remove, members, k, got, before[i])
				}
				checkLookup(t, r, members, v, k, eligible)
			}
		}
	})
}

// checkLookup compares r.Lookup(key, eligible) with a walk over all the
// points of members, sorted by (position, compId): the first eligible point
// at or after the key's position, wrapping.
func checkLookup(t *testing.T, r *balancing.Ring, members []string, vnodes int, key string, eligible func(string) bool) {
	t.Helper()
	type point struct {
		at uint64
		id string
	}
	var points []point
	for _, id := range members {
		if eligible != nil && !eligible(id) {
			continue
		}
		for _, at := range balancing.RingPoints(id, vnodes) {
			points = append(points, point{at, id})
		}
	}
	slices.SortFunc(points, func(a, b point) int { return cmp.Or(cmp.Compare(a.at, b.at), strings.Compare(a.id, b.id)) })
	want, wantOK := "", false
	if len(points) > 0 {
		kp := balancing.KeyPoint(key)
		i, _ := slices.BinarySearchFunc(points, kp, func(p point, kp uint64) int { return cmp.Compare(p.at, kp) })
		want, wantOK = points[i%len(points)].id, true
	}
	got, ok := r.Lookup(key, eligible)
	if got != want || ok != wantOK {
		t.Fatalf("Lookup(%q) over %q (%d points each, eligible nil: %v) = %q, %v; want %q, %v",
			key, members, vnodes, eligible == nil, got, ok, want, wantOK)
	}
	if ok && (!r.Has(got) || eligible != nil && !eligible(got)) {
		t.Fatalf("Lookup(%q) = %q, not an eligible Scale on the ring", key, got)
	}
}
