/*
 * feed.h -- a stream fed at its client's pace from a source that is
 * pulled, not pushed: a command's history replayed and then followed.
 *
 * The feed asks its source for more only while the stream's queue is
 * short, so whatever a slow client has not read yet stays in the source
 * (a file), not in execd's memory, and a fast client is never kept
 * waiting: the stream layer pulls again as soon as the queue drains.  The
 * source hands over whole events.  Pings, the final event on shutdown and
 * the end of the body are the stream layer's (evstream.h), as on every
 * other stream.  Loop thread only.
 */
#ifndef EXECD_FEED_H
#define EXECD_FEED_H

#include "../../sse/sse_fmt.h"

struct http_req;
struct feed;

/* What a pull says about the source. */
#define FEED_MORE	0	/* more can be pulled at once */
#define FEED_WAIT	1	/* nothing more until feed_kick() */
#define FEED_END	2	/* out holds the last events */

/* The largest amount a pull should add (it may exceed it by one event). */
#define FEED_CHUNK	(64 << 10)

/* Append whole events to out; returns FEED_MORE, FEED_WAIT or FEED_END. */
typedef int	feed_pull_cb(struct buf *out, void *arg);
/* The stream is gone: let go of the source.  Called once. */
typedef void	feed_gone_cb(void *arg);

/*
 * Answer req with a stream fed from pull; the first events go out before
 * this returns.  NULL if no stream could be made: req got 500, and gone
 * never fires.
 */
struct feed	*feed_reply(struct http_req *req, feed_pull_cb *pull,
		    feed_gone_cb *gone, void *arg);
/* The source has more (or has ended): pull if the client has room. */
void		 feed_kick(struct feed *);

#endif
