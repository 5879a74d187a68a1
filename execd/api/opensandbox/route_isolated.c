/*
 * route_isolated.c -- /v1/isolated (upstream's OSEP-0013 routes): create,
 * list, get and delete isolated sessions, run code in them in the
 * foreground (a stream) or the background (a run id, its status and its
 * log by cursor), and the host's capabilities.  The sessions are
 * isolated.c's; this file is HTTP only.
 *
 * A foreground run's stream is upstream's, not a bash session's: no init
 * event and no pings, one "stdout" event per non-empty line (stderr's
 * lines too), then execution_complete, or an error event whose ename is
 * ExitError (evalue: the exit code) or RuntimeError (a timeout, a shell
 * that ended).
 *
 * The eleven file routes under /session/{id}/ are the ordinary handlers
 * (route_fs.c, route_upload.c, route_download.c), run while the thread
 * acts as the session's shell: with its filesystem uid, gid and groups
 * (cred_of_pid; so the kernel allows the routes what it allows the
 * shell, and what they create is the shell's uid's, as the identity
 * routes of route_fs_as.c) and in its root (cred_root): every client
 * path, and every lookup their walks make, is resolved beneath that root
 * as the session sees it -- its overlays (writes land in the upper), its
 * read-only binds (EROFS, answered as the ordinary routes answer it), its
 * /tmp -- and a symlink inside cannot lead out of it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../util/buf.h"
#include "../../core/cred.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../../domain/isolated.h"
#include "../../transport/evstream.h"
#include "../../transport/http.h"
#include "../runhold.h"
#include "route.h"

#define LINE_MAX_BYTES	(1 << 20)	/* a longer line goes out in parts */

/* Every route but capabilities: 503 when sessions cannot be made. */
static bool
unavailable(struct http_req *req)
{
	if (isolated_available())
		return false;
	http_reply_error(req, 503, "SERVICE_UNAVAILABLE",
	    "isolation unavailable");
	return true;
}

/* The session of the path, or NULL after a 404. */
static struct isosess *
session_of(struct http_req *req)
{
	struct isosess *s = isolated_find(http_req_param(req, "sessionId"));

	if (s == NULL)
		http_reply_error(req, 404, "SESSION_NOT_FOUND",
		    "session not found");
	return s;
}

/* GET /v1/isolated/capabilities */
void
route_iso_capabilities(struct http_req *req)
{
	http_reply_json(req, 200, isolated_capabilities());
}

/* A create request while its paths are looked at on a worker. */
struct icreate {
	struct isoreq		 r;
	struct isolated_paths	 p;
	int			 rc;
	char			 err[1024];
};

static void
create_check(void *arg)
{
	struct icreate *c = arg;

	c->rc = isolated_check(&c->r, &c->p, c->err, sizeof(c->err));
}

static void
create_reply(struct http_req *req, void *arg)
{
	struct icreate *c = arg;
	struct isosess *s;
	const char *code;
	json_t *st;
	int status;

	if (req == NULL)
		;
	else if (c->rc < 0)
		http_reply_error(req, 400, "RUNTIME_ERROR", "%s", c->err);
	else if ((s = isolated_create(&c->r, &c->p, &status, &code, c->err,
	    sizeof(c->err))) == NULL)
		http_reply_error(req, (unsigned)status, code, "%s", c->err);
	else {
		st = isolated_state(s);
		http_reply_json(req, 201, json_pack("{s:s,s:O}", "session_id",
		    isolated_id(s), "created_at", json_object_get(st,
		    "created_at")));
		json_decref(st);
	}
	isoreq_free(&c->r);
	isolated_paths_free(&c->p);
	free(c);
}

