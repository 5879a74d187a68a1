/*
 * notify.c -- what execd tells a session outside the answer to a
 * request: the server stream that GET /mcp without Last-Event-ID opens,
 * and resource subscriptions (resources/subscribe), whose files are
 * followed by an inotify watch (fs_watch.h) on their directory, each
 * change to the file (written, its attributes, made, deleted or renamed
 * over, as an atomic write does) sent on that stream as
 * notifications/resources/updated.
 *
 * A session has at most one server stream: a new GET ends the one before.
 * Its events carry no id (nothing on it is resumed: a client that lost
 * it opens another).  A change while no server stream is open, or while
 * the client is behind, is not sent.  The changes one read of the watch
 * gives are sent as one notification.  At most MCP_SUBS_MAX subscriptions
 * per session.  The watch is set up on a worker (a hung mount costs only
 * that call).  Loop thread, but for sub_make.
 */
#include <errno.h>
#include <limits.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../fs/fs_watch.h"
#include "../../../sse/sse_fmt.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../../transport/evstream.h"
#include "../execd.h"
#include "mcp.h"

#define MCP_SUBS_MAX	64	/* subscriptions per session */

/* A session's server stream; s is NULL once replaced or ended. */
struct server {
	struct mcp_session	*s;
	struct evstream		*es;
	struct server		*next;
};

/* One subscription: a watch on the file's directory. */
struct sub {
	struct mcp_session	*s;
	struct loop		*loop;
	char			*uri;
	char			 path[PATH_MAX];
	struct fs_watch		*w;
	bool			 changed;	/* during one read */
	bool			 dead;		/* its directory is gone */
	struct sub		*next;
};

/* A subscription being made on a worker. */
struct subjob {
	char		*uri;
	char		 path[PATH_MAX];
	struct fs_watch	*w;
	int		 err;
	char		 msg[512];
};

static struct server	*servers;
static struct sub	*subs;

static void	 server_gone(void *);
static void	 send_updated(struct mcp_session *, const char *);
static void	 sub_make(void *);
static void	 sub_made(struct mcp_call *, void *);
static void	 sub_ready(struct loop *, int, void *, int, void *);
static int	 sub_event(const struct fs_watch_event *, void *);
static void	 sub_free(struct sub *);
static struct sub **sub_find(struct mcp_session *, const char *);

static void
server_gone(void *arg)
{
	struct server **pp, *srv = arg;

	for (pp = &servers; *pp != srv; pp = &(*pp)->next)
		;
	*pp = srv->next;
	free(srv);
}

/* End s's server stream, if open. */
static void
server_end(struct mcp_session *s)
{
	for (struct server *srv = servers; srv != NULL; srv = srv->next)
		if (srv->s == s) {
			srv->s = NULL;
			if (!evstream_ended(srv->es))
				evstream_end(srv->es, NULL, 0);
		}
}

/* GET /mcp without Last-Event-ID: s's server stream, the last one. */
void
mcp_notify_open(struct mcp_session *s, struct http_req *req)
{
	struct server *srv = xcalloc(1, sizeof(*srv));
	struct evstream_opts o = { .framing = &sse_framing_standard,
	    .shape = EVSTREAM_TYPED, .gone = server_gone, .arg = srv };

	server_end(s);
	srv->s = s;
	if ((srv->es = evstream_open(req, &o)) == NULL) {
		free(srv);	/* req got 500 */
		return;
	}
	srv->next = servers;
	servers = srv;
}

/* The session ends: its stream ends, its subscriptions go. */
void
mcp_notify_end(struct mcp_session *s)
{
	struct sub **pp = &subs, *x;

	server_end(s);
	while ((x = *pp) != NULL) {
		if (x->s == s) {
			*pp = x->next;
			sub_free(x);
		} else
			pp = &x->next;
	}
}

/* notifications/resources/updated for uri on s's server stream. */
static void
send_updated(struct mcp_session *s, const char *uri)
{
	struct server *srv;
	struct buf b;
	json_t *v;

	for (srv = servers; srv != NULL && srv->s != s; srv = srv->next)
		;
	if (srv == NULL || evstream_ended(srv->es))
		return;
	v = jsonrpc_notification("notifications/resources/updated",
	    json_pack("{s:s}", "uri", uri));
	buf_init(&b);
	buf_adds(&b, "data: ");
	if (sse_fmt_json(&b, v) == 0) {
		buf_adds(&b, "\n\n");
		if (evstream_room(srv->es) >= b.len)
			(void)evstream_push(srv->es, b.p, b.len);
	}
	buf_reset(&b);
	json_decref(v);
}

static struct sub **
sub_find(struct mcp_session *s, const char *path)
{
	struct sub **pp;

	for (pp = &subs; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->s == s && strcmp((*pp)->path, path) == 0)
			return pp;
	return NULL;
}

static void
sub_free(struct sub *x)
{
	if (x->w != NULL) {
		loop_del(x->loop, fs_watch_fd(x->w), NULL);
		fs_watch_free(x->w);
	}
	free(x->uri);
	free(x);
}

