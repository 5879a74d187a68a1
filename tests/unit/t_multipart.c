/*
 * t_multipart.c -- unit tests for multipart.c.
 *
 * Every body is fed whole, one byte at a time and in several random
 * splits, and each way must give the same events and results.  Events
 * are logged as text: P(name,filename,type) for a part ('~' for NULL),
 * D(bytes) for its body however many callbacks carried it, E; for its end.
 * Bodies: the exact shapes the SDKs send (undici FormData, the JS
 * streaming upload with an opensandbox_ boundary, Python's N pairs),
 * delimiter look-alikes that must stay data, binary data, empty parts,
 * preambles, epilogues, padding, bare LF, header parameters, truncation,
 * malformed lines, the header cap at the byte, callback errors and the
 * hold-back bound.  mp_boundary() and mp_new() argument checks too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../execd/transport/multipart.h"
#include "../t.h"

#define SPLIT_WHOLE	0
#define SPLIT_BYTES	1	/* else a PRNG seed */

struct rec {
	char	*log;
	size_t	 len, cap;
	int	 last;		/* 'P', 'D' or 'E' */
	int	 ndata;		/* data callbacks */
	size_t	 bytes;		/* body bytes delivered */
	int	 calls;		/* callbacks of any kind */
	int	 fail_at;	/* on this call (1-based), return fail_rc */
	int	 fail_rc;
	int	 after_fail;	/* callbacks after the failing one */
};

struct res {
	char	*log;
	size_t	 loglen;
	int	 feed_rc;
	int	 finish_rc;
	int	 ndata;
	char	 err[80];
};

static void	 rec_add(struct rec *, const char *, size_t);
static int	 rec_hit(struct rec *);
static int	 on_part(const struct mp_part *, void *);
static int	 on_data(const char *, size_t, void *);
static int	 on_end(void *);
static struct res parse(const char *, const char *, size_t, unsigned,
		    struct rec *);
static void	 res_free(struct res *);
static void	 check_all_splits(const char *, const char *, size_t,
		    const char *, size_t, int);
static void	 check_str(const char *, const char *, const char *, int);

static const struct mp_cbs cbs = { on_part, on_data, on_end };

/* Append p[0..n) to the log, NUL-terminated. */
static void
rec_add(struct rec *r, const char *p, size_t n)
{
	if (r->len + n + 1 > r->cap) {
		r->cap = (r->len + n + 1) * 2;
		if ((r->log = realloc(r->log, r->cap)) == NULL)
			abort();
	}
	memcpy(r->log + r->len, p, n);
	r->len += n;
	r->log[r->len] = '\0';
}

/* Count a callback; nonzero if this one must fail. */
static int
rec_hit(struct rec *r)
{
	r->calls++;
	if (r->fail_at > 0 && r->calls > r->fail_at)
		r->after_fail++;
	return r->fail_at > 0 && r->calls == r->fail_at;
}

/* Part callback: log P(name,filename,type). */
static int
on_part(const struct mp_part *pt, void *arg)
{
	struct rec *r = arg;

	if (rec_hit(r))
		return r->fail_rc;
	rec_add(r, "P(", 2);
	rec_add(r, pt->name, strlen(pt->name));
	rec_add(r, ",", 1);
	rec_add(r, pt->filename ? pt->filename : "~",
	    strlen(pt->filename ? pt->filename : "~"));
	rec_add(r, ",", 1);
	rec_add(r, pt->type ? pt->type : "~",
	    strlen(pt->type ? pt->type : "~"));
	rec_add(r, ")", 1);
	r->last = 'P';
	return 0;
}

/* Data callback: log D( once, then the bytes. */
static int
on_data(const char *p, size_t n, void *arg)
{
	struct rec *r = arg;

	if (n == 0)
		rec_add(r, "<EMPTY>", 7);	/* never allowed */
	if (rec_hit(r))
		return r->fail_rc;
	if (r->last != 'D')
		rec_add(r, "D(", 2);
	rec_add(r, p, n);
	r->last = 'D';
	r->ndata++;
	r->bytes += n;
	return 0;
}

