/*
 * fuzz_kp_wire.c -- fuzz target for kp_wire_decode() and kp_wire_encode().
 *
 * Input format: the first byte is a mode, the rest is split on '\n' into
 * frames (k newlines make k + 1 frames).  Mode bit 0 selects the fixed
 * key below (else the empty key); bits 1-3 give max_frame = 32 << n, so
 * 'k' is keyed with 1024 and 'n' unkeyed with 4096.  The seeds are written
 * by tests/unit/data/hmac/make_vectors.py, which knows this format.
 *
 * Each frame is copied to its own exact-size allocation, so a sanitizer
 * sees any over-read.  The result must agree with a model of kp_wire.h's
 * rules, applied in the documented order: any frame over max_frame is
 * EBIG, then no delimiter EDELIM, fewer than five frames after it ESHORT,
 * then (keyed) a signature that is not the 64-digit HMAC in either case
 * ESIG.  A failure leaves *out alone and gives a reason.  A success must
 * keep identities and buffers byte for byte, re-encode to the same frame
 * layout with a correct signature, decode again to equal JSON, and encode
 * a second time to identical bytes.  A broken invariant aborts.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../kernelproto/kp_wire.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)

/* The 64-digit key of make_vectors.py, which signs the seeds. */
#define KEY	"9fc4734ec88353f206bd76a4e3d3eb6c" \
		"c15e3d2c2b015bfa0c084315ca6dc0ee"
#define MAXF	64	/* more frames than this: input ignored */

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int	 model(const struct kp_part *, size_t, const unsigned char *,
		    size_t, size_t, size_t *);
static int	 same(const void *, size_t, const void *, size_t);
static int	 parts_ok(const struct kp_part *);
static void	 check_success(const struct kp_part *, size_t, size_t,
		    struct kp_msg *, const unsigned char *, size_t);