/* A file:// URI's path into j, or the call answered -32602. */
static struct subjob *
sub_job(struct mcp_call *call, const json_t *params, const char *method)
{
	const json_t *u = json_object_get(params, "uri");
	struct subjob *j;
	char err[128];

	if (!json_is_string(u) || strlen(json_string_value(u)) !=
	    json_string_length(u)) {
		snprintf(err, sizeof(err), "%s needs params.uri, a string",
		    method);
		mcp_call_rpc_error(call, JSONRPC_INVALID_PARAMS, err);
		return NULL;
	}
	j = xcalloc(1, sizeof(*j));
	j->uri = xstrdup(json_string_value(u));
	if (mcp_resource_path(j->uri, j->path, sizeof(j->path)) < 0 ||
	    strcmp(j->path, "/") == 0) {
		mcp_call_rpc_error(call, JSONRPC_INVALID_PARAMS, "not a "
		    "file:// URI with an absolute path to a file");
		free(j->uri);
		free(j);
		return NULL;
	}
	return j;
}

/* resources/subscribe: params.uri, a file to follow. */
void
mcp_resources_subscribe(struct mcp_call *call, struct mcp_session *s,
    const json_t *params)
{
	struct subjob *j = sub_job(call, params, "resources/subscribe");
	unsigned n = 0;

	if (j == NULL)
		return;
	for (struct sub *x = subs; x != NULL; x = x->next)
		n += x->s == s;
	if (sub_find(s, j->path) != NULL || n >= MCP_SUBS_MAX) {
		if (n >= MCP_SUBS_MAX && sub_find(s, j->path) == NULL)
			mcp_call_rpc_error(call, JSONRPC_INVALID_PARAMS, "at "
			    "most 64 subscriptions per session: unsubscribe "
			    "from one first");
		else
			mcp_call_result(call, json_object());
		free(j->uri);
		free(j);
		return;
	}
	mcp_call_work(call, sub_make, sub_made, j);
}

/* On a worker: watch the file's directory. */
static void
sub_make(void *arg)
{
	struct subjob *j = arg;
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", j->path);
	if ((j->w = fs_watch_new(dirname(dir), NULL, j->msg,
	    sizeof(j->msg))) == NULL)
		j->err = errno;
}

/* Back on the loop: the subscription, if its session still lives. */
static void
sub_made(struct mcp_call *call, void *arg)
{
	struct subjob *j = arg;
	struct mcp_session *s = mcp_call_session(call);
	struct execd *app = mcp_call_app(call);
	struct sub *x;

	if (j->w == NULL) {
		mcp_call_rpc_error(call, j->err == ENOENT ||
		    j->err == ENOTDIR ? -32002 : JSONRPC_INTERNAL, j->msg);
	} else if (s == NULL || sub_find(s, j->path) != NULL) {
		fs_watch_free(j->w);	/* gone, or subscribed meanwhile */
		mcp_call_result(call, json_object());
	} else {
		x = xcalloc(1, sizeof(*x));
		x->s = s;
		x->loop = app->loop;
		x->uri = j->uri;
		j->uri = NULL;
		memcpy(x->path, j->path, sizeof(x->path));
		x->w = j->w;
		x->next = subs;
		subs = x;
		loop_add_fd(x->loop, fs_watch_fd(x->w), LOOP_READ, sub_ready,
		    x);
		mcp_call_result(call, json_object());
	}
	free(j->uri);
	free(j);
}

/* The directory changed: one notification if the file did. */
static void
sub_ready(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct sub *x = arg;

	(void)l;
	(void)fd;
	(void)zs;
	(void)rev;
	x->changed = false;
	(void)fs_watch_read(x->w, sub_event, x);
	if (x->changed)
		send_updated(x->s, x->uri);
	if (x->dead) {
		/* nothing more will come: the watch goes, the entry stays */
		loop_del(x->loop, fs_watch_fd(x->w), NULL);
		fs_watch_free(x->w);
		x->w = NULL;
	}
}

static int
sub_event(const struct fs_watch_event *ev, void *arg)
{
	struct sub *x = arg;

	if (ev->kind == FS_W_OVERFLOW || ev->kind == FS_W_GONE ||
	    strcmp(ev->path, x->path) == 0)
		x->changed = true;
	if (ev->kind == FS_W_GONE)
		x->dead = true;
	return 0;
}

/* resources/unsubscribe: params.uri. */
void
mcp_resources_unsubscribe(struct mcp_call *call, struct mcp_session *s,
    const json_t *params)
{
	struct subjob *j = sub_job(call, params, "resources/unsubscribe");
	struct sub **pp, *x;

	if (j == NULL)
		return;
	if ((pp = sub_find(s, j->path)) != NULL) {
		x = *pp;
		*pp = x->next;
		sub_free(x);
	}
	mcp_call_result(call, json_object());
	free(j->uri);
	free(j);
}
