/*
 * fs_walk.c -- the pre-order, sorted, link-safe tree walker.
 *
 * Each directory is read whole into one block of names, sorted, and only
 * then reported, so the callback sees byte order whatever the filesystem
 * returns.  The directory's descriptor stays open while its children are
 * visited: every child is lstat'ed with fstatat() and opened with
 * openat(O_NOFOLLOW | O_DIRECTORY) relative to it, never by its full path,
 * so renaming or swapping a directory for a symbolic link while the walk
 * runs cannot redirect it.  The full path is kept in one PATH_MAX buffer
 * for the callback and the messages.  Not for deleting trees: fs_tree.c
 * does that with its own loop.
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

#include "fs_walk.h"

struct walk {
	fs_walk_cb	*cb;
	void		*arg;
	int		 maxdepth;
	char		*err;
	size_t		 errlen;
	size_t		 reloff;	/* where rel starts in path */
	char		 path[PATH_MAX];
};

/* The names of one directory: one block of NUL-terminated names. */
struct names {
	char		*buf;
	size_t		 len;
	size_t		 cap;
	char		**v;
	size_t		 n;
};

static int	walk_dir(struct walk *, int, size_t, int);
static int	names_load(struct walk *, int, struct names *);
static int	names_read(DIR *, struct names *);
static int	names_add(struct names *, const char *);
static int	names_sort(struct names *);
static int	name_cmp(const void *, const void *);
static void	names_free(struct names *);
static int	fail(struct walk *, int);

/* Message "<path>: <strerror>" for the path in w, and -e. */
static int
fail(struct walk *w, int e)
{
	if (w->errlen > 0)
		snprintf(w->err, w->errlen, "%s: %s", w->path, strerror(e));
	return -e;
}

/* Append one name to the block. 0 or -ENOMEM. */
static int
names_add(struct names *nm, const char *name)
{
	size_t l = strlen(name) + 1;
	size_t cap;
	char *p;

	if (nm->len + l > nm->cap) {
		cap = nm->cap == 0 ? 4096 : nm->cap;
		while (cap < nm->len + l)
			cap *= 2;
		if ((p = realloc(nm->buf, cap)) == NULL)
			return -ENOMEM;
		nm->buf = p;
		nm->cap = cap;
	}
	memcpy(nm->buf + nm->len, name, l);
	nm->len += l;
	nm->n++;
	return 0;
}

/* Read every name but "." and ".." from d. 0 or -errno. */
static int
names_read(DIR *d, struct names *nm)
{
	struct dirent *de;
	const char *s;
	int rc;

	for (;;) {
		errno = 0;
		if ((de = readdir(d)) == NULL)
			return errno == 0 ? 0 : -errno;
		s = de->d_name;
		if (s[0] == '.' && (s[1] == '\0' ||
		    (s[1] == '.' && s[2] == '\0')))
			continue;
		if ((rc = names_add(nm, s)) < 0)
			return rc;
	}
}

/* qsort comparison of two names, in byte order. */
static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Point v at each name of the block and sort them. 0 or -ENOMEM. */
static int
names_sort(struct names *nm)
{
	char *p;

	if (nm->n == 0)
		return 0;
	if ((nm->v = calloc(nm->n, sizeof(*nm->v))) == NULL)
		return -ENOMEM;
	p = nm->buf;
	for (size_t i = 0; i < nm->n; i++) {
		nm->v[i] = p;
		p += strlen(p) + 1;
	}
	qsort(nm->v, nm->n, sizeof(*nm->v), name_cmp);
	return 0;
}

/* Free the names. */
static void
names_free(struct names *nm)
{
	free(nm->v);
	free(nm->buf);
}

/* Read and sort the names of the directory open at fd (kept open). */
static int
names_load(struct walk *w, int fd, struct names *nm)
{
	DIR *d;
	int dfd, rc;

	/*
	 * The stream gets a duplicate so that its buffer (32 KiB or more)
	 * can go as soon as the names are read, while fd stays open for
	 * the children: memory is then the names alone.
	 */
	if ((dfd = dup(fd)) < 0 || (d = fdopendir(dfd)) == NULL) {
		rc = fail(w, errno);
		if (dfd >= 0)
			close(dfd);
		return rc;
	}
	if ((rc = names_read(d, nm)) < 0 || (rc = names_sort(nm)) < 0)
		rc = fail(w, -rc);
	closedir(d);
	return rc;
}

/*
 * Visit the directory open at fd, whose path fills w->path up to len, its
 * children being at the given depth.  Takes ownership of fd.
 */
static int
walk_dir(struct walk *w, int fd, size_t len, int depth)
{
	struct names nm = { 0 };
	struct stat st;
	size_t nl, sub;
	int cfd, rc;

	if ((rc = names_load(w, fd, &nm)) < 0)
		goto out;
	/* Children's names start here: no doubled slash under "/". */
	sub = len == 1 && w->path[0] == '/' ? 1 : len + 1;
	for (size_t i = 0; i < nm.n; i++) {
		w->path[len] = '\0';
		nl = strlen(nm.v[i]);
		if (sub + nl >= sizeof(w->path)) {
			rc = fail(w, ENAMETOOLONG);
			goto out;
		}
		if (sub == len + 1)
			w->path[len] = '/';
		memcpy(w->path + sub, nm.v[i], nl + 1);
		if (fstatat(fd, nm.v[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;	/* gone since readdir */
			rc = fail(w, errno);
			goto out;
		}
		rc = w->cb(w->path, w->path + w->reloff, &st, depth, w->arg);
		if (rc < 0)
			goto out;
		if (rc > 0 || !S_ISDIR(st.st_mode) ||
		    (w->maxdepth != FS_WALK_ALL && depth >= w->maxdepth))
			continue;
		if (depth >= FS_WALK_MAXDEPTH) {
			rc = fail(w, ELOOP);
			goto out;
		}
		cfd = openat(fd, nm.v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (cfd < 0) {
			/* Gone, or swapped for a file or a link: skip. */
			if (errno == ENOENT || errno == ENOTDIR ||
			    errno == ELOOP)
				continue;
			rc = fail(w, errno);
			goto out;
		}
		if ((rc = walk_dir(w, cfd, sub + nl, depth + 1)) < 0)
			goto out;
	}
	rc = 0;
out:
	w->path[len] = '\0';
	names_free(&nm);
	close(fd);
	return rc;
}

/* See fs_walk.h. */
int
fs_walk(const char *root, int maxdepth, fs_walk_cb *cb, void *arg,
    char *err, size_t errlen)
{
	struct walk *w;
	size_t len = strlen(root);
	int fd, rc;

	if (maxdepth == 0)
		return 0;
	if (maxdepth < 0 && maxdepth != FS_WALK_ALL)
		return -EINVAL;
	if (len == 0) {
		if (errlen > 0)
			snprintf(err, errlen, "empty path");
		return -EINVAL;
	}
	while (len > 1 && root[len - 1] == '/')
		len--;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return -ENOMEM;
	w->cb = cb;
	w->arg = arg;
	w->maxdepth = maxdepth;
	w->err = err;
	w->errlen = errlen;
	if (len >= sizeof(w->path)) {
		memcpy(w->path, root, sizeof(w->path) - 1);
		rc = fail(w, ENAMETOOLONG);
		goto out;
	}
	memcpy(w->path, root, len);
	w->path[len] = '\0';
	w->reloff = len == 1 && root[0] == '/' ? 1 : len + 1;
	if ((fd = open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = fail(w, errno);
		goto out;
	}
	rc = walk_dir(w, fd, len, 1);
out:
	free(w);
	return rc;
}
