package redis

import (
	"encoding/binary"
	"fmt"

	"github.com/dispatcher/dispatcher/dispatch"
)

// The strategies run in lua/assign.lua and lua/pickers.lua (consistent-hash
// in lua/ring.lua); they take from Go what the scripts cannot have: the
// randomness and the cost cap.

// maxRand bounds the random numbers of a dispatch: below 2^53, a double in
// Lua holds them exactly.
const maxRand = 1 << 53

// maxCost returns the cap on eligible Scales × orders of the request, or
// dispatch.DefaultMaxCost if it sets none.
func maxCost(req dispatch.DispatchRequest) int64 {
	if req.MaxCost > 0 {
		return req.MaxCost
	}
	return dispatch.DefaultMaxCost
}

// randDigits is the width of one random number in the string appendRand
// makes: 14 hex digits hold 56 bits.
const randDigits = 14

const hexDigits = "0123456789abcdef"

// appendRand appends the random numbers of the orders to args as one
// string: two per order, each in randDigits hex digits, zeros where
// req.Rand is short (as balancing.Run reads a nil source). Every dispatch
// carries them, since Go does not know the pool's strategy before the
// script runs; one string costs waterfill, which ignores them, less than
// 2n arguments would. A script reads a number with tonumber(s, 16), exact
// below 2^53. It fails on a number of 2^53 or more.
//
// The string goes as a []byte, which go-redis writes as it writes a
// string: made in place, 8 digits a step (hexDigits8), it is neither copied
// nor grown.
func appendRand(args []any, req dispatch.DispatchRequest) ([]any, error) {
	n := 2 * len(req.Orders)
	// Number i is the 14 low digits of the 16 written at 2 + 14i - 2,
	// whose 2 high digits (zeros below 2^56) the number before it then
	// overwrites: the numbers are written last first, into 2 bytes more
	// than the string.
	b := make([]byte, 2+n*randDigits)
	rnd := req.Rand[:min(n, len(req.Rand))]
	for i := n - 1; i >= 0; i-- {
		var r uint64
		if i < len(rnd) {
			r = rnd[i]
		}
		if r >= maxRand {
			return nil, fmt.Errorf("redis: random number %d of the batch is not below 2^53", r)
		}
		d := b[i*randDigits : i*randDigits+16]
		binary.BigEndian.PutUint64(d, hexDigits8(uint32(r>>32)))
		binary.BigEndian.PutUint64(d[8:], hexDigits8(uint32(r)))
	}
	return append(args, b[2:]), nil
}

// hexDigits8 is the 8 hex digits of v, the first in the high byte.
func hexDigits8(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	// a nibble of 10 or more carries into bit 4 when 6 is added: it
	// takes 'a' - '0' - 10 more
	letters := (x + 0x0606060606060606) >> 4 & 0x0101010101010101
	return x + 0x3030303030303030 + letters*('a'-'0'-10)
}
