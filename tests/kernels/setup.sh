#!/bin/sh
# Install the JavaScript and TypeScript Jupyter kernels (tslab, pinned in
# package.json and package-lock.json) and write their kernelspecs.
#
# Usage: tests/kernels/setup.sh DIR
#
# Runs `npm ci` here when node_modules is missing or older than the
# lockfile (or package.json), then writes DIR/kernels/jslab/kernel.json
# (javascript) and DIR/kernels/tslab/kernel.json (typescript), the specs
# `tslab install` writes but with absolute paths to node and to this
# tslab, so the kernels start whatever PATH the daemon has.  Point
# JUPYTER_PATH at DIR to use them.  Safe to run again: a second run only
# rewrites the two small files.
#
# The lockfile keeps tslab's dependencies inside node_modules/tslab (npm's
# "shallow" install strategy, as a global install has them): tslab finds
# the Node.js typings (console, require, setTimeout...) only there or in
# a node_modules above the kernel's working directory.  To change the
# pinned version, edit package.json and run
#     npm install --install-strategy=shallow --no-audit --no-fund
set -eu

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
dir=$(cd "$1" && pwd)

node=$(command -v node || true)
if [ -z "$node" ]; then
	echo "$0: node not found (install nodejs and npm)" >&2
	exit 1
fi
node=$(readlink -f "$node")

# npm writes node_modules/.package-lock.json last: it stamps the install.
stamp=$here/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ -n "$(find "$here/package.json" \
    "$here/package-lock.json" -newer "$stamp")" ]; then
	(cd "$here" && npm ci --no-audit --no-fund) >&2
	touch "$stamp"
fi

tslab=$here/node_modules/tslab/bin/tslab
if [ ! -f "$tslab" ]; then
	echo "$0: $tslab missing after npm ci" >&2
	exit 1
fi
if [ ! -f "$here/node_modules/tslab/node_modules/@types/node/package.json" ]
then
	echo "$0: @types/node is not under node_modules/tslab: the lockfile" \
	    "was not made with --install-strategy=shallow" >&2
	exit 1
fi
# tslab loads zeromq's prebuilt binding; fail here, not at kernel start.
if ! (cd "$here/node_modules/tslab" && "$node" -e 'require("zeromq")'); then
	echo "$0: the zeromq binding does not load with $node" \
	    "($("$node" --version))" >&2
	exit 1
fi

# json_str S: S as a JSON string (paths need only \ and " escaped).
json_str() {
	printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

# spec NAME DISPLAY LANGUAGE [EXTRA-ARG]: write one kernelspec atomically.
spec() {
	extra=
	if [ $# -gt 3 ]; then
		extra=", $(json_str "$4")"
	fi
	mkdir -p "$dir/kernels/$1"
	tmp=$dir/kernels/$1/kernel.json.tmp.$$
	cat >"$tmp" <<EOF
{
  "argv": [$(json_str "$node"), $(json_str "$tslab"), "kernel",
    "--config-path", "{connection_file}"$extra],
  "display_name": "$2",
  "language": "$3"
}
EOF
	mv -f "$tmp" "$dir/kernels/$1/kernel.json"
}

spec jslab JavaScript javascript --js
spec tslab TypeScript typescript
