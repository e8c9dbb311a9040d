#!/usr/bin/env bash
# redis-cpu.sh: the two measurements of issue 21 in ONE run, on loopback
# only. A throwaway redis-server; on it two dispatcher replicas
# ($BIN/dispatcher, default settings: every feature on), two more of an
# older build when BIN_BEFORE names its directory (the "before"), and two
# thin services (dispatch-bench thin: minimal.lua through go-redis, nothing
# else). Each service gets a pool of 16 Scales (dispatch-bench scales); the
# minimal script a load ZSET of 16. Then, per batch size:
#
#   a. Redis CPU per order: INFO cpu (used_cpu_user + used_cpu_sys) before
#      and after a dispatch-bench run (concurrency 16, DUR) against the two
#      replicas, over the orders that run dispatched; the same for the
#      before replicas; then for minimal.lua run by redis-benchmark EVALSHA
#      (concurrency 16) on the same Redis, as many calls as the service's
#      run made batches. Each variant in turn, CPU_ROUNDS times. The
#      ratio service/minimal is the issue's first goal (≤ 1.5). The same
#      run at the thin services shows what Redis pays for minimal.lua
#      when it shares the two cores with two busy Go servers and the load
#      tool, as it does in the service's run, rather than with
#      redis-benchmark alone (table a2: the service against that).
#   b. orders/s of the service against the thin service: the same
#      dispatch-bench run (concurrency 16, ROUND_DUR after 1 s of warmup)
#      at the thin services, the replicas and the before replicas in turn,
#      ROUNDS times. The ratio service/thin is the second goal (≥ 0.9 at
#      batch 1, ≥ 0.8 at batch 100). On two shared cores orders/s follows
#      the CPU per order of every process, so b. also prints each
#      variant's servers' own CPU per order (/proc/PID/stat, user + system
#      of its two processes from the end of the warmup to the end of the
#      run): the replicas' against the thin services' (b2), and the load
#      tool's own CPU per order (b3), which a bigger answer raises: the
#      three share the cores with Redis.
#
#   e. the spread of a.'s and b.'s ratios round by round (median, middle
#      half, range), the medians of the rounds in which the variant ran
#      before and after its reference (their order is swapped every
#      round), the ratio's drift per round, and the machine's idle share
#      and its nice share (other sessions' niced work) during the runs,
#      from /proc/stat: what makes a round read high or low. e3: the
#      orders/s ratio a CPU-bound machine would give, from b.'s CPU per
#      order of Redis (INFO cpu over the window), the servers and the load
#      tool together.
#
# Each round starts from the same Redis state: RESET=1 (the default)
# deletes a service round's pool when its run ends, as the thin services'
# and the minimal script's orders are, and waits until Redis has freed
# them (lazyfree_pending_objects 0), so that no later run pays for it in
# INFO cpu; RESET=0 keeps them, as before (Redis then grows by every
# round's orders).
# SETS="NAME:VAR=VALUE+VAR=VALUE …" adds variants of BIN's replicas with
# settings of their own, two replicas each on the same Redis, e.g.
# SETS="c1:DISPATCHER_COALESCE_CALLS=1 c3:DISPATCHER_COALESCE_CALLS=3";
# SETS="same:" runs the service twice, an A/A control of the spread.
# Every variant has pools of its own, so two builds can share the Redis:
# their Redis Functions libraries are named by a hash of their source.
# Where they cannot (a build that upgrades the other's pools, say),
# BEFORE_REDIS=own gives the before build a redis-server of its own, whose
# CPU its rows count; the minimal script and the thin services stay on the
# first one.
# While one variant runs the others are idle; the Redis CPU of idle
# replicas (health ticks) is measured first and printed, to show how
# little it adds. The orders stay assigned (no completions), as in the
# issue's figures (within a round: RESET above); IDEM=1 sends an
# Idempotency-Key with every batch.
# PROCS=1 runs every replica and thin service with GOMAXPROCS=1 (one P
# each; see common.sh); unset, Go's default: every core of this machine.
# Bounded: with the defaults about 6 minutes (9 with BIN_BEFORE, about 3
# more per SETS variant); every process it starts is killed on exit. Raw reports and the table go to OUT.
#
#   go build -o /tmp/b/dispatcher ./cmd/dispatcher
#   go build -o /tmp/b/dispatch-bench ./cmd/dispatch-bench
#   cmd/dispatch-bench/ceiling/redis-cpu.sh
#   # BIN=/tmp/b BIN_BEFORE= BATCHES="1 100" DUR=3s CPU_ROUNDS=5 ROUNDS=8 ROUND_DUR=4s IDEM=0 BEFORE_REDIS=shared OUT=/tmp/redis-cpu-out PROCS= SETS= RESET=1 AUTOGROUP_NICE=0
#
# Before and after in one run: build the older dispatcher from a worktree,
#   git worktree add /tmp/before <commit> && (cd /tmp/before && go build -o /tmp/before-bin/dispatcher ./cmd/dispatcher)
#   BIN_BEFORE=/tmp/before-bin cmd/dispatch-bench/ceiling/redis-cpu.sh
set -euo pipefail

