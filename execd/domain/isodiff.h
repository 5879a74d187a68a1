/*
 * isodiff.h -- an isolated session's changes: what its overlays' upper
 * directories hold against the real (lower) trees, listed (diff) and
 * applied to the real trees (commit), with the changes made outside the
 * session since it started reported as conflicts and never overwritten
 * (see docs/isolation.md).
 *
 * At create, the lower tree of each overlay path is recorded (a
 * manifest: inode, size, mode, mtime and ctime of every entry, walked by
 * ckpt_walk).  A commit applies an entry only when the real entry is
 * still what the manifest says (or still absent), then records what it
 * wrote in the manifest, so that the next commit of the same path is not
 * a conflict with itself.  The upper is left as it is after a commit
 * (the session keeps its view); an entry committed and not touched since
 * (same upper inode, mtime and ctime) is no longer listed.
 *
 * isodiff_take, isodiff_diff and isodiff_commit walk trees and copy
 * files: workers only (work.h).  One of them at a time per isodiff (a
 * mutex).  isodiff_hold and isodiff_drop: loop thread.
 */
#ifndef EXECD_ISODIFF_H
#define EXECD_ISODIFF_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define ISODIFF_MAX		16	/* overlays (isoreq's ISOREQ_MAX) */
#define ISODIFF_TEXT_MAX	(64 * 1024)	/* contents shown by ?path= */

struct isodiff;

/*
 * Record the lower trees: paths[i] is overlay i's path, NULL for an
 * entry that is no overlay.  The isodiff (one reference), or NULL with
 * a message in err.
 */
struct isodiff	*isodiff_take(size_t n, const char *const *paths, char *err,
		    size_t errlen);
void		 isodiff_hold(struct isodiff *);
void		 isodiff_drop(struct isodiff *);

/* Where to read the uppers from: uppers[i], overlay i's, in execd's view. */
struct isodiff_req {
	const char	*uppers[ISODIFF_MAX];
	const char	*path;		/* diff: one path (?path=), or NULL */
	const char	*const *paths;	/* commit: these and under, or all */
	size_t		 npaths;
	int		 status;	/* out: 200, 400, 404, 500 */
	const char	*code;		/* out, when status is not 200 */
	char		 err[1024];	/* out, the same */
};

/*
 * The changes (new reference): {"overlays": [{"path", "changes": [...]}]}
 * or, with path, that path's change with contents.  NULL with status,
 * code and err set.
 */
json_t	*isodiff_diff(struct isodiff *, struct isodiff_req *);
/*
 * Apply the changes (of paths, when given); {"applied": [...],
 * "conflicts": [{"path", "reason"}], "failed": [{"path", "error"}],
 * "stripped": [{"path", "mode", "committed_mode"}]} (entries applied
 * without their setuid and setgid bits), or NULL with status, code and
 * err set (bad paths, an upper unreadable).
 */
json_t	*isodiff_commit(struct isodiff *, struct isodiff_req *);

/* The overlay index whose path p is or is under (the deepest), or -1. */
int	isodiff_overlay_of(const struct isodiff *, const char *p);

#endif
