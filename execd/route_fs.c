/*
 * route_fs.c -- file and directory endpoints that answer in JSON: info,
 * delete, permissions, move, search, replace, list, mkdir, rm -rf, grep,
 * and the inotify watch stream.
 *
 * Handlers validate the whole request first, resolve paths with fs_path,
 * call fs/ and map the result; the filesystem logic itself lives in fs/.
 * Every call that touches the filesystem for a list of entries (info,
 * delete, mkdir, permissions, move, rm -rf, replace) or for a tree (list,
 * search, grep) runs on a worker thread (work.h) while the request waits
 * deferred, so neither a big tree nor a long body stalls the loop; a body
 * names at most MAX_ENTRIES entries.
 * Uploads, downloads and archives, whose bodies are streamed, are in
 * route_xfer.c.  Loop thread only.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "../fs/fs_atomic.h"
#include "../fs/fs_glob.h"
#include "../fs/fs_grep.h"
#include "../fs/fs_info.h"
#include "../fs/fs_ops.h"
#include "../fs/fs_path.h"
#include "../fs/fs_regex.h"
#include "../fs/fs_tree.h"
#include "../fs/fs_walk.h"
#include "../fs/fs_watch.h"
#include "body.h"
#include "evstream.h"
#include "http.h"
#include "log.h"
#include "loop.h"
#include "reqpath.h"
#include "route.h"
#include "work.h"
#include "xmalloc.h"

#define MAX_PATHS	1024	/* repeated path= keys one request may name */
#define MAX_ENTRIES	10000	/* entries of one JSON body */
#define GREP_DEFAULT	1000	/* matches a grep returns unless told */
#define GREP_MAX	100000
#define GREP_BUDGET_MS	30000	/* wall time one grep request may take */
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

struct collect {
	json_t		*list;
	const char	*pattern;	/* search: tested on base names */
	int		 bad;		/* search: the pattern is malformed */
};

/*
 * A request whose work may take long, run on a worker (http_req_work):
 * each route fills one and names its own fn, run on the worker, and its
 * reply, run on the loop while the request is there.  Items routes
 * (info, unlink, mkdir, perms, move) share items_run and items_reply and
 * name only what one item does and how its failure is answered.
 */
struct fsop;
typedef void	fsop_reply_cb(struct http_req *, struct fsop *);
typedef int	fsop_item_fn(struct fsop *, const json_t *, const char *key,
		    const char *path);
typedef void	fsop_fail_cb(struct http_req *, struct fsop *,
		    const char *key, const char *path);

struct fsop {
	atomic_int	 cancel;	/* set on the loop: stop early */
	fsop_reply_cb	*reply;
	fsop_item_fn	*item;		/* items: one item, on the worker */
	fsop_fail_cb	*fail;		/* items: its error answer */
	bool		 owners;	/* items: look owners up first */
	char		 path[PATH_MAX];	/* list, search, grep, watch */
	char		*pattern;	/* search, grep */
	int		 depth;		/* list */
	bool		 file;		/* search: path is not a directory */
	unsigned	 flags;		/* grep */
	size_t		 max;		/* grep */
	bool		 truncated;	/* grep */
	bool		 verbose;	/* replace */
	bool		 recursive;	/* watch */
	struct fs_watch	*watch;		/* watch: made on the worker */
	json_t		*items;		/* what to do, one array per item */
	json_t		*out;		/* the answer, built on the worker */
	size_t		 failed;	/* index of the item that failed */
	bool		 bad;		/* it failed as a bad request (400) */
	int		 rc;
	char		 err[ERRLEN];
};

struct watcher {
	struct loop		*loop;
	struct evstream		*s;
	struct fs_watch		*w;
	int			 fd;
	bool			 polled;	/* fd is on the loop */
};

static int	 walk_list(const char *, const char *, const struct stat *,
		    int, void *);
static int	 walk_search(const char *, const char *, const struct stat *,
		    int, void *);
static int	 grep_one(const char *, unsigned long, const char *, size_t,
		    void *);
static struct fsop *fsop_new(void);
static struct fsop *fsop_items(fsop_item_fn *, fsop_fail_cb *);
static void	 fsop_free(struct fsop *);
static void	 fsop_start(struct http_req *, struct fsop *, http_work_fn *,
		    fsop_reply_cb *, unsigned);
