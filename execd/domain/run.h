/*
 * run.h -- a code run: code sent to a context, and the typed events it
 * gives, kept until its one reader takes them.
 *
 * A run is what POST /code streams, and what any other front end that
 * runs code (a tool call, a batch item) uses in the same way.  It starts
 * the code in its context, whatever serves the context (context.h), and
 * turns what the context reports into events in the order clients parse
 * them: init with the context id, stdout and stderr text, execution_count
 * then result, status "error" then error, and execution_complete with
 * the run's duration once the kernel has both replied and gone idle; a
 * run that cannot finish (its kernel died) ends with an error event that
 * says why and no execution_complete.
 *
 * The reader takes events at its own pace (run_next).  A kernel's output
 * cannot be paced (its iopub is a PUB socket), so the run bounds what it
 * holds by cutting text instead: the first half of max_output goes out as
 * it comes, of the rest only the last half is kept, and once the run is
 * over a stderr marker saying how many bytes were dropped precedes that
 * tail.  Text events hold at most RUN_TEXT bytes each.  Other events that
 * wait for the reader beyond max_output + max_queue bytes (results far
 * faster than the reader takes them) drop everything held and end the
 * run's events with RUN_OVERFLOW.  What is kept waits in a file rather
 * than in memory, past a small amount (run_init), so a reader that does
 * not read costs little memory however much the code prints.
 *
 * Every event the reader takes has a sequence number (ev->seq: 1, 2, ...
 * in the order taken).  A reader that lost what it took (its client went
 * away mid-stream and came back with the last number it saw) asks for the
 * events after that number again with run_replay(); the run keeps the
 * most recent taken events for that, up to max_replay bytes (0: none, and
 * nothing is kept).
 *
 * How events are framed on a wire (sse_fmt.h) is the reader's business.
 * Loop thread only.
 */
#ifndef EXECD_RUN_H
#define EXECD_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "../../sse/sse_fmt.h"

struct context;
struct run;

#define RUN_TEXT	(64 << 10)	/* text bytes per output event */

struct run_opts {
	const char	*code;
	long long	 timeout_ms;	/* 0: none */
	size_t		 max_output;	/* text bytes kept, head and tail */
	size_t		 max_queue;	/* other bytes that may wait */
	size_t		 max_replay;	/* taken events kept; 0: none */
};

/* What run_next() says. */
#define RUN_EVENT	0	/* *ev is the next event */
#define RUN_WAIT	1	/* none yet: wait for the notify callback */
#define RUN_END		2	/* every event was taken */
#define RUN_OVERFLOW	3	/* the reader fell behind: nothing follows */

/*
 * The run has events to take (or has ended).  Loop thread, any number of
 * times, never from inside run_new() or run_next(); it may call
 * run_next() but not run_free().
 */
typedef void	run_notify_cb(void *arg);

/*
 * Where runs spool the text their readers have yet to take beyond a small
 * amount held in memory (see run.c): a directory execd writes, copied;
 * NULL frees it, and text then stays in memory.
 */
void		 run_init(const char *dir);

/*
 * Start o->code in c, which must be ready (context_ready()): the init
 * event is queued at once, and a run that cannot start has its error
 * event queued instead.  Never fails.  o is not kept.
 */
struct run	*run_new(struct context *c, const struct run_opts *o,
		    run_notify_cb *notify, void *arg);
/*
 * The next event into *ev, whose pointers stay valid until the next call
 * or run_free(): RUN_EVENT, RUN_WAIT, RUN_END or RUN_OVERFLOW.
 */
int		 run_next(struct run *, struct sse_event *ev);
/*
 * Take the events after sequence number seq again: the next run_next()
 * gives seq + 1 (0: from the first event).  0, -ERANGE when an event
 * after seq is no longer kept (nothing changes), -EINVAL when seq is
 * past the last event taken.  Invalidates the event run_next() gave.
 */
int		 run_replay(struct run *, uint64_t seq);
/* Interrupt the run's code.  0, -ESRCH when it no longer runs, -errno. */
int		 run_interrupt(struct run *);
/*
 * Free the run; NULL is fine.  Code still running goes on in its context,
 * unheard (as it would for a client that left).
 */
void		 run_free(struct run *);

#endif
