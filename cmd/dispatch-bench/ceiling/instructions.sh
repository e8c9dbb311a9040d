#!/usr/bin/env bash
# instructions.sh: the instructions a replica's process executes per request
# (user space, every thread: net/http, the runtime, the replica's own code),
# counted by callgrind, which the machine's load moves far less than CPU
# time. A throwaway redis-server; on it one dispatcher replica
# ($BIN/dispatcher, default settings), one of an older build when
# BIN_BEFORE names its directory, and one thin service ($BIN/dispatch-bench
# thin), each run under valgrind --tool=callgrind. Per round, each in turn:
# its counters zeroed (callgrind_control -z), a dispatch-bench run (batch
# BATCH, concurrency CONC, DUR seconds, 16 Scales) at it alone, its
# counters dumped (callgrind_control -d); the instructions over the
# batches that run answered. valgrind runs one thread at a time and some
# 50 times slower, so a process serves a few hundred requests a second:
# its per-second work (health ticks, sysmon, GC) weighs more than under
# real load, and spinning threads add noise, so every process runs with
# GOMAXPROCS=1 unless PROCS says otherwise. Compare rows of one run. The
# dumps stay in OUT for callgrind_annotate. Needs valgrind (3.19 does not
# know RDTSCP: the processes get GODEBUG=cpu.rdtscp=off,asyncpreemptoff=1).
# Loopback only; everything it starts is killed on exit.
#
#   go build -o /tmp/b/ ./cmd/dispatcher ./cmd/dispatch-bench
#   cmd/dispatch-bench/ceiling/instructions.sh
#   # BIN=/tmp/b BIN_BEFORE= BATCH=1 CONC=16 DUR=8 ROUNDS=3 PROCS=1 OUT=/tmp/instructions-out
set -euo pipefail

BIN=${BIN:-/tmp/b}
BIN_BEFORE=${BIN_BEFORE:-}
BATCH=${BATCH:-1}
CONC=${CONC:-16}
DUR=${DUR:-8}
ROUNDS=${ROUNDS:-3}
PROCS=${PROCS:-1}
OUT=${OUT:-/tmp/instructions-out}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
rm -f "$OUT"/*.cg.*
# shellcheck source=common.sh
. "$HERE/common.sh"

startRedis "$OUT/redis.log"
declare -A URL PID
NAMES=()

# start NAME CMD... runs CMD under callgrind on a free port (the command
# takes it from $PORT in its arguments or DISPATCHER_ADDR) and waits for it.
start() {
  local name=$1
  shift
  PORT=$(freeport)
  local args=("${@//\$PORT/$PORT}")
  env GOMAXPROCS="$PROCS" GODEBUG=cpu.rdtscp=off,asyncpreemptoff=1 \
    DISPATCHER_ADDR=127.0.0.1:$PORT DISPATCHER_REDIS_URL=redis://127.0.0.1:$RP \
    valgrind --tool=callgrind --callgrind-out-file="$OUT/$name.cg.%p" "${args[@]}" >"$OUT/$name.log" 2>&1 &
  PIDS+=($!)
  PID[$name]=$!
  for _ in $(seq 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.2; done
  URL[$name]=http://127.0.0.1:$PORT
  NAMES+=("$name")
}

start service "$BIN/dispatcher"
[ -z "$BIN_BEFORE" ] || start before "$BIN_BEFORE/dispatcher"
start thin "$BIN/dispatch-bench" thin -addr '127.0.0.1:$PORT' -redis "redis://127.0.0.1:$RP" -scales 16
for n in "${NAMES[@]}"; do
  [ "$n" = thin ] || "$BIN/dispatch-bench" scales -url "${URL[$n]}" -pool "p$BATCH" -n 16 -progress=false >/dev/null
  "$BIN/dispatch-bench" run -url "${URL[$n]}" -pool "p$BATCH" -batch "$BATCH" -concurrency "$CONC" -duration 3s -progress=false >/dev/null
done

echo "instructions.sh: nproc $(nproc), loadavg $(cut -d' ' -f1-3 /proc/loadavg), BIN=$BIN${BIN_BEFORE:+ BIN_BEFORE=$BIN_BEFORE} BATCH=$BATCH CONC=$CONC PROCS=$PROCS" | tee "$OUT/log"
echo "round variant batches instructions/batch (loadavg)" | tee -a "$OUT/log"
for r in $(seq "$ROUNDS"); do
  for n in "${NAMES[@]}"; do
    pid=${PID[$n]}
    callgrind_control -z "$pid" >/dev/null 2>&1
    "$BIN/dispatch-bench" run -url "${URL[$n]}" -pool "p$BATCH" -batch "$BATCH" -concurrency "$CONC" -duration "${DUR}s" \
      -json -progress=false >"$OUT/$n-$r.json"
    callgrind_control -d "$pid" >/dev/null 2>&1
    f=""
    for _ in $(seq 100); do
      f=$(ls "$OUT/$n.cg.$pid".* 2>/dev/null | tail -1)
      [ -n "$f" ] && grep -q '^totals:' "$f" && break
      sleep 0.3
    done
    mv "$f" "$OUT/$n-$r.cg"
    ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$OUT/$n-$r.cg")
    batches=$(python3 -c "import json;d=json.load(open('$OUT/$n-$r.json'));print(round(d['batchesPerSec']*d['seconds']))")
    echo "$r $n $batches $((ir / batches)) ($(cut -d' ' -f1 /proc/loadavg))" | tee -a "$OUT/log"
  done
done
