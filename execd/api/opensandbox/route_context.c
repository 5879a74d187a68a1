/*
 * route_context.c -- code contexts: POST /code/context, GET and DELETE
 * /code/contexts[/{id}], GET /code/contexts/{id}/connection.
 *
 * A context is the domain's (context.h): this file checks a request,
 * asks the registry, and answers with the context's JSON.  A create
 * answers once the kernel is ready.  Runs in a context are
 * route_code.c's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../../fs/fs_ops.h"
#include "../../../fs/fs_path.h"
#include "../../../kernelproto/kp_connfile.h"
#include "../../core/xmalloc.h"
#include "../../domain/context.h"
#include "../../process/limits.h"
#include "../../transport/body.h"
#include "../../transport/http.h"
#include "../idem.h"
#include "../reqpath.h"
#include "route.h"

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

/* A create waiting for its working directory (made on a worker). */
struct ccreate {
	struct limits	 lim;
	char		 path[PATH_MAX];
	char		 cwd[PATH_MAX];	/* as the client wrote it */
};

static void	 create_start(struct http_req *, struct ccreate *);
static void	 create_dir_ready(struct http_req *, int, const char *,
		    void *);

/* POST /code/context {"language","cwd"}: 200 once the kernel is ready. */
void
route_context_create(struct http_req *req)
{
	json_t *body = http_req_json(req);
	const char *lang, *cwd;
	char err[2048], *msg;
	struct ccreate *cc;

	if (idem_front(req))
		return;
	cc = xcalloc(1, sizeof(*cc));

	lang = body_str(body, "language", "");
	cwd = body_str(body, "cwd", "");
	/* Only the request's: the context adds its language's defaults. */
	if (limits_for(&cc->lim, NULL, body, err, sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s",
		    err);
		goto out;
	}
	if (lang[0] == '\0') {
		msg = context_no_kernel(lang);
		http_reply_error(req, 400, HTTP_E_BODY, "%s", msg);
		free(msg);
		goto out;
	}
	if (cwd[0] == '\0') {
		create_start(req, cc);
		return;
	}
	if (fs_path_resolve(cwd, strlen(cwd), NULL, cc->path,
	    sizeof(cc->path)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid cwd '%s': "
		    "it must be absolute or start with ~", cwd);
		goto out;
	}
	snprintf(cc->cwd, sizeof(cc->cwd), "%s", cwd);
	/* Made as upstream does (mkdir -p), on a worker: a hung mount. */
	reqpath_dir(req, cc->path, true, create_dir_ready, cc);
	return;
out:
	free(cc);
}

static void
create_dir_ready(struct http_req *req, int rc, const char *why, void *arg)
{
	struct ccreate *cc = arg;

	if (req != NULL && rc < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid cwd '%s': %s",
		    cc->cwd, why);
		free(cc);
	} else if (req != NULL) {
		create_start(req, cc);
	} else {
		free(cc);
	}
}

/* Start the context's kernel and wait for it; frees cc. */
static void
create_start(struct http_req *req, struct ccreate *cc)
{
	const char *lang = body_str(http_req_json(req), "language", "");
	char err[2048];
	struct context *c;
	int rc;

	rc = context_create_light(lang, cc->path[0] ? cc->path : NULL, false,
	    &cc->lim, &c, err, sizeof(err));
	free(cc);
	if (rc == -ENOENT) {
		http_reply_error(req, 400, HTTP_E_BODY, "%s", err);
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

/* GET /code/contexts[?language=L]: every live context (of L). */
void
route_context_list(struct http_req *req)
{
	const char *lang = http_req_query(req, "language");
	json_t *a = json_array();

	if (lang != NULL && lang[0] == '\0')
		lang = NULL;
	if (lang != NULL && context_is_command_language(lang)) {
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

static void	 connection_ready(struct context *, const char *, void *);

/*
 * GET /code/contexts/{id}/connection: the kernel's connection info, with
 * the file's path, so a Jupyter client can attach to the same kernel;
 * answered once it is ready (a light context becomes a kernel for it).
 */
void
route_context_connection(struct http_req *req)
{
	struct context *c = path_context(req);

	if (c != NULL)
		connection_ready(c, NULL, req);
}

/* The connection info of c's kernel, once c is ready. */
static void
connection_ready(struct context *c, const char *why, void *arg)
{
	struct http_req *req = arg;
	const char *path;
	char err[256];
	struct kp_conn conn;
	json_t *o;
	FILE *f;
	char buf[4096];
	size_t n;

	if (why != NULL) {
		http_reply_error(req, 409, HTTP_E_RUNTIME, "context %s is "
		    "not ready: %s", context_id(c), why);
		return;
	}
	if (context_ready(c) && context_kernel_want(c) == NULL) {
		http_reply_error(req, 409, HTTP_E_RUNTIME, "context %s has "
		    "no kernel (a shell session, or a run once): there is "
		    "nothing to attach to", context_id(c));
		return;
	}
	if (!context_ready(c)) {
		http_req_defer(req, create_cancel, c);
		context_wait(c, connection_ready, req);
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