static void	 fsop_done(struct http_req *, void *);
static const char *fsop_why(const struct fsop *);
static const char *fsop_str(const struct fsop *, size_t);
static void	 reply_out(struct http_req *, struct fsop *);
static void	 items_run(void *);
static void	 items_reply(struct http_req *, struct fsop *);
static int	 lookup_owners(struct fsop *);
static fsop_item_fn info_one, unlink_one, mkdir_one, perms_one, move_one;
static fsop_fail_cb info_fail, unlink_fail, mkdir_fail, perms_fail,
		    move_fail;
static void	 rmtree_run(void *);
static void	 rmtree_reply(struct http_req *, struct fsop *);
static void	 replace_run(void *);
static void	 replace_reply(struct http_req *, struct fsop *);
static void	 list_run(void *);
static void	 list_reply(struct http_req *, struct fsop *);
static void	 search_run(void *);
static void	 search_reply(struct http_req *, struct fsop *);
static void	 grep_run(void *);
static void	 grep_reply(struct http_req *, struct fsop *);
static void	 watch_run(void *);
static void	 watch_reply(struct http_req *, struct fsop *);
static void	 query_items(struct http_req *, struct fsop *);
static int	 too_many(struct http_req *, size_t);
static struct fsop *perm_op(struct http_req *, struct fsop *, bool);
static void	 watch_open(struct http_req *, struct fs_watch *);
static void	 watch_ready(struct loop *, int, void *, int, void *);
static int	 watch_event(const struct fs_watch_event *, void *);
static void	 watch_push(struct watcher *, json_t *);
static void	 watch_gone(void *);

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

/*
 * A string holding bytes that may not be UTF-8: for the items a worker
 * reads back, never for a reply.
 */
static json_t *
raw_str(const char *s)
{
	return json_string_nocheck(s);
}

/*
 * Set obj's "path" to the text form of the file name raw (fs_path.h) and,
 * when that differs from raw, "path_base64" to the name's bytes.
 */
static void
set_path(json_t *obj, const char *raw)
{
	size_t n = strlen(raw);
	char *t, *b64;

	if (fs_path_is_plain(raw)) {
		json_object_set_new(obj, "path", json_string(raw));
		return;
	}
	if ((t = fs_path_escape(raw)) == NULL)
		fatal("fs_path_escape");
	json_object_set_new(obj, "path", json_string(t));
	free(t);
	b64 = xmalloc(4 * ((n + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)raw,
	    (int)n);
	json_object_set_new(obj, "path_base64", json_string(b64));
	free(b64);
}

/*
 * obj[key] = v (v is consumed), key being a client's path: raw bytes or
 * text, it goes out in the text form of the name it stands for.
 */
static void
set_text_key(json_t *obj, const char *key, json_t *v)
{
	char *raw = xstrdup(key), *t;

	fs_path_unescape(raw);
	if (fs_path_is_plain(raw)) {
		json_object_set_new(obj, raw, v);
		free(raw);
		return;
	}
	if ((t = fs_path_escape(raw)) == NULL)
		fatal("fs_path_escape");
	json_object_set_new(obj, t, v);
	free(t);
	free(raw);
}

/*
 * A FileInfo object (upstream's fields; keys go out sorted).  A name that
 * is not UTF-8 goes out in its text form, with path_base64 (set_path).
 */
json_t *
route_fs_info_json(const char *path, const struct fs_info *fi)
{
	char mt[48], ct[48], user[64], group[64];
	json_t *v;

	fs_time_format(&fi->mtime, mt, sizeof(mt));
	fs_time_format(&fi->ctime, ct, sizeof(ct));
	v = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:i}",
	    "type", fs_type_name(fi->type),
	    "size", (json_int_t)fi->size, "modified_at", mt,
	    "created_at", ct,
	    "owner", fs_user_name(fi->uid, user, sizeof(user)),
	    "group", fs_group_name(fi->gid, group, sizeof(group)),
	    "mode", (int)fs_mode_decimal(fi->mode));
	set_path(v, path);
	return v;
}

static struct fsop *
fsop_new(void)
{
	return xcalloc(1, sizeof(struct fsop));
}

