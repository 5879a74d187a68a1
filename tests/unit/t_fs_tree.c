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

#include "../../fs/fs_tree.h"
#include "../t.h"
#include "../t_tmp.h"

static void	 ln(const char *, const char *, const char *);
static int	 exists(const char *);
static const char *content(const char *);
static int	 fd_count(void);

/* symlink target at dir/rel, or exit. */
static void
ln(const char *target, const char *dir, const char *rel)
{
	if (symlink(target, t_path(dir, rel)) < 0) {
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
	char *d = t_tmpdir();

	t_mkfile(d, "f", "x");
	t_mkdir(d, "dir");
	t_mkfile(d, "dir/keep", "k");
	t_mkfile(d, "target", "t");
	ln("target", d, "ln");
	ln("dir", d, "lndir");
	ln("nowhere", d, "dangling");
	T_EQ_INT(fs_file_remove(t_path(d, "f")), 0);
	T_OK(!exists(t_path(d, "f")));
	T_EQ_INT(fs_file_remove(t_path(d, "f")), 0);
	T_EQ_INT(fs_file_remove(t_path(d, "never")), 0);
	T_EQ_INT(fs_file_remove(t_path(d, "dir")), -EISDIR);
	T_EQ_STR(content(t_path(d, "dir/keep")), "k");
	T_EQ_INT(fs_file_remove(t_path(d, "ln")), 0);
	T_OK(!exists(t_path(d, "ln")));
	T_EQ_STR(content(t_path(d, "target")), "t");
	T_EQ_INT(fs_file_remove(t_path(d, "lndir")), 0);
	T_OK(!exists(t_path(d, "lndir")));
	T_EQ_STR(content(t_path(d, "dir/keep")), "k");
	T_EQ_INT(fs_file_remove(t_path(d, "dangling")), 0);
	T_OK(!exists(t_path(d, "dangling")));
	T_EQ_INT(fs_file_remove(t_path(d, "target/x")), -ENOTDIR);
	t_tmpdir_free(d);
}

/* rm -rf never follows a link out of the tree. */
static void
test_tree_remove_links(void)
{
	char *d = t_tmpdir(), *out = t_tmpdir(), err[PATH_MAX + 64] = "";
	int fds = fd_count();

	t_mkdir(out, "sub");
	t_mkfile(out, "sub/precious", "p");
	t_mkfile(out, "file", "f");
	t_mkdir(d, "t");
	t_mkdir(d, "t/a");
	t_mkdir(d, "t/a/b");
	t_mkfile(d, "t/a/b/c", "c");
	t_mkfile(d, "t/a/.hidden", "h");
	t_mkfile(d, "t/top", "x");
	t_mkdir(d, "t/empty");
	ln(out, d, "t/a/to_out");
	ln(t_path(out, "sub"), d, "t/a/b/to_sub");
	ln(t_path(out, "file"), d, "t/to_file");
	ln("nowhere", d, "t/dangling");
	T_EQ_INT(mkfifo(t_path(d, "t/a/fifo"), 0600), 0);
	T_EQ_INT(fs_tree_remove(t_path(d, "t"), err, sizeof(err)), 0);
	T_OK(!exists(t_path(d, "t")));
	T_EQ_STR(content(t_path(out, "sub/precious")), "p");
	T_EQ_STR(content(t_path(out, "file")), "f");
	T_OK(exists(t_path(out, "sub")));
	T_EQ_INT(fd_count(), fds);
	t_tmpdir_free(d);
	t_tmpdir_free(out);
}

/* Missing paths, files, links given as the path, trailing slashes. */
static void
test_tree_remove_simple(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 64] = "";

	T_EQ_INT(fs_tree_remove(t_path(d, "missing"), err, sizeof(err)), 0);
	T_EQ_INT(fs_tree_remove(t_path(d, "missing/deeper"), err, sizeof(err)),
	    0);
	T_EQ_INT(fs_tree_remove("", err, sizeof(err)), 0);
	t_mkfile(d, "f", "x");
	T_EQ_INT(fs_tree_remove(t_path(d, "f"), err, sizeof(err)), 0);
	T_OK(!exists(t_path(d, "f")));
	t_mkdir(d, "real");
	t_mkfile(d, "real/keep", "k");
	ln("real", d, "link");
	T_EQ_INT(fs_tree_remove(t_path(d, "link"), err, sizeof(err)), 0);
	T_OK(!exists(t_path(d, "link")));
	T_EQ_STR(content(t_path(d, "real/keep")), "k");
	/* "link/" would name the directory to the kernel: not here. */
	ln("real", d, "link2");
	T_EQ_INT(fs_tree_remove(t_path(d, "link2/"), err, sizeof(err)), 0);
	T_OK(!exists(t_path(d, "link2")));
	T_EQ_STR(content(t_path(d, "real/keep")), "k");
	T_EQ_INT(fs_tree_remove(t_path(d, "real//"), err, sizeof(err)), 0);
	T_OK(!exists(t_path(d, "real")));
	/* A file where a directory is expected on the way. */
	t_mkfile(d, "g", "x");
	T_EQ_INT(fs_tree_remove(t_path(d, "g/sub"), err, sizeof(err)),
	    -ENOTDIR);
	T_OK(strstr(err, t_path(d, "g/sub")) != NULL);
	T_OK(exists(t_path(d, "g")));
	/* The directory itself at the end: d is empty by now but for g. */
	T_EQ_INT(fs_tree_remove(d, err, sizeof(err)), 0);
	T_OK(!exists(d));
	free(d);
}

