package balancing_test

import (
	"fmt"
	"strings"

	"github.com/dispatcher/dispatcher/balancing"
)

// The seed's worked example: 22 orders over Scales holding 1, 5 and 12.
func ExampleWaterfillIDs() {
	loads := []balancing.Load{{ID: "S1", Count: 1}, {ID: "S2", Count: 5}, {ID: "S3", Count: 12}}
	fmt.Println(strings.Join(balancing.WaterfillIDs(loads, 22), " "))
	// Output: S1 S1 S1 S1 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S2 S1 S3 S2
}

// Waterfill reports ranks into the sorted view; the caller applies them.
func ExampleWaterfill() {
	s := balancing.SortLoads([]balancing.Load{{ID: "S3", Count: 12}, {ID: "S1", Count: 1}, {ID: "S2", Count: 5}})
	after := map[string]int64{}
	for _, l := range s {
		after[l.ID] = l.Count
	}
	n := balancing.Waterfill(s, 22, func(rank int) bool {
		after[s[rank].ID]++
		return true
	})
	fmt.Println(n, "orders:", after)
	// Output: 22 orders: map[S1:13 S2:14 S3:13]
}

// The table an operator sees before the worked example's batch.
func ExampleTable() {
	s := balancing.SortLoads([]balancing.Load{{ID: "S1", Count: 1}, {ID: "S2", Count: 5}, {ID: "S3", Count: 12}})
	compIDs, dispatchCounts := balancing.Table(s)
	fmt.Println(compIDs, dispatchCounts)
	// Output: [S1 S2 S3] [4 14 2147483647]
}
