package redis

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/dispatcher/dispatcher/balancing"
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

// drawsRandom reports whether strategy draws random numbers
// (balancing.Strategy.Random).
func drawsRandom(strategy string) bool {
	sp, ok := balancing.Lookup(strategy)
	return ok && sp.Random
}

// errNoRand is the script's answer (DISPATCH NORAND, dispatch.lua) to a
// batch sent without random numbers to a pool whose strategy draws: it
// changed nothing of the batch, and the store sends it again with them.
var errNoRand = errors.New("redis: the pool's strategy draws random numbers, and the call sent none")

// codeNoRand is the code of errNoRand in the script's reply.
const codeNoRand = "NORAND"

// resent reports whether v and err, the reply of Redis to a function
// call, refuse the whole call with NORAND: a dispatch's, or a
// dispatch_many's whose first batch was refused (and so every batch, left
// unrun). Such a call wrote nothing of its batches; it is not answered
// but sent again with the random numbers, and that call's answer is the
// one confirmed (answered). A batch refused after its first ran is not
// resent here: the call's WAIT covers its earlier batches.
func resent(v any, err error) bool {
	if err != nil {
		se, ok := asScriptError(err)
		return ok && se.code == codeNoRand
	}
	rs, _ := v.([]any)
	if len(rs) == 0 {
		return false
	}
	e, _ := rs[0].([]any)
	if len(e) != 2 || asString(e[0]) != "error" {
		return false
	}
	se, ok := parseScriptError(asString(e[1]))
	return ok && se.code == codeNoRand
}

// appendRand appends the random numbers of the orders to args as one
// string: two per order, each in randDigits hex digits, those of
// req.Randoms (zeros where they are short, as balancing.Run reads a nil
// source). Without draws (the store believes the pool's strategy draws
// none, poolHeads) it appends "" and draws nothing: a batch of 100
// spares Go 200 numbers and their encoding, and Redis 2.8 KB to read and
// hash; dispatch.lua answers NORAND if the strategy draws after all. A
// script reads a number with tonumber(s, 16), exact below 2^53. It fails
// on a number of 2^53 or more.
//
// The string goes as a []byte, which go-redis writes as it writes a
// string: made to size and written in place, it is neither copied nor grown.
func appendRand(args []any, req dispatch.DispatchRequest, draws bool) ([]any, error) {
	if !draws {
		return append(args, ""), nil
	}
	n := 2 * len(req.Orders)
	b := make([]byte, n*randDigits)
	rnd := req.Randoms()
	var raw [8]byte
	for i := range n {
		var r uint64
		if i < len(rnd) {
			r = rnd[i]
		}
		if r >= maxRand {
			return nil, fmt.Errorf("redis: random number %d of the batch is not below 2^53", r)
		}
		// below 2^56, the first byte is 0: the 7 others are the 14 digits
		binary.BigEndian.PutUint64(raw[:], r)
		hex.Encode(b[i*randDigits:], raw[1:])
	}
	return append(args, b), nil
}
