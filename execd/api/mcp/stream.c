/*
 * stream.c -- a streamed call's events: numbered, sent on the event
 * stream that hears the call, and held for one that resumes it.
 *
 * Every event has an id "S-N": S numbers the stream (unique in execd, so
 * in its session too), N the event, from 1.  The stream holds the last
 * MCP_REPLAY_BYTES of notifications and the response, whatever its size,
 * for a client that lost its event stream and comes back with GET and
 * Last-Event-ID: a new event stream then replaces the old one (which
 * ends, if it is still open), gets the held events after the one named,
 * and hears the rest.  Notifications are lossy (one that does not fit in
 * the event stream's queue is not sent, though it is held); the response
 * always goes.  Loop thread.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../../../sse/sse_fmt.h"
#include "../../core/xmalloc.h"
#include "../../transport/evstream.h"
#include "mcp.h"

/* An event, framed. */
struct held {
	struct held	*next;
	uint64_t	 no;
	bool		 last;		/* the response */
	size_t		 len;
	char		 p[];
};

/* Between an event stream and its mcp_stream; NULL once replaced. */
struct link {
	struct mcp_stream	*st;
};

struct mcp_stream {
	unsigned		 no;		/* S */
	uint64_t		 evno;		/* events numbered */
	struct evstream		*es;		/* hearing it, or NULL */
	struct link		*link;		/* es's */
	mcp_cancel_fn		*gone;		/* es is gone */
	void			*arg;
	struct held		*held, **tail;
	size_t			 held_bytes;	/* but the response's */
};

static unsigned	 last_no;

static void	 on_gone(void *);
static void	 hold(struct mcp_stream *, const char *, size_t, bool);

struct mcp_stream *
mcp_stream_new(mcp_cancel_fn *gone, void *arg)
{
	struct mcp_stream *st = xcalloc(1, sizeof(*st));

	if (++last_no == 0)
		last_no = 1;
	st->no = last_no;
	st->gone = gone;
	st->arg = arg;
	st->tail = &st->held;
	return st;
}

void
mcp_stream_free(struct mcp_stream *st)
{
	struct held *h;

	if (st == NULL)
		return;
	if (st->link != NULL)
		st->link->st = NULL;	/* its end is no news any more */
	while ((h = st->held) != NULL) {
		st->held = h->next;
		free(h);
	}
	free(st);
}

unsigned
mcp_stream_no(const struct mcp_stream *st)
{
	return st->no;
}

bool
mcp_stream_heard(const struct mcp_stream *st)
{
	return st->es != NULL;
}

static void
on_gone(void *arg)
{
	struct link *l = arg;
	struct mcp_stream *st = l->st;

	free(l);
	if (st == NULL)
		return;		/* replaced by a resumed one, or freed */
	st->es = NULL;
	st->link = NULL;
	st->gone(st->arg);
}

/* Answer req with an event stream for st, from after event after. */
void
mcp_stream_attach(struct mcp_stream *st, struct http_req *req,
    uint64_t after)
{
	struct link *l = xcalloc(1, sizeof(*l));
	struct evstream_opts o = { .framing = &sse_framing_standard,
	    .shape = EVSTREAM_TYPED, .gone = on_gone, .arg = l };
	struct evstream *es;
	struct held *h;

	l->st = st;
	if ((es = evstream_open(req, &o)) == NULL) {
		free(l);	/* req got 500 */
		return;
	}
	if (st->es != NULL) {
		/* the one it replaces, not seen gone yet, ends now */
		st->link->st = NULL;
		if (!evstream_ended(st->es))
			evstream_end(st->es, NULL, 0);
	}
	st->es = es;
	st->link = l;
	for (h = st->held; h != NULL && !evstream_ended(es); h = h->next) {
		if (h->no <= after)
			continue;
		if (h->last)
			evstream_end(es, h->p, h->len);
		else if (evstream_room(es) >= h->len)
			(void)evstream_push(es, h->p, h->len);
	}
}

/* Hold a framed event; past the bound, the oldest notifications go. */
static void
hold(struct mcp_stream *st, const char *p, size_t n, bool last)
{
	struct held *h = xmalloc(sizeof(*h) + n);

	h->next = NULL;
	h->no = st->evno;
	h->last = last;
	h->len = n;
	memcpy(h->p, p, n);
	*st->tail = h;
	st->tail = &h->next;
	if (!last)
		st->held_bytes += n;
	while (st->held_bytes > MCP_REPLAY_BYTES && st->held != NULL &&
	    !st->held->last) {
		h = st->held;
		st->held = h->next;
		st->held_bytes -= h->len;
		free(h);
	}
	if (st->held == NULL)
		st->tail = &st->held;
}

/* Send msg (taken): numbered, held, on the event stream if any. */
void
mcp_stream_emit(struct mcp_stream *st, json_t *msg, bool last)
{
	struct buf b;

	buf_init(&b);
	buf_addf(&b, "id: %u-%" PRIu64 "\ndata: ", st->no, ++st->evno);
	if (sse_fmt_json(&b, msg) < 0)
		buf_reset(&b);	/* a response unframed ends it all the same */
	else
		buf_adds(&b, "\n\n");
	json_decref(msg);
	if (b.len > 0)
		hold(st, b.p, b.len, last);
	if (st->es != NULL && !evstream_ended(st->es)) {
		if (last)
			evstream_end(st->es, b.p, b.len);
		else if (evstream_room(st->es) >= b.len)
			(void)evstream_push(st->es, b.p, b.len);
	}
	buf_reset(&b);
}