/* ".", ".." and "/" are refused, and nothing is removed. */
static void
test_tree_remove_refused(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 64] = "";

	t_mkdir(d, "a");
	t_mkfile(d, "a/f", "x");
	T_EQ_INT(fs_tree_remove(t_path(d, "a/."), err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove(t_path(d, "a/./"), err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove(t_path(d, "a/.."), err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove(t_path(d, "a/..//"), err, sizeof(err)),
	    -EINVAL);
	T_OK(strstr(err, "refusing") != NULL);
	T_EQ_INT(fs_tree_remove(".", err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove("..", err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove("/.", err, sizeof(err)), -EINVAL);
	T_EQ_INT(fs_tree_remove("/", err, sizeof(err)), -EBUSY);
	T_EQ_INT(fs_tree_remove("///", err, sizeof(err)), -EBUSY);
	T_EQ_STR(content(t_path(d, "a/f")), "x");
	/* Names that only start with dots are ordinary. */
	t_mkfile(d, "a/.x", "");
	t_mkfile(d, "a/..y", "");
	t_mkfile(d, "a/...", "");
	T_EQ_INT(fs_tree_remove(t_path(d, "a/.x"), err, sizeof(err)), 0);
	T_EQ_INT(fs_tree_remove(t_path(d, "a/..y"), err, sizeof(err)), 0);
	T_EQ_INT(fs_tree_remove(t_path(d, "a/..."), err, sizeof(err)), 0);
	T_OK(!exists(t_path(d, "a/.x")) && !exists(t_path(d, "a/..y")) &&
	    !exists(t_path(d, "a/...")));
	/* err may be left out. */
	T_EQ_INT(fs_tree_remove("/", NULL, 0), -EBUSY);
	t_tmpdir_free(d);
}

/* Deeper than PATH_MAX, and 600 levels: removed, no descriptor kept. */
static void
test_tree_remove_deep(void)
{
	char *d = t_tmpdir(), name[201], err[PATH_MAX + 64] = "";
	int fd, nfd, fds = fd_count();

	memset(name, 'n', 200);
	name[200] = '\0';
	t_mkdir(d, "long");
	fd = open(t_path(d, "long"), O_RDONLY | O_DIRECTORY);
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
	T_EQ_INT(fs_tree_remove(t_path(d, "long"), err, sizeof(err)), 0);
	T_OK(!exists(t_path(d, "long")));
	t_mkdir(d, "many");
	fd = open(t_path(d, "many"), O_RDONLY | O_DIRECTORY);
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
	T_EQ_INT(fs_tree_remove(t_path(d, "many"), err, sizeof(err)), 0);
	T_OK(!exists(t_path(d, "many")));
	T_EQ_INT(fd_count(), fds);
	t_tmpdir_free(d);
}

/* Many entries in one directory, some of them directories. */
static void
test_tree_remove_wide(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 64] = "", name[32];

	t_mkdir(d, "w");
	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "w/%d", i);
		if (i % 10 == 0) {
			t_mkdir(d, name);
			snprintf(name, sizeof(name), "w/%d/in", i);
		}
		t_mkfile(d, name, "");
	}
	T_EQ_INT(fs_tree_remove(t_path(d, "w"), err, sizeof(err)), 0);
	T_OK(!exists(t_path(d, "w")));
	t_tmpdir_free(d);
}

/* A directory we may not empty: the failure names it (not as root). */
static void
test_tree_remove_denied(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 64] = "", want[PATH_MAX + 64];

	t_mkdir(d, "t");
	t_mkdir(d, "t/ro");
	t_mkfile(d, "t/ro/f", "");
	t_mkfile(d, "t/a", "");
	if (geteuid() == 0) {
		fprintf(stderr, "  (running as root: permission failures "
		    "not checked)\n");
		t_tmpdir_free(d);
		return;
	}
	T_EQ_INT(chmod(t_path(d, "t/ro"), 0555), 0);
	T_EQ_INT(fs_tree_remove(t_path(d, "t"), err, sizeof(err)), -EACCES);
	snprintf(want, sizeof(want), "%s: %s", t_path(d, "t/ro/f"),
	    strerror(EACCES));
	T_EQ_STR(err, want);
	T_OK(exists(t_path(d, "t/ro/f")));
	t_tmpdir_free(d);
}