/* An items operation: what one item does and how its failure answers. */
static struct fsop *
fsop_items(fsop_item_fn *item, fsop_fail_cb *fail)
{
	struct fsop *op = fsop_new();

	op->item = item;
	op->fail = fail;
	op->items = json_array();
	return op;
}

static void
fsop_free(struct fsop *op)
{
	free(op->pattern);
	fs_watch_free(op->watch);
	json_decref(op->items);
	json_decref(op->out);
	free(op);
}

/*
 * From a handler: fn runs on a worker, then reply answers.  A grep's
 * cost is the client's choice (HTTP_WORK_HEAVY: never all workers); a
 * request that goes meanwhile sets op->cancel, which a grep reads.
 */
static void
fsop_start(struct http_req *req, struct fsop *op, http_work_fn *fn,
    fsop_reply_cb *reply, unsigned flags)
{
	op->reply = reply;
	http_req_work(req, flags, &op->cancel, fn, fsop_done, op);
}

/* Back on the loop thread: answer, if the request is still there. */
static void
fsop_done(struct http_req *req, void *arg)
{
	struct fsop *op = arg;

	if (req != NULL)
		op->reply(req, op);
	fsop_free(op);
}

/* Why the operation failed: the worker's message, else the errno's. */
static const char *
fsop_why(const struct fsop *op)
{
	return op->err[0] != '\0' ? op->err : strerror(-op->rc);
}

/* 200 with the answer the worker built (handed over). */
static void
reply_out(struct http_req *req, struct fsop *op)
{
	http_reply_json(req, 200, op->out);
	op->out = NULL;
}

/* Field k of the item that failed (0: the client's key, 1: its path). */
static const char *
fsop_str(const struct fsop *op, size_t k)
{
	return json_string_value(json_array_get(json_array_get(op->items,
	    op->failed), k));
}

/*
 * On a worker: look up every owner and group named (NSS may block), the
 * whole body before any change; each item's [3] and [4] become ids.  0,
 * or -EINVAL with op->bad, op->failed and a message.
 */
static int
lookup_owners(struct fsop *op)
{
	uid_t uid;
	gid_t gid;
	json_t *it;
	size_t i;

	json_array_foreach(op->items, i, it) {
		if (fs_owner_lookup(json_string_value(json_array_get(it, 3)),
		    json_string_value(json_array_get(it, 4)), &uid, &gid,
		    op->err, sizeof(op->err)) < 0) {
			op->bad = true;
			op->failed = i;
			return op->rc = -EINVAL;
		}
		json_array_set_new(it, 3, json_integer((json_int_t)uid));
		json_array_set_new(it, 4, json_integer((json_int_t)gid));
	}
	return 0;
}

/*
 * On a worker: op->item on each item, in order, until one fails
 * (op->failed).  Items: info and unlink [key, path]; mkdir and perms
 * [key, path, mode, owner, group]; move [src key, dest key, src, dest].
 */
static void
items_run(void *arg)
{
	struct fsop *op = arg;
	json_t *it;
	size_t i;

	if (op->owners && lookup_owners(op) < 0)
		return;
	json_array_foreach(op->items, i, it) {
		op->err[0] = '\0';
		if ((op->rc = op->item(op, it, json_string_value(
		    json_array_get(it, 0)), json_string_value(
		    json_array_get(it, 1)))) < 0) {
			op->failed = i;
			return;
		}
	}
}

/* The answer of an items operation: its output, or empty. */
static void
items_reply(struct http_req *req, struct fsop *op)
{
	if (op->rc < 0 && op->bad) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s",
		    op->err);
	} else if (op->rc < 0) {
		op->fail(req, op, fsop_str(op, 0), fsop_str(op, 1));
	} else if (op->out != NULL) {
		reply_out(req, op);
	} else {
		http_reply_empty(req);
	}
}

static int
info_one(struct fsop *op, const json_t *it, const char *key,
    const char *path)
{
	struct fs_info fi;
	int rc;

	if ((rc = fs_info_lstat(path, &fi)) == 0)
		set_text_key(op->out, key, route_fs_info_json(path, &fi));
	return rc;
}

