/*
 * cmdlog.h -- the event history of a command, kept on disk, and readers
 * that replay it from any sequence number and then follow it live.
 *
 * The history is the command's formatted stream events ("{...}\n\n", each
 * ending with its "seq"), appended in files of about cap/3 bytes named
 * <prefix>.<n>.events.  When the current file is full a new one starts;
 * the first file stays, and of the others the last two, so what is kept
 * for later is about cap bytes, the head and the tail of the output, the
 * final event included.  Files a reader has not read yet stay too, until
 * the reader is lag bytes behind: a client slower than the command gets
 * everything unless it falls that far behind.  A reader that wants events
 * no longer kept gets a "history_gap" event saying which, where they would
 * have been, then goes on with the oldest kept after them.  Memory does
 * not grow with the history: a reader holds one chunk.
 * Loop thread only.
 */
#ifndef EXECD_CMDLOG_H
#define EXECD_CMDLOG_H

#include <stddef.h>
#include <stdint.h>

#include "../../sse/sse_fmt.h"

#define CMDLOG_CAP	(16 << 20)	/* bytes of events kept for later */
#define CMDLOG_LAG	((size_t)1 << 30)	/* a reader may be behind */

struct cmdlog;
struct cmdlog_reader;

/* Called when a reader has something new to pull (or the log ended). */
typedef void cmdlog_notify_cb(struct cmdlog_reader *, void *arg);

/*
 * A new, empty history in files <prefix>.<n>.events (the first is made
 * when the history outgrows memory, see cmdlog.c), keeping about cap
 * bytes, and up to about lag more for readers behind.  0 with *out set,
 * or -errno.
 */
int	cmdlog_new(const char *prefix, size_t cap, size_t lag,
	    struct cmdlog **out);
/*
 * Append whole events, each "{...}\n\n" with "seq" last, numbers rising.
 * Readers are notified.  0, or -errno when they could not be written (the
 * first failure is logged; such events are not kept).
 */
int	cmdlog_append(struct cmdlog *, const char *p, size_t n);
/* No more events: readers end once they have read everything. */
void	cmdlog_end(struct cmdlog *);
/* Bytes of events kept, in memory or in files (those are stat(2)ed). */
uint64_t cmdlog_size(const struct cmdlog *);
/* Readers open on the log. */
size_t	cmdlog_readers(const struct cmdlog *);
/* Remove the files and free; readers left end at their next pull.  NULL ok. */
void	cmdlog_free(struct cmdlog *);

/*
 * A reader of the events numbered above after.  notify (may be NULL) is
 * called when there is more to pull.
 */
struct cmdlog_reader *cmdlog_reader_new(struct cmdlog *, uint64_t after,
	    cmdlog_notify_cb *notify, void *arg);
/*
 * Append the next whole events to out (about chunk bytes, more when one
 * event is larger).  Returns CMDLOG_MORE, CMDLOG_WAIT (nothing until
 * notified) or CMDLOG_END (all read, the log ended or was freed).  The
 * values are a feed's (feed.h), so a feed's pull hands them on as they are.
 */
#define CMDLOG_MORE	0	/* more can be pulled at once */
#define CMDLOG_WAIT	1
#define CMDLOG_END	2
int	cmdlog_reader_pull(struct cmdlog_reader *, struct buf *out,
	    size_t chunk);
/* The sequence number of the last event pulled (after, before any). */
uint64_t cmdlog_reader_last(const struct cmdlog_reader *);
void	cmdlog_reader_free(struct cmdlog_reader *);	/* NULL ok */

#endif
