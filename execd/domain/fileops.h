/*
 * fileops.h -- the file operations of the execution API, with no HTTP:
 * FileInfo, delete, rm -rf, mkdir -p, permissions, move, replace, list,
 * search and grep.
 *
 * Each operation answers exactly what the file routes answer today: a
 * result (JSON, or nothing) or a -errno with the whole message a client
 * is told, so that any front end (the HTTP routes, an MCP tool) calls the
 * same function and says the same thing.  The caller maps the errno to
 * its own status (http.c: ENOENT 404, EINVAL 400, ...).  Paths are
 * already resolved (fs_path.h, reqpath.h); "key" is the path as the
 * client wrote it, which messages and answers name.  A message fits in
 * FILEOPS_ERRLEN bytes.
 *
 * These calls block (they walk trees, rewrite files, look owners up in
 * NSS): run them on a worker thread (work.h, http_req_work()), never on
 * the loop.  They use no loop state and share nothing between calls:
 * any thread, several at once.  JSON follows kp_msg.h's rule: a returned
 * json_t * is the caller's.  Out-params are written only on success.
 */
#ifndef EXECD_FILEOPS_H
#define EXECD_FILEOPS_H

#include <jansson.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define FILEOPS_ERRLEN		(PATH_MAX + 256)	/* a message */
#define FILEOPS_GREP_BUDGET_MS	30000	/* wall time one grep may take */

struct fs_info;

/*
 * A FileInfo object (upstream's fields; keys go out sorted).  A name that
 * is not UTF-8 goes out in its text form, with path_base64.
 */
json_t	*fileops_info_json(const char *path, const struct fs_info *);
/*
 * Set obj's "path" to the text form of the file name raw (fs_path.h) and,
 * when that differs from raw, "path_base64" to the name's bytes.
 */
void	 fileops_json_path(json_t *obj, const char *raw);

/* The FileInfo of path (lstat: a link is itself) into *out; 0 or -errno. */
int	fileops_info(const char *key, const char *path, json_t **out,
	    char *err, size_t errlen);
/*
 * Unlink one non-directory (a link itself); missing is success.  A
 * directory is -EISDIR (a client's mistake: HTTP answers 400).
 */
int	fileops_unlink(const char *key, const char *path, char *err,
	    size_t errlen);
/*
 * rm -rf; missing is success.  "/" is -EBUSY (HTTP answers 403), a path
 * ending in "." or ".." -EINVAL.  Stops at the first failure.
 */
int	fileops_rmtree(const char *key, const char *path, char *err,
	    size_t errlen);
/*
 * Owner and group names (or numeric ids; NULL or "": -1, left alone) to
 * ids, for fileops_mkdir() and fileops_chmod(); NSS may block.  Unknown:
 * -EINVAL ("invalid request, ...").
 */
int	fileops_owners(const char *owner, const char *group, uid_t *uid,
	    gid_t *gid, char *err, size_t errlen);
/*
 * mkdir -p; mode (unless 0) and uid/gid (unless -1) apply only to the
 * last directory, and only if this call created it.  A component that
 * exists and is not a directory is -EEXIST.
 */
int	fileops_mkdir(const char *key, const char *path, mode_t mode,
	    uid_t uid, gid_t gid, char *err, size_t errlen);
/*
 * chmod unless mode is 0, then chown unless uid and gid are -1; links
 * followed.  Nothing to do is 0, even on a missing file.
 */
int	fileops_chmod(const char *key, const char *path, mode_t mode,
	    uid_t uid, gid_t gid, char *err, size_t errlen);
/*
 * Rename src to dst, making dst's parent; src missing -ENOENT, dst
 * existing -EEXIST (never overwritten), across filesystems -EXDEV.
 */
int	fileops_move(const char *srckey, const char *dstkey, const char *src,
	    const char *dst, char *err, size_t errlen);
