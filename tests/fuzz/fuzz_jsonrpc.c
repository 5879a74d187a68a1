/*
 * fuzz_jsonrpc.c -- the MCP front end's JSON-RPC 2.0 parser (jsonrpc.c):
 * one message per POST body, and the responses made for it.
 *
 * Input: the body.  Invariants, any break aborts:
 * - a refused body is a parse error or an invalid request, says why, and
 *   keeps an id only when it is a string or an integer;
 * - an accepted request has a non-empty method without a NUL, an id that
 *   is a string or an integer, and params that are absent or an object;
 *   a notification has a method and no id; a response has an id and
 *   exactly one of result and error;
 * - the result and error responses made for any id parse back as
 *   responses to the same id.
 * The same bytes, up to a NUL, are also a Last-Event-ID header and a log
 * level's name: an event id accepted is "S-N" in canonical decimal (it
 * prints back to the same bytes) with S not 0; a level accepted names
 * itself back.  And the bytes as a stdio stream (the gateway's framing,
 * jsonrpc_line) under a small cap: each line taken ends at the first
 * newline, holds none, is at most the cap, and the lines and what is
 * left add up to the input; a refusal comes only with no newline within
 * the cap.  And the bytes as an event stream (gwhttp_sse_line, the
 * gateway's HTTP client): every line is taken whole, an event's data is
 * never longer than the input, and an event ends only with data.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/api/mcp/gwhttp.h"
#include "../../execd/api/mcp/mcp.h"
#include "../../util/buf.h"
#include "fz.h"

/* A response made for id parses back as one, to the same id. */
static void
round_trip(const json_t *id, json_t *v)
{
	struct jsonrpc_msg m;
	char err[256], *s;
	int rc;

	CHECK(v != NULL);
	s = json_dumps(v, JSON_COMPACT);
	CHECK(s != NULL);
	rc = jsonrpc_parse(s, strlen(s), &m, err, sizeof(err));
	CHECK(rc == 0 && m.kind == JSONRPC_RESPONSE);
	CHECK(id == NULL ? json_is_null(json_object_get(m.root, "id")) :
	    json_equal(m.id, id));
	jsonrpc_msg_clear(&m);
	free(s);
	json_decref(v);
}

/* The header and level parsers on the input as a C string. */
static void
headers(const uint8_t *data, size_t n)
{
	char *s = malloc(n + 1), back[64];
	unsigned stream;
	uint64_t no;
	int level;

	CHECK(s != NULL);
	memcpy(s, data, n);
	s[n] = '\0';
	if (mcp_event_id_parse(s, &stream, &no) == 0) {
		CHECK(stream != 0);
		snprintf(back, sizeof(back), "%u-%" PRIu64, stream, no);
		CHECK(strcmp(back, s) == 0);
	}
	level = mcp_log_level(s, strlen(s));
	CHECK(level >= -1 && level < MCP_LOG_NLEVELS);
	if (level >= 0)
		CHECK(strcmp(mcp_log_level_name(level), s) == 0);
	else
		CHECK(mcp_log_level_name(level) == NULL);
	free(s);
}

/* The input as newline-delimited lines, under a cap of max bytes. */
static void
lines(const uint8_t *data, size_t n, size_t max)
{
	const char *p = (const char *)data;
	size_t off = 0, len, used;
	int rc;

	while (off < n) {
		rc = jsonrpc_line(p + off, n - off, max, &len, &used);
		CHECK(rc >= -1 && rc <= 1);
		if (rc <= 0) {
			CHECK(used == 0 && len == 0);
			CHECK(memchr(p + off, '\n', n - off > max ? max + 1 :
			    n - off) == NULL);
			CHECK(rc == 0 ? n - off <= max : n - off > max);
			return;
		}
		CHECK(used >= 1 && used <= max + 1 && off + used <= n);
		CHECK(p[off + used - 1] == '\n');
		CHECK(memchr(p + off, '\n', used - 1) == NULL);
		CHECK(len == used - 1 || (len == used - 2 &&
		    p[off + len] == '\r'));
		off += used;
	}
}

/* The input as an event stream. */
static void
sse(const uint8_t *data, size_t n)
{
	const char *p = (const char *)data;
	struct buf ev;
	size_t off = 0, used;
	int rc;

	buf_init(&ev);
	while ((rc = gwhttp_sse_line(p + off, n - off, &ev, &used)) >= 0) {
		CHECK(used >= 1 && off + used <= n && p[off + used - 1] == '\n');
		CHECK(memchr(p + off, '\n', used - 1) == NULL);
		CHECK(ev.len <= n);
		if (rc == 1) {
			CHECK(ev.len > 0);
			buf_truncate(&ev, 0);
		}
		off += used;
	}
	CHECK(used == 0 && memchr(p + off, '\n', n - off) == NULL);
	buf_reset(&ev);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct jsonrpc_msg m;
	char err[256] = "";
	int rc;

	headers(data, n);
	lines(data, n, 16);
	lines(data, n, n);
	sse(data, n);
	rc = jsonrpc_parse((const char *)data, n, &m, err, sizeof(err));
	if (rc < 0) {
		CHECK(rc == JSONRPC_PARSE_ERROR ||
		    rc == JSONRPC_INVALID_REQUEST);
		CHECK(err[0] != '\0');
		CHECK(rc != JSONRPC_PARSE_ERROR || m.root == NULL);
		CHECK(m.id == NULL || json_is_string(m.id) ||
		    json_is_integer(m.id));
		if (m.id != NULL)
			round_trip(m.id, jsonrpc_error(m.id, rc, err));
		jsonrpc_msg_clear(&m);
		return 0;
	}
	CHECK(json_is_object(m.root));
	switch (m.kind) {
	case JSONRPC_REQUEST:
		CHECK(json_is_string(m.id) || json_is_integer(m.id));
		/* FALLTHROUGH */
	case JSONRPC_NOTIFICATION:
		CHECK(m.method != NULL && m.method[0] != '\0');
		CHECK(strlen(m.method) == json_string_length(
		    json_object_get(m.root, "method")));
		CHECK(m.params == NULL || json_is_object(m.params));
		CHECK(m.kind == JSONRPC_REQUEST ||
		    json_object_get(m.root, "id") == NULL);
		break;
	case JSONRPC_RESPONSE:
		CHECK(m.method == NULL);
		CHECK((json_object_get(m.root, "result") == NULL) !=
		    (json_object_get(m.root, "error") == NULL));
		break;
	default:
		CHECK(!"a kind");
	}
	if (m.kind == JSONRPC_REQUEST) {
		round_trip(m.id, jsonrpc_result(m.id, json_deep_copy(
		    m.params != NULL ? m.params : m.root)));
		round_trip(m.id, jsonrpc_error(m.id, JSONRPC_NO_METHOD,
		    m.method));
	}
	jsonrpc_msg_clear(&m);
	return 0;
}
