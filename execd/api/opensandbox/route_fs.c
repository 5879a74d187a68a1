/*
 * route_fs.c -- the file endpoints that act on a list of paths, answered
 * in JSON: info, delete, permissions, move, replace, mkdir and rm -rf.
 *
 * A handler checks the whole request first (query or body), resolves
 * every path with reqpath.h, and hands the list to a worker as one
 * fileops batch (fileops.h, which holds the operations and their
 * messages); the reply maps the batch's result.  A body names at most
 * MAX_ENTRIES entries.  Listing, search and grep are in route_fs_tree.c,
 * the watch stream in route_fs_watch.c; uploads, downloads and archives,
 * whose bodies are streamed, in route_upload.c, route_download.c and
 * route_archive.c.  Loop thread only.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "../../../fs/fs_ops.h"
#include "../../core/xmalloc.h"
#include "../../domain/fileops.h"
#include "../../transport/body.h"
#include "../../transport/http.h"
#include "../reqpath.h"
#include "route.h"

#define MAX_PATHS	1024	/* repeated path= keys one request may name */
#define MAX_ENTRIES	10000	/* entries of one JSON body */
#define ERRLEN		(PATH_MAX + 256)

static const struct body_field perm_fields[] = {
	{ "mode", BODY_INT, 0 },
	{ "owner", BODY_STRING, 0 },
	{ "group", BODY_STRING, 0 },
	BODY_END
};

