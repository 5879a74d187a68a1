/*
 * t_fs_walk.c -- unit tests for fs_walk.c.
 *
 * Each test builds a small tree in a fresh temporary directory (in $TMPDIR,
 * else /tmp), walks it with a callback that records "rel:depth:type" for
 * every entry, and compares the whole record with the exact expected
 * string.  Covered: pre-order and byte order (upper case, dot files,
 * '-' and '.' after a common prefix), depth limits 0, 1, 2 and all, links
 * to directories reported and not entered, pruning, callback errors,
 * unreadable directories (skipped as root), entries and directories that
 * vanish mid-walk, a directory swapped for a link mid-walk, root "/" and
 * trailing slashes, a missing root and a file as root, paths longer than
 * PATH_MAX and trees deeper than FS_WALK_MAXDEPTH, a large directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../fs/fs_walk.h"
#include "../t.h"
#include "../t_tmp.h"

/* What the recording callback collects, and how it misbehaves. */
struct rec {
	char		 buf[65536];
	size_t		 len;
	int		 n;
	const char	*root;		/* path must be root + "/" + rel */
	const char	*prune;		/* rel to answer 1 for */
	const char	*stop;		/* rel to answer -EXDEV for */
	const char	*unlink_at;	/* at this rel, remove victim */
	const char	*victim;	/* relative to root */
	const char	*swap;		/* at this rel, make it a link */
	const char	*swap_to;
	int		 bad;		/* path/rel/st inconsistencies */
};

static int	 record(const char *, const char *, const struct stat *, int,
		    void *);
static int	 walk(const char *, int, struct rec *);
static void	 tree_basic(const char *);

/* The callback: append "rel:depth:type|" and check path, rel and st. */
static int
record(const char *path, const char *rel, const struct stat *st, int depth,
    void *arg)
{
	struct rec *r = arg;
	struct stat st2;
	char want[PATH_MAX];
	char t;
	int n;

	if (S_ISDIR(st->st_mode))
		t = 'd';
	else if (S_ISLNK(st->st_mode))
		t = 'l';
	else if (S_ISREG(st->st_mode))
		t = 'f';
	else
		t = 'o';
	n = snprintf(r->buf + r->len, sizeof(r->buf) - r->len, "%s:%d:%c|",
	    rel, depth, t);
	if (n > 0 && (size_t)n < sizeof(r->buf) - r->len)
		r->len += (size_t)n;
	r->n++;
	if (r->root != NULL) {
		snprintf(want, sizeof(want), "%s/%s", r->root, rel);
		if (strcmp(want, path) != 0)
			r->bad++;
	}
	if (rel[0] == '/' || strstr(path, "//") != NULL)
		r->bad++;
	if (lstat(path, &st2) < 0 || st2.st_ino != st->st_ino ||
	    st2.st_mode != st->st_mode || st2.st_size != st->st_size)
		r->bad++;
	if (r->unlink_at != NULL && strcmp(rel, r->unlink_at) == 0)
		t_rmtree(t_path(r->root, r->victim));
	if (r->swap != NULL && strcmp(rel, r->swap) == 0) {
		if (rename(path, t_path(r->root, "swapped-away")) < 0 ||
		    symlink(r->swap_to, path) < 0)
			r->bad += 100;
	}
	if (r->prune != NULL && strcmp(rel, r->prune) == 0)
		return 1;
	if (r->stop != NULL && strcmp(rel, r->stop) == 0)
		return -EXDEV;
	return 0;
}

/* fs_walk with the recorder; r->root must be set by the caller. */
static int
walk(const char *root, int maxdepth, struct rec *r)
{
	char err[PATH_MAX + 64] = "untouched";

	r->len = 0;
	r->buf[0] = '\0';
	r->n = 0;
	r->bad = 0;
	return fs_walk(root, maxdepth, record, r, err, sizeof(err));
}