static void
info_fail(struct http_req *req, struct fsop *op, const char *key,
    const char *path)
{
	http_reply_errno(req, op->rc, "file not found. file not found: %s: "
	    "lstat %s: %s", key, path, strerror(-op->rc));
}

static int
unlink_one(struct fsop *op, const json_t *it, const char *key,
    const char *path)
{
	return fs_file_remove(path);
}

static void
unlink_fail(struct http_req *req, struct fsop *op, const char *key,
    const char *path)
{
	if (op->rc == -EISDIR)
		http_reply_error(req, 400, HTTP_E_BODY, "error removing file "
		    "%s. path is a directory: %s (use DELETE /directories)",
		    key, path);
	else
		http_reply_errno(req, op->rc, "error removing file %s. %s",
		    key, strerror(-op->rc));
}

static int
mkdir_one(struct fsop *op, const json_t *it, const char *key,
    const char *path)
{
	bool created;

	return fs_mkdirs(path, (mode_t)json_integer_value(json_array_get(it,
	    2)), (uid_t)json_integer_value(json_array_get(it, 3)),
	    (gid_t)json_integer_value(json_array_get(it, 4)), &created,
	    op->err, sizeof(op->err));
}

static void
mkdir_fail(struct http_req *req, struct fsop *op, const char *key,
    const char *path)
{
	http_reply_errno(req, op->rc, "error accessing file: %s",
	    fsop_why(op));
}

static int
perms_one(struct fsop *op, const json_t *it, const char *key,
    const char *path)
{
	return fs_perms_set(path, (mode_t)json_integer_value(
	    json_array_get(it, 2)), (uid_t)json_integer_value(
	    json_array_get(it, 3)), (gid_t)json_integer_value(
	    json_array_get(it, 4)), op->err, sizeof(op->err));
}

static void
perms_fail(struct http_req *req, struct fsop *op, const char *key,
    const char *path)
{
	http_reply_errno(req, op->rc, "error changing permissions for %s. %s",
	    key, fsop_why(op));
}

static int
move_one(struct fsop *op, const json_t *it, const char *key,
    const char *path)
{
	return fs_move(json_string_value(json_array_get(it, 2)),
	    json_string_value(json_array_get(it, 3)), op->err,
	    sizeof(op->err));
}

static void
move_fail(struct http_req *req, struct fsop *op, const char *key,
    const char *path)
{
	if (op->rc == -ENOENT)
		http_reply_errno(req, op->rc, "file not found. source path "
		    "not found: %s", key);
	else if (op->rc == -EEXIST)
		http_reply_errno(req, op->rc, "destination path already "
		    "exists: %s", path);
	else
		http_reply_errno(req, op->rc, "error accessing file: failed "
		    "to rename file: %s", fsop_why(op));
}

/* On a worker: rm -rf each item's path, until one fails. */
static void
rmtree_run(void *arg)
{
	struct fsop *op = arg;
	json_t *it;
	size_t i;

	json_array_foreach(op->items, i, it) {
		if ((op->rc = fs_tree_remove(json_string_value(
		    json_array_get(it, 1)), op->err, sizeof(op->err))) < 0) {
			op->failed = i;
			return;
		}
	}
}

static void
rmtree_reply(struct http_req *req, struct fsop *op)
{
	if (op->rc < 0)
		http_reply_errno(req, op->rc == -EBUSY ? -EPERM : op->rc,
		    "error removing directory %s. %s", fsop_str(op, 0),
		    fsop_why(op));
	else
		http_reply_empty(req);
}

/* On a worker: rewrite each [key, path, old, new] item's file. */
static void
replace_run(void *arg)
{
	struct fsop *op = arg;
	unsigned long long count;
	json_t *it;
	size_t i;

	op->out = json_object();
	json_array_foreach(op->items, i, it) {
		op->rc = fs_replace(json_string_value(json_array_get(it, 1)),
		    json_string_value(json_array_get(it, 2)),
		    json_string_length(json_array_get(it, 2)),
		    json_string_value(json_array_get(it, 3)),
		    json_string_length(json_array_get(it, 3)), &count,
		    op->err, sizeof(op->err));
		if (op->rc < 0) {
			op->failed = i;
			return;
		}
		json_object_set_new(op->out, json_string_value(
		    json_array_get(it, 0)), json_pack("{s:I}",
		    "replacedCount", (json_int_t)count));
	}
}

