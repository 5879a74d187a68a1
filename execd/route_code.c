/*
 * route_code.c -- code contexts and code runs: POST /code/context,
 * GET/DELETE /code/contexts[/{id}], GET /code/contexts/{id}/connection,
 * POST /code (a stream) and DELETE /code (interrupt).
 *
 * A run turns the kernel's iopub messages into the events clients parse
 * (reference: upstream-behavior.md sections 5 and 6): init with the
 * context id, a ping at once and every few seconds, stdout/stderr with
 * the kernel's text verbatim, execution_count then result, status "error"
 * then error, and execution_complete when the kernel has both replied and
 * gone idle.  Errors known before the stream starts are plain JSON
 * errors; a kernel that dies mid-run ends its stream with an error event
 * that says why.
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
#include "context.h"
#include "execd.h"
#include "http.h"
#include "log.h"
#include "loop.h"
#include "outstream.h"
#include "route.h"
#include "session.h"
#include "xmalloc.h"


struct run {
	struct execd		*app;
	struct http_req		*req;		/* until the stream opens */
	struct context		*ctx;
	struct outstream	 out;		/* once the stream opens */
	char			*code;
	char			 msg_id[33];
	bool			 running;	/* sent to the kernel */
	uint64_t		 tmo;
	long long		 timeout_ms;
	bool			 timed_out;
	bool			 saw_error;	/* an error event went out */
	size_t			 out_bytes;
	size_t			 dropped;
};

static const struct body_field run_fields[] = {
	{ "code", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
	{ "context", BODY_OBJECT, 0 },
	{ "timeout", BODY_INT, 0 },
};

static const struct body_field ctx_fields[] = {
	{ "id", BODY_STRING, 0 },
	{ "language", BODY_STRING, 0 },
	{ "cwd", BODY_STRING, 0 },
};

static void	 run_start(struct run *);
static void	 run_free(struct run *);
static void	 run_forget(struct run *);
static void	 run_ready(struct context *, const char *, void *);
static void	 run_cancel(struct http_req *, void *);
static void	 run_output(struct kernel *, const struct kp_msg *, void *);
static void	 run_done(struct kernel *, const struct kp_msg *,
		    const char *, void *);
static void	 run_gone(struct sse_stream *, void *);
static void	 run_shutdown(struct sse_stream *, void *);
static void	 run_timeout(struct loop *, uint64_t, void *);
static void	 reply_errors(struct run *, const json_t *);
static void	 shell_output(int, const char *, size_t, void *);
static void	 shell_done(int, bool, const char *, void *);
static void	 error_events(struct run *, const char *, const char *,
		    json_t *);

static const struct kernel_exec_cb run_cb = { run_output, run_done };

/* Reply 400 naming what is installed. */
static void
unknown_language(struct http_req *req, const char *lang)
{
	struct execd *app = http_req_app(req);
	char *have = context_languages(app->contexts);

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
	struct execd *app = http_req_app(req);
	json_t *body = http_req_json(req);
	const char *lang, *cwd;
	char path[PATH_MAX], err[512];
	struct context *c;
	int rc;

	if (body_check(body, "", ctx_fields, 3, err, sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s",
		    err);
		return;
	}
	lang = body_str(body, "language", "");
	cwd = body_str(body, "cwd", "");
	if (lang[0] == '\0') {
		unknown_language(req, lang);
		return;
	}
	if (cwd[0] != '\0' && prepare_cwd(req, cwd, path, sizeof(path)) < 0)
		return;
	rc = context_create(app->contexts, lang, cwd[0] ? path : NULL, false,
	    &c, err, sizeof(err));
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
	struct execd *app = http_req_app(req);
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
	context_each(app->contexts, lang, list_one, a);
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
	struct execd *app = http_req_app(req);
	const char *lang = http_req_query(req, "language");

	if (lang == NULL || lang[0] == '\0') {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "missing query parameter 'language'");
		return;
	}
	context_each(app->contexts, lang, delete_one, NULL);
	http_reply_empty(req);
}