/* End callback: close D( if open, log E;. */
static int
on_end(void *arg)
{
	struct rec *r = arg;

	if (rec_hit(r))
		return r->fail_rc;
	if (r->last == 'D')
		rec_add(r, ")", 1);
	rec_add(r, "E;", 2);
	r->last = 'E';
	return 0;
}

/*
 * Parse body[0..n) with boundary b, split as told (SPLIT_WHOLE,
 * SPLIT_BYTES, or pieces of 1..64 bytes from seed).  r may carry a
 * failure to inject; NULL for none.
 */
static struct res
parse(const char *b, const char *body, size_t n, unsigned split,
    struct rec *r)
{
	struct rec local;
	struct res res;
	struct mp *mp;
	size_t i = 0, k;
	unsigned x = split;
	int rc = 0;

	memset(&local, 0, sizeof(local));
	if (r == NULL)
		r = &local;
	rec_add(r, "", 0);
	if ((mp = mp_new(b, &cbs, r)) == NULL)
		abort();
	while (i < n) {
		if (split == SPLIT_WHOLE)
			k = n;
		else if (split == SPLIT_BYTES)
			k = 1;
		else {
			x = x * 1103515245 + 12345;
			k = 1 + (x >> 16) % 64;
		}
		if (k > n - i)
			k = n - i;
		rc = mp_feed(mp, body + i, k);
		i += k;
		if (rc != 0)
			break;
	}
	res.feed_rc = rc;
	res.finish_rc = mp_finish(mp);
	/* Sticky: an error is returned again. */
	if (rc != 0 && mp_feed(mp, "x", 1) != rc)
		res.feed_rc = 12345;
	snprintf(res.err, sizeof(res.err), "%s", mp_error(mp));
	res.log = r->log;
	res.loglen = r->len;
	res.ndata = r->ndata;
	mp_free(mp);
	return res;
}

/* Free what parse() returned. */
static void
res_free(struct res *res)
{
	free(res->log);
}

/*
 * Parse body every way; each must log want[0..wl) and end with finish_rc
 * (feed errors are reported by finish too, being sticky).
 */
static void
check_all_splits(const char *b, const char *body, size_t n,
    const char *want, size_t wl, int finish_rc)
{
	static const unsigned splits[] = { SPLIT_WHOLE, SPLIT_BYTES, 7, 99,
	    1234, 777777 };
	struct res res;

	for (size_t s = 0; s < sizeof(splits) / sizeof(splits[0]); s++) {
		res = parse(b, body, n, splits[s], NULL);
		if (res.loglen != wl || memcmp(res.log, want, wl) != 0) {
			t_fail_ = 1;
			fprintf(stderr, "  split %u: log\n    %s\n  expected\n"
			    "    %s\n", splits[s], res.log, want);
		}
		T_EQ_INT(res.finish_rc, finish_rc);
		res_free(&res);
	}
}

/* check_all_splits() on a C string. */
static void
check_str(const char *b, const char *body, const char *want, int rc)
{
	check_all_splits(b, body, strlen(body), want, strlen(want), rc);
}

#define UNDICI_B	"----formdata-undici-014022592349"
#define UNDICI_BODY \
	"--" UNDICI_B "\r\n" \
	"Content-Disposition: form-data; name=\"metadata\"; " \
	"filename=\"metadata\"\r\n" \
	"Content-Type: application/json\r\n" \
	"\r\n" \
	"{\"path\":\"/tmp/x/a.txt\",\"mode\":644}\r\n" \
	"--" UNDICI_B "\r\n" \
	"Content-Disposition: form-data; name=\"file\"; " \
	"filename=\"a.txt\"\r\n" \
	"Content-Type: text/plain; charset=utf-8\r\n" \
	"\r\n" \
	"hello world\r\n" \
	"--" UNDICI_B "--\r\n"
