/*
 * t_tmp.h -- temporary directories and files for the unit tests.
 *
 * t_tmpdir() makes a fresh directory in $TMPDIR (else /tmp) named after the
 * test binary ("t_fs_tree.XXXXXX"); t_tmpdir_free() removes it and frees
 * the name.  t_rmtree() removes any tree, however deep and whatever its
 * modes, never following a symbolic link.  t_path() joins a directory and
 * a relative name into a ring of static buffers, so that one call can take
 * several joins as arguments.  t_mkdir(), t_mkfile() and t_spit() create
 * files, t_slurp() and t_mode() read them.
 * A test cannot run without its files: failures to create print the name
 * and exit.  Header-only, like t.h; single-threaded.
 */
#ifndef T_TMP_H
#define T_TMP_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T_PATH_RING	4	/* t_path() results alive at once */

/* A fresh directory in $TMPDIR or /tmp, or exit; t_tmpdir_free() it. */
static inline char *
t_tmpdir(void)
{
	const char *tmp = getenv("TMPDIR");
	const char *name = program_invocation_short_name;
	size_t n;
	char *dir;

	if (tmp == NULL || *tmp == '\0')
		tmp = "/tmp";
	/* Not asprintf(&dir): gcc then takes dir for a dangling pointer. */
	n = strlen(tmp) + strlen(name) + sizeof("/.XXXXXX");
	if ((dir = malloc(n)) == NULL ||
	    snprintf(dir, n, "%s/%s.XXXXXX", tmp, name) < 0 ||
	    mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	return dir;
}

/* Remove name under dfd and all below it, links not followed: 0 or -1. */
static inline int
t_rmtree_at_(int dfd, const char *name)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd, n;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0);
	/* A test may have locked it: it must be readable to be emptied. */
	if (fchmodat(dfd, name, 0700, 0) < 0)
		return -1;
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) < 0)
		return -1;
	/* Removing while reading may hide names: read until none goes. */
	do {
		n = 0;
		if ((d = fdopendir(dup(fd))) == NULL)
			break;
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0 &&
			    t_rmtree_at_(fd, de->d_name) == 0)
				n++;
		}
		closedir(d);
	} while (n > 0);
	close(fd);
	return unlinkat(dfd, name, AT_REMOVEDIR);
}

/* Remove path and all below it; 0 (also if it is missing) or -1. */
static inline int
t_rmtree(const char *path)
{
	return t_rmtree_at_(AT_FDCWD, path);
}

/* Remove the tree dir (gone already is fine) and free dir; NULL ok. */
static inline void
t_tmpdir_free(char *dir)
{
	if (dir == NULL)
		return;
	if (t_rmtree(dir) < 0)
		perror(dir);
	free(dir);
}

/* dir + "/" + rel; alive until T_PATH_RING more calls have been made. */
static inline char *
t_path(const char *dir, const char *rel)
{
	static char buf[T_PATH_RING][PATH_MAX];
	static int k;

	k = (k + 1) % T_PATH_RING;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, rel);
	return buf[k];
}

/* Make path hold n bytes of p with exactly mode, or exit. */
static inline void
t_spit(const char *path, const void *p, size_t n, mode_t mode)
{
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n || fchmod(fd, mode) < 0) {
		perror(path);
		exit(1);
	}
	close(fd);
}

/* mkdir dir/rel with mode 0755 (less the umask), or exit. */
static inline void
t_mkdir(const char *dir, const char *rel)
{
	if (mkdir(t_path(dir, rel), 0755) < 0) {
		perror(rel);
		exit(1);
	}
}

/* Make dir/rel hold the string s with mode 0644, or exit. */
static inline void
t_mkfile(const char *dir, const char *rel, const char *s)
{
	t_spit(t_path(dir, rel), s, strlen(s), 0644);
}

/* The whole file, NUL added, its length in *len (0 if NULL is returned). */
static inline char *
t_slurp(const char *path, size_t *len)
{
	struct stat st;
	char *p = NULL;
	int fd;

	*len = 0;
	if ((fd = open(path, O_RDONLY)) < 0)
		return NULL;
	if (fstat(fd, &st) < 0 ||
	    (p = malloc((size_t)st.st_size + 1)) == NULL ||
	    read(fd, p, (size_t)st.st_size) != st.st_size) {
		free(p);
		close(fd);
		return NULL;
	}
	close(fd);
	p[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	return p;
}

/* The permission bits of path (links followed), 07777 if it is missing. */
static inline mode_t
t_mode(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return 07777;
	return st.st_mode & 07777;
}

#endif /* T_TMP_H */