/* POST /v1/isolated/session */
void
route_iso_create(struct http_req *req)
{
	struct icreate *c;

	if (unavailable(req))
		return;
	c = xcalloc(1, sizeof(*c));
	if (isoreq_parse(http_req_json(req), &c->r, c->err,
	    sizeof(c->err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "%s", c->err);
		isoreq_free(&c->r);
		free(c);
		return;
	}
	/* The paths are the client's: a hung mount must not stop execd. */
	http_req_work(req, 0, NULL, create_check, create_reply, c);
}

/* GET /v1/isolated/sessions */
void
route_iso_list(struct http_req *req)
{
	if (!unavailable(req))
		http_reply_json(req, 200, isolated_list());
}

/* GET /v1/isolated/session/{sessionId} */
void
route_iso_get(struct http_req *req)
{
	struct isosess *s;

	if (!unavailable(req) && (s = session_of(req)) != NULL)
		http_reply_json(req, 200, isolated_state(s));
}

/* DELETE /v1/isolated/session/{sessionId} */
void
route_iso_delete(struct http_req *req)
{
	if (unavailable(req))
		return;
	if (isolated_delete(http_req_param(req, "sessionId")) < 0)
		http_reply_error(req, 404, "SESSION_NOT_FOUND",
		    "session not found");
	else
		http_reply_empty(req);
}

/* A foreground run's stream. */
struct irun {
	struct isosess	*s;
	struct evstream	*stream;
	struct buf	 line;		/* the part of a line not yet sent */
	bool		 running;
};

static void
send_event(struct irun *w, json_t *ev)
{
	json_object_set_new(ev, "timestamp", json_integer(loop_wall_ms()));
	(void)evstream_json(w->stream, ev);
}

/* Each non-empty line of line's bytes as a stdout event (all: the end). */
static void
send_lines(struct irun *w, bool all)
{
	char *nl;
	size_t n;

	while (w->line.len > 0) {
		nl = memchr(w->line.p, '\n', w->line.len);
		if (nl == NULL && !all && w->line.len < LINE_MAX_BYTES)
			break;
		n = nl != NULL ? (size_t)(nl - w->line.p) : w->line.len;
		if (n > 0 && !(n == 1 && w->line.p[0] == '\r'))
			send_event(w, json_pack("{s:s,s:s%}", "type", "stdout",
			    "text", w->line.p, n - (w->line.p[n - 1] == '\r')));
		buf_drain(&w->line, nl != NULL ? n + 1 : n);
	}
}

static void
irun_output(int which, const char *p, size_t n, void *arg)
{
	struct irun *w = arg;

	buf_add(&w->line, p, n);
	send_lines(w, false);
}

static void
irun_done(int status, bool timed_out, const char *reset, void *arg)
{
	struct irun *w = arg;
	char text[128], val[32];

	w->running = false;
	send_lines(w, true);
	if (status == 0 && !timed_out && reset[0] == '\0')
		send_event(w, json_pack("{s:s}", "type", "execution_complete"));
	else if (timed_out || reset[0] != '\0') {
		snprintf(text, sizeof(text), "%s", timed_out ?
		    "command timed out" : "session process has exited");
		send_event(w, json_pack("{s:s,s:s,s:{s:s,s:s,s:n}}", "type",
		    "error", "text", text, "error", "ename", "RuntimeError",
		    "evalue", text, "traceback"));
	} else {
		snprintf(text, sizeof(text), "command exited with code %d",
		    status);
		snprintf(val, sizeof(val), "%d", status);
		send_event(w, json_pack("{s:s,s:s,s:{s:s,s:s,s:n}}", "type",
		    "error", "text", text, "error", "ename", "ExitError",
		    "evalue", val, "traceback"));
	}
	evstream_end(w->stream, NULL, 0);
}

static void
irun_gone(void *arg)
{
	struct irun *w = arg;

	/* A deleted session has ended its runs already (running false). */
	if (w->running)
		isolated_run_forget(w->s, w);
	buf_reset(&w->line);
	free(w);
}

/* POST /v1/isolated/session/{sessionId}/run */
void
route_iso_run(struct http_req *req)
{
	json_t *body = http_req_json(req), *code, *envs, *to, *bg, *st;
	struct evstream_opts o = { .shape = EVSTREAM_TYPED,
	    .flags = EVSTREAM_F_NO_PING, .gone = irun_gone };
	struct isosess *s;
	struct irun *w;
	char run_id[37], err[256];
	long long timeout = 0;
	const char *why;
	int rc;

	if (runhold(req, route_iso_run))
		return;	/* a restore runs: after it */
	if (unavailable(req))
		return;
	code = json_object_get(body, "code");
	envs = json_object_get(body, "envs");
	to = json_object_get(body, "timeout_seconds");
	bg = json_object_get(body, "background");
	if (!json_is_string(code) || json_string_length(code) == 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "code is required");
		return;
	}
	if (envs != NULL && !json_is_null(envs) && !json_is_object(envs)) {
		http_reply_error(req, 400, HTTP_E_BODY, "envs must be an "
		    "object of strings");
		return;
	}
	if (to != NULL && !json_is_null(to)) {
		if (!json_is_integer(to) || json_integer_value(to) < 0 ||
		    json_integer_value(to) > 86400 * 365) {
			http_reply_error(req, 400, HTTP_E_BODY,
			    "timeout_seconds must be an integer >= 0");
			return;
		}
		timeout = json_integer_value(to);
	}
	if (bg != NULL && !json_is_null(bg) && !json_is_boolean(bg)) {
		http_reply_error(req, 400, HTTP_E_BODY, "background must be a "
		    "boolean");
		return;
	}
	if ((s = session_of(req)) == NULL)
		return;
	if (json_is_true(bg)) {
		if (isolated_background(s, json_string_value(code), envs,
		    run_id, err, sizeof(err)) < 0) {
			http_reply_error(req, 400, HTTP_E_BODY, "%s", err);
			return;
		}
		st = isolated_run_state(s, run_id);
		http_reply_json(req, 202, json_pack("{s:s,s:s,s:O}",
		    "session_id", isolated_id(s), "run_id", run_id,
		    "started_at", json_object_get(st, "started_at")));
		json_decref(st);
		return;
	}
	w = xcalloc(1, sizeof(*w));
	w->s = s;
	buf_init(&w->line);
	o.arg = w;
	if ((w->stream = evstream_open(req, &o)) == NULL) {
		free(w);
		return;
	}
	w->running = true;
	if ((rc = isolated_run(s, json_string_value(code), envs,
	    (unsigned)(timeout * 1000), irun_output, irun_done, w)) < 0) {
		w->running = false;
		why = rc == -ESRCH ? "session process has exited" :
		    "envs: names must be shell names and values strings";
		send_event(w, json_pack("{s:s,s:s,s:{s:s,s:s,s:n}}", "type",
		    "error", "text", why, "error", "ename", "RuntimeError",
		    "evalue", why, "traceback"));
		evstream_end(w->stream, NULL, 0);
	}
}