/* Moving into a parent that does not exist yet. */
static void
test_move_new_parent(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 64] = "";
	mode_t old = umask(022);
	struct stat st;
	char buf[64];
	ssize_t n;

	t_mkfile(d, "f", "moved");
	T_EQ_INT(fs_move(t_path(d, "f"), t_path(d, "x/y/z/g"), err,
	    sizeof(err)), 0);
	T_OK(!exists(t_path(d, "f")));
	T_EQ_STR(content(t_path(d, "x/y/z/g")), "moved");
	T_EQ_INT(t_mode(t_path(d, "x/y/z")), 0755);
	T_EQ_INT(t_mode(t_path(d, "x")), 0755);
	/* A directory, and a link (moved as a link). */
	t_mkdir(d, "dir");
	t_mkfile(d, "dir/in", "i");
	T_EQ_INT(fs_move(t_path(d, "dir"), t_path(d, "x/dir2"), err,
	    sizeof(err)), 0);
	T_EQ_STR(content(t_path(d, "x/dir2/in")), "i");
	ln("x/dir2", d, "lnk");
	T_EQ_INT(fs_move(t_path(d, "lnk"), t_path(d, "lnk2"), err, sizeof(err)),
	    0);
	T_EQ_INT(lstat(t_path(d, "lnk2"), &st), 0);
	T_OK(S_ISLNK(st.st_mode));
	n = readlink(t_path(d, "lnk2"), buf, sizeof(buf) - 1);
	T_EQ_INT(n, 6);
	buf[n < 0 ? 0 : n] = '\0';
	T_EQ_STR(buf, "x/dir2");
	/* A dangling link is there to move too (lstat). */
	ln("nowhere", d, "dl");
	T_EQ_INT(fs_move(t_path(d, "dl"), t_path(d, "dl2"), err, sizeof(err)),
	    0);
	T_OK(exists(t_path(d, "dl2")) && !exists(t_path(d, "dl")));
	umask(old);
	t_tmpdir_free(d);
}

/* An existing destination is never replaced; a missing source is 404. */
static void
test_move_refused(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 64] = "", want[PATH_MAX + 64];

	t_mkfile(d, "a", "A");
	t_mkfile(d, "b", "B");
	T_EQ_INT(fs_move(t_path(d, "a"), t_path(d, "b"), err, sizeof(err)),
	    -EEXIST);
	snprintf(want, sizeof(want), "destination path already exists: %s",
	    t_path(d, "b"));
	T_EQ_STR(err, want);
	T_EQ_STR(content(t_path(d, "a")), "A");
	T_EQ_STR(content(t_path(d, "b")), "B");
	/* Onto a directory, an empty one included. */
	t_mkdir(d, "e");
	T_EQ_INT(fs_move(t_path(d, "a"), t_path(d, "e"), err, sizeof(err)),
	    -EEXIST);
	T_EQ_STR(content(t_path(d, "a")), "A");
	/* Onto a dangling link. */
	ln("nowhere", d, "dl");
	T_EQ_INT(fs_move(t_path(d, "a"), t_path(d, "dl"), err, sizeof(err)),
	    -EEXIST);
	/* Onto itself. */
	T_EQ_INT(fs_move(t_path(d, "a"), t_path(d, "a"), err, sizeof(err)),
	    -EEXIST);
	T_EQ_STR(content(t_path(d, "a")), "A");
	/* Missing source. */
	T_EQ_INT(fs_move(t_path(d, "none"), t_path(d, "c"), err, sizeof(err)),
	    -ENOENT);
	snprintf(want, sizeof(want), "source path not found: %s: lstat %s: "
	    "%s", t_path(d, "none"), t_path(d, "none"), strerror(ENOENT));
	T_EQ_STR(err, want);
	T_OK(!exists(t_path(d, "c")));
	/* A file in the way of the new parent. */
	T_EQ_INT(fs_move(t_path(d, "a"), t_path(d, "b/sub/c"), err,
	    sizeof(err)), -EEXIST);
	T_EQ_STR(content(t_path(d, "a")), "A");
	/* A directory into itself. */
	t_mkdir(d, "p");
	T_EQ_INT(fs_move(t_path(d, "p"), t_path(d, "p/q/r"), err, sizeof(err)),
	    -EINVAL);
	T_OK(strstr(err, "failed to rename file") != NULL);
	t_tmpdir_free(d);
}

