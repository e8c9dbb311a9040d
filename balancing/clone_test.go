package balancing_test

import (
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestCloneSharesNoState(t *testing.T) {
	cands := []balancing.Candidate{{ID: "A", Weight: 5}, {ID: "B", Weight: 1}, {ID: "C", Weight: 1}}
	for _, s := range balancing.Strategies() {
		if !s.Stateful {
			continue
		}
		orig := s.New()
		first := orig.Pick(cands, 0, 0)
		c := balancing.Clone(orig)
		c.Pick(cands, 0, 0)
		c.Pick(cands, 0, 0)
		// The original, untouched by the clone's picks, picks as a fresh
		// twin that made the same first pick would.
		twin := balancing.Clone(orig)
		if got, want := orig.Pick(cands, 0, 0), twin.Pick(cands, 0, 0); got != want {
			t.Errorf("%s: after the clone picked, the original picks %d, want %d (first pick %d)", s.Name, got, want, first)
		}
	}
	if _, ok := balancing.Clone(balancing.Random{}).(balancing.Random); !ok {
		t.Error("Clone of a stateless picker: want it returned as it is")
	}
}
