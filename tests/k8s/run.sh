#!/bin/sh
# Validate deploy/kubernetes offline (no cluster).  The pinned validators
# (package.json, package-lock.json) are installed with `npm ci` into
# build/k8s when missing or older than the lockfile, outside the source
# tree (npm packages carry files that the linters would read), then
# validate.js runs, printing PASS/FAIL lines and "N passed, N failed".
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$(cd "$here/../.." && pwd)/build/k8s
fail() {
	echo "FAIL k8s: $1"
	echo "0 passed, 1 failed"
	exit 1
}
command -v node >/dev/null 2>&1 || fail "node not found (install nodejs and npm)"
stamp=$dest/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ -n "$(find "$here/package.json" \
    "$here/package-lock.json" -newer "$stamp")" ]; then
	mkdir -p "$dest"
	cp "$here/package.json" "$here/package-lock.json" "$dest/"
	(cd "$dest" && npm ci --no-audit --no-fund) >&2 || fail "npm ci"
	touch "$stamp"
fi
NODE_PATH=$dest/node_modules exec node "$here/validate.js"