#define UNDICI_LOG \
	"P(metadata,metadata,application/json)" \
	"D({\"path\":\"/tmp/x/a.txt\",\"mode\":644})E;" \
	"P(file,a.txt,text/plain; charset=utf-8)D(hello world)E;"

/* JS in-memory upload (undici FormData), one file per request. */
static void
test_undici(void)
{
	check_str(UNDICI_B, UNDICI_BODY, UNDICI_LOG, 0);
}

/* JS streaming upload: the same parts, its own boundary, binary bytes. */
static void
test_js_stream(void)
{
	static const char b[] = "opensandbox_5f1e9c2ab3d04e7f_1718000000123";
	static const char data[] = "\x00\x01\r\n--\r\n-\xff\r\r\n\r\n"
	    "--opensandbox_5f1e9c2ab3d04e7f_171800000012";
	char body[1024], want[1024];
	size_t n = 0, w = 0, dl = sizeof(data) - 1;

	n += (size_t)snprintf(body + n, sizeof(body) - n, "--%s\r\n"
	    "Content-Disposition: form-data; name=\"metadata\"; "
	    "filename=\"metadata\"\r\n"
	    "Content-Type: application/json\r\n\r\n"
	    "{\"path\":\"/tmp/s/b.bin\"}\r\n--%s\r\n"
	    "Content-Disposition: form-data; name=\"file\"; "
	    "filename=\"b.bin\"\r\n"
	    "Content-Type: application/octet-stream\r\n\r\n", b, b);
	memcpy(body + n, data, dl);
	n += dl;
	n += (size_t)snprintf(body + n, sizeof(body) - n, "\r\n--%s--\r\n",
	    b);
	w += (size_t)snprintf(want, sizeof(want), "P(metadata,metadata,"
	    "application/json)D({\"path\":\"/tmp/s/b.bin\"})E;"
	    "P(file,b.bin,application/octet-stream)D(");
	memcpy(want + w, data, dl);
	w += dl;
	memcpy(want + w, ")E;", 3);
	check_all_splits(b, body, n, want, w + 3, 0);
}

/* Python write_files: N metadata/file pairs in one request. */
static void
test_python_pairs(void)
{
	static const char b[] = "7b1c6c0d5e8f4a2b9c3d1e0f2a4b6c8d";
	char body[4096], want[4096];
	size_t n = 0, w = 0;

	for (int k = 1; k <= 3; k++) {
		n += (size_t)snprintf(body + n, sizeof(body) - n, "--%s\r\n"
		    "Content-Disposition: form-data; name=\"metadata\"; "
		    "filename=\"metadata\"\r\n"
		    "Content-Type: application/json\r\n\r\n"
		    "{\"path\": \"/tmp/p/%d.txt\", \"owner\": null, "
		    "\"group\": null, \"mode\": 755}\r\n"
		    "--%s\r\n"
		    "Content-Disposition: form-data; name=\"file\"; "
		    "filename=\"/tmp/p/%d.txt\"\r\n"
		    "Content-Type: text/plain\r\n\r\n"
		    "line one of %d\nline two\n\r\n", b, k, b, k, k);
		w += (size_t)snprintf(want + w, sizeof(want) - w,
		    "P(metadata,metadata,application/json)"
		    "D({\"path\": \"/tmp/p/%d.txt\", \"owner\": null, "
		    "\"group\": null, \"mode\": 755})E;"
		    "P(file,/tmp/p/%d.txt,text/plain)"
		    "D(line one of %d\nline two\n)E;", k, k, k);
	}
	snprintf(body + n, sizeof(body) - n, "--%s--\r\n", b);
	check_str(b, body, want, 0);
}

