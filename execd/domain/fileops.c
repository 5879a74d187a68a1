/*
 * fileops.c -- the file operations of the execution API, with no HTTP:
 * what one item of a request does, how a tree is listed, searched and
 * grepped, and the words a client is told when it fails.
 *
 * Built on fs/ (fs_info, fs_tree, fs_ops, fs_walk, fs_glob, fs_grep,
 * fs_atomic), which does the filesystem work; this file adds the JSON
 * the API answers and the messages of its errors, so that every front
 * end (route_fs*.c, an MCP tool) answers alike.  It is not for parsing
 * requests, resolving a client's paths or choosing statuses: the front
 * ends do that.  Every call may block: worker threads only, no loop
 * state (see fileops.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "../../fs/fs_atomic.h"
#include "../../fs/fs_glob.h"
#include "../../fs/fs_grep.h"
#include "../../fs/fs_info.h"
#include "../../fs/fs_ops.h"
#include "../../fs/fs_path.h"
#include "../../fs/fs_regex.h"
#include "../../fs/fs_tree.h"
#include "../../fs/fs_walk.h"
#include "../core/log.h"
#include "../core/xmalloc.h"
#include "fileops.h"

#define REGEX_ERRLEN	256	/* a pattern's compile error */

/* An item of a batch, its strings owned; uid and gid found at run. */
struct bitem {
	char		*key, *path, *dstkey, *dst;
	mode_t		 mode;
	char		*owner, *group;
	uid_t		 uid;
	gid_t		 gid;
	char		*old, *new_;
	size_t		 oldlen, newlen;
};

struct fileops_batch {
	enum fileops_kind	 kind;
	struct bitem		*items;
	size_t			 n, cap;
};

/* What a tree walk gathers (list, search). */
struct collect {
	json_t		*list;
	const char	*pattern;	/* search: tested on base names */
};

static void	 set_text_key(json_t *, const char *, json_t *);
static const char *why(const char *, int);
static char	*dup_or_null(const char *);
static char	*memdup0(const char *, size_t);
static int	 batch_owners(struct fileops_batch *, char *, size_t);
static int	 batch_one(struct fileops_batch *, struct bitem *, json_t *,
		    char *, size_t);
static int	 walk_list(const char *, const char *, const struct stat *,
		    int, void *);
static int	 walk_search(const char *, const char *, const struct stat *,
		    int, void *);
static int	 grep_one(const char *, unsigned long, const char *, size_t,
		    void *);

/* See fileops.h. */
void
fileops_json_path(json_t *obj, const char *raw)
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

/* Why an fs/ call failed: its message, else the errno's. */
static const char *
why(const char *msg, int rc)
{
	return msg[0] != '\0' ? msg : strerror(-rc);
}

/* See fileops.h. */
json_t *
fileops_info_json(const char *path, const struct fs_info *fi)
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
	fileops_json_path(v, path);
	return v;
}

/* See fileops.h. */
int
fileops_info(const char *key, const char *path, json_t **out, char *err,
    size_t errlen)
{
	struct fs_info fi;
	int rc;

	if ((rc = fs_info_lstat(path, &fi)) < 0) {
		snprintf(err, errlen, "file not found. file not found: %s: "
		    "lstat %s: %s", key, path, strerror(-rc));
		return rc;
	}
	*out = fileops_info_json(path, &fi);
	return 0;
}

/* See fileops.h. */
int
fileops_unlink(const char *key, const char *path, char *err, size_t errlen)
{
	int rc;

	if ((rc = fs_file_remove(path)) == -EISDIR)
		snprintf(err, errlen, "error removing file %s. path is a "
		    "directory: %s (use DELETE /directories)", key, path);
	else if (rc < 0)
		snprintf(err, errlen, "error removing file %s. %s", key,
		    strerror(-rc));
	return rc;
}

/* See fileops.h. */
int
fileops_rmtree(const char *key, const char *path, char *err, size_t errlen)
{
	char msg[FILEOPS_ERRLEN] = "";
	int rc;

	if ((rc = fs_tree_remove(path, msg, sizeof(msg))) < 0)
		snprintf(err, errlen, "error removing directory %s. %s", key,
		    why(msg, rc));
	return rc;
}

