/*
 * transport.c -- MCP's Streamable HTTP transport on /mcp, and its
 * sessions.
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
 * numbered.  GET with Last-Event-ID resumes such a stream (call.c holds
 * what it sent); GET without it is 405, execd offering no stream of its
 * own.  DELETE ends a session.  logging/setLevel sets the least severe
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

#include "../../../util/id.h"
#include "../../../sse/sse_fmt.h"
#include "../../core/log.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../execd.h"
#include "mcp.h"

struct mcp_session {
	char			 id[ID_UUID_LEN + 1];
	char			 proto[16];
	uint64_t		 used;		/* loop ms of the last message */
	int			 log_level;	/* MCP_LOG_*: sent from it up */
	struct mcp_call		*calls;		/* in flight */
	struct mcp_session	*next;
};

static struct mcp_session	*sessions;
static unsigned			 nsessions;

static const char *const	 protos[] = { MCP_PROTO_LATEST,
				    MCP_PROTO_OLDER };

static void	 route_post(struct http_req *);
static void	 route_get(struct http_req *);
static bool	 busy(const struct mcp_session *);
static void	 set_level(struct http_req *, struct mcp_session *,
		    struct jsonrpc_msg *);
static void	 route_delete(struct http_req *);
static bool	 origin_ok(struct http_req *, const char *);
static bool	 proto_ok(const char *);
static struct mcp_session *session_new(const char *);
static void	 session_free(struct mcp_session *);
static struct mcp_session *session_of(struct http_req *);
static void	 reply_msg(struct http_req *, unsigned, json_t *,
		    const char *);
static void	 initialize(struct http_req *, struct jsonrpc_msg *);
static void	 notification(struct mcp_session *, struct jsonrpc_msg *);

#define M	(&dialect_mcp)

const struct http_route mcp_routes[] = {
	{ "POST", "/mcp", HTTP_R_RAW, route_post,
	    "MCP: one JSON-RPC message (Streamable HTTP)", NULL, M },
	{ "GET", "/mcp", 0, route_get,
	    "MCP: resume a call's event stream after Last-Event-ID", NULL,
	    M },
	{ "DELETE", "/mcp", 0, route_delete,
	    "MCP: end a session", NULL, M },
	{ "*", "/mcp/{any}", HTTP_R_PREFIX, NULL, NULL, NULL, M },
};

const size_t mcp_route_count = sizeof(mcp_routes) / sizeof(mcp_routes[0]);

void
mcp_shutdown(void)
{
	while (sessions != NULL)
		session_free(sessions);
}

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

static bool
proto_ok(const char *v)
{
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (strcmp(v, protos[i]) == 0)
			return true;
	return false;
}

/*
 * A new session, or NULL when MCP_SESSIONS_MAX are open and each has a
 * call in flight; past the cap the longest idle one without calls goes.
 */
static struct mcp_session *
session_new(const char *proto)
{
	struct mcp_session *s, *old = NULL;

	if (nsessions >= MCP_SESSIONS_MAX) {
		for (s = sessions; s != NULL; s = s->next)
			if (!busy(s) && (old == NULL ||
			    s->used < old->used))
				old = s;
		if (old == NULL)
			return NULL;
		session_free(old);
	}
	s = xcalloc(1, sizeof(*s));
	id_uuid(s->id);
	snprintf(s->proto, sizeof(s->proto), "%s", proto);
	s->log_level = MCP_LOG_INFO;
	s->used = loop_now_ms();
	s->next = sessions;
	sessions = s;
	nsessions++;
	return s;
}

/* End a session: its calls go on, answering only their own requests. */
static void
session_free(struct mcp_session *s)
{
	struct mcp_session **pp;
	struct mcp_call *c;

	while ((c = s->calls) != NULL) {
		mcp_session_detach(s, c);
		mcp_call_orphan(c);
	}
	for (pp = &sessions; *pp != s; pp = &(*pp)->next)
		;
	*pp = s->next;
	nsessions--;
	free(s);
}

struct mcp_call *
mcp_session_call(struct mcp_session *s, const json_t *id)
{
	for (struct mcp_call **c = &s->calls; *c != NULL;
	    c = mcp_call_nextp(*c))
		if (!mcp_call_answered(*c) && json_equal(mcp_call_id(*c), id))
			return *c;
	return NULL;
}

