#!/usr/bin/env bash
# The ceiling comparison (docs/PERFORMANCE.md), in one run: bare may_minihttp
# answering fixed JSON (`natter-ceiling`) against natter, with the same
# client (`natter-load`, may coroutines on --client-threads threads), the
# same connections and the same requests per round, rounds alternating
# between the two servers; prints each row's ratio to the ceiling, and at
# the end each row's values with their median (RUNS > 1 for a median).
#
#   scripts/ceiling.sh                 # every row, 3 rounds each
#   RUNS=5 scripts/ceiling.sh me       # one row, five times (median it)
#
# Rows: fixed (natter's HTTP loop), me (GET /users/me), send (durable
# POST /messages, --fsync always), send-never (POST /messages, --fsync
# never), half (durable sends at half of the measured peak: p99 there, and
# the durable ceiling's at the same rate),
# durable (the durable ceiling — natter's loop answering the fixed JSON once
# a send-sized record is synced by natter's log, no application work —
# against bare may_minihttp, then natter's durable sends against it: what
# the syncs cost, and what natter's work costs on top).
# Environment: CONNECTIONS (64), REQUESTS per row (300000; sends 150000),
# ROUNDS (3), RUNS (1), CLIENT_THREADS (2), WORKERS (natter's and the ceiling's, 2; NATTER_WORKERS sets natter's alone),
# NATTER_ARGS (extra natter options, e.g. "--snapshot-every 0" to leave
# snapshot pauses out), NO_BUILD=1 to skip `cargo build --release`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin natter --bin natter-load --bin natter-ceiling >&2
BIN=${BIN:-target/release}
CONNECTIONS=${CONNECTIONS:-64}
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-1}
CLIENT_THREADS=${CLIENT_THREADS:-2}
WORKERS=${WORKERS:-2}
ROWS=${*:-fixed me send send-never half}
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
  # natter's clean-shutdown summary: writer-lock time, records per fsync.
  for f in "$TMP"/always.err "$TMP"/never.err; do
    [ -f "$f" ] && sed -n "s|^natter: commit path|$(basename "$f" .err): commit path|p" "$f"
  done
  rm -rf "$TMP"
}
trap cleanup EXIT

# start_natter NAME ARGS...: a --dev natter on a free port; sets ADDR.
# (Not run in a $(…) subshell: its pid must reach PIDS for the cleanup.)
start_natter() {
  local name=$1; shift
  "$BIN/natter" --dev --rate-limit off --data-dir "$TMP/$name" --listen 127.0.0.1:0 --workers "${NATTER_WORKERS:-$WORKERS}" ${NATTER_ARGS:-} "$@" \
    >"$TMP/$name.out" 2>"$TMP/$name.err" &
  PIDS+=($!)
  ADDR=$(natter_address "$TMP/$name.out" "${PIDS[-1]}" "$TMP/$name.err") || exit 1
}

"$BIN/natter-ceiling" --workers "$WORKERS" --seconds 36000 --log-dir "$TMP/ceiling-log" >"$TMP/ceiling.out" &
PIDS+=($!)
for _ in $(seq 100); do grep -q may_minihttp "$TMP/ceiling.out" 2>/dev/null && break; sleep 0.1; done
LOOP=$(sed -n 's|natter-ceiling: natter loop http://||p' "$TMP/ceiling.out")
BARE=$(sed -n 's|natter-ceiling: may_minihttp http://||p' "$TMP/ceiling.out")
DURABLE=$(sed -n 's|natter-ceiling: durable http://||p' "$TMP/ceiling.out")
start_natter always --fsync always
ALWAYS=$ADDR
start_natter never --fsync never
NEVER=$ADDR