/* See fileops.h. */
int
fileops_owners(const char *owner, const char *group, uid_t *uid, gid_t *gid,
    char *err, size_t errlen)
{
	char msg[FILEOPS_ERRLEN] = "";
	uid_t u;
	gid_t g;

	if (fs_owner_lookup(owner, group, &u, &g, msg, sizeof(msg)) < 0) {
		snprintf(err, errlen, "invalid request, %s", msg);
		return -EINVAL;
	}
	*uid = u;
	*gid = g;
	return 0;
}

/* See fileops.h. */
int
fileops_mkdir(const char *key, const char *path, mode_t mode, uid_t uid,
    gid_t gid, char *err, size_t errlen)
{
	char msg[FILEOPS_ERRLEN] = "";
	bool created;
	int rc;

	if ((rc = fs_mkdirs(path, mode, uid, gid, &created, msg,
	    sizeof(msg))) < 0)
		snprintf(err, errlen, "error accessing file: %s", why(msg, rc));
	return rc;
}

/* See fileops.h. */
int
fileops_chmod(const char *key, const char *path, mode_t mode, uid_t uid,
    gid_t gid, char *err, size_t errlen)
{
	char msg[FILEOPS_ERRLEN] = "";
	int rc;

	if ((rc = fs_perms_set(path, mode, uid, gid, msg, sizeof(msg))) < 0)
		snprintf(err, errlen, "error changing permissions for %s. %s",
		    key, why(msg, rc));
	return rc;
}

/* See fileops.h. */
int
fileops_move(const char *srckey, const char *dstkey, const char *src,
    const char *dst, char *err, size_t errlen)
{
	char msg[FILEOPS_ERRLEN] = "";
	int rc;

	if ((rc = fs_move(src, dst, msg, sizeof(msg))) == -ENOENT)
		snprintf(err, errlen, "file not found. source path not found: "
		    "%s", srckey);
	else if (rc == -EEXIST)
		snprintf(err, errlen, "destination path already exists: %s",
		    dstkey);
	else if (rc < 0)
		snprintf(err, errlen, "error accessing file: failed to rename "
		    "file: %s", why(msg, rc));
	return rc;
}

/* See fileops.h. */
int
fileops_replace(const char *key, const char *path, const char *old,
    size_t oldlen, const char *new_, size_t newlen, unsigned long long *count,
    char *err, size_t errlen)
{
	char msg[FILEOPS_ERRLEN] = "";
	unsigned long long n;
	int rc;

	rc = fs_replace(path, old, oldlen, new_, newlen, &n, msg, sizeof(msg));
	if (rc == -ENOENT)
		snprintf(err, errlen, "file not found. stat %s: no such file "
		    "or directory", path);
	else if (rc == -EISDIR)
		snprintf(err, errlen, "path is a directory: %s", path);
	else if (rc < 0)
		snprintf(err, errlen, "error replacing in %s. %s", key,
		    why(msg, rc));
	else
		*count = n;
	return rc;
}

static int
walk_list(const char *path, const char *rel, const struct stat *st,
    int depth, void *arg)
{
	struct collect *c = arg;
	struct fs_info fi;

	fs_info_from_stat(st, &fi);
	json_array_append_new(c->list, fileops_info_json(path, &fi));
	return 0;
}

/* See fileops.h. */
int
fileops_list(const char *dir, int depth, json_t **out, char *err,
    size_t errlen)
{
	char msg[FILEOPS_ERRLEN] = "";
	struct collect c = { 0 };
	struct stat st;
	int rc = 0;

	if (lstat(dir, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "file not found. lstat %s: %s", dir,
		    strerror(-rc));
		return rc;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(err, errlen, "path is a symbolic link, refusing to "
		    "traverse: %s", dir);
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "path is not a directory: %s", dir);
		return -EINVAL;
	}
	c.list = json_array();
	if (depth > 0)
		rc = fs_walk(dir, depth, walk_list, &c, msg, sizeof(msg));
	if (rc < 0) {
		snprintf(err, errlen, "error listing directory %s. %s", dir,
		    why(msg, rc));
		json_decref(c.list);
		return rc;
	}
	*out = c.list;
	return 0;
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
	if ((m = fs_glob_match(c->pattern, base != NULL ? base + 1 :
	    path)) < 0)
		return m;
	if (m == 1) {
		fs_info_from_stat(st, &fi);
		json_array_append_new(c->list, fileops_info_json(path, &fi));
	}
	return 0;
}

