#!/bin/sh
# bench/run.sh BUILD_DIR -- the numbers of PRODUCT.md ("Numbers we hold
# ourselves to"), each as a ratio against a baseline measured in the same run
# on the same machine.  `make bench` runs it after building BUILD_DIR/execd.
#
# Prints one table row per measurement.  Exits non-zero only when something
# could not be run; a missed target is reported as MISS and exits 0.
#
# Knobs (environment): BENCH_SECS (seconds per wrk round, default 4),
# BENCH_ROUNDS (wrk rounds per server, alternating, best kept; default 2),
# BENCH_CONNS (wrk connections, default 32), BENCH_STARTS (start-up runs,
# default 20), BENCH_EXECS (kernel round trips per side, default 200),
# BENCH_KSTARTS (kernel starts per side, default 5), BENCH_CTXS (context
# creations per side, default 5), BENCH_HOLD (background commands held at
# once, default 1000), BENCH_STREAM_MIB (MiB of output streamed through
# POST /command, default 256), BENCH_UNREAD_MIB and BENCH_UNREAD_SECS
# (output a client does not read, through /command and /code, and for how
# long; default 200 and 20), NGINX (nginx binary),
# WRK (wrk binary), BENCH_FILE_MIB (size of the file rows, default 512),
# BENCH_INTS (interrupted runs per side, default 20), BENCH_EPISODES
# (fresh contexts timed, and RL episodes, per side, default 40),
# BENCH_PROXY_MIB (size of the /proxy download, default 256),
# BENCH_PROXY_N (small /proxy requests per side, default 500),
# BENCH_ISO_N (POST /command `true` per side, isolation on and off,
# default 400), BENCH_ISO_GAP_N (the same, 100 ms apart, default 100),
# BENCH_FANOUT_CLIENTS (channels clients on one kernel, default 20),
# BENCH_FANOUT_LINES (lines the fan-out cell prints, default 1000),
# BENCH_MCP_N (MCP tool calls and plain API requests per side, default
# BENCH_EXECS), BENCH_CKPT_FILES (files of the checkpoint row's tree,
# default 10000), BENCH_REPL_EXECS (Java and Go evaluations per side,
# default 50), BENCH_REPL_STARTS (Java and Go contexts started, default 3),
# KERNEL_PYTHON (the Python with jupyter_client,
# ipykernel, pyzmq and jupyter_server, default /usr/bin/python3).
#
# The kernel rows drive execd's kernel manager through BUILD_DIR/bench/kbench
# (bench/kbench.c) and jupyter_client through bench/kernel_baseline.py, on
# the "python3" kernelspec.  The /code rows run bench/code_bench.py, which
# starts execd itself and measures POST /code against a bare ZeroMQ client
# on the same kernel and against Debian's Jupyter Server (REST and
# WebSocket), execd's own /api/kernels/{id}/channels WebSocket against
# the same two, BENCH_FANOUT_CLIENTS channels clients on one kernel, and
# POST /code/context with and without --pool, and RL episodes (a fresh
# context per run) with and without the fork server, 200 of them as one
# POST /code/batch, and as one-request (ephemeral) runs.  The MCP rows run
# bench/mcp_bench.py (/usr/bin/python3, standard library only): a
# tools/call against the plain API route doing the same work.  The Java
# and Go rows run bench/repl_bench.py (/usr/bin/python3, standard library
# only) on execd-repl-kernel: an evaluation through POST /code against
# the bare interpreter (a pipe to jshell; `yaegi run` of the same
# program), and a context's start to its first result.  The
# rows of many commands and much output run bench/command_bench.py
# (/usr/bin/python3, standard library only).  The terminal rows run
# bench/pty_bench.py (/usr/bin/python3 with Debian's python3-websocket;
# BENCH_PTY_KEYS keystrokes per side, default 500).
# The desktop rows run bench/desktop_bench.py (/usr/bin/python3, standard
# library only; Debian's xvfb, xterm, x11-xserver-utils, x11-apps (xwd),
# netpbm and xdotool): on one Xvfb of 1280x800, GET /computer/screenshot
# against xwd -root | xwdtopnm | pnmtopng, and a click through POST
# /computer/mouse against xdotool click 1 (BENCH_DESKTOP_N each, default
# 40).
# The checkpoint row runs bench/ckpt_bench.py (/usr/bin/python3, standard
# library only, and tar): POST /files/checkpoint and /files/restore of a
# tree with 10 files changed between them against tar c and tar x of it.
# The isolated-session rows run bench/iso_bench.py (/usr/bin/python3,
# standard library only, and cp; BENCH_ISO_SESS_N sessions per side,
# default 50): create + one `true` + delete of an overlay session against
# POST /command `true`, and a commit of 10 files changed in a session of
# a BENCH_CKPT_FILES-file workspace against cp -a of it.
# The /proxy rows run bench/proxy_bench.py against an nginx of their own,
# directly, through execd and through bench/relay.c.
# The "(static)" rows run STATIC_EXECD (default build/static/execd, which
# `make bench` builds with `make static`): the file deployments run, so
# the idle RSS and start-up targets apply to it (PRODUCT.md); the same
# rows of the dynamic build, which loads Debian's shared libraries, are
# for information.  They run a copy made with cp, as the installers
# deliver it: how a file was written decides its page cache's folios, and
# the kernel maps a large folio whole (see docs/deploy.md).
#
# Adding a row: measure, then call
#   row NAME VALUE BASELINE RATIO TARGET VERDICT
# with VERDICT from verdict_ge / verdict_le (or "-" for information only).

# shellcheck disable=SC2059 # ROWFMT is our own format string
# shellcheck disable=SC2317 # cleanup runs from the EXIT trap
set -u

B=${1:-}
if [ -z "$B" ]; then
	echo "usage: sh bench/run.sh BUILD_DIR" >&2
	exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "$B" 2>/dev/null && pwd) || {
	echo "bench: no build dir '$1'" >&2
	exit 1
}
EXECD=$B/execd
SECS=${BENCH_SECS:-4}
ROUNDS=${BENCH_ROUNDS:-2}
CONNS=${BENCH_CONNS:-32}
STARTS=${BENCH_STARTS:-20}
EXECS=${BENCH_EXECS:-200}
KSTARTS=${BENCH_KSTARTS:-5}
CTXS=${BENCH_CTXS:-5}
HOLD_N=${BENCH_HOLD:-1000}
STREAM_MIB=${BENCH_STREAM_MIB:-256}
UNREAD_MIB=${BENCH_UNREAD_MIB:-200}
UNREAD_SECS=${BENCH_UNREAD_SECS:-20}
KPY=${KERNEL_PYTHON:-/usr/bin/python3}
KBENCH=$B/bench/kbench
STATIC_EXECD=${STATIC_EXECD:-$HERE/../build/static/execd}
WRK=${WRK:-$(command -v wrk || echo wrk)}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
PING_MIN_RATIO=0.5   # no ping-throughput target in PRODUCT.md: ours
ANON_MAX_KIB=2048    # PRODUCT.md: static idle, anonymous RSS under 2 MiB
VMRSS_MAX_KIB=6144   # PRODUCT.md: static idle, a copied binary's VmRSS under 6 MiB
START_MAX_MS=10      # PRODUCT.md: start to first /ping under 10 ms
EXEC_MAX_RATIO=1.15  # PRODUCT.md: 1+1 within 1.15x of a bare round trip
KSTART_MAX_RATIO=1.0 # ours: a kernel starts no slower than jupyter_client's
CODE_MAX_RATIO=1.05  # PRODUCT.md: POST /code within 1.05x of bare ZeroMQ
CHAN_MAX_RATIO=1.2   # PRODUCT.md: Jupyter channels within 1.2x of bare ZeroMQ
CHAN_JS_MAX_RATIO=0.8 # issue 25: channels <= 0.8x of Jupyter Server's own
MCP_MAX_RATIO=1.2    # PRODUCT.md: MCP tool calls within 1.2x of the plain API
REPL_MAX_RATIO=1.2   # issue 28: Java and Go via /code within 1.2x of the bare REPL
REPL_EXECS=${BENCH_REPL_EXECS:-50}
REPL_STARTS=${BENCH_REPL_STARTS:-3}
FANOUT_CLIENTS=${BENCH_FANOUT_CLIENTS:-20}
FANOUT_LINES=${BENCH_FANOUT_LINES:-1000}
MCP_N=${BENCH_MCP_N:-$EXECS}
CMD_MAX_RATIO=1.2    # PRODUCT.md: POST /command true within 1.2x of bash -c true
INT_MAX_RATIO=1.2    # issue 15: an interrupt within 1.2x of a bare SIGINT
INTS=${BENCH_INTS:-20}
JUPYTER_MAX_RATIO=0.33 # PRODUCT.md: at least 3x faster than Jupyter Server
POOL_MAX_MS=10       # PRODUCT.md: POST /code/context with a pool under 10 ms
EPISODE_MIN_RATIO=0.3 # issue 27: fresh-context episodes >= 0.3x of python3 -c
BATCH_MIN_RATIO=0.5   # issue 27: 200 episodes as one /code/batch >= 0.5x of that
FRESH_MAX_MS=25      # issue 27: one fresh context ready, no pool, <= 25 ms
EPISODES=${BENCH_EPISODES:-40}
DL_MIN_RATIO=0.9     # PRODUCT.md: downloads at least 0.9x of nginx
STREAM_RSS_MAX_KIB=8192 # PRODUCT.md: RSS growth streaming output under 8 MiB
PROXY_DL_MIN_RATIO=0.95 # PRODUCT.md: /proxy download >= 0.95x of a splice relay
PROXY_LAT_MAX_RATIO=1.2 # PRODUCT.md: a small proxied GET <= 1.2x of that relay
CKPT_MAX_RATIO=0.2   # issue 27: checkpoint + restore <= 0.2x of tar c + tar x
CKPT_FILES=${BENCH_CKPT_FILES:-10000}
ISO_SESS_MAX_RATIO=3 # issue 30: overlay session create+true+delete <= 3x /command
ISO_COMMIT_MAX_RATIO=0.1 # issue 30: commit of 10 files <= 0.1x of cp -a
ISO_SESS_N=${BENCH_ISO_SESS_N:-50}
DESKTOP_MAX_RATIO=1.0 # issue 29: a screenshot, a click <= 1.0x of the shell's
DESKTOP_N=${BENCH_DESKTOP_N:-40}