/* Boundary text that is not a delimiter stays data. */
static void
test_lookalikes(void)
{
	check_str("B", "--B\r\n\r\n"
	    "a--B x\n--B\r\n\r\n--Bx\r\n--B-y\r\n--\r\r\n-"
	    "\r\n--B--",
	    "P(,~,~)D(a--B x\n--B\r\n\r\n--Bx\r\n--B-y\r\n--\r\r\n-)E;", 0);
	/* A body starting with a look-alike. */
	check_str("B", "--B\r\n\r\n--Bx\r\n--B--",
	    "P(,~,~)D(--Bx)E;", 0);
	check_str("B", "--B\r\n\r\n--B-x\r\n--B--",
	    "P(,~,~)D(--B-x)E;", 0);
	check_str("B", "--B\r\n\r\n-\r\n--B--", "P(,~,~)D(-)E;", 0);
	/* The boundary with a longer one sharing its prefix. */
	check_str("abc", "--abc\r\n\r\n\r\n--abcd\r\n--abc--",
	    "P(,~,~)D(\r\n--abcd)E;", 0);
}

/* 64 KiB of pseudo-random bytes, delimiter-like runs sprinkled in. */
static void
test_binary(void)
{
	static const char b[] = "XyZ0";
	size_t dl = 65536, n, w;
	char *body = malloc(dl + 256), *want = malloc(dl + 256);
	unsigned x = 42;

	if (body == NULL || want == NULL)
		abort();
	n = (size_t)snprintf(body, 256, "--%s\r\n\r\n", b);
	w = (size_t)snprintf(want, 256, "P(,~,~)D(");
	for (size_t k = 0; k < dl; k++) {
		x = x * 1103515245 + 12345;
		body[n + k] = (char)(x >> 16);
		if (k % 997 == 0 && k + 8 < dl) {
			memcpy(body + n + k, "\r\n--XyZ", 7);
			k += 6;
		}
	}
	T_OK(memmem(body + n, dl, "\r\n--XyZ0", 8) == NULL);
	memcpy(want + w, body + n, dl);
	w += dl;
	memcpy(want + w, ")E;", 3);
	n += dl;
	n += (size_t)snprintf(body + n, 256, "\r\n--%s--", b);
	check_all_splits(b, body, n, want, w + 3, 0);
	free(body);
	free(want);
}

/* Empty parts, preamble, epilogue, padding, bare LF. */
static void
test_shapes(void)
{
	check_str("B", "--B\r\n\r\n\r\n--B--", "P(,~,~)E;", 0);
	check_str("B", "--B\r\nContent-Disposition: form-data; name=\"e\"\r\n"
	    "\r\n--B--", "P(e,~,~)E;", 0);
	check_str("B", "--B\r\n\r\n\r\n--B\r\n\r\n\r\n--B--",
	    "P(,~,~)E;P(,~,~)E;", 0);
	check_str("B", "--B--", "", 0);
	check_str("B", "--B--\r\n", "", 0);
	check_str("B", "This is the preamble.\r\n--B is not it\r\n"
	    "--Bx neither\r\n--B\r\n\r\ndata\r\n--B--\r\nepilogue --B\r\n"
	    "junk", "P(,~,~)D(data)E;", 0);
	check_str("B", "preamble\n--B\r\n\r\ndata\r\n--B--",
	    "P(,~,~)D(data)E;", 0);
	check_str("B", "--B \t \r\n\r\nx\r\n--B\t\r\n\r\ny\r\n--B--",
	    "P(,~,~)D(x)E;P(,~,~)D(y)E;", 0);
	check_str("B", "--B\nContent-Disposition: form-data; name=\"a\"\n"
	    "Content-Type: text/plain\n\nDATA\r\n--B\n\nmore\r\n--B--\n",
	    "P(a,~,text/plain)D(DATA)E;P(,~,~)D(more)E;", 0);
	/* A lone LF in a body is data, CRLF is required. */
	check_str("B", "--B\r\n\r\nx\n--B\r\n--B--",
	    "P(,~,~)D(x\n--B)E;", 0);
}

