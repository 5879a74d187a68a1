/*
 * fs_tree.c -- removing files and trees, moving, chmod and chown.
 *
 * The tree removal is the delicate part.  It never resolves a path inside
 * the tree: it holds one descriptor, on the directory being emptied, and
 * reaches children with openat(O_NOFOLLOW | O_DIRECTORY) and unlinkat(),
 * so a symbolic link inside is removed as a link and never followed, even
 * if a directory is swapped for one meanwhile.  To climb back it opens
 * ".." and checks that it is the directory it came from (device and inode
 * remembered on the way down), which keeps memory and descriptors constant
 * however deep the tree is: only the path (for messages) and that small
 * stack grow.  Moving and permissions are thin wrappers that give the
 * errno and a message.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_ops.h"
#include "fs_tree.h"

/* State of one removal: where we are, and how we came down. */
struct rm {
	char		*path;		/* of the directory being emptied */
	size_t		 len;
	size_t		 cap;
	struct rm_level	*up;		/* the parents' identities */
	size_t		 depth;
	size_t		 upcap;
	char		*err;
	size_t		 errlen;
};

struct rm_level {
	dev_t		 dev;
	ino_t		 ino;
	size_t		 len;		/* path length at that level */
};

static int	rm_fail(struct rm *, const char *, int);
static int	rm_push_name(struct rm *, const char *);
static int	rm_push_level(struct rm *, int);
static int	rm_pass(struct rm *, int, char *, size_t);
static int	rm_climb(struct rm *, int *);
static int	rm_empty(struct rm *, int);
static int	last_is_dot(const char *, size_t);

/* Message "<path>[/name]: <strerror>" and -e. */
static int
rm_fail(struct rm *r, const char *name, int e)
{
	if (r->errlen > 0)
		snprintf(r->err, r->errlen, "%s%s%s: %s", r->path,
		    name != NULL ? "/" : "", name != NULL ? name : "",
		    strerror(e));
	return -e;
}

/* Append "/name" to the path. 0 or -ENOMEM. */
static int
rm_push_name(struct rm *r, const char *name)
{
	size_t nl = strlen(name), cap;
	char *p;

	if (r->len + nl + 2 > r->cap) {
		cap = r->cap * 2;
		while (cap < r->len + nl + 2)
			cap *= 2;
		if ((p = realloc(r->path, cap)) == NULL)
			return -ENOMEM;
		r->path = p;
		r->cap = cap;
	}
	r->path[r->len++] = '/';
	memcpy(r->path + r->len, name, nl + 1);
	r->len += nl;
	return 0;
}

/* Remember the directory open at fd before going down. 0 or -errno. */
static int
rm_push_level(struct rm *r, int fd)
{
	struct rm_level *p;
	struct stat st;
	size_t cap;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (r->depth == r->upcap) {
		cap = r->upcap == 0 ? 16 : r->upcap * 2;
		if ((p = realloc(r->up, cap * sizeof(*p))) == NULL)
			return -ENOMEM;
		r->up = p;
		r->upcap = cap;
	}
	r->up[r->depth].dev = st.st_dev;
	r->up[r->depth].ino = st.st_ino;
	r->up[r->depth].len = r->len;
	r->depth++;
	return 0;
}

/*
 * One pass over the directory open at fd: unlink every non-directory; stop
 * at the first subdirectory and copy its name into sub.  Returns the
 * number of entries seen (0: the directory is empty) or -errno.
 */
