/*
 * route_fs_tree.c -- the file endpoints that read a whole tree: the
 * directory listing, the search by glob and the grep.
 *
 * A handler checks the query, resolves the path (reqpath.h) and hands
 * the operation (fileops.h) to a worker; the reply is the operation's
 * JSON, or its error with the operation's own message.  A grep's cost is
 * the client's choice: it runs as heavy work (never on every worker),
 * stops when its client leaves and after FILEOPS_GREP_BUDGET_MS.  Loop
 * thread only.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/xmalloc.h"
#include "../../domain/fileops.h"
#include "../../transport/http.h"
#include "../reqpath.h"
#include "route.h"

#define GREP_DEFAULT	1000	/* matches a grep returns unless told */
#define GREP_MAX	100000

enum tree_what { TREE_LIST, TREE_SEARCH, TREE_GREP };

/* One request's walk, run on a worker (http_req_work). */
struct treeop {
	atomic_int	 cancel;	/* set on the loop: the client left */
	enum tree_what	 what;
	char		 path[PATH_MAX];
	char		*pattern;	/* search, grep */
	int		 depth;		/* list */
	bool		 icase;		/* grep */
	size_t		 max;		/* grep */
	json_t		*out;		/* the answer, built on the worker */
	int		 rc;
	char		 err[FILEOPS_ERRLEN];
};

static void	 tree_start(struct http_req *, enum tree_what, const char *,
		    const char *, int, bool, size_t);
static void	 tree_run(void *);
static void	 tree_done(struct http_req *, void *);
static long long query_uint(const char *, long long);

/*
 * From a handler: the operation runs on a worker, then tree_done answers.
 * A grep is heavy work, and reads op->cancel if its client goes.
 */
static void
tree_start(struct http_req *req, enum tree_what what, const char *path,
    const char *pattern, int depth, bool icase, size_t max)
{
	struct treeop *op = xcalloc(1, sizeof(*op));

	op->what = what;
	snprintf(op->path, sizeof(op->path), "%s", path);
	op->pattern = pattern != NULL ? xstrdup(pattern) : NULL;
	op->depth = depth;
	op->icase = icase;
	op->max = max;
	http_req_work(req, what == TREE_GREP ? HTTP_WORK_HEAVY : 0,
	    &op->cancel, tree_run, tree_done, op);
}

/* On a worker: the operation itself. */
static void
tree_run(void *arg)
{
	struct treeop *op = arg;

	switch (op->what) {
	case TREE_LIST:
		op->rc = fileops_list(op->path, op->depth, &op->out, op->err,
		    sizeof(op->err));
		break;
	case TREE_SEARCH:
		op->rc = fileops_search(op->path, op->pattern, &op->out,
		    op->err, sizeof(op->err));
		break;
	case TREE_GREP:
		op->rc = fileops_grep(op->path, op->pattern, op->icase,
		    op->max, &op->cancel, &op->out, op->err, sizeof(op->err));
		break;
	}
}

/* Back on the loop thread: answer, if the request is still there. */
static void
tree_done(struct http_req *req, void *arg)
{
	struct treeop *op = arg;

	if (req == NULL) {
		/* The client left: nothing to say. */
	} else if (op->rc < 0) {
		http_reply_errno(req, op->rc, "%s", op->err);
	} else {
		http_reply_json(req, 200, op->out);
		op->out = NULL;
	}
	json_decref(op->out);
	free(op->pattern);
	free(op);
}

/* A query number (http_parse_uint's form) up to max; -1 if malformed. */
static long long
query_uint(const char *s, long long max)
{
	uint64_t v;

	if (s == NULL || http_parse_uint(s, (uint64_t)max, &v) < 0)
		return -1;
	return (long long)v;
}

/*
 * GET /directories/list?path=D[&depth=N]: [FileInfo] in pre-order; D must
 * be a directory, not a link to one.
 */
void
route_dirs_list(struct http_req *req)
{
	const char *ds = http_req_query(req, "depth");
	char path[PATH_MAX];
	long long depth = 1;

	if (reqpath_query(req, path, sizeof(path)) < 0)
		return;
	if (ds != NULL && (depth = query_uint(ds, INT_MAX)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid query "
		    "parameter 'depth': %s", ds);
		return;
	}
	tree_start(req, TREE_LIST, path, NULL, (int)depth, false, 0);
}

/*
 * GET /files/search?path=D[&pattern=G]: every non-directory under D whose
 * base name matches G (default "**"), symlinks never followed.
 */
void
route_files_search(struct http_req *req)
{
	const char *pattern = http_req_query(req, "pattern");
	char path[PATH_MAX];

	if (reqpath_query(req, path, sizeof(path)) < 0)
		return;
	if (pattern == NULL || pattern[0] == '\0')
		pattern = "**";
	tree_start(req, TREE_SEARCH, path, pattern, 0, false, 0);
}

/*
 * GET /files/grep?path=P&pattern=RE[&ignoreCase=true][&maxMatches=N]:
 * {"matches":[{"path","line","text"}],"truncated":bool}.
 */
void
route_files_grep(struct http_req *req)
{
	const char *pat = http_req_query(req, "pattern"),
	    *ic = http_req_query(req, "ignoreCase"),
	    *ms = http_req_query(req, "maxMatches");
	char path[PATH_MAX], err[FILEOPS_ERRLEN];
	long long max = GREP_DEFAULT;
	bool icase;

	if (reqpath_query(req, path, sizeof(path)) < 0)
		return;
	if (pat == NULL || pat[0] == '\0') {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "missing query parameter 'pattern'");
		return;
	}
	if (ms != NULL && ((max = query_uint(ms, GREP_MAX)) < 1)) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid query "
		    "parameter 'maxMatches': %s (1 to %d)", ms, GREP_MAX);
		return;
	}
	icase = ic != NULL && strcmp(ic, "true") == 0;
	/* Refused at once, not after the greps queued before it. */
	if (fileops_grep_check(pat, icase, err, sizeof(err)) < 0) {
		http_reply_errno(req, -EINVAL, "%s", err);
		return;
	}
	tree_start(req, TREE_GREP, path, pat, 0, icase, (size_t)max);
}
