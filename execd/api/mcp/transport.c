/*
 * transport.c -- MCP's Streamable HTTP transport on /mcp (its sessions
 * are session.c's).
 *
 * POST carries one JSON-RPC message.  initialize makes a session (its id
 * in the Mcp-Session-Id header of the answer) after agreeing a protocol
 * version: the client's when execd serves it, else execd's newest.  Every
 * other message names its session: none is 400, an unknown or ended one
 * 404; an MCP-Protocol-Version header execd does not serve is 400.
 * Notifications and responses from the client are answered 202 with no
 * body.  A request is answered with JSON, or, for a tool call that
 * streams (a progress token, and a client that accepts
 * text/event-stream), with an event stream (call.c) whose events are
 * numbered.  GET with Last-Event-ID resumes such a stream (stream.c
 * holds what it sent); GET without it opens the session's server stream,
 * where resource subscriptions are heard (notify.c).  DELETE ends a
 * session.  logging/setLevel sets the least severe
 * level of the notifications/message sent on a session's streams.
 *
 * The Origin header, when sent, must be a loopback origin (localhost,
 * 127.0.0.0/8, [::1]) or the one --allow-origin names (any with "*"): a
 * browser page elsewhere is refused 403, what the specification asks of
 * servers against DNS rebinding.  Clients that are not browsers send
 * none.  Loop thread.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../../sse/sse_fmt.h"
#include "../../core/log.h"
#include "../execd.h"
#include "../runhold.h"
#include "mcp.h"


static void	 route_post(struct http_req *);
static void	 route_get(struct http_req *);
static void	 set_level(struct http_req *, struct mcp_session *,
		    struct jsonrpc_msg *);
static void	 route_delete(struct http_req *);
static bool	 origin_ok(struct http_req *, const char *);
static void	 reply_msg(struct http_req *, unsigned, json_t *,
		    const char *);
static void	 initialize(struct http_req *, struct jsonrpc_msg *);
static void	 notification(struct mcp_session *, struct jsonrpc_msg *);

#define M	(&dialect_mcp)

const struct http_route mcp_routes[] = {
	{ "POST", "/mcp", HTTP_R_RAW, route_post,
	    "MCP: one JSON-RPC message (Streamable HTTP)", NULL, M },
	{ "GET", "/mcp", 0, route_get,
	    "MCP: the server stream, or a call's resumed after "
	    "Last-Event-ID", NULL, M },
	{ "DELETE", "/mcp", 0, route_delete,
	    "MCP: end a session", NULL, M },
	{ "*", "/mcp/{any}", HTTP_R_PREFIX, NULL, NULL, NULL, M },
};

const size_t mcp_route_count = sizeof(mcp_routes) / sizeof(mcp_routes[0]);


/*
 * Whether an Origin value may call: a loopback origin (scheme://host
 * [:port]), or the one --allow-origin names.
 */
static bool
origin_ok(struct http_req *req, const char *o)
{
	const char *allow = ((struct execd *)http_req_app(req))->conf->
	    allow_origin;
	const char *h = strstr(o, "://");
	size_t n;

	if (allow != NULL && (strcmp(allow, "*") == 0 ||
	    strcmp(allow, o) == 0))
		return true;
	if (h == NULL)
		return false;
	h += 3;
	if (strncmp(h, "[::1]", 5) == 0)
		return h[5] == '\0' || h[5] == ':';
	n = strcspn(h, ":/");
	if (h[n] == '/')
		return false;
	if (n == 9 && strncasecmp(h, "localhost", 9) == 0)
		return true;
	if (n < 9 || n > 15 || strncmp(h, "127.", 4) != 0)
		return false;
	for (size_t i = 4; i < n; i++)
		if (!(h[i] == '.' || (h[i] >= '0' && h[i] <= '9')))
			return false;
	return true;
}

/* status with msg as JSON, and the session id header when sid is set. */
static void
reply_msg(struct http_req *req, unsigned status, json_t *msg,
    const char *sid)
{
	struct buf b;

	buf_init(&b);
	if (sse_fmt_json(&b, msg) < 0)
		fatalx("unencodable JSON-RPC answer");
	json_decref(msg);
	http_reply_text(req, status, "application/json", b.p, b.len,
	    sid != NULL ? "Mcp-Session-Id" : NULL, sid);
	buf_reset(&b);
}

