/*
 * t_fs_tree.c -- unit tests for fs_tree.c.
 *
 * Every test works in a fresh temporary directory (in $TMPDIR, else /tmp)
 * and checks the result with lstat() and readlink().  Covered: removing
 * files, links (never their targets), directories refused by
 * fs_file_remove; rm -rf of a tree holding links to a directory and a
 * file outside it (which must survive), of missing paths, of ".", ".."
 * and "/" (refused), of a link given with a trailing slash, of trees
 * deeper than PATH_MAX and 600 levels deep (with no descriptor
 * leaked); moving into a new parent, onto an existing file (refused, both
 * intact), a missing source, a link, a directory into itself, across
 * filesystems when /dev/shm is another one; permissions: no-op on a
 * missing file, chmod, chown, links followed.
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

#include "../t.h"
#include "../../fs/fs_tree.h"

static char	*tmp_new(void);
static void	 tmp_free(char *);
static int	 rm_at(int, const char *);
static char	*cat(const char *, const char *);
static void	 mk(const char *, const char *);
static void	 mkf(const char *, const char *, const char *);
static void	 ln(const char *, const char *, const char *);
static int	 exists(const char *);
static const char *content(const char *);
static mode_t	 mode_of(const char *);
static int	 fd_count(void);

/* A fresh temporary directory; the caller frees it with tmp_free. */
static char *
tmp_new(void)
{
	const char *tmp = getenv("TMPDIR");
	char *dir;

	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	if (asprintf(&dir, "%s/t_fs_tree.XXXXXX", tmp) < 0 ||
	    mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	return dir;
}

/* Remove name under dfd, however deep (independent of fs_tree.c). */
static int
rm_at(int dfd, const char *name)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, n;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0);
	if (fchmodat(dfd, name, 0700, 0) < 0)
		return -1;
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) < 0)
		return -1;
	do {
		n = 0;
		if ((d = fdopendir(dup(fd))) == NULL)
			break;
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0 &&
			    rm_at(fd, de->d_name) == 0)
				n++;
		}
		closedir(d);
	} while (n > 0);
	close(fd);
	return unlinkat(dfd, name, AT_REMOVEDIR);
}

/* Remove the tree (if still there) and free its name. */
static void
tmp_free(char *dir)
{
	if (rm_at(AT_FDCWD, dir) < 0)
		perror(dir);
	free(dir);
}

/* dir + "/" + rel, in a buffer that lives until the next call but three. */
static char *
cat(const char *dir, const char *rel)
{
	static char buf[4][PATH_MAX];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, rel);
	return buf[k];
}

/* mkdir dir/rel, or exit. */
static void
mk(const char *dir, const char *rel)
{
	if (mkdir(cat(dir, rel), 0755) < 0) {
		perror(rel);
		exit(1);
	}
}

/* Write s to dir/rel, or exit. */
static void
mkf(const char *dir, const char *rel, const char *s)
{
	int fd;

	fd = open(cat(dir, rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, s, strlen(s)) < 0) {
		perror(rel);
		exit(1);
	}
	close(fd);
}

/* symlink target at dir/rel, or exit. */
static void
ln(const char *target, const char *dir, const char *rel)
{
	if (symlink(target, cat(dir, rel)) < 0) {
		perror(rel);
		exit(1);
	}
}

/* 1 if path exists (links not followed). */
static int
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* The first bytes of a file, or "(none)". */
static const char *
content(const char *path)
{
	static char buf[256];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY)) < 0)
		return "(none)";
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

/* Permission bits of path (following links), 07777 if missing. */
static mode_t
mode_of(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return 07777;
	return st.st_mode & 07777;
}

