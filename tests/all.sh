#!/bin/sh
# What `make test` and CI run: the whole suite three times, plain, under
# AddressSanitizer (with LeakSanitizer) and under UndefinedBehaviorSanitizer,
# each in its own build tree, then the unit tests and corpus replays under
# valgrind, then the static binary, the Docker images and lint.  The last
# line is "N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
. tests/summary.sh
jobs=$(nproc 2>/dev/null || echo 2)

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=23
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=24

for san in "" address undefined; do
	echo "=== make check${san:+ SANITIZER=$san}"
	make -s -j"$jobs" WERROR=1 ${san:+SANITIZER=$san} check >"$log" 2>&1
	cat "$log"
	count "$log" || echo "FAIL build or runner${san:+ ($san)}: no summary line"
done
echo "=== make valgrind"
make -s -j"$jobs" WERROR=1 B=build/valgrind valgrind >"$log" 2>&1
cat "$log"
count "$log" || echo "FAIL valgrind: no summary line"
# The fake kernel tests our kernel code; check it against jupyter_client
# once (it does not depend on the build).
echo "=== fake kernel self-test"
/usr/bin/python3 tests/fakekernel/selftest.py >"$log" 2>&1
cat "$log"
count "$log" || echo "FAIL fake kernel self-test: no summary line"
# One static-pie binary (deps built once into build/static/deps): run as
# PID 1 in an empty, a busybox and this machine's root, then the whole
# integration suite against it.
echo "=== make static"
if make -s -j"$jobs" WERROR=1 static >"$log" 2>&1; then
	/usr/bin/python3 tests/static.py build/static/execd >"$log" 2>&1
	cat "$log"
	count "$log" || echo "FAIL static: no summary line"
	echo "=== integration tests, static binary"
	EXECD_BIN=build/static/execd TEST_TIMEOUT=120 \
	    /usr/bin/python3 tests/integration/run.py >"$log" 2>&1
	cat "$log"
	count "$log" || echo "FAIL static integration: no summary line"
else
	tail -n 40 "$log"
	echo "FAIL make static"
	failed=$((failed + 1))
fi
# The images under images/, run as the OpenSandbox server's two runtimes
# run an execd image, on a dockerd of the stage's own; "SKIPPED: <reason>"
# where dockerd cannot start (no root), a failure when
# EXECD_REQUIRE_DOCKER=1 (CI).
echo "=== Docker images"
sh tests/docker.sh >"$log" 2>&1
cat "$log"
count "$log" || echo "FAIL docker: no summary line"
echo "=== Kubernetes manifests"
sh tests/k8s/run.sh >"$log" 2>&1
cat "$log"
count "$log" || echo "FAIL k8s: no summary line"
echo "=== make lint"
if make -s lint; then
	echo "PASS lint"
	passed=$((passed + 1))
else
	echo "FAIL lint"
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
