/*
 * evstream.c -- the event-stream layer (see evstream.h).
 *
 * A stream is an sse_stream (bytes, a queue, the MHD glue) plus what every
 * producer would otherwise write again: the ping timer, the overflow and
 * final events, and the pacing hand-shake.  Pings go out only between
 * whole events: the last two bytes queued tell whether the queue ends on
 * one.  A paced stream hears of room from sse_stream's drain callback,
 * which fires inside MHD's reader; it is only noted there, on a list of
 * streams to drain, which the before-poll hook empties, so the loop never
 * scans streams that have nothing to do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "evstream.h"
#include "http.h"

#define OVERFLOW_MSG	"the client is not reading: stream ended"
#define BYE_MSG		"execd is shutting down"

struct evstream {
	struct sse_stream	*s;
	struct loop		*loop;
	struct evstream_opts	 o;
	uint64_t		 ping;		/* timer */
	bool			 pinged;	/* a ping went out */
	bool			 whole;		/* the queue ends on an event */
	bool			 ready;		/* on the drain list */
	char			 tail;		/* the last byte queued */
	struct evstream		*prev, *next;	/* the drain list */
};

static struct evstream	*ready;
static bool		 drained;	/* a drain ran since the last poll */

static void	 on_drain(struct sse_stream *, void *);
static void	 on_shutdown(struct sse_stream *, void *);
static void	 on_gone(struct sse_stream *, void *);
static void	 ping(struct loop *, uint64_t, void *);
static void	 send_ping(struct evstream *);
static void	 mark(struct evstream *, const char *, size_t);
static void	 overflow(struct evstream *);
static void	 unready(struct evstream *);
static void	 before_poll(struct loop *, void *);
static long	 poll_timeout(struct loop *, void *);

/* Hook the loop: drain the streams that have room. */
void
evstream_start(struct loop *loop)
{
	loop_on_before_poll(loop, before_poll, NULL);
	loop_on_timeout(loop, poll_timeout, NULL);
}

/* Open the response and start the pings. */
struct evstream *
evstream_open(struct http_req *req, const struct evstream_opts *o)
{
	struct evstream *es = xcalloc(1, sizeof(*es));

	es->o = *o;
	if (es->o.framing == NULL)
		es->o.framing = &sse_framing_opensandbox;
	es->loop = http_req_loop(req);
	es->whole = true;
	if ((es->s = http_reply_stream(req, on_shutdown, on_gone, es)) ==
	    NULL) {
		free(es);
		return NULL;
	}
	if (sse_stream_ended(es->s))	/* opened during shutdown */
		return es;
	if (o->drain != NULL)
		sse_stream_on_drain(es->s, o->low, on_drain, es);
	if (!(o->flags & EVSTREAM_F_NO_PING))
		es->ping = loop_timer_add(es->loop, EVSTREAM_PING_MS, ping,
		    es);
	return es;
}

/* Remember whether the queue now ends on a whole event. */
static void
mark(struct evstream *es, const char *p, size_t n)
{
	if (n == 0)
		return;
	es->whole = p[n - 1] == '\n' && (n >= 2 ? p[n - 2] : es->tail) ==
	    '\n';
	es->tail = p[n - 1];
}

/* Queue bytes; past the cap, the overflow event ends the stream. */
int
evstream_push(struct evstream *es, const void *p, size_t n)
{
	int rc;

	if (sse_stream_ended(es->s))
		return -EPIPE;
	if ((rc = sse_stream_push(es->s, p, n)) == -ENOBUFS) {
		overflow(es);
		return rc;
	}
	if (rc < 0)
		return rc;
	mark(es, p, n);
	if ((es->o.flags & EVSTREAM_F_PING_FIRST) && !es->pinged &&
	    es->whole)
		send_ping(es);
	return 0;
}

/* The client stopped reading: the overflow event ends the stream. */
static void
overflow(struct evstream *es)
{
	struct buf b;

	buf_init(&b);
	evstream_fmt_overflow_framed(&b, es->o.framing, es->o.shape);
	evstream_end(es, b.p, b.len);
	buf_reset(&b);
}

