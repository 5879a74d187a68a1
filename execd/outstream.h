/*
 * outstream.h -- the event stream of a command or a session run: init,
 * pings, output one event per line, and the final event.
 *
 * Shared by route_cmd.c and route_session.c so both speak exactly the
 * same framing.  Loop thread only.
 */
#ifndef EXECD_OUTSTREAM_H
#define EXECD_OUTSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "../sse/sse_fmt.h"
#include "../sse/sse_stream.h"
#include "lines.h"

struct loop;

struct outstream {
	struct loop		*loop;
	struct sse_stream	*s;		/* NULL once gone */
	struct lines		 line[3];	/* [1] stdout, [2] stderr */
	uint64_t		 ping;
	uint64_t		 t0;
};

/* The final event of a stream ended by execd's shutdown. */
extern const char	outstream_bye[];

/* Take s; push init (text: id) and start the pings. */
void	outstream_start(struct outstream *, struct loop *,
	    struct sse_stream *s, const char *id);
/* Queue one event (its timestamp is set here). */
void	outstream_push(struct outstream *, struct sse_event *);
/* Output of stream 1 or 2, as read: one event per line. */
void	outstream_output(struct outstream *, int which, const char *p,
	    size_t n);
/*
 * The end: the rest of each line, then execution_complete when code is 0,
 * else an error event CommandExecError with evalue code and the traceback
 * lines tb[0..ntb).  The stream ends after it.
 */
void	outstream_end(struct outstream *, int code, const char *const *tb,
	    size_t ntb);
/* The stream is gone (from its gone callback): stop pinging, free. */
void	outstream_gone(struct outstream *);

#endif
