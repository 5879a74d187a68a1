/*
 * gateway.c -- the MCP servers the policy file names (mcp_servers): each
 * server's life, and tools/list.  The calls relayed to them are
 * gwcall.c's; what the two share is gateway.h.
 *
 * A server with a command is started when first needed (a tools/list, or
 * a call of one of its tools) as a job (job.h): the spawn path of every
 * command, so under the same sandbox profile, identity, limits and
 * cgroup, with its stdin and stdout pipes on the loop.  execd speaks
 * MCP's stdio transport to it, one JSON-RPC message per line: initialize,
 * notifications/initialized, tools/list (every page), then the calls.
 * Its tools are listed as SERVER__tool beside execd's own.
 *
 * A line from the server over GW_LINE_MAX bytes is flooding: the server
 * is stopped.  Its stderr is kept only as a tail, for messages.  A server
 * that ends (exits, is killed, floods, or does not finish starting in
 * GW_START_MS) answers each call it had with a tool error naming it, how
 * it ended and its stderr's tail; the next call starts it again.  Its
 * tools stay listed meanwhile, so a client can still call them.
 *
 * A url server is reached over loopback HTTP instead (gwhttp.c, one
 * POST per message, answers as JSON or an event stream), with the
 * session its initialize answer names; the same messages, the same
 * handling.  One that cannot be reached, answers an error status, or
 * ends the session (404) is dead: its calls fail, the next call connects
 * and initializes again.  Loop thread.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <jansson.h>

#include "../../../util/buf.h"
#include "../../config/conf.h"
#include "../../core/log.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../../process/envfile.h"
#include "../../process/job.h"
#include "../execd.h"
#include "gateway.h"
#include "gwhttp.h"
#include "mcp.h"

static const char *const state_names[] = { "idle", "starting", "running",
    "dead" };

/* A tools/list waiting for servers to finish starting. */
struct gw_list {
	struct mcp_call		*call;
	struct gw_list		*next;
};

static struct gw_server	*servers;
static size_t		 nservers;
static bool		 ready;		/* servers made from the conf */
static struct loop	*L;
static const struct conf *C;
static struct gw_list	*lists;

static int	 srv_start(struct gw_server *, char *, size_t);
static void	 srv_stop(struct gw_server *, const char *);
static void	 srv_fail_all(struct gw_server *);
static void	 srv_ready(struct gw_server *);
static void	 srv_line(struct gw_server *, const char *, size_t);
static void	 srv_response(struct gw_server *, const json_t *);
static void	 on_output(struct job *, int, const char *, size_t, void *);
static void	 on_done(struct job *, int, bool, void *);
static void	 on_start_timeout(struct loop *, uint64_t, void *);
static void	 on_hmsg(void *, const char *, const char *, size_t);
static void	 on_hend(void *, int, const char *);
static void	 xchgs_abort(struct gw_server *);
static void	 lists_settle(void);
static json_t	*merged_list(void);
static void	 pending_free(struct gw_pending *);
static void	 list_gone(void *);

/* The servers of the conf in force, made once; see gateway.h. */
void
gw_init(struct mcp_call *c)
{
	struct execd *app = mcp_call_app(c);

	if (ready)
		return;
	ready = true;
	L = app->loop;
	C = app->conf;
	nservers = C->nmcp_servers;
	servers = nservers > 0 ? xcalloc(nservers, sizeof(*servers)) : NULL;
	for (size_t i = 0; i < nservers; i++) {
		servers[i].cf = &C->mcp_servers[i];
		servers[i].state = GW_IDLE;
		buf_init(&servers[i].in);
		buf_init(&servers[i].err);
	}
}

/* The server a prefixed name names; see gateway.h. */
struct gw_server *
gw_server_of(const char *name, const char **tool)
{
	const char *sep = strstr(name, GW_SEP);
	size_t n;

	if (sep == NULL)
		return NULL;
	n = (size_t)(sep - name);
	for (size_t i = 0; i < nservers; i++)
		if (strlen(servers[i].cf->name) == n &&
		    memcmp(servers[i].cf->name, name, n) == 0) {
			*tool = sep + strlen(GW_SEP);
			return &servers[i];
		}
	return NULL;
}

/* "exit status 3", "killed by signal 9 (Killed)". */
static void
status_text(int st, char *out, size_t len)
{
	if (WIFEXITED(st))
		snprintf(out, len, "exit status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(out, len, "killed by signal %d (%s)", WTERMSIG(st),
		    strsignal(WTERMSIG(st)));
	else
		snprintf(out, len, "status %d", st);
}

