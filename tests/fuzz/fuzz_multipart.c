/*
 * fuzz_multipart.c -- fuzz target for the multipart parser.
 *
 * The input's first line (up to LF, a CR before it dropped) is the
 * boundary, the rest the body.  The body is parsed three ways: in one
 * piece, one byte at a time (bodies up to 4 KiB), and in pieces whose
 * sizes come from the input.  Every way must give the same events (a
 * hash of part names, filenames, types, body bytes however they were cut,
 * and ends), the same mp_feed() and mp_finish() results and the same
 * message.  The events must also nest: data and end only inside a part,
 * no empty data callback.  Callbacks sometimes fail on purpose, at a
 * point fixed by the input, to exercise the error paths alike.  A broken
 * invariant aborts.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../execd/transport/multipart.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct ev {
	uint64_t	 hash;
	int		 in_part;
	int		 last;		/* 'P', 'D', 'E' */
	uint64_t	 bytes;		/* body bytes, to count the failure */
	uint64_t	 fail_at;	/* fail once this many bytes came */
	int		 failed;
};

struct out {
	uint64_t	 hash;
	int		 feed_rc;
	int		 finish_rc;
	char		 msg[80];
};

static void	 mix(struct ev *, const void *, size_t);
static int	 on_part(const struct mp_part *, void *);
static int	 on_data(const char *, size_t, void *);
static int	 on_end(void *);
static struct out run(const char *, const uint8_t *, size_t, int,
		    uint64_t, const uint8_t *, size_t);

static const struct mp_cbs cbs = { on_part, on_data, on_end };

/* FNV-1a over p[0..n). */
static void
mix(struct ev *e, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		e->hash = (e->hash ^ b[i]) * 0x100000001b3ULL;
}

/* Part callback: hash its three strings; parts do not nest. */
static int
on_part(const struct mp_part *pt, void *arg)
{
	struct ev *e = arg;

	CHECK(!e->in_part && !e->failed);
	CHECK(pt->name != NULL);
	e->in_part = 1;
	mix(e, "P", 1);
	mix(e, pt->name, strlen(pt->name) + 1);
	mix(e, pt->filename ? pt->filename : "\1", pt->filename ?
	    strlen(pt->filename) + 1 : 1);
	mix(e, pt->type ? pt->type : "\1", pt->type ?
	    strlen(pt->type) + 1 : 1);
	e->last = 'P';
	return 0;
}

/* Data callback: hash the bytes as one stream; maybe fail. */
static int
on_data(const char *p, size_t n, void *arg)
{
	struct ev *e = arg;
	uint64_t before = e->bytes;

	CHECK(e->in_part && !e->failed && n > 0);
	if (e->last != 'D')
		mix(e, "D", 1);
	e->last = 'D';
	e->bytes += n;
	/*
	 * Fail when the byte count crosses fail_at, however the bytes were
	 * cut, after hashing only the bytes before it: every splitting
	 * then sees the same.
	 */
	if (e->fail_at > 0 && before < e->fail_at && e->bytes >= e->fail_at) {
		mix(e, p, (size_t)(e->fail_at - before));
		e->failed = 1;
		return -ENOSPC;
	}
	mix(e, p, n);
	return 0;
}

/* End callback: only inside a part. */
static int
on_end(void *arg)
{
	struct ev *e = arg;

	CHECK(e->in_part && !e->failed);
	e->in_part = 0;
	mix(e, "E", 1);
	e->last = 'E';
	return 0;
}

/*
 * Parse body[0..n) with boundary b: whole (mode 0), bytewise (1), or in
 * pieces sized by sz[0..szn) (2).
 */
static struct out
run(const char *b, const uint8_t *body, size_t n, int mode,
    uint64_t fail_at, const uint8_t *sz, size_t szn)
{
	struct ev e;
	struct out o;
	struct mp *mp;
	size_t i = 0, k, j = 0;
	int rc = 0;

	memset(&e, 0, sizeof(e));
	e.hash = 0xcbf29ce484222325ULL;
	e.fail_at = fail_at;
	if ((mp = mp_new(b, &cbs, &e)) == NULL)
		abort();
	while (i < n) {
		if (mode == 0)
			k = n;
		else if (mode == 1 || szn == 0)
			k = 1;
		else
			k = 1 + sz[j++ % szn] % 97;
		if (k > n - i)
			k = n - i;
		rc = mp_feed(mp, (const char *)body + i, k);
		i += k;
		if (rc != 0)
			break;
	}
	o.feed_rc = rc;
	o.finish_rc = mp_finish(mp);
	if (rc != 0) {
		CHECK(o.finish_rc == rc);
		CHECK(mp_feed(mp, "x", 1) == rc);
	}
	CHECK(o.finish_rc == 0 || o.finish_rc == -EINVAL ||
	    o.finish_rc == -E2BIG || o.finish_rc == -ENOSPC);
	CHECK((o.finish_rc == -ENOSPC) == (e.failed != 0));
	snprintf(o.msg, sizeof(o.msg), "%s", mp_error(mp));
	CHECK((o.finish_rc == 0) == (o.msg[0] == '\0'));
	mix(&e, &rc, sizeof(rc));
	o.hash = e.hash;
	mp_free(mp);
	return o;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size), *line = data, *body;
	size_t llen, n;
	char b[MP_BOUNDARY_MAX + 1];
	uint64_t fail_at = 0;
	struct out w, o;
	struct mp *probe;

	if (nl == NULL)
		return 0;
	llen = (size_t)(nl - data);
	if (llen > 0 && line[llen - 1] == '\r')
		llen--;
	/* A line "!N<boundary>": fail a data callback at byte N. */
	if (llen > 2 && line[0] == '!') {
		fail_at = line[1];
		line += 2;
		llen -= 2;
	}
	if (llen == 0 || llen > MP_BOUNDARY_MAX ||
	    memchr(line, '\0', llen) != NULL)
		return 0;
	memcpy(b, line, llen);
	b[llen] = '\0';
	if ((probe = mp_new(b, &cbs, NULL)) == NULL)
		return 0;	/* a CR inside */
	mp_free(probe);
	body = nl + 1;
	n = size - (size_t)(body - data);

	w = run(b, body, n, 0, fail_at, NULL, 0);
	if (n <= 4096) {
		o = run(b, body, n, 1, fail_at, NULL, 0);
		CHECK(o.hash == w.hash && o.feed_rc == w.feed_rc &&
		    o.finish_rc == w.finish_rc && strcmp(o.msg, w.msg) == 0);
	}
	o = run(b, body, n, 2, fail_at, data, (size_t)(nl - data));
	CHECK(o.hash == w.hash && o.feed_rc == w.feed_rc &&
	    o.finish_rc == w.finish_rc && strcmp(o.msg, w.msg) == 0);
	return 0;
}
