/*
 * fuzz_wsmsg.c -- the Jupyter channels WebSocket's messages (wsmsg.c):
 * a client's frame parsed, and what execd would send formatted.
 *
 * Input: a mode byte (bit 0: a binary frame, the form with offsets; bit
 * 1: a v1.kernel.websocket.jupyter.org frame), then the frame.  Invariants, any break aborts:
 * - a parsed message has a channel a client may send on (shell, control,
 *   stdin), a header object with a msg_id of 1 to 256 bytes and a
 *   msg_type, and objects for parent_header, metadata and content;
 * - formatted again it is binary exactly when it has buffers, and parses
 *   back to the same channel, msg_id and buffers, byte for byte, which
 *   format to the same bytes once more;
 * - the same holds in the v1 form, whose frames are always binary;
 * - a refused frame says why.
 */
#include <string.h>

#include <jansson.h>

#include "../../execd/api/jupyter/wsmsg.h"
#include "fz.h"

/* The v1 form: parse, format, parse back, format to the same bytes. */
static int
v1(const char *p, size_t n)
{
	struct kp_msg *m, *again;
	enum kp_chan_id c, c2;
	char err[160] = "";
	struct buf b, b2;

	if (wsmsg_parse_v1(p, n, &m, &c, err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0');
		return 0;
	}
	CHECK(c == KP_SHELL || c == KP_CONTROL || c == KP_STDIN);
	CHECK(json_is_object(m->header) && json_is_object(m->parent) &&
	    json_is_object(m->metadata) && json_is_object(m->content));
	CHECK(kp_msg_id(m)[0] != '\0' && kp_msg_type(m)[0] != '\0');
	buf_init(&b);
	wsmsg_format_v1(&b, m, c);
	CHECK(wsmsg_parse_v1(b.p, b.len, &again, &c2, err, sizeof(err)) == 0);
	CHECK(c2 == c && again->nbuffers == m->nbuffers);
	for (size_t i = 0; i < m->nbuffers; i++)
		CHECK(again->buffers[i].n == m->buffers[i].n &&
		    memcmp(again->buffers[i].p, m->buffers[i].p,
		    m->buffers[i].n) == 0);
	buf_reset(&b);
	buf_init(&b);
	wsmsg_format_v1(&b, again, c2);
	kp_msg_free(again);
	CHECK(wsmsg_parse_v1(b.p, b.len, &again, &c2, err, sizeof(err)) == 0);
	buf_init(&b2);
	wsmsg_format_v1(&b2, again, c2);
	CHECK(b2.len == b.len && memcmp(b2.p, b.p, b.len) == 0);
	buf_reset(&b2);
	buf_reset(&b);
	kp_msg_free(again);
	kp_msg_free(m);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_msg *m, *again;
	enum kp_chan_id c, c2;
	char err[160] = "";
	struct buf b, b2;
	bool bin;
	size_t n;

	if (size < 1)
		return 0;
	if (data[0] & 2)
		return v1((const char *)data + 1, size - 1);
	if (wsmsg_parse((const char *)data + 1, size - 1, data[0] & 1, &m, &c,
	    err, sizeof(err)) < 0) {
		CHECK(err[0] != '\0');
		return 0;
	}
	CHECK(c == KP_SHELL || c == KP_CONTROL || c == KP_STDIN);
	CHECK(json_is_object(m->header) && json_is_object(m->parent) &&
	    json_is_object(m->metadata) && json_is_object(m->content));
	n = strlen(kp_msg_id(m));
	CHECK(n >= 1 && n <= 256 && kp_msg_type(m)[0] != '\0');

	buf_init(&b);
	bin = wsmsg_format(&b, m, c);
	CHECK(bin == (m->nbuffers > 0));
	CHECK(wsmsg_parse(b.p, b.len, bin, &again, &c2, err,
	    sizeof(err)) == 0);
	CHECK(c2 == c);
	CHECK(strcmp(kp_msg_id(again), kp_msg_id(m)) == 0);
	CHECK(again->nbuffers == m->nbuffers);
	for (size_t i = 0; i < m->nbuffers; i++)
		CHECK(again->buffers[i].n == m->buffers[i].n &&
		    memcmp(again->buffers[i].p, m->buffers[i].p,
		    m->buffers[i].n) == 0);
	/*
	 * From the second formatting on, the bytes are a fixed point (the
	 * first may turn a real -0.0 into the integer -0, read back as 0).
	 */
	buf_reset(&b);
	buf_init(&b);
	CHECK(wsmsg_format(&b, again, c2) == bin);
	kp_msg_free(again);
	CHECK(wsmsg_parse(b.p, b.len, bin, &again, &c2, err,
	    sizeof(err)) == 0);
	buf_init(&b2);
	CHECK(wsmsg_format(&b2, again, c2) == bin);
	CHECK(b2.len == b.len && memcmp(b2.p, b.p, b.len) == 0);
	buf_reset(&b2);
	buf_reset(&b);
	kp_msg_free(again);
	kp_msg_free(m);
	return 0;
}
