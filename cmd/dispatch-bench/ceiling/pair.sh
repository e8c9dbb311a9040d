#!/usr/bin/env bash
# pair.sh: the issue-6 throughput ratio alone, in rounds: a throwaway
# redis-server and two dispatcher replicas on it, then per round and batch
# size the ceiling (ceiling.lua under redis-benchmark, concurrency 16) right
# before the service (dispatch-bench, concurrency 16) on a pool of 1,000
# Scales that this round registered fresh. measure.sh runs the whole matrix
# on one pool that grows run after run; pair.sh compares the two on the same
# footing each round. After the service, the same run against two no-op
# servers (dispatch-bench noop) gives the HTTP floor of that round.
# Loopback only; everything it starts is killed on exit.
#
#   go build -o /tmp/b/dispatcher ./cmd/dispatcher
#   go build -o /tmp/b/dispatch-bench ./cmd/dispatch-bench
#   cmd/dispatch-bench/ceiling/pair.sh        # BIN=/tmp/b ROUNDS=3 BATCHES="1 100" DUR=5s
set -euo pipefail

BIN=${BIN:-/tmp/b}
ROUNDS=${ROUNDS:-3}
BATCHES=${BATCHES:-1 100}
DUR=${DUR:-5s}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

startRedis /dev/null
startReplicas
startNoops
loadCeiling

# rate URLS POOL BATCH prints the orders/s of one run of DUR.
rate() {
  "$BIN/dispatch-bench" run -url "$1" -pool "$2" -batch "$3" -concurrency 16 \
    -warmup 1s -duration "$DUR" -json -progress=false |
    python3 -c 'import json,sys;print(json.load(sys.stdin)["ordersPerSec"])'
}

echo "round batch ceiling-orders/s service-orders/s noop-orders/s service/ceiling noop/ceiling (loadavg)"
for round in $(seq "$ROUNDS"); do
  for b in $BATCHES; do
    pool=pair-$round-$b
    "$BIN/dispatch-bench" scales -url "$SVC" -pool "$pool" -n 1000 -progress=false >/dev/null
    # about DUR of the ceiling at the rates of docs/benchmarks.md
    n=$((b == 1 ? 150000 : 5000))
    rps=$(redis-benchmark -p "$RP" -c 16 -n "$n" -r 1000000000 --csv \
      EVALSHA "$SHA" 2 '{ceil}:load' '{ceil}:orders' __rand_int__ "$b" | tail -1 | cut -d, -f2 | tr -d '"')
    R unlink '{ceil}:orders' >/dev/null
    svc=$(rate "$SVC" "$pool" "$b")
    noop=$(rate "$NOOP" "$pool" "$b")
    python3 -c 'import sys;r,b,c,s,n,l=sys.argv[1:];c=float(c)*int(b);s=float(s);n=float(n);print("%s %s %.0f %.0f %.0f %.3f %.3f (%s)"%(r,b,c,s,n,s/c,n/c,l))' \
      "$round" "$b" "$rps" "$svc" "$noop" "$(cut -d' ' -f1 /proc/loadavg)"
    curl -fsS -o /dev/null -X DELETE "${SVC%%,*}/v1/pools/$pool"
  done
done