/* Start the server's command, then initialize it. */
static int
srv_start(struct gw_server *s, char *err, size_t errlen)
{
	const struct conf_mcp_server *cf = s->cf;
	json_t *env = json_object(), *over;
	struct job_opts o = { .argv = cf->argv, .cwd = cf->cwd,
	    .grace_ms = C->grace_ms, .out_fd = -1, .stdin_pipe = 1,
	    .limits = &C->limits[LIMITS_COMMAND] };
	char **envp;
	int rc;

	if (cf->url != NULL) {
		json_decref(env);
		free(s->session);
		s->session = NULL;
		s->flooded = false;
		s->why[0] = '\0';
		s->state = GW_STARTING;
		s->t_start = loop_timer_add(L, GW_START_MS, on_start_timeout,
		    s);
		goto init;
	}
	for (size_t i = 0; cf->env != NULL && cf->env[i] != NULL; i++) {
		const char *eq = strchr(cf->env[i], '=');
		char *k = xstrndup(cf->env[i], (size_t)(eq - cf->env[i]));

		json_object_set_new(env, k, json_string(eq + 1));
		free(k);
	}
	over = envfile_overlay(env);
	json_decref(env);
	envp = envfile_env(over, cf->cwd);
	json_decref(over);
	o.envp = envp;
	buf_reset(&s->in);
	buf_reset(&s->err);
	s->flooded = false;
	s->why[0] = '\0';
	rc = job_start(L, &o, on_output, on_done, s, &s->job, err, errlen);
	envfile_env_free(envp);
	if (rc < 0)
		return rc;
	s->pid = job_pid(s->job);
	s->state = GW_STARTING;
	s->t_start = loop_timer_add(L, GW_START_MS, on_start_timeout, s);
	log_info("mcp: server %s started (pid %d)", cf->name, (int)s->pid);
init:
	gw_srv_request(s, P_INIT, NULL, "initialize", json_pack("{s:s, s:{}, "
	    "s:{s:s, s:s}}", "protocolVersion", MCP_PROTO_LATEST,
	    "capabilities", "clientInfo", "name", "execd", "version",
	    EXECD_VERSION));
	return 0;
}

/* Start a server that is idle or dead; see gateway.h. */
bool
gw_srv_wake(struct gw_server *s)
{
	char err[512];

	if (s->state != GW_IDLE && s->state != GW_DEAD)
		return true;
	if (s->state == GW_DEAD)
		s->restarts++;
	if (srv_start(s, err, sizeof(err)) < 0) {
		s->state = GW_DEAD;
		snprintf(s->ended, sizeof(s->ended), "could not start: %.280s",
		    err);
		log_warnx("mcp: server %s: %s", s->cf->name, s->ended);
		srv_fail_all(s);
		return false;
	}
	return true;
}

/* One message to the server; see gateway.h. */
int
gw_srv_send(struct gw_server *s, json_t *msg)
{
	char *t = json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII);
	size_t n;
	int rc;

	json_t *id = json_object_get(msg, "id");
	struct gw_xchg *x;

	if (s->cf->url != NULL && t != NULL && !s->flooded) {
		x = xcalloc(1, sizeof(*x));
		x->srv = s;
		x->id = json_object_get(msg, "method") != NULL &&
		    json_is_integer(id) ? json_integer_value(id) : 0;
		x->next = s->xchgs;
		s->xchgs = x;
		x->h = gwhttp_post(L, s->cf->url, s->session,
		    MCP_PROTO_LATEST, t, strlen(t), on_hmsg, on_hend, x);
	}
	json_decref(msg);
	if (t == NULL || s->job == NULL || s->flooded) {
		free(t);
		return 0;
	}
	n = strlen(t);
	t[n] = '\n';	/* the NUL's place: one write of the line */
	rc = job_stdin_write(s->job, t, n + 1);
	free(t);
	if (rc == -EFBIG)
		return rc;
	if (rc < 0) {
		snprintf(s->why, sizeof(s->why), "its stdin took no more "
		    "(%s)", rc == -ENOBUFS ? "over 1 MiB not read" :
		    strerror(-rc));
		srv_stop(s, s->why);
	}
	return 0;
}

