/*
 * t_wsframe.c -- unit tests for wsframe.c, the RFC 6455 codec: the RFC's
 * own example frames (5.7) both ways, every length form and the minimal
 * length rule, masking by role, reserved bits and opcodes, control frame
 * rules, continuation order, the frame and message caps, UTF-8 checked
 * across fragments (and failing early), close codes and reasons, a
 * stream decoded whole, a byte at a time and split at every byte, and
 * encoder output decoded back.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../execd/transport/wsframe.h"
#include "../t.h"

#define MAXEV	16

/* An event with its payload copied out. */
struct got {
	int		 op;
	uint16_t	 code;
	size_t		 n;
	uint8_t		 p[1024];
};

static const uint8_t mask[4] = { 0x37, 0xfa, 0x21, 0x3d };

/*
 * Feed p (n bytes) in pieces of at most step bytes (0: all at once);
 * the events go to g.  The count, or minus the close code of a failure.
 */
static int
decode(struct wsframe_dec *d, const uint8_t *p, size_t n, size_t step,
    struct got *g, int maxev)
{
	struct wsframe_ev ev;
	size_t off = 0, piece, used;
	int ng = 0, rc;

	while (off < n) {
		piece = step == 0 || n - off < step ? n - off : step;
		rc = wsframe_dec_feed(d, p + off, piece, &used, &ev);
		T_OK(used <= piece);
		off += used;
		if (rc < 0) {
			T_EQ_INT(rc, -EPROTO);
			return -wsframe_dec_error(d);
		}
		if (rc == 0) {
			T_EQ_INT(used, piece);
			continue;
		}
		T_OK(ng < maxev);
		if (ng >= maxev)
			return ng;
		g[ng].op = ev.op;
		g[ng].code = ev.code;
		g[ng].n = ev.n;
		T_OK(ev.n <= sizeof(g[ng].p));
		if (ev.n > 0 && ev.n <= sizeof(g[ng].p))
			memcpy(g[ng].p, ev.p, ev.n);
		ng++;
	}
	return ng;
}

/* Decode with a fresh decoder; the count or minus a close code. */
static int
decode1(bool server, size_t max, const void *p, size_t n, struct got *g)
{
	struct wsframe_dec d;
	int rc;

	wsframe_dec_init(&d, server, max, max);
	rc = decode(&d, p, n, 0, g, MAXEV);
	wsframe_dec_reset(&d);
	return rc;
}

/* The result code alone, for a client's (masked) bytes. */
static int
srv_rc(const void *p, size_t n)
{
	static struct got g[MAXEV];

	return decode1(true, 0, p, n, g);
}

/* A masked frame of op into out; returns its length. */
static size_t
frame(uint8_t *out, int op, bool fin, const void *p, size_t n)
{
	size_t h = wsframe_hdr_encode(out, op, fin, n, mask);

	if (n > 0)
		memcpy(out + h, p, n);
	wsframe_mask(out + h, n, mask, 0);
	return h + n;
}

