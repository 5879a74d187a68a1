/*
 * fuzz_lines.c -- fuzz target for the line splitter (execd/lines.c).
 *
 * The first two bytes seed how the rest is cut into reads (1 to 64 bytes
 * each, or all at once); the rest is the output of a command.  Invariants,
 * any break aborts: the lines given are exactly those of a model that
 * splits the whole input at once ("\n", "\r" and "\r\n" end a line, the
 * last unterminated rest comes from lines_flush), however it was cut; no
 * line holds a terminator; and a second splitter fed byte by byte agrees.
 * A keeping splitter (lines_init_keep) fed the same reads gives lines
 * that, put together, are the input, each ending at its only terminator;
 * as events (outstream_fmt_line) passed through outstream_strip, in
 * pieces cut at event boundaries, they are the events of the first
 * splitter's lines, byte for byte.
 */
#include <string.h>

#include "../../execd/domain/lines.h"
#include "../../execd/domain/outstream.h"
#include "fz.h"

struct got {
	char	*p;
	size_t	 len, cap;	/* lines as "<len>:" bytes, one after another */
	size_t	 n;
};

static void
add(struct got *g, const char *p, size_t n)
{
	char num[32];
	int k = snprintf(num, sizeof(num), "%zu:", n);

	if (g->len + (size_t)k + n + 1 > g->cap) {
		g->cap = (g->len + (size_t)k + n + 1) * 2;
		if ((g->p = realloc(g->p, g->cap)) == NULL)
			abort();
	}
	memcpy(g->p + g->len, num, (size_t)k);
	memcpy(g->p + g->len + k, p, n);
	g->len += (size_t)k + n;
	g->n++;
}

/* The callback: record, and check the line has no terminator. */
static void
on_line(const char *p, size_t n, void *arg)
{
	CHECK(p != NULL);
	CHECK(n <= LINES_MAX);
	CHECK(memchr(p, '\n', n) == NULL && memchr(p, '\r', n) == NULL);
	add(arg, p, n);
}

/* Lines as stdout events, unnumbered, all at one time. */
static void
on_event(const char *p, size_t n, void *arg)
{
	outstream_fmt_line(arg, 1, p, n, 0, 1);
}

/* A keeping splitter's line: recorded bare, and as an event. */
struct kept {
	struct buf	 all;	/* the lines put together */
	struct buf	 evs;
};

static void
on_kept(const char *p, size_t n, void *arg)
{
	struct kept *k = arg;
	const char *t;

	CHECK(n > 0);
	/* A terminator only at the end: "\n", "\r" or "\r\n". */
	t = p + n - 1;
	if (*t == '\n' && n > 1 && t[-1] == '\r')
		t--;
	for (const char *q = p; q < t; q++)
		CHECK(*q != '\n' && *q != '\r');
	buf_add(&k->all, p, n);
	outstream_fmt_line(&k->evs, 1, p, n, 0, 1);
}

/* Feed p[0..n) in the reads seed makes (seed 0: at once), then flush. */
static void
feed_cut(struct lines *l, const char *p, size_t n, unsigned seed,
    lines_cb *cb, void *arg)
{
	size_t off, k;

	for (off = 0; off < n; off += k) {
		if (seed == 0) {
			k = n;
		} else {
			seed = seed * 1103515245u + 12345u;
			k = 1 + (seed >> 16) % 64;
		}
		if (k > n - off)
			k = n - off;
		lines_feed(l, p + off, k, cb, arg);
	}
	lines_flush(l, cb, arg);
}

/* The kept lines as events through outstream_strip, a few at a time. */
static void
strip_all(const struct buf *evs, struct buf *out, unsigned seed)
{
	struct outstream_strip st;
	const char *p = evs->p, *e;
	size_t n = evs->len, k;
	int take;

	outstream_strip_init(&st);
	while (n > 0) {
		take = 1 + (int)(seed % 4);
		seed = seed * 1103515245u + 12345u;
		for (k = 0; take > 0 && k < n; take--) {
			e = memmem(p + k, n - k, "\n\n", 2);
			CHECK(e != NULL);
			k = (size_t)(e - p) + 2;
		}
		outstream_strip(&st, out, p, k);
		p += k;
		n -= k;
	}
}

/* The model: the whole input split at once. */
static void
model(const char *p, size_t n, struct got *g)
{
	size_t start = 0;

	for (size_t i = 0; i < n; i++) {
		if (p[i] != '\n' && p[i] != '\r')
			continue;
		add(g, p + start, i - start);
		if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
			i++;
		start = i + 1;
	}
	if (start < n)
		add(g, p + start, n - start);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct got want = { 0 }, a = { 0 }, b = { 0 };
	struct lines l;
	const char *p;
	unsigned seed;
	size_t n, off, k;

	if (size < 2 || size - 2 >= LINES_MAX)
		return 0;
	seed = (unsigned)data[0] << 8 | data[1];
	p = (const char *)data + 2;
	n = size - 2;
	model(p, n, &want);

	lines_init(&l);
	for (off = 0; off < n; off += k) {
		if (seed == 0) {
			k = n;
		} else {
			seed = seed * 1103515245u + 12345u;
			k = 1 + (seed >> 16) % 64;
		}
		if (k > n - off)
			k = n - off;
		lines_feed(&l, p + off, k, on_line, &a);
	}
	lines_feed(&l, p, 0, on_line, &a);	/* an empty read changes nothing */
	lines_flush(&l, on_line, &a);
	lines_flush(&l, on_line, &a);		/* nothing left the second time */
	lines_reset(&l);

	lines_init(&l);
	for (off = 0; off < n; off++)
		lines_feed(&l, p + off, 1, on_line, &b);
	lines_flush(&l, on_line, &b);
	lines_reset(&l);

	CHECK(a.n == want.n && a.len == want.len &&
	    (a.len == 0 || memcmp(a.p, want.p, a.len) == 0));
	CHECK(b.n == want.n && b.len == want.len &&
	    (b.len == 0 || memcmp(b.p, want.p, b.len) == 0));

	{
		struct kept kp;
		struct buf evs, stripped;
		unsigned s0 = (unsigned)data[0] << 8 | data[1];

		buf_init(&kp.all);
		buf_init(&kp.evs);
		buf_init(&evs);
		buf_init(&stripped);
		lines_init_keep(&l);
		feed_cut(&l, p, n, s0, on_kept, &kp);
		lines_reset(&l);
		CHECK(kp.all.len == n && (n == 0 ||
		    memcmp(kp.all.p, p, n) == 0));
		lines_init(&l);
		feed_cut(&l, p, n, s0, on_event, &evs);
		lines_reset(&l);
		strip_all(&kp.evs, &stripped, s0);
		CHECK(stripped.len == evs.len && (evs.len == 0 ||
		    memcmp(stripped.p, evs.p, evs.len) == 0));
		buf_reset(&kp.all);
		buf_reset(&kp.evs);
		buf_reset(&evs);
		buf_reset(&stripped);
	}
	free(want.p);
	free(a.p);
	free(b.p);
	return 0;
}
