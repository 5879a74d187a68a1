/*
 * ring.c -- the replay ring (see ring.h).  The newest byte sits just
 * before (end % cap); a read is at most two memcpy calls.  Nothing here
 * knows about terminals or clients.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/xmalloc.h"
#include "ring.h"

static uint64_t	clamp(const struct ring *, uint64_t);

/* An empty ring; no memory until the first write. */
void
ring_init(struct ring *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->cap = cap > 0 ? cap : 1;
}

/* Free and empty the ring. */
void
ring_reset(struct ring *r)
{
	free(r->buf);
	r->buf = NULL;
	r->len = 0;
	r->end = 0;
}

/* Append, overwriting the oldest bytes once full. */
void
ring_write(struct ring *r, const void *p, size_t n)
{
	const char *s = p;
	size_t pos, k;

	if (n == 0)
		return;
	if (r->buf == NULL)
		r->buf = xmalloc(r->cap);
	if (n > r->cap) {	/* only the last cap bytes can stay */
		r->end += n - r->cap;
		s += n - r->cap;
		n = r->cap;
	}
	pos = (size_t)(r->end % r->cap);
	k = r->cap - pos < n ? r->cap - pos : n;
	memcpy(r->buf + pos, s, k);
	memcpy(r->buf, s + k, n - k);
	r->end += n;
	r->len = r->len + n > r->cap ? r->cap : r->len + n;
}

/* Offset of the oldest byte kept. */
uint64_t
ring_start(const struct ring *r)
{
	return r->end - r->len;
}

/* Offset one past the newest byte. */
uint64_t
ring_end(const struct ring *r)
{
	return r->end;
}

/* from, moved into the retained window. */
static uint64_t
clamp(const struct ring *r, uint64_t from)
{
	if (from < ring_start(r))
		return ring_start(r);
	return from > r->end ? r->end : from;
}

/* Bytes retained from offset from on. */
size_t
ring_avail(const struct ring *r, uint64_t from)
{
	return (size_t)(r->end - clamp(r, from));
}

/* Copy what is retained from offset from, at most max bytes. */
size_t
ring_read(const struct ring *r, uint64_t from, void *out, size_t max,
    uint64_t *at)
{
	char *d = out;
	size_t n, pos, k;

	from = clamp(r, from);
	n = (size_t)(r->end - from);
	if (n > max)
		n = max;
	*at = from;
	if (n == 0)
		return 0;
	pos = (size_t)(from % r->cap);
	k = r->cap - pos < n ? r->cap - pos : n;
	memcpy(d, r->buf + pos, k);
	memcpy(d + k, r->buf, n - k);
	return n;
}
