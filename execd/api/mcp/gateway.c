/*
 * gateway.c -- the MCP servers the policy file names (mcp_servers),
 * offered through /mcp: their tools listed as SERVER__tool, calls relayed
 * to them with their progress and cancellation.
 *
 * A server with a command is started when first needed (a tools/list, or
 * a call of one of its tools) as a job (job.h): the spawn path of every
 * command, so under the same sandbox profile, identity, limits and
 * cgroup, with its stdin and stdout pipes on the loop.  execd speaks
 * MCP's stdio transport to it, one JSON-RPC message per line: initialize,
 * notifications/initialized, tools/list (every page), then the calls,
 * each under an id of execd's own mapped back to the client's call.
 * Progress the server sends for a call goes to the client under the
 * client's token; a client's notifications/cancelled goes to the server
 * as one naming execd's id, and the call is answered at once.
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
#include "gwhttp.h"
#include "mcp.h"

#define GW_LINE_MAX	(8 << 20)	/* one message from a server, at most */
#define GW_ERR_TAIL	2048		/* stderr kept, its last bytes */
#define GW_START_MS	30000		/* to answer initialize and tools/list */
#define GW_PAGES	64		/* tools/list pages followed, at most */
#define GW_SEP		"__"

enum gw_state { GW_IDLE, GW_STARTING, GW_RUNNING, GW_DEAD };

static const char *const state_names[] = { "idle", "starting", "running",
    "dead" };

enum gw_kind { P_INIT, P_LIST, P_CALL };

struct gw_server;

/* A request sent to a server, not answered yet. */
struct gw_pending {
	long long		 id;		/* execd's, on the server's wire */
	enum gw_kind		 kind;
	struct mcp_call		*call;		/* P_CALL; NULL: nobody waits */
	struct gw_server	*srv;
	struct gw_pending	*next;
};

/* A POST to a url server, in flight. */
struct gw_xchg {
	struct gw_server	*srv;
	struct gwhttp		*h;
	long long		 id;		/* a request's, or 0 */
	struct gw_xchg		*next;
};

/* A call waiting for its server to finish starting. */
struct gw_wait {
	struct mcp_call		*call;
	struct gw_server	*srv;
	char			*tool;		/* the server's name for it */
	json_t			*params;	/* the client's, copied */
	struct gw_wait		*next;
};

struct gw_server {
	const struct conf_mcp_server *cf;
	enum gw_state		 state;
	struct job		*job;
	pid_t			 pid;
	uint64_t		 t_start;	/* GW_START_MS, while starting */
	struct buf		 in;		/* stdout not yet a whole line */
	struct buf		 err;		/* stderr's tail */
	bool			 flooded;	/* stopped, its output ignored */
	char			 why[160];	/* why execd stopped it, or "" */
	char			 ended[320];	/* how it ended last, or "" */
	unsigned		 restarts;
	unsigned		 pages;
	long long		 next_id;
	json_t			*tools;		/* as listed last, or NULL */
	json_t			*listing;	/* pages being read */
	struct gw_pending	*pending;
	struct gw_wait		*waiting;
	char			*session;	/* url: Mcp-Session-Id */
	struct gw_xchg		*xchgs;		/* url: POSTs in flight */
};

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

static void	 gw_init(struct mcp_call *);
static struct gw_server *server_of(const char *name, const char **tool);
static int	 srv_start(struct gw_server *, char *, size_t);
static int	 srv_send(struct gw_server *, json_t *);
static long long srv_request(struct gw_server *, enum gw_kind,
		    struct mcp_call *, const char *, json_t *);
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
static void	 relay(struct gw_server *, struct mcp_call *, const char *,
		    const json_t *, bool);
static void	 list_servers(struct mcp_call *);
static void	 pending_free(struct gw_pending *);
static void	 wait_gone(void *);
static void	 wait_cancel(void *);
static void	 pend_gone(void *);
static void	 pend_cancel(void *);
static void	 list_gone(void *);

/* The servers of the conf in force, made once. */
static void
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

/* The server a prefixed name names, and the tool's name after it. */
static struct gw_server *
server_of(const char *name, const char **tool)
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
	srv_request(s, P_INIT, NULL, "initialize", json_pack("{s:s, s:{}, "
	    "s:{s:s, s:s}}", "protocolVersion", MCP_PROTO_LATEST,
	    "capabilities", "clientInfo", "name", "execd", "version",
	    EXECD_VERSION));
	return 0;
}

