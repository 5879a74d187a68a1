/*
 * route_session.c -- bash sessions: POST /session, POST
 * /session/{sessionId}/run (a stream), DELETE /session/{sessionId}.
 *
 * A run streams like a foreground command: one event per line, stdout and
 * stderr apart, execution_complete on status 0, else an error event
 * CommandExecError whose evalue is the status.  The shell behind it is
 * session.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../../fs/fs_ops.h"
#include "../../../fs/fs_path.h"
#include "../../../sse/sse_fmt.h"
#include "../../config/conf.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../../domain/outstream.h"
#include "../../domain/session.h"
#include "../../process/envfile.h"
#include "../../process/limits.h"
#include "../../transport/body.h"
#include "../../transport/evstream.h"
#include "../../transport/http.h"
#include "../execd.h"
#include "../reqpath.h"
#include "../runhold.h"
#include "route.h"

/* A session run's listener: its output becomes the stream's events. */
struct srun_listener {
	struct session		*s;
	struct outstream	 out;
	bool			 running;
};

/*
 * Resolve a cwd, its $NAME and ${NAME} from execd's environment and the
 * EXECD_ENVS file (what the session's shell gets), then a leading ~; on
 * failure reply 400 and return -1.
 */
static int
resolve(struct http_req *req, const char *cwd, char *out, size_t outlen)
{
	json_t *over = envfile_overlay(NULL);
	char why[512];
	struct buf exp;
	int rc;

	buf_init_max(&exp, PATH_MAX);
	rc = envfile_expand_path(cwd, over, &exp, why, sizeof(why));
	json_decref(over);
	if (rc < 0) {
		buf_reset(&exp);
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "cannot resolve working directory \"%s\": %s", cwd, why);
		return -1;
	}
	rc = exp.full ? -ENAMETOOLONG : fs_path_resolve(exp.p, exp.len, NULL,
	    out, outlen);
	buf_reset(&exp);
	if (rc == 0)
		return 0;
	http_reply_error(req, 400, HTTP_E_BODY, "invalid request, working "
	    "directory '%s' must be absolute or start with ~", cwd);
	return -1;
}

/* A session to open once its working directory is made. */
struct screate {
	struct limits	 lim;
	char		 path[PATH_MAX];
	char		 cwd[PATH_MAX];	/* as the client wrote it */
};

static void	 create_open(struct http_req *, struct screate *);
static void	 create_dir_ready(struct http_req *, int, const char *,
		    void *);

/* POST /session [{"cwd"}]: 200 {"session_id"}. */
void
route_session_create(struct http_req *req)
{
	json_t *body = http_req_json(req);
	char err[PATH_MAX + 128];
	struct screate *c = xcalloc(1, sizeof(*c));
	const char *cwd;

	if (limits_for(&c->lim, &((struct execd *)http_req_app(req))->conf->
	    limits[LIMITS_SESSION], body, err, sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s",
		    err);
		free(c);
		return;
	}
	cwd = body_str(body, "cwd", "");
	if (cwd[0] == '\0') {
		create_open(req, c);
		return;
	}
	if (resolve(req, cwd, c->path, sizeof(c->path)) < 0) {
		free(c);
		return;
	}
	snprintf(c->cwd, sizeof(c->cwd), "%s", cwd);
	/* As upstream: a missing cwd is created (on a worker: a hung mount). */
	reqpath_dir(req, c->path, true, create_dir_ready, c);
}

static void
create_dir_ready(struct http_req *req, int rc, const char *why, void *arg)
{
	struct screate *c = arg;

	if (req != NULL && rc < 0)
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "working directory %s: %s", c->cwd, why);
	else if (req != NULL)
		create_open(req, c);
	else
		free(c);
}

/* Open the session, answer, free c. */
static void
create_open(struct http_req *req, struct screate *c)
{
	char err[512];
	struct session *s;

	s = session_open(c->path[0] ? c->path : NULL, &c->lim, err,
	    sizeof(err));
	if (s == NULL)
		http_reply_error(req, 500, HTTP_E_RUNTIME, "error creating "
		    "session. %s", err);
	else
		http_reply_json(req, 200, json_pack("{s:s}", "session_id",
		    session_id(s)));
	free(c);
}