/* GET /v1/isolated/session/{sessionId}/runs/{runId} */
void
route_iso_run_get(struct http_req *req)
{
	struct isosess *s;
	json_t *st;

	if (unavailable(req) || (s = session_of(req)) == NULL)
		return;
	if ((st = isolated_run_state(s, http_req_param(req, "runId"))) ==
	    NULL)
		http_reply_error(req, 404, "SESSION_NOT_FOUND",
		    "run not found");
	else
		http_reply_json(req, 200, st);
}

/* GET /v1/isolated/session/{sessionId}/runs/{runId}/logs[?cursor=N] */
void
route_iso_logs(struct http_req *req)
{
	const char *q = http_req_query(req, "cursor");
	uint64_t cursor = 0, off, len, next;
	struct isosess *s;
	struct http_resp *resp;
	char *end, hv[32];
	long long v;
	int fd;

	if (unavailable(req) || (s = session_of(req)) == NULL)
		return;
	if (q != NULL && q[0] != '\0') {
		errno = 0;
		v = strtoll(q, &end, 10);
		if (*end != '\0' || errno != 0) {
			http_reply_error(req, 400, HTTP_E_BODY,
			    "cursor must be an integer");
			return;
		}
		if (v < 0) {
			http_reply_error(req, 400, HTTP_E_BODY,
			    "cursor cannot be negative");
			return;
		}
		cursor = (uint64_t)v;
	}
	if (isolated_logs(s, http_req_param(req, "runId"), cursor, &fd, &off,
	    &len, &next) < 0) {
		http_reply_error(req, 404, "SESSION_NOT_FOUND",
		    "run not found");
		return;
	}
	snprintf(hv, sizeof(hv), "%" PRIu64, next);
	if (fd < 0) {
		http_reply_text(req, 200, "text/plain; charset=utf-8", "", 0,
		    "EXECD-ISOLATED-TAIL-CURSOR", hv);
		return;
	}
	resp = http_resp_fd(fd, off, len);
	http_resp_header(resp, "Content-Type", "text/plain; charset=utf-8");
	http_resp_header(resp, "EXECD-ISOLATED-TAIL-CURSOR", hv);
	http_reply_resp(req, 200, resp);
}