/* Across filesystems: -EXDEV, nothing copied (if /dev/shm is another). */
static void
test_move_cross_device(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 64] = "", shm[] =
	    "/dev/shm/t_fs_tree.XXXXXX";
	struct stat a, b;

	t_mkfile(d, "f", "F");
	if (stat(d, &a) < 0 || stat("/dev/shm", &b) < 0 ||
	    a.st_dev == b.st_dev || mkdtemp(shm) == NULL) {
		fprintf(stderr, "  (no second filesystem: EXDEV not "
		    "checked)\n");
		t_tmpdir_free(d);
		return;
	}
	T_EQ_INT(fs_move(t_path(d, "f"), t_path(shm, "f"), err, sizeof(err)),
	    -EXDEV);
	T_OK(strstr(err, "failed to rename file") != NULL);
	T_EQ_STR(content(t_path(d, "f")), "F");
	T_OK(!exists(t_path(shm, "f")));
	rmdir(shm);
	t_tmpdir_free(d);
}

/* chmod, chown, links followed; nothing asked: no system call at all. */
static void
test_perms(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 64] = "", want[PATH_MAX + 64];
	struct stat st;

	T_EQ_INT(fs_perms_set(t_path(d, "none"), 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_INT(fs_perms_set(t_path(d, "none"), 0640, (uid_t)-1, (gid_t)-1,
	    err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "chmod %s: %s", t_path(d, "none"),
	    strerror(ENOENT));
	T_EQ_STR(err, want);
	T_EQ_INT(fs_perms_set(t_path(d, "none"), 0, getuid(), (gid_t)-1, err,
	    sizeof(err)), -ENOENT);
	T_OK(strncmp(err, "chown ", 6) == 0);
	t_mkfile(d, "f", "");
	T_EQ_INT(fs_perms_set(t_path(d, "f"), 0640, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_INT(t_mode(t_path(d, "f")), 0640);
	T_EQ_INT(fs_perms_set(t_path(d, "f"), 0, getuid(), getgid(), err,
	    sizeof(err)), 0);
	T_EQ_INT(t_mode(t_path(d, "f")), 0640);
	/* Through a link: the target changes, as upstream. */
	ln("f", d, "l");
	T_EQ_INT(fs_perms_set(t_path(d, "l"), 0600, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_INT(t_mode(t_path(d, "f")), 0600);
	if (geteuid() == 0) {
		T_EQ_INT(fs_perms_set(t_path(d, "f"), 0, 65534, (gid_t)-1, err,
		    sizeof(err)), 0);
		T_EQ_INT(stat(t_path(d, "f"), &st), 0);
		T_EQ_INT(st.st_uid, 65534);
		T_EQ_INT(st.st_gid, getgid());
		T_EQ_INT(fs_perms_set(t_path(d, "f"), 0, (uid_t)-1, 65533, err,
		    sizeof(err)), 0);
		T_EQ_INT(stat(t_path(d, "f"), &st), 0);
		T_EQ_INT(st.st_uid, 65534);
		T_EQ_INT(st.st_gid, 65533);
	} else {
		T_EQ_INT(fs_perms_set(t_path(d, "f"), 0, 0, (gid_t)-1, err,
		    sizeof(err)), -EPERM);
	}
	t_tmpdir_free(d);
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
