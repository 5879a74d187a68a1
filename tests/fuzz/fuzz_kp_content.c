/*
 * fuzz_kp_content.c -- the content of kernel messages, as execd turns it
 * into text: kp_wire_decode() (jansson, lenient) against the large-message
 * path, kp_wire_decode_big() with kp_wire_text_piece().
 *
 * Input: a mode byte, then a message's content part (any bytes); the
 * header says "stream" or, by the mode, another type.  The message is
 * signed as a kernel would sign it, so both decoders get past the
 * signature to the content.  Invariants:
 * - both decoders accept or refuse the same messages;
 * - every piece is a string of valid UTF-8, and the pieces are all of the
 *   escaped text, whatever the piece size (the mode picks one);
 * - where jansson can read the content, the pieces together are exactly
 *   the string it read for "text", and the name is the same.
 */
#include <string.h>

#include <jansson.h>

#include "../../kernelproto/kp_msg.h"
#include "../../kernelproto/kp_sign.h"
#include "../../kernelproto/kp_wire.h"
#include "fz.h"

#define KEY	"fuzz-kp-content-key"

static const char *const types[] = { "stream", "display_data",
	"execute_result", "error" };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t maxes[] = { 1, 2, 3, 5, 7, 64, 4096, 1 << 20 };
	char header[128], sig[65];
	struct kp_part f[7];
	struct kp_msg *a = NULL, *b = NULL;
	const char *type, *ta;
	size_t toff, tend, off, max, got = 0, la = 0;
	char *joined;
	int ra, rb;
	json_t *t;

	if (size < 1)
		return 0;
	type = types[(data[0] >> 4) % NELEM(types)];
	max = maxes[data[0] % NELEM(maxes)];
	snprintf(header, sizeof(header), "{\"msg_id\":\"m\",\"msg_type\":"
	    "\"%s\",\"session\":\"s\",\"username\":\"u\",\"version\":\"5.3\"}",
	    type);
	f[0] = (struct kp_part){ "kernel.x.iopub", 14 };
	f[1] = (struct kp_part){ "<IDS|MSG>", 9 };
	f[3] = (struct kp_part){ header, strlen(header) };
	f[4] = (struct kp_part){ "{}", 2 };
	f[5] = (struct kp_part){ "{}", 2 };
	f[6] = (struct kp_part){ data + 1, size - 1 };
	CHECK(kp_sign((const unsigned char *)KEY, strlen(KEY), f + 3, 4,
	    sig) == 0);
	f[2] = (struct kp_part){ sig, 64 };

	ra = kp_wire_decode(f, 7, (const unsigned char *)KEY, strlen(KEY),
	    1 << 26, &a, NULL, 0);
	rb = kp_wire_decode_big(f, 7, (const unsigned char *)KEY, strlen(KEY),
	    1 << 26, &b, &toff, &tend, NULL, 0);
	/* The large path reads no JSON it need not: it may take more. */
	CHECK(ra < 0 || rb == 0);
	if (rb < 0) {
		kp_msg_free(a);
		return 0;
	}
	CHECK(toff <= tend && tend <= size - 1);
	joined = malloc(3 * (tend - toff) + 16);
	CHECK(joined != NULL);
	for (off = toff; (t = kp_wire_text_piece(data + 1, &off, tend, max)) !=
	    NULL; ) {
		CHECK(json_is_string(t));
		CHECK(fz_utf8(json_string_value(t), json_string_length(t)));
		CHECK(json_string_length(t) <= 3 * (max + 12));
		memcpy(joined + got, json_string_value(t),
		    json_string_length(t));
		got += json_string_length(t);
		json_decref(t);
	}
	CHECK(off == tend);
	if (ra == 0 && strcmp(type, "stream") == 0 && tend > toff) {
		ta = json_string_value(json_object_get(a->content, "text"));
		la = json_string_length(json_object_get(a->content, "text"));
		CHECK(ta != NULL);
		CHECK(got == la && memcmp(joined, ta, la) == 0);
		CHECK(json_object_get(a->content, "name") == NULL ?
		    json_object_get(b->content, "name") == NULL :
		    json_equal(json_object_get(a->content, "name"),
		    json_object_get(b->content, "name")));
	}
	free(joined);
	kp_msg_free(a);
	kp_msg_free(b);
	return 0;
}
