/*
 * reqpath.c -- a client's path in a request, resolved or refused (see
 * reqpath.h).  The resolving itself is fs_path's; this file says why a
 * path is refused, in the errors clients already know.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../fs/fs_path.h"
#include "../core/cred.h"
#include "../core/xmalloc.h"
#include "../transport/http.h"
#include "reqpath.h"

/*
 * Resolve a client's path into out; on failure reply (400, or 500 when
 * no home is known for "~") and return -1.
 */
int
reqpath_resolve(struct http_req *req, const char *in, char *out,
    size_t outlen)
{
	char *raw = xstrdup(in);
	int rc;

	/* The text form of a name that is not UTF-8 (fs_path.h). */
	fs_path_unescape(raw);
	/* "~" is the home of the user the request acts as (cred.h). */
	rc = fs_path_resolve(raw, strlen(raw), cred_home(), out, outlen);
	free(raw);
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
