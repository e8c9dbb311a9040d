package redis

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
)

// outstandingTimeout bounds the Redis reads of one scrape.
const outstandingTimeout = 2 * time.Second

var (
	outstandingDesc = prometheus.NewDesc("dispatcher_outstanding_orders",
		"Orders assigned and neither completed nor cancelled, by pool, read from Redis at each scrape.",
		[]string{"pool"}, nil)
	poolsDesc = prometheus.NewDesc("dispatcher_pools",
		"Pools in Redis, read at each scrape.", nil, nil)
	recordsDesc = prometheus.NewDesc("dispatcher_records",
		"Records a pool keeps in Redis, by kind: orders (outstanding and finished within the retention), "+
			"batches, keys (Idempotency-Keys), read at each scrape; times the bytes per record of "+
			"docs/operations.md, the memory they take.",
		[]string{"pool", "kind"}, nil)
)

// OutstandingCollector returns a collector of the pools in Redis
// (dispatcher_pools), the outstanding orders of each
// (dispatcher_outstanding_orders{pool}) and the records each keeps
// (dispatcher_records{pool,kind}), read at each scrape, so every replica
// reports the same numbers whatever it served.
//
// Each scrape reads at most maxPools pools, the first by name, at four
// O(1) commands each in one pipeline: a pool's outstanding orders are its
// orders dispatched less those completed and cancelled (meta's counters).
// The same reads give dispatcher_records{pool,kind}, which size its memory
// (docs/operations.md, Capacity), from the retention queues: its orders
// (the outstanding and those in oexp), batch records (bexp and iexp; a
// batch named after its first order has none, as its orders hold it,
// batchid.go) and Idempotency-Keys (iexp); a queue entry whose record was replaced since
// (an id reused after its time) counts until the sweep takes it. A pool is
// reported under label(pool) — api.Metrics.PoolLabel, whose cap holds for
// every per-pool metric — and left out if that is not its own name: the
// per-pool series stay bounded, and other pools do not hide in an
// aggregate that would need reading them all. A scrape that cannot reach
// Redis reports neither metric; the hook counts the failure.
func (s *Store) OutstandingCollector(label func(pool string) string, maxPools int) prometheus.Collector {
	return &outstandingCollector{c: s.c, label: label, max: maxPools}
}

type outstandingCollector struct {
	c     Client
	label func(string) string
	max   int
}

func (o *outstandingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outstandingDesc
	ch <- poolsDesc
	ch <- recordsDesc
}

func (o *outstandingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), outstandingTimeout)
	defer cancel()
	var names []string
	if o.max > 0 {
		var err error
		names, err = o.c.ZRangeArgs(ctx, goredis.ZRangeArgs{
			Key: poolsKey, Start: "-", Stop: "+", ByLex: true, Count: int64(o.max),
		}).Result()
		if err != nil {
			return
		}
	}
	type counts struct {
		meta                    *goredis.SliceCmd
		finished, batches, keys *goredis.IntCmd
	}
	cs := make([]counts, len(names))
	var total *goredis.IntCmd
	_, err := o.c.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		total = pl.ZCard(ctx, poolsKey)
		for i, name := range names {
			p := poolPrefix(name)
			cs[i] = counts{pl.HMGet(ctx, p+keyMeta, metaStrategy, metaDispatched, metaCompleted, metaCancelled),
				pl.LLen(ctx, p+keyOexp), pl.LLen(ctx, p+keyBexp), pl.LLen(ctx, p+keyIexp)}
		}
		return nil
	})
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(poolsDesc, prometheus.GaugeValue, float64(total.Val()))
	for i, name := range names {
		m := cs[i].meta.Val()
		if len(m) != 4 || m[0] == nil || o.label(name) != name {
			continue
		}
		n := max(0, asInt(m[1])-asInt(m[2])-asInt(m[3]))
		ch <- prometheus.MustNewConstMetric(outstandingDesc, prometheus.GaugeValue, float64(n), name)
		for _, r := range []struct {
			kind string
			n    int64
		}{{"orders", n + cs[i].finished.Val()}, {"batches", cs[i].batches.Val() + cs[i].keys.Val()}, {"keys", cs[i].keys.Val()}} {
			ch <- prometheus.MustNewConstMetric(recordsDesc, prometheus.GaugeValue, float64(r.n), name, r.kind)
		}
	}
}