# compare ADDR KIND REQUESTS [VERSUS [natter-load options]]: one --versus
# run against the ceiling (or VERSUS); prints natter's line, the ceiling's
# and the ratio.
# The ratio (or p99) is also noted under $LABEL for the summary at the end.
compare() {
  "$BIN/natter-load" --addr "$1" --versus "${4:-$BARE}" --kind "$2" --requests "$3" \
    --connections "$CONNECTIONS" --rounds "$ROUNDS" --client-threads "$CLIENT_THREADS" "${@:5}" |
    tail -3 | tee "$TMP/last"
  sed -n "s|^ratio .* = \([0-9.]*\)%|$LABEL\t\1|p" "$TMP/last" >>"$TMP/summary"
}
# note_p99 LABEL: notes the p99 (in ms) of the natter-load line in $TMP/last.
note_p99() {
  sed -n 's#.* p99 \([0-9.]*\)\(µs\|ms\|s\) .*#\1 \2#p' "$TMP/last" |
    awk -v label="$1" '{ v = $1; if ($2 == "µs") v /= 1000; if ($2 == "s") v *= 1000; printf "%s\t%.2f\n", label, v }' >>"$TMP/summary"
}
# summary: each label's values in order and their median.
summary() {
  [ -s "$TMP/summary" ] || return 0
  echo "== summary (medians over the runs)"
  awk -F'\t' '
    !($1 in n) { order[++labels] = $1 }
    { n[$1]++; v[$1, n[$1]] = $2; list[$1] = list[$1] (n[$1] > 1 ? ", " : "") $2 }
    END {
      for (i = 1; i <= labels; i++) {
        l = order[i]; k = n[l]
        for (a = 1; a <= k; a++) s[a] = v[l, a]
        for (a = 1; a <= k; a++) for (b = a + 1; b <= k; b++) if (s[b] + 0 < s[a] + 0) { t = s[a]; s[a] = s[b]; s[b] = t }
        median = k % 2 ? s[(k + 1) / 2] : (s[k / 2] + s[k / 2 + 1]) / 2
        printf "%-52s median %s  (%s)\n", l, median, list[l]
      }
    }' "$TMP/summary"
}

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); natter --workers $WORKERS; $CONNECTIONS connections; client threads $CLIENT_THREADS"
for row in $ROWS; do
  for run in $(seq "$RUNS"); do
    case $row in
      fixed)
        echo "== fixed JSON through natter's loop (run $run)"
        LABEL="fixed JSON, natter's loop / bare (%)" compare "$LOOP" fixed "${REQUESTS:-300000}"
        ;;
      me)
        echo "== GET /users/me (run $run)"
        LABEL="GET /users/me / bare (%)" compare "$ALWAYS" me "${REQUESTS:-300000}"
        ;;
      send)
        echo "== durable POST /messages, --fsync always (run $run)"
        LABEL="durable POST /messages / bare (%)" compare "$ALWAYS" send "${REQUESTS:-150000}"
        ;;
      send-never)
        echo "== POST /messages, --fsync never (run $run)"
        LABEL="POST /messages --fsync never / bare (%)" compare "$NEVER" send "${REQUESTS:-150000}"
        ;;
      durable)
        echo "== the durable ceiling against bare may_minihttp (run $run)"
        LABEL="durable ceiling / bare (%)" compare "$DURABLE" send "${REQUESTS:-150000}" "$BARE" --key unused
        echo "== durable POST /messages against the durable ceiling (run $run)"
        LABEL="durable POST /messages / durable ceiling (%)" compare "$ALWAYS" send "${REQUESTS:-150000}" "$DURABLE"
        ;;
      half)
        # Peak first, then a fixed rate of half of it: the p99 there.
        peak=$("$BIN/natter-load" --addr "$ALWAYS" --kind send --requests "${REQUESTS:-150000}" \
          --connections "$CONNECTIONS" --client-threads "$CLIENT_THREADS" | sed -n 's/.* = \([0-9]*\) req\/s.*/\1/p')
        echo "== durable POST /messages at half of the peak ($peak/s → $((peak / 2))/s) (run $run)"
        "$BIN/natter-load" --addr "$ALWAYS" --kind send --requests "${REQUESTS:-150000}" \
          --connections "$CONNECTIONS" --client-threads "$CLIENT_THREADS" --rate-limit $((peak / 2)) |
          tail -1 | tee "$TMP/last"
        note_p99 "durable sends at half of the peak, p99 (ms)"
        # The same rate through the durable ceiling (no application work):
        # the part of the tail that is the log's syncs and the machine.
        echo "   the durable ceiling at the same rate:"
        "$BIN/natter-load" --addr "$DURABLE" --kind send --key unused --requests "${REQUESTS:-150000}" \
          --connections "$CONNECTIONS" --client-threads "$CLIENT_THREADS" --rate-limit $((peak / 2)) |
          tail -1 | tee "$TMP/last"
        note_p99 "the durable ceiling at that rate, p99 (ms)"
        ;;
      *) echo "unknown row $row" >&2; exit 2 ;;
    esac
  done
done
summary
