/*
 * tape.c -- a recorded stream (tape.h), played through feeds (feed.h).
 */
#include <stdlib.h>

#include "../../util/buf.h"
#include "../core/xmalloc.h"
#include "evstream.h"
#include "feed.h"
#include "tape.h"

struct player {
	struct tape		*t;
	struct feed		*feed;
	size_t			 off;
	struct player		*next;
};

struct tape {
	struct buf		 bytes;
	size_t			 cap;
	int			 refs;
	bool			 ended, cut;
	struct player		*players;
};

static size_t	total;		/* kept by all tapes */

struct tape *
tape_new(size_t cap)
{
	struct tape *t = xcalloc(1, sizeof(*t));

	buf_init(&t->bytes);
	t->cap = cap;
	t->refs = 1;
	return t;
}

struct tape *
tape_ref(struct tape *t)
{
	t->refs++;
	return t;
}

void
tape_unref(struct tape *t)
{
	if (t == NULL || --t->refs > 0)
		return;
	total -= t->bytes.len;
	buf_reset(&t->bytes);
	free(t);
}

static void
kick(struct tape *t)
{
	struct player *p;

	for (p = t->players; p != NULL; p = p->next)
		if (p->feed != NULL)
			feed_kick(p->feed);
}

void
tape_add(struct tape *t, const void *p, size_t n)
{
	if (t == NULL || t->ended || t->cut || n == 0)
		return;
	if (t->bytes.len + n > t->cap || total + n > TAPE_TOTAL) {
		t->cut = true;
		return;
	}
	buf_add(&t->bytes, p, n);
	total += n;
	kick(t);
}

void
tape_end(struct tape *t, bool whole)
{
	if (t == NULL)
		return;
	t->ended = true;
	if (!whole)
		t->cut = true;
	kick(t);
	tape_unref(t);
}

static int
play_pull(struct buf *out, void *arg)
{
	struct player *p = arg;
	struct tape *t = p->t;
	size_t n = t->bytes.len - p->off;

	if (n > FEED_CHUNK)
		n = FEED_CHUNK;
	if (n > 0)
		buf_add(out, t->bytes.p + p->off, n);
	p->off += n;
	if (p->off < t->bytes.len)
		return FEED_MORE;
	if (!t->ended && !t->cut)
		return FEED_WAIT;
	if (t->cut)
		evstream_fmt_overflow(out, EVSTREAM_TYPED);
	return FEED_END;
}

static void
play_gone(void *arg)
{
	struct player *p = arg, **pp;
	struct tape *t = p->t;

	for (pp = &t->players; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	free(p);
	tape_unref(t);
}

void
tape_play(struct tape *t, struct http_req *req)
{
	struct player *p = xcalloc(1, sizeof(*p));

	p->t = tape_ref(t);
	p->next = t->players;
	t->players = p;
	if ((p->feed = feed_reply(req, play_pull, play_gone, p)) == NULL)
		play_gone(p);
}
