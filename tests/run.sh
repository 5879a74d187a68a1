#!/bin/sh
# Run every test once against the build tree $1: unit tests, fuzz corpus
# replays, integration tests.  The last line is "N passed, N failed".
set -u
B=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
. tests/summary.sh

# run NAME CMD...: run one suite, show its lines, add to the totals.
run() {
	name=$1
	shift
	echo "== $name"
	if [ -n "${VALGRIND:-}" ]; then
		set -- valgrind -q --error-exitcode=99 --leak-check=full \
		    --suppressions=tests/valgrind.supp "$@"
	fi
	timeout "${limit:-600}" "$@" >"$out" 2>&1
	rc=$?
	grep -vE '^[0-9]+ passed, [0-9]+ failed' "$out"
	count "$out"
	if [ $rc -ne 0 ] && ! grep -qE '^[0-9]+ passed, [1-9]' "$out"; then
		echo "FAIL $name exited with status $rc"
		failed=$((failed + 1))
	fi
}

for t in "$B"/tests/t_*; do
	[ -x "$t" ] && run "unit $(basename "$t")" "$t"
done
for r in "$B"/tests/replay_*; do
	[ -x "$r" ] || continue
	t=${r##*/replay_}
	run "fuzz corpus $t" "$r" "tests/fuzz/corpus/$t"
done
if [ -z "${VALGRIND:-}" ]; then
	# Each test has its own bound (TEST_TIMEOUT); the suite's is for a
	# runner that hangs, not for a slow machine.
	limit=2400
	# The MCP gateway's cases run a server written with the MCP SDK.
	if ! sh tests/sdk/install.sh; then
		failed=$((failed + 1))
	fi
	run "integration" env EXECD_BIN="$B/execd" TEST_TIMEOUT=120 \
	    /usr/bin/python3 tests/integration/run.py ${TEST_FILTER:-}
	limit=600
	if [ -z "${TEST_FILTER:-}" ]; then
		run "sdk (@alibaba-group/opensandbox)" env \
		    EXECD_BIN="$B/execd" sh tests/sdk/run.sh
	fi
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
