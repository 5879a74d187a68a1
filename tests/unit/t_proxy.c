/*
 * t_proxy.c -- unit tests for proxy.c's pure parts: the response head
 * parser (status lines, header lines, incomplete and malformed heads,
 * the size and count caps) and the chunked decoder (sizes, extensions,
 * trailers, bare LF, bytes arriving one at a time, and malformed
 * framing).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../execd/transport/proxy.h"
#include "../t.h"

struct head_row {
	const char	*in;
	int		 rc;	/* > 0: the head's length is strlen(in) */
	unsigned	 status;
	size_t		 nhdr;
};

static const struct head_row heads[] = {
	{ "HTTP/1.1 200 OK\r\n\r\n", 1, 200, 0 },
	{ "HTTP/1.0 404 Not Found\r\nA: b\r\n\r\n", 1, 404, 1 },
	{ "HTTP/1.1 204\r\n\r\n", 1, 204, 0 },
	{ "HTTP/1.1 101 Switching Protocols\nUpgrade: websocket\n\n", 1,
	    101, 1 },
	{ "HTTP/1.1 200 OK\r\nX:\r\nY:  padded  \r\n\r\n", 1, 200, 2 },
	/* Incomplete. */
	{ "", 0, 0, 0 },
	{ "HTTP/1.1 200 OK\r\n", 0, 0, 0 },
	{ "HTTP/1.1 200 OK\r\nA: b\r\n", 0, 0, 0 },
	/* Malformed. */
	{ "HTTP/2 200 OK\r\n\r\n", -EPROTO, 0, 0 },
	{ "HTTP/1.1 20 OK\r\n\r\n", -EPROTO, 0, 0 },
	{ "HTTP/1.1 600 Odd\r\n\r\n", -EPROTO, 0, 0 },
	{ "HTTP/1.1 200OK\r\n\r\n", -EPROTO, 0, 0 },
	{ "SPDY/9 what\r\n\r\n", -EPROTO, 0, 0 },
	{ "HTTP/1.1 200 OK\r\nno colon\r\n\r\n", -EPROTO, 0, 0 },
	{ "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n", -EPROTO, 0, 0 },
	{ "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", -EPROTO, 0, 0 },
	{ "HTTP/1.1 200 OK\r\n folded: x\r\n\r\n", -EPROTO, 0, 0 },
};

static void
test_heads(void)
{
	struct proxy_head *h = calloc(1, sizeof(*h));

	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		const struct head_row *r = &heads[i];
		int rc = proxy_head_parse(r->in, strlen(r->in), h);

		if (r->rc > 0) {
			T_EQ_INT(rc, (int)strlen(r->in));
			T_EQ_INT(h->status, r->status);
			T_EQ_INT(h->nhdr, r->nhdr);
		} else if (rc != r->rc) {
			fprintf(stderr, "  row %zu: %s\n", i, r->in);
			T_EQ_INT(rc, r->rc);
		}
	}
	T_EQ_INT(proxy_head_parse("HTTP/1.1 200 OK\r\nY:  padded  \r\n\r\nbody",
	    37, h), 33);
	T_EQ_INT(h->hdr[0].vlen, 6);
	T_OK(strncmp(h->hdr[0].value, "padded", 6) == 0);
	T_EQ_INT(h->hdr[0].nlen, 1);
	free(h);
}

static void
test_head_caps(void)
{
	struct proxy_head *h = calloc(1, sizeof(*h));
	size_t n = PROXY_HEAD_MAX + 100, o;
	char *big = malloc(n + 1);

	/* One long line without its end: too long, not "more needed". */
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	memset(big + 20, 'a', n - 20);
	T_EQ_INT(proxy_head_parse(big, n, h), -EPROTO);
	/* More header lines than the cap. */
	o = (size_t)sprintf(big, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i <= PROXY_HEADERS_MAX; i++)
		o += (size_t)sprintf(big + o, "H%d: v\r\n", i);
	o += (size_t)sprintf(big + o, "\r\n");
	T_EQ_INT(proxy_head_parse(big, o, h), -EPROTO);
	free(big);
	free(h);
}

/* Decode in, fed step bytes at a time; the payload in out, the last rc. */
static int
decode(const char *in, size_t n, size_t step, char *out, size_t *olen)
{
	struct proxy_chunk c = { 0 };
	char held[4096];
	size_t hn = 0, fed = 0, used, off, len;
	int rc = 0;

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
			if (rc < 0)
				return rc;
			memcpy(out + *olen, held + off, len);
			*olen += len;
			if (used > 0)
				memmove(held, held + used, hn - used);
			hn -= used;
			if (rc == 1 || used == 0)
				break;
		}
		if (rc == 1 || fed == n)
			return rc;
	}
}

struct chunk_row {
	const char	*in;
	int		 rc;	/* 1 ended, 0 incomplete, -EPROTO */
	const char	*out;
};

static const struct chunk_row chunks[] = {
	{ "5\r\nhello\r\n0\r\n\r\n", 1, "hello" },
	{ "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n", 1, "abcdef" },
	{ "A\r\n0123456789\r\n0\r\n\r\n", 1, "0123456789" },
	{ "a;ext=1\r\n0123456789\r\n0\r\nX-Sum: 1\r\nY: 2\r\n\r\n", 1,
	    "0123456789" },
	{ "2\nhi\n0\n\n", 1, "hi" },
	{ "0\r\n\r\n", 1, "" },
	{ "5\r\nhel", 0, "hel" },
	{ "5\r\nhello\r\n", 0, "hello" },
	{ "zz\r\n", -EPROTO, "" },
	{ "\r\n", -EPROTO, "" },
	{ "5\r\nhelloXX\r\n", -EPROTO, "hello" },
	{ "11111111111111111\r\n", -EPROTO, "" },
};

static void
test_chunks(void)
{
	char out[4096];
	size_t olen;
	int rc;

	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		const struct chunk_row *r = &chunks[i];

		for (size_t step = 1; step <= strlen(r->in) + 1; step++) {
			rc = decode(r->in, strlen(r->in), step, out, &olen);
			if (rc != r->rc || (rc >= 0 && (olen !=
			    strlen(r->out) || memcmp(out, r->out, olen)))) {
				fprintf(stderr, "  row %zu step %zu: rc %d\n",
				    i, step, rc);
				T_OK(0);
				break;
			}
		}
	}
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "proxy_heads", test_heads },
		{ "proxy_head_caps", test_head_caps },
		{ "proxy_chunks", test_chunks },
	};

	return T_RUN(cases);
}