/*
 * Replace every occurrence of old (oldlen >= 1) with new in the file at
 * path, atomically; *count gets the number of replacements.  Missing
 * -ENOENT, a directory -EISDIR (HTTP answers 400).
 */
int	fileops_replace(const char *key, const char *path, const char *old,
	    size_t oldlen, const char *new_, size_t newlen,
	    unsigned long long *count, char *err, size_t errlen);

/*
 * The tree under dir to depth levels (0: nothing), as an array of
 * FileInfo in pre-order, names sorted, links never followed.  dir
 * missing is -ENOENT; dir a link or not a directory -EINVAL.
 */
int	fileops_list(const char *dir, int depth, json_t **out, char *err,
	    size_t errlen);
/*
 * Every non-directory under path (or path itself, if it is not a
 * directory) whose base name matches the glob pattern (fs_glob.h), as an
 * array of FileInfo; links never followed.  A malformed pattern is
 * -EINVAL (checked first), path missing -ENOENT.
 */
int	fileops_search(const char *path, const char *pattern, json_t **out,
	    char *err, size_t errlen);
/* Whether pattern is a regular expression fs_grep takes: 0 or -EINVAL. */
int	fileops_grep_check(const char *pattern, bool icase, char *err,
	    size_t errlen);
/*
 * Lines matching the extended regular expression pattern in path (a file)
 * or every regular file under it: {"matches":[{"path","line","text"}],
 * "truncated":bool}, at most max matches (0: no limit).  Stops, failing,
 * when *cancel (NULL: never) becomes non-zero (-ECANCELED) or after
 * FILEOPS_GREP_BUDGET_MS (-ETIMEDOUT).  A refused pattern is -EINVAL.
 */
int	fileops_grep(const char *path, const char *pattern, bool icase,
	    size_t max, const atomic_int *cancel, json_t **out, char *err,
	    size_t errlen);

/*
 * A batch: one operation on a list of items, done in order until one
 * fails, as one request asks for them.  Owners and groups named are
 * looked up for the whole batch before anything is changed.
 */
enum fileops_kind {
	FILEOPS_INFO,		/* key, path; answers {key: FileInfo} */
	FILEOPS_UNLINK,		/* key, path */
	FILEOPS_RMTREE,		/* key, path */
	FILEOPS_MKDIR,		/* key, path, mode, owner, group */
	FILEOPS_CHMOD,		/* key, path, mode, owner, group */
	FILEOPS_MOVE,		/* key, path (src); dstkey, dst */
	FILEOPS_REPLACE		/* key, path, old, new; answers
				   {key: {"replacedCount": n}} */
};

/* One item, as fileops_batch_add() takes it (strings borrowed). */
struct fileops_item {
	const char	*key;		/* the path as the client wrote it */
	const char	*path;		/* resolved */
	const char	*dstkey;	/* move: the destination, written */
	const char	*dst;		/* ... and resolved */
	mode_t		 mode;		/* mkdir, chmod: 0 leaves it */
	const char	*owner;		/* mkdir, chmod: NULL leaves it */
	const char	*group;
	const char	*old;		/* replace: oldlen bytes */
	size_t		 oldlen;
	const char	*new_;		/* replace: newlen bytes */
	size_t		 newlen;
};

struct fileops_batch;

/* An empty batch of one kind of operation. */
struct fileops_batch *fileops_batch_new(enum fileops_kind);
/* Append a copy of *it (its strings are copied too). */
void	fileops_batch_add(struct fileops_batch *, const struct fileops_item *);
size_t	fileops_batch_count(const struct fileops_batch *);
/*
 * Do every item in order until one fails.  0 with *out set (info and
 * replace: an object keyed by the items' keys; NULL for the others), or
 * that item's -errno and message; items done before it stay done.  A
 * batch runs once.
 */
int	fileops_batch_run(struct fileops_batch *, json_t **out, char *err,
	    size_t errlen);
void	fileops_batch_free(struct fileops_batch *);	/* NULL ok */

#endif