/* initialize: agree a version, open a session. */
static void
initialize(struct http_req *req, struct jsonrpc_msg *m)
{
	const char *want = json_string_value(json_object_get(m->params,
	    "protocolVersion"));
	struct mcp_session *s;
	json_t *r;

	if (want == NULL) {
		reply_msg(req, 200, jsonrpc_error(m->id,
		    JSONRPC_INVALID_PARAMS, "initialize needs params."
		    "protocolVersion, a string"), NULL);
		return;
	}
	if ((s = mcp_session_new(want)) == NULL) {
		http_reply_error(req, 503, HTTP_E_BUSY, "too many MCP "
		    "sessions with calls in flight");
		return;
	}
	r = json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{}}, s:{s:s, s:s, "
	    "s:s}, s:s}", "protocolVersion", mcp_session_proto(s),
	    "capabilities", "tools", "listChanged", 0,
	    "resources", "subscribe", 1, "listChanged", 0, "logging",
	    "serverInfo", "name", "execd", "title", "execd sandbox",
	    "version", "1",
	    "instructions", "Tools run code, shell commands and file "
	    "operations inside this sandbox. Paths are absolute or start "
	    "with ~. Code contexts keep their state between run_code calls "
	    "that name the same context id.");
	reply_msg(req, 200, jsonrpc_result(m->id, r), mcp_session_id(s));
}

/* logging/setLevel: params.level, one of the eight; answered {}. */
static void
set_level(struct http_req *req, struct mcp_session *s, struct jsonrpc_msg *m)
{
	const json_t *v = json_object_get(m->params, "level");
	int level = json_is_string(v) ? mcp_log_level(json_string_value(v),
	    json_string_length(v)) : -1;

	if (level < 0) {
		reply_msg(req, 200, jsonrpc_error(m->id,
		    JSONRPC_INVALID_PARAMS, "logging/setLevel needs "
		    "params.level, one of debug, info, notice, warning, error, "
		    "critical, alert, emergency"), NULL);
		return;
	}
	mcp_session_set_log_level(s, level);
	reply_msg(req, 200, jsonrpc_result(m->id, json_object()), NULL);
}

/* A notification from the client; nothing is answered but 202. */
static void
notification(struct mcp_session *s, struct jsonrpc_msg *m)
{
	struct mcp_call *c;
	const json_t *id;

	if (strcmp(m->method, "notifications/cancelled") != 0)
		return;
	id = json_object_get(m->params, "requestId");
	if (id != NULL && (c = mcp_session_call(s, id)) != NULL)
		mcp_call_cancel(c);
}