/* Header names and Content-Disposition parameters. */
static void
test_headers(void)
{
	check_str("B", "--B\r\nContent-Type: text/plain\r\n\r\nx\r\n--B--",
	    "P(,~,text/plain)D(x)E;", 0);
	check_str("B", "--B\r\nContent-Disposition: form-data\r\n\r\n"
	    "\r\n--B--", "P(,~,~)E;", 0);
	check_str("B", "--B\r\nContent-Disposition: form-data; name=file; "
	    "filename=a.txt\r\n\r\n\r\n--B--", "P(file,a.txt,~)E;", 0);
	check_str("B", "--B\r\nContent-Disposition: form-data; "
	    "name=\"a\\\"b\"; filename=\"c\\\\d;e\"\r\n\r\n\r\n--B--",
	    "P(a\"b,c\\d;e,~)E;", 0);
	check_str("B", "--B\r\nContent-Disposition: form-data; "
	    "filename*=UTF-8''%E2%82%AC; name=\"x\"\r\n\r\n\r\n--B--",
	    "P(x,~,~)E;", 0);
	check_str("B", "--B\r\ncontent-DISPOSITION:FORM-DATA;NAME=\"Q\";"
	    "FileName=\"\"\r\nCONTENT-TYPE:   a/b  \r\n\r\n\r\n--B--",
	    "P(Q,,a/b)E;", 0);
	check_str("B", "--B\r\nContent-Disposition: form-data;\r\n"
	    " name=\"fold\"\r\n\r\n\r\n--B--", "P(fold,~,~)E;", 0);
	check_str("B", "--B\r\nContent-Disposition: form-data; name=\"1\"; "
	    "name=\"2\"; junk; =x; filename=\"f\r\n\r\n\r\n--B--",
	    "P(1,f,~)E;", 0);
	check_str("B", "--B\r\nContent-Disposition: form-data; name=\"1\"\r\n"
	    "Content-Disposition: form-data; name=\"2\"\r\n"
	    "X-Other: y\r\n\r\n\r\n--B--", "P(1,~,~)E;", 0);
}

/* Malformed bodies: -EINVAL with a message, sticky. */
static void
test_malformed(void)
{
	struct res res;

	check_str("B", "--B\r\ngarbage\r\n\r\nx\r\n--B--", "", -EINVAL);
	check_str("B", "--B\r\n: empty name\r\n\r\n\r\n--B--", "", -EINVAL);
	check_str("B", "--B\r\nBad Name: x\r\n\r\n\r\n--B--", "", -EINVAL);
	check_str("B", "--B\r\n continued: x\r\n\r\n\r\n--B--", "",
	    -EINVAL);
	check_str("B", "--B\r\n\r\n\r\n--B junk\r\n\r\n\r\n--B--",
	    "P(,~,~)E;", -EINVAL);
	check_str("B", "--B\r\rx", "", -EINVAL);
	/* The first part was reported before the second failed. */
	check_str("B", "--B\r\n\r\na\r\n--B \r\nx\r\n--B--",
	    "P(,~,~)D(a)E;", -EINVAL);

	res = parse("B", "--B\r\nnocolon\r\n\r\n", 17, SPLIT_WHOLE, NULL);
	T_EQ_INT(res.feed_rc, -EINVAL);
	T_EQ_STR(res.err, "malformed MIME header line");
	res_free(&res);
	res = parse("B", "--B\r\n\na\r\n--B junk", 17, SPLIT_BYTES, NULL);
	T_EQ_INT(res.feed_rc, -EINVAL);
	T_EQ_STR(res.err, "malformed multipart delimiter line");
	res_free(&res);
	/* In the preamble such a line is preamble. */
	res = parse("B", "--B junk", 8, SPLIT_BYTES, NULL);
	T_EQ_INT(res.feed_rc, 0);
	T_EQ_STR(res.err, "multipart body is truncated");
	res_free(&res);
}

