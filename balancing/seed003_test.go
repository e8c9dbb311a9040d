package balancing_test

import (
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// seed003Server is seed 003's C# Server.
type seed003Server struct {
	name          string
	weight        int
	currentWeight int
}

// seed003LoadBalancer is a faithful port of seed 003's C# LoadBalancer,
// presented there as nginx's smooth weighted round robin.
type seed003LoadBalancer struct {
	servers     []*seed003Server
	currentIdx  int
	totalWeight int
}

func newSeed003LoadBalancer(servers []*seed003Server) *seed003LoadBalancer {
	lb := &seed003LoadBalancer{servers: servers, currentIdx: -1}
	for _, s := range servers {
		lb.totalWeight += s.weight
	}
	return lb
}

// next is the seed's Next: it visits the servers in turn, adding weight only
// to the server it visits, and returns the first whose current weight plus
// weight reaches the total.
func (lb *seed003LoadBalancer) next() *seed003Server {
	for {
		lb.currentIdx = (lb.currentIdx + 1) % len(lb.servers)
		if lb.currentIdx == 0 {
			minWeight := lb.servers[0].currentWeight
			for _, s := range lb.servers {
				minWeight = min(minWeight, s.currentWeight)
			}
			for _, s := range lb.servers {
				s.currentWeight -= minWeight
			}
		}
		s := lb.servers[lb.currentIdx]
		if s.currentWeight+s.weight >= lb.totalWeight {
			s.currentWeight -= lb.totalWeight
			return s
		}
		s.currentWeight += s.weight
	}
}

// seed003Names returns the names of the first m servers the seed's
// LoadBalancer returns for servers of the given weights, named server1, ….
func seed003Names(m int, weights ...int) []string {
	servers := make([]*seed003Server, len(weights))
	for i, w := range weights {
		servers[i] = &seed003Server{name: "server" + string(rune('1'+i)), weight: w}
	}
	lb := newSeed003LoadBalancer(servers)
	names := make([]string, m)
	for i := range names {
		names[i] = lb.next().name
	}
	return names
}

// seed003Printed is the output seed 003 prints for its second example
// (weights 5,1,1, 17 requests), with server1..3 written A, B, C.
const seed003Printed = "A A A A A B C A A A A A A A B C A"

// TestSeed003IsNotSmooth keeps the difference between seed 003's C#
// "smooth weighted round robin" and nginx's, which we follow (DESIGN §3).
//
// The C# Next is not nginx's algorithm. It visits the servers one at a time,
// adds weight only to the server it visits, returns the first whose current
// weight plus weight reaches the total, and at every lap takes the minimum off
// all. Taking the minimum off wipes the credit the light servers gathered, so
// the heavy server is the only one to reach the total: the code as printed
// returns server1 every time, and the output the seed prints, with five
// server1 in a row and then seven, cannot come from it. nginx instead adds
// every server's weight at every pick and gives the order to the highest
// current weight, so a light server's credit grows until it wins, and its
// turns fall between the heavy server's: A A B A C A A.
//
// Smoothness, measured: after k picks a Scale of weight w out of Σw should
// have had k·w/Σw of them. Ours never strays a whole pick from that (for
// 5,1,1 at most 4/7, since picks_i = (k·w_i − current_i)/Σw); the seed's
// printed output is 10/7 ahead for server1 after 5 picks and 2 ahead after
// 14.
func TestSeed003IsNotSmooth(t *testing.T) {
	weights := []int64{5, 1, 1}

	port := seed003Names(70, 5, 1, 1)
	for _, name := range []string{"server2", "server3"} {
		if n := strings.Count(strings.Join(port, " "), name); n != 0 {
			t.Errorf("seed 003's code picked %s %d times in 70, want 0 (it starves the light servers)", name, n)
		}
	}

	ours := balancing.Run(&balancing.SmoothWeightedRoundRobin{}, parseCands(t, "A/5 B/1 C/1"), 17, nil)
	if got := strings.Join(ours, " "); got == seed003Printed {
		t.Fatalf("ours equals seed 003's printed output %q", got)
	}
	if got, want := strings.Join(ours[:7], " "), "A A B A C A A"; got != want {
		t.Errorf("ours: first cycle %q, want %q", got, want)
	}
	if got := maxRun(strings.Fields(seed003Printed), "A"); got < 5 {
		t.Errorf("seed 003 printed: longest run of A is %d, want at least 5", got)
	}

	if d := maxDrift(ours, weights); d != 4 {
		t.Errorf("ours: largest drift from the exact share is %d/7 picks, want 4/7", d)
	}
	if d := maxDrift(strings.Fields(seed003Printed), weights); d < 14 {
		t.Errorf("seed 003 printed: largest drift from the exact share is %d/7 picks, want at least 14/7", d)
	}
}

// maxRun returns the length of the longest run of id in ids.
func maxRun(ids []string, id string) int {
	best, run := 0, 0
	for _, x := range ids {
		if x != id {
			run = 0
			continue
		}
		run++
		best = max(best, run)
	}
	return best
}

// maxDrift returns the largest |picks − k·w/Σw| over every prefix of k picks
// and every Scale, for Scales A, B, C, … of the given weights, in units of
// 1/Σw to keep it exact.
func maxDrift(ids []string, weights []int64) int64 {
	var total int64
	for _, w := range weights {
		total += w
	}
	picks := make([]int64, len(weights))
	var worst int64
	for k, id := range ids {
		picks[id[0]-'A']++
		for i, w := range weights {
			d := picks[i]*total - int64(k+1)*w
			worst = max(worst, d, -d)
		}
	}
	return worst
}
