/*
 * lines.c -- the line splitter shared by commands and sessions.
 *
 * It only cuts bytes; what a line becomes (an event, a log entry) is the
 * caller's business.
 */
#include <string.h>

#include "lines.h"

static void	line(struct lines *, const char *, size_t, lines_cb *, void *);

/* An empty splitter. */
void
lines_init(struct lines *l)
{
	buf_init(&l->part);
	l->cr = false;
	l->keep = false;
}

/* An empty splitter whose lines keep their terminators. */
void
lines_init_keep(struct lines *l)
{
	lines_init(l);
	l->keep = true;
}

/* One complete line: the held rest, if any, and p[0..n). */
static void
line(struct lines *l, const char *p, size_t n, lines_cb *cb, void *arg)
{
	if (l->part.len == 0) {
		cb(n > 0 ? p : "", n, arg);	/* no copy needed */
		return;
	}
	buf_add(&l->part, p, n);
	cb(l->part.p, l->part.len, arg);
	buf_drain(&l->part, l->part.len);
}

/*
 * Cut p[0..n) into lines; see lines.h.  Without a "\r" anywhere (the
 * common case) memchr finds the ends; else every byte is looked at.
 */
void
lines_feed(struct lines *l, const char *p, size_t n, lines_cb *cb, void *arg)
{
	bool fast = !l->cr && memchr(p, '\r', n) == NULL;
	const char *q;
	size_t i, end, start = 0;

	for (i = 0; i < n; i++) {
		if (fast) {
			if ((q = memchr(p + i, '\n', n - i)) == NULL)
				break;
			i = (size_t)(q - p);
		} else if (p[i] != '\n' && p[i] != '\r') {
			l->cr = false;
			continue;
		}
		if (p[i] == '\n' && l->cr && i == start && l->part.len == 0) {
			/*
			 * The "\n" of a "\r\n": the "\r" ended the line (a
			 * keeping splitter's "\r" ended its read).
			 */
			l->cr = false;
			if (l->keep)
				cb(p + i, 1, arg);
			start = i + 1;
			continue;
		}
		end = i;
		if (l->keep) {
			/* With its terminator, "\r\n" whole if both are here. */
			if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
				i++;
			end = i + 1;
		}
		line(l, p + start, end - start, cb, arg);
		l->cr = p[i] == '\r';
		start = i + 1;
	}
	buf_add(&l->part, p + start, n - start);
	if (l->part.len >= LINES_MAX) {
		cb(l->part.p, l->part.len, arg);
		buf_drain(&l->part, l->part.len);
	}
}

/* The unterminated rest, as a last line. */
void
lines_flush(struct lines *l, lines_cb *cb, void *arg)
{
	if (l->part.len > 0)
		cb(l->part.p, l->part.len, arg);
	buf_drain(&l->part, l->part.len);
	l->cr = false;
}

/* Free the buffer. */
void
lines_reset(struct lines *l)
{
	buf_reset(&l->part);
	l->cr = false;
}