/* Open descriptors of this process. */
static int
fd_count(void)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* fs_file_remove: files and links go; directories stay; missing is ok. */
static void
test_file_remove(void)
{
	char *d = tmp_new();

	mkf(d, "f", "x");
	mk(d, "dir");
	mkf(d, "dir/keep", "k");
	mkf(d, "target", "t");
	ln("target", d, "ln");
	ln("dir", d, "lndir");
	ln("nowhere", d, "dangling");
	T_EQ_INT(fs_file_remove(cat(d, "f")), 0);
	T_OK(!exists(cat(d, "f")));
	T_EQ_INT(fs_file_remove(cat(d, "f")), 0);
	T_EQ_INT(fs_file_remove(cat(d, "never")), 0);
	T_EQ_INT(fs_file_remove(cat(d, "dir")), -EISDIR);
	T_EQ_STR(content(cat(d, "dir/keep")), "k");
	T_EQ_INT(fs_file_remove(cat(d, "ln")), 0);
	T_OK(!exists(cat(d, "ln")));
	T_EQ_STR(content(cat(d, "target")), "t");
	T_EQ_INT(fs_file_remove(cat(d, "lndir")), 0);
	T_OK(!exists(cat(d, "lndir")));
	T_EQ_STR(content(cat(d, "dir/keep")), "k");
	T_EQ_INT(fs_file_remove(cat(d, "dangling")), 0);
	T_OK(!exists(cat(d, "dangling")));
	T_EQ_INT(fs_file_remove(cat(d, "target/x")), -ENOTDIR);
	tmp_free(d);
}

/* rm -rf never follows a link out of the tree. */
static void
test_tree_remove_links(void)
{
	char *d = tmp_new(), *out = tmp_new(), err[PATH_MAX + 64] = "";
	int fds = fd_count();

	mk(out, "sub");
	mkf(out, "sub/precious", "p");
	mkf(out, "file", "f");
	mk(d, "t");
	mk(d, "t/a");
	mk(d, "t/a/b");
	mkf(d, "t/a/b/c", "c");
	mkf(d, "t/a/.hidden", "h");
	mkf(d, "t/top", "x");
	mk(d, "t/empty");
	ln(out, d, "t/a/to_out");
	ln(cat(out, "sub"), d, "t/a/b/to_sub");
	ln(cat(out, "file"), d, "t/to_file");
	ln("nowhere", d, "t/dangling");
	T_EQ_INT(mkfifo(cat(d, "t/a/fifo"), 0600), 0);
	T_EQ_INT(fs_tree_remove(cat(d, "t"), err, sizeof(err)), 0);
	T_OK(!exists(cat(d, "t")));
	T_EQ_STR(content(cat(out, "sub/precious")), "p");
	T_EQ_STR(content(cat(out, "file")), "f");
	T_OK(exists(cat(out, "sub")));
	T_EQ_INT(fd_count(), fds);
	tmp_free(d);
	tmp_free(out);
}

/* Missing paths, files, links given as the path, trailing slashes. */
static void
test_tree_remove_simple(void)
{
	char *d = tmp_new(), err[PATH_MAX + 64] = "";

	T_EQ_INT(fs_tree_remove(cat(d, "missing"), err, sizeof(err)), 0);
	T_EQ_INT(fs_tree_remove(cat(d, "missing/deeper"), err, sizeof(err)),
	    0);
	T_EQ_INT(fs_tree_remove("", err, sizeof(err)), 0);
	mkf(d, "f", "x");
	T_EQ_INT(fs_tree_remove(cat(d, "f"), err, sizeof(err)), 0);
	T_OK(!exists(cat(d, "f")));
	mk(d, "real");
	mkf(d, "real/keep", "k");
	ln("real", d, "link");
	T_EQ_INT(fs_tree_remove(cat(d, "link"), err, sizeof(err)), 0);
	T_OK(!exists(cat(d, "link")));
	T_EQ_STR(content(cat(d, "real/keep")), "k");
	/* "link/" would name the directory to the kernel: not here. */
	ln("real", d, "link2");
	T_EQ_INT(fs_tree_remove(cat(d, "link2/"), err, sizeof(err)), 0);
	T_OK(!exists(cat(d, "link2")));
	T_EQ_STR(content(cat(d, "real/keep")), "k");
	T_EQ_INT(fs_tree_remove(cat(d, "real//"), err, sizeof(err)), 0);
	T_OK(!exists(cat(d, "real")));
	/* A file where a directory is expected on the way. */
	mkf(d, "g", "x");
	T_EQ_INT(fs_tree_remove(cat(d, "g/sub"), err, sizeof(err)), -ENOTDIR);
	T_OK(strstr(err, cat(d, "g/sub")) != NULL);
	T_OK(exists(cat(d, "g")));
	/* The directory itself at the end: d is empty by now but for g. */
	T_EQ_INT(fs_tree_remove(d, err, sizeof(err)), 0);
	T_OK(!exists(d));
	free(d);
}