/* RFC 6455 5.7, the examples, each way. */
static void
t_rfc_examples(void)
{
	static const uint8_t hello[] = { 0x81, 0x05, 'H', 'e', 'l', 'l', 'o' };
	static const uint8_t mhello[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
	    0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	static const uint8_t frag[] = { 0x01, 0x03, 'H', 'e', 'l', 0x80, 0x02,
	    'l', 'o' };
	static const uint8_t ping[] = { 0x89, 0x05, 'H', 'e', 'l', 'l', 'o' };
	static const uint8_t mpong[] = { 0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d,
	    0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	struct got g[MAXEV];
	uint8_t h[WSFRAME_HDR_MAX], buf[16];

	T_EQ_INT(decode1(false, 0, hello, sizeof(hello), g), 1);
	T_EQ_INT(g[0].op, WSFRAME_TEXT);
	T_EQ_INT(g[0].n, 5);
	T_OK(memcmp(g[0].p, "Hello", 5) == 0);
	T_EQ_INT(decode1(true, 0, mhello, sizeof(mhello), g), 1);
	T_EQ_INT(g[0].op, WSFRAME_TEXT);
	T_OK(g[0].n == 5 && memcmp(g[0].p, "Hello", 5) == 0);
	T_EQ_INT(decode1(false, 0, frag, sizeof(frag), g), 1);
	T_OK(g[0].n == 5 && memcmp(g[0].p, "Hello", 5) == 0);
	T_EQ_INT(decode1(false, 0, ping, sizeof(ping), g), 1);
	T_EQ_INT(g[0].op, WSFRAME_PING);
	T_OK(g[0].n == 5 && memcmp(g[0].p, "Hello", 5) == 0);
	T_EQ_INT(decode1(true, 0, mpong, sizeof(mpong), g), 1);
	T_EQ_INT(g[0].op, WSFRAME_PONG);
	T_OK(g[0].n == 5 && memcmp(g[0].p, "Hello", 5) == 0);

	/* The encoder writes the same bytes. */
	T_EQ_INT(wsframe_hdr_encode(h, WSFRAME_TEXT, true, 5, NULL), 2);
	T_OK(memcmp(h, hello, 2) == 0);
	T_EQ_INT(frame(buf, WSFRAME_TEXT, true, "Hello", 5), sizeof(mhello));
	T_OK(memcmp(buf, mhello, sizeof(mhello)) == 0);
	T_EQ_INT(wsframe_hdr_encode(h, WSFRAME_TEXT, false, 3, NULL), 2);
	T_OK(memcmp(h, frag, 2) == 0);
	T_EQ_INT(wsframe_hdr_encode(h, WSFRAME_CONT, true, 2, NULL), 2);
	T_OK(memcmp(h, frag + 5, 2) == 0);
}

/* 7, 16 and 64-bit lengths, written and read; only minimal ones. */
static void
t_lengths(void)
{
	static const uint8_t l256[] = { 0x82, 0x7e, 0x01, 0x00 };
	static const uint8_t l64k[] = { 0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0 };
	static const size_t sizes[] = { 0, 1, 125, 126, 127, 65535, 65536,
	    70000 };
	static uint8_t buf[70000 + WSFRAME_HDR_MAX];
	static struct got g[MAXEV];
	struct wsframe_dec d;
	struct wsframe_ev ev;
	uint8_t h[WSFRAME_HDR_MAX];
	size_t n, used;

	T_EQ_INT(wsframe_hdr_encode(h, WSFRAME_BINARY, true, 256, NULL), 4);
	T_OK(memcmp(h, l256, 4) == 0);
	T_EQ_INT(wsframe_hdr_encode(h, WSFRAME_BINARY, true, 65536, NULL),
	    10);
	T_OK(memcmp(h, l64k, 10) == 0);
	T_EQ_INT(wsframe_hdr_encode(h, WSFRAME_BINARY, true, 125, NULL), 2);
	T_EQ_INT(wsframe_hdr_encode(h, WSFRAME_BINARY, true, 126, NULL), 4);
	T_EQ_INT(wsframe_hdr_encode(h, WSFRAME_BINARY, true, 65535, NULL),
	    4);
	T_EQ_INT(wsframe_hdr_encode(h, WSFRAME_BINARY, true, 65535, mask),
	    8);
	/* Each size decodes back to itself, payload intact. */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *p;

		n = wsframe_hdr_encode(buf, WSFRAME_BINARY, true, sizes[i],
		    mask);
		p = buf + n;
		for (size_t k = 0; k < sizes[i]; k++)
			p[k] = (uint8_t)(k * 7);
		wsframe_mask(p, sizes[i], mask, 0);
		wsframe_dec_init(&d, true, 0, 0);
		T_EQ_INT(wsframe_dec_feed(&d, buf, n + sizes[i], &used, &ev),
		    1);
		T_EQ_INT(used, n + sizes[i]);
		T_EQ_INT(ev.op, WSFRAME_BINARY);
		T_EQ_INT(ev.n, sizes[i]);
		for (size_t k = 0; k < ev.n; k++)
			if (ev.p[k] != (uint8_t)(k * 7)) {
				T_OK(!"payload differs");
				break;
			}
		wsframe_dec_reset(&d);
	}
	/* Non-minimal forms: 16 bits for 125, 64 bits for 65535. */
	{
		static const uint8_t b16[] = { 0x82, 0x7e, 0x00, 0x7d };
		static const uint8_t b64[] = { 0x82, 0x7f, 0, 0, 0, 0, 0, 0,
		    0xff, 0xff };
		static const uint8_t top[] = { 0x82, 0x7f, 0x80, 0, 0, 0, 0, 0,
		    0, 1 };

		T_EQ_INT(decode1(false, 0, b16, sizeof(b16), g), -1002);
		T_EQ_INT(decode1(false, 0, b64, sizeof(b64), g), -1002);
		/* The top bit of a 64-bit length must be 0. */
		T_EQ_INT(decode1(false, 0, top, sizeof(top), g), -1002);
	}
}

/* Clients mask, servers do not; each decoder holds its peer to it. */
static void
t_masking(void)
{
	static const uint8_t plain[] = { 0x81, 0x02, 'h', 'i' };
	uint8_t masked[16];
	struct got g[MAXEV];
	size_t n = frame(masked, WSFRAME_TEXT, true, "hi", 2);

	T_EQ_INT(decode1(true, 0, plain, sizeof(plain), g), -1002);
	T_EQ_INT(decode1(false, 0, masked, n, g), -1002);
	T_EQ_INT(decode1(true, 0, masked, n, g), 1);
	T_OK(g[0].n == 2 && memcmp(g[0].p, "hi", 2) == 0);
	/* A mask applies from the payload's start, whatever the split. */
	{
		uint8_t p[10] = "abcdefghij";

		wsframe_mask(p, 3, mask, 0);
		wsframe_mask(p + 3, 7, mask, 3);
		wsframe_mask(p, 10, mask, 0);
		T_OK(memcmp(p, "abcdefghij", 10) == 0);
	}
}

/* RSV1-3 and the reserved opcodes are refused with 1002. */
static void
t_reserved(void)
{
	uint8_t b[16];
	size_t n;

	for (int bit = 0x10; bit <= 0x40; bit <<= 1) {
		n = frame(b, WSFRAME_TEXT, true, "x", 1);
		b[0] |= (uint8_t)bit;
		T_EQ_INT(srv_rc(b, n), -1002);
	}
	for (int op = 0; op < 16; op++) {
		bool ok = op == 1 || op == 2 || op >= 8;

		if (op == 0 || op == 8)	/* cont and close: elsewhere */
			continue;
		ok = ok && op <= 0xa;
		n = frame(b, op, true, "x", 1);
		T_EQ_INT(srv_rc(b, n), ok ? 1 : -1002);
	}
}

/* Control frames: 125 bytes at most, never fragmented, any time. */
static void
t_control(void)
{
	uint8_t b[512], p[126];
	struct got g[MAXEV];
	size_t n;

	memset(p, 'c', sizeof(p));
	n = frame(b, WSFRAME_PING, true, p, 125);
	T_EQ_INT(decode1(true, 0, b, n, g), 1);
	T_EQ_INT(g[0].n, 125);
	n = frame(b, WSFRAME_PING, true, p, 126);
	T_EQ_INT(srv_rc(b, n), -1002);
	n = frame(b, WSFRAME_PONG, false, p, 1);
	T_EQ_INT(srv_rc(b, n), -1002);
	n = frame(b, WSFRAME_CLOSE, false, "\x03\xe8", 2);
	T_EQ_INT(srv_rc(b, n), -1002);
	/* Between fragments of a message: fine, delivered first. */
	n = frame(b, WSFRAME_BINARY, false, "ab", 2);
	n += frame(b + n, WSFRAME_PONG, true, "z", 1);
	n += frame(b + n, WSFRAME_CONT, true, "cd", 2);
	T_EQ_INT(decode1(true, 0, b, n, g), 2);
	T_EQ_INT(g[0].op, WSFRAME_PONG);
	T_EQ_INT(g[1].op, WSFRAME_BINARY);
	T_OK(g[1].n == 4 && memcmp(g[1].p, "abcd", 4) == 0);
}

/* Continuations only inside a message; no message inside another. */
static void
t_continuation(void)
{
	uint8_t b[64];
	struct got g[MAXEV];
	size_t n;

	n = frame(b, WSFRAME_CONT, true, "x", 1);
	T_EQ_INT(srv_rc(b, n), -1002);
	n = frame(b, WSFRAME_TEXT, false, "a", 1);
	n += frame(b + n, WSFRAME_TEXT, true, "b", 1);
	T_EQ_INT(srv_rc(b, n), -1002);
	n = frame(b, WSFRAME_TEXT, false, "a", 1);
	n += frame(b + n, WSFRAME_BINARY, true, "b", 1);
	T_EQ_INT(srv_rc(b, n), -1002);
	/* A finished message, then a new one, then empty fragments. */
	n = frame(b, WSFRAME_TEXT, true, "a", 1);
	n += frame(b + n, WSFRAME_BINARY, false, NULL, 0);
	n += frame(b + n, WSFRAME_CONT, false, NULL, 0);
	n += frame(b + n, WSFRAME_CONT, true, "z", 1);
	n += frame(b + n, WSFRAME_TEXT, true, NULL, 0);
	T_EQ_INT(decode1(true, 0, b, n, g), 3);
	T_OK(g[0].op == WSFRAME_TEXT && g[0].n == 1);
	T_OK(g[1].op == WSFRAME_BINARY && g[1].n == 1 && g[1].p[0] == 'z');
	T_OK(g[2].op == WSFRAME_TEXT && g[2].n == 0);
}

/* A frame over max_frame, a message over max_msg: 1009, early. */
static void
t_caps(void)
{
	static uint8_t b[4096], p[1024];
	static struct got g[MAXEV];
	struct wsframe_dec d;
	struct wsframe_ev ev;
	size_t n, used;

	memset(p, 'x', sizeof(p));
	/* The header alone is enough to refuse a frame too big. */
	wsframe_dec_init(&d, true, 100, 1000);
	n = wsframe_hdr_encode(b, WSFRAME_BINARY, true, 101, mask);
	T_EQ_INT(wsframe_dec_feed(&d, b, n, &used, &ev), -EPROTO);
	T_EQ_INT(wsframe_dec_error(&d), 1009);
	T_EQ_INT(used, n);
	/* Failed stays failed. */
	T_EQ_INT(wsframe_dec_feed(&d, b, n, &used, &ev), -EPROTO);
	T_EQ_INT(used, 0);
	wsframe_dec_reset(&d);
	/* Exactly the caps pass; one byte more over fragments does not. */
	wsframe_dec_init(&d, true, 100, 250);
	n = frame(b, WSFRAME_BINARY, false, p, 100);
	n += frame(b + n, WSFRAME_CONT, false, p, 100);
	n += frame(b + n, WSFRAME_CONT, true, p, 50);
	T_EQ_INT(decode(&d, b, n, 0, g, MAXEV), 1);
	T_EQ_INT(g[0].n, 250);
	n = frame(b, WSFRAME_BINARY, false, p, 100);
	n += frame(b + n, WSFRAME_CONT, false, p, 100);
	n += frame(b + n, WSFRAME_CONT, true, p, 51);
	T_EQ_INT(decode(&d, b, n, 0, g, MAXEV), -1009);
	wsframe_dec_reset(&d);
	/* A 64-bit length the size of the address space. */
	{
		static const uint8_t huge[] = { 0x82, 0xff, 0x7f, 0xff, 0xff,
		    0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4 };

		T_EQ_INT(srv_rc(huge, sizeof(huge)), -1009);
	}
}

/* Text must be UTF-8 as a whole; characters may span fragments. */
static void
t_utf8(void)
{
	uint8_t b[256];
	struct got g[MAXEV];
	struct wsframe_dec d;
	struct wsframe_ev ev;
	size_t n, used;

	n = frame(b, WSFRAME_TEXT, true, "\xc3(", 2);
	T_EQ_INT(srv_rc(b, n), -1007);
	n = frame(b, WSFRAME_TEXT, true, "\xc0\x80", 2);	/* overlong */
	T_EQ_INT(srv_rc(b, n), -1007);
	n = frame(b, WSFRAME_TEXT, true, "\xed\xa0\x80", 3);	/* surrogate */
	T_EQ_INT(srv_rc(b, n), -1007);
	n = frame(b, WSFRAME_TEXT, true, "\xf4\x90\x80\x80", 4);
	T_EQ_INT(srv_rc(b, n), -1007);
	/* Binary is not text. */
	n = frame(b, WSFRAME_BINARY, true, "\xc3(", 2);
	T_EQ_INT(srv_rc(b, n), 1);
	/* A 4-byte character in four fragments. */
	n = frame(b, WSFRAME_TEXT, false, "\xf0", 1);
	n += frame(b + n, WSFRAME_CONT, false, "\x9f", 1);
	n += frame(b + n, WSFRAME_CONT, false, "\x98", 1);
	n += frame(b + n, WSFRAME_CONT, true, "\x80", 1);
	T_EQ_INT(decode1(true, 0, b, n, g), 1);
	T_OK(g[0].n == 4 && memcmp(g[0].p, "\xf0\x9f\x98\x80", 4) == 0);
	/* The message ends mid-character. */
	n = frame(b, WSFRAME_TEXT, false, "ok", 2);
	n += frame(b + n, WSFRAME_CONT, true, "\xe2\x82", 2);
	T_EQ_INT(srv_rc(b, n), -1007);
	/* A bad start fails at once, before the message ends. */
	wsframe_dec_init(&d, true, 0, 0);
	n = frame(b, WSFRAME_TEXT, false, "ok\xff", 3);
	T_EQ_INT(wsframe_dec_feed(&d, b, n, &used, &ev), -EPROTO);
	T_EQ_INT(wsframe_dec_error(&d), 1007);
	wsframe_dec_reset(&d);
	/* So does a cut-off start that no byte could complete. */
	wsframe_dec_init(&d, true, 0, 0);
	n = frame(b, WSFRAME_TEXT, false, "\xed\xa0", 2);
	T_EQ_INT(wsframe_dec_feed(&d, b, n, &used, &ev), -EPROTO);
	T_EQ_INT(wsframe_dec_error(&d), 1007);
	wsframe_dec_reset(&d);
	wsframe_dec_init(&d, true, 0, 0);
	n = frame(b, WSFRAME_TEXT, false, "\xe0\x80", 2);
	T_EQ_INT(wsframe_dec_feed(&d, b, n, &used, &ev), -EPROTO);
	wsframe_dec_reset(&d);
	/* While a valid one waits: "\xe0\xa0", "\xed\x9f", "\xf4\x8f". */
	wsframe_dec_init(&d, true, 0, 0);
	n = frame(b, WSFRAME_TEXT, false, "\xe0\xa0", 2);
	n += frame(b + n, WSFRAME_CONT, false, "\x80\xed\x9f", 3);
	n += frame(b + n, WSFRAME_CONT, false, "\xbf\xf4\x8f", 3);
	n += frame(b + n, WSFRAME_CONT, true, "\xbf\xbf", 2);
	T_EQ_INT(decode(&d, b, n, 0, g, MAXEV), 1);
	T_EQ_INT(g[0].n, 10);
	wsframe_dec_reset(&d);
}

/* Close: none, or a code a peer may send and a UTF-8 reason. */
static void
t_close(void)
{
	static const struct {
		unsigned code;
		bool ok;
	} codes[] = {
		{ 0, false }, { 999, false }, { 1000, true }, { 1001, true },
		{ 1002, true }, { 1003, true }, { 1004, false },
		{ 1005, false }, { 1006, false }, { 1007, true },
		{ 1011, true }, { 1014, true }, { 1015, false },
		{ 2999, false }, { 3000, true }, { 4001, true },
		{ 4999, true }, { 5000, false }, { 65535, false },
	};
	uint8_t b[256], pl[WSFRAME_CONTROL_MAX];
	struct got g[MAXEV];
	char reason[200];
	size_t n, k;

	n = frame(b, WSFRAME_CLOSE, true, NULL, 0);
	T_EQ_INT(decode1(true, 0, b, n, g), 1);
	T_EQ_INT(g[0].op, WSFRAME_CLOSE);
	T_EQ_INT(g[0].code, WSFRAME_NO_STATUS);
	T_EQ_INT(g[0].n, 0);
	n = frame(b, WSFRAME_CLOSE, true, "\x03", 1);
	T_EQ_INT(srv_rc(b, n), -1002);
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		T_EQ_INT(wsframe_close_code_ok(codes[i].code), codes[i].ok);
		pl[0] = (uint8_t)(codes[i].code >> 8);
		pl[1] = (uint8_t)codes[i].code;
		n = frame(b, WSFRAME_CLOSE, true, pl, 2);
		T_EQ_INT(decode1(true, 0, b, n, g), codes[i].ok ? 1 : -1002);
	}
	n = frame(b, WSFRAME_CLOSE, true, "\x03\xe8" "bye \xc3\xa9", 8);
	T_EQ_INT(decode1(true, 0, b, n, g), 1);
	T_EQ_INT(g[0].code, 1000);
	T_OK(g[0].n == 6 && memcmp(g[0].p, "bye \xc3\xa9", 6) == 0);
	n = frame(b, WSFRAME_CLOSE, true, "\x03\xe8" "bye \xc3", 7);
	T_EQ_INT(srv_rc(b, n), -1007);
	/* Encoding: no status is empty; a long reason is cut whole. */
	T_EQ_INT(wsframe_close_encode(pl, WSFRAME_NO_STATUS, "x"), 0);
	T_EQ_INT(wsframe_close_encode(pl, 4002, "SLOW_CLIENT"), 13);
	T_OK(memcmp(pl, "\x0f\xa2SLOW_CLIENT", 13) == 0);
	memset(reason, 'a', sizeof(reason));
	reason[122] = '\xc3';		/* a 2-byte character at 122-123 */
	reason[123] = '\xa9';
	reason[sizeof(reason) - 1] = '\0';
	k = wsframe_close_encode(pl, 1000, reason);
	T_EQ_INT(k, 2 + 122);
	n = frame(b, WSFRAME_CLOSE, true, pl, k);
	T_EQ_INT(decode1(true, 0, b, n, g), 1);
	reason[121] = '\xc3';		/* now one at 121-122: fits */
	reason[122] = '\xa9';
	reason[123] = 'a';
	T_EQ_INT(wsframe_close_encode(pl, 1000, reason), 2 + 123);
}

