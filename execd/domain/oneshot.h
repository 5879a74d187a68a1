/*
 * oneshot.h -- a run once: code run in a process forked for it from its
 * language's fork server (forksrv.h), which ends when the code has run.
 *
 * This is what a batch item or an ephemeral run asks of a fresh context
 * (clean state, its own process, limits and cgroup), without what a
 * kernel costs: no ZeroMQ sockets, threads or connection file, no
 * kernel_info round, no shutdown.  The process runs the code in a copy
 * of the IPython shell its server built, as a new kernel's first cell,
 * and reports on three pipes: what its streams print, its results,
 * displays and error, as iopub messages, one JSON line each
 * ({"msg_type": T, "content": C}, read by oneshot_line); and, raw, what
 * is written to its fds 1 and 2 (by its children, say).
 *
 * One started without code stays: it runs each code oneshot_run() sends,
 * in order, in the same shell (a kernel's cells, without the kernel),
 * ending each run with the execute_reply a kernel would send, until it
 * is freed, or until oneshot_become() makes a kernel of it.  Loop
 * thread only.
 */
#ifndef EXECD_ONESHOT_H
#define EXECD_ONESHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "kevent.h"

struct kernel_conf;
struct kp_kernelspec;
struct limits;
struct loop;
struct oneshot;

struct oneshot_cb {
	/* Each event, in order; the callee owns it (kevent_clear). */
	void	(*event)(struct kevent *ev, void *arg);
	/*
	 * A staying one: it waits for code, at its start and after each
	 * run's reply.
	 */
	void	(*idle)(void *arg);
	/*
	 * A staying one: the run sent first of those not ended has ended,
	 * reply being its execute_reply content (borrowed).
	 */
	void	(*reply)(const json_t *reply, void *arg);
	/*
	 * Exactly once, unless oneshot_free() came first, and last: the
	 * process is gone and everything it sent was reported.  why is NULL
	 * when it ran the code to its end (the code's errors are events),
	 * or when it became a kernel and said all it had to; else why it
	 * did not (it could not be forked, it was killed, a limit ended
	 * it; a staying one's process is never meant to end).  Any
	 * callback may free the oneshot.
	 */
	void	(*done)(const char *why, void *arg);
};

/*
 * Whether spec's code can be run once now: forking is on and may run
 * code without a kernel (conf->fork, conf->no_kernel), spec is an
 * ipykernel that may be forked and is given no option but its
 * connection file (others may configure the shell, and a run once has
 * the server's), and its fork server is up and can run code.  When
 * false, a kernel is the way (which also starts the server, for the
 * next time).
 */
bool	oneshot_can(const struct kernel_conf *conf,
	    const struct kp_kernelspec *spec);
/*
 * Run code once under spec's server, in cwd (NULL: execd's), under
 * limits (NULL: none; borrowed until done or oneshot_free); NULL code:
 * stay.  name ("context=ID") goes in the log line of its end, at info
 * for a staying one.  0 with *out set; cb->done follows, never from
 * within this call.  -errno with a message in err when it could not be
 * asked for (oneshot_can was false).
 */
int	oneshot_start(struct loop *, const struct kernel_conf *conf,
	    const struct limits *limits, const struct kp_kernelspec *spec,
	    const char *cwd, const char *code, const char *name,
	    const struct oneshot_cb *cb, void *arg, struct oneshot **out,
	    char *err, size_t errlen);
/*
 * Send code to a staying one, to run after what was sent before (at
 * once if nothing runs; before its fork, once it is forked).  0,
 * -EINVAL when code is not UTF-8, -EPIPE when it does not stay (or
 * stays no more), or -errno.
 */
int	oneshot_run(struct oneshot *, const char *code);
/*
 * Make a kernel of a staying one, once the runs sent have ended: it
 * starts IPKernelApp on connfile, in its shell, with out_fd as its fds 1
 * and 2 (the caller keeps its own copy).  Its pid, no longer registered
 * (kernel_become_fn); the oneshot reports the runs it had been sent,
 * then done.  -ESRCH when there is no process to make one of (not
 * forked yet, or ended), or -errno.
 */
pid_t	oneshot_become(struct oneshot *, const char *connfile, int out_fd);
/*
 * SIGINT to the run (at its start, if it has not started yet); when
 * kill_ms > 0, SIGKILL to its process group that long after if it has
 * not ended by then (a staying one's run ends with its reply).  0, or -ESRCH when it has ended.
 */
int	oneshot_interrupt(struct oneshot *, unsigned kill_ms);
/*
 * Stop reporting and free; a process still running is killed (and what
 * is left of o goes once it is reaped).
 */
void	oneshot_free(struct oneshot *);

/*
 * One line of a run once's events (without its newline) as the events
 * it stands for, into set (set->n may be 0).  A line that is not a JSON
 * object (read as a kernel's frames are: kp_wire_json_load) with a
 * string msg_type and an object content becomes a stderr note saying
 * so.  Returns what the events borrow (their text), to be
 * released (json_decref) once they are used; may be NULL.
 */
json_t	*oneshot_line(const char *line, size_t len, struct kevent_set *set);

#endif
