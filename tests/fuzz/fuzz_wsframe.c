/*
 * fuzz_wsframe.c -- fuzz target for the RFC 6455 codec (wsframe.c).
 *
 * Input: byte 0 picks the role (bit 0: a server's decoder, which wants
 * masked frames, else a client's) and byte 1 the piece size the rest is
 * fed in (1 to 64 bytes, each piece copied to a buffer of exactly its
 * size, so a sanitizer sees any read past it).  Invariants checked, any
 * break aborts:
 *  - a call takes no more than it was given, and all of it unless it
 *    returns an event; it returns 1, 0 or -EPROTO and nothing else;
 *  - a failure is 1002, 1007 or 1009, and a failed decoder stays failed
 *    and takes nothing;
 *  - events are messages, pings, pongs or closes; text is UTF-8, a
 *    message fits max_msg, a control payload 125 bytes, a close's code
 *    is one a peer may send (or "none", with no reason) and its reason
 *    is UTF-8;
 *  - fed whole or in pieces, the input gives the same events and the
 *    same failure;
 *  - the events, encoded again as frames of the same role (messages cut
 *    into fragments at input-chosen sizes, even inside a character),
 *    decode back to the same events with no failure.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../execd/transport/wsframe.h"
#include "fz.h"

#define MAX_MSG		4096
#define MAX_FRAME	1024

/* An event, with its payload copied. */
struct rec {
	int		 op;
	uint16_t	 code;
	size_t		 n;
	uint8_t		*p;
};

struct log {
	struct rec	*r;
	size_t		 n, cap;
	int		 err;		/* close code of the failure, or 0 */
};

static void	log_add(struct log *, const struct wsframe_ev *);
static void	log_free(struct log *);
static void	check_ev(const struct wsframe_ev *);
static void	run(bool, const uint8_t *, size_t, size_t, struct log *);
static bool	same(const struct log *, const struct log *);
static void	put(bool, uint8_t **, size_t *, size_t *, int, bool,
		    const uint8_t *, size_t, const uint8_t *);
static size_t	encode(bool, const struct log *, const uint8_t *, size_t,
		    uint8_t **);

static void
log_add(struct log *l, const struct wsframe_ev *ev)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->r = realloc(l->r, l->cap * sizeof(*l->r));
		CHECK(l->r != NULL);
	}
	l->r[l->n].op = ev->op;
	l->r[l->n].code = ev->code;
	l->r[l->n].n = ev->n;
	l->r[l->n].p = malloc(ev->n > 0 ? ev->n : 1);
	CHECK(l->r[l->n].p != NULL);
	if (ev->n > 0)
		memcpy(l->r[l->n].p, ev->p, ev->n);
	l->n++;
}

static void
log_free(struct log *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->r[i].p);
	free(l->r);
}

/* What any event must be. */
static void
check_ev(const struct wsframe_ev *ev)
{
	switch (ev->op) {
	case WSFRAME_TEXT:
		CHECK(fz_utf8((const char *)ev->p, ev->n));
		/* FALLTHROUGH */
	case WSFRAME_BINARY:
		CHECK(ev->n <= MAX_MSG);
		break;
	case WSFRAME_PING:
	case WSFRAME_PONG:
		CHECK(ev->n <= WSFRAME_CONTROL_MAX);
		break;
	case WSFRAME_CLOSE:
		CHECK(ev->n <= WSFRAME_CONTROL_MAX - 2);
		if (ev->code == WSFRAME_NO_STATUS)
			CHECK(ev->n == 0);
		else
			CHECK(wsframe_close_code_ok(ev->code));
		CHECK(fz_utf8((const char *)ev->p, ev->n));
		break;
	default:
		CHECK(!"unknown event");
	}
	CHECK(ev->n == 0 || ev->p != NULL);
}

/* Decode p (n bytes) in pieces of step bytes (0: whole) into l. */
static void
run(bool server, const uint8_t *p, size_t n, size_t step, struct log *l)
{
	struct wsframe_dec d;
	struct wsframe_ev ev;
	size_t off = 0, piece, used, at;
	uint8_t *buf;
	int rc;

	wsframe_dec_init(&d, server, MAX_FRAME, MAX_MSG);
	while (off < n) {
		piece = step == 0 || n - off < step ? n - off : step;
		buf = malloc(piece);
		CHECK(buf != NULL);
		memcpy(buf, p + off, piece);
		for (at = 0; at < piece; at += used) {
			rc = wsframe_dec_feed(&d, buf + at, piece - at, &used,
			    &ev);
			CHECK(used <= piece - at);
			if (rc == 1) {
				check_ev(&ev);
				log_add(l, &ev);
				continue;
			}
			if (rc == 0) {
				CHECK(used == piece - at);
				continue;
			}
			CHECK(rc == -EPROTO);
			l->err = wsframe_dec_error(&d);
			CHECK(l->err == WSFRAME_E_PROTOCOL ||
			    l->err == WSFRAME_E_UTF8 ||
			    l->err == WSFRAME_E_TOO_BIG);
			rc = wsframe_dec_feed(&d, buf, piece, &used, &ev);
			CHECK(rc == -EPROTO && used == 0);
			CHECK(wsframe_dec_error(&d) == l->err);
			free(buf);
			goto out;
		}
		free(buf);
		off += piece;
	}
	CHECK(wsframe_dec_error(&d) == 0);
out:
	wsframe_dec_reset(&d);
}