/* A request under a new id of execd's; see gateway.h. */
long long
gw_srv_request(struct gw_server *s, enum gw_kind kind, struct mcp_call *call,
    const char *method, json_t *params)
{
	struct gw_pending *p = xcalloc(1, sizeof(*p));
	long long id;

	p->id = id = ++s->next_id;
	p->kind = kind;
	p->call = call;
	p->srv = s;
	p->next = s->pending;
	s->pending = p;
	if (gw_srv_send(s, json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc",
	    "2.0", "id", (json_int_t)p->id, "method", method, "params",
	    params)) < 0) {
		s->pending = p->next;	/* nothing ran since: still first */
		free(p);
		return -1;
	}
	return id;
}

/* Stop it (flooding, a start too slow): its calls fail now. */
static void
srv_stop(struct gw_server *s, const char *why)
{
	if (s->why != why)
		snprintf(s->why, sizeof(s->why), "%s", why);
	log_warnx("mcp: server %s stopped: %s", s->cf->name, s->why);
	s->flooded = true;	/* nothing more is read from it */
	buf_reset(&s->in);
	if (s->cf->url != NULL) {
		/* Nothing to end but the exchanges: dead at once. */
		snprintf(s->ended, sizeof(s->ended), "%s", s->why);
		xchgs_abort(s);
		srv_fail_all(s);
		s->state = GW_DEAD;
		lists_settle();
		return;
	}
	snprintf(s->ended, sizeof(s->ended), "stopped by execd: %s", s->why);
	srv_fail_all(s);
	if (s->job != NULL)
		(void)job_stop(s->job);
}

/* Every POST of a url server abandoned. */
static void
xchgs_abort(struct gw_server *s)
{
	struct gw_xchg *x;

	while ((x = s->xchgs) != NULL) {
		s->xchgs = x->next;
		gwhttp_abort(x->h);
		free(x);
	}
}

/* A message of a url server's answer: as a line of a stdio one. */
static void
on_hmsg(void *arg, const char *session, const char *p, size_t n)
{
	struct gw_xchg *x = arg;
	struct gw_server *s = x->srv;

	if (session != NULL && (s->session == NULL ||
	    strcmp(s->session, session) != 0)) {
		free(s->session);
		s->session = xstrdup(session);
	}
	srv_line(s, p, n);
}

/*
 * A POST is over.  A request it carried that got no response, a session
 * ended (404), or a server that could not be reached: the server is
 * dead, its calls fail with why.
 */
static void
on_hend(void *arg, int status, const char *why)
{
	struct gw_xchg *x = arg, **pp;
	struct gw_server *s = x->srv;
	struct gw_pending *p;
	long long id = x->id;
	char msg[160];

	for (pp = &s->xchgs; *pp != NULL && *pp != x; pp = &(*pp)->next)
		;
	if (*pp != NULL)
		*pp = x->next;
	free(x);
	for (p = s->pending; p != NULL && p->id != id; p = p->next)
		;
	if (status == 404 && s->session != NULL)
		snprintf(msg, sizeof(msg), "its session ended (HTTP 404)");
	else if (why != NULL)
		snprintf(msg, sizeof(msg), "%.150s", why);
	else if (id != 0 && p != NULL)
		snprintf(msg, sizeof(msg), "HTTP %d without a response",
		    status);
	else if (status / 100 != 2)
		snprintf(msg, sizeof(msg), "HTTP %d to a notification",
		    status);
	else
		return;
	if (status == 0 || status == 404 || (id != 0 && p != NULL) ||
	    why != NULL) {
		log_warnx("mcp: server %s (%s): %s", s->cf->name, s->cf->url,
		    msg);
		srv_stop(s, msg);
	}
}

/* The stderr tail as text, its last line breaks dropped, into out. */
static void
err_tail(struct gw_server *s, char *out, size_t len)
{
	size_t n = s->err.len, from;

	while (n > 0 && (s->err.p[n - 1] == '\n' || s->err.p[n - 1] == '\r'))
		n--;
	if (n == 0) {
		snprintf(out, len, "(nothing on stderr)");
		return;
	}
	from = n >= len ? n - (len - 1) : 0;
	snprintf(out, len, "%.*s", (int)(n - from), s->err.p + from);
}

