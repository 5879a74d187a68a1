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
#  4. with lifecycle hooks configured (OPENSANDBOX_LIFECYCLE not blank,
#     EXECD_LIFECYCLE_CONFIG set, or a saved ~/.execd/lifecycle.toml or
#     .json) and no EXECD_RUNTIME_INIT, COMMAND waits for preStart:
#     execd reports it in a private file (--lifecycle-startup-status-file)
#     that it must start to fill within 10 s, and end within preStart's
#     timeout and 10 s more; a preStart that fails (or a report that does
#     not come) stops execd, and this script exits 1 without COMMAND;
#  5. COMMAND (else the shell command in BOOTSTRAP_CMD) runs as the
#     container's main process, without OPENSANDBOX_LIFECYCLE and
#     EXECD_LIFECYCLE_CONFIG; SIGTERM and SIGINT are passed on to it,
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

# Whether hooks are configured (as upstream's bootstrap asks), with a
# command to hold until preStart is over.
hooks=
case "${EXECD_RUNTIME_INIT:-}" in
1 | [Tt][Rr][Uu][Ee] | [Yy][Ee][Ss] | [Oo][Nn]) ;;
*)
	case "${OPENSANDBOX_LIFECYCLE:-}" in
	*[![:space:]]*) hooks=1 ;;
	esac
	if [ -n "${EXECD_LIFECYCLE_CONFIG:-}" ] ||
	    [ -e "${HOME:-/nonexistent}/.execd/lifecycle.toml" ] ||
	    [ -e "${HOME:-/nonexistent}/.execd/lifecycle.json" ]; then
		hooks=1
	fi
	[ $# -gt 0 ] || hooks=
	;;
esac
stdir=

# The state letter of process $1 (Z for a zombie), or nothing; with the
# shell alone, as the image may have no sed.
proc_state() {
	st_line=
	read -r st_line <"/proc/$1/stat" 2>/dev/null
	st_line=${st_line##*) }
	echo "${st_line%% *}"
}

# Wait for execd's report of preStart in $stdir/status: 0 on "done 0",
# else 1 (preStart failed, execd ended, the report is late or makes no
# sense, or a signal came).  Time counts in tenths of a second.
pre_start_wait() {
	ticks=0
	limit=100
	running=
	while [ -z "$sig" ]; do
		last=
		while IFS= read -r line; do
			last=$line
		done <"$stdir/status" || return 1
		case $last in
		"done 0") return 0 ;;
		"done "*) return 1 ;;
		"running "*)
			if [ -z "$running" ]; then
				n=${last#running }
				case $n in
				"" | *[!0-9]* | 0* | ???????????*) return 1 ;;
				esac
				running=1
				ticks=0
				limit=$(((n + 10) * 10))
			fi
			;;
		"") ;;
		*) return 1 ;;
		esac
		kill -0 "$epid" 2>/dev/null || return 1
		[ "$(proc_state "$epid")" != Z ] || return 1
		[ "$ticks" -lt "$limit" ] || return 1
		if sleep 0.1 2>/dev/null; then
			ticks=$((ticks + 1))
		else
			sleep 1
			ticks=$((ticks + 10))
		fi
	done
	return 1
}

if [ -n "$sig" ]; then
	exit $((128 + 15))	# told to stop before anything started
elif [ -x "$EXECD" ] && [ -n "$hooks" ]; then
	# A directory only we may enter (mkdir makes it or fails: no link
	# is followed), without mktemp, which the image may not have.
	n=0
	stdir=${TMPDIR:-/tmp}/execd-lifecycle.$$.$n
	while ! (umask 077 && mkdir "$stdir") 2>/dev/null; do
		n=$((n + 1))
		stdir=${TMPDIR:-/tmp}/execd-lifecycle.$$.$n
		if [ "$n" -ge 100 ]; then
			echo "bootstrap: cannot make a directory for the" \
			    "lifecycle status file in ${TMPDIR:-/tmp}" >&2
			exit 1
		fi
	done
	if ! (umask 077 && : >"$stdir/status"); then
		echo "bootstrap: cannot make $stdir/status" >&2
		rm -rf "$stdir"
		exit 1
	fi
	"$EXECD" --lifecycle-startup-status-file "$stdir/status" &
	epid=$!
	if ! pre_start_wait; then
		kill -TERM "$epid" 2>/dev/null
		n=0
		while kill -0 "$epid" 2>/dev/null &&
		    [ "$(proc_state "$epid")" != Z ] && [ "$n" -lt 100 ]; do
			sleep 0.1 2>/dev/null || sleep 1
			n=$((n + 1))
		done
		kill -KILL "$epid" 2>/dev/null
		wait "$epid" 2>/dev/null
		rm -rf "$stdir"
		if [ -n "$sig" ]; then
			exit $((128 + 15))
		fi
		echo "bootstrap: lifecycle preStart did not succeed" \
		    "(${last:-no report}); $EXECD stopped, the command not" \
		    "started" >&2
		exit 1
	fi
	rm -rf "$stdir"
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
# The hooks' configuration is execd's, not the command's (as upstream).
unset OPENSANDBOX_LIFECYCLE EXECD_LIFECYCLE_CONFIG
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
