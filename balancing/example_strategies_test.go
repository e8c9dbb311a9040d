package balancing_test

import (
	"fmt"
	"strings"

	"github.com/dispatcher/dispatcher/balancing"
)

// nginx's smooth weighted round robin, weights 5, 1 and 1 (seed 001's table).
func ExampleSmoothWeightedRoundRobin() {
	cands := []balancing.Candidate{{ID: "A", Weight: 5}, {ID: "B", Weight: 1}, {ID: "C", Weight: 1}}
	p := &balancing.SmoothWeightedRoundRobin{}
	fmt.Println(strings.Join(balancing.Run(p, cands, 7, nil), " "))
	fmt.Println(p.Current)
	// Output:
	// A A B A C A A
	// map[A:0 B:0 C:0]
}

// Seed 001's weighted round robin: each Scale's turns in one block.
func ExampleWeightedRoundRobin() {
	cands := []balancing.Candidate{
		{ID: "A", Weight: 4}, {ID: "B", Weight: 6}, {ID: "C", Weight: 3}, {ID: "D", Weight: 2}, {ID: "E", Weight: 5},
	}
	p := &balancing.WeightedRoundRobin{}
	fmt.Println(strings.Join(balancing.Run(p, cands, 20, nil), ""), p.Counter)
	// Output: AAAABBBBBBCCCDDEEEEE 20
}

// Weighted waterfill: the order goes where (Count+1)/Weight is lowest.
func ExampleWeightedWaterfill() {
	cands := []balancing.Candidate{{ID: "A", Count: 1, Weight: 2}, {ID: "B", Count: 5, Weight: 3}}
	fmt.Println(balancing.Run(balancing.WeightedWaterfill{}, cands, 6, nil), cands)
	// Output: [A A A B B A] [A=5/2 B=7/3]
}

// A Scale that is full or draining sheds its keys to the next Scales on the
// ring; the other keys stay put.
func ExampleRing() {
	r := balancing.NewRing(balancing.DefaultVNodes, "S1", "S2", "S3")
	notS1 := func(id string) bool { return id != "S1" }
	for _, key := range []string{"order-1", "order-4", "order-5"} {
		all, _ := r.Lookup(key, nil)
		shed, _ := r.Lookup(key, notS1)
		fmt.Println(key, all, shed)
	}
	// Output:
	// order-1 S1 S3
	// order-4 S1 S2
	// order-5 S2 S2
}

// Dubbo's warm-up: weight 100 over a 10-minute window.
func ExampleSlowStartWeight() {
	for _, s := range []int64{0, 60, 300, 540, 600} {
		fmt.Print(balancing.SlowStartWeight(100, s*1000, 600_000), " ")
	}
	fmt.Println()
	// Output: 1 10 50 90 100
}