/* Every call the server had or was to get: a tool error saying why. */
static void
srv_fail_all(struct gw_server *s)
{
	struct gw_pending *p;
	struct gw_wait *w;
	char tail[GW_ERR_TAIL + 1];

	err_tail(s, tail, sizeof(tail));
	while ((p = s->pending) != NULL) {
		s->pending = p->next;
		if (p->call != NULL && s->cf->url != NULL) {
			mcp_call_on_cancel(p->call, NULL, NULL, NULL);
			mcp_call_fail(p->call, "MCP server '%s' (%s) failed "
			    "during the call: %s; the next call connects "
			    "again", s->cf->name, s->cf->url, s->ended);
		} else if (p->call != NULL) {
			mcp_call_on_cancel(p->call, NULL, NULL, NULL);
			mcp_call_fail(p->call, "MCP server '%s' ended during "
			    "the call (%s); the next call starts it again. "
			    "Its stderr ended with:\n%s", s->cf->name,
			    s->ended, tail);
		}
		free(p);
	}
	while ((w = s->waiting) != NULL) {
		s->waiting = w->next;
		mcp_call_on_cancel(w->call, NULL, NULL, NULL);
		if (s->cf->url != NULL)
			mcp_call_fail(w->call, "MCP server '%s' (%s) did not "
			    "start: %s", s->cf->name, s->cf->url, s->ended);
		else
			mcp_call_fail(w->call, "MCP server '%s' did not start "
			    "(%s). Its stderr ended with:\n%s", s->cf->name,
			    s->ended, tail);
		free(w->tool);
		json_decref(w->params);
		free(w);
	}
	if (s->state == GW_STARTING) {
		loop_timer_cancel(L, s->t_start);
		s->t_start = 0;
	}
	json_decref(s->listing);
	s->listing = NULL;
	lists_settle();
}

/* initialize and tools/list answered: the waiting calls go. */
static void
srv_ready(struct gw_server *s)
{
	struct gw_wait *w;

	loop_timer_cancel(L, s->t_start);
	s->t_start = 0;
	s->state = GW_RUNNING;
	log_info("mcp: server %s ready, %zu tools", s->cf->name,
	    json_array_size(s->tools));
	while ((w = s->waiting) != NULL) {
		s->waiting = w->next;
		mcp_call_on_cancel(w->call, NULL, NULL, NULL);
		gw_relay(s, w->call, w->tool, w->params, false);
		free(w->tool);
		json_decref(w->params);
		free(w);
	}
	lists_settle();
}

static void
on_start_timeout(struct loop *l, uint64_t id, void *arg)
{
	struct gw_server *s = arg;

	(void)l;
	(void)id;
	s->t_start = 0;
	srv_stop(s, "it did not answer initialize and tools/list within "
	    "30 s");
}

/* stdout: lines, each one message; stderr: its tail. */
static void
on_output(struct job *j, int stream, const char *p, size_t n, void *arg)
{
	struct gw_server *s = arg;
	size_t len, used;
	int rc;

	(void)j;
	if (stream == 2) {
		buf_add(&s->err, p, n);
		if (s->err.len > GW_ERR_TAIL)
			buf_drain(&s->err, s->err.len - GW_ERR_TAIL);
		return;
	}
	if (s->flooded)
		return;
	if (buf_add(&s->in, p, n) < 0) {
		srv_stop(s, "it wrote more than execd can hold");
		return;
	}
	while (!s->flooded && s->in.len > 0) {
		rc = jsonrpc_line(s->in.p, s->in.len, GW_LINE_MAX, &len,
		    &used);
		if (rc < 0) {
			srv_stop(s, "it flooded stdout: a line over 8 MiB");
			return;
		}
		if (rc == 0)
			break;
		srv_line(s, s->in.p, len);
		if (!s->flooded)
			buf_drain(&s->in, used);
	}
}

/* The job ended: its calls fail, it is dead until the next call. */
static void
on_done(struct job *j, int st, bool timed_out, void *arg)
{
	struct gw_server *s = arg;
	char how[96];
	const char *why = job_why(j);
	struct gw_wait *later;

	(void)timed_out;
	status_text(st, how, sizeof(how));
	if (s->why[0] != '\0')
		snprintf(s->ended, sizeof(s->ended), "%s, stopped by execd: "
		    "%s", how, s->why);
	else
		snprintf(s->ended, sizeof(s->ended), "%s%s%s", how,
		    why != NULL && why[0] != '\0' ? ", " : "",
		    why != NULL ? why : "");
	log_info("mcp: server %s (pid %d) ended: %s", s->cf->name,
	    (int)s->pid, s->ended);
	s->job = NULL;
	job_free(j);
	/* Calls that came once it was being stopped: for the next one. */
	later = s->flooded ? s->waiting : NULL;
	if (later != NULL)
		s->waiting = NULL;
	srv_fail_all(s);
	s->state = GW_DEAD;
	buf_reset(&s->in);
	s->waiting = later;
	if (later != NULL)
		(void)gw_srv_wake(s);
	lists_settle();
}

