#!/usr/bin/env bash
# measure.sh: the issue-6 measurements of docs/benchmarks.md in ONE session,
# on loopback only: a throwaway redis-server, two dispatcher replicas on it,
# the no-op HTTP floor, dispatch-bench and redis-benchmark (the ceiling of
# cmd/dispatch-bench/ceiling/ceiling.lua). Every figure is meant as a ratio against a baseline of
# the same run. Bounded: 50 runs of WARM+DUR each, 4 ceiling runs of about
# 10 s and about 1 minute of registering Scales, so about 7 minutes with
# the defaults (DUR=5s WARM=1s) and about 11 with DUR=10s WARM=2s; every
# process it starts is killed on exit (the no-op server stops by itself
# after NOOP_FOR as well). It ends with $OUT/throughput.svg, orders/s by
# batch size and concurrency (dispatch-bench plot), and a summary.
#
#   go build -o /tmp/b/dispatcher ./cmd/dispatcher
#   go build -o /tmp/b/dispatch-bench ./cmd/dispatch-bench
#   cmd/dispatch-bench/ceiling/measure.sh            # BIN=/tmp/b OUT=/tmp/bench-out DUR=5s WARM=1s NOOP_FOR=30m
set -euo pipefail

BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/bench-out}
DUR=${DUR:-5s}
WARM=${WARM:-1s}
NOOP_FOR=${NOOP_FOR:-30m}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
# shellcheck source=common.sh
. "$HERE/common.sh"

note() { echo "== $* (loadavg $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$OUT/log"; }
waitfor() { for _ in $(seq 100); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "not up: $1" >&2; exit 1; }

note "machine: nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

startRedis "$OUT/redis.log"

P1=$(freeport); P2=$(freeport); NP=$(freeport)
for p in "$P1" "$P2"; do
  DISPATCHER_ADDR=127.0.0.1:$p DISPATCHER_REDIS_URL=redis://127.0.0.1:$RP \
    "$BIN/dispatcher" >"$OUT/dispatcher-$p.log" 2>&1 & PIDS+=($!)
done
# Two more replicas with coalescing off (DISPATCHER_COALESCE=false): the
# baseline of step c2.
P3=$(freeport); P4=$(freeport)
for p in "$P3" "$P4"; do
  DISPATCHER_COALESCE=false DISPATCHER_ADDR=127.0.0.1:$p DISPATCHER_REDIS_URL=redis://127.0.0.1:$RP \
    "$BIN/dispatcher" >"$OUT/dispatcher-$p.log" 2>&1 & PIDS+=($!)
done
"$BIN/dispatch-bench" noop -addr "127.0.0.1:$NP" -for "$NOOP_FOR" >"$OUT/noop.log" 2>&1 & PIDS+=($!)
A=http://127.0.0.1:$P1; B=http://127.0.0.1:$P2; N=http://127.0.0.1:$NP
waitfor "$A/healthz"; waitfor "$B/healthz"; waitfor "$N/"
waitfor "http://127.0.0.1:$P3/healthz"; waitfor "http://127.0.0.1:$P4/healthz"
SVC=$A,$B
OFF=http://127.0.0.1:$P3,http://127.0.0.1:$P4
DB() { "$BIN/dispatch-bench" "$@" -progress=false; }
# setStrategy POOL STRATEGY: PUT /v1/pools/POOL (openapi.yaml putPool)
# changes the strategy of an existing pool and keeps its Scales.
setStrategy() {
  curl -fsS -o /dev/null -X PUT -H 'Content-Type: application/json' \
    -d "{\"strategy\":\"$2\"}" "$A/v1/pools/$1"
}

