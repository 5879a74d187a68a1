/*
 * route_fs.c -- file and directory endpoints: HTTP in, fs/ calls, HTTP out.
 *
 * Handlers validate the request, resolve paths with fs_path, call fs_ops
 * and map the result; the filesystem logic itself lives in fs/.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../fs/fs_ops.h"
#include "../fs/fs_path.h"
#include "body.h"
#include "http.h"
#include "route.h"

static const struct body_field perm_fields[] = {
	{ "mode", BODY_INT, 0 },
	{ "owner", BODY_STRING, 0 },
	{ "group", BODY_STRING, 0 },
};

/*
 * Resolve a path key from a body or query into out; on failure reply 400
 * and return -1.
 */
static int
resolve(struct http_req *req, const char *in, char *out, size_t outlen)
{
	int rc = fs_path_resolve(in, strlen(in), NULL, out, outlen);

	if (rc == 0)
		return 0;
	if (rc == -ENAMETOOLONG)
		http_reply_errno(req, rc, "path is too long: %s", in);
	else if (rc == -ENOENT)
		http_reply_error(req, 500, HTTP_E_RUNTIME, "cannot expand ~: "
		    "no home directory is known");
	else
		http_reply_error(req, 400, HTTP_E_BODY, "invalid path '%s': "
		    "paths must be absolute or start with ~", in);
	return -1;
}

/*
 * POST /directories {"<dir>":{"mode":755,"owner":"u","group":"g"}, ...}:
 * mkdir -p each; mode and owner apply only to directories created here.
 * The first failure stops the request; earlier directories stay.
 */
void
route_dirs_make(struct http_req *req)
{
	json_t *body = http_req_json(req), *v;
	const char *key;
	char path[PATH_MAX], err[PATH_MAX + 128];
	mode_t mode;
	uid_t uid;
	gid_t gid;
	bool created;
	int rc;

	if (!json_is_object(body)) {
		http_reply_error(req, 400, HTTP_E_BODY, "request body must be "
		    "a JSON object mapping directory paths to "
		    "{\"mode\",\"owner\",\"group\"}");
		return;
	}
	/* 1. Check the whole body before creating anything. */
	json_object_foreach(body, key, v) {
		if (json_is_null(v))
			continue;
		if (body_check(v, key, perm_fields, 3, err, sizeof(err)) < 0) {
			http_reply_error(req, 400, HTTP_E_BODY,
			    "invalid request, %s", err);
			return;
		}
		if (fs_mode_parse(body_int(v, "mode", 0), &mode) < 0) {
			http_reply_error(req, 400, HTTP_E_BODY, "invalid "
			    "request, field '%s.mode' must be octal digits "
			    "such as 755, not %lld", key,
			    body_int(v, "mode", 0));
			return;
		}
	}
	/* 2. Then create, in the body's order. */
	json_object_foreach(body, key, v) {
		if (resolve(req, key, path, sizeof(path)) < 0)
			return;
		fs_mode_parse(body_int(v, "mode", 0), &mode);
		if ((rc = fs_owner_lookup(body_str(v, "owner", NULL),
		    body_str(v, "group", NULL), &uid, &gid, err,
		    sizeof(err))) < 0) {
			http_reply_error(req, 400, HTTP_E_BODY,
			    "invalid request, %s", err);
			return;
		}
		if ((rc = fs_mkdirs(path, mode, uid, gid, &created, err,
		    sizeof(err))) < 0) {
			http_reply_errno(req, rc, "error accessing file: %s",
			    err);
			return;
		}
	}
	http_reply_empty(req);
}