/* One line from the server: a response, a request or a notification. */
static void
srv_line(struct gw_server *s, const char *p, size_t n)
{
	struct jsonrpc_msg m;
	char err[256];

	if (n == 0)
		return;
	if (jsonrpc_parse(p, n, &m, err, sizeof(err)) < 0) {
		log_debug("mcp: server %s: a line that is not JSON-RPC: %s",
		    s->cf->name, err);
		jsonrpc_msg_clear(&m);
		return;
	}
	if (m.kind == JSONRPC_RESPONSE) {
		srv_response(s, m.root);
	} else if (m.kind == JSONRPC_REQUEST) {
		/* execd offers the server nothing: ping only. */
		gw_srv_send(s, strcmp(m.method, "ping") == 0 ?
		    jsonrpc_result(m.id, json_object()) : jsonrpc_error(m.id,
		    JSONRPC_NO_METHOD, "execd's gateway serves no requests "
		    "but ping"));
	} else if (strcmp(m.method, "notifications/progress") == 0 &&
	    m.params != NULL) {
		gw_progress(s, m.params);
	} else if (strcmp(m.method, "notifications/tools/list_changed") == 0 &&
	    s->state == GW_RUNNING && s->listing == NULL) {
		s->listing = json_array();
		s->pages = 0;
		gw_srv_request(s, P_LIST, NULL, "tools/list", json_object());
	}
	jsonrpc_msg_clear(&m);
}

/* A response to one of execd's requests; a call's goes to gwcall.c. */
static void
srv_response(struct gw_server *s, const json_t *msg)
{
	struct gw_pending **pp, *p;
	const json_t *id = json_object_get(msg, "id");
	json_t *res = json_object_get(msg, "result"), *e, *tools, *cur;
	const char *emsg;

	for (pp = &s->pending; (p = *pp) != NULL; pp = &p->next)
		if (json_is_integer(id) && json_integer_value(id) == p->id)
			break;
	if (p == NULL)
		return;		/* cancelled, or not ours */
	*pp = p->next;
	e = json_object_get(msg, "error");
	emsg = json_string_value(json_object_get(e, "message"));
	switch (p->kind) {
	case P_INIT:
		if (e != NULL || !json_is_object(res)) {
			snprintf(s->why, sizeof(s->why), "initialize failed: "
			    "%.100s", emsg != NULL ? emsg : "no result");
			srv_stop(s, s->why);
			break;
		}
		gw_srv_send(s, jsonrpc_notification(
		    "notifications/initialized", NULL));
		s->listing = json_array();
		s->pages = 0;
		gw_srv_request(s, P_LIST, NULL, "tools/list", json_object());
		break;
	case P_LIST:
		tools = json_object_get(res, "tools");
		if (e != NULL || !json_is_array(tools)) {
			snprintf(s->why, sizeof(s->why), "tools/list failed: "
			    "%.100s", emsg != NULL ? emsg : "no tools");
			srv_stop(s, s->why);
			break;
		}
		if (s->listing == NULL)
			break;
		json_array_extend(s->listing, tools);
		cur = json_object_get(res, "nextCursor");
		if (json_is_string(cur) && ++s->pages < GW_PAGES) {
			gw_srv_request(s, P_LIST, NULL, "tools/list",
			    json_pack("{s:O}", "cursor", cur));
			break;
		}
		json_decref(s->tools);
		s->tools = s->listing;
		s->listing = NULL;
		if (s->state == GW_STARTING)
			srv_ready(s);
		break;
	case P_CALL:
		gw_call_answered(p, res, e, emsg);
		break;
	}
	free(p);
}

/* tools/list: once no server is starting, answer every one waiting. */
static void
lists_settle(void)
{
	struct gw_list *l;

	for (size_t i = 0; i < nservers; i++)
		if (servers[i].state == GW_STARTING)
			return;
	while ((l = lists) != NULL) {
		lists = l->next;
		mcp_call_on_cancel(l->call, NULL, NULL, NULL);
		mcp_call_result(l->call, merged_list());
		free(l);
	}
}