# a. Pool-size independence through the service, per strategy: single-order
# batches, concurrency 8, a pool of 10 Scales (p10-$s, registered with
# -strategy $s) vs a large one. Registering 100,000 Scales takes some 40 s,
# so p100k is registered once (waterfill) and its strategy switched with a
# PUT of the pool between runs. consistent-hash runs on p10k, 10,000 Scales
# registered once with that strategy, instead: switching p100k to it would
# build the ring (100 points per Scale, 10^7 in all) in one script that
# blocks Redis for about 2 minutes, while p10k's ring grows one Scale at a
# time as the Scales register.
STRATEGIES="waterfill random round-robin power-of-two consistent-hash"
note "a: register p100k (waterfill) and p10k (consistent-hash)"
DB scales -url "$SVC" -pool p100k -n 100000 -concurrency 16 >"$OUT/scales-p100k.txt"
DB scales -url "$SVC" -pool p10k -n 10000 -concurrency 16 -strategy consistent-hash >"$OUT/scales-p10k.txt"
for s in $STRATEGIES; do
  DB scales -url "$SVC" -pool "p10-$s" -n 10 -strategy "$s" >"$OUT/scales-p10-$s.txt"
  note "a: $s, pool p10-$s batch 1 c 8"
  DB run -url "$SVC" -pool "p10-$s" -batch 1 -concurrency 8 -warmup "$WARM" -duration "$DUR" -json >"$OUT/a-p10-$s.json"
  big=p100k
  if [ "$s" = consistent-hash ]; then big=p10k; else setStrategy p100k "$s"; fi
  note "a: $s, pool $big batch 1 c 8"
  DB run -url "$SVC" -pool "$big" -batch 1 -concurrency 8 -warmup "$WARM" -duration "$DUR" -json >"$OUT/a-$big-$s.json"
done

