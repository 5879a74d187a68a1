/*
 * range.c -- Range header parsing for downloads (see range.h).
 *
 * Two passes over the specs: the first checks the syntax of all of them,
 * so that a malformed header is malformed for every file size (upstream
 * stopped looking at a spec once its start was past EOF); the second
 * picks the first spec that overlaps the file.  Not a general RFC 9110
 * parser: no other units, no multipart answer, no If-Range.  libc only;
 * pure, any thread.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "range.h"

#define RANGE_NUM_MAX	INT64_MAX	/* as Go's ParseInt(s, 10, 64) */

struct spec {
	int		 suffix;	/* "-n" */
	int		 open;		/* "a-" */
	uint64_t	 a, b;		/* a-b, a-, or n in a */
};

static const char	*skip_ws(const char *, const char *);
static int		 parse_num(const char *, const char *, uint64_t *);
static int		 parse_spec(const char *, const char *, struct spec *);

#define IS_WS(c)	((c) == ' ' || (c) == '\t')

/* The first non-blank of s[..e), or e. */
static const char *
skip_ws(const char *s, const char *e)
{
	while (s < e && IS_WS(*s))
		s++;
	return s;
}

/* Decimal digits s[..e), nothing else, at most 2^63 - 1; 0 or -EINVAL. */
static int
parse_num(const char *s, const char *e, uint64_t *out)
{
	uint64_t v = 0;

	if (s == e)
		return -EINVAL;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (RANGE_NUM_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* One spec s[..e), blanks trimmed already; 0 or -EINVAL. */
static int
parse_spec(const char *s, const char *e, struct spec *sp)
{
	const char *dash = memchr(s, '-', (size_t)(e - s)), *ae, *bs;

	if (dash == NULL)
		return -EINVAL;
	memset(sp, 0, sizeof(*sp));
	for (ae = dash; ae > s && IS_WS(ae[-1]); ae--)
		;
	bs = skip_ws(dash + 1, e);
	if (ae == s) {
		/* "-n": the last n bytes. */
		sp->suffix = 1;
		return parse_num(bs, e, &sp->a);
	}
	if (parse_num(s, ae, &sp->a) < 0)
		return -EINVAL;
	if (bs == e) {
		sp->open = 1;
		return 0;
	}
	if (parse_num(bs, e, &sp->b) < 0 || sp->b < sp->a)
		return -EINVAL;
	return 0;
}

/* See range.h. */
int
range_parse(const char *hdr, uint64_t size, uint64_t *start, uint64_t *len)
{
	const char *p, *end, *s, *e, *c;
	struct spec sp;
	int pass, specs = 0;
	uint64_t first, last;

	if (hdr == NULL || strncmp(hdr, "bytes=", 6) != 0)
		return -EINVAL;
	end = hdr + strlen(hdr);
	/* Pass 0 checks every spec; pass 1 takes the first that fits. */
	for (pass = 0; pass < 2; pass++) {
		for (p = hdr + 6; p <= end; p = c + 1) {
			if ((c = memchr(p, ',', (size_t)(end - p))) == NULL)
				c = end;
			s = skip_ws(p, c);
			for (e = c; e > s && IS_WS(e[-1]); e--)
				;
			if (s == e)
				continue;		/* an empty spec */
			if (parse_spec(s, e, &sp) < 0)
				return -EINVAL;
			specs++;
			if (pass == 0)
				continue;
			if (sp.suffix) {
				if (sp.a == 0 || size == 0)
					continue;
				first = sp.a >= size ? 0 : size - sp.a;
				last = size - 1;
			} else {
				if (sp.a >= size)
					continue;	/* at or after EOF */
				first = sp.a;
				last = sp.open || sp.b >= size ? size - 1 :
				    sp.b;
			}
			*start = first;
			*len = last - first + 1;
			return 0;
		}
		if (specs == 0)
			return -EINVAL;		/* "bytes=" or "bytes= , ," */
	}
	return -ERANGE;
}