/*
 * One stream of frames: decoded whole, a byte at a time, and cut in two
 * at every byte, it gives the same events.
 */
static void
t_splits(void)
{
	static uint8_t b[2048], p[300];
	static struct got want[MAXEV], g[MAXEV];
	struct wsframe_dec d;
	size_t n;
	int nw, ng;

	for (size_t i = 0; i < sizeof(p); i++)
		p[i] = (uint8_t)i;
	n = frame(b, WSFRAME_TEXT, false, "h\xc3", 2);
	n += frame(b + n, WSFRAME_PING, true, "pi", 2);
	n += frame(b + n, WSFRAME_CONT, false, "\xa9\xf0\x9f", 3);
	n += frame(b + n, WSFRAME_CONT, true, "\x98\x80!", 3);
	n += frame(b + n, WSFRAME_BINARY, true, p, sizeof(p));
	n += frame(b + n, WSFRAME_TEXT, true, NULL, 0);
	n += frame(b + n, WSFRAME_CLOSE, true, "\x03\xe9" "gone", 6);
	wsframe_dec_init(&d, true, 0, 0);
	nw = decode(&d, b, n, 0, want, MAXEV);
	wsframe_dec_reset(&d);
	T_EQ_INT(nw, 5);
	T_OK(want[0].op == WSFRAME_PING && want[0].n == 2);
	T_OK(want[1].op == WSFRAME_TEXT && want[1].n == 8 &&
	    memcmp(want[1].p, "h\xc3\xa9\xf0\x9f\x98\x80!", 8) == 0);
	T_OK(want[2].op == WSFRAME_BINARY && want[2].n == sizeof(p) &&
	    memcmp(want[2].p, p, sizeof(p)) == 0);
	T_OK(want[3].op == WSFRAME_TEXT && want[3].n == 0);
	T_OK(want[4].op == WSFRAME_CLOSE && want[4].code == 1001 &&
	    want[4].n == 4);
	for (size_t step = 1; step <= 3; step++) {
		wsframe_dec_init(&d, true, 0, 0);
		ng = decode(&d, b, n, step, g, MAXEV);
		wsframe_dec_reset(&d);
		T_EQ_INT(ng, nw);
		for (int i = 0; i < nw && i < ng; i++)
			T_OK(g[i].op == want[i].op && g[i].n == want[i].n &&
			    g[i].code == want[i].code &&
			    memcmp(g[i].p, want[i].p, g[i].n) == 0);
	}
	for (size_t cut = 0; cut <= n; cut++) {
		int n1, n2;

		wsframe_dec_init(&d, true, 0, 0);
		n1 = decode(&d, b, cut, 0, g, MAXEV);
		n2 = n1 < 0 ? n1 : decode(&d, b + cut, n - cut, 0, g + n1,
		    MAXEV - n1);
		wsframe_dec_reset(&d);
		T_OK(n1 >= 0 && n2 >= 0);
		if (n1 < 0 || n2 < 0)
			break;
		T_EQ_INT(n1 + n2, nw);
		for (int i = 0; i < nw && i < n1 + n2; i++)
			T_OK(g[i].op == want[i].op && g[i].n == want[i].n &&
			    memcmp(g[i].p, want[i].p, g[i].n) == 0);
	}
}

