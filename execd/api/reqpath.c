/*
 * reqpath.c -- a client's path in a request, resolved or refused (see
 * reqpath.h).  The resolving itself is fs_path's; this file says why a
 * path is refused, in the errors clients already know.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../fs/fs_ops.h"
#include "../../fs/fs_path.h"
#include "../core/cred.h"
#include "../core/xmalloc.h"
#include "../transport/http.h"
#include "reqpath.h"

/* Resolve a client's path into out, or say why not; see reqpath.h. */
int
reqpath_resolve_why(const char *in, char *out, size_t outlen, char *why,
    size_t whylen)
{
	char *raw = xstrdup(in);
	int rc;

	/* The text form of a name that is not UTF-8 (fs_path.h). */
	fs_path_unescape(raw);
	/* "~" is the home of the user the request acts as (cred.h). */
	rc = fs_path_resolve(raw, strlen(raw), cred_home(), out, outlen);
	free(raw);
	if (rc == -ENAMETOOLONG)
		snprintf(why, whylen, "path is too long: %s", in);
	else if (rc == -ENOENT)
		snprintf(why, whylen, "cannot expand ~: no home directory is "
		    "known");
	else if (rc < 0)
		snprintf(why, whylen, "invalid path '%s': paths must be "
		    "absolute or start with ~", in);
	return rc;
}

/*
 * Resolve a client's path into out; on failure reply (400, or 500 when
 * no home is known for "~") and return -1.
 */
int
reqpath_resolve(struct http_req *req, const char *in, char *out,
    size_t outlen)
{
	char why[PATH_MAX + 128];
	int rc;

	if ((rc = reqpath_resolve_why(in, out, outlen, why, sizeof(why))) == 0)
		return 0;
	if (rc == -ENAMETOOLONG)
		http_reply_errno(req, rc, "%s", why);
	else if (rc == -ENOENT)
		http_reply_error(req, 500, HTTP_E_RUNTIME, "%s", why);
	else
		http_reply_error(req, 400, HTTP_E_BODY, "%s", why);
	return -1;
}

/*
 * The path query parameter, resolved into out; on failure reply and
 * return -1.  A value with a NUL byte (sent as %00) is refused too: MHD
 * cuts it at the NUL, so compare with the raw length it reports.
 */
int
reqpath_query(struct http_req *req, char *out, size_t outlen)
{
	const char *p = http_req_query(req, "path");

	if (p == NULL) {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "missing query parameter 'path'");
		return -1;
	}
	return reqpath_resolve(req, p, out, outlen);
}

/* A working directory checked on a worker. */
struct dirjob {
	char		 path[PATH_MAX];
	bool		 create;
	int		 rc;
	char		 why[PATH_MAX + 128];
	reqpath_dir_cb	*done;
	void		*arg;
};

/* See reqpath.h. */
int
reqpath_dir_check(const char *path, bool create, char *why, size_t whylen)
{
	struct stat st;
	bool created;
	int rc;

	if (create && (rc = fs_mkdirs(path, 0, (uid_t)-1, (gid_t)-1,
	    &created, why, whylen)) < 0)
		return rc;
	if (stat(path, &st) < 0) {
		rc = -errno;
		snprintf(why, whylen, "%s", strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "not a directory");
		return -ENOTDIR;
	}
	return 0;
}

static void
dir_run(void *arg)
{
	struct dirjob *j = arg;

	j->rc = reqpath_dir_check(j->path, j->create, j->why, sizeof(j->why));
}

static void
dir_done(struct http_req *req, void *arg)
{
	struct dirjob *j = arg;

	j->done(req, j->rc, j->why, j->arg);
	free(j);
}

/* See reqpath.h. */
void
reqpath_dir(struct http_req *req, const char *path, bool create,
    reqpath_dir_cb *done, void *arg)
{
	struct dirjob *j = xcalloc(1, sizeof(*j));

	snprintf(j->path, sizeof(j->path), "%s", path);
	j->create = create;
	j->done = done;
	j->arg = arg;
	http_req_work(req, 0, NULL, dir_run, dir_done, j);
}
