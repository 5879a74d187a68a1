/*
 * gwcall.c -- the calls of the MCP gateway: a tools/call of SERVER__tool
 * relayed to the server the policy file names (gateway.c keeps the
 * server's life; gateway.h is what the two share), and list_mcp_servers.
 *
 * A call to a running server goes at once, as tools/call under an id of
 * execd's own mapped back to the client's call; one to a server that is
 * idle, dead or starting waits, in order, for the server to be ready,
 * and starting it is asked for.  Progress the server sends for a call
 * goes to the client under the client's token; a client's
 * notifications/cancelled goes to the server as one naming execd's id,
 * and the call is answered at once.  A client that leaves has its answer
 * dropped when it comes.  Loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../config/conf.h"
#include "../../core/xmalloc.h"
#include "gateway.h"
#include "mcp.h"

static bool	 waits(const struct gw_server *, const struct mcp_call *);
static bool	 wait_unlink(struct gw_wait *);
static void	 wait_gone(void *);
static void	 wait_cancel(void *);
static void	 pend_gone(void *);
static void	 pend_cancel(void *);

/* Send a call to a running server; see gateway.h. */
void
gw_relay(struct gw_server *s, struct mcp_call *c, const char *tool,
    const json_t *params, bool later)
{
	struct gw_pending *p;
	json_t *up, *t;
	const json_t *tok;
	long long id;
	size_t i;
	bool known = false;

	json_array_foreach(s->tools, i, t)
		if (json_is_string(json_object_get(t, "name")) &&
		    strcmp(json_string_value(json_object_get(t, "name")), tool)
		    == 0)
			known = true;
	if (!known) {
		char err[400];

		snprintf(err, sizeof(err), "unknown tool: %.100s" GW_SEP
		    "%.100s (server '%s' has no tool '%.100s')", s->cf->name,
		    tool, s->cf->name, tool);
		mcp_call_rpc_error(c, JSONRPC_INVALID_PARAMS, err);
		return;
	}
	up = json_pack("{s:s}", "name", tool);
	if (json_object_get(params, "arguments") != NULL)
		json_object_set(up, "arguments", json_object_get(params,
		    "arguments"));
	/* The server's progress names execd's id, the next one. */
	tok = json_object_get(json_object_get(params, "_meta"),
	    "progressToken");
	if (tok != NULL)
		json_object_set_new(up, "_meta", json_pack("{s:I}",
		    "progressToken", (json_int_t)(s->next_id + 1)));
	id = gw_srv_request(s, P_CALL, c, "tools/call", up);
	if (id < 0) {
		mcp_call_fail(c, "the call is over 1 MiB as a message: more "
		    "than execd passes to an MCP server at once");
		return;
	}
	if (s->pending == NULL || s->pending->id != id)
		return;		/* the server was stopped: c is answered */
	p = s->pending;
	mcp_call_on_cancel(c, pend_cancel, pend_gone, p);
	if (later)
		mcp_call_later(c, true);
}

/* Whether call c waits for server s to start. */
static bool
waits(const struct gw_server *s, const struct mcp_call *c)
{
	for (const struct gw_wait *w = s->waiting; w != NULL; w = w->next)
		if (w->call == c)
			return true;
	return false;
}

/* tools/call of a name not execd's; see mcp.h. */
bool
mcp_gateway_call(struct mcp_call *c, const char *name, const json_t *params)
{
	struct gw_server *s;
	struct gw_wait *w, **pp;
	const char *tool;

	gw_init(c);
	if (!gw_any())
		return false;
	if (strcmp(name, "list_mcp_servers") == 0) {
		gw_list_servers(c);
		return true;
	}
	if ((s = gw_server_of(name, &tool)) == NULL)
		return false;
	if (s->state == GW_RUNNING && !s->flooded) {
		gw_relay(s, c, tool, params, true);
		return true;
	}
	w = xcalloc(1, sizeof(*w));
	w->call = c;
	w->srv = s;
	w->tool = xstrdup(tool);
	w->params = json_deep_copy(params);
	for (pp = &s->waiting; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = w;
	mcp_call_on_cancel(c, wait_cancel, wait_gone, w);
	(void)gw_srv_wake(s);
	if (waits(s, c))	/* else it failed to start: c is answered */
		mcp_call_later(c, true);
	return true;
}

/* Unlink a waiting call; true if it was there. */
static bool
wait_unlink(struct gw_wait *w)
{
	struct gw_wait **pp;

	for (pp = &w->srv->waiting; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			return true;
		}
	return false;
}

static void
wait_gone(void *arg)
{
	struct gw_wait *w = arg;

	if (wait_unlink(w)) {
		free(w->tool);
		json_decref(w->params);
		free(w);
	}
}

static void
wait_cancel(void *arg)
{
	struct gw_wait *w = arg;
	struct mcp_call *c = w->call;

	wait_gone(w);
	mcp_call_on_cancel(c, NULL, NULL, NULL);
	mcp_call_fail(c, "cancelled before the MCP server had started");
}

/* The client left: the server's answer will go nowhere. */
static void
pend_gone(void *arg)
{
	struct gw_pending *p = arg;

	p->call = NULL;
}

/* notifications/cancelled: told to the server; the call ends now. */
static void
pend_cancel(void *arg)
{
	struct gw_pending *p = arg;
	struct gw_server *s = p->srv;
	struct mcp_call *c = p->call;
	struct gw_pending **pp;

	for (pp = &s->pending; *pp != NULL && *pp != p; pp = &(*pp)->next)
		;
	if (*pp != NULL)
		*pp = p->next;
	gw_srv_send(s, jsonrpc_notification("notifications/cancelled",
	    json_pack("{s:I, s:s}", "requestId", (json_int_t)p->id, "reason",
	    "the client cancelled the call")));
	free(p);
	mcp_call_on_cancel(c, NULL, NULL, NULL);
	mcp_call_fail(c, "cancelled; MCP server '%s' was told "
	    "(notifications/cancelled)", s->cf->name);
}

/* A call's response from its server; see gateway.h. */
void
gw_call_answered(struct gw_pending *p, const json_t *res, const json_t *e,
    const char *emsg)
{
	if (p->call == NULL)
		return;
	mcp_call_on_cancel(p->call, NULL, NULL, NULL);
	if (e != NULL)
		mcp_call_rpc_error(p->call, json_is_integer(
		    json_object_get(e, "code")) ? (int)
		    json_integer_value(json_object_get(e, "code")) :
		    JSONRPC_INTERNAL, emsg != NULL ? emsg : "error");
	else if (!json_is_object(res))
		mcp_call_fail(p->call, "MCP server '%s' answered "
		    "without a result", p->srv->cf->name);
	else
		mcp_call_result(p->call, json_deep_copy(res));
}

/* Progress for the call whose token (execd's id) it names; see gateway.h. */
void
gw_progress(struct gw_server *s, const json_t *params)
{
	const json_t *tok = json_object_get(params, "progressToken");
	struct gw_pending *q;

	for (q = s->pending; q != NULL; q = q->next)
		if (q->call != NULL && json_is_integer(tok) &&
		    json_integer_value(tok) == q->id)
			break;
	if (q != NULL)
		mcp_call_progress_relay(q->call, json_deep_copy(params));
}
