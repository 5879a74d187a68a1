/*
 * fuzz_kevent.c -- kernel message content as a run's events: any content
 * a kernel sends, under each message type, through kevent_iopub() and
 * kevent_reply(), each event then written as the stream writes it.
 *
 * Input: a mode byte (the type, and whether a part was dropped), then the
 * content: JSON when jansson reads it, else a stream message whose text
 * is the bytes.  Invariants:
 * - at most KEVENT_MAX events, of the kinds the type allows, in order
 *   (a dropped-part note first, execution_count before its result);
 * - stream text is exactly the content's "text" string, never empty;
 * - every event, formatted, is one line of JSON that jansson reads back,
 *   with its type, and an error event's error has ename, evalue and a
 *   traceback that is a list or null;
 * - a reply is an error exactly when its status is "error" or "aborted".
 */
#include <string.h>

#include <jansson.h>

#include "../../execd/domain/kevent.h"
#include "../../sse/sse_fmt.h"
#include "fz.h"

static const char *const types[] = { "stream", "execute_result",
	"display_data", "update_display_data", "error", "status",
	"execute_input", "clear_output" };

/* Format e as its stream event and read it back. */
static void
check_event(const struct kevent *e)
{
	static const char *const names[] = { NULL, "stdout", "stderr",
		"execution_count", "result", "error" };
	struct sse_event ev = { .type = names[e->kind], .timestamp = 1 };
	struct buf b;
	json_t *v, *err;
	json_error_t je;

	switch (e->kind) {
	case KEV_STDOUT:
	case KEV_STDERR:
		CHECK(e->text != NULL && e->len > 0);
		ev.text = e->text;
		ev.text_len = e->len;
		break;
	case KEV_COUNT:
		CHECK(e->count > 0);
		ev.execution_count = e->count;
		break;
	case KEV_RESULT:
		CHECK(json_is_object(e->results) &&
		    json_object_size(e->results) > 0);
		ev.results = e->results;
		break;
	case KEV_ERROR:
		CHECK(json_is_object(e->error));
		CHECK(json_is_string(json_object_get(e->error, "ename")));
		CHECK(json_is_string(json_object_get(e->error, "evalue")));
		CHECK(json_is_array(json_object_get(e->error, "traceback")) ||
		    json_is_null(json_object_get(e->error, "traceback")));
		CHECK(e->ename != NULL);
		ev.error = e->error;
		break;
	default:
		CHECK(!"an event of no kind");
	}
	buf_init(&b);
	sse_fmt_event(&b, &ev);
	CHECK(b.len > 2 && memcmp(b.p + b.len - 2, "\n\n", 2) == 0);
	CHECK(memchr(b.p, '\n', b.len - 2) == NULL);
	/* Large integral doubles are written as Go writes them, digits only. */
	v = json_loadb(b.p, b.len - 2, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL,
	    &je);
	CHECK(v != NULL);
	CHECK(strcmp(json_string_value(json_object_get(v, "type")) ?: "",
	    ev.type) == 0);
	if (e->kind == KEV_ERROR) {
		err = json_object_get(v, "error");
		CHECK(json_is_object(err));
	}
	json_decref(v);
	buf_reset(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kp_msg m = { 0 };
	struct kevent_set set;
	struct kevent r;
	const char *type, *status;
	json_t *text;
	bool is_error;
	size_t i = 0;

	if (size < 1)
		return 0;
	type = types[data[0] % NELEM(types)];
	m.dropped = data[0] & 0x80 ? size : 0;
	m.header = json_pack("{s:s}", "msg_type", type);
	m.content = json_loadb((const char *)data + 1, size - 1,
	    JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
	if (m.content == NULL)
		m.content = json_pack("{s:s, s:s%}", "name", "stdout", "text",
		    (const char *)data + 1, size - 1);
	if (m.content == NULL)		/* not UTF-8: as a kernel never sends */
		goto out;

	kevent_iopub(&m, &set);
	CHECK(set.n <= KEVENT_MAX);
	if (m.dropped > 0) {
		CHECK(set.n >= 1 && set.ev[0].kind == KEV_STDERR &&
		    set.ev[0].text == set.note);
		i = 1;
	}
	if (strcmp(type, "stream") == 0) {
		text = json_object_get(m.content, "text");
		CHECK(set.n - i == (json_string_length(text) > 0 ? 1u : 0u));
		if (set.n > i)
			CHECK(set.ev[i].len == json_string_length(text) &&
			    memcmp(set.ev[i].text, json_string_value(text),
			    set.ev[i].len) == 0);
	} else if (strcmp(type, "error") == 0) {
		CHECK(set.n - i == 1 && set.ev[i].kind == KEV_ERROR);
	} else if (strcmp(type, "status") == 0 ||
	    strcmp(type, "execute_input") == 0 ||
	    strcmp(type, "clear_output") == 0) {
		CHECK(set.n == i);
	} else {
		if (i < set.n && set.ev[i].kind == KEV_COUNT) {
			CHECK(strcmp(type, "execute_result") == 0);
			i++;
		}
		if (i < set.n && set.ev[i].kind == KEV_RESULT)
			i++;
		CHECK(i == set.n);
	}
	for (size_t k = 0; k < set.n; k++)
		check_event(&set.ev[k]);
	kevent_set_clear(&set);

	status = json_string_value(json_object_get(m.content, "status"));
	is_error = status != NULL && (strcmp(status, "error") == 0 ||
	    strcmp(status, "aborted") == 0);
	CHECK(kevent_reply(m.content, &r) == is_error);
	if (is_error) {
		check_event(&r);
		kevent_clear(&r);
	}
out:
	json_decref(m.header);
	json_decref(m.content);
	return 0;
}
