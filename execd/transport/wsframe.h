/*
 * wsframe.h -- RFC 6455 WebSocket framing, pure: bytes in, messages and
 * control frames out; frames to bytes.  No sockets, no loop, no state
 * shared between decoders (ws.c is the loop glue).
 *
 * Why our own and not libwslay: execd builds as one static binary, and
 * Debian ships neither a static libwslay nor its source.  The framing is
 * small, fully specified, and this codec is unit-tested rule by rule and
 * fuzzed (tests/fuzz/fuzz_wsframe.c).
 *
 * The decoder reassembles fragmented messages up to a cap, checks every
 * rule a receiver must (masking by role, reserved bits and opcodes,
 * minimal lengths, control frames of at most 125 bytes and never
 * fragmented, close codes, UTF-8 of text messages and close reasons,
 * checked as the bytes arrive, so a character may be split between
 * fragments), and on a violation names the close code to answer with.
 * Any thread, one decoder per thread at a time.
 */
#ifndef EXECD_WSFRAME_H
#define EXECD_WSFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Opcodes (RFC 6455 5.2). */
#define WSFRAME_CONT		0x0
#define WSFRAME_TEXT		0x1
#define WSFRAME_BINARY		0x2
#define WSFRAME_CLOSE		0x8
#define WSFRAME_PING		0x9
#define WSFRAME_PONG		0xa

/* Close codes the decoder fails with, and the "no code" of 7.1.5. */
#define WSFRAME_E_PROTOCOL	1002
#define WSFRAME_E_UTF8		1007
#define WSFRAME_E_TOO_BIG	1009
#define WSFRAME_NO_STATUS	1005

#define WSFRAME_CONTROL_MAX	125	/* a control frame's payload */
#define WSFRAME_HDR_MAX		14	/* 2 + 8 length + 4 mask */

/*
 * A decoder, in caller storage (fields private).  server: frames must
 * come masked (a server's decoder); otherwise they must not.
 */
struct wsframe_dec {
	bool		 server;
	size_t		 max_frame, max_msg;
	int		 err;		/* close code once failed, else 0 */
	/* The frame being read. */
	uint8_t		 hdr[WSFRAME_HDR_MAX];
	size_t		 nhdr;		/* header bytes so far */
	bool		 in_payload;
	int		 op;
	bool		 fin;
	uint8_t		 mask[4];
	bool		 masked;
	uint64_t	 plen, pgot;
	/* The data message being reassembled (msg_op 0: none). */
	int		 msg_op;
	uint8_t		*msg;
	size_t		 nmsg, capmsg;
	size_t		 nvalid;	/* text: bytes known to be UTF-8 */
	/* A control frame's payload. */
	uint8_t		 ctl[WSFRAME_CONTROL_MAX];
	size_t		 nctl;
};

/*
 * What wsframe_dec_feed() found: a whole message (WSFRAME_TEXT or
 * WSFRAME_BINARY), a PING, a PONG or a CLOSE.  p and n are the payload
 * (of a close: its reason), borrowed until the next call on the decoder;
 * code is a close's status code, WSFRAME_NO_STATUS if it had none.
 */
struct wsframe_ev {
	int		 op;
	const uint8_t	*p;
	size_t		 n;
	uint16_t	 code;
};

/*
 * Set up d for a server (frames masked) or a client; max_frame caps one
 * frame's payload and max_msg a reassembled message (0: 16 MiB each).
 */
void	wsframe_dec_init(struct wsframe_dec *d, bool server, size_t max_frame,
	    size_t max_msg);
/* Free what d holds; it may be initialised again. */
void	wsframe_dec_reset(struct wsframe_dec *d);
/*
 * Read from p (n bytes) up to the end of the next event, or all of it.
 * *used is set to the bytes taken (never more than n).  1: *ev is an
 * event; 0: all n bytes taken, no event yet; -EPROTO: the peer broke a
 * rule, wsframe_dec_error() says which, and so do all later calls.
 */
int	wsframe_dec_feed(struct wsframe_dec *d, const uint8_t *p, size_t n,
	    size_t *used, struct wsframe_ev *ev);
/* The close code d failed with (1002, 1007 or 1009), or 0. */
int	wsframe_dec_error(const struct wsframe_dec *d);

/*
 * Write a frame header for op, fin and a payload of len bytes into out;
 * mask (4 bytes) makes it a masked (client) frame, NULL an unmasked one.
 * Returns its length (2 to WSFRAME_HDR_MAX).  The payload is masked by
 * the caller with wsframe_mask().
 */
size_t	wsframe_hdr_encode(uint8_t out[WSFRAME_HDR_MAX], int op, bool fin,
	    uint64_t len, const uint8_t *mask);
/* XOR p (n bytes, at offset off of a payload) with mask, in place. */
void	wsframe_mask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t off);
/*
 * A close payload into out: code (big-endian) then reason, cut to fit
 * 125 bytes at a character boundary; code WSFRAME_NO_STATUS gives an
 * empty payload.  Returns its length.
 */
size_t	wsframe_close_encode(uint8_t out[WSFRAME_CONTROL_MAX], uint16_t code,
	    const char *reason);
/* Whether a peer may send code in a close frame (RFC 6455 7.4). */
bool	wsframe_close_code_ok(unsigned code);

#endif
