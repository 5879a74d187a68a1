/*
 * route_code.c -- code contexts and code runs: POST /code/context,
 * GET/DELETE /code/contexts[/{id}], GET /code/contexts/{id}/connection,
 * POST /code (a stream) and DELETE /code (interrupt).
 *
 * A code run is a domain object (run.h): this file finds or makes its
 * context, waits for the context to be ready, and frames the run's events
 * as OpenSandbox's stream (sse_fmt.h) at the client's pace (feed.h).
 * Errors known before the stream starts are plain JSON errors.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../fs/fs_ops.h"
#include "../fs/fs_path.h"
#include "../kernelproto/kp_connfile.h"
#include "../sse/sse_fmt.h"
#include "body.h"
#include "cmdstream.h"
#include "command.h"
#include "conf.h"
#include "context.h"
#include "evstream.h"
#include "execd.h"
#include "feed.h"
#include "http.h"
#include "limits.h"
#include "log.h"
#include "route.h"
#include "run.h"
#include "xmalloc.h"

/* A code run's stream: the run, and the feed that takes its events. */
struct code_stream {
	struct http_req		*req;		/* until the stream opens */
	struct context		*ctx;
	char			*code;
	struct run_opts		 o;
	struct run		*run;
	struct feed		*feed;		/* once the stream opens */
};

static void	 stream_open(struct code_stream *);
static void	 stream_free(struct code_stream *);
static void	 run_command(struct http_req *, const char *);
static void	 on_ready(struct context *, const char *, void *);
static void	 on_cancel(struct http_req *, void *);
static void	 on_notify(void *);
static int	 on_pull(struct buf *, void *);
static void	 on_gone(void *);

/* Reply 400 naming what is installed. */
static void
unknown_language(struct http_req *req, const char *lang)
{
	char *have = context_languages();

	http_reply_error(req, 400, HTTP_E_BODY, "no kernel is installed for "
	    "language '%s'; installed: %s", lang, have);
	free(have);
}

/* {"id","language"[,"cwd"]} of a context. */
static json_t *
context_json(struct context *c, bool with_cwd)
{
	json_t *o = json_pack("{s:s, s:s}", "id", context_id(c), "language",
	    context_language(c));

	if (with_cwd && context_cwd(c) != NULL)
		json_object_set_new(o, "cwd", json_string(context_cwd(c)));
	return o;
}

/*
 * Resolve and create a context's working directory, as upstream does
 * (mkdir -p).  0 with out filled; on failure reply and return -1.
 */
static int
prepare_cwd(struct http_req *req, const char *cwd, char *out, size_t outlen)
{
	char err[PATH_MAX + 128];
	struct stat st;
	bool created;
	int rc;

	if (fs_path_resolve(cwd, strlen(cwd), NULL, out, outlen) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid cwd '%s': "
		    "it must be absolute or start with ~", cwd);
		return -1;
	}
	if ((rc = fs_mkdirs(out, 0, (uid_t)-1, (gid_t)-1, &created, err,
	    sizeof(err))) < 0 || stat(out, &st) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid cwd '%s': %s",
		    cwd, rc < 0 ? err : "cannot stat it");
		return -1;
	}
	return 0;
}

/* A create request waits for its kernel: then 200, or 500 with why. */
static void
create_ready(struct context *c, const char *why, void *arg)
{
	struct http_req *req = arg;

	if (why != NULL)
		http_reply_error(req, 500, HTTP_E_RUNTIME, "error creating "
		    "code context. %s", why);
	else
		http_reply_json(req, 200, context_json(c, true));
}

static void
create_cancel(struct http_req *req, void *arg)
{
	context_wait_cancel(arg, req);
}

/* POST /code/context {"language","cwd"}: 200 once the kernel is ready. */
void
route_context_create(struct http_req *req)
{
	json_t *body = http_req_json(req);
	const char *lang, *cwd;
	char path[PATH_MAX], err[512];
	struct context *c;
	struct limits lim;
	int rc;

	lang = body_str(body, "language", "");
	cwd = body_str(body, "cwd", "");
	/* Only the request's: the context adds its language's defaults. */
	if (limits_for(&lim, NULL, body, err, sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s",
		    err);
		return;
	}
	if (lang[0] == '\0') {
		unknown_language(req, lang);
		return;
	}
	if (cwd[0] != '\0' && prepare_cwd(req, cwd, path, sizeof(path)) < 0)
		return;
	rc = context_create(lang, cwd[0] ? path : NULL, false, &lim, &c, err,
	    sizeof(err));
	if (rc == -ENOENT) {
		unknown_language(req, lang);
		return;
	}
	if (rc < 0) {
		http_reply_error(req, 500, HTTP_E_RUNTIME, "error creating "
		    "code context. %s", err);
		return;
	}
	http_req_defer(req, create_cancel, c);
	context_wait(c, create_ready, req);
}