/* Every proper prefix of a body is truncated; the whole is not. */
static void
test_truncated(void)
{
	const char *body = UNDICI_BODY;
	size_t n = strlen(body), close_end;
	struct res res;

	close_end = (size_t)(strstr(body, UNDICI_B "--") - body) +
	    strlen(UNDICI_B "--");
	for (size_t k = 0; k <= n; k++) {
		res = parse(UNDICI_B, body, k, (unsigned)k, NULL);
		T_EQ_INT(res.feed_rc, 0);
		T_EQ_INT(res.finish_rc, k >= close_end ? 0 : -EINVAL);
		if (k < close_end)
			T_EQ_STR(res.err, "multipart body is truncated");
		else
			T_EQ_STR(res.err, "");
		res_free(&res);
	}
	res = parse("B", "", 0, SPLIT_WHOLE, NULL);
	T_EQ_INT(res.finish_rc, -EINVAL);
	res_free(&res);
	res = parse("B", "no delimiter at all", 19, SPLIT_WHOLE, NULL);
	T_EQ_INT(res.finish_rc, -EINVAL);
	T_EQ_STR(res.log, "");
	res_free(&res);
}

/* The header block: 16384 bytes are fine, one more is -E2BIG. */
static void
test_header_cap(void)
{
	size_t pre = strlen("--B\r\n"), n;
	char *body = malloc(MP_HDR_MAX + 64);
	struct res res;

	if (body == NULL)
		abort();
	/* "X: " pad "\r\n" "\r\n" is exactly MP_HDR_MAX bytes. */
	memcpy(body, "--B\r\nX: ", pre + 3);
	memset(body + pre + 3, 'p', MP_HDR_MAX - 3 - 4);
	n = pre + MP_HDR_MAX - 4;
	memcpy(body + n, "\r\n\r\nx\r\n--B--", 12);
	n += 12;
	res = parse("B", body, n, SPLIT_WHOLE, NULL);
	T_EQ_INT(res.finish_rc, 0);
	T_EQ_STR(res.log, "P(,~,~)D(x)E;");
	res_free(&res);
	res = parse("B", body, n, 5, NULL);
	T_EQ_INT(res.finish_rc, 0);
	res_free(&res);

	/* One more byte of padding. */
	memmove(body + pre + 4, body + pre + 3, n - pre - 3);
	n++;
	for (unsigned s = 0; s < 3; s++) {
		res = parse("B", body, n, s, NULL);
		T_EQ_INT(res.feed_rc, -E2BIG);
		T_EQ_INT(res.finish_rc, -E2BIG);
		T_EQ_STR(res.err, "multipart header block over 16 KiB");
		T_EQ_STR(res.log, "");
		res_free(&res);
	}
	/* Many short lines add up too. */
	n = (size_t)snprintf(body, 8, "--B\r\n");
	while (n < MP_HDR_MAX + 16)
		n += (size_t)snprintf(body + n, 32, "X-A: b\r\n");
	res = parse("B", body, n, SPLIT_WHOLE, NULL);
	T_EQ_INT(res.feed_rc, -E2BIG);
	res_free(&res);
	free(body);
}

/* A callback's error stops the parser and comes back from every call. */
static void
test_callback_errors(void)
{
	static const struct { int at, rc, want; } v[] = {
		{ 1, -EFBIG, -EFBIG },		/* the first part */
		{ 2, -ENOSPC, -ENOSPC },	/* its data */
		{ 3, -EIO, -EIO },		/* its end */
		{ 4, -EPERM, -EPERM },		/* the second part */
		{ 6, 1, -ECANCELED },		/* positive: canceled */
	};
	struct rec r;
	struct res res;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		for (unsigned s = 0; s < 3; s++) {
			memset(&r, 0, sizeof(r));
			r.fail_at = v[i].at;
			r.fail_rc = v[i].rc;
			res = parse(UNDICI_B, UNDICI_BODY, strlen(UNDICI_BODY),
			    s, &r);
			T_EQ_INT(res.feed_rc, v[i].want);
			T_EQ_INT(res.finish_rc, v[i].want);
			T_EQ_INT(r.after_fail, 0);
			T_EQ_STR(res.err, "stopped by a callback");
			res_free(&res);
		}
	}
}

