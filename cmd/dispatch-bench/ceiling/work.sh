#!/usr/bin/env bash
# work.sh: Redis's instructions per order inside the dispatch function
# (FCALL) and inside the minimal script (EVALSHA of minimal.lua), counted
# by valgrind's callgrind, for one or more builds in ONE run, alternating.
#
# It runs store/redis's BenchmarkRedisWork (batches of 100 and of 1 over 16
# Scales with the waterfill, named after their first order as the Service
# names them, k batches a call; minimal.lua on a ZSET of 16, its orders
# named by the script as redis-benchmark runs it in redis-cpu.sh
# ("minimal"), and the same with the ids as arguments, as the thin service
# sends them ("thin": the floor that redis-cpu.sh's orders/s and a2 compare
# against, about 0.86 of "minimal" at batch 100) with a
# redis-server that is valgrind --tool=callgrind --instr-atstart=no
# --collect-atstart=no --toggle-collect=fcallCommand
# --toggle-collect=evalShaCommand: only the calls themselves count (not
# the event loop, not the timers), which the benchmark zeroes after its
# warm-up and dumps after its measured calls (callgrind_control). Debian's
# redis-server exports both functions' symbols, so no build of Redis is
# needed. Instruction counts are steady to about ±0.5 % on a loaded
# machine, where timings are not. WHOLE=1 counts the whole server
# instead, from the benchmark's zeroing to its dump: reading and parsing
# each request, writing its reply, the event loop and the timers as well
# (not the kernel's side of its system calls).
#
#   TESTS  test binaries of store/redis to compare, in order
#          (default: one built from the working tree); build another with
#          `go test -c -o /tmp/before.test ./store/redis` in a worktree of
#          the older commit (it needs this benchmark).
#   BENCH  which cases (-test.bench pattern under BenchmarkRedisWork/;
#          default all: service batch=100 k=1 and k=3, batch=1 k=1 and k=4,
#          minimal and thin batch=100 and batch=1)
#   N      measured calls per case (default 40)
#   ROUNDS rounds of all the binaries in turn (default 2)
#   REDIS  the redis-server binary (default: the one in PATH)
#   WHOLE  1: count the whole server, not only inside the calls
#
# Prints one line per case, binary and round: kIr/order, a table of each
# case's median per binary and its ratio to the first binary, and each
# binary's service cases over the thin and the minimal cases of their
# batch size.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
N=${N:-40}
ROUNDS=${ROUNDS:-2}
BENCH=${BENCH:-.}
REDIS=${REDIS:-$(command -v redis-server)}
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
  { echo "work.sh: valgrind (with callgrind_control) is needed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/cg"
collect="--collect-atstart=no --toggle-collect=fcallCommand --toggle-collect=evalShaCommand"
if [ "${WHOLE:-0}" = 1 ]; then collect="--collect-atstart=yes"; fi
cat >"$tmp/bin/redis-server" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --instr-atstart=no $collect \
  --callgrind-out-file=$tmp/cg/cg.%p "$REDIS" "\$@" 2>>$tmp/valgrind.log
EOF
chmod +x "$tmp/bin/redis-server"
if [ -z "${TESTS:-}" ]; then
  (cd "$repo" && go test -c -o "$tmp/work.test" ./store/redis)
  TESTS="$tmp/work.test"
fi
cd "$repo/store/redis"
for r in $(seq "$ROUNDS"); do
  i=0
  for t in $TESTS; do
    i=$((i + 1))
    PATH="$tmp/bin:$PATH" REDIS_WORK_CG="$tmp/cg" "$t" -test.run '^$' \
      -test.bench "RedisWork/$BENCH" -test.benchtime "${N}x" 2>&1 |
      awk -v b="$i" -v r="$r" '/^BenchmarkRedisWork/ {
        for (f = 1; f <= NF; f++) if ($f == "kIr/order") k = $(f - 1)
        name = $1; sub(/^BenchmarkRedisWork\//, "", name); sub(/-[0-9]+$/, "", name)
        printf "%-24s build %d round %d  %8.2f kIr/order\n", name, b, r, k }
        /FAIL|panic/ { print; bad = 1 } END { exit bad }' | tee -a "$tmp/lines"
  done
done
echo
what="inside the call"
if [ "${WHOLE:-0}" = 1 ]; then what="in the whole server"; fi
echo "medians, kIr per order $what (build 1 = ${TESTS%% *}):"
awk '{ v[$1 " " $3] = v[$1 " " $3] " " $6; names[$1] = 1; if ($3 > nb) nb = $3 }
  function med(s,   a, n, i, j, t) { n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  END { for (c in names) { line = sprintf("%-24s", c); m1 = med(v[c " 1"])
      for (b = 1; b <= nb; b++) { m = med(v[c " " b]); line = line sprintf("  build %d %8.2f", b, m)
        if (b > 1 && m1 > 0) line = line sprintf(" (%.3f)", m / m1) }
      print line } }' "$tmp/lines" | sort
echo
echo "the service's medians over the thin service's script (its ids as arguments) and minimal.lua's (names made in Lua):"
awk '{ v[$1 " " $3] = v[$1 " " $3] " " $6; names[$1] = 1; if ($3 > nb) nb = $3 }
  function med(s,   a, n, i, j, t) { n = split(s, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  END { for (c in names) { if (c !~ /^service\//) continue
      bs = c; sub(/^service\//, "", bs); sub(/\/.*/, "", bs)
      if (!(("thin/" bs " 1") in v) && !(("minimal/" bs " 1") in v)) continue
      line = sprintf("%-24s", c)
      for (b = 1; b <= nb; b++) { m = med(v[c " " b]); t = med(v["thin/" bs " " b]); n = med(v["minimal/" bs " " b])
        line = line sprintf("  build %d", b)
        line = line (t > 0 ? sprintf(" ÷ thin %.2f×", m / t) : " ÷ thin -")
        line = line (n > 0 ? sprintf(" ÷ minimal %.2f×", m / n) : " ÷ minimal -") }
      print line } }' "$tmp/lines" | sort
