#!/usr/bin/env bash
# The eglot recipe against the real pi-server, in batch Emacs (eglot built in
# from Emacs 29; Debian 12's emacs-nox 28 needs elpa-eglot). pi-server is
# found on PATH as a user's would be; PI_SERVER_CMD overrides it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. ../../scripts/test-daemons.sh
trap stop_test_daemons EXIT
timeout 300 "${EMACS:-emacs}" --batch -l test/pi-sessions-test.el -f ert-run-tests-batch-and-exit