static void
replace_reply(struct http_req *req, struct fsop *op)
{
	const char *path = fsop_str(op, 1);

	if (op->rc == -ENOENT) {
		http_reply_errno(req, op->rc, "file not found. stat %s: no "
		    "such file or directory", path);
	} else if (op->rc == -EISDIR) {
		http_reply_error(req, 400, HTTP_E_BODY, "path is a directory: "
		    "%s", path);
	} else if (op->rc < 0) {
		http_reply_errno(req, op->rc, "error replacing in %s. %s",
		    fsop_str(op, 0), fsop_why(op));
	} else if (op->verbose) {
		reply_out(req, op);
	} else {
		http_reply_empty(req);
	}
}

/* On a worker: the tree under op->path, to op->depth. */
static void
list_run(void *arg)
{
	struct fsop *op = arg;
	struct collect c = { 0 };

	c.list = op->out = json_array();
	if (op->depth > 0)
		op->rc = fs_walk(op->path, op->depth, walk_list, &c, op->err,
		    sizeof(op->err));
}

static void
list_reply(struct http_req *req, struct fsop *op)
{
	if (op->rc < 0) {
		http_reply_errno(req, op->rc, "error listing directory %s. %s",
		    op->path, fsop_why(op));
		return;
	}
	reply_out(req, op);
}

/* On a worker: every name under op->path matching op->pattern. */
static void
search_run(void *arg)
{
	struct fsop *op = arg;
	struct collect c = { 0 };
	struct stat st;

	c.list = op->out = json_array();
	c.pattern = op->pattern;
	if (!op->file)
		op->rc = fs_walk(op->path, FS_WALK_ALL, walk_search, &c,
		    op->err, sizeof(op->err));
	else if (lstat(op->path, &st) == 0)	/* tested itself */
		walk_search(op->path, "", &st, 0, &c);
}

static void
search_reply(struct http_req *req, struct fsop *op)
{
	if (op->rc < 0) {
		http_reply_errno(req, op->rc, "error searching files. error "
		    "accessing path %s", fsop_why(op));
		return;
	}
	reply_out(req, op);
}

/* On a worker: the grep, within its budget, stopped by op->cancel. */
static void
grep_run(void *arg)
{
	struct fsop *op = arg;

	op->out = json_array();
	op->rc = fs_grep(op->path, op->pattern, op->flags, op->max,
	    &(struct fs_grep_limits){ &op->cancel, GREP_BUDGET_MS },
	    grep_one, op->out, &op->truncated, op->err, sizeof(op->err));
}

static void
grep_reply(struct http_req *req, struct fsop *op)
{
	if (op->rc == -EINVAL) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid pattern %s: "
		    "%s", op->pattern, fsop_why(op));
	} else if (op->rc < 0) {
		http_reply_errno(req, op->rc, "error searching %s: %s",
		    op->path, fsop_why(op));
	} else {
		http_reply_json(req, 200, json_pack("{s:o, s:b}", "matches",
		    op->out, "truncated", op->truncated));
		op->out = NULL;
	}
}

/* On a worker: a recursive watch scans the tree, seconds on a big one. */
static void
watch_run(void *arg)
{
	struct fsop *op = arg;

	op->watch = fs_watch_new(op->path, &(struct fs_watch_opts){
	    .recursive = op->recursive }, op->err, sizeof(op->err));
	if (op->watch == NULL)
		op->rc = -errno;
}

