#!/usr/bin/env bash
# Run the plugin's tests headless against the real pi-server.
# The server is started as the plugin starts it by default (`pi-server` on
# PATH, else python3 -m pi_server); PI_SERVER_CMD overrides the command. A
# server that cannot start fails the run at once with its error.
# PI_TEST_FILTER runs only the tests whose name contains it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
NVIM="${NVIM:-nvim}"
. "$here/../../../scripts/test-daemons.sh"
trap stop_test_daemons EXIT
timeout 600 "$NVIM" --headless -u NONE -i NONE -n -l tests/run.lua