/* execd's tools, list_mcp_servers, then each server's, prefixed. */
static json_t *
merged_list(void)
{
	json_t *r = mcp_tools_list(), *list = json_object_get(r, "tools");
	json_t *t, *mine, *v;
	const char *k, *name;
	size_t i;

	json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:{s:s, s:{}, "
	    "s:b}, s:{s:b}}", "name", "list_mcp_servers", "title",
	    "List the sandbox's MCP servers", "description", "List the MCP "
	    "servers execd relays to (their tools are offered as "
	    "SERVER__tool): name, kind, state (idle, starting, running, "
	    "dead), how each last ended, tool count, restarts.",
	    "inputSchema", "type", "object", "properties",
	    "additionalProperties", 0, "annotations", "readOnlyHint", 1));
	for (size_t s = 0; s < nservers; s++)
		json_array_foreach(servers[s].tools, i, t) {
			name = json_string_value(json_object_get(t, "name"));
			if (!json_is_object(t) || name == NULL)
				continue;
			mine = json_object();
			json_object_foreach(t, k, v)
				json_object_set(mine, k, v);
			json_object_set_new(mine, "name", json_sprintf("%s"
			    GW_SEP "%s", servers[s].cf->name, name));
			json_array_append_new(list, mine);
		}
	return r;
}

/* Whether the conf names any server; see gateway.h. */
bool
gw_any(void)
{
	return nservers > 0;
}

/* tools/list; see mcp.h. */
void
mcp_gateway_list(struct mcp_call *c)
{
	struct gw_list *l;

	gw_init(c);
	if (nservers == 0) {
		mcp_call_result(c, mcp_tools_list());
		return;
	}
	for (size_t i = 0; i < nservers; i++)
		if (servers[i].state == GW_IDLE)
			(void)gw_srv_wake(&servers[i]);
	l = xcalloc(1, sizeof(*l));
	l->call = c;
	l->next = lists;
	lists = l;
	mcp_call_on_cancel(c, NULL, list_gone, l);
	mcp_call_later(c, false);
	lists_settle();
}

static void
list_gone(void *arg)
{
	struct gw_list **pp;

	for (pp = &lists; *pp != NULL; pp = &(*pp)->next)
		if (*pp == arg) {
			*pp = ((struct gw_list *)arg)->next;
			free(arg);
			return;
		}
}

/* list_mcp_servers; see gateway.h. */
void
gw_list_servers(struct mcp_call *c)
{
	json_t *arr = json_array(), *o;
	struct gw_server *s;
	char *text;

	for (size_t i = 0; i < nservers; i++) {
		s = &servers[i];
		o = json_pack("{s:s, s:s, s:s, s:I}", "name", s->cf->name,
		    "kind", s->cf->url != NULL ? "http" : "stdio", "state",
		    state_names[s->state], "restarts",
		    (json_int_t)s->restarts);
		json_object_set_new(o, "tools", s->tools != NULL ?
		    json_integer((json_int_t)json_array_size(s->tools)) :
		    json_null());
		if (s->ended[0] != '\0')
			json_object_set_new(o, "last_end",
			    json_string(s->ended));
		if (s->cf->url == NULL && (s->state == GW_STARTING ||
		    s->state == GW_RUNNING))
			json_object_set_new(o, "pid", json_integer(s->pid));
		if (s->cf->url != NULL)
			json_object_set_new(o, "url", json_string(s->cf->url));
		json_array_append_new(arr, o);
	}
	o = json_pack("{s:o}", "servers", arr);
	text = json_dumps(o, JSON_INDENT(1));
	mcp_call_text(c, text != NULL ? text : "", o);
	free(text);
}

static void
pending_free(struct gw_pending *p)
{
	free(p);
}

/* At exit: the servers stopped, their state freed. */
void
mcp_gateway_shutdown(void)
{
	struct gw_pending *p;
	struct gw_wait *w;
	struct gw_list *l;

	for (size_t i = 0; i < nservers; i++) {
		struct gw_server *s = &servers[i];

		if (s->t_start != 0)
			loop_timer_cancel(L, s->t_start);
		job_free(s->job);
		xchgs_abort(s);
		free(s->session);
		while ((p = s->pending) != NULL) {
			s->pending = p->next;
			pending_free(p);
		}
		while ((w = s->waiting) != NULL) {
			s->waiting = w->next;
			free(w->tool);
			json_decref(w->params);
			free(w);
		}
		json_decref(s->tools);
		json_decref(s->listing);
		buf_reset(&s->in);
		buf_reset(&s->err);
	}
	while ((l = lists) != NULL) {
		lists = l->next;
		free(l);
	}
	free(servers);
	servers = NULL;
	nservers = 0;
	ready = false;
}
