package balancing

import (
	"cmp"
	"crypto/sha1"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
)

// DefaultVNodes is the number of points (virtual nodes) each Scale places on
// a consistent-hash ring.
//
// A Scale's share of the keys is the sum of the arcs that end at its points;
// with V points per Scale it varies by about 1/√V. 100 points give about ±10%
// (in the tests, 10,000 keys over 10 Scales land 888 to 1,189 on each); 1,000
// would give ±3%, but the ring costs a sorted-set entry per point in Redis
// (some 100 bytes) and V writes per Scale added: 10,000 Scales at 100 points
// are 10^6 entries, at 1,000 ten times that. A lookup reads O(log(N·V))
// points either way. For comparison, nginx's ketama ring places 160 points
// per unit of weight, Dubbo 160 per provider, Envoy at least 1,024 in all.
// Weights do not change the number of points: points proportional to weights
// of up to 10^6 would not fit.
const DefaultVNodes = 100

// pointHexDigits is how many leading hex digits of a SHA-1 make a point: 13
// digits are 52 bits, exact in the doubles of Redis's Lua, where
// tonumber(redis.sha1hex(s):sub(1, 13), 16) computes the same point.
const pointHexDigits = 13

// hashPoint returns the first 13 hex digits of the SHA-1 of s as an integer
// below 2^52.
func hashPoint(s string) uint64 {
	h := sha1.Sum([]byte(s))
	return binary.BigEndian.Uint64(h[:8]) >> (64 - 4*pointHexDigits)
}

// KeyPoint returns the ring position of an order's key: the first 13 hex
// digits of the key's SHA-1, as an integer below 2^52.
func KeyPoint(key string) uint64 {
	return hashPoint(key)
}

// RingPoints returns the vnodes points of the Scale compID: point j is the
// first 13 hex digits of the SHA-1 of compID + "#" + j (j in decimal, from
// 0), as an integer below 2^52. It returns nil if vnodes < 1.
func RingPoints(compID string, vnodes int) []uint64 {
	if vnodes < 1 {
		return nil
	}
	points := make([]uint64, vnodes)
	for j := range points {
		points[j] = hashPoint(compID + "#" + strconv.Itoa(j))
	}
	return points
}

// ringPoint is one virtual node: a position and the Scale it belongs to.
type ringPoint struct {
	at uint64
	id string
}

// compareRingPoints orders points by position, then compId. A Redis sorted
// set with the position as score and compId + "#" + j as member orders them
// alike: equal scores sort by member bytes, and '#' sorts below every byte a
// compId may hold, so the members compare as their compIds.
func compareRingPoints(a, b ringPoint) int {
	if c := cmp.Compare(a.at, b.at); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// Ring is the strategy consistent-hash (nginx's hash consistent, Envoy's ring
// hash, Dubbo's ConsistentHashLoadBalance): every Scale places vnodes points
// on a ring of 2^52 positions, and a key goes to the Scale of the first point
// at or after the key's position, wrapping. Removing one of N Scales moves
// only that Scale's keys, adding one moves about 1/N of them to it, and a
// lookup reads O(log P) of the ring's P = N·vnodes points. It is not a
// Picker: it never reads all the candidates. The zero value is not usable; build one with NewRing.
type Ring struct {
	vnodes  int
	points  []ringPoint         // sorted by compareRingPoints
	members map[string]struct{} // the Scales on the ring; never iterated
}

// NewRing returns a ring on which each Scale places vnodes points, holding
// the Scales ids. It panics if vnodes < 1.
func NewRing(vnodes int, ids ...string) *Ring {
	if vnodes < 1 {
		panic("balancing: NewRing with vnodes < 1")
	}
	r := &Ring{vnodes: vnodes, members: make(map[string]struct{}, len(ids))}
	for _, id := range ids {
		if _, ok := r.members[id]; ok {
			continue
		}
		r.members[id] = struct{}{}
		for _, at := range RingPoints(id, vnodes) {
			r.points = append(r.points, ringPoint{at: at, id: id})
		}
	}
	slices.SortFunc(r.points, compareRingPoints)
	return r
}

// Len returns the number of points on the ring.
func (r *Ring) Len() int { return len(r.points) }

// Has reports whether the Scale id is on the ring.
func (r *Ring) Has(id string) bool {
	_, ok := r.members[id]
	return ok
}

// Add places the Scale id's points on the ring, in O(N·V); adding a Scale
// already there does nothing.
func (r *Ring) Add(id string) {
	if r.Has(id) {
		return
	}
	r.members[id] = struct{}{}
	add := make([]ringPoint, 0, r.vnodes)
	for _, at := range RingPoints(id, r.vnodes) {
		add = append(add, ringPoint{at: at, id: id})
	}
	slices.SortFunc(add, compareRingPoints)
	merged := make([]ringPoint, 0, len(r.points)+len(add))
	i, j := 0, 0
	for i < len(r.points) && j < len(add) {
		if compareRingPoints(add[j], r.points[i]) < 0 {
			merged = append(merged, add[j])
			j++
		} else {
			merged = append(merged, r.points[i])
			i++
		}
	}
	merged = append(merged, r.points[i:]...)
	r.points = append(merged, add[j:]...)
}

// Remove takes the Scale id's points off the ring, in O(N·V); removing a
// Scale that is not there does nothing.
func (r *Ring) Remove(id string) {
	if !r.Has(id) {
		return
	}
	delete(r.members, id)
	r.points = slices.DeleteFunc(r.points, func(p ringPoint) bool { return p.id == id })
}

// Lookup returns the Scale for key: the Scale of the first point at or after
// KeyPoint(key), wrapping past the end, whose Scale is eligible; a nil
// eligible takes every Scale. Points of ineligible Scales are walked past,
// as if those Scales were not on the ring, so a full or draining Scale sheds
// its keys to its successors only. It reads O(log P) points to find the
// start, then walks at most all P points, and returns false if no Scale is
// eligible or the ring is empty.
func (r *Ring) Lookup(key string, eligible func(id string) bool) (string, bool) {
	n := len(r.points)
	if n == 0 {
		return "", false
	}
	kp := KeyPoint(key)
	start, _ := slices.BinarySearchFunc(r.points, kp, func(p ringPoint, kp uint64) int {
		return cmp.Compare(p.at, kp)
	})
	for k := range n {
		id := r.points[(start+k)%n].id
		if eligible == nil || eligible(id) {
			return id, true
		}
	}
	return "", false
}
