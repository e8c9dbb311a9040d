package balancing_test

import (
	"strconv"
	"strings"

	"github.com/dispatcher/dispatcher/balancing"
)

// parseLoads reads "S1=1 S2=5 S3=12" into loads, in the order given.
func parseLoads(s string) []balancing.Load {
	var loads []balancing.Load
	for _, f := range strings.Fields(s) {
		id, count, ok := strings.Cut(f, "=")
		if !ok {
			panic("parseLoads: no '=' in " + f)
		}
		n, err := strconv.ParseInt(count, 10, 64)
		if err != nil {
			panic("parseLoads: " + err.Error())
		}
		loads = append(loads, balancing.Load{ID: id, Count: n})
	}
	return loads
}

// formatLoads writes loads as "S1=13 S2=14 S3=13".
func formatLoads(loads []balancing.Load) string {
	parts := make([]string, len(loads))
	for i, l := range loads {
		parts[i] = l.String()
	}
	return strings.Join(parts, " ")
}

// waterfillRanks returns the ranks Waterfill picks for m orders over r.
func waterfillRanks(r balancing.Ranked, m int) []int {
	var ranks []int
	balancing.Waterfill(r, m, func(rank int) bool {
		ranks = append(ranks, rank)
		return true
	})
	return ranks
}

// addOrders raises the Count of each load whose ID is in ids by one per
// occurrence.
func addOrders(loads []balancing.Load, ids []string) {
	at := make(map[string]int, len(loads))
	for i, l := range loads {
		at[l.ID] = i
	}
	for _, id := range ids {
		loads[at[id]].Count++
	}
}
