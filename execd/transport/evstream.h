/*
 * evstream.h -- the event-stream layer: the one owner of every stream
 * execd answers with (command and session runs, code runs, reattached
 * commands, the metrics and file watches).
 *
 * It owns what every stream has in common: opening the response, queuing
 * whole events, the ping policy (one interval for all), the overflow event
 * when a client stops reading, the final event when execd shuts down, the
 * end of the body, and telling a paced producer when its client has room
 * again.  It does not own what the events say or when a stream is done:
 * that is its producer's, which only pushes events and ends the stream.
 * A new kind of stream is a producer and nothing else.
 *
 * Events are framed on the wire as the front end that opens the stream
 * chooses (a framing of sse_fmt.h: OpenSandbox's unless it says
 * otherwise); pings, the overflow and the final event are framed the same
 * way.  Error events (the overflow and the final event) take the shape of
 * the stream's other events; see enum evstream_shape.  Loop thread only.
 */
#ifndef EXECD_EVSTREAM_H
#define EXECD_EVSTREAM_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "../../sse/sse_fmt.h"

struct loop;
struct http_req;
struct evstream;

/* Every stream's ping interval: {"type":"ping","text":"pong",...}. */
#define EVSTREAM_PING_MS	3000

/* How a stream's error events look. */
enum evstream_shape {
	/* {"type":"error","error":{"ename":E,"evalue":M,"traceback":[]}} */
	EVSTREAM_TYPED,
	/* {"type":"error","error":M}: the file watch */
	EVSTREAM_WATCH,
	/* {"error":M}: upstream's metrics watch */
	EVSTREAM_PLAIN,
};

/* A ping right after the first pushed events, then every interval. */
#define EVSTREAM_F_PING_FIRST	0x01
/* No pings: a stream that ends as soon as it opens. */
#define EVSTREAM_F_NO_PING	0x02

/* The client has room again (drain set): push more.  From the loop. */
typedef void	evstream_drain_cb(struct evstream *, void *arg);
/*
 * Shutdown: append to last what must come before the final event (the
 * rest of an event pushed in part).  The stream ends after it.
 */
typedef void	evstream_last_cb(struct evstream *, struct buf *last,
		    void *arg);
/* The stream died; the evstream is freed after this.  Called once. */
typedef void	evstream_gone_cb(void *arg);

struct evstream_opts {
	const struct sse_framing *framing;	/* NULL: OpenSandbox's */
	enum evstream_shape	 shape;
	int			 flags;		/* EVSTREAM_F_* */
	/*
	 * A paced stream: drain is called once the queue is shorter than
	 * low after having been longer, or after evstream_again().  It is
	 * never ended by an overflow: it pushes only what fits.
	 */
	size_t			 low;
	evstream_drain_cb	*drain;
	evstream_last_cb	*last;		/* NULL: nothing before bye */
	evstream_gone_cb	*gone;		/* NULL: nothing to free */
	void			*arg;
};

/* Hook the loop (once, before any stream opens). */
void	 evstream_start(struct loop *);

/*
 * Answer req 200 with an event stream.  NULL if none could be made: req
 * got 500 and gone never fires.  During shutdown the stream is already
 * ended when this returns (see evstream_ended).
 */
struct evstream	*evstream_open(struct http_req *req,
		    const struct evstream_opts *);

/*
 * Queue bytes of whole events (a paced stream may push part of one).
 * 0; -EPIPE once ended; -ENOBUFS past the cap: nothing is queued and the
 * stream ends with the overflow event.
 */
int	 evstream_push(struct evstream *, const void *p, size_t n);
/* Format and queue one event, as evstream_push. */
int	 evstream_event(struct evstream *, const struct sse_event *);
/* Queue v, an object, as one event (v is consumed), as evstream_push. */
int	 evstream_json(struct evstream *, json_t *v);
/* Queue last bytes (cap ignored; n may be 0) and end: no more pings. */
void	 evstream_end(struct evstream *, const void *p, size_t n);
/* A paced stream could go on without its client: drain it again soon. */
void	 evstream_again(struct evstream *);

bool	 evstream_ended(const struct evstream *);	/* predicate */
size_t	 evstream_room(const struct evstream *);	/* push fits this */
size_t	 evstream_queued(const struct evstream *);	/* not yet sent */

/*
 * Error events in a shape, in OpenSandbox's framing, for producers that
 * queue events themselves; _framed: in framing f (NULL: OpenSandbox's).
 */
void	 evstream_fmt_error(struct buf *, enum evstream_shape,
	    const char *ename, const char *msg);
void	 evstream_fmt_error_framed(struct buf *, const struct sse_framing *f,
	    enum evstream_shape, const char *ename, const char *msg);
/* The event that ends a stream whose client stopped reading. */
void	 evstream_fmt_overflow(struct buf *, enum evstream_shape);
void	 evstream_fmt_overflow_framed(struct buf *,
	    const struct sse_framing *f, enum evstream_shape);

#endif
