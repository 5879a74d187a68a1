/*
 * wsframe.c -- RFC 6455 framing: the decoder's state machine and the
 * encoder's headers (see wsframe.h for why this is ours).
 *
 * The decoder reads a frame header a byte at a time into hdr[] (at most
 * 14 bytes), checks what the first two bytes already decide (reserved
 * bits, opcode, masking, control frame rules, continuation order) before
 * waiting for the rest, then copies the payload, unmasked, into the
 * message being reassembled or into the control frame buffer.  Text is
 * checked for UTF-8 as it arrives: every whole character up to nvalid is
 * known good, and a cut-off tail must be the start of a valid character.
 * No byte past the input is read, nothing is allocated past max_msg, and
 * a failed decoder stays failed.  This file knows nothing of sockets.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/utf8.h"
#include "../core/xmalloc.h"
#include "wsframe.h"

#define DEFAULT_MAX	(16u * 1024 * 1024)
#define KEEP_CAP	(64 * 1024)	/* a message buffer kept between */

static size_t	hdr_need(const struct wsframe_dec *);
static int	check_first(struct wsframe_dec *);
static int	check_len(struct wsframe_dec *);
static int	take_payload(struct wsframe_dec *, const uint8_t *, size_t);
static int	finish(struct wsframe_dec *, struct wsframe_ev *);
static int	text_check(struct wsframe_dec *);
static bool	utf8_prefix(const uint8_t *, size_t);
static int	fail(struct wsframe_dec *, int);

/* Set up a decoder for a server or a client. */
void
wsframe_dec_init(struct wsframe_dec *d, bool server, size_t max_frame,
    size_t max_msg)
{
	memset(d, 0, sizeof(*d));
	d->server = server;
	d->max_frame = max_frame > 0 ? max_frame : DEFAULT_MAX;
	d->max_msg = max_msg > 0 ? max_msg : DEFAULT_MAX;
}

/* Free the message buffer; d is left zeroed. */
void
wsframe_dec_reset(struct wsframe_dec *d)
{
	free(d->msg);
	memset(d, 0, sizeof(*d));
}

/* The close code of the failure, or 0. */
int
wsframe_dec_error(const struct wsframe_dec *d)
{
	return d->err;
}

/* Remember the failure and report it. */
static int
fail(struct wsframe_dec *d, int code)
{
	d->err = code;
	return -EPROTO;
}

/* How many header bytes the frame has, as far as hdr[] tells yet. */
static size_t
hdr_need(const struct wsframe_dec *d)
{
	size_t need = 2, len7;

	if (d->nhdr < 2)
		return need;
	len7 = d->hdr[1] & 0x7f;
	if (len7 == 126)
		need += 2;
	else if (len7 == 127)
		need += 8;
	if (d->hdr[1] & 0x80)
		need += 4;
	return need;
}

/* What the first two bytes decide: 0 or the -EPROTO of fail(). */
static int
check_first(struct wsframe_dec *d)
{
	uint8_t b0 = d->hdr[0], b1 = d->hdr[1];
	int op = b0 & 0x0f;

	d->fin = (b0 & 0x80) != 0;
	d->op = op;
	d->masked = (b1 & 0x80) != 0;
	/* No extension was negotiated, so no reserved bit may be set. */
	if (b0 & 0x70)
		return fail(d, WSFRAME_E_PROTOCOL);
	if (op != WSFRAME_CONT && op != WSFRAME_TEXT && op != WSFRAME_BINARY &&
	    op != WSFRAME_CLOSE && op != WSFRAME_PING && op != WSFRAME_PONG)
		return fail(d, WSFRAME_E_PROTOCOL);
	/* 5.1: a client masks every frame, a server none. */
	if (d->masked != d->server)
		return fail(d, WSFRAME_E_PROTOCOL);
	if (op & 0x08) {
		/* 5.5: control frames are short and never fragmented. */
		if (!d->fin || (b1 & 0x7f) > WSFRAME_CONTROL_MAX)
			return fail(d, WSFRAME_E_PROTOCOL);
		return 0;
	}
	/* 5.4: continuations only inside a message, new ones only outside. */
	if ((op == WSFRAME_CONT) != (d->msg_op != 0))
		return fail(d, WSFRAME_E_PROTOCOL);
	if (op != WSFRAME_CONT) {
		d->msg_op = op;
		d->nmsg = 0;
		d->nvalid = 0;
	}
	return 0;
}