/* Whether a call of s is in flight (not only kept for a resume). */
static bool
busy(const struct mcp_session *s)
{
	for (struct mcp_call *const *c = &s->calls; *c != NULL;
	    c = mcp_call_nextp(*c))
		if (!mcp_call_answered(*c))
			return true;
	return false;
}

int
mcp_session_log_level(const struct mcp_session *s)
{
	return s->log_level;
}

void
mcp_session_attach(struct mcp_session *s, struct mcp_call *c)
{
	*mcp_call_nextp(c) = s->calls;
	s->calls = c;
}

void
mcp_session_detach(struct mcp_session *s, struct mcp_call *c)
{
	struct mcp_call **pp;

	for (pp = &s->calls; *pp != NULL; pp = mcp_call_nextp(*pp))
		if (*pp == c) {
			*pp = *mcp_call_nextp(c);
			break;
		}
	*mcp_call_nextp(c) = NULL;
}

/*
 * The session a request names (Mcp-Session-Id), its protocol header
 * checked; NULL after answering 400 or 404.
 */
static struct mcp_session *
session_of(struct http_req *req)
{
	const char *id = http_req_header(req, "Mcp-Session-Id");
	const char *v = http_req_header(req, "MCP-Protocol-Version");
	struct mcp_session *s;

	if (v != NULL && !proto_ok(v)) {
		http_reply_error(req, 400, HTTP_E_BODY, "unsupported "
		    "MCP-Protocol-Version '%s': execd serves %s and %s", v,
		    MCP_PROTO_LATEST, MCP_PROTO_OLDER);
		return NULL;
	}
	if (id == NULL || id[0] == '\0') {
		http_reply_error(req, 400, HTTP_E_BODY, "missing "
		    "Mcp-Session-Id header: send initialize first");
		return NULL;
	}
	for (s = sessions; s != NULL; s = s->next)
		if (strcmp(s->id, id) == 0) {
			s->used = loop_now_ms();
			return s;
		}
	http_reply_error(req, 404, HTTP_E_NOT_FOUND, "session %s not found "
	    "or ended: initialize a new one", id);
	return NULL;
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
	if ((s = session_new(proto_ok(want) ? want : MCP_PROTO_LATEST)) ==
	    NULL) {
		http_reply_error(req, 503, HTTP_E_BUSY, "too many MCP "
		    "sessions with calls in flight");
		return;
	}
	r = json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}, s:{}}, s:{s:s, s:s, "
	    "s:s}, s:s}", "protocolVersion", s->proto,
	    "capabilities", "tools", "listChanged", 0,
	    "resources", "subscribe", 0, "listChanged", 0, "logging",
	    "serverInfo", "name", "execd", "title", "execd sandbox",
	    "version", "1",
	    "instructions", "Tools run code, shell commands and file "
	    "operations inside this sandbox. Paths are absolute or start "
	    "with ~. Code contexts keep their state between run_code calls "
	    "that name the same context id.");
	reply_msg(req, 200, jsonrpc_result(m->id, r), s->id);
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
	s->log_level = level;
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
	if ((s = session_of(req)) == NULL) {
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
		reply_msg(req, 200, jsonrpc_result(m.id, mcp_tools_list()),
		    NULL);
	} else if ((strcmp(m.method, "tools/call") == 0 ||
	    strcmp(m.method, "resources/read") == 0) &&
	    mcp_session_call(s, m.id) != NULL) {
		reply_msg(req, 200, jsonrpc_error(m.id,
		    JSONRPC_INVALID_REQUEST, "a request with this id is still "
		    "in flight"), NULL);
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
 * 405 (execd sends nothing outside a request's answer).
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
	if (last == NULL) {
		http_reply_error(req, 405, HTTP_E_METHOD, "execd offers no "
		    "server stream on GET /mcp; GET only resumes a call's "
		    "stream with Last-Event-ID");
		return;
	}
	if ((s = session_of(req)) == NULL)
		return;
	if (mcp_event_id_parse(last, &no, &n) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "Last-Event-ID "
		    "'%.64s' is not an event id of execd's (S-N)", last);
		return;
	}
	for (c = s->calls; c != NULL; c = *mcp_call_nextp(c))
		if (mcp_call_stream_no(c) == no)
			break;
	if (c == NULL) {
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

	if ((s = session_of(req)) == NULL)
		return;
	session_free(s);
	http_reply_empty(req);
}