T=
PIDS=
MISSES=0
ROWS=0

fail() {
	echo "bench: FAILED: $*" >&2
	exit 1
}

note() {
	echo "  note: $*"
}

# --- process handling ------------------------------------------------------

# proc_state PID: the state letter from /proc/PID/stat, empty when gone.
proc_state() {
	sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1
}

# stop PID: SIGTERM, wait at most 5 s for it to exit, then SIGKILL; reap it.
# Leaves its exit status in STOP_STATUS.
stop() {
	_p=$1
	STOP_STATUS=
	PIDS=$(echo " $PIDS " | sed "s/ $_p / /; s/^ *//; s/ *\$//")
	if ! kill -TERM "$_p" 2>/dev/null; then
		wait "$_p" 2>/dev/null
		STOP_STATUS=$?
		return 0
	fi
	_i=0
	while [ $_i -lt 50 ]; do
		case $(proc_state "$_p") in
		'' | Z) break ;;
		esac
		sleep 0.1
		_i=$((_i + 1))
	done
	if [ $_i -ge 50 ]; then
		echo "bench: pid $_p ignored SIGTERM for 5 s, killing it" >&2
		kill -KILL "$_p" 2>/dev/null
	fi
	wait "$_p" 2>/dev/null
	STOP_STATUS=$?
}

cleanup() {
	for _q in $PIDS; do
		stop "$_q"
	done
	[ -n "$T" ] && rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# run_bg SECS OUT ERR CMD...: CMD in the background under timeout, stopped
# by the EXIT trap if we are; returns its exit status.
run_bg() {
	_secs=$1 _out=$2 _err=$3
	shift 3
	timeout "$_secs" "$@" >"$_out" 2>"$_err" &
	_bg=$!
	PIDS="$PIDS $_bg"
	wait "$_bg"
	_rc=$?
	PIDS=$(echo " $PIDS " | sed "s/ $_bg / /; s/^ *//; s/ *\$//")
	return $_rc
}

# children_of PID: pids whose parent is PID.
children_of() {
	for _s in /proc/[0-9]*/stat; do
		_pp=$(sed 's/^.*) //' "$_s" 2>/dev/null | cut -d' ' -f2)
		if [ "$_pp" = "$1" ]; then
			_c=${_s#/proc/}
			echo "${_c%/stat}"
		fi
	done
}

# rss_kib PID [FIELD]: VmRSS (or another field of /proc/PID/status) in KiB.
rss_kib() {
	awk -v f="${2:-VmRSS}:" '$1 == f { print $2 }' "/proc/$1/status" \
		2>/dev/null
}

# mem_split PID: "anon A KiB, file-backed F KiB, Pss P KiB" for a note.
mem_split() {
	_pss=$(awk '$1 == "Pss:" { print $2 }' "/proc/$1/smaps_rollup" \
		2>/dev/null)
	echo "anon $(rss_kib "$1" RssAnon) KiB, file-backed" \
		"$(rss_kib "$1" RssFile) KiB${_pss:+, Pss $_pss KiB}"
}

# --- arithmetic and the table ----------------------------------------------

calc() {
	awk "BEGIN { printf \"%s\", $1 }" </dev/null
}

# us_ms MICROSECONDS DECIMALS: milliseconds, rounded.
us_ms() {
	calc "sprintf(\"%.$2f\", $1 / 1000)"
}

# verdict_ge VALUE MIN / verdict_le VALUE MAX: ok or MISS.
verdict_ge() {
	awk -v v="$1" -v m="$2" 'BEGIN { print (v + 0 >= m + 0) ? "ok" : "MISS" }'
}
verdict_le() {
	awk -v v="$1" -v m="$2" 'BEGIN { print (v + 0 <= m + 0) ? "ok" : "MISS" }'
}

ROWFMT='%-30s %-20s %-24s %-7s %-22s %s\n'

row() {
	printf "$ROWFMT" "$1" "$2" "$3" "$4" "$5" "$6"
	[ "$6" = - ] && return 0	# information, not a target
	ROWS=$((ROWS + 1))
	[ "$6" = MISS ] && MISSES=$((MISSES + 1))
	return 0
}

# --- servers ---------------------------------------------------------------

# start_execd PORT LOG: starts execd in the background, sets EXECD_PID.
start_execd() {
	"$EXECD" --listen "127.0.0.1:$1" --log-level warn >/dev/null 2>"$2" &
	EXECD_PID=$!
	PIDS="$PIDS $EXECD_PID"
	"$SP" wait "$1" /ping 5000 ||
		fail "execd did not answer GET /ping on 127.0.0.1:$1 within 5 s" \
			"(stderr: $(head -c 400 "$2"))"
	head -n 1 "$2" | grep -q "listening on 127.0.0.1:$1" ||
		note "execd's first stderr line does not say" \
			"'listening on 127.0.0.1:$1'"
}

# nginx_conf DIR PORT: an nginx prefix DIR serving an empty file at /ping.
nginx_conf() {
	mkdir -p "$1/html" "$1/logs" || fail "mkdir $1"
	: >"$1/html/ping"
	_user=
	[ "$(id -u)" = 0 ] && _user="user $(id -un) $(id -gn);"
	_temps="    client_body_temp_path $1/client_body_temp;"
	for _m in proxy fastcgi uwsgi scgi; do
		case $NGINX_V in
		*"--without-http_${_m}_module"*) ;;
		*) _temps="$_temps
    ${_m}_temp_path $1/${_m}_temp;" ;;
		esac
	done
	awk -v prefix="$1" -v port="$2" -v user="$_user" -v temps="$_temps" '
		{ gsub(/@PREFIX@/, prefix); gsub(/@PORT@/, port) }
		/^@USER@$/ { print user; next }
		/^@TEMPS@$/ { print temps; next }
		{ print }' "$HERE/nginx.conf.in" >"$1/nginx.conf" ||
		fail "cannot write $1/nginx.conf"
	"$NGINX" -t -q -p "$1/" -c "$1/nginx.conf" -e "$1/error.log" \
		-g 'daemon off;' 2>"$1/test.log" ||
		fail "nginx rejects its config: $(cat "$1/test.log")"
}

# start_nginx DIR PORT: nginx in the foreground of a background job, sets
# NGINX_PID (the master).
start_nginx() {
	"$NGINX" -p "$1/" -c "$1/nginx.conf" -e "$1/error.log" \
		-g 'daemon off;' >/dev/null 2>"$1/stderr.log" &
	NGINX_PID=$!
	PIDS="$PIDS $NGINX_PID"
	"$SP" wait "$2" /ping 5000 ||
		fail "nginx did not serve /ping on 127.0.0.1:$2 within 5 s" \
			"(stderr: $(head -c 400 "$1/stderr.log");" \
			"error.log: $(head -c 400 "$1/error.log"))"
}

