/*
 * session.c -- MCP sessions: made by initialize with a protocol version
 * agreed, named by the Mcp-Session-Id header of every later message,
 * holding their calls (in flight, or kept for a resume) and the log level
 * logging/setLevel set; at most MCP_SESSIONS_MAX, past which the one idle
 * longest with no call in flight is ended.  Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../util/id.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "mcp.h"

struct mcp_session {
	char			 id[ID_UUID_LEN + 1];
	char			 proto[16];
	uint64_t		 used;		/* loop ms of the last message */
	int			 log_level;	/* MCP_LOG_*: sent from it up */
	struct mcp_call		*calls;		/* in flight, or kept */
	struct mcp_session	*next;
};

static struct mcp_session	*sessions;
static unsigned			 nsessions;

static const char *const	 protos[] = { MCP_PROTO_LATEST,
				    MCP_PROTO_OLDER };

static bool	 busy(const struct mcp_session *);

void
mcp_shutdown(void)
{
	while (sessions != NULL)
		mcp_session_end(sessions);
	mcp_gateway_shutdown();
}

bool
mcp_proto_ok(const char *v)
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
struct mcp_session *
mcp_session_new(const char *want)
{
	const char *proto = mcp_proto_ok(want) ? want : MCP_PROTO_LATEST;
	struct mcp_session *s, *old = NULL;

	if (nsessions >= MCP_SESSIONS_MAX) {
		for (s = sessions; s != NULL; s = s->next)
			if (!busy(s) && (old == NULL ||
			    s->used < old->used))
				old = s;
		if (old == NULL)
			return NULL;
		mcp_session_end(old);
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
void
mcp_session_end(struct mcp_session *s)
{
	struct mcp_session **pp;
	struct mcp_call *c;

	while ((c = s->calls) != NULL) {
		mcp_session_detach(s, c);
		mcp_call_orphan(c);
	}
	mcp_notify_end(s);
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
mcp_session_set_log_level(struct mcp_session *s, int level)
{
	s->log_level = level;
}

const char *
mcp_session_id(const struct mcp_session *s)
{
	return s->id;
}

const char *
mcp_session_proto(const struct mcp_session *s)
{
	return s->proto;
}

/* The call of s whose stream is number no, or NULL. */
struct mcp_call *
mcp_session_stream(struct mcp_session *s, unsigned no)
{
	for (struct mcp_call *c = s->calls; c != NULL; c = *mcp_call_nextp(c))
		if (mcp_call_stream_no(c) == no)
			return c;
	return NULL;
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
struct mcp_session *
mcp_session_of(struct http_req *req)
{
	const char *id = http_req_header(req, "Mcp-Session-Id");
	const char *v = http_req_header(req, "MCP-Protocol-Version");
	struct mcp_session *s;

	if (v != NULL && !mcp_proto_ok(v)) {
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