/* See fileops.h. */
int
fileops_search(const char *path, const char *pattern, json_t **out,
    char *err, size_t errlen)
{
	char msg[FILEOPS_ERRLEN] = "";
	struct collect c = { 0 };
	struct stat st;
	int rc = 0;

	/* Checked up front, whatever the tree holds. */
	if (fs_glob_match(pattern, "") < 0) {
		snprintf(err, errlen, "error searching files. invalid pattern "
		    "%s: syntax error in pattern", pattern);
		return -EINVAL;
	}
	if (stat(path, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "file not found. stat %s: %s", path,
		    strerror(-rc));
		return rc;
	}
	c.list = json_array();
	c.pattern = pattern;
	if (S_ISDIR(st.st_mode))
		rc = fs_walk(path, FS_WALK_ALL, walk_search, &c, msg,
		    sizeof(msg));
	else if (lstat(path, &st) == 0)		/* tested itself */
		(void)walk_search(path, "", &st, 0, &c);
	if (rc < 0) {
		snprintf(err, errlen, "error searching files. error accessing "
		    "path %s", why(msg, rc));
		json_decref(c.list);
		return rc;
	}
	*out = c.list;
	return 0;
}

/* See fileops.h. */
int
fileops_grep_check(const char *pattern, bool icase, char *err,
    size_t errlen)
{
	char msg[REGEX_ERRLEN] = "";
	struct fs_regex *re;

	if (fs_regex_compile(pattern, icase ? FS_REGEX_ICASE : 0, &re, msg,
	    sizeof(msg)) < 0) {
		snprintf(err, errlen, "invalid pattern %s: %s", pattern, msg);
		return -EINVAL;
	}
	fs_regex_free(re);
	return 0;
}