/* ".", ".." and "/" are refused, and nothing is removed. */
static void
test_tree_remove_refused(void)
{
	char *d = tmp_new(), err[PATH_MAX + 64] = "";

	mk(d, "a");
	mkf(d, "a/f", "x");
	T_EQ_INT(fs_tree_remove(cat(d, "a/."), err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove(cat(d, "a/./"), err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove(cat(d, "a/.."), err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove(cat(d, "a/..//"), err, sizeof(err)),
	    -EINVAL);
	T_OK(strstr(err, "refusing") != NULL);
	T_EQ_INT(fs_tree_remove(".", err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove("..", err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove("/.", err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove("/", err, sizeof(err)), -EBUSY);
	T_EQ_INT(fs_tree_remove("///", err, sizeof(err)), -EBUSY);
	T_EQ_STR(content(cat(d, "a/f")), "x");
	/* Names that only start with dots are ordinary. */
	mkf(d, "a/.x", "");
	mkf(d, "a/..y", "");
	mkf(d, "a/...", "");
	T_EQ_INT(fs_tree_remove(cat(d, "a/.x"), err, sizeof(err)), 0);
	T_EQ_INT(fs_tree_remove(cat(d, "a/..y"), err, sizeof(err)), 0);
	T_EQ_INT(fs_tree_remove(cat(d, "a/..."), err, sizeof(err)), 0);
	T_OK(!exists(cat(d, "a/.x")) && !exists(cat(d, "a/..y")) &&
	    !exists(cat(d, "a/...")));
	/* err may be left out. */
	T_EQ_INT(fs_tree_remove("/", NULL, 0), -EBUSY);
	tmp_free(d);
}

/* Deeper than PATH_MAX, and 600 levels: removed, no descriptor kept. */
static void
test_tree_remove_deep(void)
{
	char *d = tmp_new(), name[201], err[PATH_MAX + 64] = "";
	int fd, nfd, fds = fd_count();

	memset(name, 'n', 200);
	name[200] = '\0';
	mk(d, "long");
	fd = open(cat(d, "long"), O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < 30; i++) {
		if (mkdirat(fd, name, 0755) < 0 ||
		    (nfd = openat(fd, name, O_RDONLY | O_DIRECTORY)) < 0) {
			perror("mkdirat");
			exit(1);
		}
		close(fd);
		fd = nfd;
		close(openat(fd, "f", O_WRONLY | O_CREAT, 0644));
	}
	close(fd);
	T_EQ_INT(fs_tree_remove(cat(d, "long"), err, sizeof(err)), 0);
	T_OK(!exists(cat(d, "long")));
	mk(d, "many");
	fd = open(cat(d, "many"), O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < 600; i++) {
		if (mkdirat(fd, "d", 0755) < 0 ||
		    (nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY)) < 0) {
			perror("mkdirat");
			exit(1);
		}
		if (i % 2 == 0)
			close(openat(fd, "sibling", O_WRONLY | O_CREAT, 0644));
		close(fd);
		fd = nfd;
	}
	close(fd);
	T_EQ_INT(fs_tree_remove(cat(d, "many"), err, sizeof(err)), 0);
	T_OK(!exists(cat(d, "many")));
	T_EQ_INT(fd_count(), fds);
	tmp_free(d);
}

/* Many entries in one directory, some of them directories. */
static void
test_tree_remove_wide(void)
{
	char *d = tmp_new(), err[PATH_MAX + 64] = "", name[32];

	mk(d, "w");
	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "w/%d", i);
		if (i % 10 == 0) {
			mk(d, name);
			snprintf(name, sizeof(name), "w/%d/in", i);
		}
		mkf(d, name, "");
	}
	T_EQ_INT(fs_tree_remove(cat(d, "w"), err, sizeof(err)), 0);
	T_OK(!exists(cat(d, "w")));
	tmp_free(d);
}

/* A directory we may not empty: the failure names it (not as root). */
static void
test_tree_remove_denied(void)
{
	char *d = tmp_new(), err[PATH_MAX + 64] = "", want[PATH_MAX + 64];

	mk(d, "t");
	mk(d, "t/ro");
	mkf(d, "t/ro/f", "");
	mkf(d, "t/a", "");
	if (geteuid() == 0) {
		fprintf(stderr, "  (running as root: permission failures "
		    "not checked)\n");
		tmp_free(d);
		return;
	}
	T_EQ_INT(chmod(cat(d, "t/ro"), 0555), 0);
	T_EQ_INT(fs_tree_remove(cat(d, "t"), err, sizeof(err)), -EACCES);
	snprintf(want, sizeof(want), "%s: %s", cat(d, "t/ro/f"),
	    strerror(EACCES));
	T_EQ_STR(err, want);
	T_OK(exists(cat(d, "t/ro/f")));
	tmp_free(d);
}

/* Moving into a parent that does not exist yet. */
static void
test_move_new_parent(void)
{
	char *d = tmp_new(), err[PATH_MAX + 64] = "";
	mode_t old = umask(022);
	struct stat st;
	char buf[64];
	ssize_t n;

	mkf(d, "f", "moved");
	T_EQ_INT(fs_move(cat(d, "f"), cat(d, "x/y/z/g"), err, sizeof(err)),
	    0);
	T_OK(!exists(cat(d, "f")));
	T_EQ_STR(content(cat(d, "x/y/z/g")), "moved");
	T_EQ_INT(mode_of(cat(d, "x/y/z")), 0755);
	T_EQ_INT(mode_of(cat(d, "x")), 0755);
	/* A directory, and a link (moved as a link). */
	mk(d, "dir");
	mkf(d, "dir/in", "i");
	T_EQ_INT(fs_move(cat(d, "dir"), cat(d, "x/dir2"), err, sizeof(err)),
	    0);
	T_EQ_STR(content(cat(d, "x/dir2/in")), "i");
	ln("x/dir2", d, "lnk");
	T_EQ_INT(fs_move(cat(d, "lnk"), cat(d, "lnk2"), err, sizeof(err)),
	    0);
	T_EQ_INT(lstat(cat(d, "lnk2"), &st), 0);
	T_OK(S_ISLNK(st.st_mode));
	n = readlink(cat(d, "lnk2"), buf, sizeof(buf) - 1);
	T_EQ_INT(n, 6);
	buf[n < 0 ? 0 : n] = '\0';
	T_EQ_STR(buf, "x/dir2");
	/* A dangling link is there to move too (lstat). */
	ln("nowhere", d, "dl");
	T_EQ_INT(fs_move(cat(d, "dl"), cat(d, "dl2"), err, sizeof(err)), 0);
	T_OK(exists(cat(d, "dl2")) && !exists(cat(d, "dl")));
	umask(old);
	tmp_free(d);
}

/* An existing destination is never replaced; a missing source is 404. */
static void
test_move_refused(void)
{
	char *d = tmp_new(), err[PATH_MAX + 64] = "", want[PATH_MAX + 64];

	mkf(d, "a", "A");
	mkf(d, "b", "B");
	T_EQ_INT(fs_move(cat(d, "a"), cat(d, "b"), err, sizeof(err)),
	    -EEXIST);
	snprintf(want, sizeof(want), "destination path already exists: %s",
	    cat(d, "b"));
	T_EQ_STR(err, want);
	T_EQ_STR(content(cat(d, "a")), "A");
	T_EQ_STR(content(cat(d, "b")), "B");
	/* Onto a directory, an empty one included. */
	mk(d, "e");
	T_EQ_INT(fs_move(cat(d, "a"), cat(d, "e"), err, sizeof(err)),
	    -EEXIST);
	T_EQ_STR(content(cat(d, "a")), "A");
	/* Onto a dangling link. */
	ln("nowhere", d, "dl");
	T_EQ_INT(fs_move(cat(d, "a"), cat(d, "dl"), err, sizeof(err)),
	    -EEXIST);
	/* Onto itself. */
	T_EQ_INT(fs_move(cat(d, "a"), cat(d, "a"), err, sizeof(err)),
	    -EEXIST);
	T_EQ_STR(content(cat(d, "a")), "A");
	/* Missing source. */
	T_EQ_INT(fs_move(cat(d, "none"), cat(d, "c"), err, sizeof(err)),
	    -ENOENT);
	snprintf(want, sizeof(want), "source path not found: %s: lstat %s: "
	    "%s", cat(d, "none"), cat(d, "none"), strerror(ENOENT));
	T_EQ_STR(err, want);
	T_OK(!exists(cat(d, "c")));
	/* A file in the way of the new parent. */
	T_EQ_INT(fs_move(cat(d, "a"), cat(d, "b/sub/c"), err, sizeof(err)),
	    -EEXIST);
	T_EQ_STR(content(cat(d, "a")), "A");
	/* A directory into itself. */
	mk(d, "p");
	T_EQ_INT(fs_move(cat(d, "p"), cat(d, "p/q/r"), err, sizeof(err)),
	    -EINVAL);
	T_OK(strstr(err, "failed to rename file") != NULL);
	tmp_free(d);
}

/* Across filesystems: -EXDEV, nothing copied (if /dev/shm is another). */
static void
test_move_cross_device(void)
{
	char *d = tmp_new(), err[PATH_MAX + 64] = "", shm[] =
	    "/dev/shm/t_fs_tree.XXXXXX";
	struct stat a, b;

	mkf(d, "f", "F");
	if (stat(d, &a) < 0 || stat("/dev/shm", &b) < 0 ||
	    a.st_dev == b.st_dev || mkdtemp(shm) == NULL) {
		fprintf(stderr, "  (no second filesystem: EXDEV not "
		    "checked)\n");
		tmp_free(d);
		return;
	}
	T_EQ_INT(fs_move(cat(d, "f"), cat(shm, "f"), err, sizeof(err)),
	    -EXDEV);
	T_OK(strstr(err, "failed to rename file") != NULL);
	T_EQ_STR(content(cat(d, "f")), "F");
	T_OK(!exists(cat(shm, "f")));
	rmdir(shm);
	tmp_free(d);
}

/* chmod, chown, links followed; nothing asked: no system call at all. */
static void
test_perms(void)
{
	char *d = tmp_new(), err[PATH_MAX + 64] = "", want[PATH_MAX + 64];
	struct stat st;

	T_EQ_INT(fs_perms_set(cat(d, "none"), 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_INT(fs_perms_set(cat(d, "none"), 0640, (uid_t)-1, (gid_t)-1,
	    err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "chmod %s: %s", cat(d, "none"),
	    strerror(ENOENT));
	T_EQ_STR(err, want);
	T_EQ_INT(fs_perms_set(cat(d, "none"), 0, getuid(), (gid_t)-1, err,
	    sizeof(err)), -ENOENT);
	T_OK(strncmp(err, "chown ", 6) == 0);
	mkf(d, "f", "");
	T_EQ_INT(fs_perms_set(cat(d, "f"), 0640, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_INT(mode_of(cat(d, "f")), 0640);
	T_EQ_INT(fs_perms_set(cat(d, "f"), 0, getuid(), getgid(), err,
	    sizeof(err)), 0);
	T_EQ_INT(mode_of(cat(d, "f")), 0640);
	/* Through a link: the target changes, as upstream. */
	ln("f", d, "l");
	T_EQ_INT(fs_perms_set(cat(d, "l"), 0600, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_INT(mode_of(cat(d, "f")), 0600);
	if (geteuid() == 0) {
		T_EQ_INT(fs_perms_set(cat(d, "f"), 0, 65534, (gid_t)-1, err,
		    sizeof(err)), 0);
		T_EQ_INT(stat(cat(d, "f"), &st), 0);
		T_EQ_INT(st.st_uid, 65534);
		T_EQ_INT(st.st_gid, getgid());
		T_EQ_INT(fs_perms_set(cat(d, "f"), 0, (uid_t)-1, 65533, err,
		    sizeof(err)), 0);
		T_EQ_INT(stat(cat(d, "f"), &st), 0);
		T_EQ_INT(st.st_uid, 65534);
		T_EQ_INT(st.st_gid, 65533);
	} else {
		T_EQ_INT(fs_perms_set(cat(d, "f"), 0, 0, (gid_t)-1, err,
		    sizeof(err)), -EPERM);
	}
	tmp_free(d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "tree_file_remove", test_file_remove },
		{ "tree_remove_links", test_tree_remove_links },
		{ "tree_remove_simple", test_tree_remove_simple },
		{ "tree_remove_refused", test_tree_remove_refused },
		{ "tree_remove_deep", test_tree_remove_deep },
		{ "tree_remove_wide", test_tree_remove_wide },
		{ "tree_remove_denied", test_tree_remove_denied },
		{ "tree_move_new_parent", test_move_new_parent },
		{ "tree_move_refused", test_move_refused },
		{ "tree_move_cross_device", test_move_cross_device },
		{ "tree_perms", test_perms },
	};

	return T_RUN(cases);
}
