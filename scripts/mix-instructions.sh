#!/usr/bin/env bash
# Instructions per request of the chat mix under callgrind (docs/PERFORMANCE.md's
# "supported users" path, counted instead of timed: wall-clock CPU cannot
# show a few percent on a shared, noisy box). A release natter (`--dev
# --workers 1 --snapshot-every 0`) under valgrind; `natter-load --kind mix`
# with USERS users at RATE actions per user per second on one client
# thread; counters zeroed after WARMUP seconds, dumped after WINDOW; per
# request = every thread's instructions / (the window's requests + the
# events its long-polls returned). Under valgrind natter is far slower than
# the mix asks, so the pass/fail verdict natter-load prints means nothing
# here; only the count does.
#
#   scripts/mix-instructions.sh                 # 400 users at 0.5/s
#   BIN=/tmp/old NO_BUILD=1 scripts/mix-instructions.sh   # another build
#
# Environment: USERS (400), RATE (0.5), WARMUP (8), WINDOW (20), BIN
# (target/release: natter and natter-load), NO_BUILD=1 to skip the build,
# KEEP=DIR to keep the callgrind file there (for callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin natter --bin natter-load >&2
BIN=${BIN:-target/release}
USERS=${USERS:-400}
RATE=${RATE:-0.5}
WARMUP=${WARMUP:-8}
WINDOW=${WINDOW:-20}
TMP=$(mktemp -d)
PID=
trap callgrind_cleanup EXIT
callgrind_natter "$TMP"
"$BIN/natter-load" --addr "$ADDR" --kind mix --users "$USERS" --rate "$RATE" \
  --warmup "$WARMUP" --window "$WINDOW" --connections 8 --client-threads 1 >"$TMP/load" 2>&1 &
LOAD=$!
until grep -q "registered" "$TMP/load"; do
  kill -0 "$LOAD" 2>/dev/null || { cat "$TMP/load" >&2; exit 1; }
  sleep 0.2
done
sleep "$WARMUP"
callgrind_control -z "$PID" >/dev/null 2>&1
until grep -q "^-- " "$TMP/load"; do
  kill -0 "$LOAD" 2>/dev/null || { cat "$TMP/load" >&2; exit 1; }
  sleep 0.2
done
callgrind_control -d "$PID" >/dev/null 2>&1
sleep 1
wait "$LOAD"
FILE=$(ls -t "$TMP"/callgrind."$PID".* | head -1)
TOTAL=$(sed -n 's/^totals: //p' "$FILE")
# The window's requests (the ALL REQUESTS line) and the long-polls'
# returns (GET /events), from natter-load's report.
REQUESTS=$(awk '/ALL REQUESTS/ {a = $3} /GET \/events/ {b = $4} END {print a + b}' "$TMP/load")
grep -E "ALL REQUESTS|GET /events" "$TMP/load"
echo "mix ($USERS users at $RATE/s): $TOTAL instructions for $REQUESTS requests = $((TOTAL / REQUESTS)) per request"
[ -z "${KEEP:-}" ] || cp "$FILE" "$KEEP/"
