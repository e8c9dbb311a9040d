#!/usr/bin/env bash
# measure.sh: the issue-6 measurements of docs/benchmarks.md in ONE session,
# on loopback only: a throwaway redis-server, two dispatcher replicas on it,
# the no-op HTTP floor, dispatch-bench and redis-benchmark (the ceiling of
# cmd/dispatch-bench/ceiling/ceiling.lua). Every figure is meant as a ratio against a baseline of
# the same run. Bounded: about 3 minutes; every process it starts is killed
# on exit.
#
#   go build -o /tmp/b/dispatcher ./cmd/dispatcher
#   go build -o /tmp/b/dispatch-bench ./cmd/dispatch-bench
#   cmd/dispatch-bench/ceiling/measure.sh            # BIN=/tmp/b OUT=/tmp/bench-out DUR=10s
set -euo pipefail

BIN=${BIN:-/tmp/b}
OUT=${OUT:-/tmp/bench-out}
DUR=${DUR:-10s}
WARM=${WARM:-2s}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
note() { echo "== $* (loadavg $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$OUT/log"; }
waitfor() { for _ in $(seq 100); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "not up: $1" >&2; exit 1; }

note "machine: nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

RP=$(freeport)
redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
  --logfile "$OUT/redis.log" & PIDS+=($!)
for _ in $(seq 100); do redis-cli -p "$RP" ping >/dev/null 2>&1 && break; sleep 0.1; done
R() { redis-cli -p "$RP" "$@"; }

P1=$(freeport); P2=$(freeport); NP=$(freeport)
for p in "$P1" "$P2"; do
  DISPATCHER_ADDR=127.0.0.1:$p DISPATCHER_REDIS_URL=redis://127.0.0.1:$RP \
    "$BIN/dispatcher" >"$OUT/dispatcher-$p.log" 2>&1 & PIDS+=($!)
done
"$BIN/dispatch-bench" noop -addr "127.0.0.1:$NP" -for 15m >"$OUT/noop.log" 2>&1 & PIDS+=($!)
A=http://127.0.0.1:$P1; B=http://127.0.0.1:$P2; N=http://127.0.0.1:$NP
waitfor "$A/healthz"; waitfor "$B/healthz"; waitfor "$N/"
SVC=$A,$B
DB() { "$BIN/dispatch-bench" "$@" -progress=false; }

# a. Pool-size independence through the service: single-order batches,
# concurrency 8, waterfill, a pool of 10 Scales vs one of 100,000.
note "a: register pools"
DB scales -url "$SVC" -pool p10 -n 10 >"$OUT/scales-p10.txt"
DB scales -url "$SVC" -pool p100k -n 100000 -concurrency 16 >"$OUT/scales-p100k.txt"
for pool in p10 p100k; do
  note "a: run pool $pool batch 1 c 8"
  DB run -url "$SVC" -pool "$pool" -batch 1 -concurrency 8 -warmup "$WARM" -duration "$DUR" -json >"$OUT/a-$pool.json"
done

# b. The Redis ceiling: cmd/dispatch-bench/ceiling/ceiling.lua under redis-benchmark, concurrency
# 16. Its load ZSET holds 1000 Scales like the service's pool of c.
note "b: ceiling"
R eval "for i=1,1000 do redis.call('ZADD', KEYS[1], 0, 's-'..i) end" 1 '{ceil}:load' >/dev/null
SHA=$(R script load "$(cat "$HERE/ceiling.lua")")
echo "$SHA" >"$OUT/ceiling.sha"
note "b: ceiling batch 1"
redis-benchmark -p "$RP" -c 16 -n 300000 -r 1000000000 --csv \
  EVALSHA "$SHA" 2 '{ceil}:load' '{ceil}:orders' __rand_int__ 1 >"$OUT/b-ceiling-1.csv"
note "b: ceiling batch 100"
redis-benchmark -p "$RP" -c 16 -n 20000 -r 1000000000 --csv \
  EVALSHA "$SHA" 2 '{ceil}:load' '{ceil}:orders' __rand_int__ 100 >"$OUT/b-ceiling-100.csv"
R del '{ceil}:orders' >/dev/null

# c. The service, two replicas, concurrency 16, batches of 1 and 100, and
# the no-op HTTP floor driven by the same tool.
DB scales -url "$SVC" -pool p1k -n 1000 >"$OUT/scales-p1k.txt"
for b in 1 100; do
  note "c: service batch $b c 16"
  DB run -url "$SVC" -pool p1k -batch "$b" -concurrency 16 -warmup "$WARM" -duration "$DUR" -json >"$OUT/c-svc-$b.json"
  note "c: noop batch $b c 16"
  DB run -url "$N" -pool p1k -batch "$b" -concurrency 16 -warmup "$WARM" -duration "$DUR" -json >"$OUT/c-noop-$b.json"
done
note "done"

# Summary: orders/s and p50 of every run, and the ceilings.
for f in "$OUT"/a-*.json "$OUT"/c-*.json; do
  python3 -c 'import json,sys;r=json.load(open(sys.argv[1]));print("%-22s orders/s %10.0f  p50 %7.3f ms  p99 %7.3f ms  errors %s"%(sys.argv[1].split("/")[-1],r["ordersPerSec"],r["latencyMs"]["p50"],r["latencyMs"]["p99"],r["window"]["errors"]))' "$f"
done | tee -a "$OUT/log"
for b in 1 100; do
  echo "ceiling batch $b: $(tail -1 "$OUT/b-ceiling-$b.csv")  (requests/s; orders/s = × $b)" | tee -a "$OUT/log"
done