# Linux's autogroups (kernel.sched_autogroup_enabled=1, as here) share the
# CPU first between sessions, each one an autogroup, and only then by nice
# within a session: another user's nice -n 19 build in its own session
# takes as much of the cores as this whole run (table e shows the nice
# share of the machine during each run). AUTOGROUP_NICE=-19 starts a
# session of its own (setsid) and sets that autogroup's nice: the others'
# work then yields to the run, and the orders/s ratios at batch 1 scatter
# less (±8–13 % against ±24 % in one A/A pair of runs), but each Redis call
# then preempts a niced process and costs more (INFO cpu per order at
# batch 1 rose from about 40 to 60 µs in every variant), so it is not the
# default (0: as it was). A negative nice needs root (CAP_SYS_NICE); without
# it the run says so and goes on at 0. That session does not get the
# terminal's ^C: stop it with kill -- -PID of the "session" in the first line.
AUTOGROUP_NICE=${AUTOGROUP_NICE:-0}
if [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ] && [ "$AUTOGROUP_NICE" != 0 ] && [ -z "${REDIS_CPU_SESSION:-}" ]; then
  REDIS_CPU_SESSION=1 exec setsid --wait "$0" "$@"
fi
AUTOGROUP="none"
if [ -n "${REDIS_CPU_SESSION:-}" ]; then
  echo "$AUTOGROUP_NICE" >/proc/self/autogroup 2>/dev/null || echo "redis-cpu.sh: cannot set the autogroup's nice to $AUTOGROUP_NICE; it stays 0" >&2
  AUTOGROUP="$(cat /proc/self/autogroup), session $$"
fi

BIN=${BIN:-/tmp/b}
BIN_BEFORE=${BIN_BEFORE:-}
BATCHES=${BATCHES:-1 100}
DUR=${DUR:-3s}
CPU_ROUNDS=${CPU_ROUNDS:-5}
ROUNDS=${ROUNDS:-8}
ROUND_DUR=${ROUND_DUR:-4s}
IDEM=${IDEM:-0}
BEFORE_REDIS=${BEFORE_REDIS:-shared}
SETS=${SETS:-}
RESET=${RESET:-1}
OUT=${OUT:-/tmp/redis-cpu-out}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
# shellcheck source=common.sh
. "$HERE/common.sh"

RAW=$OUT/raw.tsv
: >"$RAW"
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
echo "redis-cpu.sh: nproc $(nproc), loadavg $(loadavg), $(redis-server --version | cut -d' ' -f3), BIN=$BIN${BIN_BEFORE:+ BIN_BEFORE=$BIN_BEFORE BEFORE_REDIS=$BEFORE_REDIS}${PROCS:+ PROCS=$PROCS}${SETS:+ SETS=$SETS} RESET=$RESET, autogroup $AUTOGROUP" | tee "$OUT/log"

startRedis "$OUT/redis.log"
VARIANTS=service RP_service=$RP
startReplicas "$BIN"
SVC_service=$SVC PIDS_service="${SVC_PIDS[*]}"
if [ -n "$BIN_BEFORE" ]; then
  if [ "$BEFORE_REDIS" = own ]; then startRedis "$OUT/redis-before.log"; fi
  RP_before=$RP
  startReplicas "$BIN_BEFORE"
  SVC_before=$SVC PIDS_before="${SVC_PIDS[*]}"
  VARIANTS="service before" RP=$RP_service
