/*
 * kevent.h -- what a kernel's messages mean to a code run's stream.
 *
 * An iopub message of a run, or its execute reply, becomes the events
 * clients parse: stdout and stderr text, execution_count, result (the MIME
 * bundle with text/plain renamed "text"), error.  Pure: no I/O and no run
 * state; the run (run.c) decides what to do with them, pacing and
 * cutting text, and keeping an interrupt it caused out of the errors.
 * Content is whatever the kernel sent: a missing or mistyped field is
 * read as absent, never trusted.
 */
#ifndef KEVENT_H
#define KEVENT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "../../kernelproto/kp_msg.h"

enum kevent_kind {
	KEV_STDOUT = 1,
	KEV_STDERR,
	KEV_COUNT,		/* execution_count, before its result */
	KEV_RESULT,
	KEV_ERROR,
};

struct kevent {
	enum kevent_kind	 kind;
	const char		*text;	/* STDOUT/STDERR: borrowed; may hold NUL */
	size_t			 len;
	long long		 count;		/* COUNT */
	json_t			*results;	/* RESULT: owned */
	json_t			*error;		/* ERROR: owned, see below */
	const char		*ename;		/* ERROR: borrowed from error */
	bool			 note;	/* STDERR: execd's own, never cut */
};

#define KEVENT_MAX	3

/* The events of one message, in order. */
struct kevent_set {
	struct kevent	 ev[KEVENT_MAX];
	size_t		 n;
	char		 note[160];	/* the text of a dropped-part note */
};

/*
 * The events of iopub message m into set (set->n may be 0).  A message
 * with parts over the frame cap gets a stderr note saying so first.  An
 * error's JSON is {ename, evalue, traceback}, strings and a list or null.
 */
void	kevent_iopub(const struct kp_msg *m, struct kevent_set *set);

/*
 * The error an execute reply carries when the kernel sent no error event
 * (tslab reports errors only there; an aborted request has none): true
 * and ev filled, or false for a reply that is not a failure.
 */
bool	kevent_reply(const json_t *content, struct kevent *ev);

/* An error event of our own; traceback a list of strings, or NULL. */
void	kevent_error(struct kevent *ev, const char *ename,
	    const char *evalue, const json_t *traceback);

/* Release what the events own. */
void	kevent_clear(struct kevent *ev);
void	kevent_set_clear(struct kevent_set *set);

#endif
