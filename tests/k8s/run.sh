#!/bin/sh
# Validate deploy/kubernetes offline (no cluster): installs the pinned
# validators (package.json, package-lock.json) with `npm ci` when
# node_modules is missing or older than the lockfile, then runs
# validate.js, which prints PASS/FAIL lines and "N passed, N failed".
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then
	echo "FAIL k8s: node not found (install nodejs and npm)"
	echo "0 passed, 1 failed"
	exit 1
fi
stamp=$here/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ -n "$(find "$here/package.json" \
    "$here/package-lock.json" -newer "$stamp")" ]; then
	if ! (cd "$here" && npm ci --no-audit --no-fund) >&2; then
		echo "FAIL k8s: npm ci"
		echo "0 passed, 1 failed"
		exit 1
	fi
	touch "$stamp"
fi
exec node "$here/validate.js"