static int
grep_one(const char *path, unsigned long line, const char *text, size_t len,
    void *arg)
{
	json_t *list = arg, *m;
	char *t;

	m = json_pack("{s:I}", "line", (json_int_t)line);
	fileops_json_path(m, path);
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

/* See fileops.h. */
int
fileops_grep(const char *path, const char *pattern, bool icase, size_t max,
    const atomic_int *cancel, json_t **out, char *err, size_t errlen)
{
	char msg[FILEOPS_ERRLEN] = "";
	json_t *list = json_array();
	bool truncated = false;
	int rc;

	rc = fs_grep(path, pattern, icase ? FS_GREP_ICASE : 0, max,
	    &(struct fs_grep_limits){ cancel, FILEOPS_GREP_BUDGET_MS },
	    grep_one, list, &truncated, msg, sizeof(msg));
	if (rc < 0) {
		if (rc == -EINVAL)
			snprintf(err, errlen, "invalid pattern %s: %s", pattern,
			    why(msg, rc));
		else
			snprintf(err, errlen, "error searching %s: %s", path,
			    why(msg, rc));
		json_decref(list);
		return rc;
	}
	*out = json_pack("{s:o, s:b}", "matches", list, "truncated",
	    truncated);
	return 0;
}

/* A copy of s, or NULL for NULL. */
static char *
dup_or_null(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

/* A copy of the n bytes at p (NULL: none), NUL added. */
static char *
memdup0(const char *p, size_t n)
{
	char *s = xmalloc(n + 1);

	if (n > 0)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* See fileops.h. */
struct fileops_batch *
fileops_batch_new(enum fileops_kind kind)
{
	struct fileops_batch *b = xcalloc(1, sizeof(*b));

	b->kind = kind;
	return b;
}

/* See fileops.h. */
void
fileops_batch_add(struct fileops_batch *b, const struct fileops_item *it)
{
	struct bitem *bi;

	if (b->n == b->cap) {
		b->cap = b->cap != 0 ? b->cap * 2 : 8;
		b->items = xreallocarray(b->items, b->cap, sizeof(*b->items));
	}
	bi = &b->items[b->n++];
	memset(bi, 0, sizeof(*bi));
	bi->key = xstrdup(it->key);
	bi->path = xstrdup(it->path);
	bi->dstkey = dup_or_null(it->dstkey);
	bi->dst = dup_or_null(it->dst);
	bi->mode = it->mode;
	bi->owner = dup_or_null(it->owner);
	bi->group = dup_or_null(it->group);
	bi->uid = (uid_t)-1;
	bi->gid = (gid_t)-1;
	bi->old = memdup0(it->old, it->oldlen);
	bi->oldlen = it->oldlen;
	bi->new_ = memdup0(it->new_, it->newlen);
	bi->newlen = it->newlen;
}

/* See fileops.h. */
size_t
fileops_batch_count(const struct fileops_batch *b)
{
	return b->n;
}

/*
 * Every owner and group the batch names, to ids, before any change (NSS
 * may block, and a mistake anywhere must leave everything untouched).
 */
static int
batch_owners(struct fileops_batch *b, char *err, size_t errlen)
{
	int rc;

	for (size_t i = 0; i < b->n; i++) {
		if ((rc = fileops_owners(b->items[i].owner, b->items[i].group,
		    &b->items[i].uid, &b->items[i].gid, err, errlen)) < 0)
			return rc;
	}
	return 0;
}

/* One item of the batch; an answer goes into res. */
static int
batch_one(struct fileops_batch *b, struct bitem *it, json_t *res, char *err,
    size_t errlen)
{
	unsigned long long count;
	json_t *v;
	int rc;

	switch (b->kind) {
	case FILEOPS_INFO:
		if ((rc = fileops_info(it->key, it->path, &v, err,
		    errlen)) == 0)
			set_text_key(res, it->key, v);
		return rc;
	case FILEOPS_UNLINK:
		return fileops_unlink(it->key, it->path, err, errlen);
	case FILEOPS_RMTREE:
		return fileops_rmtree(it->key, it->path, err, errlen);
	case FILEOPS_MKDIR:
		return fileops_mkdir(it->key, it->path, it->mode, it->uid,
		    it->gid, err, errlen);
	case FILEOPS_CHMOD:
		return fileops_chmod(it->key, it->path, it->mode, it->uid,
		    it->gid, err, errlen);
	case FILEOPS_MOVE:
		return fileops_move(it->key, it->dstkey, it->path, it->dst,
		    err, errlen);
	case FILEOPS_REPLACE:
		if ((rc = fileops_replace(it->key, it->path, it->old,
		    it->oldlen, it->new_, it->newlen, &count, err,
		    errlen)) == 0)
			json_object_set_new(res, it->key, json_pack("{s:I}",
			    "replacedCount", (json_int_t)count));
		return rc;
	}
	fatalx("fileops: unknown kind %d", (int)b->kind);
}

/* See fileops.h. */
int
fileops_batch_run(struct fileops_batch *b, json_t **out, char *err,
    size_t errlen)
{
	json_t *res = NULL;
	int rc;

	if ((b->kind == FILEOPS_MKDIR || b->kind == FILEOPS_CHMOD) &&
	    (rc = batch_owners(b, err, errlen)) < 0)
		return rc;
	if (b->kind == FILEOPS_INFO || b->kind == FILEOPS_REPLACE)
		res = json_object();
	for (size_t i = 0; i < b->n; i++) {
		if ((rc = batch_one(b, &b->items[i], res, err, errlen)) < 0) {
			json_decref(res);
			return rc;
		}
	}
	*out = res;
	return 0;
}

/* See fileops.h. */
void
fileops_batch_free(struct fileops_batch *b)
{
	struct bitem *it;

	if (b == NULL)
		return;
	for (size_t i = 0; i < b->n; i++) {
		it = &b->items[i];
		free(it->key);
		free(it->path);
		free(it->dstkey);
		free(it->dst);
		free(it->owner);
		free(it->group);
		free(it->old);
		free(it->new_);
	}
	free(b->items);
	free(b);
}