# wrk_rps PORT OUT: one wrk round; prints requests/s, notes errors.
wrk_rps() {
	timeout $((SECS + 20)) "$WRK" -t1 -c"$CONNS" -d"${SECS}s" \
		"http://127.0.0.1:$1/ping" >"$2" 2>&1 ||
		fail "wrk against port $1 failed: $(cat "$2")"
	awk '/^Requests\/sec:/ { print $2 }' "$2"
}

# wrk_errors OUT: non-empty when wrk saw errors or non-2xx answers.
wrk_errors() {
	grep -E '^ *(Non-2xx|Socket errors)' "$1" | tr -s ' ' | tr '\n' ';'
}

# --- preflight -------------------------------------------------------------

[ -x "$EXECD" ] || fail "no executable $EXECD (build it first)"
command -v "$WRK" >/dev/null 2>&1 || fail "wrk not found (apt-get install wrk)"
[ -x "$NGINX" ] || fail "nginx not found (apt-get install nginx-light)"
command -v "${CC:-cc}" >/dev/null 2>&1 || fail "no C compiler"
NGINX_V=$("$NGINX" -V 2>&1) || fail "$NGINX -V failed"
NGINX_VERSION=$(echo "$NGINX_V" | sed -n 's/^nginx version: nginx\///p')
[ -x "$KBENCH" ] || fail "no executable $KBENCH (make $KBENCH)"
[ -x "$B/execd-repl-kernel" ] ||
	fail "no executable $B/execd-repl-kernel (make $B/execd-repl-kernel)"
command -v jshell >/dev/null 2>&1 ||
	fail "jshell not found (apt-get install openjdk-17-jdk-headless)"
command -v yaegi >/dev/null 2>&1 || fail "yaegi not found (apt-get install yaegi)"
JC_VERSION=$("$KPY" -c 'import ipykernel, jupyter_client
print(jupyter_client.__version__)' 2>/dev/null) ||
	fail "$KPY cannot import jupyter_client and ipykernel" \
		"(apt-get install python3-jupyter-client python3-ipykernel)"
JS_VERSION=$("$KPY" -c 'import zmq, jupyter_server
print(jupyter_server.__version__)' 2>/dev/null) ||
	fail "$KPY cannot import zmq and jupyter_server" \
		"(apt-get install python3-zmq python3-jupyter-server)"

mkdir -p "$B/bench" || fail "mkdir $B/bench"
SP=$B/bench/startping
"${CC:-cc}" -O2 -Wall -o "$SP" "$HERE/startping.c" ||
	fail "cannot compile bench/startping.c"
RELAY=$B/bench/relay
"${CC:-cc}" -O2 -Wall -o "$RELAY" "$HERE/relay.c" ||
	fail "cannot compile bench/relay.c"

T=$(mktemp -d "${TMPDIR:-/tmp}/execd-bench.XXXXXX") || fail "mktemp -d"

port() {
	"$SP" port || fail "no free port"
}
P_EXECD=$(port) || exit 1
P_NGINX=$(port) || exit 1
P_EXECD_START=$(port) || exit 1
P_NGINX_START=$(port) || exit 1
nginx_conf "$T/nginx" "$P_NGINX"
nginx_conf "$T/nginx-start" "$P_NGINX_START"

echo "execd bench: $1/execd vs nginx $NGINX_VERSION, $(nproc 2>/dev/null || echo '?') CPUs, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "ratio = execd / baseline.  ping rps: wrk -t1 -c$CONNS, $ROUNDS x ${SECS} s per server alternating, best kept;"
echo "PRODUCT.md sets no ping-throughput target, ok when the ratio is >= $PING_MIN_RATIO."
echo "kernel rows: the python3 kernelspec; execd's kernel manager (ipc) vs" \
	"jupyter_client $JC_VERSION (tcp);"
echo "median of $EXECS round trips on one kernel after 10 warm-ups, and of" \
	"$KSTARTS starts, per side."
echo "/code rows: POST /code on one keep-alive connection, to the end of the" \
	"stream, vs a bare pyzmq client on the"
echo "same kernel and vs jupyter_server $JS_VERSION (python3 kernel, JSON over" \
	"WebSocket); median of $EXECS per side in"
echo "alternating blocks of 10 after 10 warm-ups; contexts: median of $CTXS" \
	"creations per side."
echo
printf "$ROWFMT" measurement execd baseline ratio target verdict
printf "$ROWFMT" ----------- ----- -------- ----- ------ -------

# --- 1, 2: idle RSS after 100 pings, then /ping throughput -----------------

start_execd "$P_EXECD" "$T/execd.log"
start_nginx "$T/nginx" "$P_NGINX"
"$SP" get "$P_EXECD" /ping 100 || fail "100 GET /ping against execd"
"$SP" get "$P_NGINX" /ping 100 || fail "100 GET /ping against nginx"
sleep 0.2
E_RSS=$(rss_kib "$EXECD_PID")
NGINX_WORKER=$(children_of "$NGINX_PID" | head -n 1)
[ -n "$NGINX_WORKER" ] || fail "cannot find nginx's worker process"
N_RSS=$(rss_kib "$NGINX_WORKER")
N_ANON=$(rss_kib "$NGINX_WORKER" RssAnon)
E_SPLIT=$(mem_split "$EXECD_PID")
N_SPLIT=$(mem_split "$NGINX_WORKER")
if [ -z "$E_RSS" ] || [ -z "$N_RSS" ]; then
	fail "cannot read VmRSS"
fi

# Warm both up, then alternate rounds so that drift on a shared machine hits
# both alike; keep each one's best.
SAVED_SECS=$SECS
SECS=1
wrk_rps "$P_EXECD" "$T/wrk.out" >/dev/null
wrk_rps "$P_NGINX" "$T/wrk.out" >/dev/null
SECS=$SAVED_SECS
E_RPS=0
N_RPS=0
E_ERR=
i=0
while [ $i -lt "$ROUNDS" ]; do
	r=$(wrk_rps "$P_EXECD" "$T/wrk-execd.out") || exit 1
	[ -n "$r" ] || fail "no Requests/sec from wrk: $(cat "$T/wrk-execd.out")"
	E_ERR="$E_ERR$(wrk_errors "$T/wrk-execd.out")"
	E_RPS=$(calc "($r > $E_RPS) ? $r : $E_RPS")
	r=$(wrk_rps "$P_NGINX" "$T/wrk-nginx.out") || exit 1
	[ -n "$r" ] || fail "no Requests/sec from wrk: $(cat "$T/wrk-nginx.out")"
	e=$(wrk_errors "$T/wrk-nginx.out")
	[ -z "$e" ] || fail "nginx baseline had errors under wrk: $e"
	N_RPS=$(calc "($r > $N_RPS) ? $r : $N_RPS")
	i=$((i + 1))
done
E_RSS_AFTER=$(rss_kib "$EXECD_PID")

RATIO=$(calc "sprintf(\"%.2f\", $E_RPS / $N_RPS)")
V=$(verdict_ge "$RATIO" "$PING_MIN_RATIO")
[ -n "$E_ERR" ] && V=MISS
row "GET /ping req/s (wrk)" "$(calc "sprintf(\"%.0f\", $E_RPS)")" \
	"$(calc "sprintf(\"%.0f\", $N_RPS)") nginx" "$RATIO" \
	"ratio >= $PING_MIN_RATIO" "$V"

row "idle RSS after 100 pings" \
	"$E_RSS KiB ($(calc "sprintf(\"%.2f\", $E_RSS / 1024)") MiB)" \
	"$N_RSS KiB nginx worker" \
	"$(calc "sprintf(\"%.2f\", $E_RSS / $N_RSS)")" "(information)" -

stop "$EXECD_PID"
E_EXIT=$STOP_STATUS
stop "$NGINX_PID"

# --- 1b: the same idle RSS of the static build (`make static`) -------------

if [ -x "$STATIC_EXECD" ]; then
	cp "$STATIC_EXECD" "$T/execd-static" ||
		fail "cannot copy $STATIC_EXECD"
	STATIC_EXECD=$T/execd-static
	_dyn=$EXECD
	EXECD=$STATIC_EXECD
	start_execd "$P_EXECD" "$T/execd-static.log"
	EXECD=$_dyn
	"$SP" get "$P_EXECD" /ping 100 ||
		fail "100 GET /ping against the static execd"
	sleep 0.2
	S_RSS=$(rss_kib "$EXECD_PID")
	[ -n "$S_RSS" ] || fail "cannot read VmRSS of the static execd"
	S_ANON=$(rss_kib "$EXECD_PID" RssAnon)
	row "idle anonymous RSS (static)" "$S_ANON KiB" \
		"${N_ANON:-?} KiB nginx worker" \
		"$(calc "sprintf(\"%.2f\", $S_ANON / ${N_ANON:-$S_ANON})")" \
		"< 2 MiB" "$(verdict_le "$S_ANON" $((ANON_MAX_KIB - 1)))"
	row "idle VmRSS, copied binary (static)" \
		"$S_RSS KiB ($(calc "sprintf(\"%.2f\", $S_RSS / 1024)") MiB)" \
		"$N_RSS KiB nginx worker" \
		"$(calc "sprintf(\"%.2f\", $S_RSS / $N_RSS)")" \
		"< 6 MiB" "$(verdict_le "$S_RSS" $((VMRSS_MAX_KIB - 1)))"
	S_SPLIT=$(mem_split "$EXECD_PID")
	stop "$EXECD_PID"