static void
watch_reply(struct http_req *req, struct fsop *op)
{
	if (op->rc < 0) {
		http_reply_errno(req, op->rc, "cannot watch %s: %s", op->path,
		    fsop_why(op));
		return;
	}
	watch_open(req, op->watch);
	op->watch = NULL;
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

/* GET /files/info?path=A&path=B: {"A": FileInfo, "B": FileInfo}. */
void
route_files_info(struct http_req *req)
{
	struct fsop *op = fsop_items(info_one, info_fail);

	op->out = json_object();
	query_items(req, op);
}

/* DELETE /files?path=...: unlink each file; missing ones are fine. */
void
route_files_delete(struct http_req *req)
{
	query_items(req, fsop_items(unlink_one, unlink_fail));
}

/*
 * Info or unlink: resolve every path= value, then hand the list to a
 * worker.  A bad path is answered at once and nothing is done.
 */
static void
query_items(struct http_req *req, struct fsop *op)
{
	const char *vals[MAX_PATHS];
	char path[PATH_MAX];
	ssize_t n;

	if ((n = query_paths(req, vals)) < 0) {
		fsop_free(op);
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (reqpath_resolve(req, vals[i], path, sizeof(path)) < 0) {
			fsop_free(op);
			return;
		}
		json_array_append_new(op->items, json_pack("[o, o]",
		    raw_str(vals[i]), raw_str(path)));
	}
	fsop_start(req, op, items_run, items_reply, 0);
}

/*
 * DELETE /directories?path=...: rm -rf each, on a worker; missing ones are
 * fine.  The first failure stops the request.
 */
void
route_dirs_delete(struct http_req *req)
{
	const char *vals[MAX_PATHS];
	char path[PATH_MAX];
	struct fsop *op;
	ssize_t n;

	if ((n = query_paths(req, vals)) < 0)
		return;
	op = fsop_new();
	op->items = json_array();
	for (ssize_t i = 0; i < n; i++) {
		if (vals[i][0] == '\0')		/* upstream: a no-op */
			continue;
		if (reqpath_resolve(req, vals[i], path, sizeof(path)) < 0) {
			fsop_free(op);
			return;
		}
		json_array_append_new(op->items, json_pack("[o, o]",
		    raw_str(vals[i]), raw_str(path)));
	}
	fsop_start(req, op, rmtree_run, rmtree_reply, 0);
}

/*
 * Check a {"<path>": {"mode","owner","group"}} entry; on failure reply 400
 * and return -1.  Fills the parsed mode; owner and group are looked up
 * on the worker (lookup_owners).
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
 * skips null entries) checked whole, paths too, into an operation for a
 * worker; on a mistake reply 400 and return NULL.
 */
static struct fsop *
perm_op(struct http_req *req, struct fsop *op, bool skip_null)
{
	json_t *body = http_req_json(req), *v;
	const char *key;
	char path[PATH_MAX];
	mode_t mode;

	if (need_object(req, body, "{\"mode\",\"owner\",\"group\"}") < 0) {
		fsop_free(op);
		return NULL;
	}
	op->owners = true;
	json_object_foreach(body, key, v) {
		if (perm_entry(req, key, v, &mode) < 0 ||
		    reqpath_resolve(req, key, path, sizeof(path)) < 0) {
			fsop_free(op);
			return NULL;
		}
		if (skip_null && json_is_null(v))
			continue;
		json_array_append_new(op->items, json_pack("[s, o, I, s?, s?]",
		    key, raw_str(path), (json_int_t)mode, body_str(v, "owner", NULL),
		    body_str(v, "group", NULL)));
	}
	return op;
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
	struct fsop *op;

	if ((op = perm_op(req, fsop_items(mkdir_one, mkdir_fail), false)) !=
	    NULL)
		fsop_start(req, op, items_run, items_reply, 0);
}

/*
 * POST /files/permissions {"<path>":{"mode":644,"owner":"u","group":"g"}}:
 * chmod then chown each.  The whole body is checked first.
 */
void
route_files_perms(struct http_req *req)
{
	struct fsop *op;

	if ((op = perm_op(req, fsop_items(perms_one, perms_fail), true)) !=
	    NULL)
		fsop_start(req, op, items_run, items_reply, 0);
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
	op = fsop_items(move_one, move_fail);
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
		json_array_append_new(op->items, json_pack("[s, s, o, o]",
		    body_str(v, "src", ""), body_str(v, "dest", ""),
		    raw_str(src), raw_str(dst)));
	}
	fsop_start(req, op, items_run, items_reply, 0);
}

/*
 * POST /files/replace[?verbose=true] {"<path>":{"old":"a","new":"b"}}: the
 * whole body is checked, then the files are rewritten on a worker.
 */