static const struct body_field mv_fields[] = {
	{ "src", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
	{ "dest", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
	BODY_END
};

static const struct body_field replace_fields[] = {
	{ "old", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
	{ "new", BODY_STRING, 0 },
	BODY_END
};

/* One request's batch, run on a worker (http_req_work). */
struct fsop {
	enum fileops_kind	 kind;
	struct fileops_batch	*batch;
	bool			 quiet;	/* replace: answer empty, not out */
	json_t			*out;	/* the answer, built on the worker */
	int			 rc;
	char			 err[FILEOPS_ERRLEN];
};

static struct fsop *fsop_new(enum fileops_kind);
static void	 fsop_free(struct fsop *);
static void	 fsop_start(struct http_req *, struct fsop *);
static void	 fsop_run(void *);
static void	 fsop_done(struct http_req *, void *);
static int	 fsop_status(const struct fsop *);
static ssize_t	 query_paths(struct http_req *, const char **);
static void	 query_items(struct http_req *, struct fsop *, bool);
static int	 resolve_field(struct http_req *, const json_t *, const char *,
		    char *, size_t);
static int	 perm_entry(struct http_req *, const char *, const json_t *,
		    mode_t *);
static int	 need_object(struct http_req *, const json_t *, const char *);
static int	 too_many(struct http_req *, size_t);
static void	 perm_op(struct http_req *, enum fileops_kind, bool);

/* The FileInfo object, for the routes (see fileops_info_json()). */
json_t *
route_fs_info_json(const char *path, const struct fs_info *fi)
{
	return fileops_info_json(path, fi);
}

static struct fsop *
fsop_new(enum fileops_kind kind)
{
	struct fsop *op = xcalloc(1, sizeof(*op));

	op->kind = kind;
	op->batch = fileops_batch_new(kind);
	return op;
}

static void
fsop_free(struct fsop *op)
{
	fileops_batch_free(op->batch);
	json_decref(op->out);
	free(op);
}

/* From a handler: the batch runs on a worker, then fsop_done answers. */
static void
fsop_start(struct http_req *req, struct fsop *op)
{
	http_req_work(req, 0, NULL, fsop_run, fsop_done, op);
}

/* On a worker: every item in order, until one fails. */
static void
fsop_run(void *arg)
{
	struct fsop *op = arg;

	op->rc = fileops_batch_run(op->batch, &op->out, op->err,
	    sizeof(op->err));
}

/*
 * The errno the failure is answered with: a directory where a file is
 * meant is the client's mistake (400), and so is refusing to remove "/"
 * (403), whatever the filesystem said.
 */
static int
fsop_status(const struct fsop *op)
{
	if (op->rc == -EISDIR && (op->kind == FILEOPS_UNLINK ||
	    op->kind == FILEOPS_REPLACE))
		return -EINVAL;
	if (op->rc == -EBUSY && op->kind == FILEOPS_RMTREE)
		return -EPERM;
	return op->rc;
}

/* Back on the loop thread: answer, if the request is still there. */
static void
fsop_done(struct http_req *req, void *arg)
{
	struct fsop *op = arg;

	if (req == NULL) {
		/* The client left: nothing to say. */
	} else if (op->rc < 0) {
		http_reply_errno(req, fsop_status(op), "%s", op->err);
	} else if (op->out != NULL && !op->quiet) {
		http_reply_json(req, 200, op->out);
		op->out = NULL;
	} else {
		http_reply_empty(req);
	}
	fsop_free(op);
}

/*
 * Resolve the string field name of v (checked to be a string) into out,
 * its NUL bytes included (so refused); on failure reply and return -1.
 */
static int
resolve_field(struct http_req *req, const json_t *v, const char *name,
    char *out, size_t outlen)
{
	const json_t *s = json_object_get(v, name);
	const char *in = json_string_value(s);

	if (in != NULL && strlen(in) == json_string_length(s))
		return reqpath_resolve(req, in, out, outlen);
	http_reply_error(req, 400, HTTP_E_BODY, "invalid path in field '%s': "
	    "it contains a NUL byte", name);
	return -1;
}

/* Every value of the repeated path key; on too many, reply and return -1. */
static ssize_t
query_paths(struct http_req *req, const char **vals)
{
	size_t n = http_req_query_all(req, "path", vals, MAX_PATHS);

	if (n > MAX_PATHS) {
		http_reply_error(req, 400, HTTP_E_QUERY, "too many 'path' "
		    "parameters: %zu (at most %d)", n, MAX_PATHS);
		return -1;
	}
	return (ssize_t)n;
}

/*
 * Info, unlink or rm -rf: resolve every path= value (skip_empty: an
 * empty one is skipped, as upstream), then hand the list to a worker.  A
 * bad path is answered at once and nothing is done.
 */
static void
query_items(struct http_req *req, struct fsop *op, bool skip_empty)
{
	const char *vals[MAX_PATHS];
	char path[PATH_MAX];
	ssize_t n;

	if ((n = query_paths(req, vals)) < 0) {
		fsop_free(op);
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (skip_empty && vals[i][0] == '\0')
			continue;
		if (reqpath_resolve(req, vals[i], path, sizeof(path)) < 0) {
			fsop_free(op);
			return;
		}
		fileops_batch_add(op->batch, &(struct fileops_item){
		    .key = vals[i], .path = path });
	}
	fsop_start(req, op);
}

/* GET /files/info?path=A&path=B: {"A": FileInfo, "B": FileInfo}. */
void
route_files_info(struct http_req *req)
{
	query_items(req, fsop_new(FILEOPS_INFO), false);
}

/* DELETE /files?path=...: unlink each file; missing ones are fine. */
void
route_files_delete(struct http_req *req)
{
	query_items(req, fsop_new(FILEOPS_UNLINK), false);
}

/*
 * DELETE /directories?path=...: rm -rf each, on a worker; missing ones are
 * fine.  The first failure stops the request.
 */
void
route_dirs_delete(struct http_req *req)
{
	query_items(req, fsop_new(FILEOPS_RMTREE), true);
}

/*
 * Check a {"<path>": {"mode","owner","group"}} entry; on failure reply 400
 * and return -1.  Fills the parsed mode; owner and group are looked up
 * on the worker (fileops_batch_run).
 */
static int
perm_entry(struct http_req *req, const char *key, const json_t *v,
    mode_t *mode)
{
	char err[ERRLEN];

	*mode = 0;
	if (json_is_null(v))
		return 0;
	if (body_check_table(v, key, perm_fields, err, sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s",
		    err);
		return -1;
	}
	if (fs_mode_parse(body_int(v, "mode", 0), mode) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "field '%s.mode' must be octal digits such as 755, not "
		    "%lld", key, body_int(v, "mode", 0));
		return -1;
	}
	return 0;
}

/* Reply 400 unless the body is a JSON object; then return -1. */
static int
need_object(struct http_req *req, const json_t *body, const char *what)
{
	if (json_is_object(body))
		return too_many(req, json_object_size(body));
	http_reply_error(req, 400, HTTP_E_BODY, "request body must be a JSON "
	    "object mapping paths to %s", what);
	return -1;
}

/* Reply 400 if a body has more than MAX_ENTRIES entries; then -1. */
static int
too_many(struct http_req *req, size_t n)
{
	if (n <= MAX_ENTRIES)
		return 0;
	http_reply_error(req, 400, HTTP_E_BODY, "too many entries in the "
	    "request body: %zu (at most %d per request)", n, MAX_ENTRIES);
	return -1;
}

/*
 * A {"<path>": {"mode","owner","group"}} body (mkdir, or permissions, which
 * skips null entries) checked whole, paths too, then handed to a worker;
 * on a mistake reply 400 and do nothing.
 */
static void
perm_op(struct http_req *req, enum fileops_kind kind, bool skip_null)
{
	json_t *body = http_req_json(req), *v;
	const char *key;
	char path[PATH_MAX];
	struct fsop *op;
	mode_t mode;

	if (need_object(req, body, "{\"mode\",\"owner\",\"group\"}") < 0)
		return;
	op = fsop_new(kind);
	json_object_foreach(body, key, v) {
		if (perm_entry(req, key, v, &mode) < 0 ||
		    reqpath_resolve(req, key, path, sizeof(path)) < 0) {
			fsop_free(op);
			return;
		}
		if (skip_null && json_is_null(v))
			continue;
		fileops_batch_add(op->batch, &(struct fileops_item){
		    .key = key, .path = path, .mode = mode,
		    .owner = body_str(v, "owner", NULL),
		    .group = body_str(v, "group", NULL) });
	}
	fsop_start(req, op);
}

/*
 * POST /directories {"<dir>":{"mode":755,"owner":"u","group":"g"}, ...}:
 * mkdir -p each; mode and owner apply only to directories created here.
 * The whole body is checked first; the first failure then stops the
 * request, and earlier directories stay.
 */
void
route_dirs_make(struct http_req *req)
{
	perm_op(req, FILEOPS_MKDIR, false);
}

/*
 * POST /files/permissions {"<path>":{"mode":644,"owner":"u","group":"g"}}:
 * chmod then chown each.  The whole body is checked first.
 */
void
route_files_perms(struct http_req *req)
{
	perm_op(req, FILEOPS_CHMOD, true);
}

/* POST /files/mv [{"src":"/a","dest":"/b"}, ...], in order, on a worker. */
void
route_files_move(struct http_req *req)
{
	json_t *body = http_req_json(req), *v;
	char src[PATH_MAX], dst[PATH_MAX], err[ERRLEN], where[32];
	struct fsop *op;
	size_t i;

	if (!json_is_array(body)) {
		http_reply_error(req, 400, HTTP_E_BODY, "request body must be "
		    "a JSON array of {\"src\",\"dest\"}");
		return;
	}
	if (too_many(req, json_array_size(body)) < 0)
		return;
	op = fsop_new(FILEOPS_MOVE);
	json_array_foreach(body, i, v) {
		snprintf(where, sizeof(where), "[%zu]", i);
		if (body_check_table(v, where, mv_fields, err,
		    sizeof(err)) < 0) {
			http_reply_error(req, 400, HTTP_E_BODY,
			    "invalid request, %s", err);
			fsop_free(op);
			return;
		}
		if (resolve_field(req, v, "src", src, sizeof(src)) < 0 ||
		    resolve_field(req, v, "dest", dst, sizeof(dst)) < 0) {
			fsop_free(op);
			return;
		}
		fileops_batch_add(op->batch, &(struct fileops_item){
		    .key = body_str(v, "src", ""), .path = src,
		    .dstkey = body_str(v, "dest", ""), .dst = dst });
	}
	fsop_start(req, op);
}

/*
 * POST /files/replace[?verbose=true] {"<path>":{"old":"a","new":"b"}}: the
 * whole body is checked, then the files are rewritten on a worker.
 */
void
route_files_replace(struct http_req *req)
{
	json_t *body = http_req_json(req), *v, *old;
	const char *key, *verbose = http_req_query(req, "verbose"), *new_;
	char path[PATH_MAX], err[ERRLEN];
	struct fsop *op;

	if (need_object(req, body, "{\"old\",\"new\"}") < 0)
		return;
	op = fsop_new(FILEOPS_REPLACE);
	op->quiet = verbose == NULL || strcmp(verbose, "true") != 0;
	json_object_foreach(body, key, v) {
		if (body_check_table(v, key, replace_fields, err,
		    sizeof(err)) < 0) {
			http_reply_error(req, 400, HTTP_E_BODY, "invalid "
			    "request, %s%s", err, json_is_object(v) &&
			    json_is_string(json_object_get(v, "old")) ?
			    " (old content must not be empty)" : "");
			fsop_free(op);
			return;
		}
		if (reqpath_resolve(req, key, path, sizeof(path)) < 0) {
			fsop_free(op);
			return;
		}
		/* Copies: the worker must not share the request's JSON. */
		old = json_object_get(v, "old");
		new_ = body_str(v, "new", "");
		fileops_batch_add(op->batch, &(struct fileops_item){
		    .key = key, .path = path, .old = json_string_value(old),
		    .oldlen = json_string_length(old), .new_ = new_,
		    .newlen = strlen(new_) });
	}
	fsop_start(req, op);
}