/*
 * The tree most tests walk:
 *   .hidden  B  Z  _u  a/ (b/ (c)  z)  a-  a.txt  ln -> a
 */
static void
tree_basic(const char *d)
{
	t_mkfile(d, ".hidden", "h");
	t_mkfile(d, "B", "bb");
	t_mkfile(d, "Z", "");
	t_mkfile(d, "_u", "u");
	t_mkdir(d, "a");
	t_mkdir(d, "a/b");
	t_mkfile(d, "a/b/c", "ccc");
	t_mkfile(d, "a/z", "z");
	t_mkfile(d, "a-", "");
	t_mkfile(d, "a.txt", "");
	if (symlink("a", t_path(d, "ln")) < 0) {
		perror("symlink");
		exit(1);
	}
}

/* Pre-order, byte order, links reported and not entered. */
static void
test_order(void)
{
	static struct rec r;
	char *d = t_tmpdir();

	tree_basic(d);
	r = (struct rec){ .root = d };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), 0);
	T_EQ_STR(r.buf, ".hidden:1:f|B:1:f|Z:1:f|_u:1:f|a:1:d|a/b:2:d|"
	    "a/b/c:3:f|a/z:2:f|a-:1:f|a.txt:1:f|ln:1:l|");
	T_EQ_INT(r.bad, 0);
	t_tmpdir_free(d);
}

/* maxdepth 0, 1, 2, a large one and FS_WALK_ALL. */
static void
test_depth(void)
{
	static struct rec r;
	char *d = t_tmpdir();

	tree_basic(d);
	r = (struct rec){ .root = d };
	T_EQ_INT(walk(d, 0, &r), 0);
	T_EQ_STR(r.buf, "");
	T_EQ_INT(r.n, 0);
	T_EQ_INT(walk(d, 1, &r), 0);
	T_EQ_STR(r.buf, ".hidden:1:f|B:1:f|Z:1:f|_u:1:f|a:1:d|a-:1:f|"
	    "a.txt:1:f|ln:1:l|");
	T_EQ_INT(walk(d, 2, &r), 0);
	T_EQ_STR(r.buf, ".hidden:1:f|B:1:f|Z:1:f|_u:1:f|a:1:d|a/b:2:d|"
	    "a/z:2:f|a-:1:f|a.txt:1:f|ln:1:l|");
	T_EQ_INT(walk(d, 3, &r), 0);
	T_EQ_INT(r.n, 11);
	T_EQ_INT(walk(d, 1000, &r), 0);
	T_EQ_INT(r.n, 11);
	T_EQ_INT(r.bad, 0);
	/* Only FS_WALK_ALL among the negative values. */
	T_EQ_INT(walk(d, -2, &r), -EINVAL);
	T_EQ_INT(r.n, 0);
	/* maxdepth 0 does not even look at root. */
	T_EQ_INT(walk(t_path(d, "missing"), 0, &r), 0);
	t_tmpdir_free(d);
}

/* A link to a directory outside the tree is reported, never entered. */
static void
test_link_outside(void)
{
	static struct rec r;
	char *d = t_tmpdir(), *out = t_tmpdir();

	t_mkfile(out, "secret", "s");
	t_mkdir(d, "in");
	if (symlink(out, t_path(d, "in/out")) < 0 ||
	    symlink("nowhere", t_path(d, "dangling")) < 0) {
		perror("symlink");
		exit(1);
	}
	r = (struct rec){ .root = d };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), 0);
	T_EQ_STR(r.buf, "dangling:1:l|in:1:d|in/out:2:l|");
	T_EQ_INT(r.bad, 0);
	t_tmpdir_free(d);
	t_tmpdir_free(out);
}

