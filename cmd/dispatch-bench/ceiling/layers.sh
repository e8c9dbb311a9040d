#!/usr/bin/env bash
# layers.sh: where a replica's CPU per request goes against the thin
# service's, by layer. A throwaway redis-server, two dispatcher replicas
# ($BIN/dispatcher, default settings) and two thin services on it, as
# redis-cpu.sh starts them; per batch size, a dispatch-bench run
# (concurrency 16, 16 Scales) at the replicas and then at the thin
# services, and during each a sampling profile of one of the two processes
# (perf record -g, kernel included) and the CPU time (user + system) of
# both from /proc/PID/stat. Each sample is given to the first layer met
# from the leaf up (a system call to Redis when go-redis is on its stack,
# to HTTP when net/http is; the kernel's frames are skipped, so the
# interrupts taken while a layer ran count as its), and each layer's share
# is scaled to the CPU per request of both processes. perf costs CPU
# itself: read the rows against each other, not the totals against
# redis-cpu.sh. Needs perf (linux-perf), with permission to profile the
# processes it starts. Loopback only; everything it starts is killed on
# exit. Raw profiles and the table go to OUT.
#
#   go build -o /tmp/b/ ./cmd/dispatcher ./cmd/dispatch-bench
#   cmd/dispatch-bench/ceiling/layers.sh    # BIN=/tmp/b BATCHES="1 100" DUR=10 OUT=/tmp/layers-out
set -euo pipefail

BIN=${BIN:-/tmp/b}
BATCHES=${BATCHES:-1 100}
DUR=${DUR:-10}
OUT=${OUT:-/tmp/layers-out}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
# shellcheck source=common.sh
. "$HERE/common.sh"

startRedis "$OUT/redis.log"
startReplicas "$BIN"
startThins
HZ=$(getconf CLK_TCK)
: >"$OUT/cpu.tsv"
echo "layers.sh: nproc $(nproc), loadavg $(cut -d' ' -f1-3 /proc/loadavg), BIN=$BIN" | tee "$OUT/log"
for b in $BATCHES; do
  for v in replica thin; do
    if [ "$v" = replica ]; then
      url=$SVC pids=("${SVC_PIDS[@]}")
      "$BIN/dispatch-bench" scales -url "$SVC" -pool "p$b" -n 16 -progress=false >/dev/null
    else
      url=$THIN pids=("${THIN_PIDS[@]}")
    fi
    echo "batch $b $v (loadavg $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%T))" | tee -a "$OUT/log"
    "$BIN/dispatch-bench" run -url "$url" -pool "p$b" -batch "$b" -concurrency 16 -duration "${DUR}s" \
      -warmup 1s -json -progress=false >"$OUT/$v-$b.json" &
    load=$!
    sleep 1.5
    t0=$(ticks "${pids[@]}")
    perf record -q -F 1999 -g -p "${pids[0]}" -o "$OUT/$v-$b.perf" -- sleep $((DUR - 3)) >/dev/null 2>&1
    t1=$(ticks "${pids[@]}")
    wait $load
    # ticks of both processes over the profiled seconds, and their orders/s
    echo -e "$v\t$b\t$t0\t$t1\t$HZ\t$((DUR - 3))\t$OUT/$v-$b.json" >>"$OUT/cpu.tsv"
  done
done

for f in "$OUT"/*.perf; do perf script -i "$f" -F ip,sym >"${f%.perf}.stacks" 2>/dev/null; done
python3 - "$OUT" <<'PY' | tee "$OUT/table.txt"
import collections, json, sys
out = sys.argv[1]

def stacks(path):
    """The samples of a perf script output, each its frames leaf first."""
    cur = []
    for line in open(path):
        line = line.strip()
        if not line:
            if cur:
                yield cur
            cur = []
            continue
        parts = line.split(None, 1)
        if len(parts) == 2:
            cur.append(parts[1].rsplit("+", 1)[0])
    if cur:
        yield cur

def go_frames(st):
    """The Go frames: a Go symbol has a package path with a dot."""
    return [s for s in st if "." in s and not s.startswith(("[", "0x"))]

LAYERS = [  # the first match from the leaf up, after the checks in layer()
    ("log/slog", "access log"), ("main.(*logBuf", "access log"),
    ("github.com/prometheus", "metrics"), (".observeRequest", "metrics"), (".ObserveBatch", "metrics"),
    ("github.com/valyala/fastjson", "request body JSON"), (".fastOrders", "request body JSON"),
    (".orderArgs", "request body JSON"),
    (".appendBatch", "answer encoding"), (".appendJSONString", "answer encoding"),
    ("github.com/redis/go-redis", "go-redis"),
    ("github.com/dispatcher/dispatcher/store/redis", "store/redis's Go"),
    ("github.com/dispatcher/dispatcher/dispatch", "dispatch: Service, coalescer"),
    ("github.com/dispatcher/dispatcher/api", "api: chi, middleware, handler"),
    ("github.com/go-chi", "api: chi, middleware, handler"),
    ("main.(*thinService)", "thin service's handler"),
    ("net/http.", "net/http"), ("net/textproto", "net/http"), ("net/url", "net/http"), ("bufio.", "net/http"),
    ("context.", "contexts"),
]
SYSCALL = ("syscall.", "internal/runtime/syscall", "internal/poll.", "runtime.entersyscall", "runtime.exitsyscall")

def layer(st):
    g = go_frames(st)
    if not g:
        return "kernel only"
    if any("runtime.sysmon" in s for s in g):
        return "sysmon"
    if any(s.startswith(("runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge")) for s in g):
        return "GC workers"
    sys_call = any(s.startswith(SYSCALL) for s in g[:8])
    if sys_call and any(s.startswith("github.com/redis/go-redis") for s in g):
        return "Redis socket system calls"
    if sys_call and any(s.startswith("net/http.") for s in g):
        return "HTTP socket system calls"
    for s in g:
        for prefix, name in LAYERS:
            if s.startswith(prefix) or (prefix[0] == "." and prefix in s):
                return name
    return "other system calls" if sys_call else "scheduler, other runtime"

per_request, rows = {}, collections.defaultdict(dict)
for line in open(out + "/cpu.tsv"):
    v, b, t0, t1, hz, secs, report = line.split("\t")
    r = json.load(open(report.strip()))
    requests = r["ordersPerSec"] / int(b) * float(secs)
    per_request[(v, b)] = (float(t1) - float(t0)) / float(hz) / requests * 1e6
    counts = collections.Counter(layer(st) for st in stacks("%s/%s-%s.stacks" % (out, v, b)))
    n = sum(counts.values())
    for k, c in counts.items():
        rows[k][(v, b)] = c / n * per_request[(v, b)]
cols = sorted(per_request, key=lambda k: (int(k[1]), k[0] != "replica"))
print("| µs of CPU per request | " + " | ".join("batch %s: %s" % (b, v) for v, b in cols) + " |")
print("|---|" + "---:|" * len(cols))
for k in sorted(rows, key=lambda k: -sum(rows[k].values())):
    print("| %s | %s |" % (k, " | ".join("%.1f" % rows[k].get(c, 0) for c in cols)))
print("| **total** | %s |" % " | ".join("%.1f" % per_request[c] for c in cols))
PY
