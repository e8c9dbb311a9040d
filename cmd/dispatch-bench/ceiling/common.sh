# common.sh: what measure.sh, pair.sh, cpu.sh and redis-cpu.sh share; they source it after
# setting HERE (this directory). Every process a script starts goes in PIDS
# and is killed on exit. PROCS=N runs the servers they start (replicas,
# no-op and thin services) with GOMAXPROCS=N; unset, Go's default (every
# core here; in a container its CPU limit rounded up, at least 2). env
# execs the server, so $! stays its pid.

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

freeport() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# startRedis LOG starts a throwaway redis-server on a free loopback port,
# logging to LOG, and waits for it; it sets RP, its port, and R runs
# redis-cli on it.
startRedis() {
  RP=$(freeport)
  redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --logfile "$1" & PIDS+=($!)
  for _ in $(seq 100); do redis-cli -p "$RP" ping >/dev/null 2>&1 && break; sleep 0.1; done
}
R() { redis-cli -p "$RP" "$@"; }

# loadCeiling sets up the ceiling: its load ZSET of 1,000 Scales, like the
# service's pools of 1,000, and ceiling.lua, whose SHA it sets in SHA.
loadCeiling() {
  R eval "for i=1,1000 do redis.call('ZADD', KEYS[1], 0, 's-'..i) end" 1 '{ceil}:load' >/dev/null
  SHA=$(R script load "$(cat "$HERE/ceiling.lua")")
}

# startReplicas [DIR] starts two dispatcher replicas (DIR/dispatcher,
# default $BIN/dispatcher) on the Redis of startRedis, with default
# settings (and REPLICA_ENV's assignments, VAR=VALUE separated by spaces,
# if set), and waits for them: SVC gets their base URLs, comma-separated,
# and SVC_PIDS their pids.
startReplicas() {
  SVC="" SVC_PIDS=()
  local dir=${1:-$BIN}
  for _ in 1 2; do
    local p
    p=$(freeport)
    env ${PROCS:+GOMAXPROCS=$PROCS} ${REPLICA_ENV:-} DISPATCHER_ADDR=127.0.0.1:$p DISPATCHER_REDIS_URL=redis://127.0.0.1:$RP \
      "$dir/dispatcher" >/dev/null 2>&1 & PIDS+=($!) SVC_PIDS+=($!)
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$p/healthz" && break; sleep 0.1; done
    SVC=${SVC:+$SVC,}http://127.0.0.1:$p
  done
}

# startNoops starts two no-op servers ($BIN/dispatch-bench noop), the HTTP
# floor, and waits for them: NOOP gets their base URLs and NOOP_PIDS their
# pids.
startNoops() {
  NOOP="" NOOP_PIDS=()
  for _ in 1 2; do
    local p
    p=$(freeport)
    env ${PROCS:+GOMAXPROCS=$PROCS} "$BIN/dispatch-bench" noop -addr "127.0.0.1:$p" >/dev/null 2>&1 & PIDS+=($!) NOOP_PIDS+=($!)
    for _ in $(seq 100); do curl -s -o /dev/null -X POST "http://127.0.0.1:$p/" && break; sleep 0.1; done
    NOOP=${NOOP:+$NOOP,}http://127.0.0.1:$p
  done
}


# startThins starts two thin services ($BIN/dispatch-bench thin: a batch
# decoded, minimal.lua run through go-redis, nothing else) on the Redis of
# startRedis, each pool 16 Scales, and waits for them: THIN gets their base
# URLs, comma-separated, and THIN_PIDS their pids.
startThins() {
  THIN="" THIN_PIDS=()
  for _ in 1 2; do
    local p
    p=$(freeport)
    env ${PROCS:+GOMAXPROCS=$PROCS} "$BIN/dispatch-bench" thin -addr "127.0.0.1:$p" -redis "redis://127.0.0.1:$RP" -scales 16 >/dev/null 2>&1 & PIDS+=($!) THIN_PIDS+=($!)
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$p/" && break; sleep 0.1; done
    THIN=${THIN:+$THIN,}http://127.0.0.1:$p
  done
}

# loadMinimal sets up the minimal script of issue 21: its load ZSET of 16
# Scales ({min}:load, all unloaded) and minimal.lua, whose SHA it sets in
# MIN_SHA.
loadMinimal() {
  R unlink '{min}:load' '{min}:orders' >/dev/null
  R eval "for i=1,16 do redis.call('ZADD', KEYS[1], 0, string.format('s-%02d', i)) end" 1 '{min}:load' >/dev/null
  MIN_SHA=$(R script load "$(cat "$HERE/minimal.lua")")
}

# ticks PID... prints the clock ticks of CPU (user + system) the processes
# have used so far (/proc/PID/stat).
ticks() { for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat"; done | awk '{s += $1} END {print s}'; }

# redisCPU prints the CPU seconds (used_cpu_user + used_cpu_sys of INFO
# cpu) the Redis of startRedis has used so far.
redisCPU() { R info cpu | awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.6f\n", s}'; }