/* Answering 1 skips a directory's contents; for a file it is ignored. */
static void
test_prune(void)
{
	static struct rec r;
	char *d = t_tmpdir();

	tree_basic(d);
	r = (struct rec){ .root = d, .prune = "a" };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), 0);
	T_EQ_STR(r.buf, ".hidden:1:f|B:1:f|Z:1:f|_u:1:f|a:1:d|a-:1:f|"
	    "a.txt:1:f|ln:1:l|");
	r = (struct rec){ .root = d, .prune = "a/b" };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), 0);
	T_EQ_STR(r.buf, ".hidden:1:f|B:1:f|Z:1:f|_u:1:f|a:1:d|a/b:2:d|"
	    "a/z:2:f|a-:1:f|a.txt:1:f|ln:1:l|");
	r = (struct rec){ .root = d, .prune = "B" };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), 0);
	T_EQ_INT(r.n, 11);
	t_tmpdir_free(d);
}

/* A negative answer stops the walk at once and is returned; err kept. */
static void
test_cb_error(void)
{
	static struct rec r;
	char *d = t_tmpdir(), err[64] = "untouched";

	tree_basic(d);
	r = (struct rec){ .root = d, .stop = "a/b" };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), -EXDEV);
	T_EQ_STR(r.buf, ".hidden:1:f|B:1:f|Z:1:f|_u:1:f|a:1:d|a/b:2:d|");
	r = (struct rec){ .root = d, .stop = "ln" };
	T_EQ_INT(fs_walk(d, FS_WALK_ALL, record, &r, err, sizeof(err)),
	    -EXDEV);
	T_EQ_STR(err, "untouched");
	T_EQ_INT(r.n, 11);
	t_tmpdir_free(d);
}

/* An unreadable directory fails the walk, naming it (not as root). */
static void
test_unreadable(void)
{
	static struct rec r;
	char *d = t_tmpdir(), err[PATH_MAX + 64] = "", want[PATH_MAX + 64];

	t_mkdir(d, "a");
	t_mkdir(d, "a/locked");
	t_mkfile(d, "a/locked/f", "");
	t_mkfile(d, "z", "");
	if (geteuid() == 0) {
		fprintf(stderr, "  (running as root: unreadable directory "
		    "not checked)\n");
		t_tmpdir_free(d);
		return;
	}
	T_EQ_INT(chmod(t_path(d, "a/locked"), 0), 0);
	r = (struct rec){ .root = d };
	T_EQ_INT(fs_walk(d, FS_WALK_ALL, record, &r, err, sizeof(err)),
	    -EACCES);
	T_EQ_STR(r.buf, "a:1:d|a/locked:2:d|");
	snprintf(want, sizeof(want), "%s/a/locked: %s", d, strerror(EACCES));
	T_EQ_STR(err, want);
	/* Not descended into: no error. */
	T_EQ_INT(fs_walk(d, 2, record, &r, err, sizeof(err)), 0);
	/* Pruned: no error either. */
	r = (struct rec){ .root = d, .prune = "a/locked" };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), 0);
	T_EQ_STR(r.buf, "a:1:d|a/locked:2:d|z:1:f|");
	t_tmpdir_free(d);
}

/* Entries and directories removed mid-walk are skipped silently. */
static void
test_vanish(void)
{
	static struct rec r;
	char *d = t_tmpdir();

	t_mkfile(d, "a1", "");
	t_mkfile(d, "a2", "");
	t_mkdir(d, "a3");
	t_mkfile(d, "a3/x", "");
	t_mkfile(d, "a4", "");
	/* A later sibling goes after readdir, before its lstat. */
	r = (struct rec){ .root = d, .unlink_at = "a1", .victim = "a2" };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), 0);
	T_EQ_STR(r.buf, "a1:1:f|a3:1:d|a3/x:2:f|a4:1:f|");
	/* A directory goes after it is reported, before it is opened. */
	r = (struct rec){ .root = d, .unlink_at = "a3", .victim = "a3" };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), 0);
	T_EQ_STR(r.buf, "a1:1:f|a3:1:d|a4:1:f|");
	T_EQ_INT(r.bad, 0);
	t_tmpdir_free(d);
}

