package redis

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestPackBatchID packs ids of each form and unpacks them again: a
// canonical UUID takes 23 characters, '.' and the base64url of its bytes;
// any other id stays as it is, but one that begins with '.' gets another;
// no two ids share a packed form, and none holds '|' or ','.
func TestPackBatchID(t *testing.T) {
	ids := []string{
		"0190d1a2-7b3c-7def-8123-456789abcdef", "00000000-0000-0000-0000-000000000000",
		"ffffffff-ffff-ffff-ffff-ffffffffffff",
		"0190D1A2-7B3C-7DEF-8123-456789ABCDEF", // not canonical: kept
		"0190d1a2-7b3c-7def-8123-456789abcde", "0190d1a27b3c7def8123456789abcdef", "b-1", "",
		".AZDRontjfe-BI0VniavN7w", "..x", ".",
	}
	for range 200 {
		ids = append(ids, uuid.Must(uuid.NewV7()).String(), uuid.NewString())
	}
	seen := map[string]string{}
	for _, id := range ids {
		p := packBatchID(id)
		if back := unpackBatchID(p); back != id {
			t.Errorf("unpack(pack(%q)) = %q (packed %q)", id, back, p)
		}
		if other, ok := seen[p]; ok && other != id {
			t.Errorf("%q and %q both pack to %q", id, other, p)
		}
		seen[p] = id
		if strings.ContainsAny(p, "|,") {
			t.Errorf("pack(%q) = %q holds '|' or ','", id, p)
		}
		_, isUUID := canonicalUUID(id)
		switch {
		case isUUID:
			if len(p) != 23 || p[0] != '.' {
				t.Errorf("pack(%q) = %q, want '.' and 22 characters", id, p)
			}
		case strings.HasPrefix(id, "."):
			if p != "."+id {
				t.Errorf("pack(%q) = %q, want %q", id, p, "."+id)
			}
		case p != id:
			t.Errorf("pack(%q) = %q, want it as it is", id, p)
		}
	}
}

// TestStrategyCodes holds the code of each strategy that named batches'
// records keep (strategyCodes): records outlive a build, so a code must
// never change; a new strategy goes at the end of balancing's registry and
// takes the next code.
func TestStrategyCodes(t *testing.T) {
	want := "waterfill a weighted-waterfill b random c weighted-random d round-robin e " +
		"weighted-round-robin f smooth-weighted-round-robin g weighted-response-time h " +
		"least-connections i power-of-two j consistent-hash k"
	got := strings.Join(strategyCodes(), " ")
	if !strings.HasPrefix(got, want) {
		t.Errorf("strategy codes %q, want them to begin with %q", got, want)
	}
}
