/*
 * reqpath.h -- a client's path in a request: resolved under fs_path's
 * rules (absolute, or under ~), or the request answered with why not.
 *
 * Shared by every route that takes paths (files, transfers, working
 * directories), so that a route never calls another route file for it.
 * Loop thread only, but for reqpath_dir_check().
 */
#ifndef EXECD_REQPATH_H
#define EXECD_REQPATH_H

#include <stdbool.h>
#include <stddef.h>

struct http_req;

/*
 * Resolve the client's path in (in fs_path's text form) into out; 0, or
 * -1 after replying (400, or 500 when no home is known for "~").
 */
int	reqpath_resolve(struct http_req *, const char *in, char *out,
	    size_t outlen);
/*
 * The same for a front end that answers in its own way: 0, or -errno
 * (-ENAMETOOLONG, -ENOENT: no home known for "~", -EINVAL) with why.
 */
int	reqpath_resolve_why(const char *in, char *out, size_t outlen,
	    char *why, size_t whylen);
/* The path query parameter, resolved as reqpath_resolve(); 400 if none. */
int	reqpath_query(struct http_req *, char *out, size_t outlen);

/*
 * A working directory a client names (resolved already), checked where a
 * hung mount costs only this request: on a worker (http_req_work, a 504
 * after --fs-timeout).  With create it is made first, as mkdir -p does.
 * done(req, rc, why, arg) runs on the loop thread: rc 0, or -errno with
 * why a phrase (-ENOTDIR: not a directory); req NULL when the request was
 * answered meanwhile, only to free arg.
 */
typedef void reqpath_dir_cb(struct http_req *, int rc, const char *why,
	    void *arg);
void	reqpath_dir(struct http_req *, const char *path, bool create,
	    reqpath_dir_cb *done, void *arg);
/* The check itself, on any thread: 0 or -errno, why filled. */
int	reqpath_dir_check(const char *path, bool create, char *why,
	    size_t whylen);

#endif
