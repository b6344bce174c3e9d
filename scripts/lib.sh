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