/* Start a server that is idle or dead; false (calls failed) if it cannot. */
static bool
srv_wake(struct gw_server *s)
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

/*
 * One message to the server's stdin, a line (msg taken): 0, or -EFBIG
 * for a message over JOB_STDIN_MAX alone (nothing sent).  A server that
 * leaves more than that unread is stopped.
 */
static int
srv_send(struct gw_server *s, json_t *msg)
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

/* A request under a new id of execd's: the id, or -1 when too large. */
static long long
srv_request(struct gw_server *s, enum gw_kind kind, struct mcp_call *call,
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
	if (srv_send(s, json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0",
	    "id", (json_int_t)p->id, "method", method, "params", params)) < 0) {
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
		relay(s, w->call, w->tool, w->params, false);
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
		(void)srv_wake(s);
	lists_settle();
}

/* One line from the server: a response, a request or a notification. */
static void
srv_line(struct gw_server *s, const char *p, size_t n)
{
	struct jsonrpc_msg m;
	struct gw_pending *q;
	const json_t *tok;
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
		srv_send(s, strcmp(m.method, "ping") == 0 ?
		    jsonrpc_result(m.id, json_object()) : jsonrpc_error(m.id,
		    JSONRPC_NO_METHOD, "execd's gateway serves no requests "
		    "but ping"));
	} else if (strcmp(m.method, "notifications/progress") == 0 &&
	    m.params != NULL) {
		tok = json_object_get(m.params, "progressToken");
		for (q = s->pending; q != NULL; q = q->next)
			if (q->call != NULL && json_is_integer(tok) &&
			    json_integer_value(tok) == q->id)
				break;
		if (q != NULL)
			mcp_call_progress_relay(q->call,
			    json_deep_copy(m.params));
	} else if (strcmp(m.method, "notifications/tools/list_changed") == 0 &&
	    s->state == GW_RUNNING && s->listing == NULL) {
		s->listing = json_array();
		s->pages = 0;
		srv_request(s, P_LIST, NULL, "tools/list", json_object());
	}
	jsonrpc_msg_clear(&m);
}

/* A response to one of execd's requests. */
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
		srv_send(s, jsonrpc_notification("notifications/initialized",
		    NULL));
		s->listing = json_array();
		s->pages = 0;
		srv_request(s, P_LIST, NULL, "tools/list", json_object());
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
			srv_request(s, P_LIST, NULL, "tools/list", json_pack(
			    "{s:O}", "cursor", cur));
			break;
		}
		json_decref(s->tools);
		s->tools = s->listing;
		s->listing = NULL;
		if (s->state == GW_STARTING)
			srv_ready(s);
		break;
	case P_CALL:
		if (p->call == NULL)
			break;
		mcp_call_on_cancel(p->call, NULL, NULL, NULL);
		if (e != NULL)
			mcp_call_rpc_error(p->call, json_is_integer(
			    json_object_get(e, "code")) ? (int)
			    json_integer_value(json_object_get(e, "code")) :
			    JSONRPC_INTERNAL, emsg != NULL ? emsg : "error");
		else if (!json_is_object(res))
			mcp_call_fail(p->call, "MCP server '%s' answered "
			    "without a result", s->cf->name);
		else
			mcp_call_result(p->call, json_deep_copy(res));
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
			(void)srv_wake(&servers[i]);
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

/* Send a call to a running server (later: the call is not deferred yet). */
static void
relay(struct gw_server *s, struct mcp_call *c, const char *tool,
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
	id = srv_request(s, P_CALL, c, "tools/call", up);
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
	if (nservers == 0)
		return false;
	if (strcmp(name, "list_mcp_servers") == 0) {
		list_servers(c);
		return true;
	}
	if ((s = server_of(name, &tool)) == NULL)
		return false;
	if (s->state == GW_RUNNING && !s->flooded) {
		relay(s, c, tool, params, true);
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
	(void)srv_wake(s);
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
	srv_send(s, jsonrpc_notification("notifications/cancelled",
	    json_pack("{s:I, s:s}", "requestId", (json_int_t)p->id, "reason",
	    "the client cancelled the call")));
	free(p);
	mcp_call_on_cancel(c, NULL, NULL, NULL);
	mcp_call_fail(c, "cancelled; MCP server '%s' was told "
	    "(notifications/cancelled)", s->cf->name);
}

/* list_mcp_servers: each server's state, without starting any. */
static void
list_servers(struct mcp_call *c)
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