void
route_files_replace(struct http_req *req)
{
	json_t *body = http_req_json(req), *v;
	const char *key, *verbose = http_req_query(req, "verbose");
	char path[PATH_MAX], err[ERRLEN];
	struct fsop *op;

	if (need_object(req, body, "{\"old\",\"new\"}") < 0)
		return;
	op = fsop_new();
	op->items = json_array();
	op->verbose = verbose != NULL && strcmp(verbose, "true") == 0;
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
		json_array_append_new(op->items, json_pack("[s, o, s%, s]", key,
		    raw_str(path), json_string_value(json_object_get(v, "old")),
		    json_string_length(json_object_get(v, "old")),
		    body_str(v, "new", "")));
	}
	fsop_start(req, op, replace_run, replace_reply, 0);
}

static int
walk_list(const char *path, const char *rel, const struct stat *st,
    int depth, void *arg)
{
	struct collect *c = arg;
	struct fs_info fi;

	fs_info_from_stat(st, &fi);
	json_array_append_new(c->list, route_fs_info_json(path, &fi));
	return 0;
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

/* GET /directories/list?path=D[&depth=N]: [FileInfo] in pre-order. */
void
route_dirs_list(struct http_req *req)
{
	const char *ds = http_req_query(req, "depth");
	char path[PATH_MAX];
	struct fsop *op;
	struct stat st;
	long long depth = 1;

	if (reqpath_query(req, path, sizeof(path)) < 0)
		return;
	if (ds != NULL && (depth = query_uint(ds, INT_MAX)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid query "
		    "parameter 'depth': %s", ds);
		return;
	}
	if (lstat(path, &st) < 0) {
		http_reply_errno(req, -errno, "file not found. lstat %s: %s",
		    path, strerror(errno));
		return;
	}
	if (S_ISLNK(st.st_mode)) {
		http_reply_error(req, 400, HTTP_E_BODY, "path is a symbolic "
		    "link, refusing to traverse: %s", path);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		http_reply_error(req, 400, HTTP_E_BODY, "path is not a "
		    "directory: %s", path);
		return;
	}
	op = fsop_new();
	snprintf(op->path, sizeof(op->path), "%s", path);
	op->depth = (int)depth;
	fsop_start(req, op, list_run, list_reply, 0);
}

static int
walk_search(const char *path, const char *rel, const struct stat *st,
    int depth, void *arg)
{
	struct collect *c = arg;
	struct fs_info fi;
	const char *base = strrchr(path, '/');
	int m;

	if (S_ISDIR(st->st_mode))
		return 0;
	m = fs_glob_match(c->pattern, base != NULL ? base + 1 : path);
	if (m < 0) {
		c->bad = 1;
		return m;
	}
	if (m == 1) {
		fs_info_from_stat(st, &fi);
		json_array_append_new(c->list, route_fs_info_json(path, &fi));
	}
	return 0;
}

/*
 * GET /files/search?path=D[&pattern=G]: every non-directory under D whose
 * base name matches G (default "**"), symlinks never followed; the walk
 * runs on a worker.
 */
void
route_files_search(struct http_req *req)
{
	const char *pattern = http_req_query(req, "pattern");
	char path[PATH_MAX];
	struct fsop *op;
	struct stat st;

	if (reqpath_query(req, path, sizeof(path)) < 0)
		return;
	if (pattern == NULL || pattern[0] == '\0')
		pattern = "**";
	/* Checked up front, whatever the tree holds. */
	if (fs_glob_match(pattern, "") < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "error searching "
		    "files. invalid pattern %s: syntax error in pattern",
		    pattern);
		return;
	}
	if (stat(path, &st) < 0) {
		http_reply_errno(req, -errno, "file not found. stat %s: %s",
		    path, strerror(errno));
		return;
	}
	op = fsop_new();
	snprintf(op->path, sizeof(op->path), "%s", path);
	op->pattern = xstrdup(pattern);
	op->file = !S_ISDIR(st.st_mode);
	fsop_start(req, op, search_run, search_reply, 0);
}

