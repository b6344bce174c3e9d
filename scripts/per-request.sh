#!/usr/bin/env bash
# Per-request costs of GET /users/me (or another natter-load --kind),
# measured in ways that do not depend on how busy the shared box is:
#
#   callgrind  instructions per request in natter (--workers 1, every
#              thread), the difference method: WARMUP requests, counters
#              zeroed, REQUESTS requests, dump / REQUESTS;
#   perf       CPU time, context switches and system calls per request of
#              natter (GET /users/me) and of the bare ceiling (fixed JSON)
#              under the ceiling row's load (PERF_CONNECTIONS 64, natter
#              and the ceiling on 2 workers, the client on 2 threads):
#              `perf stat -p` on the server while the client runs;
#   strace     system calls per request, for natter and for the bare
#              may_minihttp ceiling (`natter-ceiling`) under the same load
#              (`strace -c -f`, the whole process, REQUESTS requests).
#
#   scripts/per-request.sh              # both, GET /users/me
#   KIND=fixed scripts/per-request.sh   # natter's loop with fixed JSON
#   ONLY=strace scripts/per-request.sh  # one of the three
#   ONLY=perf KIND=send NATTER_ARGS="--fsync never" scripts/per-request.sh
#
# strace slows every system call so much that the client always has the
# next request ready: it shows which calls a request makes, not how often
# the loop finds nothing to read; the perf counts are the real mix.
#
# Environment: KIND (me), REQUESTS (10000), WARMUP (2000), CONNECTIONS
# (4), BIN (target/release), ONLY (callgrind|perf|strace), NATTER_ARGS
# (extra options for the perf run's natter, e.g. "--fsync never" or
# "--workers 1"; they replace the default --workers 2), NO_BUILD=1, KEEP
# (a path prefix: keep the whole strace tables as KEEP.natter.strace and
# KEEP.ceiling.strace).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin natter --bin natter-load --bin natter-ceiling >&2
BIN=${BIN:-target/release}
KIND=${KIND:-me}
REQUESTS=${REQUESTS:-10000}
WARMUP=${WARMUP:-2000}
CONNECTIONS=${CONNECTIONS:-4}
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
  rm -rf "$TMP"
}
trap cleanup EXIT

load() { # load ADDR KIND N
  "$BIN/natter-load" --addr "$1" --kind "$2" --requests "$3" --connections "$CONNECTIONS" \
    --client-threads 1 >/dev/null
}

# wait_for FILE PATTERN: until the server prints its address.
wait_for() {
  for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return; sleep 0.1; done
  echo "no '$2' in $1" >&2; cat "$1" >&2; exit 1
}

echo "load average $(cut -d' ' -f1-3 /proc/loadavg); kind $KIND; $CONNECTIONS connections; $REQUESTS requests"

if [ "${ONLY:-callgrind}" = callgrind ]; then
  valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.%p" \
    "$BIN/natter" --dev --rate-limit off --data-dir "$TMP/cg" --listen 127.0.0.1:0 --workers 1 --snapshot-every 0 \
    >"$TMP/cg.out" 2>"$TMP/cg.err" &
  PIDS+=($!)
  wait_for "$TMP/cg.out" "listening on"
  addr=$(sed -n 's|natter: listening on http://||p' "$TMP/cg.out")
  load "$addr" "$KIND" "$WARMUP"
  callgrind_control -z "${PIDS[-1]}" >/dev/null
  load "$addr" "$KIND" "$REQUESTS"
  callgrind_control -d "${PIDS[-1]}" >/dev/null
  sleep 1
  total=$(cat "$TMP"/cg.*.[0-9]* 2>/dev/null | sed -n 's/^summary: //p' | awk '{s+=$1} END {print s}')
  echo "callgrind: natter $KIND: $((total / REQUESTS)) instructions per request"
  [ -z "${KEEP:-}" ] || cat "$TMP"/cg.*.[0-9]* >"$KEEP.callgrind"
  kill "${PIDS[-1]}"
fi

# stop_traced: ends the process strace runs (strace then prints its table).
stop_traced() {
  local child
  child=$(pgrep -P "${PIDS[-1]}" | head -1)
  kill -TERM "$child"
  wait "${PIDS[-1]}" 2>/dev/null || true
}

