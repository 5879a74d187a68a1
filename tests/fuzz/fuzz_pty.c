/*
 * fuzz_pty.c -- fuzz target for what a /pty client sends: its messages
 * (JSON control frames: stdin, signal, resize, ping; and binary 0x00
 * input) through term_msg_parse(), and the query of GET /pty/{id}/ws
 * (since, viewer, takeover, pty) through term_opts_parse().  WebSocket
 * framing itself is not fuzzed here.
 *
 * Byte 0 picks: bit 0 a viewer, bit 1 a binary frame, bit 3 the query
 * ("k=v&k=v") instead of a message.  Invariants, any break aborts: each
 * message asks exactly what a model of the protocol says -- ping: one
 * pong; stdin (writer, non-empty data): those bytes; a known signal: that
 * signal; another signal: nothing sent; resize with 1..65535 integers:
 * that size; an unknown type: one error reply INVALID_FRAME; JSON that
 * does not parse: nothing; a viewer: nothing but pongs -- and every reply
 * is a JSON object with a string "type"; the query sets since to its
 * decimal value (0 for anything else, as upstream) and each flag only for
 * its exact value.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/api/opensandbox/term.h"
#include "../../execd/transport/ws.h"
#include "fz.h"

/* What a reply says: its "type" and "code". */
static struct {
	int	 nreply;
	char	 type[64], code[64];
} f;

/* A reply, if any: a JSON object with a string "type". */
static void
check_reply(const struct term_msg *m)
{
	json_error_t e;
	json_t *v;

	f.nreply = 0;
	if (m->reply.len == 0)
		return;
	v = json_loadb(m->reply.p, m->reply.len, 0, &e);
	CHECK(json_is_object(v));
	CHECK(json_is_string(json_object_get(v, "type")));
	snprintf(f.type, sizeof(f.type), "%s",
	    json_string_value(json_object_get(v, "type")));
	snprintf(f.code, sizeof(f.code), "%s",
	    json_string_value(json_object_get(v, "code")) ?: "");
	json_decref(v);
	f.nreply = 1;
}

/* The signal a name stands for, or 0. */
static int
sig_of(const char *s)
{
	static const char *const names[] = { "SIGINT", "SIGTERM", "SIGKILL",
	    "SIGQUIT", "SIGHUP" };
	static const int nums[] = { SIGINT, SIGTERM, SIGKILL, SIGQUIT,
	    SIGHUP };

	for (size_t i = 0; s != NULL && i < NELEM(names); i++)
		if (strcmp(s, names[i]) == 0)
			return nums[i];
	return 0;
}

/* One control frame against the model. */
static void
check_control(bool viewer, const char *p, size_t n)
{
	json_error_t e;
	json_t *v = json_loadb(p, n, 0, &e), *x, *cols, *rows;
	struct term_msg m;
	const char *type;
	long long w, h;

	term_msg_parse(&m, viewer, WS_TEXT, p, n);
	check_reply(&m);
	if (v == NULL) {
		CHECK(m.op == TERM_MSG_NONE && f.nreply == 0);
		term_msg_reset(&m);
		return;
	}
	type = json_string_value(json_object_get(v, "type")) ?: "";
	if (strcmp(type, "ping") == 0) {
		CHECK(f.nreply == 1 && strcmp(f.type, "pong") == 0);
		CHECK(m.op == TERM_MSG_NONE);
	} else if (viewer) {
		CHECK(f.nreply == 0 && m.op == TERM_MSG_NONE);
	} else if (strcmp(type, "stdin") == 0) {
		x = json_object_get(v, "data");
		if (json_is_string(x) && json_string_length(x) > 0 &&
		    json_string_value(x)[0] != '\0')
			CHECK(m.op == TERM_MSG_STDIN &&
			    m.n == json_string_length(x) &&
			    memcmp(m.p, json_string_value(x), m.n) == 0);
		else
			CHECK(m.op == TERM_MSG_NONE);
	} else if (strcmp(type, "signal") == 0) {
		x = json_object_get(v, "signal");
		if (sig_of(json_string_value(x)) != 0)
			CHECK(m.op == TERM_MSG_SIGNAL &&
			    m.sig == sig_of(json_string_value(x)));
		else
			CHECK(m.op == TERM_MSG_BADSIG);
	} else if (strcmp(type, "resize") == 0) {
		cols = json_object_get(v, "cols");
		rows = json_object_get(v, "rows");
		w = json_integer_value(cols);
		h = json_integer_value(rows);
		if (json_is_integer(cols) && json_is_integer(rows) && w >= 1 &&
		    w <= 65535 && h >= 1 && h <= 65535)
			CHECK(m.op == TERM_MSG_RESIZE && m.cols == w &&
			    m.rows == h);
		else
			CHECK(m.op == TERM_MSG_NONE);
	} else {
		CHECK(f.nreply == 1 && strcmp(f.type, "error") == 0 &&
		    strcmp(f.code, "INVALID_FRAME") == 0);
		CHECK(m.op == TERM_MSG_NONE);
	}
	if (strcmp(type, "ping") != 0 && (viewer || strcmp(type, "stdin") ==
	    0 || strcmp(type, "resize") == 0 || strcmp(type, "signal") == 0))
		CHECK(f.nreply == 0);
	term_msg_reset(&m);
	json_decref(v);
}

