#!/usr/bin/env bash
# cpu.sh: where the CPU of a request goes. A throwaway redis-server, two
# dispatcher replicas on it and two no-op servers (dispatch-bench noop);
# per round and batch size, the same dispatch-bench run (concurrency 16) at
# the replicas and then at the no-op servers, and for each the CPU time
# (user + system) that every process spent during the run, per request:
# redis-server, the replicas together, the servers together, the tool.
# On a machine where they all share the cores, this says which of them a
# faster service would have to take CPU from. Loopback only; everything it
# starts is killed on exit.
#
#   go build -o /tmp/b/dispatcher ./cmd/dispatcher
#   go build -o /tmp/b/dispatch-bench ./cmd/dispatch-bench
#   cmd/dispatch-bench/ceiling/cpu.sh        # BIN=/tmp/b ROUNDS=2 BATCHES="1 100" DUR=8s
set -euo pipefail

BIN=${BIN:-/tmp/b}
ROUNDS=${ROUNDS:-2}
BATCHES=${BATCHES:-1 100}
DUR=${DUR:-8s}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

startRedis /dev/null
REDIS_PID=${PIDS[-1]}
startReplicas
startNoops
"$BIN/dispatch-bench" scales -url "$SVC" -pool cpu -n 1000 -progress=false >/dev/null

HZ=$(getconf CLK_TCK)

echo "round batch target orders/s | CPU us per request: redis servers tool"
for round in $(seq "$ROUNDS"); do
  for b in $BATCHES; do
    for target in service noop; do
      if [ "$target" = service ]; then url=$SVC servers=("${SVC_PIDS[@]}"); else url=$NOOP servers=("${NOOP_PIDS[@]}"); fi
      r0=$(ticks "$REDIS_PID") s0=$(ticks "${servers[@]}")
      TIMEFORMAT='%U %S'
      { time "$BIN/dispatch-bench" run -url "$url" -pool cpu -batch "$b" -concurrency 16 \
          -duration "$DUR" -json -progress=false >/tmp/cpu-sh-report.json; } 2>/tmp/cpu-sh-time.txt
      r1=$(ticks "$REDIS_PID") s1=$(ticks "${servers[@]}")
      python3 - "$round" "$b" "$target" "$HZ" "$r0" "$r1" "$s0" "$s1" <<'PY'
import json, sys
rnd, b, target, hz, r0, r1, s0, s1 = sys.argv[1:]
hz = float(hz)
rep = json.load(open("/tmp/cpu-sh-report.json"))
n = rep["total"]["batches"]
u, s = map(float, open("/tmp/cpu-sh-time.txt").read().split())
us = lambda sec: sec / n * 1e6
print("%s %s %s %.0f | %.0f %.0f %.0f" % (rnd, b, target, rep["ordersPerSec"],
      us((float(r1) - float(r0)) / hz), us((float(s1) - float(s0)) / hz), us(u + s)))
PY
    done
  done
done
rm -f /tmp/cpu-sh-report.json /tmp/cpu-sh-time.txt
