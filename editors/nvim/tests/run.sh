#!/usr/bin/env bash
# Run the plugin's tests headless against the real pi-server.
# PI_SERVER_CMD overrides the server command (default: python3 -m pi_server);
# PI_TEST_FILTER runs only the tests whose name contains it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
NVIM="${NVIM:-nvim}"
exec timeout 300 "$NVIM" --headless -u NONE -i NONE -n -l tests/run.lua
