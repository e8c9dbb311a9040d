package redis

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"

	"github.com/google/uuid"

	"github.com/dispatcher/dispatcher/dispatch"
)

// hexDigits are the hexadecimal digits, by value.
const hexDigits = "0123456789abcdef"

// Batch ids as Redis keeps them (layout 6). The service names a batch by a
// UUID (dispatch.Config.NewID), 36 characters, which a batch of one stores
// three times: in its batch record's field, its order's record and its
// queue entry. packBatchID keeps a UUID in canonical form (lowercase,
// 8-4-4-4-12) as '.' and the base64url of its 16 bytes, 23 characters;
// an id that begins with '.' (which dispatch.ValidID refuses, so only a
// store caller could send one) gets '.' once more, as base64url holds no
// '.'; any other id is kept as it is. The three forms cannot meet, so
// packBatchID is one-to-one and unpackBatchID its inverse. The Lua only
// stores and compares batch ids; Go packs each one it sends and unpacks
// each one it reads back (dispatchArgs, decodeDispatch, GetBatch,
// decodeOrder).

// packBatchID returns the form of batch id id that Redis keeps.
func packBatchID(id string) string {
	if strings.HasPrefix(id, ".") {
		return "." + id
	}
	u, ok := canonicalUUID(id)
	if !ok {
		return id
	}
	return "." + base64.RawURLEncoding.EncodeToString(u[:])
}

// unpackBatchID returns the batch id of s, a form packBatchID made.
func unpackBatchID(s string) string {
	if strings.HasPrefix(s, "..") {
		return s[1:]
	}
	if len(s) != 23 || s[0] != '.' {
		return s
	}
	raw, err := base64.RawURLEncoding.DecodeString(s[1:])
	if err != nil {
		return s
	}
	u, err := uuid.FromBytes(raw)
	if err != nil {
		return s
	}
	return u.String()
}

// canonicalUUID returns the UUID of id if id is one in the form
// uuid.UUID.String writes (lowercase 8-4-4-4-12), which alone
// unpackBatchID gives back as it was.
func canonicalUUID(id string) (uuid.UUID, bool) {
	if len(id) != 36 {
		return uuid.UUID{}, false
	}
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return uuid.UUID{}, false
	}
	return u, true
}

// Batches named after their first order (layout 7). A batch whose window
// is the retention (it has no Idempotency-Key, whose TTL may be longer)
// lives no longer than its first order's record, which stays at least the
// retention after the batch was made (an order leaves the retention after
// it finished, and it finished after it was made). Such a batch can then
// be found through that record: the Store names it "<first order
// id>:<tag>", the tag tagLen random hexadecimal digits, and the order's
// record holds the tag, the time and the strategy, or for a batch of
// several orders the batch ref that its orders share does, with the
// assignments beside it (records.lua). The tag tells this batch from an
// earlier one of the same order id, and from another request for that
// order id sent at the same moment, which must fail as EXISTS, not be
// taken for a re-send of this one. The Service asks BatchID before it
// calls Dispatch, as the id must be known when no answer comes
// (dispatch.IndeterminateError). Any other id is kept as before: its own
// record, under fieldBatch, and a retention queue entry.

// tagLen is the length of a named batch's tag.
const tagLen = 12

// BatchID names the batch of req after its first order
// (dispatch.BatchNamer), or returns "" for one that cannot live in its
// order's record: with an Idempotency-Key, with a retention shorter than a
// batch record's floor (batchFloor; at most maxFloor), or whose first
// order id is too long for the name to be an id. The Service sends valid
// order ids (dispatch.ValidID), so the name, a valid id, ':' and hex
// digits, is valid but for its length, the one thing checked here (a
// caller of the Store's own that sends an invalid first id gets an invalid
// name).
func (s *Store) BatchID(req dispatch.DispatchRequest) string {
	if !s.nameable(&req) {
		return ""
	}
	first := req.Orders[0].ID
	if len(first)+1+tagLen > dispatch.MaxIDLen {
		return ""
	}
	var b strings.Builder
	b.Grow(len(first) + 1 + tagLen)
	b.WriteString(first)
	b.WriteByte(':')
	for r, i := rand.Uint64(), 0; i < tagLen; i, r = i+1, r>>4 {
		b.WriteByte(hexDigits[r&15])
	}
	return b.String()
}

// nameable reports whether the batch of req can live in its first
// order's record: it has orders and no Idempotency-Key, and the store's
// retention outlasts a batch record's floor.
func (s *Store) nameable(req *dispatch.DispatchRequest) bool {
	return req.IdempotencyKey == "" && s.retention >= maxFloor && len(req.Orders) > 0
}

// namedTag returns the tag of req's batch id if it is a name BatchID
// gives (and would give for req), which Redis keeps in the order's record,
// and whether it is.
func (s *Store) namedTag(req *dispatch.DispatchRequest) (string, bool) {
	id := req.BatchID
	if !s.nameable(req) {
		return "", false
	}
	first := req.Orders[0].ID
	if len(id) != len(first)+1+tagLen || id[len(first)] != ':' || id[:len(first)] != first {
		return "", false
	}
	tag := id[len(first)+1:]
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return tag, true
}
