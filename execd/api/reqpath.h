/*
 * reqpath.h -- a client's path in a request: resolved under fs_path's
 * rules (absolute, or under ~), or the request answered with why not.
 *
 * Shared by every route that takes paths (files, transfers), so that a
 * route never calls another route file for it.  Loop thread only.
 */
#ifndef EXECD_REQPATH_H
#define EXECD_REQPATH_H

#include <stddef.h>

struct http_req;

/*
 * Resolve the client's path in (in fs_path's text form) into out; 0, or
 * -1 after replying (400, or 500 when no home is known for "~").
 */
int	reqpath_resolve(struct http_req *, const char *in, char *out,
	    size_t outlen);
/* The path query parameter, resolved as reqpath_resolve(); 400 if none. */
int	reqpath_query(struct http_req *, char *out, size_t outlen);

#endif