/* The first value of key in a "k=v&k=v" query, or NULL. */
static const char *
query_get(const char *q, size_t qlen, const char *key)
{
	static char vals[8][4096];	/* stable, as MHD's values are */
	static unsigned nv;
	char *val = vals[nv++ % 8];
	const char *p = q, *end = q + qlen, *amp, *eq;
	size_t klen = strlen(key);

	for (; p < end; p = amp + 1) {
		if ((amp = memchr(p, '&', (size_t)(end - p))) == NULL)
			amp = end;
		eq = memchr(p, '=', (size_t)(amp - p));
		if ((size_t)((eq != NULL ? eq : amp) - p) != klen ||
		    memcmp(p, key, klen) != 0)
			continue;
		if (eq == NULL)
			return "";
		snprintf(val, sizeof(vals[0]), "%.*s", (int)(amp - eq - 1),
		    eq + 1);
		return val;
	}
	return NULL;
}

/* since as upstream reads it: decimal digits that fit, else 0. */
static uint64_t
since_model(const char *s)
{
	uint64_t v = 0;

	if (s == NULL || *s == '\0')
		return 0;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s -
		    '0')) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v;
}

/* One query against the model. */
static void
check_query(const char *q, size_t n)
{
	const char *since = query_get(q, n, "since");
	const char *viewer = query_get(q, n, "viewer");
	const char *takeover = query_get(q, n, "takeover");
	const char *pty = query_get(q, n, "pty");
	struct term_opts o;

	term_opts_parse(&o, since, viewer, takeover, pty);
	CHECK(o.since == since_model(since));
	CHECK(o.viewer == (viewer != NULL && strcmp(viewer, "1") == 0));
	CHECK(o.takeover == (takeover != NULL && strcmp(takeover, "1") == 0));
	CHECK(o.pipe == (pty != NULL && strcmp(pty, "0") == 0));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct term_msg m;
	const char *p;
	bool viewer;
	size_t n;

	if (size < 1)
		return 0;
	p = (const char *)data + 1;
	n = size - 1;
	memset(&f, 0, sizeof(f));
	viewer = data[0] & 1;
	if (data[0] & 8) {
		check_query(p, n);
	} else if (data[0] & 2) {
		term_msg_parse(&m, viewer, WS_BINARY, p, n);
		if (!viewer && n > 1 && p[0] == 0)
			CHECK(m.op == TERM_MSG_STDIN && m.n == n - 1 &&
			    memcmp(m.p, p + 1, n - 1) == 0);
		else
			CHECK(m.op == TERM_MSG_NONE);
		CHECK(m.reply.len == 0);
		term_msg_reset(&m);
	} else {
		check_control(viewer, p, n);
	}
	return 0;
}
