/*
 * fuzz_proxy.c -- fuzz target for proxy.c's response head parser and
 * chunked decoder.
 *
 * The whole input is parsed as a head.  Invariants: the result is 0,
 * -EPROTO or a length within the input and PROXY_HEAD_MAX; a parsed
 * head has a status of 100 to 599 and header names and values inside
 * the head, names non-empty and free of ':'; parsing just the head gives
 * the same length.  Then the input is decoded as a chunked body, whole
 * and fed in pieces of 1 to 7 bytes (the first byte picks the size):
 * both end the same way and, unless malformed, give the same payload.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../execd/transport/proxy.h"
#include "fz.h"

/* Decode in, step bytes at a time: the last rc, the payload in out. */
static int
decode(const uint8_t *in, size_t n, size_t step, char *out, size_t *olen)
{
	struct proxy_chunk c = { 0 };
	char *held = malloc(n + 1);
	size_t hn = 0, fed = 0, used, off, len;
	int rc = 0;

	CHECK(held != NULL);
	*olen = 0;
	for (;;) {
		if (fed < n) {
			size_t k = n - fed < step ? n - fed : step;

			memcpy(held + hn, in + fed, k);
			hn += k;
			fed += k;
		}
		for (;;) {
			rc = proxy_chunk_step(&c, held, hn, &used, &off, &len);
			CHECK(rc == 0 || rc == 1 || rc == -EPROTO);
			if (rc < 0)
				goto out;
			CHECK(used <= hn && off + len <= used);
			memcpy(out + *olen, held + off, len);
			*olen += len;
			memmove(held, held + used, hn - used);
			hn -= used;
			if (rc == 1 || used == 0)
				break;
		}
		if (rc == 1 || fed == n)
			break;
	}
out:
	free(held);
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct proxy_head h, h2;
	const char *p = (const char *)data;
	char *o1, *o2;
	size_t n1, n2;
	int rc, r1, r2;

	rc = proxy_head_parse(p, size, &h);
	CHECK(rc == 0 || rc == -EPROTO || rc > 0);
	if (rc > 0) {
		CHECK((size_t)rc <= size && (size_t)rc <= PROXY_HEAD_MAX);
		CHECK(h.len == (size_t)rc);
		CHECK(h.status >= 100 && h.status <= 599);
		CHECK(h.nhdr <= PROXY_HEADERS_MAX);
		for (size_t i = 0; i < h.nhdr; i++) {
			CHECK(h.hdr[i].nlen > 0);
			CHECK(h.hdr[i].name >= p && h.hdr[i].name +
			    h.hdr[i].nlen <= p + rc);
			CHECK(memchr(h.hdr[i].name, ':', h.hdr[i].nlen) ==
			    NULL);
			CHECK(h.hdr[i].value >= p && h.hdr[i].value +
			    h.hdr[i].vlen <= p + rc);
		}
		CHECK(proxy_head_parse(p, (size_t)rc, &h2) == rc);
	}
	if ((o1 = malloc(size + 1)) == NULL || (o2 = malloc(size + 1)) == NULL)
		abort();
	r1 = decode(data, size, size + 1, o1, &n1);
	r2 = decode(data, size, size > 0 ? 1 + data[0] % 7 : 1, o2, &n2);
	CHECK(r1 == r2);
	if (r1 >= 0)
		CHECK(n1 == n2 && memcmp(o1, o2, n1) == 0);
	free(o1);
	free(o2);
	return 0;
}