if [ "${ONLY:-perf}" = perf ]; then
  events=task-clock,context-switches,raw_syscalls:sys_enter
  for call in read recvfrom write sendto writev epoll_wait futex sched_yield; do
    events=$events,syscalls:sys_enter_$call
  done
  PC=${PERF_CONNECTIONS:-64}
  N=${PERF_REQUESTS:-200000}
  # shellcheck disable=SC2086 # NATTER_ARGS is a list of options
  "$BIN/natter" --dev --rate-limit off --data-dir "$TMP/pf" --listen 127.0.0.1:0 ${NATTER_ARGS:---workers 2} \
    >"$TMP/pf.out" 2>"$TMP/pf.err" &
  PIDS+=($!)
  wait_for "$TMP/pf.out" "listening on"
  addr=$(sed -n 's|natter: listening on http://||p' "$TMP/pf.out")
  "$BIN/natter-ceiling" --workers 2 --seconds 3600 >"$TMP/pc.out" 2>&1 &
  PIDS+=($!)
  wait_for "$TMP/pc.out" "may_minihttp http"
  bare=$(sed -n 's|natter-ceiling: may_minihttp http://||p' "$TMP/pc.out")
  # perf_run NAME PID ADDR KIND: the server's counters while the client runs.
  perf_run() {
    "$BIN/natter-load" --addr "$3" --kind "$4" --requests 20000 --connections "$PC" >/dev/null
    local before after box_before box_after
    before=$(cut -d' ' -f14-15 "/proc/$2/stat")
    box_before=$(sed -n 's/^cpu  //p' /proc/stat)
    perf stat -x, -e "$events" -p "$2" -o "$TMP/$1.perf" -- \
      "$BIN/natter-load" --addr "$3" --kind "$4" --requests "$N" --connections "$PC" \
      --client-threads 2 | sed -n "s/^/  $1 /p" | tail -1
    after=$(cut -d' ' -f14-15 "/proc/$2/stat")
    box_after=$(sed -n 's/^cpu  //p' /proc/stat)
    echo "perf: $1, per request ($N requests, $PC connections):"
    # utime and stime are in clock ticks
    echo "$before $after" | awk -v n="$N" -v hz="$(getconf CLK_TCK)" '{
        printf "  %-18s %7.2f µs\n  %-18s %7.2f µs\n", "user CPU", ($3 - $1) / hz / n * 1e6,
          "system CPU", ($4 - $2) / hz / n * 1e6 }'
    # The whole box (client and kernel too): busy CPU per request, and
    # the share of it idle (idle and iowait) while the client ran.
    echo "$box_before | $box_after" | awk -v n="$N" -v hz="$(getconf CLK_TCK)" -F' [|] ' '{
        split($1, a, " "); split($2, b, " "); total = 0; idle = 0
        for (i = 1; i <= 8; i++) { d = b[i] - a[i]; total += d; if (i == 4 || i == 5) idle += d }
        printf "  %-18s %7.2f µs\n  %-18s %7.1f %%\n", "box busy CPU", (total - idle) / hz / n * 1e6,
          "box idle", total ? 100 * idle / total : 0 }'
    awk -F, -v n="$N" '$1 ~ /^[0-9.]+$/ {
        unit = ($3 == "task-clock") ? "µs" : ""; v = $1 / n; if (unit == "µs") v = v * 1000
        name = $3; sub(/^syscalls:sys_enter_/, "", name); sub(/^raw_syscalls:sys_enter/, "all system calls", name)
        if (v >= 0.005) printf "  %-18s %7.2f %s\n", name, v, unit }' "$TMP/$1.perf"
  }
  perf_run natter "${PIDS[-2]}" "$addr" "$KIND"
  perf_run ceiling "${PIDS[-1]}" "$bare" fixed
fi

if [ "${ONLY:-strace}" = strace ]; then
  # natter
  strace -c -f -o "$TMP/natter.strace" \
    "$BIN/natter" --dev --rate-limit off --data-dir "$TMP/st" --listen 127.0.0.1:0 --workers 1 --snapshot-every 0 \
    >"$TMP/st.out" 2>"$TMP/st.err" &
  PIDS+=($!)
  wait_for "$TMP/st.out" "listening on"
  addr=$(sed -n 's|natter: listening on http://||p' "$TMP/st.out")
  load "$addr" "$KIND" "$REQUESTS"
  stop_traced
  # the ceiling (bare may_minihttp), same requests as far as it answers them
  strace -c -f -o "$TMP/ceiling.strace" "$BIN/natter-ceiling" --workers 1 --seconds 3600 \
    >"$TMP/ceiling.out" 2>&1 &
  PIDS+=($!)
  wait_for "$TMP/ceiling.out" "may_minihttp http"
  bare=$(sed -n 's|natter-ceiling: may_minihttp http://||p' "$TMP/ceiling.out")
  load "$bare" fixed "$REQUESTS"
  stop_traced
  for who in natter ceiling; do
    echo "strace: $who, system calls per request (calls / $REQUESTS; start-up included):"
    # columns: % time, seconds, usecs/call, calls, [errors,] name
    awk -v n="$REQUESTS" '$1 ~ /^[0-9.]+$/ && $4 ~ /^[0-9]+$/ && ($NF == "total" || $4 > n / 50) {
        printf "  %-16s %6.2f\n", $NF, $4 / n }' "$TMP/$who.strace"
    [ -z "${KEEP:-}" ] || cp "$TMP/$who.strace" "$KEEP.$who.strace"
  done
fi
