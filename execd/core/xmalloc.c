/*
 * xmalloc.c -- allocation wrappers that abort on exhaustion.
 *
 * Running out of memory in the daemon is not a state it can serve from, so
 * these abort with a message instead of handing NULL to every caller.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xmalloc.h"

/* malloc(n) or abort; n of 0 gives a unique pointer. */
void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		fatal("malloc %zu", n);
	return p;
}

/* calloc(n, sz) or abort; the overflow check is calloc's own. */
void *
xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (p == NULL)
		fatal("calloc %zu*%zu", n, sz);
	return p;
}

/* realloc(p, n) or abort. */
void *
xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		fatal("realloc %zu", n);
	return q;
}

/* realloc(p, n * size), checked for overflow, or abort. */
void *
xreallocarray(void *p, size_t n, size_t size)
{
	void *q = reallocarray(p, n ? n : 1, size ? size : 1);

	if (q == NULL)
		fatal("reallocarray %zu x %zu", n, size);
	return q;
}

/* strdup(s) or abort. */
char *
xstrdup(const char *s)
{
	char *p = strdup(s);

	if (p == NULL)
		fatal("strdup");
	return p;
}

/* strndup(s, n) or abort. */
char *
xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (p == NULL)
		fatal("strndup");
	return p;
}

/* A newly allocated formatted string, or abort. */
char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (r < 0)
		fatal("vasprintf");
	return p;
}
