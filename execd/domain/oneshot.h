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
 * is written to its fds 1 and 2 (by its children, say).  Loop thread
 * only.
 */
#ifndef EXECD_ONESHOT_H
#define EXECD_ONESHOT_H

#include <stdbool.h>
#include <stddef.h>

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
	 * Exactly once, unless oneshot_free() came first, and last: the
	 * process is gone and everything it sent was reported.  why is NULL
	 * when it ran the code to its end (the code's errors are events);
	 * else why it did not (it could not be forked, it was killed, a
	 * limit ended it).  The oneshot may be freed from here.
	 */
	void	(*done)(const char *why, void *arg);
};

/*
 * Whether spec's code can be run once now: forking is on (conf->fork),
 * spec is an ipykernel that may be forked and is given no option but its
 * connection file (others may configure the shell, and a run once has
 * the server's), and its fork server is up and can run code.  When false, a kernel is the way (which also starts the
 * server, for the next time).
 */
bool	oneshot_can(const struct kernel_conf *conf,
	    const struct kp_kernelspec *spec);
/*
 * Run code once under spec's server, in cwd (NULL: execd's), under
 * limits (NULL: none; borrowed until done or oneshot_free).  0 with *out
 * set; cb->done follows, never from within this call.  -errno with a
 * message in err when it could not be asked for (oneshot_can was false).
 */
int	oneshot_start(struct loop *, const struct kernel_conf *conf,
	    const struct limits *limits, const struct kp_kernelspec *spec,
	    const char *cwd, const char *code, const struct oneshot_cb *cb,
	    void *arg, struct oneshot **out, char *err, size_t errlen);
/*
 * SIGINT to the run (at its start, if it has not started yet); when
 * kill_ms > 0, SIGKILL to its process group that long after if it has
 * not ended by then.  0, or -ESRCH when it has ended.
 */
int	oneshot_interrupt(struct oneshot *, unsigned kill_ms);
/* Stop reporting and free; a process still running is killed. */
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
