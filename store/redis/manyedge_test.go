package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
)

// TestManyCallTailsAtTheEdge gives the own index's tail of a pool's one
// Scale exactly 256 bytes (own.lua's OWN) in the middle of a DispatchMany
// call, where the call holds the tail in Lua (ownPend), and then one more
// batch: a token seals a tail whose value is 256 bytes, an id one whose
// entries are, and neither seals one a byte short. Each call is three
// batches: a free one (a token or ids, so that ownPend has read the tail
// for a token or for ids), ids that fill the tail to the edge, and the
// probe; another Redis gets the same batches one Dispatch call each
// (ownAppendTok, ownAppend), and the replies and the keyspaces must agree.
// The filler's ids are sized from that Redis's tail after the batch
// before, so every round lands on an edge (or a byte short of it), which
// random batches (TestManyCallSharesTails, TestManyLikeOne) rarely do.
func TestManyCallTailsAtTheEdge(t *testing.T) {
	ctx := context.Background()
	ca, cb, many, each := manyAndEach(t)
	rng := rand.New(rand.NewPCG(28, 1))
	now := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	for _, s := range []*redis.Store{many, each} {
		if _, _, err := s.PutPool(ctx, "p", dispatch.PoolSpec{}, now); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, now); err != nil {
			t.Fatal(err)
		}
	}
	const own = 256
	seq := 0
	// batch makes a batch of the given ids' lengths (at least 8 each),
	// named after its first order (one token) or by a UUID (one id each).
	batch := func(lens []int, named bool) dispatch.DispatchRequest {
		req := dispatch.DispatchRequest{Pool: "p", Now: now, MaxCost: dispatch.DefaultMaxCost, UniqueIDs: true}
		for _, n := range lens {
			seq++
			id := fmt.Sprintf("e%d-", seq)
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: id + strings.Repeat("x", n-len(id))})
		}
		if named {
			req.BatchID = fmt.Sprintf("%s:%012x", req.Orders[0].ID, seq)
		} else {
			req.BatchID = fmt.Sprintf("0190a1b2-c3d4-7e5f-8a9b-%012x", seq)
		}
		return req
	}
	// tail returns the bytes of the tail's value and of its entries
	// ("ct|cl|p|e,e,…,", as checkOwnIndex reads it).
	tail := func() (int, int) {
		v := ownFields(t, cb, "p")["A"]
		return len(v), len(strings.SplitN(v, "|", 4)[3])
	}
	// filler returns ids of at least 2 orders whose entries ("id,") take
	// need bytes, or nil when need is too small for two.
	filler := func(need int) []int {
		m := max(2, (need+59)/60)
		if need < 9*m {
			return nil
		}
		lens := make([]int, m)
		for i := range lens {
			lens[i] = need/m - 1
		}
		lens[m-1] += need % m
		return lens
	}
	seen := map[string]int{}
	for round := 0; round < 400 && len(seen) < 8; round++ {
		first := batch([]int{8 + rng.IntN(20), 8 + rng.IntN(20)}, rng.IntN(2) == 0)
		reqs := []dispatch.DispatchRequest{first}
		var want []string
		send := func(req dispatch.DispatchRequest) {
			b, replayed, err := each.Dispatch(ctx, req)
			want = append(want, fmt.Sprintf("%+v %v %v", b, replayed, err))
		}
		// compare sends reqs to many in one call, and compares.
		compare := func() {
			got := many.DispatchMany(ctx, reqs)
			for i := range reqs {
				if g := fmt.Sprintf("%+v %v %v", got[i].Batch, got[i].Replayed, got[i].Err); g != want[i] {
					t.Fatalf("round %d, batch %d:\nmany %s\neach %s", round, i, g, want[i])
				}
			}
			sameKeyspace(t, ca, cb, fmt.Sprintf("round %d", round))
			now = now.Add(time.Second)
		}
		send(first)
		value, entries := tail()
		tok := rng.IntN(2) == 0 // the probe: a token, or ids
		short := rng.IntN(3)    // 0: a byte short of the edge
		need := own - value
		if !tok {
			need = own - entries
		}
		if short == 0 {
			need--
		}
		fill := filler(need)
		if fill == nil {
			compare() // (too near the edge, or past it: the next round goes on from a sealed tail)
			continue
		}
		reqs = append(reqs, batch(fill, false))
		send(reqs[1])
		value, entries = tail()
		edge := value == own
		if !tok {
			edge = entries == own
		}
		if edge != (short != 0) {
			t.Fatalf("round %d: the filler left a tail of %d bytes, %d of entries", round, value, entries)
		}
		reqs = append(reqs, batch([]int{8 + rng.IntN(20), 8 + rng.IntN(20)}, tok))
		send(reqs[2])
		seen[fmt.Sprintf("token %v, first named %v, at the edge %v", tok, first.BatchID[0] == 'e', edge)]++
		compare()
	}
	t.Logf("rounds by kind: %v", seen)
	if len(seen) < 8 {
		t.Fatalf("the rounds should see each kind of edge: %v", seen)
	}
}
