# Shared by the measuring scripts: `source "$(dirname "$0")/lib.sh"`.

# natter_address OUT PID ERR: waits (up to two minutes: valgrind starts
# slowly) until the natter with pid PID, writing its stdout to OUT, says
# it is listening, and prints its address. If it exits or never says so,
# shows its stderr (ERR) and fails.
natter_address() {
  local out=$1 pid=$2 err=$3
  for _ in $(seq 2400); do
    if grep -q "listening on" "$out" 2>/dev/null; then
      sed -n 's|natter: listening on http://||p' "$out"
      return
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "natter did not start" >&2
  cat "$err" >&2
  return 1
}

# callgrind_natter DIR [natter options...]: a natter from $BIN under
# callgrind as the instruction counts run it (`--dev --workers 1
# --snapshot-every 0`; its data, output and callgrind files in DIR); sets
# PID and ADDR. Not run in a $(…) subshell: PID must reach the caller's
# clean-up (`callgrind_cleanup`).
callgrind_natter() {
  local dir=$1
  shift
  valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.%p" \
    "$BIN/natter" --dev --rate-limit off --data-dir "$dir/data" --listen 127.0.0.1:0 --workers 1 \
    --snapshot-every 0 "$@" >"$dir/out" 2>"$dir/err" &
  PID=$!
  ADDR=$(natter_address "$dir/out" "$PID" "$dir/err")
}

# callgrind_cleanup: stops the natter `callgrind_natter` started (if any)
# and removes $TMP; for `trap callgrind_cleanup EXIT`.
callgrind_cleanup() {
  [ -z "${PID:-}" ] || kill "$PID" 2>/dev/null || true
  [ -z "${PID:-}" ] || wait "$PID" 2>/dev/null || true
  rm -rf "$TMP"
}