static int
rm_pass(struct rm *r, int fd, char *sub, size_t sublen)
{
	struct dirent *de;
	struct stat st;
	const char *s;
	bool isdir;
	DIR *d;
	int dfd, n = 0, rc = 0;

	sub[0] = '\0';
	if ((dfd = dup(fd)) < 0)
		return rm_fail(r, NULL, errno);
	if ((d = fdopendir(dfd)) == NULL) {
		rc = rm_fail(r, NULL, errno);
		close(dfd);
		return rc;
	}
	for (;;) {
		errno = 0;
		if ((de = readdir(d)) == NULL) {
			if (errno != 0)
				rc = rm_fail(r, NULL, errno);
			break;
		}
		s = de->d_name;
		if (s[0] == '.' && (s[1] == '\0' ||
		    (s[1] == '.' && s[2] == '\0')))
			continue;
		n++;
		isdir = de->d_type == DT_DIR;
		if (de->d_type == DT_UNKNOWN) {
			if (fstatat(fd, s, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno == ENOENT)
					continue;
				rc = rm_fail(r, s, errno);
				break;
			}
			isdir = S_ISDIR(st.st_mode);
		}
		if (!isdir && unlinkat(fd, s, 0) < 0) {
			/* Linux says EISDIR, POSIX allows EPERM. */
			if (errno == EISDIR || (errno == EPERM &&
			    fstatat(fd, s, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISDIR(st.st_mode)))
				isdir = true;
			else if (errno != ENOENT) {
				rc = rm_fail(r, s, errno);
				break;
			}
		}
		if (isdir) {
			snprintf(sub, sublen, "%s", s);
			break;
		}
	}
	closedir(d);
	return rc < 0 ? rc : n;
}

/*
 * Go back up from the (now empty) directory open at *fd to its parent,
 * checking it is the one we came down from, and remove the child there.
 */
static int
rm_climb(struct rm *r, int *fd)
{
	struct rm_level *l = &r->up[r->depth - 1];
	struct stat st;
	int pfd, rc;

	pfd = openat(*fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return rm_fail(r, NULL, errno);
	if (fstat(pfd, &st) < 0) {
		rc = rm_fail(r, NULL, errno);
		close(pfd);
		return rc;
	}
	if (st.st_dev != l->dev || st.st_ino != l->ino) {
		/* Moved away while we were inside: do not go further. */
		close(pfd);
		if (r->errlen > 0)
			snprintf(r->err, r->errlen, "%s: moved during removal",
			    r->path);
		return -EBUSY;
	}
	close(*fd);
	*fd = pfd;
	if (unlinkat(pfd, r->path + l->len + 1, AT_REMOVEDIR) < 0 &&
	    errno != ENOENT)
		return rm_fail(r, NULL, errno);
	r->len = l->len;
	r->path[r->len] = '\0';
	r->depth--;
	return 0;
}

/* Empty the directory open at fd (root of the removal). Takes fd. */
static int
rm_empty(struct rm *r, int fd)
{
	char sub[NAME_MAX + 1];
	int cfd, n, rc;

	for (;;) {
		if ((n = rm_pass(r, fd, sub, sizeof(sub))) < 0) {
			rc = n;
			break;
		}
		if (sub[0] != '\0') {
			/* Down into sub, remembering where we were. */
			cfd = openat(fd, sub, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			if (cfd < 0) {
				/* Gone, or now a file or link: next pass. */
				if (errno == ENOENT || errno == ENOTDIR ||
				    errno == ELOOP)
					continue;
				rc = rm_fail(r, sub, errno);
				break;
			}
			if ((rc = rm_push_level(r, fd)) < 0 ||
			    (rc = rm_push_name(r, sub)) < 0) {
				close(cfd);
				rc = rm_fail(r, NULL, -rc);
				break;
			}
			close(fd);
			fd = cfd;
			continue;
		}
		if (n > 0)
			continue;	/* look again: was it really all? */
		if (r->depth == 0) {
			rc = 0;
			break;
		}
		if ((rc = rm_climb(r, &fd)) < 0)
			break;
	}
	close(fd);
	return rc;
}

/* True if the last component of p (len bytes, no trailing '/') is . or .. */
static int
last_is_dot(const char *p, size_t len)
{
	const char *b = p + len;

	while (b > p && b[-1] != '/')
		b--;
	return (p + len - b == 1 && b[0] == '.') ||
	    (p + len - b == 2 && b[0] == '.' && b[1] == '.');
}

/* DELETE /files for one path; see fs_tree.h. */
int
fs_file_remove(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* rm -rf; see fs_tree.h. */
int
fs_tree_remove(const char *path, char *err, size_t errlen)
{
	struct rm r = { .err = err, .errlen = errlen };
	struct stat st;
	size_t len = strlen(path);
	int fd, rc;

	if (len == 0)
		return 0;
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len == 1 && path[0] == '/') {
		if (errlen > 0)
			snprintf(err, errlen, "refusing to remove /");
		return -EBUSY;
	}
	if (last_is_dot(path, len)) {
		if (errlen > 0)
			snprintf(err, errlen, "refusing to remove '.' or "
			    "'..': %s", path);
		return -EINVAL;
	}
	if (len >= PATH_MAX) {
		if (errlen > 0)
			snprintf(err, errlen, "%.*s: %s", (int)len, path,
			    strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	r.cap = len + 1 < 256 ? 256 : len + 1;
	if ((r.path = malloc(r.cap)) == NULL)
		return -ENOMEM;
	memcpy(r.path, path, len);
	r.path[len] = '\0';
	r.len = len;
	/* 1. Not there, or not a directory: at most one unlink. */
	if (lstat(r.path, &st) < 0) {
		rc = errno == ENOENT ? 0 : rm_fail(&r, NULL, errno);
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		rc = unlink(r.path) < 0 && errno != ENOENT ?
		    rm_fail(&r, NULL, errno) : 0;
		goto out;
	}
	/* 2. A directory: empty it through descriptors, then remove it. */
	fd = open(r.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = errno == ENOENT ? 0 : rm_fail(&r, NULL, errno);
		goto out;
	}
	if ((rc = rm_empty(&r, fd)) < 0)
		goto out;
	rc = rmdir(r.path) < 0 && errno != ENOENT ?
	    rm_fail(&r, NULL, errno) : 0;
out:
	free(r.up);
	free(r.path);
	return rc;
}

/* rename without replacing; see fs_tree.h. */
int
fs_move(const char *src, const char *dst, char *err, size_t errlen)
{
	char parent[PATH_MAX];
	struct stat st;
	size_t len = strlen(dst);
	bool created;
	int e, rc;

	if (lstat(src, &st) < 0) {
		e = errno;
		snprintf(err, errlen, "%s%s: lstat %s: %s",
		    e == ENOENT ? "source path not found: " : "", src, src,
		    strerror(e));
		return -e;
	}
	/* 1. mkdir -p the parent of dst (trailing slashes ignored). */
	if (len >= sizeof(parent)) {
		snprintf(err, errlen, "%s: %s", dst, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	memcpy(parent, dst, len + 1);
	while (len > 1 && parent[len - 1] == '/')
		parent[--len] = '\0';
	while (len > 0 && parent[len - 1] != '/')
		len--;
	while (len > 1 && parent[len - 1] == '/')
		len--;
	parent[len] = '\0';
	if (len > 0 && (rc = fs_mkdirs(parent, 0755, (uid_t)-1, (gid_t)-1,
	    &created, err, errlen)) < 0)
		return rc;
	/* 2. Rename, refusing to replace anything. */
	if (renameat2(AT_FDCWD, src, AT_FDCWD, dst, RENAME_NOREPLACE) == 0)
		return 0;
	e = errno;
	if (e == EINVAL || e == ENOSYS) {
		/* No RENAME_NOREPLACE here (or a real EINVAL: see below). */
		if (lstat(dst, &st) == 0)
			e = EEXIST;
		else if (rename(src, dst) == 0)
			return 0;
		else
			e = errno;
	}
	if (e == EEXIST)
		snprintf(err, errlen, "destination path already exists: %s",
		    dst);
	else
		snprintf(err, errlen, "failed to rename file: rename %s %s: "
		    "%s", src, dst, strerror(e));
	return -e;
}

/* chmod, then chown; see fs_tree.h. */
int
fs_perms_set(const char *path, mode_t mode, uid_t uid, gid_t gid,
    char *err, size_t errlen)
{
	int e;

	if (mode != 0 && chmod(path, mode) < 0) {
		e = errno;
		snprintf(err, errlen, "chmod %s: %s", path, strerror(e));
		return -e;
	}
	if ((uid != (uid_t)-1 || gid != (gid_t)-1) &&
	    chown(path, uid, gid) < 0) {
		e = errno;
		snprintf(err, errlen, "chown %s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}
