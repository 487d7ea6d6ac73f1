# Sourced by the editors' test scripts: the pi-server daemons their tests start get a socket
# folder of their own (never a user's daemon), leave 5 s after their last client, and any left
# when the script ends are stopped.
PI_TEST_RUNTIME="$(mktemp -d)"
export XDG_RUNTIME_DIR="$PI_TEST_RUNTIME"
export PI_SERVER_IDLE_EXIT="${PI_SERVER_IDLE_EXIT:-5}"

stop_test_daemons() {
  local rec pid
  for rec in "$PI_TEST_RUNTIME"/pi-server/*.pid; do
    [ -e "$rec" ] || continue
    pid="$(sed -n 's/.*"pid": *\([0-9][0-9]*\).*/\1/p' "$rec")"
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  rm -rf "$PI_TEST_RUNTIME"
}
