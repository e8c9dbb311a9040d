package redis

import (
	"encoding/base64"
	"strings"

	"github.com/google/uuid"
)

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