static void
list_one(struct context *c, void *arg)
{
	json_array_append_new(arg, context_json(c, false));
}

/* Languages that name no kernel context upstream either. */
static bool
not_a_kernel_language(const char *lang)
{
	return strcmp(lang, "command") == 0 ||
	    strcmp(lang, "background-command") == 0;
}

/* GET /code/contexts[?language=L]: every live context (of L). */
void
route_context_list(struct http_req *req)
{
	const char *lang = http_req_query(req, "language");
	json_t *a = json_array();

	if (lang != NULL && lang[0] == '\0')
		lang = NULL;
	if (lang != NULL && not_a_kernel_language(lang)) {
		json_decref(a);
		http_reply_error(req, 400, HTTP_E_BODY, "unsupported language "
		    "context operation: %s", lang);
		return;
	}
	context_each(lang, list_one, a);
	http_reply_json(req, 200, a);
}

static void
delete_one(struct context *c, void *arg)
{
	context_delete(c);
}

/* DELETE /code/contexts?language=L: delete every context of L. */
void
route_context_delete_lang(struct http_req *req)
{
	const char *lang = http_req_query(req, "language");

	if (lang == NULL || lang[0] == '\0') {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "missing query parameter 'language'");
		return;
	}
	context_each(lang, delete_one, NULL);
	http_reply_empty(req);
}

/* The context named by the path, or a 404 reply and NULL. */
static struct context *
path_context(struct http_req *req)
{
	const char *id = http_req_param(req, "contextId");
	struct context *c = context_find(id);

	if (c == NULL)
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "context %s not found", id);
	return c;
}

/* GET /code/contexts/{id} */
void
route_context_get(struct http_req *req)
{
	struct context *c = path_context(req);

	if (c != NULL)
		http_reply_json(req, 200, context_json(c, false));
}

/* DELETE /code/contexts/{id} */
void
route_context_delete(struct http_req *req)
{
	struct context *c = path_context(req);

	if (c != NULL) {
		context_delete(c);
		http_reply_empty(req);
	}
}

/*
 * GET /code/contexts/{id}/connection: the kernel's connection info, with
 * the file's path, so a Jupyter client can attach to the same kernel.
 */
