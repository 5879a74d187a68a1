/*
 * t_evstream.c -- unit tests for the event-stream layer's error events.
 *
 * Every stream's overflow and final event come from one builder, in the
 * shape of that stream's other events; the bytes here are the ones the
 * integration tests and docs/compatibility.md name (the metrics watch's
 * final event is upstream's).  Opening and driving streams needs a real
 * server and is covered by tests/integration/.  Nothing here does I/O.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/transport/evstream.h"
#include "../t.h"

/* Build one error event and compare it with want. */
static void
check_error(enum evstream_shape shape, const char *ename, const char *msg,
    const char *want)
{
	struct buf b;

	buf_init(&b);
	evstream_fmt_error(&b, shape, ename, msg);
	T_EQ_STR(b.p, want);
	buf_reset(&b);
}

static void
test_typed_shape(void)
{
	check_error(EVSTREAM_TYPED, "Shutdown", "execd is shutting down",
	    "{\"type\":\"error\",\"error\":{\"ename\":\"Shutdown\","
	    "\"evalue\":\"execd is shutting down\",\"traceback\":[]}}\n\n");
}

static void
test_watch_shape(void)
{
	check_error(EVSTREAM_WATCH, "Shutdown", "execd is shutting down",
	    "{\"type\":\"error\",\"error\":\"execd is shutting down\"}\n\n");
}

static void
test_plain_shape(void)
{
	check_error(EVSTREAM_PLAIN, "Shutdown", "execd is shutting down",
	    "{\"error\":\"execd is shutting down\"}\n\n");
}

/* A message is a JSON string: quotes and control bytes are escaped. */
static void
test_message_escaped(void)
{
	check_error(EVSTREAM_PLAIN, "X", "a \"b\"\n",
	    "{\"error\":\"a \\\"b\\\"\\n\"}\n\n");
	check_error(EVSTREAM_TYPED, "E\"", "m",
	    "{\"type\":\"error\",\"error\":{\"ename\":\"E\\\"\","
	    "\"evalue\":\"m\",\"traceback\":[]}}\n\n");
}

/* The overflow of every shape: one event, parseable, saying why. */
static void
test_overflow(void)
{
	static const enum evstream_shape shapes[] = { EVSTREAM_TYPED,
	    EVSTREAM_WATCH, EVSTREAM_PLAIN };
	struct buf b;
	json_error_t je;
	json_t *v;

	buf_init(&b);
	evstream_fmt_overflow(&b, EVSTREAM_TYPED);
	T_EQ_STR(b.p, "{\"type\":\"error\",\"error\":{\"ename\":"
	    "\"StreamOverflow\",\"evalue\":\"the client is not reading: "
	    "stream ended\",\"traceback\":[]}}\n\n");
	buf_reset(&b);
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		buf_init(&b);
		evstream_fmt_overflow(&b, shapes[i]);
		T_OK(b.len > 2 && strcmp(b.p + b.len - 2, "\n\n") == 0);
		T_OK(memchr(b.p, '\n', b.len - 2) == NULL);
		v = json_loadb(b.p, b.len - 2, 0, &je);
		T_OK(v != NULL && json_is_object(v));
		T_OK(strstr(b.p, "the client is not reading") != NULL);
		json_decref(v);
		buf_reset(&b);
	}
}

/* Error events in standard SSE: the same objects, as data. */
static void
test_framed_standard(void)
{
	struct buf b;

	buf_init(&b);
	evstream_fmt_overflow_framed(&b, &sse_framing_standard,
	    EVSTREAM_TYPED);
	T_EQ_STR(b.p, "event: error\ndata: {\"type\":\"error\",\"error\":"
	    "{\"ename\":\"StreamOverflow\",\"evalue\":\"the client is not "
	    "reading: stream ended\",\"traceback\":[]}}\n\n");
	buf_reset(&b);
	evstream_fmt_error_framed(&b, &sse_framing_standard, EVSTREAM_PLAIN,
	    "Shutdown", "bye");
	T_EQ_STR(b.p, "data: {\"error\":\"bye\"}\n\n");
	buf_reset(&b);
	evstream_fmt_error_framed(&b, NULL, EVSTREAM_WATCH, "Shutdown", "m");
	T_EQ_STR(b.p, "{\"type\":\"error\",\"error\":\"m\"}\n\n");
	buf_reset(&b);
}

static const struct t_case cases[] = {
	{ "typed shape", test_typed_shape },
	{ "watch shape", test_watch_shape },
	{ "plain shape", test_plain_shape },
	{ "message escaped", test_message_escaped },
	{ "overflow", test_overflow },
	{ "framed standard", test_framed_standard },
};

int
main(void)
{
	return T_RUN(cases);
}
