/*
 * fuzz_oneshot.c -- a line of a run once's event pipe through
 * oneshot_line(): whatever the forked process (running any code) wrote.
 *
 * Input: the line's bytes.  Invariants:
 * - at most KEVENT_MAX events;
 * - a line that is not a JSON object (read as kernel frames are: bytes
 *   that are not UTF-8 made U+FFFD) with a string msg_type and an
 *   object content is exactly one stderr note, and nothing is returned;
 * - any other line is exactly the events kevent_iopub makes of the
 *   iopub message it names (same kinds, same stream text);
 * - text events have text, and borrow it from what is returned or from
 *   the set's note.
 */
#include <string.h>

#include <jansson.h>

#include "../../execd/domain/oneshot.h"
#include "../../kernelproto/kp_wire.h"
#include "fz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kevent_set set, want;
	struct kp_msg m = { 0 };
	json_t *held, *o, *t, *c;
	json_error_t e;
	size_t i;

	held = oneshot_line((const char *)data, size, &set);
	CHECK(set.n <= KEVENT_MAX);
	o = kp_wire_json_load(data, size, 0, &e);
	t = json_object_get(o, "msg_type");
	c = json_object_get(o, "content");
	if (!json_is_string(t) || !json_is_object(c)) {
		CHECK(held == NULL);
		CHECK(set.n == 1 && set.ev[0].kind == KEV_STDERR &&
		    set.ev[0].note && set.ev[0].text == set.note);
		CHECK(set.ev[0].len == strlen(set.note));
		goto out;
	}
	CHECK(held != NULL);
	m.header = json_pack("{s:O}", "msg_type", t);
	m.content = c;
	kevent_iopub(&m, &want);
	CHECK(want.n == set.n);
	for (i = 0; i < set.n; i++) {
		CHECK(set.ev[i].kind == want.ev[i].kind);
		if (set.ev[i].kind == KEV_STDOUT ||
		    set.ev[i].kind == KEV_STDERR) {
			CHECK(set.ev[i].text != NULL && set.ev[i].len > 0);
			CHECK(set.ev[i].len == want.ev[i].len &&
			    memcmp(set.ev[i].text, want.ev[i].text,
			    set.ev[i].len) == 0);
		}
		if (set.ev[i].kind == KEV_COUNT)
			CHECK(set.ev[i].count == want.ev[i].count);
		if (set.ev[i].kind == KEV_RESULT)
			CHECK(json_equal(set.ev[i].results,
			    want.ev[i].results));
		if (set.ev[i].kind == KEV_ERROR)
			CHECK(json_equal(set.ev[i].error, want.ev[i].error));
	}
	kevent_set_clear(&want);
	json_decref(m.header);
out:
	kevent_set_clear(&set);
	json_decref(held);
	json_decref(o);
	return 0;
}
