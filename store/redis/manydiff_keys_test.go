package redis_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
)

// compare fails unless the two stores of d hold the same keyspace and,
// every fourth step, answer alike: the Scales, the pool and its
// counters, each Scale's orders in one page (and every eighth step in
// pages of a size drawn at random), orders and batches (those of the
// walk's last 40, and all at its last step). (A store's reads are its keyspace's, but for what the
// Store keeps in Go, so the keyspace is the check of every step.)
func (d *manyDiff) compare() {
	ctx := context.Background()
	d.sameKeyspace()
	if d.step%4 != 3 {
		return
	}
	d.both("ListScales", func(s *redis.Store) (string, error) {
		scales, _, err := s.ListScales(ctx, "p", dispatch.Page{Limit: dispatch.MaxLimit})
		return fmt.Sprintf("%+v", scales), err
	})
	d.both("Snapshot", func(s *redis.Store) (string, error) {
		snap, err := s.Snapshot(ctx, "p", 100, 4)
		return fmt.Sprintf("%+v", snap), err
	})
	for _, id := range d.scales {
		whole, _ := d.bothStores("ListScaleOrders "+id, func(s dispatch.Store) (string, error) {
			return scaleOrdersWhole(s, id)
		})
		if d.step%8 != 7 {
			continue
		}
		// (at most some 50 pages)
		limit := max([]int{1, 7, 100}[d.rng.IntN(3)], strings.Count(whole, "\n")/50)
		d.bothStores(fmt.Sprintf("ListScaleOrders %s by %d", id, limit), func(s dispatch.Store) (string, error) {
			_, got, err := scaleOrdersPaged(s, id, limit, 5000, whole)
			return got, err
		})
	}
	orders, bids := d.orders, d.bids
	if d.step != manySteps-1 {
		orders, bids = orders[max(0, len(orders)-40):], bids[max(0, len(bids)-40):]
	}
	d.both("GetOrder", func(s *redis.Store) (string, error) {
		var b strings.Builder
		for _, id := range orders {
			o, err := s.GetOrder(ctx, "p", id, d.now)
			fmt.Fprintf(&b, "%s %v\n", ordersLine([]dispatch.Order{o}), errText(err))
		}
		return b.String(), nil
	})
	d.both("GetBatch", func(s *redis.Store) (string, error) {
		var b strings.Builder
		for _, id := range bids {
			bt, err := s.GetBatch(ctx, "p", id, d.now)
			fmt.Fprintf(&b, "%+v %v\n", bt, errText(err))
		}
		return b.String(), nil
	})
}

// sameKeyspace fails unless the two databases hold the same keys with the
// same values and the same expiry (set or not). One thing legitimately
// differs: how far the sweep of expired records has gone. A call of
// several batches sweeps once per batch applied, at its end and at the
// time of its last batch applied (lua/dispatch_many.lua); separate calls
// sweep after each batch applied, at its own time, and only once
// something is due then (meta's sw). So the two may have removed
// different numbers of expired records and know the queues' heads
// differently (sw). When the keyspaces differ, both stores sweep at the
// step's time until nothing expired is left (an empty PutPool sweeps
// once), and then they must be the same.
func (d *manyDiff) sameKeyspace() {
	d.t.Helper()
	a, b := keyspaceOf(d.t, d.cm), keyspaceOf(d.t, d.co)
	for round := 0; !maps.Equal(a, b) && round < 12; round++ {
		if round == 0 {
			d.drained++
		}
		d.both("PutPool (a sweep)", func(s *redis.Store) (string, error) {
			_, _, err := s.PutPool(context.Background(), "p", dispatch.PoolSpec{}, d.now)
			return "", err
		})
		a, b = keyspaceOf(d.t, d.cm), keyspaceOf(d.t, d.co)
	}
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if b[k] != a[k] {
			d.t.Fatalf("step %d at %s: key %s differs:\n%s", d.step, d.now.Format(time.StampMilli), k, lineDiff(a[k], b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d.t.Fatalf("step %d: key %s only in one: %s", d.step, k, v)
		}
	}
}

// lineDiff lists the lines of a (many) that b (one) lacks, and those of b
// that a lacks, a dozen of each at most: a hash's fields.
func lineDiff(a, b string) string {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for _, side := range []struct {
		name      string
		have, not []string
	}{{"many", as, bs}, {"one ", bs, as}} {
		n := 0
		for _, l := range side.have {
			if !slices.Contains(side.not, l) && n < 12 {
				fmt.Fprintf(&out, "%s %s\n", side.name, l)
				n++
			}
		}
	}
	return out.String()
}

// keyspaceOf reads every key of c's database but a call's reply key
// (":call:" and a random token, which PutPool and the other calls with a
// token leave for their resend window: the two stores draw other tokens)
// into one comparable line each: its type, whether it expires, and its
// value (a hash's and a set's members sorted; a sorted set's and a list's
// in order).
func keyspaceOf(t interface{ Fatalf(string, ...any) }, c goredis.UniversalClient) map[string]string {
	ctx := context.Background()
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return strings.Contains(k, ":call:") })
	// (two round trips: the types and expiries, then the values)
	types, ttls := make([]*goredis.StatusCmd, len(keys)), make([]*goredis.DurationCmd, len(keys))
	if _, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			types[i], ttls[i] = p.Type(ctx, k), p.PTTL(ctx, k)
		}
		return nil
	}); err != nil {
		t.Fatalf("TYPE, PTTL: %v", err)
	}
	vals := make([]goredis.Cmder, len(keys))
	if _, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			switch types[i].Val() {
			case "hash":
				vals[i] = p.HGetAll(ctx, k)
			case "zset":
				vals[i] = p.ZRangeWithScores(ctx, k, 0, -1)
			case "list":
				vals[i] = p.LRange(ctx, k, 0, -1)
			case "set":
				vals[i] = p.SMembers(ctx, k)
			case "string":
				vals[i] = p.Get(ctx, k)
			default:
				t.Fatalf("key %s of type %s", k, types[i].Val())
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("reading the keys: %v", err)
	}
	out := make(map[string]string, len(keys))
	for i, k := range keys {
		var b strings.Builder
		fmt.Fprintf(&b, "%s expires=%v", types[i].Val(), ttls[i].Val() > 0)
		switch v := vals[i].(type) {
		case *goredis.MapStringStringCmd:
			m := v.Val()
			for _, f := range slices.Sorted(maps.Keys(m)) {
				b.WriteString("\n  ")
				b.WriteString(f)
				b.WriteString(" = ")
				b.WriteString(m[f])
			}
		case *goredis.StringSliceCmd:
			m := v.Val()
			if types[i].Val() == "set" {
				slices.Sort(m)
			}
			fmt.Fprint(&b, " ", m)
		case *goredis.ZSliceCmd:
			fmt.Fprint(&b, " ", v.Val())
		case *goredis.StringCmd:
			b.WriteString(" " + v.Val())
		}
		out[k] = b.String()
	}
	return out
}

