package redis

import (
	"crypto/sha256"

	"github.com/dispatcher/dispatcher/dispatch"
)

// An Idempotency-Key is kept in Redis as short as it can be, since a pool
// keeps one for every keyed batch of DISPATCHER_IDEMPOTENCY_TTL: the first
// 12 bytes of its SHA-256 stand for the key (up to 128 bytes), and 8 bytes
// of the fingerprint's SHA-256 for the request (lua/records.lua's idemBatch).
// A field of 12 bytes takes Redis's smallest allocation for it, and 96 bits
// keep two live keys of one pool from sharing a hash: at 1,000 keyed
// batches a second and a 24 h window, the chance that any two of a day's
// 86 million keys do is about 10^-13. Two requests under one key that
// differ only where 64 bits of their fingerprints agree would replay
// rather than fail with 422: a chance of 2^-64 for a client that reuses a
// key.
const (
	idemKeyBytes = 12
	idemFPBytes  = 8
)

// idemArgs returns the key and fingerprint arguments of lua/dispatch.lua
// for req: both empty for a batch without a key.
func idemArgs(req dispatch.DispatchRequest) (key, fp string) {
	if req.IdempotencyKey == "" {
		return "", ""
	}
	k := sha256.Sum256([]byte(req.IdempotencyKey))
	f := sha256.Sum256([]byte(req.Fingerprint))
	return string(k[:idemKeyBytes]), string(f[:idemFPBytes])
}

// idemMismatch is the error of a key used with another request: the script
// names no key, as it sees only the hash.
func idemMismatch(req dispatch.DispatchRequest) error {
	return errorf(dispatch.ErrIdempotencyMismatch, "Idempotency-Key %q was used with another request", req.IdempotencyKey)
}
