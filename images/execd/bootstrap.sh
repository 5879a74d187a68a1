#!/bin/sh
# bootstrap.sh -- start execd beside a container's own command.
#
#   /opt/opensandbox/bootstrap.sh [COMMAND [ARG...]]
#
# The entrypoint a sandbox platform gives the user's container after
# copying execd and this file into /opt/opensandbox (see docs/deploy.md):
#  1. EXECD_ENVS defaults to /opt/opensandbox/.env (the KEY=VALUE file
#     execd merges into every command's environment);
#  2. the file named by EXECD_BOOTSTRAP_PRE_SCRIPT, if set, is sourced
#     (a missing one is reported and skipped);
#  3. $EXECD (default /opt/opensandbox/execd) starts in the background
#     and listens on 0.0.0.0:44772 (EXECD_LISTEN, or 0.0.0.0:$EXECD_PORT,
#     when the environment names neither: the platform reaches execd from
#     outside the container and sets no token; EXECD_ACCESS_TOKEN, when
#     set, is still required on every request);
#  4. COMMAND (else the shell command in BOOTSTRAP_CMD) runs as the
#     container's main process; SIGTERM and SIGINT are passed on to it,
#     and its exit status is this script's, once execd has stopped.
#     Without a command, execd itself is waited for.
# A POSIX shell starts background commands with SIGINT ignored, and only
# bash lets a subshell undo that: under another shell SIGINT reaches the
# command as SIGTERM.
: "${EXECD:=/opt/opensandbox/execd}"
: "${EXECD_ENVS:=/opt/opensandbox/.env}"
if [ -z "${EXECD_LISTEN:-}" ]; then
	EXECD_LISTEN=0.0.0.0:${EXECD_PORT:-44772}
fi
export EXECD EXECD_ENVS EXECD_LISTEN

if [ -n "${EXECD_BOOTSTRAP_PRE_SCRIPT:-}" ]; then
	if [ -r "$EXECD_BOOTSTRAP_PRE_SCRIPT" ]; then
		# shellcheck disable=SC1090
		. "$EXECD_BOOTSTRAP_PRE_SCRIPT"
	else
		echo "bootstrap: cannot read EXECD_BOOTSTRAP_PRE_SCRIPT" \
		    "$EXECD_BOOTSTRAP_PRE_SCRIPT; going on without it" >&2
	fi
fi

# The traps come first: a signal that comes while execd or the command
# starts is kept (in sig) and passed on once there is a process to take
# it: the command, or execd when there is no command.
int=TERM
[ -z "${BASH_VERSION:-}" ] || int=INT
if [ $# -eq 0 ] && [ -n "${BOOTSTRAP_CMD:-}" ]; then
	set -- /bin/sh -c "$BOOTSTRAP_CMD"
fi
epid=
child=
sig=
if [ $# -eq 0 ]; then
	trap 'sig=TERM; [ -z "$epid" ] || kill -TERM "$epid" 2>/dev/null' \
	    TERM INT
else
	trap 'sig=TERM; [ -z "$child" ] || kill -TERM "$child" 2>/dev/null' \
	    TERM
	trap 'sig=$int; [ -z "$child" ] || kill -"$int" "$child" 2>/dev/null' \
	    INT
fi

# A process that is still the shell that forked it, before its exec, does
# not take signals as the program will: wait (up to 2 s) until pid is no
# longer running our own shell.  Where /proc cannot tell, go on at once.
exec_wait() {
	n=0
	# shellcheck disable=SC3013 # -ef: dash, bash and busybox all have it
	while [ "$n" -lt 20 ] && [ -e "/proc/$1/exe" ] &&
	    [ "/proc/$1/exe" -ef "/proc/$$/exe" ]; do
		sleep 0.1 2>/dev/null || break
		n=$((n + 1))
	done
}

if [ -n "$sig" ]; then
	exit $((128 + 15))	# told to stop before anything started
elif [ -x "$EXECD" ]; then
	"$EXECD" &
	epid=$!
else
	echo "bootstrap: $EXECD is not executable; execd not started" >&2
fi

if [ $# -eq 0 ]; then
	[ -n "$epid" ] || exit 127
	if [ -n "$sig" ]; then
		exec_wait "$epid"
		kill -TERM "$epid" 2>/dev/null
	fi
	while kill -0 "$epid" 2>/dev/null; do
		wait "$epid"
		st=$?
	done
	# A wait that the trap cut short (st > 128) may be followed by
	# execd's end before kill -0 looks: the shell has its status.
	wait "$epid" 2>/dev/null
	last=$?
	[ "$last" -eq 127 ] || st=$last
	exit "${st:-0}"
fi

if [ -n "$sig" ]; then
	# Told to stop before the command started: it does not start.
	set -- /bin/sh -c "exit $((128 + 15))"
fi
if [ -n "${BASH_VERSION:-}" ]; then
	( trap - INT QUIT TERM; exec "$@" ) &
else
	"$@" &
fi
child=$!
[ -z "$sig" ] || kill -"$sig" "$child" 2>/dev/null
# wait returns early (above 128) when a trapped signal comes: wait again
# while the command runs on.  If it ended meanwhile, one more wait
# returns its status (dash, bash and busybox keep it; 127 where a shell
# does not, and then the first answer stands).
while :; do
	wait "$child"
	st=$?
	[ "$st" -gt 128 ] || break
	kill -0 "$child" 2>/dev/null && continue
	wait "$child"
	last=$?
	[ "$last" -eq 127 ] || st=$last
	break
done
if [ -n "$epid" ]; then
	exec_wait "$epid"
	kill -TERM "$epid" 2>/dev/null
	wait "$epid"
fi
exit "$st"
