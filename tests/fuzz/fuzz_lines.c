/*
 * fuzz_lines.c -- fuzz target for the line splitter (execd/lines.c).
 *
 * The first two bytes seed how the rest is cut into reads (1 to 64 bytes
 * each, or all at once); the rest is the output of a command.  Invariants,
 * any break aborts: the lines given are exactly those of a model that
 * splits the whole input at once ("\n", "\r" and "\r\n" end a line, the
 * last unterminated rest comes from lines_flush), however it was cut; no
 * line holds a terminator; and a second splitter fed byte by byte agrees.
 */
#include <string.h>

#include "../../execd/domain/lines.h"
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
	free(want.p);
	free(a.p);
	free(b.p);
	return 0;
}
