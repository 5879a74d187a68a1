/*
 * jsonrpc.c -- JSON-RPC 2.0 messages as MCP uses them: one message per
 * body, parsed and checked, and the responses and notifications execd
 * sends.  Pure: no HTTP, no state; any thread.
 *
 * What MCP narrows in JSON-RPC is taken as written: an id is a string or
 * an integer (never null), params are an object.  A batch (an array) is
 * refused as an invalid request: 2025-06-18 removed batches, and execd
 * answers each POST with one message for every version it serves.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mcp.h"

static int	refuse(struct jsonrpc_msg *, char *, size_t, const char *, ...)
		    __attribute__((format(printf, 4, 5)));
static bool	id_ok(const json_t *);

/* Write why into err and answer an invalid request. */
static int
refuse(struct jsonrpc_msg *m, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	(void)m;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return JSONRPC_INVALID_REQUEST;
}

/* A string or an integer. */
static bool
id_ok(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

/* One message; see mcp.h. */
int
jsonrpc_parse(const char *p, size_t n, struct jsonrpc_msg *m, char *err,
    size_t errlen)
{
	json_error_t je;
	json_t *v, *id, *method, *params, *ver;
	bool has_result, has_error;

	memset(m, 0, sizeof(*m));
	if ((v = json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
	    &je)) == NULL) {
		snprintf(err, errlen, "parse error: %s (line %d, column %d)",
		    je.text, je.line, je.column);
		return JSONRPC_PARSE_ERROR;
	}
	m->root = v;
	if (json_is_array(v))
		return refuse(m, err, errlen, "JSON-RPC batches are not "
		    "supported: send one message per request");
	if (!json_is_object(v))
		return refuse(m, err, errlen, "a JSON-RPC message is an "
		    "object");
	id = json_object_get(v, "id");
	if (id != NULL && id_ok(id))
		m->id = id;
	ver = json_object_get(v, "jsonrpc");
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)
		return refuse(m, err, errlen, "\"jsonrpc\" must be \"2.0\"");
	method = json_object_get(v, "method");
	if (method != NULL) {
		if (!json_is_string(method) || json_string_length(method) == 0 ||
		    strlen(json_string_value(method)) !=
		    json_string_length(method))
			return refuse(m, err, errlen, "\"method\" must be a "
			    "non-empty string");
		if (id != NULL && !id_ok(id))
			return refuse(m, err, errlen, "\"id\" must be a string "
			    "or an integer");
		params = json_object_get(v, "params");
		if (params != NULL && !json_is_object(params))
			return refuse(m, err, errlen, "\"params\" must be an "
			    "object");
		m->method = json_string_value(method);
		m->params = params;
		m->kind = id != NULL ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
		return 0;
	}
	has_result = json_object_get(v, "result") != NULL;
	has_error = json_object_get(v, "error") != NULL;
	if (has_result == has_error)
		return refuse(m, err, errlen, "a message needs a \"method\", "
		    "or exactly one of \"result\" and \"error\"");
	if (id == NULL || (!id_ok(id) && !(has_error && json_is_null(id))))
		return refuse(m, err, errlen, "a response needs the \"id\" "
		    "of its request");
	m->kind = JSONRPC_RESPONSE;
	return 0;
}

void
jsonrpc_msg_clear(struct jsonrpc_msg *m)
{
	json_decref(m->root);
	memset(m, 0, sizeof(*m));
}

/* {"jsonrpc":"2.0","id":id,"result":result} */
json_t *
jsonrpc_result(const json_t *id, json_t *result)
{
	return json_pack("{s:s, s:o, s:o}", "jsonrpc", "2.0", "id",
	    id != NULL ? json_deep_copy(id) : json_null(), "result",
	    result != NULL ? result : json_object());
}

/* {"jsonrpc":"2.0","id":id,"error":{"code","message"}} */
json_t *
jsonrpc_error(const json_t *id, int code, const char *msg)
{
	/* any bytes: the encoder (sse_fmt.h) replaces what is not UTF-8 */
	return json_pack("{s:s, s:o, s:{s:i, s:o}}", "jsonrpc", "2.0", "id",
	    id != NULL ? json_deep_copy(id) : json_null(), "error", "code",
	    code,
	    "message", json_string_nocheck(msg));
}

/* {"jsonrpc":"2.0","method":method,"params":params} */
json_t *
jsonrpc_notification(const char *method, json_t *params)
{
	json_t *v = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method",
	    method);

	if (params != NULL)
		json_object_set_new(v, "params", params);
	return v;
}

/* The levels of notifications/message, least severe first (RFC 5424's). */
static const char *const levels[MCP_LOG_NLEVELS] = { "debug", "info",
    "notice", "warning", "error", "critical", "alert", "emergency" };

int
mcp_log_level(const char *name, size_t n)
{
	for (int i = 0; i < MCP_LOG_NLEVELS; i++)
		if (strlen(levels[i]) == n && memcmp(levels[i], name, n) == 0)
			return i;
	return -1;
}

const char *
mcp_log_level_name(int level)
{
	return level >= 0 && level < MCP_LOG_NLEVELS ? levels[level] : NULL;
}

/* A decimal number without sign or leading zero, up to max; or -1. */
static int
decimal(const char **pp, uint64_t max, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;

	if (*p < '0' || *p > '9' || (*p == '0' && p[1] >= '0' &&
	    p[1] <= '9'))
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (max - (uint64_t)(*p - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*pp = p;
	*out = v;
	return 0;
}

/* "S-N"; see mcp.h. */
int
mcp_event_id_parse(const char *s, unsigned *stream, uint64_t *n)
{
	uint64_t a, b;

	if (decimal(&s, UINT32_MAX, &a) < 0 || *s++ != '-' ||
	    decimal(&s, UINT64_MAX, &b) < 0 || *s != '\0' || a == 0)
		return -1;
	*stream = (unsigned)a;
	*n = b;
	return 0;
}

/* One line of a newline-delimited stream; see mcp.h. */
int
jsonrpc_line(const char *p, size_t n, size_t max, size_t *len, size_t *used)
{
	const char *nl = memchr(p, '\n', n > max ? max + 1 : n);

	*len = *used = 0;
	if (nl == NULL)
		return n > max ? -1 : 0;
	*used = (size_t)(nl - p) + 1;
	*len = (size_t)(nl - p);
	if (*len > 0 && p[*len - 1] == '\r')
		(*len)--;
	return 1;
}