/* The whole header is in: length (minimal, 63 bits) and the caps. */
static int
check_len(struct wsframe_dec *d)
{
	size_t len7 = d->hdr[1] & 0x7f, at = 2;
	uint64_t len = len7;

	if (len7 == 126) {
		len = (uint64_t)d->hdr[2] << 8 | d->hdr[3];
		at = 4;
		if (len < 126)
			return fail(d, WSFRAME_E_PROTOCOL);
	} else if (len7 == 127) {
		len = 0;
		for (int i = 0; i < 8; i++)
			len = len << 8 | d->hdr[2 + i];
		at = 10;
		if ((len >> 63) != 0 || len <= 0xffff)
			return fail(d, WSFRAME_E_PROTOCOL);
	}
	if (d->masked)
		memcpy(d->mask, d->hdr + at, 4);
	d->plen = len;
	d->pgot = 0;
	d->nctl = 0;
	if (d->op & 0x08)
		return 0;
	if (len > d->max_frame || len > d->max_msg - d->nmsg)
		return fail(d, WSFRAME_E_TOO_BIG);
	return 0;
}

/* Copy n payload bytes, unmasked, where they go; 0 or -EPROTO. */
static int
take_payload(struct wsframe_dec *d, const uint8_t *p, size_t n)
{
	uint8_t *dst;
	size_t cap;

	if (d->op & 0x08) {
		dst = d->ctl + d->nctl;
		d->nctl += n;
	} else {
		if (d->nmsg + n > d->capmsg) {
			/* Double, within the cap checked in check_len(). */
			cap = d->capmsg > 0 ? d->capmsg : 256;
			while (cap < d->nmsg + n)
				cap *= 2;
			if (cap > d->max_msg)
				cap = d->max_msg;
			d->msg = xrealloc(d->msg, cap);
			d->capmsg = cap;
		}
		dst = d->msg + d->nmsg;
		d->nmsg += n;
	}
	memcpy(dst, p, n);
	if (d->masked)
		wsframe_mask(dst, n, d->mask, d->pgot);
	d->pgot += n;
	if (!(d->op & 0x08) && d->msg_op == WSFRAME_TEXT)
		return text_check(d);
	return 0;
}

/*
 * Whether s (n bytes, 0 < n < 4) is a cut-off start of a valid character.
 * Past the lead byte only the second byte is restricted, to a range that
 * always holds 0x80 or 0xbf, so completing with those two decides.
 */
static bool
utf8_prefix(const uint8_t *s, size_t n)
{
	uint8_t buf[4];
	size_t len;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return false;
	if (n >= len)
		return false;
	memcpy(buf, s, n);
	memset(buf + n, 0x80, len - n);
	if (utf8_len(buf, len) == len)
		return true;
	memset(buf + n, 0xbf, len - n);
	return utf8_len(buf, len) == len;
}

/* Advance nvalid over the text received so far; 0 or -EPROTO (1007). */
static int
text_check(struct wsframe_dec *d)
{
	size_t k, left;

	while (d->nvalid < d->nmsg) {
		left = d->nmsg - d->nvalid;
		k = utf8_len(d->msg + d->nvalid, left);
		if (k == 0) {
			if (left < 4 && utf8_prefix(d->msg + d->nvalid, left))
				return 0;	/* the rest is yet to come */
			return fail(d, WSFRAME_E_UTF8);
		}
		d->nvalid += k;
	}
	return 0;
}

/* A frame is complete: 1 with *ev, 0 (a fragment), or -EPROTO. */
static int
finish(struct wsframe_dec *d, struct wsframe_ev *ev)
{
	size_t k;

	memset(ev, 0, sizeof(*ev));
	if (d->op == WSFRAME_PING || d->op == WSFRAME_PONG) {
		ev->op = d->op;
		ev->p = d->ctl;
		ev->n = d->nctl;
		return 1;
	}
	if (d->op == WSFRAME_CLOSE) {
		/* 5.5.1 and 7.4: no payload, or a valid code and UTF-8. */
		ev->op = WSFRAME_CLOSE;
		ev->code = WSFRAME_NO_STATUS;
		if (d->nctl == 0)
			return 1;
		if (d->nctl == 1)
			return fail(d, WSFRAME_E_PROTOCOL);
		ev->code = (uint16_t)(d->ctl[0] << 8 | d->ctl[1]);
		if (!wsframe_close_code_ok(ev->code))
			return fail(d, WSFRAME_E_PROTOCOL);
		for (size_t i = 2; i < d->nctl; i += k)
			if ((k = utf8_len(d->ctl + i, d->nctl - i)) == 0)
				return fail(d, WSFRAME_E_UTF8);
		ev->p = d->ctl + 2;
		ev->n = d->nctl - 2;
		return 1;
	}
	if (!d->fin)
		return 0;
	if (d->msg_op == WSFRAME_TEXT && d->nvalid != d->nmsg)
		return fail(d, WSFRAME_E_UTF8);	/* ends mid-character */
	ev->op = d->msg_op;
	ev->p = d->msg;
	ev->n = d->nmsg;
	d->msg_op = 0;
	d->nmsg = 0;
	d->nvalid = 0;
	return 1;
}

