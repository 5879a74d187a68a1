/*
 * fuzz_cookie.c -- fuzz target for cookie.c's Cookie header parser and
 * the proxy cookie's check in dialect.c.
 *
 * The input, cut at its first NUL, is a Cookie header.  Invariants: every
 * pair lies inside the header, with a non-empty name free of ';' and '='
 * and blanks at neither end, a value free of ';'; the walk ends.
 * cookie_strip() of the name of the first pair leaves none of that name
 * and as many pairs of other names, in the same order, as the header
 * has; stripping a name no pair has keeps every pair.  The proxy cookie
 * check answers without crashing, and true when the header is made to
 * hold the right value for its scope after what it has (unless it has
 * eight pairs of that name already: no more are tried).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../execd/transport/cookie.h"
#include "../../execd/transport/dialect.h"
#include "fz.h"

/* The pairs of h not called name (NULL: all), as "name=value\n" lines. */
static void
pairs(const char *h, const char *name, size_t nlen, struct buf *out)
{
	struct cookie_pair cp;
	const char *at = h;
	size_t len = strlen(h), guard = 0;

	while (cookie_next(&at, &cp)) {
		CHECK(++guard <= len);
		CHECK(cp.name >= h && cp.name + cp.nlen <= h + len);
		CHECK(cp.value >= h && cp.value + cp.vlen <= h + len);
		CHECK(cp.nlen > 0);
		CHECK(memchr(cp.name, ';', cp.nlen) == NULL);
		CHECK(memchr(cp.name, '=', cp.nlen) == NULL);
		CHECK(cp.name[0] != ' ' && cp.name[0] != '\t');
		CHECK(cp.name[cp.nlen - 1] != ' ' &&
		    cp.name[cp.nlen - 1] != '\t');
		CHECK(memchr(cp.value, ';', cp.vlen) == NULL);
		if (name != NULL && cp.nlen == nlen &&
		    memcmp(cp.name, name, nlen) == 0)
			continue;
		buf_add(out, cp.name, cp.nlen);
		buf_adds(out, "=");
		buf_add(out, cp.value, cp.vlen);
		buf_adds(out, "\n");
	}
	CHECK(at >= h && at <= h + len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *h = malloc(size + 1), *name = NULL, scope[64];
	char val[DIALECT_COOKIE_LEN + 1];
	unsigned char md[DIALECT_MD_LEN];
	struct buf all, want, stripped, again, h2;
	struct cookie_pair cp;
	const char *at, *jar[2];
	size_t named;
	struct dialect_creds c = { NULL, NULL, NULL, jar, scope };

	CHECK(h != NULL);
	memcpy(h, data, size);
	h[size] = '\0';
	buf_init(&all);
	buf_init(&want);
	buf_init(&stripped);
	buf_init(&again);
	buf_init(&h2);
	pairs(h, NULL, 0, &all);

	/* Strip the first pair's name; one with '=' (no pair's) strips none. */
	at = h;
	if (cookie_next(&at, &cp)) {
		name = strndup(cp.name, cp.nlen);
		CHECK(name != NULL);
	}
	if (name != NULL && strlen(name) == cp.nlen) {
		size_t dropped = cookie_strip(h, name, &stripped);

		CHECK(dropped >= 1);
		pairs(h, name, cp.nlen, &want);
		pairs(stripped.p != NULL ? stripped.p : "", NULL, 0, &again);
		CHECK(want.len == again.len &&
		    (want.len == 0 || memcmp(want.p, again.p, want.len) == 0));
	}
	buf_reset(&stripped);
	buf_reset(&again);
	CHECK(cookie_strip(h, "no=such", &stripped) == 0);
	pairs(stripped.p != NULL ? stripped.p : "", NULL, 0, &again);
	CHECK(all.len == again.len &&
	    (all.len == 0 || memcmp(all.p, again.p, all.len) == 0));

	/* The proxy cookie's check: never crashes, and opens when right. */
	memset(md, 0x5a, sizeof(md));
	CHECK(dialect_cookie_scope("/proxy/6080/vnc.html", scope,
	    sizeof(scope)) == 0 && strcmp(scope, "/proxy/6080/") == 0);
	jar[0] = h;
	jar[1] = NULL;
	(void)dialect_token_ok(&dialect_proxy, &c, md);
	CHECK(dialect_cookie_value(md, scope, val) == 0);
	/* The right pair after h's opens, unless h holds 8 of that name. */
	for (at = h, named = 0; cookie_next(&at, &cp); )
		named += cp.nlen == strlen(DIALECT_COOKIE) &&
		    memcmp(cp.name, DIALECT_COOKIE, cp.nlen) == 0;
	buf_addf(&h2, "%s; %s=%s", h, DIALECT_COOKIE, val);
	jar[0] = h2.p;
	if (named < 8)
		CHECK(dialect_token_ok(&dialect_proxy, &c, md));
	free(name);
	free(h);
	buf_reset(&all);
	buf_reset(&want);
	buf_reset(&stripped);
	buf_reset(&again);
	buf_reset(&h2);
	return 0;
}
