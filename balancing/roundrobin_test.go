package balancing_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// reloadState passes a strategy's state through JSON into a fresh value, as a
// store does between two batches served by different replicas.
func reloadState[T any](tb testing.TB, state *T) *T {
	tb.Helper()
	b, err := json.Marshal(state)
	if err != nil {
		tb.Fatalf("marshal %T: %v", state, err)
	}
	fresh := new(T)
	if err := json.Unmarshal(b, fresh); err != nil {
		tb.Fatalf("unmarshal %T: %v", state, err)
	}
	return fresh
}

// batchStep is one batch of a sequence in which Scales come and go: the
// candidates of the batch, its size, and the picks it should make.
type batchStep struct {
	cands string
	m     int
	want  string
}

// runSteps runs the steps in order with one picker, each batch on fresh
// candidates, and reports every batch whose picks differ.
func runSteps(t *testing.T, p balancing.Picker, steps []batchStep) {
	t.Helper()
	for i, s := range steps {
		if got := runString(t, p, s.cands, s.m, nil); got != s.want {
			t.Errorf("batch %d over %q: got %q, want %q", i, s.cands, got, s.want)
		}
	}
}

func TestRoundRobin(t *testing.T) {
	tests := []struct {
		name  string
		last  string
		cands string
		m     int
		want  string
	}{
		{name: "from the start", cands: "A B C", m: 7, want: "A B C A B C A"},
		{name: "ignores weight and load", cands: "A=9/9 B C/5", m: 4, want: "A B C A"},
		{name: "continues after Last", last: "B", cands: "A B C", m: 4, want: "C A B C"},
		{name: "Last gone: the next compId after it", last: "B", cands: "A C D", m: 3, want: "C D A"},
		{name: "Last beyond every compId wraps", last: "Z", cands: "A B", m: 2, want: "A B"},
		{name: "byte order", last: "a", cands: "B Z a b", m: 3, want: "b B Z"},
		{name: "single Scale", last: "A", cands: "A", m: 3, want: "A A A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &balancing.RoundRobin{Last: tt.last}
			if got := runString(t, p, tt.cands, tt.m, nil); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRoundRobinAcrossReplicas persists and reloads the state between
// batches, as replicas sharing a store do: the cycle goes on.
func TestRoundRobinAcrossReplicas(t *testing.T) {
	p := &balancing.RoundRobin{}
	var got []string
	for _, m := range []int{2, 2, 1, 4} {
		got = append(got, runString(t, p, "A B C", m, nil))
		p = reloadState(t, p)
	}
	if g, want := strings.Join(got, " "), "A B C A B C A B C"; g != want {
		t.Errorf("got %q, want %q", g, want)
	}
}

func TestRoundRobinScalesComeAndGo(t *testing.T) {
	runSteps(t, &balancing.RoundRobin{}, []batchStep{
		{cands: "A B C", m: 2, want: "A B"},
		{cands: "A C D", m: 3, want: "C D A"}, // B left, D joined
		{cands: "A B C D", m: 3, want: "B C D"},
		{cands: "A", m: 2, want: "A A"},
	})
}

func TestWeightedRoundRobin(t *testing.T) {
	tests := []struct {
		name    string
		counter uint64
		cands   string
		m       int
		want    string
	}{
		{name: "seed 001", cands: "A/4 B/6 C/3 D/2 E/5", m: 20, want: "AAAA BBBBBB CCC DD EEEEE"},
		{name: "wraps", counter: 18, cands: "A/4 B/6 C/3 D/2 E/5", m: 6, want: "EE AAAA"},
		{name: "equal weights", cands: "A B C", m: 4, want: "A B C A"},
		{name: "ignores load", cands: "A=100/2 B/1", m: 3, want: "AA B"},
		{name: "single Scale", counter: 41, cands: "A/3", m: 2, want: "AA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &balancing.WeightedRoundRobin{Counter: tt.counter}
			if got := runsOf(balancing.Run(p, parseCands(t, tt.cands), tt.m, nil)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if want := tt.counter + uint64(tt.m); p.Counter != want {
				t.Errorf("Counter %d, want %d", p.Counter, want)
			}
		})
	}
}

// TestWeightedRoundRobinScalesComeAndGo: the counter runs on, modulo the
// total weight of the Scales eligible at each pick.
func TestWeightedRoundRobinScalesComeAndGo(t *testing.T) {
	p := &balancing.WeightedRoundRobin{}
	runSteps(t, p, []batchStep{
		{cands: "A/4 B/6 C/3 D/2 E/5", m: 12, want: "A A A A B B B B B B C C"},
		// Counter 12 of the new total 17 (A 4, B 10, D 12, E 17): E.
		{cands: "A/4 B/6 D/2 E/5", m: 6, want: "E E E E E A"},
		// Counter 18 of 20 again: E, then the cycle restarts.
		{cands: "A/4 B/6 C/3 D/2 E/5", m: 3, want: "E E A"},
	})
	p = reloadState(t, p)
	if p.Counter != 21 {
		t.Errorf("Counter after reload %d, want 21", p.Counter)
	}
}