/* Take bytes up to the next event (see wsframe.h). */
int
wsframe_dec_feed(struct wsframe_dec *d, const uint8_t *p, size_t n,
    size_t *used, struct wsframe_ev *ev)
{
	size_t i = 0, take;
	int rc = 0;

	*used = 0;
	if (d->err != 0)
		return -EPROTO;
	/* The last message was handed out: a big buffer need not stay. */
	if (d->msg_op == 0 && d->capmsg > KEEP_CAP) {
		free(d->msg);
		d->msg = NULL;
		d->capmsg = 0;
	}
	for (;;) {
		/* 1. The header, checked as soon as two bytes are in. */
		if (!d->in_payload) {
			while (d->nhdr < hdr_need(d) && i < n) {
				d->hdr[d->nhdr++] = p[i++];
				if (d->nhdr == 2 && (rc = check_first(d)) < 0)
					goto out;
			}
			if (d->nhdr < hdr_need(d))
				goto out;
			if ((rc = check_len(d)) < 0)
				goto out;
			d->in_payload = true;
		}
		/* 2. The payload, as much of it as there is. */
		take = n - i;
		if (take > d->plen - d->pgot)
			take = (size_t)(d->plen - d->pgot);
		if (take > 0 && (rc = take_payload(d, p + i, take)) < 0) {
			i += take;
			goto out;
		}
		i += take;
		if (d->pgot < d->plen)
			goto out;
		/* 3. The frame is whole. */
		d->in_payload = false;
		d->nhdr = 0;
		if ((rc = finish(d, ev)) != 0 || i == n)
			goto out;
	}
out:
	*used = i;
	return rc;
}

/* Write a frame header (see wsframe.h). */
size_t
wsframe_hdr_encode(uint8_t out[WSFRAME_HDR_MAX], int op, bool fin,
    uint64_t len, const uint8_t *mask)
{
	size_t n = 2;

	out[0] = (uint8_t)((fin ? 0x80 : 0) | (op & 0x0f));
	if (len < 126) {
		out[1] = (uint8_t)len;
	} else if (len <= 0xffff) {
		out[1] = 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		n = 4;
	} else {
		out[1] = 127;
		for (int i = 0; i < 8; i++)
			out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
		n = 10;
	}
	if (mask != NULL) {
		out[1] |= 0x80;
		memcpy(out + n, mask, 4);
		n += 4;
	}
	return n;
}

/* XOR with the mask, from payload offset off. */
void
wsframe_mask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		p[i] ^= mask[(off + i) & 3];
}

/* A close frame's payload: code and a reason cut at a character. */
size_t
wsframe_close_encode(uint8_t out[WSFRAME_CONTROL_MAX], uint16_t code,
    const char *reason)
{
	size_t n = reason != NULL ? strlen(reason) : 0;

	if (code == WSFRAME_NO_STATUS)
		return 0;
	out[0] = (uint8_t)(code >> 8);
	out[1] = (uint8_t)code;
	if (n > WSFRAME_CONTROL_MAX - 2) {
		n = WSFRAME_CONTROL_MAX - 2;
		while (n > 0 && ((unsigned char)reason[n] & 0xc0) == 0x80)
			n--;
	}
	if (n > 0)
		memcpy(out + 2, reason, n);
	return n + 2;
}

/*
 * RFC 6455 7.4.1 and the IANA registry: 1000-1003 and 1007-1014 are
 * defined for the wire (1004-1006 and 1015 never are), 3000-4999 belong
 * to libraries and applications; the rest is reserved.
 */
bool
wsframe_close_code_ok(unsigned code)
{
	return (code >= 1000 && code <= 1003) ||
	    (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}
