#!/usr/bin/env bash
# The scale run (docs/PERFORMANCE.md): load MESSAGES short messages into a --dev
# natter over HTTP (with --fsync never, to get there fast; snapshots as
# natter schedules them, or every SNAPSHOT_EVERY changes), then report
#   - send throughput and the longest single request, per tenth of the load
#     (is it flat as the data grows? how long is the worst stall?),
#   - RSS after loading and its peak (VmHWM),
#   - snapshot time at that size (the clean shutdown's final snapshot),
#   - restart time (natter's own restart lines) and RSS per message after
#     the restart (beyond the empty server's RSS),
#   - durable send throughput (--fsync always) at that size.
#
#   scripts/scale-run.sh                       # 1M messages
#   MESSAGES=10000000 scripts/scale-run.sh     # 10M
#
# Environment: MESSAGES (1000000), SNAPSHOT_EVERY (unset: natter's default
# schedule, by bytes of log; a number: --snapshot-every N), CONNECTIONS
# (64), CLIENT_THREADS (2), WORKERS (2), NATTER_ARGS (extra natter options,
# e.g. "--slow-request-ms 30" to have natter log its slow requests in
# DATA/err, beside natter-load's time of each tenth's slowest), DATA (a
# temp dir; kept if set),
# NO_BUILD=1 to skip `cargo build --release`, BIN (target/release) for
# binaries built elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin natter --bin natter-load >&2
BIN=${BIN:-target/release}
MESSAGES=${MESSAGES:-1000000}
SNAPSHOT_EVERY=${SNAPSHOT_EVERY:-}
SNAPSHOT_ARGS=()
[ -z "$SNAPSHOT_EVERY" ] || SNAPSHOT_ARGS=(--snapshot-every "$SNAPSHOT_EVERY")
CONNECTIONS=${CONNECTIONS:-64}
CLIENT_THREADS=${CLIENT_THREADS:-2}
WORKERS=${WORKERS:-2}
if [ -n "${DATA:-}" ]; then KEEP=1; else DATA=$(mktemp -d); KEEP=; fi
PID=
cleanup() { [ -z "$PID" ] || kill "$PID" 2>/dev/null || true; [ -n "$KEEP" ] || rm -rf "$DATA"; }
trap cleanup EXIT

# start FSYNC: starts natter on the data dir; sets PID, ADDR and SECS
# (the seconds it took to listen).
start() {
  local t0; t0=$(date +%s.%N)
  # The previous run's "listening on" must not be mistaken for this one's
  # (the redirection below truncates only once the child runs).
  rm -f "$DATA/out"
  "$BIN/natter" --dev --rate-limit off --data-dir "$DATA/data" --listen 127.0.0.1:0 --workers "$WORKERS" \
    --fsync "$1" "${SNAPSHOT_ARGS[@]}" ${NATTER_ARGS:-} >"$DATA/out" 2>>"$DATA/err" &
  PID=$!
  ADDR=$(natter_address "$DATA/out" "$PID" "$DATA/err")
  SECS=$(echo "$(date +%s.%N) - $t0" | bc)
}

# stop: clean shutdown (SIGTERM: final snapshot); sets SECS.
stop() {
  local t0; t0=$(date +%s.%N)
  kill -TERM "$PID"
  while kill -0 "$PID" 2>/dev/null; do sleep 0.05; done
  PID=
  SECS=$(echo "$(date +%s.%N) - $t0" | bc)
}

rss_kb() { awk -v f="$2" '$1 == f":" {print $2}' "/proc/$1/status"; }

send() { # send N FSYNC-LABEL: one natter-load send run; prints its result line
  "$BIN/natter-load" --addr "$ADDR" --kind send --requests "$1" --seconds 36000 \
    --connections "$CONNECTIONS" --client-threads "$CLIENT_THREADS" | tail -1
}

SCHEDULE="by log bytes (natter's default)"
[ -z "$SNAPSHOT_EVERY" ] || SCHEDULE="every $SNAPSHOT_EVERY changes"
echo "scale run: $MESSAGES messages, snapshots $SCHEDULE, $CONNECTIONS connections; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
start never
EMPTY_RSS=$(rss_kb "$PID" VmRSS)
echo "empty server RSS: $((EMPTY_RSS / 1024)) MB"
CHUNK=$((MESSAGES / 10))
for i in $(seq 10); do
  line=$(send "$CHUNK")
  rate=$(sed -n 's/.* = \([0-9]*\) req\/s.*/\1/p' <<<"$line")
  max=$(sed -n 's/.* max \(.*\)$/\1/p' <<<"$line")
  p99=$(sed -n 's/.* p99 \([^ ]*\) .*/\1/p' <<<"$line")
  echo "  sent $((i * CHUNK)): $rate msg/s (--fsync never), p99 $p99, longest request $max"
done
LOADED_RSS=$(rss_kb "$PID" VmRSS)
PEAK_RSS=$(rss_kb "$PID" VmHWM)
echo "after loading: RSS $((LOADED_RSS / 1024)) MB, peak (VmHWM) $((PEAK_RSS / 1024)) MB"
stop
echo "clean shutdown (final snapshot at $MESSAGES messages): $SECS s"
grep "commit path" "$DATA/err" | sed "s/^natter: /while loading: /"
echo "snapshot files: $(du -sh "$DATA/data" | cut -f1) data dir"
: >"$DATA/err"
start always
echo "restart to listening: $SECS s; natter's lines:"
{ grep -E "snapshot|replay|recovered" "$DATA/err" || true; } | { grep -v "replaying the log:" || true; } | sed 's/^/    /'
sleep 1
RESTARTED_RSS=$(rss_kb "$PID" VmRSS)
echo "after restart: RSS $((RESTARTED_RSS / 1024)) MB = $(( (RESTARTED_RSS - EMPTY_RSS) * 1024 / MESSAGES )) B per message beyond the empty server"
echo "durable sends at this size (--fsync always): $(send 50000)"
stop
grep "commit path" "$DATA/err" | sed "s/^natter: /durable sends: /"