void
route_context_connection(struct http_req *req)
{
	struct context *c = path_context(req);
	const char *path;
	char err[256];
	struct kp_conn conn;
	json_t *o;
	FILE *f;
	char buf[4096];
	size_t n;

	if (c == NULL)
		return;
	if (context_kernel(c) == NULL) {
		http_reply_error(req, 409, HTTP_E_RUNTIME, "context %s is a "
		    "shell session, not a kernel: there is nothing to attach "
		    "to", context_id(c));
		return;
	}
	if (!context_ready(c)) {
		http_reply_error(req, 409, HTTP_E_RUNTIME, "context %s is "
		    "not ready", context_id(c));
		return;
	}
	path = kernel_connection_file(context_kernel(c));
	if ((f = fopen(path, "re")) == NULL) {
		http_reply_errno(req, -errno, "cannot read %s", path);
		return;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (kp_connfile_parse(buf, n, &conn, err, sizeof(err)) < 0 ||
	    (o = kp_connfile_json(&conn)) == NULL) {
		explicit_bzero(&conn, sizeof(conn));
		http_reply_error(req, 500, HTTP_E_RUNTIME, "bad connection "
		    "file %s: %s", path, err);
		return;
	}
	explicit_bzero(&conn, sizeof(conn));
	explicit_bzero(buf, sizeof(buf));
	json_object_set_new(o, "connection_file", json_string(path));
	http_reply_json(req, 200, o);
}

/*
 * POST /code without a language: the code runs as a shell command, its
 * stream that of POST /command.
 */
static void
run_command(struct http_req *req, const char *code)
{
	struct execd *app = http_req_app(req);
	struct command_opts o = { .command = code,
	    .limits = &app->conf->limits[LIMITS_COMMAND] };
	struct command *c;
	char err[512];
	int rc;

	if ((rc = command_start(&o, NULL, NULL, &c, err, sizeof(err))) < 0) {
		http_reply_errno(req, rc, "error running commands %s", err);
		return;
	}
	(void)cmdstream_reply(req, c, 0);
}

/*
 * POST /code {"code","context":{"id","language"},"timeout"}: run code in
 * a context (or the language's default one) and stream its events.
 */
void
route_code_run(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	json_t *body = http_req_json(req), *ctx;
	const char *id, *lang;
	char err[512];
	struct context *c;
	struct code_stream *s;
	int rc;

	ctx = json_object_get(body, "context");
	if (body_int(body, "timeout", 0) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "field 'timeout' must not be negative");
		return;
	}
	id = body_str(ctx, "id", "");
	lang = body_str(ctx, "language", "");
	if (id[0] != '\0') {
		if ((c = context_find(id)) == NULL) {
			http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
			    "context %s not found", id);
			return;
		}
	} else if (lang[0] == '\0' || strcmp(lang, "command") == 0) {
		/* As upstream: no language means a shell command. */
		run_command(req, body_str(body, "code", ""));
		return;
	} else if (not_a_kernel_language(lang)) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "language '%s' is not supported by /code; use /command",
		    lang);
		return;
	} else if ((c = context_default(lang)) == NULL) {
		rc = context_create(lang, NULL, true, NULL, &c, err,
		    sizeof(err));
		if (rc == -ENOENT) {
			unknown_language(req, lang);
			return;
		}
		if (rc < 0) {
			http_reply_error(req, 500, HTTP_E_RUNTIME,
			    "error running codes %s", err);
			return;
		}
	}
	s = xcalloc(1, sizeof(*s));
	s->req = req;
	s->ctx = c;
	s->code = xstrdup(body_str(body, "code", ""));
	s->o = (struct run_opts){ .code = s->code,
	    .timeout_ms = body_int(body, "timeout", 0),
	    .max_output = app->conf->max_output,
	    .max_queue = app->conf->stream_cap };
	if (context_ready(c)) {
		stream_open(s);
		return;
	}
	/* The kernel is starting (or restarting): answer when it is up. */
	http_req_defer(req, on_cancel, s);
	context_wait(c, on_ready, s);
}

static void
on_ready(struct context *c, const char *why, void *arg)
{
	struct code_stream *s = arg;

	if (why != NULL) {
		http_reply_error(s->req, 500, HTTP_E_RUNTIME, "error running "
		    "codes %s", why);
		stream_free(s);
		return;
	}
	stream_open(s);
}

static void
on_cancel(struct http_req *req, void *arg)
{
	struct code_stream *s = arg;

	context_wait_cancel(s->ctx, s);
	stream_free(s);
}

/* Start the run, then its stream: init and a ping go out at once. */
static void
stream_open(struct code_stream *s)
{
	struct http_req *req = s->req;

	s->run = run_new(s->ctx, &s->o, on_notify, s);
	s->req = NULL;
	if ((s->feed = feed_reply(req, on_pull, on_gone, s)) == NULL)
		stream_free(s);
}

/* The run has more: take it if the client has room. */
static void
on_notify(void *arg)
{
	struct code_stream *s = arg;

	if (s->feed != NULL)
		feed_kick(s->feed);
}

/* Whole events for the feed, about FEED_CHUNK bytes (see feed.h). */
static int
on_pull(struct buf *out, void *arg)
{
	struct code_stream *s = arg;
	struct sse_event ev;
	size_t start = out->len;
	int rc;

	while ((rc = run_next(s->run, &ev)) == RUN_EVENT) {
		sse_fmt_event(out, &ev);
		if (out->len - start >= FEED_CHUNK)
			return FEED_MORE;
	}
	if (rc == RUN_OVERFLOW) {
		evstream_fmt_overflow(out, EVSTREAM_TYPED);
		return FEED_END;
	}
	return rc == RUN_END ? FEED_END : FEED_WAIT;
}

/* The stream is gone: the run goes on in its context, unheard. */
static void
on_gone(void *arg)
{
	struct code_stream *s = arg;

	s->feed = NULL;
	stream_free(s);
}

static void
stream_free(struct code_stream *s)
{
	run_free(s->run);
	free(s->code);
	free(s);
}