/* POST /mcp: one JSON-RPC message. */
static void
route_post(struct http_req *req)
{
	const char *origin = http_req_header(req, "Origin");
	const char *accept = http_req_header(req, "Accept");
	struct jsonrpc_msg m;
	struct mcp_session *s;
	struct mcp_call *c;
	char err[256];
	const void *p;
	size_t n;
	int rc;

	if (origin != NULL && !origin_ok(req, origin)) {
		http_reply_error(req, 403, HTTP_E_FORBIDDEN, "origin '%s' is "
		    "not allowed: only loopback origins and --allow-origin's "
		    "may call /mcp", origin);
		return;
	}
	p = http_req_body(req, &n);
	if ((rc = jsonrpc_parse(p, n, &m, err, sizeof(err))) < 0) {
		reply_msg(req, 400, jsonrpc_error(m.id, rc, err), NULL);
		jsonrpc_msg_clear(&m);
		return;
	}
	if (m.kind == JSONRPC_REQUEST && strcmp(m.method, "initialize") == 0) {
		initialize(req, &m);
		jsonrpc_msg_clear(&m);
		return;
	}
	if ((s = mcp_session_of(req)) == NULL) {
		jsonrpc_msg_clear(&m);
		return;
	}
	if (m.kind != JSONRPC_REQUEST) {
		if (m.kind == JSONRPC_NOTIFICATION)
			notification(s, &m);
		http_reply_text(req, 202, "application/json", "", 0, NULL,
		    NULL);
	} else if (strcmp(m.method, "ping") == 0) {
		reply_msg(req, 200, jsonrpc_result(m.id, json_object()),
		    NULL);
	} else if (strcmp(m.method, "logging/setLevel") == 0) {
		set_level(req, s, &m);
	} else if (strcmp(m.method, "tools/list") == 0) {
		mcp_gateway_list(mcp_call_new(req, s, m.id, NULL, false));
	} else if ((strcmp(m.method, "tools/call") == 0 ||
	    strcmp(m.method, "resources/read") == 0) &&
	    mcp_session_call(s, m.id) != NULL) {
		reply_msg(req, 200, jsonrpc_error(m.id,
		    JSONRPC_INVALID_REQUEST, "a request with this id is still "
		    "in flight"), NULL);
	} else if (strcmp(m.method, "tools/call") == 0 &&
	    mcp_tools_runs(m.params) && runhold(req, route_post)) {
		/* a restore runs: the message is read again after it */
	} else if (strcmp(m.method, "tools/call") == 0) {
		c = mcp_call_new(req, s, m.id, json_object_get(
		    json_object_get(m.params, "_meta"), "progressToken"),
		    accept != NULL && strstr(accept, "text/event-stream") !=
		    NULL);
		mcp_tools_call(c, m.params);
	} else if (strcmp(m.method, "resources/list") == 0) {
		/* too many to list: the template names them all */
		reply_msg(req, 200, jsonrpc_result(m.id, json_pack("{s:[]}",
		    "resources")), NULL);
	} else if (strcmp(m.method, "resources/templates/list") == 0) {
		reply_msg(req, 200, jsonrpc_result(m.id,
		    mcp_resource_templates()), NULL);
	} else if (strcmp(m.method, "resources/subscribe") == 0) {
		mcp_resources_subscribe(mcp_call_new(req, s, m.id, NULL, false),
		    s, m.params);
	} else if (strcmp(m.method, "resources/unsubscribe") == 0) {
		mcp_resources_unsubscribe(mcp_call_new(req, s, m.id, NULL,
		    false), s, m.params);
	} else if (strcmp(m.method, "resources/read") == 0) {
		mcp_resources_read(mcp_call_new(req, s, m.id, NULL, false),
		    m.params);
	} else {
		snprintf(err, sizeof(err), "method not found: %s", m.method);
		reply_msg(req, 200, jsonrpc_error(m.id, JSONRPC_NO_METHOD,
		    err), NULL);
	}
	jsonrpc_msg_clear(&m);
}

/*
 * GET /mcp: with Last-Event-ID "S-N", the stream S of the session named
 * again, from after its event N, if the call is still held; without it
 * the session's server stream.
 */
static void
route_get(struct http_req *req)
{
	const char *origin = http_req_header(req, "Origin");
	const char *last = http_req_header(req, "Last-Event-ID");
	struct mcp_session *s;
	struct mcp_call *c;
	unsigned no;
	uint64_t n;

	if (origin != NULL && !origin_ok(req, origin)) {
		http_reply_error(req, 403, HTTP_E_FORBIDDEN, "origin '%s' is "
		    "not allowed: only loopback origins and --allow-origin's "
		    "may call /mcp", origin);
		return;
	}
	if ((s = mcp_session_of(req)) == NULL)
		return;
	if (last == NULL) {
		mcp_notify_open(s, req);
		return;
	}
	if (mcp_event_id_parse(last, &no, &n) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "Last-Event-ID "
		    "'%.64s' is not an event id of execd's (S-N)", last);
		return;
	}
	if ((c = mcp_session_stream(s, no)) == NULL) {
		/* not 404, which would say the session is gone */
		http_reply_error(req, 400, HTTP_E_BODY, "stream %u is not "
		    "held any more (or never was) in this session", no);
		return;
	}
	mcp_call_resume(c, req, n);
}

/* DELETE /mcp: end the session named. */
static void
route_delete(struct http_req *req)
{
	struct mcp_session *s;

	if ((s = mcp_session_of(req)) == NULL)
		return;
	mcp_session_end(s);
	http_reply_empty(req);
}