/* Several events in one buffer: each call stops after one. */
static void
t_one_event_per_call(void)
{
	uint8_t b[64];
	struct wsframe_dec d;
	struct wsframe_ev ev;
	size_t n, n1, used;

	n1 = frame(b, WSFRAME_TEXT, true, "one", 3);
	n = n1 + frame(b + n1, WSFRAME_TEXT, true, "two", 3);
	wsframe_dec_init(&d, true, 0, 0);
	T_EQ_INT(wsframe_dec_feed(&d, b, n, &used, &ev), 1);
	T_EQ_INT(used, n1);
	T_OK(ev.n == 3 && memcmp(ev.p, "one", 3) == 0);
	T_EQ_INT(wsframe_dec_feed(&d, b + used, n - used, &used, &ev), 1);
	T_EQ_INT(used, n - n1);
	T_OK(ev.n == 3 && memcmp(ev.p, "two", 3) == 0);
	T_EQ_INT(wsframe_dec_feed(&d, b, 0, &used, &ev), 0);
	T_EQ_INT(used, 0);
	wsframe_dec_reset(&d);
}

/* A big message, received, then small ones: the buffer is let go. */
static void
t_big_then_small(void)
{
	static uint8_t b[200000];
	static uint8_t p[100000];
	struct wsframe_dec d;
	struct wsframe_ev ev;
	size_t n, used;

	memset(p, 'q', sizeof(p));
	wsframe_dec_init(&d, true, 0, 0);
	n = frame(b, WSFRAME_BINARY, true, p, sizeof(p));
	T_EQ_INT(wsframe_dec_feed(&d, b, n, &used, &ev), 1);
	T_EQ_INT(ev.n, sizeof(p));
	n = frame(b, WSFRAME_BINARY, true, "s", 1);
	T_EQ_INT(wsframe_dec_feed(&d, b, n, &used, &ev), 1);
	T_OK(ev.n == 1 && ev.p[0] == 's');
	T_OK(d.capmsg <= 64 * 1024);
	wsframe_dec_reset(&d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "RFC 6455's example frames, both ways", t_rfc_examples },
		{ "7, 16 and 64-bit lengths, minimal only", t_lengths },
		{ "masking by role", t_masking },
		{ "reserved bits and opcodes", t_reserved },
		{ "control frames", t_control },
		{ "continuation order", t_continuation },
		{ "frame and message caps", t_caps },
		{ "UTF-8 across fragments", t_utf8 },
		{ "close codes and reasons", t_close },
		{ "a stream split at every byte", t_splits },
		{ "one event per call", t_one_event_per_call },
		{ "a big message's buffer is let go", t_big_then_small },
	};

	return T_RUN(cases);
}
