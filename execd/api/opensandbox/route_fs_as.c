/*
 * route_fs_as.c -- /v1/filesystem/{uid}/{gid}/...: the file routes, each
 * acting as another user.
 *
 * The routes under the prefix are the ordinary handlers, run by the loop
 * thread while it holds the user's credentials (cred.h: the uid, the gid
 * and the account's supplementary groups, on this thread only).  What a
 * handler does there and then -- resolving "~", opening a download --
 * is the user's; the work it hands to the worker pool, and the later
 * steps of an upload, take the same identity again (work.c,
 * route_upload.c).  So the kernel answers every access as it would the
 * user, and a file created belongs to uid:gid; no permission is checked
 * here.
 *
 * As upstream: uid and gid are decimal, 0 to 4294967294 (else 400); a
 * uid the user database does not know acts with no supplementary groups
 * and "/" as its home; a look-up that fails, or credentials the thread
 * may not take (execd not root, a capability that would stay), answer 503
 * FILESYSTEM_IDENTITY_UNAVAILABLE, never falling back to execd's own.
 * The look-up reads the user database on the loop thread, as /command's
 * uid does (the static build reads only the files).  Loop thread only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/cred.h"
#include "../../core/xmalloc.h"
#include "../../transport/http.h"
#include "route.h"

#define ID_MAX		4294967294UL	/* (uid_t)-1 means "unchanged" */

static int	 id_param(struct http_req *, const char *, unsigned long *);
static void	 as_user(struct http_req *, http_handler *);

/*
 * The {name} segment as an id (http_parse_uint()'s form); on failure
 * reply 400, in upstream's words for each case, and return -1.
 */
static int
id_param(struct http_req *req, const char *name, unsigned long *out)
{
	const char *s = http_req_param(req, name);
	uint64_t v;

	if (s != NULL && http_parse_uint(s, ID_MAX, &v) == 0) {
		*out = (unsigned long)v;
		return 0;
	}
	if (s == NULL || s[0] == '\0' || strspn(s, "0123456789") !=
	    strlen(s))
		http_reply_error(req, 400, HTTP_E_BODY, "invalid %s: identity "
		    "must be a decimal integer", name);
	else
		http_reply_error(req, 400, HTTP_E_BODY, "invalid %s: identity "
		    "must be between 0 and %lu", name, ID_MAX);
	return -1;
}

/* Run fn for req as the user its path names. */
static void
as_user(struct http_req *req, http_handler *fn)
{
	unsigned long uid, gid;
	struct cred *c;
	char err[256];
	int rc;

	if (id_param(req, "uid", &uid) < 0 || id_param(req, "gid", &gid) < 0)
		return;
	c = xmalloc(sizeof(*c));
	if ((rc = cred_lookup((uid_t)uid, (gid_t)gid, c, err,
	    sizeof(err))) < 0) {
		http_reply_error(req, 503, HTTP_E_IDENTITY, "%s", err);
		goto out;
	}
	if ((rc = cred_enter(c)) < 0) {
		http_reply_error(req, 503, HTTP_E_IDENTITY, "cannot act as uid "
		    "%lu gid %lu: %s", uid, gid, rc == -EPERM ? "execd may not "
		    "take these credentials (it needs CAP_SETUID and "
		    "CAP_SETGID)" : strerror(-rc));
		goto out;
	}
	fn(req);
	cred_leave(c);
out:
	free(c);
}

/* One route of the prefix per ordinary route (route.h). */
#define AS_USER(fn)							\
void									\
fn##_as(struct http_req *req)						\
{									\
	as_user(req, fn);						\
}

AS_USER(route_files_info)
AS_USER(route_files_delete)
AS_USER(route_files_perms)
AS_USER(route_files_move)
AS_USER(route_files_search)
AS_USER(route_files_replace)
AS_USER(route_files_upload)
AS_USER(route_files_download)
AS_USER(route_dirs_list)
AS_USER(route_dirs_make)
AS_USER(route_dirs_delete)