/*
 * Large pieces give large runs; small pieces are not held back beyond
 * the delimiter's length plus 4 bytes.
 */
static void
test_runs_and_holdback(void)
{
	static const char b[] = "bnd";
	size_t dl = 200000, n, fed, body_start, dlen = 4 + strlen(b);
	char *body = malloc(dl + 64);
	struct rec r;
	struct mp *mp;
	struct res res;

	if (body == NULL)
		abort();
	n = body_start = (size_t)snprintf(body, 64, "--%s\r\n\r\n", b);
	for (size_t k = 0; k < dl; k++)
		body[n + k] = "ab\r\n--bn"[k % 8];
	n += dl;
	n += (size_t)snprintf(body + n, 64, "\r\n--%s--", b);

	res = parse(b, body, n, SPLIT_WHOLE, NULL);
	T_EQ_INT(res.finish_rc, 0);
	/* One run per CR at most: 25000 CRs in the data. */
	T_OK(res.ndata <= 25001);
	res_free(&res);

	memset(&r, 0, sizeof(r));
	if ((mp = mp_new(b, &cbs, &r)) == NULL)
		abort();
	for (fed = 0; fed < n; fed += 5) {
		T_EQ_INT(mp_feed(mp, body + fed, fed + 5 <= n ? 5 : n - fed),
		    0);
		if (fed + 5 > body_start && fed + 5 < body_start + dl)
			T_OK(r.bytes + dlen + 4 >= fed + 5 - body_start);
	}
	T_EQ_INT(mp_finish(mp), 0);
	T_EQ_INT(r.bytes, dl);
	mp_free(mp);
	free(r.log);

	/* Plain data fed whole arrives in one callback. */
	memset(body + body_start, 'x', dl);
	res = parse(b, body, n, SPLIT_WHOLE, NULL);
	T_EQ_INT(res.finish_rc, 0);
	T_EQ_INT(res.ndata, 1);
	res_free(&res);
	free(body);
}