/*
 * --- diff and commit ----------------------------------------------------
 * GET .../diff[?path=P] and POST .../commit ({"paths": [...]} or no body):
 * isodiff.c's, on a worker (the uppers and the workspace may be large or
 * on a hung mount).
 */
struct ichange {
	struct isodiff		*d;
	struct isodiff_req	 q;
	char			 up[ISODIFF_MAX][PATH_MAX + 64];
	char			*path;
	char			**paths;
	bool			 commit;
	json_t			*out;
};

static void
change_work(void *arg)
{
	struct ichange *c = arg;

	c->out = c->commit ? isodiff_commit(c->d, &c->q) :
	    isodiff_diff(c->d, &c->q);
	if (!c->commit && c->q.path != NULL && c->out != NULL)
		isolated_diff_trim(c->out);	/* diff_max_bytes */
}

static void
change_reply(struct http_req *req, void *arg)
{
	struct ichange *c = arg;

	if (req != NULL && c->out != NULL)
		http_reply_json(req, 200, c->out);
	else {
		if (req != NULL)
			http_reply_error(req, (unsigned)c->q.status, c->q.code,
			    "%s", c->q.err);
		json_decref(c->out);
	}
	isodiff_drop(c->d);
	for (size_t i = 0; i < c->q.npaths; i++)
		free(c->paths[i]);
	free(c->paths);
	free(c->path);
	free(c);
}

/* A diff or commit of the session of the path; paths: commit's. */
static void
change_start(struct http_req *req, bool commit, const char *path,
    const json_t *paths)
{
	struct isosess *s;
	struct ichange *c;
	size_t i;
	json_t *v;

	if ((s = session_of(req)) == NULL)
		return;
	c = xcalloc(1, sizeof(*c));
	c->commit = commit;
	if ((c->d = isolated_changes(s, &c->q, c->up)) == NULL) {
		free(c);
		http_reply_error(req, 500, "RUNTIME_ERROR", "the session has "
		    "no record of its lower trees");
		return;
	}
	if (path != NULL)
		c->q.path = c->path = xstrdup(path);
	if (paths != NULL) {
		c->paths = xcalloc(json_array_size(paths) + 1,
		    sizeof(*c->paths));
		json_array_foreach(paths, i, v)
			c->paths[c->q.npaths++] = xstrdup(json_string_value(v));
		c->q.paths = (const char *const *)c->paths;
	}
	http_req_work(req, 0, NULL, change_work, change_reply, c);
}

/* GET /v1/isolated/session/{sessionId}/diff[?path=P] */
void
route_iso_diff(struct http_req *req)
{
	const char *path = http_req_query(req, "path");

	if (unavailable(req))
		return;
	if (path != NULL && path[0] == '\0') {
		http_reply_error(req, 400, HTTP_E_BODY, "path must not be "
		    "empty");
		return;
	}
	change_start(req, false, path, NULL);
}

