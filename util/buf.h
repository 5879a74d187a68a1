/*
 * buf.h -- the project's byte buffer: it grows on demand up to a cap and
 * drains from the front by moving a pointer, not the bytes.
 *
 * p and len are the bytes not yet drained, and p[len] is always NUL once
 * anything was added, so text can be read in place.  Draining n bytes
 * advances p; the drained room is reclaimed by one move when an append
 * needs it and at least as much was drained as is still held, so a buffer
 * used as a queue (append at the back, drain at the front) costs O(1) per
 * byte however small the pieces.
 *
 * The cap is the most the buffer holds at once (BUF_MAX unless buf_init_max
 * says otherwise).  An append that would pass it adds nothing and sets
 * full, which stays set until the buffer is reset; a caller that takes
 * bytes from a client caps them itself before they get here, so reaching
 * the cap is a bug caught, not a memory spike.  Out of memory aborts, as
 * must.h says.
 */
#ifndef BUF_H
#define BUF_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "must.h"

#define BUF_MAX	((size_t)64 << 20)	/* the default cap: 64 MiB */

struct buf {
	char	*p;	/* the bytes held; NULL until the first append */
	size_t	 len;	/* how many */
	char	*base;	/* the allocation; p - base bytes are drained */
	size_t	 size;	/* bytes allocated at base */
	size_t	 max;	/* len never passes this */
	bool	 full;	/* an append was refused for max */
};

/* An empty buffer of cap max that owns no memory yet. */
static inline void
buf_init_max(struct buf *b, size_t max)
{
	b->p = b->base = NULL;
	b->len = b->size = 0;
	b->max = max;
	b->full = false;
}

/* An empty buffer of cap BUF_MAX. */
static inline void
buf_init(struct buf *b)
{
	buf_init_max(b, BUF_MAX);
}

/* Free the buffer's memory; it may be used again, with the same cap. */
static inline void
buf_reset(struct buf *b)
{
	free(b->base);
	buf_init_max(b, b->max);
}

/* Bytes allocated, drained room included: what the buffer costs. */
static inline size_t
buf_cost(const struct buf *b)
{
	return b->size;
}

/*
 * Make room for n more bytes and their NUL: 0, or -ENOBUFS (and full set)
 * when len + n would pass the cap.
 */
static inline int
buf_reserve(struct buf *b, size_t n)
{
	size_t off = (size_t)(b->p - b->base), size;

	if (n > b->max - b->len) {
		b->full = true;
		return -ENOBUFS;
	}
	if (b->base != NULL && off + b->len + n < b->size)
		return 0;
	if (off > 0 && off >= b->len && b->len + n < b->size) {
		memmove(b->base, b->p, b->len);
		b->p = b->base;
		return 0;
	}
	/* The first allocation is the size asked for; growth doubles. */
	size = b->size > 0 ? b->size : 256;
	if (b->size == 0 && size <= b->len + n)
		size = b->len + n + 1;
	while (size <= off + b->len + n)
		size *= 2;
	b->base = must(realloc(b->base, size));
	b->p = b->base + off;
	b->size = size;
	return 0;
}

/* Append n bytes: 0, or -ENOBUFS with nothing added. */
static inline int
buf_add(struct buf *b, const void *s, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return -ENOBUFS;
	if (n > 0)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* Append a C string; see buf_add. */
static inline int
buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

/* Append printf-formatted text; see buf_add. */
static inline int
buf_addf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static inline int
buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (buf_reserve(b, (size_t)n) < 0)
		return -ENOBUFS;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

/*
 * Append s in single quotes for sh, each quote in it as '\'' (a word
 * the shell reads back as s, whatever s holds); see buf_add.
 */
static inline int
buf_add_shquoted(struct buf *b, const char *s)
{
	int rc = buf_add(b, "'", 1);

	for (; *s != '\0' && rc == 0; s++)
		rc = *s == '\'' ? buf_adds(b, "'\\''") : buf_add(b, s, 1);
	return rc == 0 ? buf_add(b, "'", 1) : rc;
}

/* Append v in decimal, without printf's cost; see buf_add. */
static inline int
buf_addu(struct buf *b, unsigned long long v)
{
	char tmp[20], *s = tmp + sizeof(tmp);

	do {
		*--s = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return buf_add(b, s, (size_t)(tmp + sizeof(tmp) - s));
}

/* Append v in decimal; see buf_addu. */
static inline int
buf_addi(struct buf *b, long long v)
{
	if (v >= 0)
		return buf_addu(b, (unsigned long long)v);
	if (buf_reserve(b, 21) < 0)
		return -ENOBUFS;
	buf_add(b, "-", 1);
	/* Negate as unsigned: -LLONG_MIN does not fit a long long. */
	return buf_addu(b, 0ULL - (unsigned long long)v);
}

/* Keep the first n bytes, dropping what was appended after them. */
static inline void
buf_truncate(struct buf *b, size_t n)
{
	if (b->p == NULL || n >= b->len)
		return;
	b->len = n;
	b->p[n] = '\0';
}

/* Drop the first n bytes (all of them if n is larger). */
static inline void
buf_drain(struct buf *b, size_t n)
{
	if (b->p == NULL)
		return;
	if (n >= b->len) {
		b->p = b->base;
		b->len = 0;
	} else {
		b->p += n;
		b->len -= n;
	}
	b->p[b->len] = '\0';
}

#endif
