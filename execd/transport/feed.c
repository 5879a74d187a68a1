/*
 * feed.c -- streams that pull from their source at the client's pace
 * (see feed.h).
 *
 * A feed is a producer on the event-stream layer: the layer tells it when
 * the client has read enough for more (the drain mark), and a feed that
 * stopped only because one pump may pull only so much, to keep the loop
 * fair, asks to be drained again on the next turn.  A feed whose client
 * is slow costs nothing until MHD has written some of its queue.  Pings,
 * the final event and the end of the body are the layer's.  This file
 * knows nothing of what the events mean.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/xmalloc.h"
#include "evstream.h"
#include "feed.h"
#include "http.h"

#define LOW_MARK	(256 << 10)	/* pull while the queue is shorter */
#define MAX_PULLS	16		/* per pump, for fairness */

struct feed {
	struct evstream		*es;
	feed_pull_cb		*pull;
	feed_gone_cb		*gone;
	void			*arg;
	struct buf		 pend;	/* pulled, not yet queued */
	size_t			 pend_off;
	int			 src;	/* what the last pull said */
	size_t			 low;	/* pull while the queue is shorter */
};

static void	pump(struct feed *);
static void	on_drain(struct evstream *, void *);
static void	on_last(struct evstream *, struct buf *, void *);
static void	on_gone(void *);

/* Open the stream and send what the source has now. */
struct feed *
feed_reply(struct http_req *req, feed_pull_cb *pull, feed_gone_cb *gone,
    void *arg)
{
	struct feed *f = xcalloc(1, sizeof(*f));
	size_t cap = http_req_stream_cap(req);
	struct evstream_opts o = { .shape = EVSTREAM_TYPED,
	    .flags = EVSTREAM_F_PING_FIRST, .drain = on_drain,
	    .last = on_last, .gone = on_gone, .arg = f };

	f->low = cap / 2 < LOW_MARK ? cap / 2 : LOW_MARK;
	o.low = f->low;
	f->pull = pull;
	f->gone = gone;
	f->arg = arg;
	f->src = FEED_MORE;
	buf_init(&f->pend);
	if ((f->es = evstream_open(req, &o)) == NULL) {
		free(f);
		return NULL;
	}
	pump(f);
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
 * pull while the queue is short, at most MAX_PULLS times.  A feed that
 * could go on without its client is drained again on the next turn; one
 * that waits for its client hears from the drain mark.
 */
static void
pump(struct feed *f)
{
	size_t room, n;
	int pulls = 0;

	for (;;) {
		if (evstream_ended(f->es))
			return;
		if (f->pend_off < f->pend.len) {
			room = evstream_room(f->es);
			n = f->pend.len - f->pend_off;
			if (n > room)
				n = room;
			if (n > 0 && evstream_push(f->es, f->pend.p +
			    f->pend_off, n) == 0)
				f->pend_off += n;
			if (f->pend_off < f->pend.len)
				return;		/* the client has to read */
			buf_drain(&f->pend, f->pend.len);
			f->pend_off = 0;
			if (buf_cost(&f->pend) > 4 * FEED_CHUNK)
				buf_reset(&f->pend);
		}
		if (f->src == FEED_END) {
			evstream_end(f->es, NULL, 0);
			return;
		}
		if (f->src == FEED_WAIT)
			return;
		if (evstream_queued(f->es) >= f->low)
			return;
		if (pulls++ == MAX_PULLS) {
			evstream_again(f->es);
			return;
		}
		f->src = f->pull(&f->pend, f->arg);
	}
}

/* The client read enough for more, or the last pump stopped for fairness. */
static void
on_drain(struct evstream *es, void *arg)
{
	pump(arg);
}

/*
 * Shutdown: an event queued only in part (one larger than the room there
 * was) is completed first, so the stream still ends on whole events.
 */
static void
on_last(struct evstream *es, struct buf *last, void *arg)
{
	struct feed *f = arg;
	const char *p = f->pend.p + f->pend_off, *e;

	if (f->pend_off > 0 && f->pend_off < f->pend.len &&
	    !(f->pend_off >= 2 && p[-1] == '\n' && p[-2] == '\n') &&
	    (e = memmem(p, f->pend.len - f->pend_off, "\n\n", 2)) != NULL)
		buf_add(last, p, (size_t)(e - p) + 2);
}

/* The stream died: the source lets go, and the feed is freed. */
static void
on_gone(void *arg)
{
	struct feed *f = arg;

	f->gone(f->arg);
	buf_reset(&f->pend);
	free(f);
}