/* POST /v1/isolated/session/{sessionId}/commit */
void
route_iso_commit(struct http_req *req)
{
	json_t *body = http_req_json(req), *paths = NULL, *v;
	size_t i;

	if (unavailable(req))
		return;
	if (body != NULL && !json_is_null(body)) {
		if (!json_is_object(body)) {
			http_reply_error(req, 400, HTTP_E_BODY, "the body must "
			    "be an object");
			return;
		}
		paths = json_object_get(body, "paths");
		if (paths != NULL && json_is_null(paths))
			paths = NULL;
		if (paths != NULL && (!json_is_array(paths) ||
		    json_array_size(paths) > 4096)) {
			http_reply_error(req, 400, HTTP_E_BODY, "paths must be "
			    "an array of at most 4096 absolute paths");
			return;
		}
		json_array_foreach(paths, i, v)
			if (!json_is_string(v) || json_string_length(v) == 0) {
				http_reply_error(req, 400, HTTP_E_BODY,
				    "paths[%zu] must be a non-empty string", i);
				return;
			}
		/* An empty list commits nothing: say so rather than all. */
		if (paths != NULL && json_array_size(paths) == 0) {
			http_reply_error(req, 400, HTTP_E_BODY, "paths must "
			    "not be empty (leave it out to commit all)");
			return;
		}
	}
	change_start(req, true, NULL, paths);
}

/*
 * The file routes on a session's view.  Each is its ordinary handler,
 * called while the thread acts as the session's shell, in its root; the
 * jobs it hands to workers, and an upload's later steps, take that
 * identity again (work.c, route_upload.c), as they take a
 * /v1/filesystem/{uid}/{gid} one.
 */
static void
in_session(struct http_req *req, http_handler *fn)
{
	struct isosess *s;
	struct cred *c, *who;
	char err[256];
	pid_t pid;
	int fd, rc;

	if (unavailable(req) || (s = session_of(req)) == NULL)
		return;
	/* The shell's view and identity, read together on this thread. */
	pid = isolated_pid(s);
	if ((fd = isolated_root(s)) < 0) {
		http_reply_error(req, 500, "RUNTIME_ERROR", "session root: %s",
		    fd == -ESRCH ? "session process has exited" :
		    strerror(-fd));
		return;
	}
	close(fd);	/* isolated_root: the session is in use */
	c = xmalloc(sizeof(*c));
	if ((rc = cred_view(pid, c, err, sizeof(err))) == -EPERM) {
		/* An execd without CAP_SYS_ADMIN: a userns session's runs,
		 * diff and commit work, its file routes cannot. */
		http_reply_error(req, 503, "NOT_SUPPORTED", "session file "
		    "routes need CAP_SYS_ADMIN in execd's user namespace "
		    "(session view: %s)", err);
		free(c);
		return;
	} else if (rc < 0) {
		http_reply_error(req, 500, "RUNTIME_ERROR", "session view: %s",
		    rc == -ESRCH ? "session process has exited" : err);
		free(c);
		return;
	}
	/* Who the shell is: its uid, gid and groups, its home for "~". */
	who = xmalloc(sizeof(*who));
	if ((rc = cred_of_pid(pid, who, err, sizeof(err))) < 0) {
		http_reply_error(req, 500, "RUNTIME_ERROR", "session identity: "
		    "%s", rc == -ESRCH ? "session process has exited" : err);
		free(who);
		cred_free(c);
		return;
	}
	c->uid = who->uid;
	c->gid = who->gid;
	c->ngroups = who->ngroups;
	memcpy(c->groups, who->groups, who->ngroups * sizeof(gid_t));
	memcpy(c->home, who->home, sizeof(c->home));
	free(who);
	if ((rc = cred_enter(c)) < 0)
		http_reply_error(req, 500, "RUNTIME_ERROR", "cannot act in the "
		    "session's root as uid %lu gid %lu: %s",
		    (unsigned long)c->uid, (unsigned long)c->gid,
		    strerror(-rc));
	else {
		fn(req);
		cred_leave(c);
	}
	cred_free(c);
}

#define IN_SESSION(fn)							\
void									\
fn##_iso(struct http_req *req)						\
{									\
	in_session(req, fn);						\
}

IN_SESSION(route_files_info)
IN_SESSION(route_files_delete)
IN_SESSION(route_files_perms)
IN_SESSION(route_files_move)
IN_SESSION(route_files_search)
IN_SESSION(route_files_replace)
IN_SESSION(route_files_upload)
IN_SESSION(route_files_download)
IN_SESSION(route_dirs_list)
IN_SESSION(route_dirs_make)
IN_SESSION(route_dirs_delete)