# b. The Redis ceiling: cmd/dispatch-bench/ceiling/ceiling.lua under redis-benchmark, concurrency
# 16, batches of 1 to 1000 orders; -n is chosen so that each takes about
# 10 s (at the rates of docs/benchmarks.md). Its load ZSET holds 1000 Scales like the service's pool of c; the
# order hash is emptied after each batch size so that memory stays small.
note "b: ceiling"
loadCeiling
echo "$SHA" >"$OUT/ceiling.sha"
BATCHES="1 10 100 1000"
for bn in 1:200000 10:50000 100:10000 1000:1000; do
  b=${bn%%:*}; n=${bn#*:}
  note "b: ceiling batch $b c 16 n $n"
  redis-benchmark -p "$RP" -c 16 -n "$n" -r 1000000000 --csv \
    EVALSHA "$SHA" 2 '{ceil}:load' '{ceil}:orders' __rand_int__ "$b" >"$OUT/b-ceiling-$b.csv"
  R unlink '{ceil}:orders' >/dev/null
done

# c. The service (two replicas) and the no-op HTTP floor driven by the same
# tool, over batch sizes × concurrencies. The orders stay assigned (no
# -complete), so each batch size gets a fresh pool of 1000 Scales
# (p1k-b$b), as the ceiling's order hash is emptied after each batch size:
# a batch size's four concurrencies share its pool, no other's orders. The Scales have no
# maxOrders, so a pool cannot fill. -timeout 30s: at batch 1000 and
# concurrency 64 a request queues behind 63 others for several seconds,
# near the default limit of 10 s.
CONCS="1 4 16 64"
DB scales -url "$SVC" -pool p1k -n 1000 >"$OUT/scales-p1k.txt"
# c2. Coalescing off vs on, batches of 1 and 100 at concurrency 16, two
# rounds each, alternating, on p1k while it is still small (before c).
for b in 1 100; do
  for r in 1 2; do
    note "c2: service, coalescing off, batch $b c 16, round $r"
    DB run -url "$OFF" -pool p1k -batch "$b" -concurrency 16 -warmup "$WARM" -duration "$DUR" -timeout 30s -json >"$OUT/c2-off-$b-$r.json"
    note "c2: service, coalescing on, batch $b c 16, round $r"
    DB run -url "$SVC" -pool p1k -batch "$b" -concurrency 16 -warmup "$WARM" -duration "$DUR" -timeout 30s -json >"$OUT/c2-on-$b-$r.json"
  done
done

for b in $BATCHES; do
  DB scales -url "$SVC" -pool "p1k-b$b" -n 1000 >"$OUT/scales-p1k-b$b.txt"
  for c in $CONCS; do
    note "c: service batch $b c $c"
    DB run -url "$SVC" -pool "p1k-b$b" -batch "$b" -concurrency "$c" -warmup "$WARM" -duration "$DUR" -timeout 30s -json >"$OUT/c-svc-$b-$c.json"
    note "c: noop batch $b c $c"
    DB run -url "$N" -pool p1k -batch "$b" -concurrency "$c" -warmup "$WARM" -duration "$DUR" -timeout 30s -json >"$OUT/c-noop-$b-$c.json"
  done
done
note "done, redis used_memory $(R info memory | awk -F: '/^used_memory_human:/ {print $2}' | tr -d '\r')"

# d. The plot: orders/s by batch size, one line per target and
# concurrency, and the ceiling (requests/s × batch) as a dashed line. The
# globs are quoted: dispatch-bench expands them.
CEILING=$(python3 - "$OUT" $BATCHES <<'PY'
import csv, sys
out, batches = sys.argv[1], sys.argv[2:]
pts = []
for b in batches:
    rows = list(csv.DictReader(open(f"{out}/b-ceiling-{b}.csv")))
    pts.append("%s:%.0f" % (b, float(rows[-1]["rps"]) * int(b)))
print(",".join(pts))
PY
)
"$BIN/dispatch-bench" plot -o "$OUT/throughput.svg" -ceiling "$CEILING" \
  -title "dispatcher: orders/s by batch size ($(nproc) cores, $DUR runs)" \
  "svc=$OUT/c-svc-*.json" "noop=$OUT/c-noop-*.json" | tee -a "$OUT/log"

# Summary: orders/s and p50 of every run, the ceilings, and the matrix of c.
for s in $STRATEGIES; do
  big=p100k; [ "$s" = consistent-hash ] && big=p10k
  for f in "$OUT/a-p10-$s.json" "$OUT/a-$big-$s.json"; do
    python3 -c 'import json,sys;r=json.load(open(sys.argv[1]));print("%-30s orders/s %10.0f  p50 %7.3f ms  p99 %7.3f ms  errors %s"%(sys.argv[1].split("/")[-1],r["ordersPerSec"],r["latencyMs"]["p50"],r["latencyMs"]["p99"],r["window"]["errors"]))' "$f"
  done
done | tee -a "$OUT/log"
for b in $BATCHES; do
  for c in $CONCS; do
    for t in svc noop; do
      python3 -c 'import json,sys;r=json.load(open(sys.argv[1]));print("%-30s orders/s %10.0f  p50 %7.3f ms  p99 %7.3f ms  errors %s"%(sys.argv[1].split("/")[-1],r["ordersPerSec"],r["latencyMs"]["p50"],r["latencyMs"]["p99"],r["window"]["errors"]))' "$OUT/c-$t-$b-$c.json"
    done
  done
done | tee -a "$OUT/log"
for b in 1 100; do
  python3 -c 'import json,sys;b,o=sys.argv[1],sys.argv[2];r=lambda m,i:json.load(open("%s/c2-%s-%s-%d.json"%(o,m,b,i)))["ordersPerSec"];on=[r("on",i) for i in (1,2)];off=[r("off",i) for i in (1,2)];print("coalescing batch %s c 16: on %.0f %.0f, off %.0f %.0f orders/s; on/off %.2f"%(b,on[0],on[1],off[0],off[1],sum(on)/sum(off)))' "$b" "$OUT"
done | tee -a "$OUT/log"
for b in $BATCHES; do
  echo "ceiling batch $b: $(tail -1 "$OUT/b-ceiling-$b.csv")  (requests/s; orders/s = × $b)" | tee -a "$OUT/log"
done
python3 - "$OUT" "$CEILING" $CONCS <<'PY' | tee -a "$OUT/log"
import json, sys
out, ceiling, concs = sys.argv[1], dict(p.split(":") for p in sys.argv[2].split(",")), sys.argv[3:]
rate = lambda t, b, c: json.load(open(f"{out}/c-{t}-{b}-{c}.json"))["ordersPerSec"]
print("orders/s by batch (rows) and concurrency; svc/ceil is the service over the ceiling (c 16)")
print("%-6s %-5s" % ("batch", "") + "".join("%12s" % ("c " + c) for c in concs) + "%12s%10s" % ("ceiling", "svc/ceil"))
for b, ceil in ceiling.items():
    for t in ("svc", "noop"):
        row = "".join("%12.0f" % rate(t, b, c) for c in concs)
        extra = "%12s%10.3f" % (ceil, rate("svc", b, "16") / float(ceil)) if t == "svc" else ""
        print("%-6s %-5s%s%s" % (b, t, row, extra))
PY
