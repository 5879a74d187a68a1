#!/bin/sh
# Drive execd with the official OpenSandbox TypeScript SDK: every
# tests/sdk/*.test.js under node's built-in test runner, against
# $EXECD_BIN (default build/execd; relative paths are taken from the
# repository root).  Installs the pinned SDK first (install.sh:
# `npm ci` when node_modules is missing or older than the lockfile).  The last line is
# "N passed, N failed"; the exit status is non-zero if a test failed or
# none ran.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here" || exit 1
tap=$(mktemp)
trap 'rm -f "$tap"' EXIT

# 1. Dependencies (install.sh).
if ! sh ./install.sh; then
	echo "0 passed, 1 failed"
	exit 1
fi

# 2. Tests: readable output on stdout, TAP to a file for the counts.
set -- *.test.js
if [ ! -f "$1" ]; then
	echo "FAIL no test files in tests/sdk"
	echo "0 passed, 1 failed"
	exit 1
fi
timeout "${SDK_TEST_TIMEOUT:-600}" node --test --test-timeout=60000 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "$@"
rc=$?

# 3. Summary from TAP's "# pass N" / "# fail N" / "# cancelled N".
num() {
	n=$(sed -n "s/^# $1 \([0-9][0-9]*\)\$/\1/p" "$tap" | tail -n 1)
	echo "${n:-0}"
}
pass=$(num pass)
fail=$(($(num fail) + $(num cancelled)))
if [ "$pass" -eq 0 ] && [ "$fail" -eq 0 ]; then
	echo "FAIL no test ran (node exited with status $rc)"
	fail=1
elif [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
	# A failed after() hook (e.g. execd did not exit 0) fails its suite,
	# which TAP does not count among the tests: count those suites.
	fail=$(awk '/^ *type: .suite.$/ { s = 1; next }
	    s && /^ *failureType: .hookFailed.$/ { n++ }
	    /^ *\.\.\.$/ { s = 0 } END { print n + 0 }' "$tap")
	[ "$fail" -gt 0 ] || fail=1
	echo "FAIL node exited with status $rc ($fail failed hook(s) or crash)"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