// finish completes some of the orders outstanding (all-or-none: an order
// that has left would fail the call), now and then most of them, which a
// later sweep removes in several passes of SWEEP; or cancels one, or one
// that has left (ErrOrderNotFound).
func (d *manyDiff) finish() {
	ctx := context.Background()
	var out []string
	for _, id := range d.scales {
		os, _, err := d.one.ListScaleOrders(ctx, "p", id, dispatch.Page{Limit: dispatch.MaxLimit})
		if err != nil {
			d.t.Fatal(err)
		}
		for _, o := range os {
			out = append(out, o.ID)
		}
	}
	if len(out) == 0 || d.rng.IntN(4) == 0 {
		if len(d.orders) == 0 {
			return
		}
		id := d.orders[d.rng.IntN(len(d.orders))]
		d.both("Cancel "+id, func(s *redis.Store) (string, error) {
			o, err := s.Cancel(ctx, "p", id, d.now)
			return fmt.Sprintf("%+v", o), err
		})
		return
	}
	var cs []dispatch.Completion
	for _, i := range d.rng.Perm(len(out))[:min(len(out), 1+d.rng.IntN([]int{50, 100, 400}[d.rng.IntN(3)]))] {
		cs = append(cs, dispatch.Completion{OrderID: out[i], DurationMs: 3})
	}
	d.both(fmt.Sprintf("Complete %d", len(cs)), func(s *redis.Store) (string, error) {
		os, n, err := s.Complete(ctx, "p", cs, d.now)
		return fmt.Sprintf("%+v %d", os, n), err
	})
}

func (d *manyDiff) heartbeats() {
	for _, id := range d.scales {
		if d.silent[id] {
			continue
		}
		d.both("Heartbeat "+id, func(s *redis.Store) (string, error) {
			sc, err := s.Heartbeat(context.Background(), "p", id, nil, d.now)
			return fmt.Sprintf("%+v", sc), err
		})
	}
}

// kindOf names the dispatch error in err.
func kindOf(err error) string {
	for _, k := range []struct {
		name string
		err  error
	}{
		{"exists", dispatch.ErrOrderExists}, {"idempotency", dispatch.ErrIdempotencyMismatch},
		{"duplicate", dispatch.ErrDuplicateOrder}, {"noeligible", dispatch.ErrNoEligibleScale},
		{"range", dispatch.ErrOutOfRange},
	} {
		if !errors.Is(err, k.err) {
			continue
		}
		switch msg := err.Error(); {
		case strings.Contains(msg, "the most a Scale holds"):
			return "cap"
		case strings.Contains(msg, "have room for"):
			return "noroom"
		}
		return k.name
	}
	return "other: " + err.Error()
}

// tailChunks adds up the tail chunk numbers of every Scale of many.
func (d *manyDiff) tailChunks() int {
	n := 0
	for f, v := range ownFields(d.t, d.cm, "p") {
		if !strings.Contains(f, " ") {
			ct, _ := strconv.ParseInt(strings.SplitN(v, "|", 2)[0], 16, 64)
			n += int(ct)
		}
	}
	return n
}

// lapsedCount counts many's Scales recorded lapsed.
func (d *manyDiff) lapsedCount() int64 {
	n, err := d.cm.ZCard(context.Background(), poolKey("p", "lapsed")).Result()
	if err != nil {
		d.t.Fatal(err)
	}
	return n
}