/* A directory swapped for a link after being reported is not entered. */
static void
test_swap_for_link(void)
{
	static struct rec r;
	char *d = t_tmpdir(), *out = t_tmpdir();

	t_mkfile(out, "secret", "");
	t_mkdir(d, "s");
	t_mkfile(d, "s/inner", "");
	r = (struct rec){ .root = d, .swap = "s", .swap_to = out };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), 0);
	T_OK(strstr(r.buf, "secret") == NULL);
	T_OK(strstr(r.buf, "inner") == NULL);
	T_OK(strncmp(r.buf, "s:1:d|", 6) == 0);
	T_EQ_INT(r.bad, 0);
	t_tmpdir_free(d);
	t_tmpdir_free(out);
}

/* Root "/" gives "/name"; a trailing slash on root is dropped. */
static void
test_root_forms(void)
{
	static struct rec r;
	char *d = t_tmpdir(), root[PATH_MAX];

	/* "/" itself: every path is "/" + rel, never "//". */
	r = (struct rec){ .root = "" };
	T_EQ_INT(walk("/", 1, &r), 0);
	T_OK(r.n > 0);
	T_EQ_INT(r.bad, 0);
	T_EQ_INT(walk("///", 1, &r), 0);
	T_EQ_INT(r.bad, 0);
	tree_basic(d);
	snprintf(root, sizeof(root), "%s//", d);
	r = (struct rec){ .root = d };
	T_EQ_INT(walk(root, 2, &r), 0);
	T_EQ_STR(r.buf, ".hidden:1:f|B:1:f|Z:1:f|_u:1:f|a:1:d|a/b:2:d|"
	    "a/z:2:f|a-:1:f|a.txt:1:f|ln:1:l|");
	T_EQ_INT(r.bad, 0);
	/* A linked root is followed (callers lstat it first if they care). */
	r = (struct rec){ .root = t_path(d, "ln") };
	T_EQ_INT(walk(t_path(d, "ln"), FS_WALK_ALL, &r), 0);
	T_EQ_STR(r.buf, "b:1:d|b/c:2:f|z:1:f|");
	T_EQ_INT(r.bad, 0);
	t_tmpdir_free(d);
}

