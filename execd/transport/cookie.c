/*
 * cookie.c -- the Cookie header's pairs; see cookie.h.
 */
#include <string.h>

#include "cookie.h"

static bool
blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The next pair, malformed ones included (name NULL). */
static bool
next_raw(const char **at, struct cookie_pair *cp)
{
	const char *p = *at, *end, *eq, *n0, *n1, *v0, *v1;

	while (*p == ';' || blank(*p))
		p++;
	if (*p == '\0') {
		*at = p;
		return false;
	}
	end = p + strcspn(p, ";");
	*at = end;
	cp->start = p;
	v1 = end;
	while (v1 > p && blank(v1[-1]))
		v1--;
	cp->len = (size_t)(v1 - p);
	cp->name = NULL;
	eq = memchr(p, '=', (size_t)(v1 - p));
	if (eq == NULL)
		return true;
	n0 = p;
	n1 = eq;
	while (n1 > n0 && blank(n1[-1]))
		n1--;
	if (n1 == n0)
		return true;
	v0 = eq + 1;
	while (v0 < v1 && blank(*v0))
		v0++;
	if (v1 - v0 >= 2 && *v0 == '"' && v1[-1] == '"') {
		v0++;
		v1--;
	}
	cp->name = n0;
	cp->nlen = (size_t)(n1 - n0);
	cp->value = v0;
	cp->vlen = (size_t)(v1 - v0);
	return true;
}

/* The next well-formed pair; see cookie.h. */
bool
cookie_next(const char **at, struct cookie_pair *cp)
{
	while (next_raw(at, cp))
		if (cp->name != NULL)
			return true;
	return false;
}

/* The header without the pairs called name; see cookie.h. */
size_t
cookie_strip(const char *hdr, const char *name, struct buf *out)
{
	struct cookie_pair cp;
	const char *at = hdr;
	size_t n = strlen(name), dropped = 0;
	bool first = true;

	while (next_raw(&at, &cp)) {
		if (cp.name != NULL && cp.nlen == n &&
		    memcmp(cp.name, name, n) == 0) {
			dropped++;
			continue;
		}
		if (!first)
			buf_adds(out, "; ");
		buf_add(out, cp.start, cp.len);
		first = false;
	}
	return dropped;
}
