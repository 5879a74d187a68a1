#!/bin/sh
# Install the pinned npm packages of tests/sdk (the OpenSandbox and MCP
# SDKs, playwright-core, ...) with `npm ci` when node_modules is missing
# or older than the lockfile.  run.sh calls it, and tests/run.sh before
# the integration suite, whose MCP gateway cases run a server written
# with the MCP SDK.  Prints "FAIL npm ci" and exits 1 when npm fails.
set -u
cd "$(dirname "$0")" || exit 1
# npm keeps node_modules/.package-lock.json current.
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ ! package-lock.json -nt "$stamp" ] &&
    [ ! package.json -nt "$stamp" ]; then
	exit 0
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "== npm ci"
if ! npm ci --no-audit --no-fund >"$out" 2>&1; then
	cat "$out"
	echo "FAIL npm ci"
	exit 1
fi
touch "$stamp"
