package redis

import (
	"encoding/binary"
	"encoding/hex"
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
// string: made to size and written in place, it is neither copied nor grown.
func appendRand(args []any, req dispatch.DispatchRequest) ([]any, error) {
	n := 2 * len(req.Orders)
	b := make([]byte, n*randDigits)
	rnd := req.Rand[:min(n, len(req.Rand))]
	var raw [8]byte
	for i, r := range rnd {
		if r >= maxRand {
			return nil, fmt.Errorf("redis: random number %d of the batch is not below 2^53", r)
		}
		// below 2^56, the first byte is 0: the 7 others are the 14 digits
		binary.BigEndian.PutUint64(raw[:], r)
		hex.Encode(b[i*randDigits:], raw[1:])
	}
	for i := len(rnd) * randDigits; i < len(b); i++ {
		b[i] = '0'
	}
	return append(args, b), nil
}