/* One event, framed; one too large to format is an overflow too. */
int
evstream_event(struct evstream *es, const struct sse_event *ev)
{
	struct buf b;
	int rc;

	if (sse_stream_ended(es->s))
		return -EPIPE;
	buf_init(&b);
	if ((rc = sse_fmt_event_framed(&b, es->o.framing, ev)) == 0)
		rc = evstream_push(es, b.p, b.len);
	else
		overflow(es);
	buf_reset(&b);
	return rc;
}

/* One JSON object as an event (v is consumed). */
int
evstream_json(struct evstream *es, json_t *v)
{
	struct buf b;
	int rc = -EPIPE;

	if (!sse_stream_ended(es->s)) {
		buf_init(&b);
		rc = sse_fmt_json_event(&b, es->o.framing, v);
		if (rc == 0)
			rc = evstream_push(es, b.p, b.len);
		else if (rc == -ENOBUFS)
			overflow(es);
		buf_reset(&b);
	}
	json_decref(v);
	return rc;
}

/* The last bytes, and the end. */
void
evstream_end(struct evstream *es, const void *p, size_t n)
{
	if (es->ping != 0)
		loop_timer_cancel(es->loop, es->ping);
	es->ping = 0;
	unready(es);
	sse_stream_finish(es->s, p, n);
}

/* Drain again before the next poll. */
void
evstream_again(struct evstream *es)
{
	if (es->ready || sse_stream_ended(es->s) || es->o.drain == NULL)
		return;
	es->ready = true;
	es->prev = NULL;
	es->next = ready;
	if (ready != NULL)
		ready->prev = es;
	ready = es;
}

/* True once the stream was ended (or its client went). */
bool
evstream_ended(const struct evstream *es)
{
	return sse_stream_ended(es->s);
}

/* Bytes a push may add. */
size_t
evstream_room(const struct evstream *es)
{
	return sse_stream_room(es->s);
}

/* Bytes queued and not yet sent. */
size_t
evstream_queued(const struct evstream *es)
{
	return sse_stream_queued(es->s);
}

/* Off the drain list. */
static void
unready(struct evstream *es)
{
	if (!es->ready)
		return;
	if (es->prev != NULL)
		es->prev->next = es->next;
	else
		ready = es->next;
	if (es->next != NULL)
		es->next->prev = es->prev;
	es->ready = false;
	es->prev = es->next = NULL;
}

/* From MHD's reader: only note that there is room. */
static void
on_drain(struct sse_stream *s, void *arg)
{
	evstream_again(arg);
}

/* Before each poll: the streams that have room go on. */
static void
before_poll(struct loop *l, void *arg)
{
	struct evstream *list = ready, *es;

	/* A drain may put its stream back: that is for the next turn. */
	ready = NULL;
	for (es = list; es != NULL; es = list) {
		list = es->next;
		if (list != NULL)
			list->prev = NULL;
		es->ready = false;
		es->prev = es->next = NULL;
		if (!sse_stream_ended(es->s)) {
			es->o.drain(es, es->o.arg);
			drained = true;
		}
	}
}

/*
 * Do not sleep while a stream can go on without its client, nor after a
 * drain: what it pushed resumed a connection outside MHD's run step, and
 * MHD's own timeout does not know of it, so the poll must not wait for
 * MHD to run it.
 */
static long
poll_timeout(struct loop *l, void *arg)
{
	bool d = drained;

	drained = false;
	return ready != NULL || d ? 0 : -1;
}