/* The context named by the path, or a 404 reply and NULL. */
static struct context *
path_context(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	const char *id = http_req_param(req, "contextId");
	struct context *c = context_find(app->contexts, id);

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
	if (context_shell(c) != NULL) {
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
	struct run *r;
	int rc;

	if (body_check(body, "", run_fields, 3, err, sizeof(err)) < 0 ||
	    ((ctx = json_object_get(body, "context")) != NULL &&
	    !json_is_null(ctx) && body_check(ctx, "context", ctx_fields, 3,
	    err, sizeof(err)) < 0)) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s",
		    err);
		return;
	}
	if (body_int(body, "timeout", 0) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "field 'timeout' must not be negative");
		return;
	}
	id = body_str(ctx, "id", "");
	lang = body_str(ctx, "language", "");
	if (id[0] != '\0') {
		if ((c = context_find(app->contexts, id)) == NULL) {
			http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
			    "context %s not found", id);
			return;
		}
	} else if (lang[0] == '\0' || strcmp(lang, "command") == 0) {
		/* As upstream: no language means a shell command. */
		route_command_code(req, body_str(body, "code", ""));
		return;
	} else if (not_a_kernel_language(lang)) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "language '%s' is not supported by /code; use /command",
		    lang);
		return;
	} else if ((c = context_default(app->contexts, lang)) == NULL) {
		rc = context_create(app->contexts, lang, NULL, true, &c, err,
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
	r = xcalloc(1, sizeof(*r));
	r->app = app;
	r->req = req;
	r->ctx = c;
	r->code = xstrdup(body_str(body, "code", ""));
	r->timeout_ms = body_int(body, "timeout", 0);
	if (context_ready(c)) {
		run_start(r);
		return;
	}
	/* The kernel is starting (or restarting): answer when it is up. */
	http_req_defer(req, run_cancel, r);
	context_wait(c, run_ready, r);
}

static void
run_ready(struct context *c, const char *why, void *arg)
{
	struct run *r = arg;

	if (why != NULL) {
		http_reply_error(r->req, 500, HTTP_E_RUNTIME, "error running "
		    "codes %s", why);
		run_free(r);
		return;
	}
	run_start(r);
}

static void
run_cancel(struct http_req *req, void *arg)
{
	struct run *r = arg;

	context_wait_cancel(r->ctx, r);
	run_free(r);
}

/* Open the stream, send init and a ping, hand the code to the kernel. */
static void
run_start(struct run *r)
{
	struct sse_stream *s;
	int rc;

	s = http_reply_stream(r->req, run_shutdown, run_gone, r);
	r->req = NULL;
	if (s == NULL) {
		run_free(r);
		return;
	}
	outstream_start(&r->out, r->app->loop, s, context_id(r->ctx));
	if (sse_stream_ended(s))	/* opened during shutdown */
		return;
	if (context_shell(r->ctx) != NULL) {
		/* A bash context without a kernel: its shell runs the code. */
		r->running = true;
		context_use(r->ctx, +1);
		session_run(context_shell(r->ctx), r->code, NULL,
		    (unsigned)r->timeout_ms, shell_output, shell_done, r);
		return;
	}
	if ((rc = kernel_execute(context_kernel(r->ctx), r->code, &run_cb, r,
	    r->msg_id)) < 0) {
		run_done(context_kernel(r->ctx), NULL, rc == -EINVAL ?
		    "the code is not valid UTF-8" : "the kernel is not "
		    "available", r);
		return;
	}
	r->running = true;
	context_use(r->ctx, +1);
	if (r->timeout_ms > 0)
		r->tmo = loop_timer_add(r->app->loop, (uint64_t)r->timeout_ms,
		    run_timeout, r);
}

/* Shell output, verbatim, as a kernel's stream text would be. */
static void
shell_output(int which, const char *p, size_t n, void *arg)
{
	struct run *r = arg;
	struct sse_event ev = { .type = which == 1 ? "stdout" : "stderr",
	    .text = p, .text_len = n };
	size_t cap = r->app->conf->max_output;

	if (n == 0)
		return;
	if (r->out_bytes + n > cap) {
		r->dropped += n - (r->out_bytes < cap ? cap - r->out_bytes : 0);
		n = r->out_bytes < cap ? cap - r->out_bytes : 0;
		if (n == 0)
			return;
		ev.text_len = n;
	}
	r->out_bytes += n;
	outstream_push(&r->out, &ev);
}

/* The shell's run ended: a non-zero status is an error, as in Jupyter. */
static void
shell_done(int status, bool timed_out, const char *reset, void *arg)
{
	struct run *r = arg;
	char value[16], line[64];
	json_t *tb;

	if (status != 0 || timed_out) {
		snprintf(value, sizeof(value), "%d", timed_out ? -1 : status);
		snprintf(line, sizeof(line), timed_out ? "timed out after %lld "
		    "ms" : "exit status %lld", timed_out ? r->timeout_ms :
		    (long long)status);
		tb = json_pack("[s]", line);
		if (reset[0] != '\0')
			json_array_append_new(tb, json_string(reset));
		error_events(r, timed_out ? "TimeoutError" :
		    "CommandExecError", value, tb);
		json_decref(tb);
	}
	r->timed_out = false;	/* reported here */
	run_done(NULL, &(struct kp_msg){ 0 }, NULL, r);
}

/* The run's time is up: interrupt; run_done reports the timeout. */
static void
run_timeout(struct loop *l, uint64_t id, void *arg)
{
	struct run *r = arg;

	r->tmo = 0;
	r->timed_out = true;
	kernel_interrupt(context_kernel(r->ctx));
}

/* MIME bundle with text/plain renamed "text", as clients read it. */
static json_t *
results(const json_t *data)
{
	json_t *o = json_object(), *v;
	const char *k;

	json_object_foreach((json_t *)(uintptr_t)data, k, v)
		json_object_set(o, strcmp(k, "text/plain") == 0 ? "text" : k,
		    v);
	return o;
}

static void
error_events(struct run *r, const char *ename, const char *evalue,
    json_t *traceback)
{
	struct sse_event st = { .type = "status", .text = "error" };
	struct sse_event ev = { .type = "error" };
	json_t *e = json_pack("{s:s, s:s, s:O}", "ename", ename, "evalue",
	    evalue, "traceback", traceback ? traceback : json_null());

	r->saw_error = true;
	outstream_push(&r->out, &st);
	ev.error = e;
	outstream_push(&r->out, &ev);
	json_decref(e);
}

/* One iopub message of the run. */
static void
run_output(struct kernel *k, const struct kp_msg *m, void *arg)
{
	struct run *r = arg;
	const char *type = kp_msg_type(m), *text, *name;
	json_t *c = m->content, *res;
	struct sse_event ev = { 0 };
	size_t n, cap = r->app->conf->max_output;

	if (strcmp(type, "stream") == 0) {
		text = json_string_value(json_object_get(c, "text"));
		name = json_string_value(json_object_get(c, "name"));
		n = json_string_length(json_object_get(c, "text"));
		if (text == NULL || n == 0)
			return;
		if (r->out_bytes + n > cap) {
			/* Past the cap: count, drop, and say so at the end. */
			n = r->out_bytes < cap ? cap - r->out_bytes : 0;
			r->dropped += json_string_length(json_object_get(c,
			    "text")) - n;
			if (n == 0)
				return;
		}
		r->out_bytes += n;
		ev.type = name != NULL && strcmp(name, "stderr") == 0 ?
		    "stderr" : "stdout";
		ev.text = text;
		ev.text_len = n;
		outstream_push(&r->out, &ev);
	} else if (strcmp(type, "execute_result") == 0 ||
	    strcmp(type, "display_data") == 0 ||
	    strcmp(type, "update_display_data") == 0) {
		if (strcmp(type, "execute_result") == 0 &&
		    json_integer_value(json_object_get(c,
		    "execution_count")) > 0) {
			ev.type = "execution_count";
			ev.execution_count = json_integer_value(
			    json_object_get(c, "execution_count"));
			outstream_push(&r->out, &ev);
		}
		if (json_object_size(json_object_get(c, "data")) == 0)
			return;
		res = results(json_object_get(c, "data"));
		ev = (struct sse_event){ .type = "result", .results = res };
		outstream_push(&r->out, &ev);
		json_decref(res);
	} else if (strcmp(type, "error") == 0) {
		if (r->timed_out && strcmp(json_string_value(json_object_get(c,
		    "ename")) ?: "", "KeyboardInterrupt") == 0)
			return;		/* reported as the timeout */
		error_events(r, json_string_value(json_object_get(c,
		    "ename")) ?: "", json_string_value(json_object_get(c,
		    "evalue")) ?: "", json_object_get(c, "traceback"));
	}
}

/*
 * A reply that says the run failed when no error event went out: some
 * kernels (tslab) report errors only on stderr and in the reply, and a
 * kernel may skip ("abort") a request.  Clients must still see an error.
 */
static void
reply_errors(struct run *r, const json_t *c)
{
	const char *status = json_string_value(json_object_get(c, "status"));

	if (status == NULL || r->saw_error || r->timed_out)
		return;
	if (strcmp(status, "error") == 0)
		error_events(r, json_string_value(json_object_get(c,
		    "ename")) ?: "Error", json_string_value(json_object_get(c,
		    "evalue")) ?: "the kernel reported an error (see stderr)",
		    json_object_get(c, "traceback"));
	else if (strcmp(status, "aborted") == 0)
		error_events(r, "ExecutionAborted", "the kernel did not run "
		    "this code", NULL);
}

/* The run is over: final events, then the end of the stream. */
static void
run_done(struct kernel *k, const struct kp_msg *reply, const char *why,
    void *arg)
{
	struct run *r = arg;
	struct sse_event ev = { .type = "execution_complete" };
	char msg[128];

	if (r->running)
		context_use(r->ctx, -1);
	r->running = false;
	/* The context may go with its kernel: nothing may reach it now. */
	if (r->tmo != 0)
		loop_timer_cancel(r->app->loop, r->tmo);
	r->tmo = 0;
	if (r->dropped > 0) {
		snprintf(msg, sizeof(msg), "\n[execd: output limit reached, "
		    "%zu bytes dropped]\n", r->dropped);
		outstream_push(&r->out, &(struct sse_event){ .type = "stderr",
		    .text = msg });
	}
	if (r->timed_out) {
		snprintf(msg, sizeof(msg), "execution timed out after %lld ms "
		    "and was interrupted", r->timeout_ms);
		error_events(r, "TimeoutError", msg, NULL);
	}
	if (reply == NULL) {
		error_events(r, "KernelError", why, NULL);
	} else {
		reply_errors(r, reply->content);
		ev.execution_time = (long long)(loop_now_ms() - r->out.t0);
		outstream_push(&r->out, &ev);
	}
	if (r->out.s != NULL && !sse_stream_ended(r->out.s))
		sse_stream_finish(r->out.s, NULL, 0);
}

/*
 * Nobody listens any more: the kernel finishes the run on its own, and the
 * context no longer counts it.
 */
static void
run_forget(struct run *r)
{
	if (!r->running)
		return;
	if (context_shell(r->ctx) != NULL)
		session_run_forget(context_shell(r->ctx), r);
	else
		kernel_execute_forget(context_kernel(r->ctx), r->msg_id);
	context_use(r->ctx, -1);
	r->running = false;
}

/* Shutdown: a final error event ends the stream. */
static void
run_shutdown(struct sse_stream *s, void *arg)
{
	struct run *r = arg;

	run_forget(r);
	error_events(r, "Shutdown", "execd is shutting down", NULL);
	sse_stream_finish(s, NULL, 0);
}

/* The stream is gone: stop listening to the kernel for it. */
static void
run_gone(struct sse_stream *s, void *arg)
{
	struct run *r = arg;

	outstream_gone(&r->out);
	run_forget(r);
	run_free(r);
}

static void
run_free(struct run *r)
{
	outstream_gone(&r->out);	/* no-op unless a stream opened */
	if (r->tmo != 0)
		loop_timer_cancel(r->app->loop, r->tmo);
	free(r->code);
	free(r);
}
