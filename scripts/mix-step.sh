#!/usr/bin/env bash
# "Supported users" the way docs/PERFORMANCE.md's targets measure it: for each user
# count given, a FRESH --dev natter on a temp data dir (queues survive a
# clean restart, so a reused dir would carry every earlier step's queues),
# then `natter-load --kind mix` at exactly that count; prints each step's
# windows, verdict and the load average before and after.
#
#   scripts/mix-step.sh 9000 10000 12000
#
# Environment: CONNECTIONS (64, the action pool), RATE (0.2), WARMUP (5),
# WINDOW (15), CLIENT_THREADS (1), WORKERS (natter's default), NO_BUILD=1,
# BIN (target/release), NATTER_ARGS (extra server flags).
#
# Open files: each simulated user holds one parked long-poll, i.e. one
# socket in natter and one in natter-load. Both raise their soft limit to
# the hard one; the hard limit can only be raised with CAP_SYS_RESOURCE
# (`prlimit --nofile=N:N` as root on a normal box). This script tries
# `ulimit -Hn $((users + 1000))` first and says what it got.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin natter --bin natter-load >&2
BIN=${BIN:-target/release}
CONNECTIONS=${CONNECTIONS:-64}
RATE=${RATE:-0.2}
WARMUP=${WARMUP:-5}
WINDOW=${WINDOW:-15}
CLIENT_THREADS=${CLIENT_THREADS:-1}
read -r -a EXTRA <<<"${NATTER_ARGS:-}"
[ -z "${WORKERS:-}" ] || EXTRA+=(--workers "$WORKERS")
DATA=
PID=
cleanup() { [ -z "$PID" ] || kill "$PID" 2>/dev/null || true; [ -z "$DATA" ] || rm -rf "$DATA"; }
trap cleanup EXIT

for USERS in "$@"; do
  want=$((USERS + CONNECTIONS + 1000))
  if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$want" ]; then
    ulimit -Hn "$want" 2>/dev/null || true
  fi
  ulimit -Sn "$(ulimit -Hn)"
  # Every coroutine stack is a memory mapping plus a guard: natter-load
  # holds two coroutines per user, so past ≈ 16,000 users the default
  # vm.max_map_count (65,530) makes its stacks fail with ENOMEM.
  maps=$((USERS * 6 + 20000))
  if [ "$(cat /proc/sys/vm/max_map_count)" -lt "$maps" ]; then
    echo "$maps" >/proc/sys/vm/max_map_count 2>/dev/null ||
      echo "warning: vm.max_map_count $(cat /proc/sys/vm/max_map_count) < $maps wanted (needs root)" >&2
  fi
  echo "== $USERS users ($(date +%T), open-file limit $(ulimit -n), load average $(cut -d' ' -f1-3 /proc/loadavg))"
  DATA=$(mktemp -d)
  "$BIN/natter" --dev --rate-limit off --data-dir "$DATA/data" --listen 127.0.0.1:0 \
    --max-connections 1000000 "${EXTRA[@]}" >"$DATA/out" 2>"$DATA/err" &
  PID=$!
  ADDR=$(natter_address "$DATA/out" "$PID" "$DATA/err")
  "$BIN/natter-load" --addr "$ADDR" --kind mix --ramp-from "$USERS" --ramp-to "$USERS" \
    --rate "$RATE" --warmup "$WARMUP" --window "$WINDOW" --connections "$CONNECTIONS" \
    --client-threads "$CLIENT_THREADS" >"$DATA/load" 2>&1 &
  LOAD=$!
  # natter's CPU during the measured window (from the end of the warm-up
  # to the window's report), in clock ticks.
  cpu() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
  until grep -q "registered\|^-- " "$DATA/load"; do
    # natter-load gave up before measuring (e.g. a failed setup): say why.
    kill -0 "$LOAD" 2>/dev/null || { cat "$DATA/load"; echo "natter-load stopped before measuring" >&2; exit 1; }
    sleep 0.2
  done
  sleep "$WARMUP"
  S0=$(cpu "$PID"); T0=$(date +%s.%N)
  until grep -q "^-- " "$DATA/load" || ! kill -0 "$LOAD" 2>/dev/null; do sleep 0.1; done
  S1=$(cpu "$PID"); T1=$(date +%s.%N)
  wait "$LOAD" || true
  cat "$DATA/load"
  DELIVERIES=$(awk '/delivery \(send/ {print $5}' "$DATA/load")
  HZ=$(getconf CLK_TCK)
  awk -v s=$((S1 - S0)) -v t="$(echo "$T1 - $T0" | bc)" -v d="${DELIVERIES:-0}" -v hz="$HZ" -v w="$WINDOW" 'BEGIN {
    printf "   natter CPU in the window: %.2f cores, %.0f us per delivery (all its CPU / deliveries)\n",
      s / hz / t, (d > 0 ? 1e6 * s / hz / t / (d / w) : 0) }'
  echo "   RSS of natter: $(grep VmRSS /proc/$PID/status | awk '{print $2}') kB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  grep -v "^natter: listening" "$DATA/err" | grep -i "warning\|error" | head -5 || true
  kill -TERM "$PID"; while kill -0 "$PID" 2>/dev/null; do sleep 0.05; done
  PID=
  rm -rf "$DATA"; DATA=
done