/* mp_boundary(): forms accepted and refused. */
static void
test_boundary(void)
{
	char out[MP_BOUNDARY_MAX + 1], b70[MP_BOUNDARY_MAX + 2], ct[200];

	T_EQ_INT(mp_boundary("multipart/form-data; boundary=" UNDICI_B, out,
	    sizeof(out)), 0);
	T_EQ_STR(out, UNDICI_B);
	T_EQ_INT(mp_boundary("Multipart/Form-Data; BOUNDARY=\"a b:c\"", out,
	    sizeof(out)), 0);
	T_EQ_STR(out, "a b:c");
	T_EQ_INT(mp_boundary("multipart/form-data; charset=utf-8; "
	    "boundary=xyz; x=\"y;z\"", out, sizeof(out)), 0);
	T_EQ_STR(out, "xyz");
	T_EQ_INT(mp_boundary("multipart/form-data;boundary=\"q\\\"x\"", out,
	    sizeof(out)), 0);
	T_EQ_STR(out, "q\"x");
	T_EQ_INT(mp_boundary("  multipart/form-data ; boundary = abc ;", out,
	    sizeof(out)), 0);
	T_EQ_STR(out, "abc");
	T_EQ_INT(mp_boundary("multipart/form-data; boundary=a; boundary=b",
	    out, sizeof(out)), 0);
	T_EQ_STR(out, "a");

	memset(b70, 'k', MP_BOUNDARY_MAX);
	b70[MP_BOUNDARY_MAX] = '\0';
	snprintf(ct, sizeof(ct), "multipart/form-data; boundary=%s", b70);
	T_EQ_INT(mp_boundary(ct, out, sizeof(out)), 0);
	T_EQ_STR(out, b70);
	strcpy(out, "untouched");
	T_EQ_INT(mp_boundary(ct, out, MP_BOUNDARY_MAX), -EINVAL);
	T_EQ_STR(out, "untouched");
	strcat(ct, "k");
	T_EQ_INT(mp_boundary(ct, out, sizeof(out)), -EINVAL);

	T_EQ_INT(mp_boundary("multipart/mixed; boundary=x", out,
	    sizeof(out)), -EINVAL);
	T_EQ_INT(mp_boundary("multipart/form-data", out, sizeof(out)),
	    -EINVAL);
	T_EQ_INT(mp_boundary("multipart/form-data; boundary=", out,
	    sizeof(out)), -EINVAL);
	T_EQ_INT(mp_boundary("multipart/form-data; boundary=\"\"", out,
	    sizeof(out)), -EINVAL);
	T_EQ_INT(mp_boundary("multipart/form-data; boundary", out,
	    sizeof(out)), -EINVAL);
	T_EQ_INT(mp_boundary("multipart/form-data; boundary=\"a\tb\"", out,
	    sizeof(out)), -EINVAL);
	T_EQ_INT(mp_boundary("application/json", out, sizeof(out)),
	    -EINVAL);
	T_EQ_INT(mp_boundary("", out, sizeof(out)), -EINVAL);
	T_EQ_INT(mp_boundary("multipart/form-data-x; boundary=a", out,
	    sizeof(out)), -EINVAL);
	T_EQ_STR(out, "untouched");
}

/* mp_new() refuses boundaries no delimiter could carry. */
static void
test_new_refuses(void)
{
	char b71[MP_BOUNDARY_MAX + 2];
	struct mp *mp;

	memset(b71, 'a', MP_BOUNDARY_MAX + 1);
	b71[MP_BOUNDARY_MAX + 1] = '\0';
	errno = 0;
	T_OK(mp_new("", &cbs, NULL) == NULL && errno == EINVAL);
	errno = 0;
	T_OK(mp_new(b71, &cbs, NULL) == NULL && errno == EINVAL);
	errno = 0;
	T_OK(mp_new("a\r\nb", &cbs, NULL) == NULL && errno == EINVAL);
	b71[MP_BOUNDARY_MAX] = '\0';
	T_OK((mp = mp_new(b71, NULL, NULL)) != NULL);
	if (mp == NULL)
		return;
	/* No callbacks at all is fine. */
	T_EQ_INT(mp_feed(mp, "--", 2), 0);
	T_EQ_INT(mp_feed(mp, b71, MP_BOUNDARY_MAX), 0);
	T_EQ_INT(mp_feed(mp, "\r\n\r\nzz\r\n--", 10), 0);
	T_EQ_INT(mp_feed(mp, b71, MP_BOUNDARY_MAX), 0);
	T_EQ_INT(mp_feed(mp, "--", 2), 0);
	T_EQ_INT(mp_finish(mp), 0);
	T_EQ_STR(mp_error(mp), "");
	mp_free(mp);
	mp_free(NULL);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "mp_undici", test_undici },
		{ "mp_js_stream", test_js_stream },
		{ "mp_python_pairs", test_python_pairs },
		{ "mp_lookalikes", test_lookalikes },
		{ "mp_binary", test_binary },
		{ "mp_shapes", test_shapes },
		{ "mp_headers", test_headers },
		{ "mp_malformed", test_malformed },
		{ "mp_truncated", test_truncated },
		{ "mp_header_cap", test_header_cap },
		{ "mp_callback_errors", test_callback_errors },
		{ "mp_runs_and_holdback", test_runs_and_holdback },
		{ "mp_boundary", test_boundary },
		{ "mp_new_refuses", test_new_refuses },
	};

	return T_RUN(cases);
}