static void
on_output(int which, const char *p, size_t n, void *arg)
{
	struct srun_listener *w = arg;

	outstream_output(&w->out, which, p, n);
}

/* The run ended: status 0 completes, anything else is an error event. */
static void
on_done(int status, bool timed_out, const char *reset, void *arg)
{
	struct srun_listener *w = arg;
	char first[64];
	const char *tb[2] = { first, reset };

	w->running = false;
	if (timed_out)
		snprintf(first, sizeof(first), "interrupted (timeout)");
	else
		snprintf(first, sizeof(first), "exit status %d", status);
	outstream_end(&w->out, timed_out ? -1 : status, tb,
	    reset[0] != '\0' ? 2 : 1);
}

static void
listener_gone(void *arg)
{
	struct srun_listener *w = arg;

	outstream_gone(&w->out);
	/* A deleted session has ended its runs already (running false). */
	if (w->running)
		session_run_forget(w->s, w);
	free(w);
}

/* A session run waiting for its working directory's check. */
struct srun_start {
	char		 path[PATH_MAX];
	char		 cwd[PATH_MAX];	/* as the client wrote it */
};

static void	 run_start(struct http_req *, const char *path);
static void	 run_dir_ready(struct http_req *, int, const char *, void *);

/* POST /session/{sessionId}/run {"command","cwd","timeout"} */
void
route_session_run(struct http_req *req)
{
	json_t *body = http_req_json(req);
	const char *cwd;
	struct srun_start *r;

	if (runhold(req, route_session_run))
		return;	/* a restore runs: after it */
	if (body_int(body, "timeout", 0) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "field 'timeout' must not be negative");
		return;
	}
	cwd = body_str(body, "cwd", "");
	if (cwd[0] == '\0') {
		run_start(req, NULL);
		return;
	}
	r = xcalloc(1, sizeof(*r));
	if (resolve(req, cwd, r->path, sizeof(r->path)) < 0) {
		free(r);
		return;
	}
	snprintf(r->cwd, sizeof(r->cwd), "%s", cwd);
	/* Checked on a worker: a hung mount costs this request alone. */
	reqpath_dir(req, r->path, false, run_dir_ready, r);
}

static void
run_dir_ready(struct http_req *req, int rc, const char *why, void *arg)
{
	struct srun_start *r = arg;

	if (req != NULL && rc < 0)
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "working directory %s is not a directory", r->cwd);
	else if (req != NULL)
		run_start(req, r->path);
	free(r);
}

/* Start the run in the session (looked up now: it may have gone). */
static void
run_start(struct http_req *req, const char *path)
{
	struct execd *app = http_req_app(req);
	json_t *body = http_req_json(req);
	const char *id = http_req_param(req, "sessionId");
	struct session *s = session_find(id);
	struct srun_listener *w;
	struct evstream *stream;
	struct evstream_opts o = { .shape = EVSTREAM_TYPED,
	    .flags = EVSTREAM_F_PING_FIRST, .gone = listener_gone };

	if (s == NULL) {
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "session %s not found", id);
		return;
	}
	w = xcalloc(1, sizeof(*w));
	w->s = s;
	o.arg = w;
	if ((stream = evstream_open(req, &o)) == NULL) {
		free(w);
		return;
	}
	outstream_start_numbered(&w->out, app->loop, stream, id);
	w->running = true;
	session_run(s, body_str(body, "command", ""), path,
	    (unsigned)body_int(body, "timeout", 0), on_output, on_done, w);
}

/* DELETE /session/{sessionId}: kill its shell's process group. */
void
route_session_delete(struct http_req *req)
{
	const char *id = http_req_param(req, "sessionId");

	if (session_close(id) < 0) {
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "session %s not found", id);
		return;
	}
	http_reply_empty(req);
}