/* Whether a[0..an) and b[0..bn) are the same bytes. */
static int
same(const void *a, size_t an, const void *b, size_t bn)
{
	return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

/* Whether the four parts all read as JSON objects. */
static int
parts_ok(const struct kp_part *f)
{
	json_error_t e;
	json_t *v;
	int ok = 1;

	for (size_t i = 0; i < 4 && ok; i++) {
		v = f[i].n > 0 ? json_loadb(f[i].p, f[i].n, JSON_ALLOW_NUL,
		    &e) : NULL;
		ok = json_is_object(v);
		json_decref(v);
	}
	return ok;
}

/* Whether a part has bytes the decoder's text repair could change. */
static int
repairable(const struct kp_part *f)
{
	for (size_t i = 0; i < 4; i++) {
		const unsigned char *p = f[i].p;

		for (size_t j = 0; j < f[i].n; j++)
			if (p[j] >= 0x80 || (p[j] == '\\' && j + 1 < f[i].n &&
			    p[j + 1] == 'u'))
				return 1;
	}
	return 0;
}

/*
 * What kp_wire_decode must return before JSON is looked at: -KP_WIRE_E*,
 * or 0 when the message gets as far as parsing; *dp is the delimiter.
 */
static int
model(const struct kp_part *f, size_t n, const unsigned char *key,
    size_t keylen, size_t max, size_t *dp)
{
	char want[KP_SIG_HEXLEN + 1];
	const char *sig;
	size_t d;

	for (size_t i = 0; i < n; i++)
		if (f[i].n > max)
			return -KP_WIRE_EBIG;
	for (d = 0; d < n; d++)
		if (same(f[d].p, f[d].n, "<IDS|MSG>", 9))
			break;
	if (d == n)
		return -KP_WIRE_EDELIM;
	*dp = d;
	if (n - d - 1 < 5)
		return -KP_WIRE_ESHORT;
	if (keylen == 0)
		return 0;
	if (f[d + 1].n != KP_SIG_HEXLEN)
		return -KP_WIRE_ESIG;
	CHECK(kp_sign(key, keylen, f + d + 2, 4, want) == 0);
	sig = f[d + 1].p;
	for (size_t i = 0; i < KP_SIG_HEXLEN; i++)
		if (tolower((unsigned char)sig[i]) != want[i])
			return -KP_WIRE_ESIG;
	return 0;
}

/* The decoded message m against its frames, then re-encoded twice. */
static void
check_success(const struct kp_part *f, size_t n, size_t d, struct kp_msg *m,
    const unsigned char *key, size_t keylen)
{
	struct kp_frames a, b;
	struct kp_msg *back = NULL;
	char sig[KP_SIG_HEXLEN + 1], err[128];
	json_t *parts[4] = { m->header, m->parent, m->metadata, m->content };

	/* 1. What came in is what we hold. */
	CHECK(m->nidents == d);
	CHECK(m->nbuffers == n - d - 6);
	for (size_t i = 0; i < d; i++)
		CHECK(same(m->idents[i].p, m->idents[i].n, f[i].p, f[i].n));
	for (size_t i = 0; i < m->nbuffers; i++)
		CHECK(same(m->buffers[i].p, m->buffers[i].n, f[d + 6 + i].p,
		    f[d + 6 + i].n));
	for (size_t i = 0; i < 4; i++)
		CHECK(json_is_object(parts[i]));

	/* 2. Re-encoded: same layout, compact parts, a valid signature. */
	CHECK(kp_wire_encode(m, key, keylen, &a) == 0);
	CHECK(a.n == n);
	for (size_t i = 0; i < d; i++)
		CHECK(same(a.f[i].p, a.f[i].n, f[i].p, f[i].n));
	CHECK(same(a.f[d].p, a.f[d].n, "<IDS|MSG>", 9));
	CHECK(kp_sign(key, keylen, a.f + d + 2, 4, sig) == 0);
	CHECK(strcmp(sig, a.sig) == 0);
	CHECK(same(a.f[d + 1].p, a.f[d + 1].n, sig, strlen(sig)));
	for (size_t i = d + 6; i < n; i++)
		CHECK(same(a.f[i].p, a.f[i].n, f[i].p, f[i].n));

	/* 3. Decoded again (no size limit: compact output can be longer). */
	CHECK(kp_wire_decode(a.f, a.n, key, keylen, SIZE_MAX, &back, err,
	    sizeof(err)) == 0);
	CHECK(json_equal(back->header, m->header));
	CHECK(json_equal(back->parent, m->parent));
	CHECK(json_equal(back->metadata, m->metadata));
	CHECK(json_equal(back->content, m->content));
	CHECK(back->nidents == m->nidents && back->nbuffers == m->nbuffers);

	/* 4. A second encoding is byte-identical to the first. */
	CHECK(kp_wire_encode(back, key, keylen, &b) == 0);
	CHECK(b.n == a.n);
	for (size_t i = 0; i < n; i++)
		CHECK(same(a.f[i].p, a.f[i].n, b.f[i].p, b.f[i].n));

	/* 5. Another key never accepts a keyed message. */
	if (keylen > 0) {
		struct kp_msg *none = (struct kp_msg *)&none;

		CHECK(kp_wire_decode(a.f, a.n, (const unsigned char *)"x", 1,
		    SIZE_MAX, &none, err, sizeof(err)) == -KP_WIRE_ESIG);
		CHECK(none == (struct kp_msg *)&none);
	}
	kp_wire_frames_free(&b);
	kp_msg_free(back);
	kp_wire_frames_free(&a);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_part f[MAXF];
	void *own[MAXF];
	const unsigned char *key;
	const uint8_t *p, *end, *nl;
	struct kp_msg *m;
	char err[64];
	size_t n = 0, keylen, max, d = 0;
	int rc, want;

	if (size == 0)
		return 0;
	key = (data[0] & 1) ? (const unsigned char *)KEY : NULL;
	keylen = (data[0] & 1) ? strlen(KEY) : 0;
	max = (size_t)32 << ((data[0] >> 1) & 7);

	/* Split; each frame gets an allocation of exactly its size. */
	p = data + 1;
	end = data + size;
	for (;;) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (n == MAXF)
			goto out;
		f[n].n = (size_t)((nl != NULL ? nl : end) - p);
		if ((own[n] = malloc(f[n].n > 0 ? f[n].n : 1)) == NULL)
			abort();
		if (f[n].n > 0)
			memcpy(own[n], p, f[n].n);
		f[n].p = own[n];
		n++;
		if (nl == NULL)
			break;
		p = nl + 1;
	}

	want = model(f, n, key, keylen, max, &d);
	m = (struct kp_msg *)&m;
	memset(err, 0x5a, sizeof(err));
	rc = kp_wire_decode(f, n, key, keylen, max, &m, err, sizeof(err));
	if (want < 0) {
		if (rc != want)
			fprintf(stderr, "rc %d, model %d: %.*s\n", rc, want,
			    (int)sizeof(err), err);
		CHECK(rc == want);
	} else if (parts_ok(f + d + 2)) {
		CHECK(rc == 0);
	} else {
		/*
		 * Not strict JSON objects: refused, unless the only trouble
		 * was text (bad UTF-8, lone surrogates), which the decoder
		 * repairs with U+FFFD.
		 */
		CHECK(rc == -KP_WIRE_EJSON || (rc == 0 && repairable(f +
		    d + 2)));
	}
	if (rc < 0) {
		CHECK(m == (struct kp_msg *)&m);
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		CHECK(err[0] != '\0');
		goto out;
	}
	check_success(f, n, d, m, key, keylen);
	kp_msg_free(m);
out:
	for (size_t i = 0; i < n; i++)
		free(own[i]);
	return 0;
}