/* Queue a ping, between whole events only. */
static void
send_ping(struct evstream *es)
{
	struct sse_event ev = { .type = "ping", .text = "pong",
	    .timestamp = loop_wall_ms() };
	struct buf b;

	if (!es->whole)
		return;
	es->pinged = true;
	buf_init(&b);
	if (es->o.framing->keepalive != NULL)
		buf_adds(&b, es->o.framing->keepalive);
	else
		(void)sse_fmt_event_framed(&b, es->o.framing, &ev);
	/*
	 * A paced stream whose queue is full has bytes for its client
	 * anyway; any other that cannot take a ping has a client that
	 * stopped reading, and ends with the overflow event.
	 */
	if (es->o.drain == NULL || sse_stream_room(es->s) >= b.len)
		(void)evstream_push(es, b.p, b.len);
	buf_reset(&b);
	if (!sse_stream_ended(es->s)) {
		if (es->ping != 0)
			loop_timer_cancel(es->loop, es->ping);
		es->ping = loop_timer_add(es->loop, EVSTREAM_PING_MS, ping,
		    es);
	}
}

/*
 * Every interval.  A quiet stream is suspended, and MHD does not see a
 * client leave a suspended connection; a ping wakes it, so a watch's
 * resources go soon after its client does.
 */
static void
ping(struct loop *l, uint64_t id, void *arg)
{
	struct evstream *es = arg;

	es->ping = 0;
	if (sse_stream_ended(es->s))
		return;
	send_ping(es);
	if (es->ping == 0 && !sse_stream_ended(es->s))	/* mid-event */
		es->ping = loop_timer_add(l, EVSTREAM_PING_MS, ping, es);
}

/* Shutdown: what the producer must complete, then the final event. */
static void
on_shutdown(struct sse_stream *s, void *arg)
{
	struct evstream *es = arg;
	struct buf b;

	es->s = s;	/* set already, unless opened during shutdown */
	buf_init(&b);
	if (es->o.last != NULL)
		es->o.last(es, &b, es->o.arg);
	evstream_fmt_error_framed(&b, es->o.framing, es->o.shape,
	    "Shutdown", BYE_MSG);
	evstream_end(es, b.p, b.len);
	buf_reset(&b);
}

/* The stream died: the producer lets go, then the evstream goes. */
static void
on_gone(struct sse_stream *s, void *arg)
{
	struct evstream *es = arg;

	if (es->ping != 0)
		loop_timer_cancel(es->loop, es->ping);
	unready(es);
	if (es->o.gone != NULL)
		es->o.gone(es->o.arg);
	free(es);
}

void
evstream_fmt_error(struct buf *b, enum evstream_shape shape,
    const char *ename, const char *msg)
{
	evstream_fmt_error_framed(b, NULL, shape, ename, msg);
}

/* An error event in the stream's shape and framing. */
void
evstream_fmt_error_framed(struct buf *b, const struct sse_framing *f,
    enum evstream_shape shape, const char *ename, const char *msg)
{
	if (f == NULL)
		f = &sse_framing_opensandbox;
	f->head(b, shape == EVSTREAM_PLAIN ? NULL : "error", 0);
	switch (shape) {
	case EVSTREAM_TYPED:
		buf_adds(b, "{\"type\":\"error\",\"error\":{\"ename\":");
		sse_fmt_string(b, ename, strlen(ename));
		buf_adds(b, ",\"evalue\":");
		sse_fmt_string(b, msg, strlen(msg));
		buf_adds(b, ",\"traceback\":[]}}");
		break;
	case EVSTREAM_WATCH:
		buf_adds(b, "{\"type\":\"error\",\"error\":");
		sse_fmt_string(b, msg, strlen(msg));
		buf_adds(b, "}");
		break;
	case EVSTREAM_PLAIN:
		buf_adds(b, "{\"error\":");
		sse_fmt_string(b, msg, strlen(msg));
		buf_adds(b, "}");
		break;
	}
	buf_adds(b, f->tail);
}

/* The overflow event. */
void
evstream_fmt_overflow(struct buf *b, enum evstream_shape shape)
{
	evstream_fmt_overflow_framed(b, NULL, shape);
}

void
evstream_fmt_overflow_framed(struct buf *b, const struct sse_framing *f,
    enum evstream_shape shape)
{
	evstream_fmt_error_framed(b, f, shape, "StreamOverflow",
	    OVERFLOW_MSG);
}