/* A missing root, a file as root, an empty root. */
static void
test_root_errors(void)
{
	static struct rec r;
	char *d = t_tmpdir(), err[PATH_MAX + 64], want[PATH_MAX + 64];

	r = (struct rec){ .root = d };
	T_EQ_INT(fs_walk(t_path(d, "none"), FS_WALK_ALL, record, &r, err,
	    sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s/none: %s", d, strerror(ENOENT));
	T_EQ_STR(err, want);
	t_mkfile(d, "f", "");
	T_EQ_INT(fs_walk(t_path(d, "f"), FS_WALK_ALL, record, &r, err,
	    sizeof(err)), -ENOTDIR);
	T_EQ_INT(fs_walk("", FS_WALK_ALL, record, &r, err, sizeof(err)),
	    -EINVAL);
	/* err may be empty. */
	T_EQ_INT(fs_walk(t_path(d, "none"), 1, record, &r, NULL, 0), -ENOENT);
	T_EQ_INT(r.n, 0);
	t_tmpdir_free(d);
}

/* Paths past PATH_MAX: -ENAMETOOLONG after reporting what fits. */
static void
test_too_long(void)
{
	static struct rec r;
	char *d = t_tmpdir(), name[201], err[PATH_MAX + 64] = "";
	int fd, nfd, levels = 0;
	size_t len = strlen(d);
	int rc;

	memset(name, 'n', 200);
	name[200] = '\0';
	fd = open(d, O_RDONLY | O_DIRECTORY);
	while (len < PATH_MAX + 300) {
		if (mkdirat(fd, name, 0755) < 0 ||
		    (nfd = openat(fd, name, O_RDONLY | O_DIRECTORY)) < 0) {
			perror("mkdirat");
			exit(1);
		}
		close(fd);
		fd = nfd;
		len += 201;
		levels++;
	}
	close(fd);
	r = (struct rec){ .root = NULL };
	rc = fs_walk(d, FS_WALK_ALL, record, &r, err, sizeof(err));
	T_EQ_INT(rc, -ENAMETOOLONG);
	T_OK(strstr(err, strerror(ENAMETOOLONG)) != NULL);
	/* Every level whose path fits was reported. */
	T_EQ_INT(r.n, (int)((PATH_MAX - 1 - strlen(d)) / 201));
	T_OK(r.n < levels);
	T_EQ_INT(r.bad, 0);
	t_tmpdir_free(d);
}

/* Deeper than FS_WALK_MAXDEPTH: -ELOOP; a depth limit avoids it. */
static void
test_too_deep(void)
{
	static struct rec r;
	char *d = t_tmpdir(), err[PATH_MAX + 64] = "";
	int fd, nfd;

	fd = open(d, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < FS_WALK_MAXDEPTH + 2; i++) {
		if (mkdirat(fd, "d", 0755) < 0 ||
		    (nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY)) < 0) {
			perror("mkdirat");
			exit(1);
		}
		close(fd);
		fd = nfd;
	}
	close(fd);
	r = (struct rec){ .root = d };
	T_EQ_INT(fs_walk(d, FS_WALK_ALL, record, &r, err, sizeof(err)),
	    -ELOOP);
	T_EQ_INT(r.n, FS_WALK_MAXDEPTH);
	T_OK(strstr(err, strerror(ELOOP)) != NULL);
	T_EQ_INT(walk(d, FS_WALK_MAXDEPTH, &r), 0);
	T_EQ_INT(r.n, FS_WALK_MAXDEPTH);
	T_EQ_INT(r.bad, 0);
	t_tmpdir_free(d);
}

/*
 * Hundreds of long names in one directory (more than one getdents buffer
 * and several times the first name block) come out sorted.
 */
static void
test_large_dir(void)
{
	static struct rec r;
	char *d = t_tmpdir(), name[64];
	const char *p, *q;
	int sorted = 1;

	for (int i = 0; i < 700; i++) {
		snprintf(name, sizeof(name), "%c%d-%s", "aZ._"[i % 4],
		    (i * 7919) % 701, "padding-padding-padding-padding");
		t_mkfile(d, name, "");
	}
	r = (struct rec){ .root = d };
	T_EQ_INT(walk(d, FS_WALK_ALL, &r), 0);
	T_EQ_INT(r.n, 700);
	/* Each record ends ":1:f|"; consecutive names must increase. */
	for (p = r.buf; (q = strchr(p, '|')) != NULL && q[1] != '\0';
	    p = q + 1) {
		const char *e1 = strchr(p, ':'), *e2 = strchr(q + 1, ':');
		size_t l1 = (size_t)(e1 - p), l2 = (size_t)(e2 - q - 1);
		int c = memcmp(p, q + 1, l1 < l2 ? l1 : l2);

		if (c > 0 || (c == 0 && l1 >= l2))
			sorted = 0;
	}
	T_OK(sorted);
	t_tmpdir_free(d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "walk_order", test_order },
		{ "walk_depth", test_depth },
		{ "walk_link_outside", test_link_outside },
		{ "walk_prune", test_prune },
		{ "walk_cb_error", test_cb_error },
		{ "walk_unreadable", test_unreadable },
		{ "walk_vanish", test_vanish },
		{ "walk_swap_for_link", test_swap_for_link },
		{ "walk_root_forms", test_root_forms },
		{ "walk_root_errors", test_root_errors },
		{ "walk_too_long", test_too_long },
		{ "walk_too_deep", test_too_deep },
		{ "walk_large_dir", test_large_dir },
	};

	umask(022);
	return T_RUN(cases);
}
