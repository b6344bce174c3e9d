#!/usr/bin/env bash
# Instructions per request under callgrind (docs/PERFORMANCE.md's CPU figures; stable
# on a shared, noisy box where wall-clock rates are not): a release natter
# (`--dev --workers 1 --snapshot-every 0`) under valgrind, natter-load
# with 4 connections on one client thread; WARMUP requests, counters
# zeroed, REQUESTS requests, dump; per request = the dump's total (every
# thread) / REQUESTS.
#
#   scripts/instructions.sh                # durable sends
#   FSYNC=never scripts/instructions.sh    # sends with --fsync never
#   KIND=me scripts/instructions.sh        # GET /users/me
#
# Environment: KIND (send), FSYNC (always), REQUESTS (10000), WARMUP
# (2000), NATTER_ARGS (more natter options), BIN (target/release),
# NO_BUILD=1 to skip the build, KEEP=DIR to keep the callgrind file there
# (for callgrind_annotate).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin natter --bin natter-load >&2
BIN=${BIN:-target/release}
KIND=${KIND:-send}
FSYNC=${FSYNC:-always}
REQUESTS=${REQUESTS:-10000}
WARMUP=${WARMUP:-2000}
TMP=$(mktemp -d)
PID=
trap callgrind_cleanup EXIT
# NATTER_ARGS: more natter options, e.g. "--metrics-token …" to count what
# the request metrics cost.
# shellcheck disable=SC2086
callgrind_natter "$TMP" --fsync "$FSYNC" ${NATTER_ARGS:-}
load() {
  "$BIN/natter-load" --addr "$ADDR" --kind "$KIND" --requests "$1" --connections 4 --client-threads 1 | tail -1
}
load "$WARMUP" >/dev/null
callgrind_control -z "$PID" >/dev/null 2>&1
load "$REQUESTS"
callgrind_control -d "$PID" >/dev/null 2>&1
FILE=$(ls -t "$TMP"/callgrind."$PID".* | head -1)
TOTAL=$(sed -n 's/^totals: //p' "$FILE")
echo "$KIND (--fsync $FSYNC): $TOTAL instructions for $REQUESTS requests = $((TOTAL / REQUESTS)) per request"
[ -z "${KEEP:-}" ] || cp "$FILE" "$KEEP/"