static int
grep_one(const char *path, unsigned long line, const char *text, size_t len,
    void *arg)
{
	json_t *list = arg, *m;
	char *t;

	m = json_pack("{s:I}", "line", (json_int_t)line);
	set_path(m, path);
	/* A line is text up to its first NUL; escaped like names if not UTF-8. */
	if (fs_path_is_plain(text)) {
		json_object_set_new(m, "text", json_string(text));
	} else {
		if ((t = fs_path_escape(text)) == NULL)
			fatal("fs_path_escape");
		json_object_set_new(m, "text", json_string(t));
		free(t);
	}
	json_array_append_new(list, m);
	return 0;
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
	char path[PATH_MAX], err[256];
	long long max = GREP_DEFAULT;
	struct fs_regex *re;
	struct fsop *op;
	unsigned flags;

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
	flags = ic != NULL && strcmp(ic, "true") == 0 ? FS_GREP_ICASE : 0;
	/* Refused at once, not after the greps queued before it. */
	if (fs_regex_compile(pat, flags & FS_GREP_ICASE ? FS_REGEX_ICASE : 0,
	    &re, err, sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid pattern %s: "
		    "%s", pat, err);
		return;
	}
	fs_regex_free(re);
	op = fsop_new();
	snprintf(op->path, sizeof(op->path), "%s", path);
	op->pattern = xstrdup(pat);
	op->flags = flags;
	op->max = (size_t)max;
	fsop_start(req, op, grep_run, grep_reply, HTTP_WORK_HEAVY);
}

/*
 * GET /files/watch?path=P[&recursive=true]: a stream of filesystem events,
 * {"type":"create","path":"/p/x","dir":false,"timestamp":...}, until the
 * client leaves or the path goes away.
 */
void
route_files_watch(struct http_req *req)
{
	const char *rec = http_req_query(req, "recursive");
	char path[PATH_MAX];
	struct fsop *op;

	if (reqpath_query(req, path, sizeof(path)) < 0)
		return;
	op = fsop_new();
	snprintf(op->path, sizeof(op->path), "%s", path);
	op->recursive = rec != NULL && strcmp(rec, "true") == 0;
	fsop_start(req, op, watch_run, watch_reply, 0);
}

/* The watch is in place: stream its events (fw is consumed). */
static void
watch_open(struct http_req *req, struct fs_watch *fw)
{
	struct watcher *w;
	struct evstream_opts o = { .shape = EVSTREAM_WATCH,
	    .gone = watch_gone };

	w = xcalloc(1, sizeof(*w));
	w->loop = http_req_loop(req);
	w->w = fw;
	w->fd = fs_watch_fd(fw);
	o.arg = w;
	/*
	 * The stream layer's pings also wake a quiet (suspended) stream,
	 * so the inotify descriptor goes soon after its client does.
	 */
	if ((w->s = evstream_open(req, &o)) == NULL) {
		fs_watch_free(fw);
		free(w);
		return;
	}
	if (evstream_ended(w->s))	/* opened during shutdown */
		return;
	loop_add_fd(w->loop, w->fd, LOOP_READ, watch_ready, w);
	w->polled = true;
}

static void
watch_ready(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct watcher *w = arg;
	int rc;

	if ((rc = fs_watch_read(w->w, watch_event, w)) < 0 &&
	    !evstream_ended(w->s)) {
		watch_push(w, json_pack("{s:s, s:s}", "type", "error",
		    "error", strerror(-rc)));
	}
	if (evstream_ended(w->s) && w->polled) {
		loop_del(l, w->fd, NULL);
		w->polled = false;
	}
}

static int
watch_event(const struct fs_watch_event *ev, void *arg)
{
	struct watcher *w = arg;
	json_t *v;

	if (evstream_ended(w->s))
		return -EPIPE;
	v = json_pack("{s:s, s:b}", "type", fs_watch_kind_name(ev->kind),
	    "dir", ev->dir);
	set_path(v, ev->path);
	if (ev->cookie != 0)
		json_object_set_new(v, "cookie", json_integer(ev->cookie));
	watch_push(w, v);
	if (ev->kind == FS_W_GONE && !evstream_ended(w->s))
		evstream_end(w->s, NULL, 0);
	return 0;
}

/* Queue one event, stamped (v is consumed); see evstream_push. */
static void
watch_push(struct watcher *w, json_t *v)
{
	json_object_set_new(v, "timestamp", json_integer((json_int_t)
	    loop_wall_ms()));
	(void)evstream_json(w->s, v);
}

static void
watch_gone(void *arg)
{
	struct watcher *w = arg;

	if (w->polled)
		loop_del(w->loop, w->fd, NULL);
	fs_watch_free(w->w);
	free(w);
}
