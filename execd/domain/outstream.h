/*
 * outstream.h -- the events of a command or a session run: init, output
 * one event per line, and the final event.
 *
 * Shared by commands, their replays and session runs, so all speak
 * exactly the same framing.  Events go either straight to a stream (the
 * stream layer, evstream.h, adds the pings, the overflow and the final
 * event at shutdown) or, for commands, into the command's history
 * (cmdlog.h), which readers replay into their own streams.  Numbered
 * events carry "seq", rising from 1 (init) per run; pings never do.
 * A command's history keeps each line's terminator in its text (upstream
 * 1.1.1's framing: the texts put together are the output); a reader that
 * wants upstream 1.0's lines passes what it reads through outstream_strip.
 * Loop thread only (outstream_strip: any thread).
 */
#ifndef EXECD_OUTSTREAM_H
#define EXECD_OUTSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "../../sse/sse_fmt.h"
#include "lines.h"

struct loop;
struct cmdlog;
struct evstream;

struct outstream {
	struct loop		*loop;
	struct evstream		*s;		/* NULL: gone, or log mode */
	struct cmdlog		*log;		/* log mode: the history */
	struct lines		 line[3];	/* [1] stdout, [2] stderr */
	struct buf		 batch;		/* log mode: not yet appended */
	uint64_t		 t0;
	uint64_t		 seq;		/* the last number given */
	int64_t			 now;		/* time of this read, or 0 */
	bool			 numbered;
};

/*
 * Take s (opened with EVSTREAM_F_PING_FIRST, so a ping follows init) and
 * push init (text: id).  No numbers.
 */
void	outstream_start(struct outstream *, struct loop *,
	    struct evstream *s, const char *id);
/* The same, every event numbered (seq). */
void	outstream_start_numbered(struct outstream *, struct loop *,
	    struct evstream *s, const char *id);
/*
 * Log mode: numbered events go into log (borrowed; it must outlive the
 * outstream), init first.  No pings: each reader's stream has its own.
 * Output texts keep their line terminators (lines_init_keep).
 */
void	outstream_start_log(struct outstream *, struct loop *,
	    struct cmdlog *log, const char *id);
/* Queue one event (its timestamp, and seq if numbered, are set here). */
void	outstream_push(struct outstream *, struct sse_event *);
/* Output of stream 1 or 2, as read: one event per line. */
void	outstream_output(struct outstream *, int which, const char *p,
	    size_t n);
/*
 * The end: the rest of each line, then execution_complete when code is 0,
 * else an error event CommandExecError with evalue code and the traceback
 * lines tb[0..ntb).  The stream (or the log) ends after it.
 */
void	outstream_end(struct outstream *, int code, const char *const *tb,
	    size_t ntb);
/*
 * The stream is gone (from its gone callback), or in log mode the run is
 * over: free what is held.  The outstream may be reused.
 */
void	outstream_gone(struct outstream *);

/*
 * The same event shapes for callers that format events themselves: one
 * output line (which 1 or 2; an empty line is the text "\n"), and the
 * final event (execution_time exec_ms when code is 0, left out if 0).
 * seq 0 leaves the number out.
 */
void	outstream_fmt_line(struct buf *, int which, const char *p,
	    size_t n, uint64_t seq, int64_t timestamp);
void	outstream_fmt_end(struct buf *, int code, const char *const *tb,
	    size_t ntb, long long exec_ms, uint64_t seq, int64_t timestamp);

/* What a reader of terminated texts remembers between reads. */
struct outstream_strip {
	bool	cr[3];	/* the last text of stdout [1], stderr [2] ended
			   with a lone "\r" */
};

void	outstream_strip_init(struct outstream_strip *);
/*
 * Append whole events p[0..n) in OpenSandbox's framing to out, each
 * stdout or stderr text without its terminator ("\r\n", "\n" or "\r";
 * a text that was only one is "\n", a blank line) and the lone "\n" that
 * completes a "\r\n" cut between two reads left out: the events a
 * splitter that drops terminators (lines_init) would have made.  Other
 * events, and anything not understood, pass as they are.
 */
void	outstream_strip(struct outstream_strip *, struct buf *out,
	    const char *p, size_t n);

#endif