/* Whether two logs hold the same events and failure. */
static bool
same(const struct log *a, const struct log *b)
{
	if (a->n != b->n || a->err != b->err)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->r[i].op != b->r[i].op || a->r[i].code != b->r[i].code ||
		    a->r[i].n != b->r[i].n ||
		    memcmp(a->r[i].p, b->r[i].p, a->r[i].n) != 0)
			return false;
	return true;
}

/* Append one frame (masked for a server's decoder) to *out. */
static void
put(bool server, uint8_t **out, size_t *len, size_t *cap, int op, bool fin,
    const uint8_t *p, size_t n, const uint8_t *mask)
{
	size_t h;

	if (*len + WSFRAME_HDR_MAX + n > *cap) {
		*cap = (*len + WSFRAME_HDR_MAX + n) * 2;
		*out = realloc(*out, *cap);
		CHECK(*out != NULL);
	}
	h = wsframe_hdr_encode(*out + *len, op, fin, n, server ? mask : NULL);
	CHECK(h >= 2 && h <= WSFRAME_HDR_MAX);
	if (n > 0)
		memcpy(*out + *len + h, p, n);
	if (server)
		wsframe_mask(*out + *len + h, n, mask, 0);
	*len += h + n;
}

/*
 * The events of l as frames into *out (the caller frees it); message
 * fragments are cut at sizes taken from key.  Returns the length.
 */
static size_t
encode(bool server, const struct log *l, const uint8_t *key, size_t nkey,
    uint8_t **out)
{
	uint8_t mask[4] = { 0, 0, 0, 0 }, pl[WSFRAME_CONTROL_MAX];
	size_t len = 0, cap = 0, ki = 0, off, cut, n;
	const struct rec *r;
	bool first;

	*out = NULL;
	for (size_t i = 0; i < l->n; i++) {
		r = &l->r[i];
		if (nkey > 0)
			for (int k = 0; k < 4; k++)
				mask[k] = key[(ki + (size_t)k) % nkey];
		if (r->op == WSFRAME_CLOSE) {
			n = 0;
			if (r->code != WSFRAME_NO_STATUS) {
				pl[0] = (uint8_t)(r->code >> 8);
				pl[1] = (uint8_t)r->code;
				memcpy(pl + 2, r->p, r->n);
				n = r->n + 2;
			}
			put(server, out, &len, &cap, r->op, true, pl, n, mask);
			continue;
		}
		if (r->op != WSFRAME_TEXT && r->op != WSFRAME_BINARY) {
			put(server, out, &len, &cap, r->op, true, r->p, r->n,
			    mask);
			continue;
		}
		/*
		 * Fragments of 1 to 255 bytes (the first may be empty), so
		 * that each fits the decoder's MAX_FRAME: a key byte of 0 on
		 * a later fragment means 1, never the whole remainder.
		 */
		off = 0;
		first = true;
		do {
			cut = nkey > 0 ? key[ki++ % nkey] : MAX_FRAME;
			if (cut == 0 && !first)
				cut = 1;
			if (cut > r->n - off)
				cut = r->n - off;
			CHECK(cut <= MAX_FRAME);
			put(server, out, &len, &cap, first ? r->op :
			    WSFRAME_CONT, off + cut == r->n, r->p + off, cut,
			    mask);
			first = false;
			off += cut;
		} while (off < r->n);
	}
	return len;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct log whole = { 0 }, parts = { 0 }, again = { 0 };
	uint8_t *enc;
	size_t step, n;
	bool server;

	if (size < 2)
		return 0;
	server = (data[0] & 1) != 0;
	step = 1 + data[1] % 64;
	data += 2;
	size -= 2;

	run(server, data, size, 0, &whole);
	run(server, data, size, step, &parts);
	CHECK(same(&whole, &parts));

	n = encode(server, &whole, data, size, &enc);
	run(server, enc, n, 0, &again);
	CHECK(again.err == 0);		/* what we encode is all valid */
	again.err = whole.err;
	CHECK(same(&whole, &again));
	free(enc);

	log_free(&again);
	log_free(&parts);
	log_free(&whole);
	return 0;
}
