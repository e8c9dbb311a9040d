package redis

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
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
	if !canonicalUUID(id) {
		return id
	}
	var raw [16]byte
	hex.Decode(raw[0:4], []byte(id[0:8]))
	hex.Decode(raw[4:6], []byte(id[9:13]))
	hex.Decode(raw[6:8], []byte(id[14:18]))
	hex.Decode(raw[8:10], []byte(id[19:23]))
	hex.Decode(raw[10:16], []byte(id[24:36]))
	var out [23]byte
	out[0] = '.'
	base64.RawURLEncoding.Encode(out[1:], raw[:])
	return string(out[:])
}

// unpackBatchID returns the batch id of s, a form packBatchID made.
func unpackBatchID(s string) string {
	if strings.HasPrefix(s, "..") {
		return s[1:]
	}
	if len(s) != 23 || s[0] != '.' {
		return s
	}
	var raw [16]byte
	if n, err := base64.RawURLEncoding.Decode(raw[:], []byte(s[1:])); err != nil || n != 16 {
		return s
	}
	h := hex.EncodeToString(raw[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// canonicalUUID reports whether id is a UUID in lowercase 8-4-4-4-12 form.
func canonicalUUID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