else
	row "idle anonymous RSS (static)" "not built" "-" "-" "< 2 MiB" MISS
	row "idle VmRSS, copied binary (static)" "not built" "-" "-" \
		"< 6 MiB" MISS
fi

# --- 3: start to first 200 on /ping -----------------------------------------

N_START=$("$SP" start "$STARTS" "$P_NGINX_START" /ping -- \
	"$NGINX" -p "$T/nginx-start/" -c "$T/nginx-start/nginx.conf" \
	-e "$T/nginx-start/error.log" -g 'daemon off;') ||
	fail "nginx start-up runs"
# shellcheck disable=SC2086 # split "median min max bad" into words
set -- $N_START
N_MED=$1 N_BAD=$4
N_MS=$(calc "sprintf(\"%.2f\", $N_MED / 1000)")

# start_row NAME BINARY info|target: STARTS start-ups of BINARY to its
# first 200 on /ping against nginx's; sets E_MIN, E_MAX and E_BAD (runs
# that did not exit 0).
start_row() {
	_out=$("$SP" start "$STARTS" "$P_EXECD_START" /ping -- \
		"$2" --listen "127.0.0.1:$P_EXECD_START" --log-level warn) ||
		fail "$1 runs"
	# shellcheck disable=SC2086
	set -- "$1" "$3" $_out
	E_MIN=$4 E_MAX=$5 E_BAD=$6
	if [ "$2" = info ]; then
		_t="(information)" _v=-
	else
		_t="< $START_MAX_MS ms"
		_v=$(calc "($3 < $START_MAX_MS * 1000) ? \"ok\" : \"MISS\"")
	fi
	row "$1" "$(calc "sprintf(\"%.2f\", $3 / 1000)") ms" "$N_MS ms nginx" \
		"$(calc "sprintf(\"%.2f\", $3 / $N_MED)")" "$_t" "$_v"
}

start_row "start to first /ping (median)" "$EXECD" info
E_BAD_DYN=$E_BAD START_OF="the dynamic build"
if [ -x "$STATIC_EXECD" ]; then
	start_row "start to first /ping (static)" "$STATIC_EXECD" target
	E_BAD=$((E_BAD + E_BAD_DYN)) START_OF="the static build"
else
	row "start to first /ping (static)" "not built" "-" "-" \
		"< $START_MAX_MS ms" MISS
fi

# --- 4: 1+1 round trip on one kernel, execd vs jupyter_client ---------------

# kbench starts the kernel, times its own round trips, then runs the
# baseline attached to the same kernel: "ours_med ours_min base_med base_min".
K_EXEC=$(timeout 600 "$KBENCH" exec "$EXECS" "$KPY" \
	"$HERE/kernel_baseline.py" 2>"$T/kbench-exec.log") ||
	fail "kernel round trips: $(tail -c 600 "$T/kbench-exec.log")"