fi
# SETS: more variants of BIN, each two replicas with settings of their own
# (name:VAR=VALUE+VAR=VALUE…; "same:" is an A/A control of the service).
for set in $SETS; do
  name=${set%%:*} envs=${set#*:}
  RP=$RP_service REPLICA_ENV=${envs//+/ } startReplicas "$BIN"
  printf -v "SVC_$name" %s "$SVC"
  printf -v "PIDS_$name" %s "${SVC_PIDS[*]}"
  printf -v "RP_$name" %s "$RP_service"
  VARIANTS="$VARIANTS $name"
done
RP=$RP_service
startThins
PIDS_thin="${THIN_PIDS[*]}"
HZ=$(getconf CLK_TCK)
loadMinimal
idem=()
if [ "$IDEM" = 1 ]; then idem=(-idempotency); fi

# pool VARIANT NAME registers pool NAME of 16 Scales on VARIANT's replicas.
pool() {
  local url=SVC_$1
  "$BIN/dispatch-bench" scales -url "${!url}" -pool "$2" -n 16 -progress=false >/dev/null
}

# load URLS POOL BATCH DUR WARMUP FILE runs dispatch-bench at concurrency 16
# and writes its JSON report to FILE.
load() {
  "$BIN/dispatch-bench" run -url "$1" -pool "$2" -batch "$3" -concurrency 16 -duration "$4" \
    -warmup "$5" -json -progress=false "${idem[@]}" >"$6"
}
# batches FILE prints the batches a JSON report counts in total. Reports
# are read here with sed and at the end with python3 only: python3 starts
# slowly on a loaded machine, and would stretch the run between rounds.
batches() { sed -n '/"total"/,/}/s/^ *"batches": *\([0-9]*\).*/\1/p' "$1"; }

# cpuOf PORT prints redisCPU of the Redis on PORT.
cpuOf() {
  local RP=$1
  redisCPU
}

# childCPU FILE prints the CPU seconds (user + system) of the shell's
# waited-for children that the times builtin wrote to FILE (run in the
# shell itself: in a pipe or $(…) it would report a subshell's). Across one
# load in the foreground that is the load tool's CPU.
childCPU() {
  awk 'NR == 2 {for (i = 1; i <= 2; i++) {split($i, t, /[ms]/); s += t[1] * 60 + t[2]}} END {printf "%.3f\n", s}' "$1"
}

# order ROUND WORD... prints the words rotated by (ROUND - 1) / 2 places
# and reversed in even rounds: with two words they alternate (ABBA); with
# n, every word takes every place once forward and once reversed in 2n
# rounds (SETS: make ROUNDS a multiple of twice the variants, thin
# included). A word keeps its two ring neighbours, though: only with two
# words does each variant run as often right after its reference as
# right before it.
order() {
  local r=$1 out=() k i
  shift
  local w=("$@")
  k=$(((r - 1) / 2 % $#))
  for ((i = 0; i < $#; i++)); do
    if ((r % 2)); then out+=("${w[(i + k) % $#]}"); else out=("${w[(i + k) % $#]}" "${out[@]}"); fi
  done
  echo "${out[@]}"
}

# cpustat prints the machine's CPU time so far, in clock ticks, from
# /proc/stat: user nice system idle iowait irq softirq steal (every core).
cpustat() { awk 'NR == 1 {print $2, $3, $4, $5, $6, $7, $8, $9; exit}' /proc/stat; }

# drop PORT POOL deletes a service pool's keys when RESET=1 (and waits for
# Redis to free them in the background, so that no later run pays for it):
# each round then starts from the same Redis state, without the earlier
# rounds' orders.
drop() {
  [ "$RESET" = 1 ] || return 0
  local RP=$1
  R --scan --pattern "dispatch:{pool:$2}:*" | xargs -r redis-cli -p "$RP" unlink >/dev/null
  settle
}

# settle waits until Redis has freed what UNLINK handed to its background
# thread, whose CPU INFO cpu counts (at most 2 s; a Redis without the
# field does not wait).
settle() {
  local n
  for _ in $(seq 20); do
    n=$(R info memory | awk -F: '/^lazyfree_pending_objects:/ {print $2+0}')
    [ "${n:-0}" = 0 ] && return 0
    sleep 0.1
  done
}

# Rows of RAW: idle - - - CPU0 CPU1 SECONDS; cpu VARIANT BATCH ROUND CPU0
# CPU1 ORDERS|REPORT; calls VARIANT BATCH ROUND CALLS COMMANDSTATS; rate
# VARIANT BATCH ROUND REPORT; srv VARIANT BATCH ROUND TICKS0 TICKS1 REPORT
# HZ; tool VARIANT BATCH ROUND SECONDS0 SECONDS1 REPORT; sys VARIANT BATCH
# ROUND CPUSTAT0 CPUSTAT1 POSITION; rcpu VARIANT BATCH ROUND CPU0 CPU1 REPORT
# (Redis over a b. run's window, as srv) (the machine's CPU over a run's measured
# time, and the variant's place in its round, from 1), with PART a or b
# after; mem VARIANT BATCH ROUND USED_MEMORY KEYS PART at a run's start.
# Every round dispatches into pools of its own, fresh (and the minimal
# script's and the thin service's orders are dropped after each round), so
# that no variant carries more orders than another. A second of each batch
# size first, unmeasured: the first call of a build loads its library.
for v in $VARIANTS; do
  pool "$v" "$v-warm"
  url=SVC_$v
  for b in $BATCHES; do load "${!url}" "$v-warm" "$b" 1s 0s /dev/null; done
done
c0=$(redisCPU); sleep 2; c1=$(redisCPU)
echo -e "idle\t-\t-\t-\t$c0\t$c1\t2" >>"$RAW"

# a. Redis CPU per order.
for b in $BATCHES; do
  for round in $(seq "$CPU_ROUNDS"); do
    pos=0
    for v in $(order "$round" $VARIANTS thin) minimal; do
      echo "a: batch $b round $round $v (loadavg $(loadavg), $(date -u +%T))" | tee -a "$OUT/log"
      pos=$((pos + 1))
      echo -e "mem\t$v\t$b\t$round\t$(R info memory | awk -F: '/^used_memory:/ {print $2+0}')\t$(R dbsize)\ta" >>"$RAW"
      s0=$(cpustat)
      if [ "$v" = thin ]; then
        # the same load at the thin services, whose Redis runs minimal.lua
        # beside two busy Go processes, as the service's does
        R config resetstat >/dev/null
        c0=$(redisCPU)
        what=$OUT/a-thin-$b-$round.json
        load "$THIN" "thin-a$b-$round" "$b" "$DUR" 0s "$what"
        c1=$(redisCPU)
        R info commandstats >"$OUT/a-thin-$b-$round.cmdstats"
        echo -e "calls\tthin\t$b\t$round\t$(batches "$what")\t$OUT/a-thin-$b-$round.cmdstats" >>"$RAW"
        R unlink "{thin:thin-a$b-$round}:orders" >/dev/null
        settle
      elif [ "$v" = minimal ]; then
        # as many calls as the service's run of this round made batches
        # (at least 1,000): redis-benchmark has no time limit
        n=$((calls > 1000 ? calls : 1000))
        R config resetstat >/dev/null
        c0=$(redisCPU)
        redis-benchmark -p "$RP" -c 16 -n "$n" -r 1000000000 --csv \
          EVALSHA "$MIN_SHA" 2 '{min}:load' '{min}:orders' __rand_int__ "$b" >"$OUT/a-minimal-$b-$round.csv"
        what=$((n * b))
        c1=$(redisCPU)
        R info commandstats >"$OUT/a-minimal-$b-$round.cmdstats"
        echo -e "calls\tminimal\t$b\t$round\t$n\t$OUT/a-minimal-$b-$round.cmdstats" >>"$RAW"
      else
        pool "$v" "$v-a$b-$round"
        p=RP_$v
        RP=${!p} R config resetstat >/dev/null
        c0=$(cpuOf "${!p}")
        url=SVC_$v
        what=$OUT/a-$v-$b-$round.json
        load "${!url}" "$v-a$b-$round" "$b" "$DUR" 0s "$what"
        if [ "$v" = service ]; then calls=$(batches "$what"); fi
        c1=$(cpuOf "${!p}")
        RP=${!p} R info commandstats >"$OUT/a-$v-$b-$round.cmdstats"
        echo -e "calls\t$v\t$b\t$round\t$(batches "$what")\t$OUT/a-$v-$b-$round.cmdstats" >>"$RAW"
        drop "${!p}" "$v-a$b-$round"
      fi
      echo -e "sys\t$v\t$b\t$round\t$s0\t$(cpustat)\t$pos\ta" >>"$RAW"
      echo -e "cpu\t$v\t$b\t$round\t$c0\t$c1\t$what" >>"$RAW"
    done
    R unlink '{min}:orders' >/dev/null
    settle
  done
done

# b. orders/s against the thin service, alternating rounds.
for b in $BATCHES; do
  for round in $(seq "$ROUNDS"); do
    pos=0
    for v in $(order "$round" thin $VARIANTS); do
      echo "b: batch $b round $round $v (loadavg $(loadavg), $(date -u +%T))" | tee -a "$OUT/log"
      pos=$((pos + 1))
      echo -e "mem\t$v\t$b\t$round\t$(R info memory | awk -F: '/^used_memory:/ {print $2+0}')\t$(R dbsize)\tb" >>"$RAW"
      if [ "$v" = thin ]; then
        url=$THIN
      else
        pool "$v" "$v-b$b-$round"
        url=SVC_$v
        url=${!url}
      fi
      f=$OUT/b-$v-$b-$round.json
      # the servers' CPU from the end of the warmup to the end of the run
      pids=PIDS_$v
      rp=RP_$v
      rp=${!rp:-$RP_service}
      (sleep 1; ticks ${!pids} >"$OUT/ticks0"; cpustat >"$OUT/stat0"; RP=$rp redisCPU >"$OUT/redis0") &
      times >"$OUT/times0"
      load "$url" "$v-b$b-$round" "$b" "$ROUND_DUR" 1s "$f"
      times >"$OUT/times1"
      wait $!
      echo -e "rate\t$v\t$b\t$round\t$f" >>"$RAW"
      echo -e "srv\t$v\t$b\t$round\t$(cat "$OUT/ticks0")\t$(ticks ${!pids})\t$f\t$HZ" >>"$RAW"
      echo -e "tool\t$v\t$b\t$round\t$(childCPU "$OUT/times0")\t$(childCPU "$OUT/times1")\t$f" >>"$RAW"
      echo -e "sys\t$v\t$b\t$round\t$(cat "$OUT/stat0")\t$(cpustat)\t$pos\tb" >>"$RAW"
      echo -e "rcpu\t$v\t$b\t$round\t$(cat "$OUT/redis0")\t$(RP=$rp redisCPU)\t$f" >>"$RAW"
      if [ "$v" = thin ]; then
        R unlink "{thin:thin-b$b-$round}:orders" >/dev/null
        settle
      else
        p=RP_$v
        drop "${!p}" "$v-b$b-$round"
      fi
    done
  done
done
echo "done (loadavg $(loadavg)), redis used_memory $(R info memory | awk -F: '/^used_memory_human:/ {print $2}' | tr -d '\r')" | tee -a "$OUT/log"

python3 - "$RAW" "$VARIANTS" <<'PY' | tee "$OUT/table.txt"
import json, os, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
variants = sys.argv[2].split()

def report(path):
    r = json.load(open(path))
    if r["total"]["errors"]:
        print("errors in %s: %s" % (os.path.basename(path), r["total"]["errors"]))
    return r

def value(r):
    if r[0] == "rate":
        return report(r[4])["ordersPerSec"]
    if r[0] == "rcpu":
        return (float(r[5]) - float(r[4])) / report(r[6])["window"]["orders"] * 1e6
    if r[0] == "srv":
        return (float(r[5]) - float(r[4])) / float(r[7]) / report(r[6])["window"]["orders"] * 1e6
    if r[0] == "tool":
        return (float(r[5]) - float(r[4])) / report(r[6])["total"]["orders"] * 1e6
    orders = float(r[6]) if r[6].isdigit() else report(r[6])["total"]["orders"]
    return (float(r[5]) - float(r[4])) / orders * 1e6

def vals(kind, v, b):
    return [value(r) for r in rows if r[0] == kind and r[1] == v and r[2] == b]

def rng(xs, f="%.1f"):
    return f % xs[0] if len(xs) == 1 else (f + "–" + f) % (min(xs), max(xs))

def commands(r):
    """Commands per batch by name, of a calls row: the script calls
    (evalsha, fcall) and, counted apart by Redis, the commands they ran."""
    out = {}
    for line in open(r[5]):
        if line.startswith("cmdstat_"):
            name, rest = line[8:].split(":", 1)
            fields = dict(f.split("=") for f in rest.strip().split(","))
            out[name] = int(fields["calls"]) / float(r[4])
    return out

def script_calls(r):
    """The script calls (FCALL or EVALSHA) of a calls row."""
    calls = 0
    for line in open(r[5]):
        if line.startswith(("cmdstat_fcall:", "cmdstat_evalsha:")):
            calls += int(dict(f.split("=") for f in line.split(":", 1)[1].strip().split(","))["calls"])
    return calls

def ratios(kind, v, base, b):
    """Round by round, variant v's values of kind at batch b over base's."""
    return [x / y for x, y in zip(vals(kind, v, b), vals(kind, base, b))]

def ratio_table(kind, base, what, base_name, f, unit, of=None):
    """One table: per batch and variant (of variants, default all), the
    values of kind, base's, and their ratios round by round with the
    median (unit after each ratio)."""
    print("| batch | variant | %s | %s | ratio | median ratio |" % (what, base_name))
    print("|---:|---|---:|---:|---:|---:|")
    for b in batches:
        t = vals(kind, base, b)
        for v in of or variants:
            r = ratios(kind, v, base, b)
            print("| %s | %s | %s | %s | %s%s | %.2f%s |" % (b, v, rng(vals(kind, v, b), f), rng(t, f), rng(r, "%.2f"), unit, statistics.median(r), unit))

batches = sorted({r[2] for r in rows if r[0] != "idle"}, key=int)
idle = [(float(r[5]) - float(r[4])) / float(r[6]) * 1e6 for r in rows if r[0] == "idle"][0]
print()
print("a. Redis CPU per order (INFO cpu used_cpu_user + used_cpu_sys, µs/order), 16 Scales, concurrency 16;")
print("   idle replicas cost Redis %.0f µs/s. Per round, the ratio to the minimal script of that round." % idle)
ratio_table("cpu", "minimal", "Redis µs/order", "minimal script", "%.1f", "×", variants + ["thin"])
print()
print("a2. Redis CPU per order against the thin services' (minimal.lua run by two Go services under the")
print("    same load, beside which Redis shares the two cores as it does with the replicas)")
ratio_table("cpu", "thin", "Redis µs/order", "thin service", "%.1f", "×")
print()
print("a3. the batches a script call carried in a.'s runs (batches over INFO commandstats' FCALL or EVALSHA")
print("    calls): the replicas' coalescing, which work.sh's service cases fix at k = 1 and 3. (Where Redis's")
print("    CPU goes inside and outside the calls: work.sh WHOLE=1. commandstats' usec cannot say, as it times")
print("    by the wall clock: beside busy Go servers a call's waits for a core count, above INFO cpu's total.)")
print("| batch | variant | batches a call | median |")
print("|---:|---|---:|---:|")
for b in batches:
    for v in variants:
        per = []
        for k in [r for r in rows if r[0] == "calls" and r[1] == v and r[2] == b]:
            calls = script_calls(k)
            per.append(float(k[4]) / calls if calls else 0)
        print("| %s | %s | %s | %.2f |" % (b, v, rng(per, "%.2f"), statistics.median(per)))
print()
print("b. orders/s against the thin service, alternating rounds, concurrency 16")
ratio_table("rate", "thin", "orders/s", "thin service", "%.0f", "")
print()
print("b2. the servers' own CPU per order in b.'s rounds (user + system of the two processes, /proc/PID/stat,")
print("    from the end of the warmup to the end of the run, over the run's orders; clock ticks of 1/HZ s)")
ratio_table("srv", "thin", "servers µs/order", "thin service", "%.1f", "×")
print()
print("b3. the load tool's own CPU per order in b.'s rounds (user + system of dispatch-bench run, warmup")
print("    included, over all the orders it sent): what a bigger answer costs the client")
ratio_table("tool", "thin", "load tool µs/order", "thin service", "%.1f", "×")
if "before" in variants:
    print()
    print("c. the service over the before build, round by round (Redis µs/order; orders/s)")
    print("| batch | Redis µs/order: service/before | median | orders/s: service/before | median | servers µs/order: service/before | median |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for b in batches:
        cells = []
        for kind in ("cpu", "rate", "srv"):
            r = ratios(kind, "service", "before", b)
            cells.append("%s | %.2f" % (rng(r, "%.2f"), statistics.median(r)))
        print("| %s | %s |" % (b, " | ".join(cells)))
print()
print("d. Redis commands per batch (INFO commandstats of the last round's run in a.; a script's")
print("   own commands are counted as well as the EVALSHA or FCALL that ran them; idle ticks too)")
for b in batches:
    for v in variants + ["thin", "minimal"]:
        last = [r for r in rows if r[0] == "calls" and r[1] == v and r[2] == b][-1]
        cmds = sorted(commands(last).items(), key=lambda kv: -kv[1])
        print("  batch %s %s: %s" % (b, v, ", ".join("%s %.2f" % kv for kv in cmds if kv[1] >= 0.005)))

def sysrows(v, b, part):
    return [r for r in rows if r[0] == "sys" and r[1] == v and r[2] == b and r[7] == part]

def share(r, cols):
    """The share of the machine's CPU time (every core) in the columns
    cols of /proc/stat (0 user, 1 nice, 2 system, 3 idle, 4 iowait, 5 irq,
    6 softirq, 7 steal) over a sys row's run."""
    d = [float(y) - float(x) for x, y in zip(r[4].split(), r[5].split())]
    return sum(d[c] for c in cols) / sum(d) if sum(d) else 0.0

def quart(xs):
    """The median and the middle half (quartiles) of xs."""
    if len(xs) < 4:
        return statistics.median(xs), min(xs), max(xs)
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[1], q[0], q[2]

def spread(xs):
    """±, half the range over the median, in per cent."""
    return 50 * (max(xs) - min(xs)) / statistics.median(xs)

def stats_table(kind, base, part, name):
    """Per batch and variant, the round-by-round ratios of kind to base: median,
    quartiles, range, spread; the medians when the variant ran before base
    and after it; the ratio's drift per round (least squares); and the
    machine's idle and nice (other users' niced) shares over the variant's
    and base's runs."""
    print("| batch | variant | rounds | median | middle half | range | ± | ran first / second | drift per round | idle, nice: variant | idle, nice: %s |" % base)
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b in batches:
        for v in variants:
            r = ratios(kind, v, base, b)
            if not r:
                continue
            m, lo, hi = quart(r)
            pv = [int(x[6]) for x in sysrows(v, b, part)]
            pb = [int(x[6]) for x in sysrows(base, b, part)]
            first = [x for x, a, c in zip(r, pv, pb) if a < c]
            second = [x for x, a, c in zip(r, pv, pb) if a > c]
            fs = "%s / %s" % ("%.3f" % statistics.median(first) if first else "-", "%.3f" % statistics.median(second) if second else "-")
            n = len(r)
            xm = (n - 1) / 2
            slope = sum((i - xm) * (x - statistics.mean(r)) for i, x in enumerate(r)) / max(sum((i - xm) ** 2 for i in range(n)), 1)
            sh = lambda v: "%.0f %%, %.0f %%" % (100 * statistics.median([share(x, [3, 4]) for x in sysrows(v, b, part)] or [0]),
                                                   100 * statistics.median([share(x, [1]) for x in sysrows(v, b, part)] or [0]))
            print("| %s | %s | %d | **%.3f** | %.3f–%.3f | %.3f–%.3f | %.1f %% | %s | %+.3f | %s | %s |" % (
                b, v, n, m, lo, hi, min(r), max(r), spread(r), fs, slope, sh(v), sh(base)))

print()
print("e. the spread of the ratios, round by round (one ratio per round, its two runs adjacent, their order")
print("   swapped every round): median, middle half, range, ± half the range; the medians of the rounds in")
print("   which the variant ran first and second; the drift of the ratio per round; the machine's idle and")
print("   nice (other users' niced processes) shares of its CPU during the runs (/proc/stat).")
print("e1. orders/s ÷ thin service (b.)")
stats_table("rate", "thin", "b", "orders/s")
print("e2. Redis µs/order ÷ minimal script (a.)")
stats_table("cpu", "minimal", "a", "Redis")
print("e3. the orders/s a CPU-bound machine would give, thin service = 1: in b.'s rounds, the thin service's")
print("    CPU per order (Redis's INFO cpu and its servers' over the window, the load tool's over its run) over")
print("    the variant's. Other sessions' work takes CPU time, not CPU per order, so this moves less than b.;")
print("    where b. reads lower, the variant waits rather than computes.")
for r in list(rows):
    if r[0] == "rate":
        k = (r[1], r[2], r[3])
        tot = sum(value(x) for x in rows if x[0] in ("rcpu", "srv", "tool") and (x[1], x[2], x[3]) == k)
        rows.append(["tot", r[1], r[2], r[3], tot])
value_plain = value
def value(r):
    return r[4] if r[0] == "tot" else value_plain(r)
print("| batch | variant | rounds | median | middle half | range | ± | µs/order: variant | thin |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
for b in batches:
    for v in variants:
        r = [y / x for x, y in zip(vals("tot", v, b), vals("tot", "thin", b))]
        if r:
            m, lo, hi = quart(r)
            print("| %s | %s | %d | **%.3f** | %.3f–%.3f | %.3f–%.3f | %.1f %% | %.1f | %.1f |" % (b, v, len(r), m, lo, hi, min(r), max(r), spread(r),
                  statistics.median(vals("tot", v, b)), statistics.median(vals("tot", "thin", b))))
print("e4. where the machine's CPU went in b.'s runs, in per cent of all its cores: the run's own processes")
print("    (Redis, the variant's two servers, the load tool: e3's CPU per order times orders/s), other")
print("    sessions' niced work, idle (/proc/stat). A run that leaves the cores to others or idle waits")
print("    (is latency-bound) rather than computes.")
print("| batch | variant | own | nice | idle |")
print("|---:|---|---:|---:|---:|")
ncpu = os.cpu_count()
for b in batches:
    for v in variants + ["thin"]:
        own = [t * o / 1e6 / ncpu for t, o in zip(vals("tot", v, b), vals("rate", v, b))]
        sr = sysrows(v, b, "b")
        if own:
            print("| %s | %s | %.0f %% | %.0f %% | %.0f %% |" % (b, v, 100 * statistics.median(own),
                  100 * statistics.median([share(x, [1]) for x in sr]), 100 * statistics.median([share(x, [3, 4]) for x in sr])))
print("e5. each variant's own values, ± half their range over the median (a. Redis µs/order; b. orders/s)")
for b in batches:
    for v in variants + ["thin", "minimal"]:
        c = vals("cpu", v, b)
        t = vals("rate", v, b)
        print("  batch %s %s: Redis µs/order ±%.1f %%%s" % (b, v, spread(c), ", orders/s ±%.1f %%" % spread(t) if t else ""))

print()
print("per round:")
for kind, f in (("cpu", "%.1f"), ("rate", "%.0f"), ("rcpu", "%.1f"), ("srv", "%.1f"), ("tool", "%.1f")):
    for b in batches:
        for v in variants + (["thin", "minimal"] if kind == "cpu" else ["thin"]):
            print("  %s batch %s %s: %s" % (kind, b, v, " ".join(f % x for x in vals(kind, v, b))))
for part in ("a", "b"):
    for b in batches:
        for v in variants + ["thin"] + (["minimal"] if part == "a" else []):
            print("  %s: idle/nice %%, batch %s %s: %s" % (part, b, v, " ".join("%.0f/%.0f" % (100 * share(x, [3, 4]), 100 * share(x, [1])) for x in sysrows(v, b, part))))
    for b in batches:
        for v in variants + ["thin"]:
            print("  %s: Redis MB at the start, batch %s %s: %s" % (part, b, v, " ".join("%.0f" % (float(r[4]) / 1e6) for r in rows if r[0] == "mem" and r[1] == v and r[2] == b and r[6] == part)))
PY
