/*
 * feed.c -- streams that pull from their source at the client's pace
 * (see feed.h).
 *
 * sse_stream tells nobody when its queue drains, so the loop asks: a
 * before-poll hook pumps every feed that has more to give and whose queue
 * fell under the low mark, and a timeout hook keeps the poll from sleeping
 * while a feed could go on without the client (it stopped only because one
 * pump may pull only so much, to keep the loop fair).  A feed whose client
 * is slow costs nothing until MHD has written some of its queue.  This
 * file knows nothing of what the events mean.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "execd.h"
#include "feed.h"
#include "http.h"
#include "loop.h"
#include "outstream.h"
#include "xmalloc.h"

#define PING_MS		3000
#define LOW_MARK	(256 << 10)	/* pull while the queue is shorter */
#define MAX_PULLS	16		/* per pump, for fairness */

struct feed {
	struct sse_stream	*s;
	size_t			 cap;	/* the stream's queue cap */
	size_t			 low;
	feed_pull_cb		*pull;
	feed_gone_cb		*gone;
	void			*arg;
	struct sse_buf		 pend;	/* pulled, not yet queued */
	size_t			 pend_off;
	int			 src;	/* what the last pull said */
	uint64_t		 t_ping;
	struct feed		*prev, *next;
};

static struct loop	*L;
static struct feed	*feeds;

static void	pump(struct feed *);
static bool	can_go_on(const struct feed *);
static void	before_poll(struct loop *, void *);
static long	poll_timeout(struct loop *, void *);
static void	ping(struct loop *, uint64_t, void *);
static void	on_gone(struct sse_stream *, void *);
static void	on_shutdown(struct sse_stream *, void *);

/* Hook the loop. */
void
feed_init(struct loop *loop)
{
	if (L == loop)
		return;
	L = loop;
	loop_on_before_poll(loop, before_poll, NULL);
	loop_on_timeout(loop, poll_timeout, NULL);
}

/* Open the stream, send what the source has now and a ping. */
struct feed *
feed_reply(struct http_req *req, feed_pull_cb *pull, feed_gone_cb *gone,
    void *arg)
{
	struct execd *app = http_req_app(req);
	struct feed *f = xcalloc(1, sizeof(*f));

	f->cap = app->conf->stream_cap;
	f->low = f->cap / 2 < LOW_MARK ? f->cap / 2 : LOW_MARK;
	f->pull = pull;
	f->gone = gone;
	f->arg = arg;
	f->src = FEED_MORE;
	sse_buf_init(&f->pend);
	if ((f->s = http_reply_stream(req, on_shutdown, on_gone, f)) ==
	    NULL) {
		free(f);
		return NULL;
	}
	f->next = feeds;
	if (feeds != NULL)
		feeds->prev = f;
	feeds = f;
	pump(f);
	ping(L, 0, f);
	return f;
}

/* The source has something new. */
void
feed_kick(struct feed *f)
{
	if (f->src == FEED_WAIT)
		f->src = FEED_MORE;
	pump(f);
}

/*
 * Move events from the source to the queue: what is pending first, then
 * pull while the queue is short, at most MAX_PULLS times.
 */
static void
pump(struct feed *f)
{
	size_t q, room, n;
	int pulls = 0;

	for (;;) {
		if (sse_stream_ended(f->s))
			return;
		if (f->pend_off < f->pend.len) {
			q = sse_stream_queued(f->s);
			room = f->cap > q ? f->cap - q : 0;
			n = f->pend.len - f->pend_off;
			if (n > room)
				n = room;
			if (n > 0 && sse_stream_push(f->s, f->pend.p +
			    f->pend_off, n) == 0)
				f->pend_off += n;
			if (f->pend_off < f->pend.len)
				return;		/* the client has to read */
			sse_buf_consume(&f->pend, f->pend.len);
			f->pend_off = 0;
			if (f->pend.cap > 4 * FEED_CHUNK)
				sse_buf_reset(&f->pend);
		}
		if (f->src == FEED_END) {
			sse_stream_finish(f->s, NULL, 0);
			return;
		}
		if (f->src == FEED_WAIT || pulls++ == MAX_PULLS ||
		    sse_stream_queued(f->s) >= f->low)
			return;
		f->src = f->pull(&f->pend, f->arg);
	}
}

/* True when a pump would get somewhere without the client reading. */
static bool
can_go_on(const struct feed *f)
{
	if (sse_stream_ended(f->s) || sse_stream_queued(f->s) >= f->low)
		return false;
	return f->pend_off < f->pend.len || f->src != FEED_WAIT;
}

/* Before each poll: every feed that can go on, does. */
static void
before_poll(struct loop *l, void *arg)
{
	for (struct feed *f = feeds; f != NULL; f = f->next)
		if (can_go_on(f))
			pump(f);
}

/* Do not sleep while a feed can go on without its client. */
static long
poll_timeout(struct loop *l, void *arg)
{
	for (struct feed *f = feeds; f != NULL; f = f->next)
		if (can_go_on(f))
			return 0;
	return -1;
}

/* A ping between two events, every few seconds. */
static void
ping(struct loop *l, uint64_t id, void *arg)
{
	struct feed *f = arg;
	struct sse_event ev = { .type = "ping", .text = "pong" };
	struct sse_buf b;

	f->t_ping = 0;
	if (sse_stream_ended(f->s))
		return;
	if (f->pend_off == f->pend.len) {
		ev.timestamp = loop_wall_ms();
		sse_buf_init(&b);
		sse_fmt_event(&b, &ev);
		(void)sse_stream_push(f->s, b.p, b.len); /* full: not needed */
		sse_buf_reset(&b);
	}
	f->t_ping = loop_timer_add(L, PING_MS, ping, f);
}

/* The stream died: the source lets go, and the feed is freed. */
static void
on_gone(struct sse_stream *s, void *arg)
{
	struct feed *f = arg;

	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		feeds = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	if (f->t_ping != 0)
		loop_timer_cancel(L, f->t_ping);
	f->gone(f->arg);
	sse_buf_reset(&f->pend);
	free(f);
}

/*
 * Shutdown: the last event, whatever was still to come.  An event queued
 * only in part (one larger than the room there was) is completed first,
 * so the stream still ends on whole events.
 */
static void
on_shutdown(struct sse_stream *s, void *arg)
{
	struct feed *f = arg;
	const char *p = f->pend.p + f->pend_off, *e;
	struct sse_buf b;

	sse_buf_init(&b);
	if (f->pend_off > 0 && f->pend_off < f->pend.len &&
	    !(f->pend_off >= 2 && p[-1] == '\n' && p[-2] == '\n') &&
	    (e = memmem(p, f->pend.len - f->pend_off, "\n\n", 2)) != NULL)
		sse_buf_add(&b, p, (size_t)(e - p) + 2);
	sse_buf_adds(&b, outstream_bye);
	sse_stream_finish(s, b.p, b.len);
	sse_buf_reset(&b);
}