# shellcheck disable=SC2086 # split the four numbers into words
set -- $K_EXEC
[ $# -eq 4 ] || fail "kbench exec printed '$K_EXEC'"
KE_MED=$1 KE_MIN=$2 KB_MED=$3 KB_MIN=$4
RATIO=$(calc "sprintf(\"%.2f\", $KE_MED / $KB_MED)")
row "1+1 round trip (median)" "$(us_ms "$KE_MED" 2) ms" \
	"$(us_ms "$KB_MED" 2) ms jupyter_client" "$RATIO" \
	"ratio <= $EXEC_MAX_RATIO" "$(verdict_le "$RATIO" "$EXEC_MAX_RATIO")"

# --- 5: kernel start to ready, execd vs jupyter_client's KernelManager ------

K_START=$(timeout 600 "$KBENCH" start "$KSTARTS" 2>"$T/kbench-start.log") ||
	fail "kernel starts: $(tail -c 600 "$T/kbench-start.log")"
J_START=$(timeout 600 "$KPY" "$HERE/kernel_baseline.py" start "$KSTARTS" \
	2>"$T/baseline-start.log") ||
	fail "jupyter_client kernel starts:" \
		"$(tail -c 600 "$T/baseline-start.log")"
# shellcheck disable=SC2086
set -- $K_START
[ $# -eq 3 ] || fail "kbench start printed '$K_START'"
KS_MED=$1 KS_MIN=$2 KS_MAX=$3
# shellcheck disable=SC2086
set -- $J_START
[ $# -eq 4 ] || fail "kernel_baseline.py start printed '$J_START'"
JS_MED=$1 JS_INFO=$4
RATIO=$(calc "sprintf(\"%.2f\", $KS_MED / $JS_MED)")
row "kernel start to ready (median)" "$(us_ms "$KS_MED" 0) ms" \
	"$(us_ms "$JS_MED" 0) ms jupyter_client" "$RATIO" \
	"ratio <= $KSTART_MAX_RATIO" \
	"$(verdict_le "$RATIO" "$KSTART_MAX_RATIO")"

# --- 6, 7, 8: POST /code 1+1, vs bare ZeroMQ and vs Jupyter Server ---------

run_bg 300 "$T/code-exec.out" "$T/code-exec.log" \
	"$KPY" "$HERE/code_bench.py" exec "$EXECD" "$EXECS" ||
	fail "POST /code round trips: $(tail -c 600 "$T/code-exec.log")"
C_EXEC=$(cat "$T/code-exec.out")
# shellcheck disable=SC2086 # split the numbers into words
set -- $C_EXEC
[ $# -eq 11 ] || fail "code_bench.py exec printed '$C_EXEC'"
CE_MED=$1 CE_MIN=$2 CZ_MED=$3 CZ_MIN=$4 CJ_MED=$5 CJ_MIN=$6 CF_MED=$7
CF_MIN=$8 CE_HDR=$9
shift 9
CW_MED=$1 CW_MIN=$2
RATIO=$(calc "sprintf(\"%.2f\", $CE_MED / $CZ_MED)")
row "POST /code 1+1 (median)" "$(us_ms "$CE_MED" 2) ms" \
	"$(us_ms "$CZ_MED" 2) ms bare zmq" "$RATIO" \
	"ratio <= $CODE_MAX_RATIO" "$(verdict_le "$RATIO" "$CODE_MAX_RATIO")"
# PRODUCT.md's 3x is against the path the upstream daemon takes, a
# WebSocket per run; a kept-open WebSocket is shown for information (the
# kernel's own ~3 ms leave no room for 3x there, whatever execd does).
RATIO=$(calc "sprintf(\"%.2f\", $CE_MED / $CF_MED)")
row "POST /code vs j-s ws per run" "$(us_ms "$CE_MED" 2) ms" \
	"$(us_ms "$CF_MED" 2) ms ws per run" "$RATIO" \
	"ratio <= $JUPYTER_MAX_RATIO" \
	"$(verdict_le "$RATIO" "$JUPYTER_MAX_RATIO")"
RATIO=$(calc "sprintf(\"%.2f\", $CE_MED / $CJ_MED)")
row "POST /code vs j-s one ws" "$(us_ms "$CE_MED" 2) ms" \
	"$(us_ms "$CJ_MED" 2) ms one websocket" "$RATIO" "(information)" "-"

# --- 8a: execd's /api/kernels/{id}/channels, vs zmq and Jupyter Server ----

RATIO=$(calc "sprintf(\"%.2f\", $CW_MED / $CZ_MED)")
row "channels ws 1+1 (median)" "$(us_ms "$CW_MED" 2) ms" \
	"$(us_ms "$CZ_MED" 2) ms bare zmq" "$RATIO" \
	"ratio <= $CHAN_MAX_RATIO" "$(verdict_le "$RATIO" "$CHAN_MAX_RATIO")"
RATIO=$(calc "sprintf(\"%.2f\", $CW_MED / $CJ_MED)")
row "channels ws vs j-s one ws" "$(us_ms "$CW_MED" 2) ms" \
	"$(us_ms "$CJ_MED" 2) ms one websocket" "$RATIO" \
	"ratio <= $CHAN_JS_MAX_RATIO" \
	"$(verdict_le "$RATIO" "$CHAN_JS_MAX_RATIO")"

# "clients_ok iopub_msgs rss_idle rss_connected rss_peak rss_after
#  min_bytes_per_client"
run_bg 300 "$T/fanout.out" "$T/fanout.log" \
	"$KPY" "$HERE/code_bench.py" fanout "$EXECD" "$FANOUT_CLIENTS" \
	"$FANOUT_LINES" ||
	fail "$FANOUT_CLIENTS channels clients: $(tail -c 600 "$T/fanout.log")"
# shellcheck disable=SC2046 # split the numbers into words
set -- $(cat "$T/fanout.out")
[ $# -eq 7 ] || fail "code_bench.py fanout printed '$(cat "$T/fanout.out")'"
FO_OK=$1 FO_MSGS=$2 FO_IDLE=$3 FO_CONN=$4 FO_PEAK=$5 FO_AFTER=$6 FO_BYTES=$7
row "$FANOUT_CLIENTS ws clients: all iopub" \
	"$FO_OK of $FANOUT_CLIENTS clients" "$FO_MSGS msgs, zmq sub" \
	"$(calc "sprintf(\"%.2f\", $FO_OK / $FANOUT_CLIENTS)")" \
	"all, in order" \
	"$( [ "$FO_OK" = "$FANOUT_CLIENTS" ] && echo ok || echo MISS)"
row "RSS growth, $FANOUT_CLIENTS ws clients" "$((FO_PEAK - FO_IDLE)) KiB" \
	"$FO_IDLE KiB idle" "$(calc "sprintf(\"%.2f\", $FO_PEAK / $FO_IDLE)")" \
	"(information)" "-"

# --- 8b: DELETE /code of a sleeping cell vs SIGINT from a bare client ------

run_bg 300 "$T/code-int.out" "$T/code-int.log" \
	"$KPY" "$HERE/code_bench.py" interrupt "$EXECD" "$INTS" ||
	fail "interrupted runs: $(tail -c 600 "$T/code-int.log")"
C_INT=$(cat "$T/code-int.out")
# shellcheck disable=SC2086
set -- $C_INT
[ $# -eq 4 ] || fail "code_bench.py interrupt printed '$C_INT'"
CI_MED=$1 CI_MIN=$2 CIZ_MED=$3 CIZ_MIN=$4
RATIO=$(calc "sprintf(\"%.2f\", $CI_MED / $CIZ_MED)")
row "DELETE /code to final event" "$(us_ms "$CI_MED" 2) ms" \
	"$(us_ms "$CIZ_MED" 2) ms SIGINT to idle" "$RATIO" \
	"ratio <= $INT_MAX_RATIO" "$(verdict_le "$RATIO" "$INT_MAX_RATIO")"

# --- 9: POST /code/context, warm pool vs no pool ----------------------------

run_bg 300 "$T/code-context.out" "$T/code-context.log" \
	"$KPY" "$HERE/code_bench.py" context "$EXECD" "$CTXS" ||
	fail "POST /code/context runs: $(tail -c 600 "$T/code-context.log")"
C_CTX=$(cat "$T/code-context.out")
# shellcheck disable=SC2086
set -- $C_CTX
[ $# -eq 5 ] || fail "code_bench.py context printed '$C_CTX'"
CN_MED=$1 CN_MIN=$2 CP_MED=$3 CP_MIN=$4 CP_MAX=$5
row "POST /code/context, pool" "$(us_ms "$CP_MED" 2) ms" \
	"$(us_ms "$CN_MED" 0) ms no pool" \
	"$(calc "sprintf(\"%.3f\", $CP_MED / $CN_MED)")" "< $POOL_MAX_MS ms" \
	"$(calc "($CP_MED < $POOL_MAX_MS * 1000) ? \"ok\" : \"MISS\"")"

# --- 9b: RL episodes, fork server vs none, against python3 -c ---------------

run_bg 600 "$T/episodes.out" "$T/episodes.log" \
	"$KPY" "$HERE/code_bench.py" episodes "$EXECD" "$EPISODES" ||
	fail "RL episodes: $(tail -c 600 "$T/episodes.log")"
C_EP=$(cat "$T/episodes.out")
# shellcheck disable=SC2086
set -- $C_EP
[ $# -eq 7 ] || fail "code_bench.py episodes printed '$C_EP'"
RATIO=$(calc "sprintf(\"%.3f\", $1 / $3)")
row "episode, fork server, 8 cl." "$1/s" "$3/s python3 -c" "$RATIO" \
	">= $EPISODE_MIN_RATIO" "$(verdict_ge "$RATIO" "$EPISODE_MIN_RATIO")"
row "episode, no fork server" "$2/s" "$3/s python3 -c" \
	"$(calc "sprintf(\"%.3f\", $2 / $3)")" "-" "-"
BRATIO=$(calc "sprintf(\"%.3f\", $6 / $3)")
row "episodes as one /code/batch" "$6/s" "$3/s python3 -c" "$BRATIO" \
	">= $BATCH_MIN_RATIO" "$(verdict_ge "$BRATIO" "$BATCH_MIN_RATIO")"
ERATIO=$(calc "sprintf(\"%.3f\", $7 / $3)")
row "one-request episode, 8 cl." "$7/s" "$3/s python3 -c" "$ERATIO" \
	">= $EPISODE_MIN_RATIO" "$(verdict_ge "$ERATIO" "$EPISODE_MIN_RATIO")"
row "fresh context ready, fork" "$(us_ms "$4" 1) ms" \
	"$(us_ms "$5" 0) ms no fork server" \
	"$(calc "sprintf(\"%.3f\", $4 / $5)")" "<= $FRESH_MAX_MS ms" \
	"$(calc "($4 <= $FRESH_MAX_MS * 1000) ? \"ok\" : \"MISS\"")"

# --- 10: POST /command of true vs spawning /bin/bash -c true ---------------

run_bg 120 "$T/command.out" "$T/command.log" \
	"$KPY" "$HERE/code_bench.py" command "$EXECD" 200 ||
	fail "POST /command runs: $(tail -c 600 "$T/command.log")"
C_CMD=$(cat "$T/command.out")
# shellcheck disable=SC2086
set -- $C_CMD
[ $# -eq 6 ] || fail "code_bench.py command printed '$C_CMD'"
CMD_US=$1
CMD_BASH=$5
CMD_PING=$6
# Upstream runs commands with bash, and so does execd: bash is the
# baseline; dash (/bin/sh) is shown for information.
RATIO=$(calc "sprintf(\"%.2f\", $1 / $5)")
row "POST /command true (median)" "$(us_ms "$1" 2) ms" \
	"$(us_ms "$5" 2) ms bash -c true" "$RATIO" "ratio <= $CMD_MAX_RATIO" \
	"$(verdict_le "$RATIO" "$CMD_MAX_RATIO")"
row "POST /command true vs dash" "$(us_ms "$1" 2) ms" \
	"$(us_ms "$3" 2) ms sh -c true" \
	"$(calc "sprintf(\"%.2f\", $1 / $3)")" "(information)" "-"

# --- 10a: MCP tool calls vs the plain API ---------------------------------

# "mcmd_med mcmd_min cmd_med cmd_min mcode_med mcode_min code_med code_min"
run_bg 300 "$T/mcp.out" "$T/mcp.log" \
	/usr/bin/python3 "$HERE/mcp_bench.py" calls "$EXECD" "$MCP_N" ||
	fail "MCP tool calls: $(tail -c 600 "$T/mcp.log")"
# shellcheck disable=SC2046 # split the numbers into words
set -- $(cat "$T/mcp.out")
[ $# -eq 8 ] || fail "mcp_bench.py calls printed '$(cat "$T/mcp.out")'"
M_CMD_MIN=$2 M_PCMD_MIN=$4 M_CODE_MIN=$6 M_PCODE_MIN=$8
RATIO=$(calc "sprintf(\"%.2f\", $1 / $3)")
row "MCP run_command true (median)" "$(us_ms "$1" 2) ms" \
	"$(us_ms "$3" 2) ms POST /command" "$RATIO" \
	"ratio <= $MCP_MAX_RATIO" "$(verdict_le "$RATIO" "$MCP_MAX_RATIO")"
RATIO=$(calc "sprintf(\"%.2f\", $5 / $7)")
row "MCP run_code 1+1 (median)" "$(us_ms "$5" 2) ms" \
	"$(us_ms "$7" 2) ms POST /code" "$RATIO" \
	"ratio <= $MCP_MAX_RATIO" "$(verdict_le "$RATIO" "$MCP_MAX_RATIO")"

# --- 10b: Java and Go through execd-repl-kernel vs the bare interpreter ----

# "code_med code_min bare_med bare_min create_med ready_med same_med"
for _l in java go; do
	run_bg 900 "$T/repl-$_l.out" "$T/repl-$_l.log" \
		/usr/bin/python3 "$HERE/repl_bench.py" "$_l" "$EXECD" \
		"$B/execd-repl-kernel" "$REPL_EXECS" "$REPL_STARTS" ||
		fail "$_l evaluations: $(tail -c 600 "$T/repl-$_l.log")"
	# shellcheck disable=SC2046 # split the numbers into words
	set -- $(cat "$T/repl-$_l.out")
	[ $# -eq 7 ] ||
		fail "repl_bench.py $_l printed '$(cat "$T/repl-$_l.out")'"
	if [ "$_l" = java ]; then
		_what="java println" _bare="bare jshell pipe"
	else
		_what="go main" _bare="bare yaegi run"
	fi
	RATIO=$(calc "sprintf(\"%.2f\", $1 / $3)")
	row "$_what via /code (median)" "$(us_ms "$1" 1) ms" \
		"$(us_ms "$3" 1) ms $_bare" "$RATIO" \
		"ratio <= $REPL_MAX_RATIO" "$(verdict_le "$RATIO" "$REPL_MAX_RATIO")"
	[ "$_l" = go ] && note "bare yaegi run in the bench's own session" \
		"(the kernel runs yaegi in a session of its own): $(us_ms "$7" 1) ms"
	row "$_l context start to ready" "$(us_ms "$6" 0) ms" \
		"POST /code/context $(us_ms "$5" 0) ms" "-" "(information)" "-"
done

# --- 11: many background commands held at once ---------------------------

# "start_us base_us rss_idle rss_held fds_idle fds_held running stop_us"
run_bg 300 "$T/hold.out" "$T/hold.log" \
	/usr/bin/python3 "$HERE/command_bench.py" hold "$EXECD" "$HOLD_N" ||
	fail "$HOLD_N background commands: $(tail -c 600 "$T/hold.log")"
H_OUT=$(cat "$T/hold.out")
# shellcheck disable=SC2086
set -- $H_OUT
[ $# -eq 8 ] || fail "command_bench.py hold printed '$H_OUT'"
H_START=$1 H_BASE=$2 H_RSS0=$3 H_RSS=$4 H_FD0=$5 H_FD=$6 H_RUN=$7 H_STOP=$8
row "$HOLD_N bg sleeps: start all" "$(us_ms "$H_START" 0) ms" \
	"$(us_ms "$H_BASE" 0) ms direct spawn" \
	"$(calc "sprintf(\"%.2f\", $H_START / $H_BASE)")" "(information)" "-"
row "$HOLD_N bg sleeps: held" "$H_RUN running" "$HOLD_N started" \
	"$(calc "sprintf(\"%.2f\", $H_RUN / $HOLD_N)")" "all, no errors" \
	"$( [ "$H_RUN" = "$HOLD_N" ] && echo ok || echo MISS)"
row "$HOLD_N bg sleeps: RSS held" "$H_RSS KiB" "$H_RSS0 KiB idle" \
	"$(calc "sprintf(\"%.2f\", $H_RSS / $H_RSS0)")" "(information)" "-"

# --- 12: output streamed through POST /command ----------------------------

# "execd_us base_us rss_idle rss_peak events bytes"
run_bg 300 "$T/stream.out" "$T/stream.log" \
	/usr/bin/python3 "$HERE/command_bench.py" stream "$EXECD" \
	"$STREAM_MIB" ||
	fail "streaming $STREAM_MIB MiB: $(tail -c 600 "$T/stream.log")"
S_OUT=$(cat "$T/stream.out")
# shellcheck disable=SC2086
set -- $S_OUT
[ $# -eq 6 ] || fail "command_bench.py stream printed '$S_OUT'"
S_US=$1 S_BASE=$2 S_RSS0=$3 S_RSS=$4 S_EVENTS=$5 S_BYTES=$6
S_GROW=$((S_RSS - S_RSS0))
row "$STREAM_MIB MiB lines via /command" \
	"$(calc "sprintf(\"%.0f\", $STREAM_MIB * 1048576 / $S_US)") MB/s" \
	"$(calc "sprintf(\"%.0f\", $STREAM_MIB * 1048576 / $S_BASE)") MB/s to null" \
	"$(calc "sprintf(\"%.2f\", $S_BASE / $S_US)")" "(information)" "-"
row "RSS growth, $STREAM_MIB MiB streamed" "$S_GROW KiB" \
	"$S_RSS0 KiB idle" "$(calc "sprintf(\"%.2f\", $S_RSS / $S_RSS0)")" \
	"< 8 MiB" "$(verdict_le "$S_GROW" $((STREAM_RSS_MAX_KIB - 1)))"

# --- 12a: output a client does not read, /command and /code ----------------

# "cmd_rss_idle cmd_rss_peak code_rss_idle code_rss_peak"
run_bg 600 "$T/unread.out" "$T/unread.log" \
	/usr/bin/python3 "$HERE/command_bench.py" unread "$EXECD" \
	"$UNREAD_MIB" "$UNREAD_SECS" ||
	fail "$UNREAD_MIB MiB unread: $(tail -c 600 "$T/unread.log")"
U_OUT=$(cat "$T/unread.out")
# shellcheck disable=SC2086
set -- $U_OUT
[ $# -eq 4 ] || fail "command_bench.py unread printed '$U_OUT'"
U_CGROW=$(($2 - $1)) U_KGROW=$(($4 - $3))
row "RSS $UNREAD_MIB MiB unread, /command" "$U_CGROW KiB" \
	"$1 KiB idle" "$(calc "sprintf(\"%.2f\", $2 / $1)")" \
	"< 8 MiB" "$(verdict_le "$U_CGROW" $((STREAM_RSS_MAX_KIB - 1)))"
row "RSS $UNREAD_MIB MiB unread, /code" "$U_KGROW KiB" \
	"$U_CGROW KiB /command" "$(calc "sprintf(\"%.2f\", $4 / $3)")" \
	"< 8 MiB" "$(verdict_le "$U_KGROW" $((STREAM_RSS_MAX_KIB - 1)))"

# --- 12b: POST /command true, isolation on (default profile, limits) vs off

# "on_median_us off_median_us mechanism"
ISO_N=${BENCH_ISO_N:-400}
run_bg 300 "$T/iso.out" "$T/iso.log" \
	/usr/bin/python3 "$HERE/command_bench.py" isolation "$EXECD" "$ISO_N" ||
	fail "isolation on/off: $(tail -c 600 "$T/iso.log")"
# shellcheck disable=SC2086
# shellcheck disable=SC2046 # split the numbers into words
set -- $(cat "$T/iso.out")
[ $# -eq 3 ] || fail "command_bench.py isolation printed '$(cat "$T/iso.out")'"
RATIO=$(calc "sprintf(\"%.2f\", $1 / $2)")
row "POST /command true, isolated ($3)" "$(us_ms "$1" 2) ms" \
	"$(us_ms "$2" 2) ms isolation off" "$RATIO" "<= 1.05x" \
	"$(verdict_le "$RATIO" 1.05)"
# Where execd's part of POST /command true goes (medians, so roughly).
CMD_PART=$((CMD_US - CMD_BASH)) CMD_ISO=$(($1 - $2))
CMD_REST=$((CMD_PART - CMD_PING - CMD_ISO))

# The same, each command 100 ms after the one before, as an agent's come.
ISO_GAP_N=${BENCH_ISO_GAP_N:-100}
run_bg 300 "$T/isogap.out" "$T/isogap.log" \
	/usr/bin/python3 "$HERE/command_bench.py" isolation "$EXECD" \
	"$ISO_GAP_N" 100 ||
	fail "isolation on/off, apart: $(tail -c 600 "$T/isogap.log")"
# shellcheck disable=SC2086
# shellcheck disable=SC2046 # split the numbers into words
set -- $(cat "$T/isogap.out")
[ $# -eq 3 ] ||
	fail "command_bench.py isolation printed '$(cat "$T/isogap.out")'"
RATIO=$(calc "sprintf(\"%.2f\", $1 / $2)")
row "POST /command true, isolated, 100 ms apart" "$(us_ms "$1" 2) ms" \
	"$(us_ms "$2" 2) ms isolation off" "$RATIO" "<= 1.05x" \
	"$(verdict_le "$RATIO" 1.05)"

# --- 13: files: download vs nginx, upload vs dd, RSS during both --------

FILES_MIB=${BENCH_FILE_MIB:-512}
P_NGINX_FILES=$(port) || exit 1
nginx_conf "$T/nginx-files" "$P_NGINX_FILES"
start_nginx "$T/nginx-files" "$P_NGINX_FILES"
run_bg 900 "$T/files.out" "$T/files.log" \
	"$KPY" "$HERE/files_bench.py" "$EXECD" "$P_NGINX_FILES" \
	"$T/nginx-files/html" "$FILES_MIB" ||
	fail "file transfers: $(tail -c 600 "$T/files.log")"
stop "$NGINX_PID"
# shellcheck disable=SC2086
# shellcheck disable=SC2046 # split the numbers into words
set -- $(cat "$T/files.out")
[ $# -eq 8 ] || fail "files_bench.py printed '$(cat "$T/files.out")'"
FD_E=$1 FD_N=$2 FD_RSS=$3 FU_E=$4 FU_DD=$5 FU_RSS=$6 F_IDLE=$7 FD_PAIR=$8
# The verdict takes the median ratio of back-to-back pairs (see
# files_bench.py); the best rates are shown beside it.
RATIO=$(calc "sprintf(\"%.2f\", $FD_PAIR)")
row "download $FILES_MIB MiB (MB/s)" "$FD_E MB/s" "$FD_N MB/s nginx" \
	"$RATIO" "ratio >= $DL_MIN_RATIO" "$(verdict_ge "$RATIO" "$DL_MIN_RATIO")"
# No target: the upload crosses loopback TCP (one more copy than dd's) and
# is parsed as multipart before it reaches the same write(2) and fsync.
RATIO=$(calc "sprintf(\"%.2f\", $FU_E / $FU_DD)")
row "upload $FILES_MIB MiB (MB/s)" "$FU_E MB/s" "$FU_DD MB/s dd fsync" \
	"$RATIO" "(information)" "-"
row "RSS during transfers" "$(calc "sprintf(\"%.1f\", ($FD_RSS > $FU_RSS ? $FD_RSS : $FU_RSS) / 1024)") MiB peak" \
	"$(calc "sprintf(\"%.1f\", $F_IDLE / 1024)") MiB idle" \
	"$(calc "sprintf(\"%.2f\", ($FD_RSS > $FU_RSS ? $FD_RSS : $FU_RSS) / $F_IDLE)")" \
	"growth < 8 MiB" \
	"$(verdict_le "$(calc "($FD_RSS > $FU_RSS ? $FD_RSS : $FU_RSS) - $F_IDLE")" 8192)"

# --- 13a: a workspace checkpoint and restore vs tar c + tar x -----------

# "execd_us tar_us ck_us rs_us tarc_us tarx_us written"
run_bg 900 "$T/ckpt.out" "$T/ckpt.log" \
	/usr/bin/python3 "$HERE/ckpt_bench.py" tree "$EXECD" "$CKPT_FILES" ||
	fail "checkpoints: $(tail -c 600 "$T/ckpt.log")"
# shellcheck disable=SC2046 # split the numbers into words
set -- $(cat "$T/ckpt.out")
[ $# -eq 7 ] || fail "ckpt_bench.py printed '$(cat "$T/ckpt.out")'"
RATIO=$(calc "sprintf(\"%.3f\", $1 / $2)")
row "checkpoint+restore, 10 chg" \
	"$(us_ms "$1" 0) ms" "$(us_ms "$2" 0) ms tar c+x" "$RATIO" \
	"ratio <= $CKPT_MAX_RATIO" "$(verdict_le "$RATIO" "$CKPT_MAX_RATIO")"
CK_US=$3 RS_US=$4 TC_US=$5 TX_US=$6 CK_WRITTEN=$7

# --- 13b: isolated sessions: a session's life vs /command, commit vs cp -a

# "iso_us command_us", or "skip REASON" where sessions cannot be made
run_bg 600 "$T/iso.out" "$T/iso.log" \
	/usr/bin/python3 "$HERE/iso_bench.py" session "$EXECD" "$ISO_SESS_N" ||
	fail "isolated sessions: $(tail -c 600 "$T/iso.log")"
# "commit_us cp_us create_us"
if ! grep -q '^skip' "$T/iso.out"; then
	run_bg 900 "$T/isoc.out" "$T/isoc.log" \
		/usr/bin/python3 "$HERE/iso_bench.py" commit "$EXECD" \
		"$CKPT_FILES" ||
		fail "isolated commit: $(tail -c 600 "$T/isoc.log")"
fi
if grep -q '^skip' "$T/iso.out"; then
	note "isolated sessions not measured: $(cat "$T/iso.out")"
else
	# shellcheck disable=SC2046 # split the numbers into words
	set -- $(cat "$T/iso.out") $(cat "$T/isoc.out")
	[ $# -eq 5 ] || fail "iso_bench.py printed '$*'"
	RATIO=$(calc "sprintf(\"%.2f\", $1 / $2)")
	row "isolated session+true+delete" "$(us_ms "$1" 1) ms" \
		"$(us_ms "$2" 1) ms /command" "$RATIO" \
		"ratio <= $ISO_SESS_MAX_RATIO" \
		"$(verdict_le "$RATIO" "$ISO_SESS_MAX_RATIO")"
	RATIO=$(calc "sprintf(\"%.4f\", $3 / $4)")
	row "isolated commit, 10 of $CKPT_FILES" "$(us_ms "$3" 1) ms" \
		"$(us_ms "$4" 0) ms cp -a" "$RATIO" \
		"ratio <= $ISO_COMMIT_MAX_RATIO" \
		"$(verdict_le "$RATIO" "$ISO_COMMIT_MAX_RATIO")"
	note "isolated session create over $CKPT_FILES files (records the tree): $(us_ms "$5" 0) ms"
fi

# --- 29: the desktop: a screenshot and a click vs the shell's tools --------

# "shot_api shot_shell click_api click_shell", medians in microseconds
run_bg 600 "$T/desktop.out" "$T/desktop.log" \
	/usr/bin/python3 "$HERE/desktop_bench.py" "$EXECD" "$DESKTOP_N" ||
	fail "desktop: $(tail -c 600 "$T/desktop.log")"
# shellcheck disable=SC2046 # split the numbers into words
set -- $(cat "$T/desktop.out")
[ $# -eq 4 ] || fail "desktop_bench.py printed '$(cat "$T/desktop.out")'"
RATIO=$(calc "sprintf(\"%.3f\", $1 / $2)")
row "screenshot 1280x800 PNG" "$(us_ms "$1" 1) ms" \
	"$(us_ms "$2" 1) ms xwd|pnmtopng" "$RATIO" \
	"ratio <= $DESKTOP_MAX_RATIO" "$(verdict_le "$RATIO" "$DESKTOP_MAX_RATIO")"
RATIO=$(calc "sprintf(\"%.3f\", $3 / $4)")
row "click (POST /computer/mouse)" "$(us_ms "$3" 2) ms" \
	"$(us_ms "$4" 2) ms xdotool" "$RATIO" \
	"ratio <= $DESKTOP_MAX_RATIO" "$(verdict_le "$RATIO" "$DESKTOP_MAX_RATIO")"

# --- 15: /proxy: a large download and a small request vs nginx direct ------

PROXY_MIB=${BENCH_PROXY_MIB:-256}
P_NGINX_PROXY=$(port) || exit 1
P_RELAY=$(port) || exit 1
nginx_conf "$T/nginx-proxy" "$P_NGINX_PROXY"
start_nginx "$T/nginx-proxy" "$P_NGINX_PROXY"
"$RELAY" "$P_RELAY" "$P_NGINX_PROXY" &
RELAY_PID=$!
PIDS="$PIDS $RELAY_PID"
# "dl_proxy_mbs dl_direct_mbs dl_pair_ratio lat_proxy_us lat_direct_us
#  dl_relay_mbs dl_relay_ratio lat_proxy_fresh_us lat_relay_us"
run_bg 600 "$T/proxy.out" "$T/proxy.log" \
	/usr/bin/python3 "$HERE/proxy_bench.py" "$EXECD" "$P_NGINX_PROXY" \
	"$T/nginx-proxy/html" "$PROXY_MIB" "${BENCH_PROXY_N:-500}" \
	"$P_RELAY" || fail "proxy rows: $(tail -c 600 "$T/proxy.log")"
stop "$RELAY_PID"
stop "$NGINX_PID"
PX_OUT=$(cat "$T/proxy.out")
# shellcheck disable=SC2086
set -- $PX_OUT
[ $# -eq 9 ] || fail "proxy_bench.py printed '$PX_OUT'"
# The targets are against bench/relay.c, the least a user-space proxy
# does; nginx direct, with no hop at all, is shown for information.
RATIO=$(calc "sprintf(\"%.2f\", $7)")
row "/proxy download $PROXY_MIB MiB" "$1 MB/s" "$6 MB/s splice relay" \
	"$RATIO" "ratio >= $PROXY_DL_MIN_RATIO" \
	"$(verdict_ge "$RATIO" "$PROXY_DL_MIN_RATIO")"
row "/proxy download vs nginx direct" "$1 MB/s" "$2 MB/s nginx" \
	"$(calc "sprintf(\"%.2f\", $3)")" "(information)" "-"
# The relay answers one request per connection: both sides connect anew.
RATIO=$(calc "sprintf(\"%.2f\", $8 / $9)")
row "/proxy small GET (median)" "$(us_ms "$8" 3) ms" \
	"$(us_ms "$9" 3) ms splice relay" "$RATIO" \
	"ratio <= $PROXY_LAT_MAX_RATIO" \
	"$(verdict_le "$RATIO" "$PROXY_LAT_MAX_RATIO")"
row "/proxy small GET, kept alive" "$(us_ms "$4" 3) ms" \
	"$(us_ms "$5" 3) ms nginx" "$(calc "sprintf(\"%.2f\", $4 / $5)")" \
	"(information)" "-"

# --- 14: a keystroke's echo through /pty's WebSocket vs a local pty -------

# "execd_med_us base_med_us execd_p99_us base_p99_us"
run_bg 120 "$T/pty.out" "$T/pty.log" \
	/usr/bin/python3 "$HERE/pty_bench.py" echo "$EXECD" \
	"${BENCH_PTY_KEYS:-500}" ||
	fail "pty keystroke echo: $(tail -c 600 "$T/pty.log")"
P_OUT=$(cat "$T/pty.out")
# shellcheck disable=SC2086
set -- $P_OUT
[ $# -eq 4 ] || fail "pty_bench.py echo printed '$P_OUT'"
row "pty keystroke echo (median)" "$(us_ms "$1" 3) ms" \
	"$(us_ms "$2" 3) ms local pty" "$(calc "sprintf(\"%.2f\", $1 / $2)")" \
	"(information)" "-"
row "pty keystroke echo (p99)" "$(us_ms "$3" 3) ms" \
	"$(us_ms "$4" 3) ms local pty" "$(calc "sprintf(\"%.2f\", $3 / $4)")" \
	"(information)" "-"

# --- notes -----------------------------------------------------------------

echo
[ -n "$E_ERR" ] && note "execd had errors under wrk: $E_ERR"
note "idle RSS of execd: $E_SPLIT; of the nginx worker: $N_SPLIT"
[ -n "${S_SPLIT:-}" ] && note "idle RSS of the static execd: $S_SPLIT"
note "execd RSS after the wrk rounds: $E_RSS_AFTER KiB"
note "start-up of $START_OF over $STARTS runs: min $(calc "sprintf(\"%.2f\", $E_MIN / 1000)") ms," \
	"max $(calc "sprintf(\"%.2f\", $E_MAX / 1000)") ms"
[ "$E_EXIT" = 0 ] || note "execd exited with status $E_EXIT on SIGTERM (expected 0)"
[ "$E_BAD" = 0 ] || note "execd exited non-zero on SIGTERM in $E_BAD start-up runs"
[ "$N_BAD" = 0 ] || note "nginx exited non-zero on SIGTERM in $N_BAD of $STARTS start-up runs"
note "$HOLD_N background sleep 30: execd fds $H_FD0 idle, $H_FD held;" \
	"all interrupted (DELETE /command) and reaped in $(us_ms "$H_STOP" 0)" \
	"ms; the direct spawns are bash -c 'sleep 30' in their own sessions"
note "streaming: $S_EVENTS stdout events, $S_BYTES bytes of stream read by" \
	"one client; the baseline is the same generator (head | tr | fold -w" \
	"99) into /dev/null; ratio = baseline time / execd time"
note "POST /command runs bash, as upstream does: spawning /bin/bash -c true" \
	"alone takes $(us_ms "$CMD_BASH" 2) ms here (/bin/sh is dash)"
note "POST /command true: execd's part, $(us_ms "$CMD_PART" 2) ms over" \
	"bash -c true, is about $(us_ms "$CMD_PING" 2) ms of HTTP round trip" \
	"(GET /ping on the same connection), $(us_ms "$CMD_ISO" 2) ms of" \
	"isolation (on vs off) and $(us_ms "$CMD_REST" 2) ms for the rest:" \
	"pipes, the child's set-up before exec, the exit's wake-up, two events"
note "1+1 round trip, fastest of $EXECS: execd $(us_ms "$KE_MIN" 2) ms," \
	"jupyter_client $(us_ms "$KB_MIN" 2) ms"
note "kernel start to ready over $KSTARTS runs: execd min" \
	"$(us_ms "$KS_MIN" 0) ms, max $(us_ms "$KS_MAX" 0) ms"
note "jupyter_client's wait_for_ready() returns after 0.2 s with no iopub" \
	"message; to the kernel_info reply it accepts:" \
	"$(us_ms "$JS_INFO" 0) ms median (execd ratio" \
	"$(calc "sprintf(\"%.2f\", $KS_MED / $JS_INFO)") against that)"
note "POST /code 1+1, fastest of $EXECS: execd $(us_ms "$CE_MIN" 2) ms," \
	"bare zmq $(us_ms "$CZ_MIN" 2) ms, jupyter-server $(us_ms "$CJ_MIN" 2)" \
	"ms (one websocket), $(us_ms "$CF_MIN" 2) ms (websocket per run)"
note "POST /code: response headers (init event) after $(us_ms "$CE_HDR" 2)" \
	"ms median; execd's part of a run is its time less the bare zmq time:" \
	"$(calc "sprintf(\"%.2f\", ($CE_MED - $CZ_MED) / 1000)") ms"
note "jupyter-server: 'one websocket' keeps one /api/kernels/{id}/channels" \
	"open for all runs; 'ws per run' opens one per run and closes it, as" \
	"the upstream daemon does.  The client acks at once (TCP_QUICKACK):" \
	"jupyter-server writes without TCP_NODELAY, and a delayed ack would" \
	"add ~40 ms to most of its runs"
note "channels ws: execd's /api/kernels/{id}/channels, JSON messages," \
	"kept open for each block of 10 (the same client code as for" \
	"jupyter-server); fastest of $EXECS: $(us_ms "$CW_MIN" 2) ms"
note "$FANOUT_CLIENTS channels clients on one kernel, one cell printing" \
	"$FANOUT_LINES flushed lines: $FO_MSGS iopub messages each" \
	"($FO_BYTES bytes of JSON at least); execd RSS $FO_IDLE KiB idle," \
	"$FO_CONN KiB with the clients connected, $FO_PEAK KiB peak," \
	"$FO_AFTER KiB after; a client's unsent bytes are capped (16 MiB)," \
	"past which it is dropped as too slow"
note "MCP: one session, JSON answers (no progress token), keep-alive;" \
	"median of $MCP_N per side in alternating blocks of 10; fastest:" \
	"run_command $(us_ms "$M_CMD_MIN" 2) ms vs POST /command" \
	"$(us_ms "$M_PCMD_MIN" 2) ms, run_code $(us_ms "$M_CODE_MIN" 2) ms" \
	"vs POST /code $(us_ms "$M_PCODE_MIN" 2) ms"
note "interrupt: a python time.sleep(30) cell interrupted after 0.3 s," \
	"median of $INTS per side, alternating; fastest: execd" \
	"$(us_ms "$CI_MIN" 2) ms (DELETE /code to the stream's end), bare zmq" \
	"$(us_ms "$CIZ_MIN" 2) ms (SIGINT to the kernel to its iopub idle)"
note "POST /code/context over $CTXS runs: with the pool min" \
	"$(us_ms "$CP_MIN" 2) ms, max $(us_ms "$CP_MAX" 2) ms; without, min" \
	"$(us_ms "$CN_MIN" 0) ms"
note "/proxy download vs a relay: bench/relay.c, the least a user-space" \
	"proxy does (the backend's bytes spliced through a pipe to the client," \
	"blocking, one connection at a time), in front of the same nginx"
note "checkpoint+restore: $CKPT_FILES files of 4 KiB in 100 directories," \
	"10 changed in place between the two; medians of 5 rounds: checkpoint" \
	"$(us_ms "$CK_US" 0) ms, restore $(us_ms "$RS_US" 0) ms ($CK_WRITTEN" \
	"files written back); tar c $(us_ms "$TC_US" 0) ms, tar x" \
	"$(us_ms "$TX_US" 0) ms (bench/ckpt_bench.py)"
echo "$((ROWS - MISSES)) of $ROWS targets met."
exit 0
