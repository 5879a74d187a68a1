/*
 * lines.c -- the line splitter shared by commands and sessions.
 *
 * It only cuts bytes; what a line becomes (an event, a log entry) is the
 * caller's business.
 */
#include "lines.h"

/* An empty splitter. */
void
lines_init(struct lines *l)
{
	sse_buf_init(&l->part);
	l->cr = false;
}

/* Cut p[0..n) into lines; see lines.h. */
void
lines_feed(struct lines *l, const char *p, size_t n, lines_cb *cb, void *arg)
{
	size_t i, start = 0;

	for (i = 0; i < n; i++) {
		if (p[i] != '\n' && p[i] != '\r') {
			l->cr = false;
			continue;
		}
		if (p[i] == '\n' && l->cr && i == start && l->part.len == 0) {
			/* The "\n" of a "\r\n": the "\r" ended the line. */
			l->cr = false;
			start = i + 1;
			continue;
		}
		sse_buf_add(&l->part, p + start, i - start);
		cb(l->part.len > 0 ? l->part.p : "", l->part.len, arg);
		sse_buf_consume(&l->part, l->part.len);
		l->cr = p[i] == '\r';
		start = i + 1;
	}
	sse_buf_add(&l->part, p + start, n - start);
	if (l->part.len >= LINES_MAX) {
		cb(l->part.p, l->part.len, arg);
		sse_buf_consume(&l->part, l->part.len);
	}
}

/* The unterminated rest, as a last line. */
void
lines_flush(struct lines *l, lines_cb *cb, void *arg)
{
	if (l->part.len > 0)
		cb(l->part.p, l->part.len, arg);
	sse_buf_consume(&l->part, l->part.len);
	l->cr = false;
}

/* Free the buffer. */
void
lines_reset(struct lines *l)
{
	sse_buf_reset(&l->part);
	l->cr = false;
}
