/*
 * sse_stream.h -- a streamed HTTP response body fed by pushes.
 *
 * The stream owns a bounded queue and an MHD response whose content reader
 * drains it.  When the queue is empty and the stream is not ended, the
 * reader suspends the connection (so an idle stream costs no polling and
 * is never timed out); a push resumes it.  Producers never block: past
 * the cap a push fails with -ENOBUFS and the owner ends the stream with
 * sse_stream_finish(), whose final bytes always fit.
 *
 * Lifetime: MHD owns the response.  When MHD destroys it (the body was sent
 * in full, or the client went away) the gone callback fires once and the
 * stream is freed straight after; nothing may use it from then on.
 * The owner of a stream paced by its client asks to hear when the queue
 * has drained below a mark (sse_stream_on_drain) instead of polling it.
 * Loop thread only.
 */
#ifndef SSE_STREAM_H
#define SSE_STREAM_H

#include <stddef.h>

#include <microhttpd.h>

struct sse_stream;

/* Called once when the stream dies; do not touch the stream afterwards. */
typedef void sse_stream_gone_cb(struct sse_stream *, void *arg);

/*
 * The queue fell below the drain mark.  Called from MHD's content reader:
 * note it and act from the loop; do not push or finish from here.
 */
typedef void sse_stream_drain_cb(struct sse_stream *, void *arg);

/*
 * A stream for conn holding at most cap queued bytes.  The response it
 * makes is chunked; the caller adds headers with sse_stream_response() and
 * queues it.  NULL with errno set if MHD could not make a response.
 */
struct sse_stream	*sse_stream_new(struct MHD_Connection *conn,
			    size_t cap, sse_stream_gone_cb *gone, void *arg);
/* The response to queue (borrowed; queue it once). */
struct MHD_Response	*sse_stream_response(struct sse_stream *);

/*
 * Queue n bytes and wake the connection.  0; -EPIPE after the stream was
 * ended; -ENOBUFS if the bytes would pass the cap (nothing is queued).
 */
int	sse_stream_push(struct sse_stream *, const void *, size_t);

/* Queue final bytes (cap ignored; n may be 0) and end after they are sent. */
void	sse_stream_finish(struct sse_stream *, const void *, size_t);

/*
 * Call drain whenever MHD's read leaves fewer than low bytes queued where
 * there were at least low before (drain NULL: never).
 */
void	sse_stream_on_drain(struct sse_stream *, size_t low,
	    sse_stream_drain_cb *drain, void *arg);

int	sse_stream_ended(const struct sse_stream *);	/* predicate */
size_t	sse_stream_queued(const struct sse_stream *);	/* bytes not yet sent */
size_t	sse_stream_room(const struct sse_stream *);	/* bytes a push may add */

#endif
