/*
 * t_fs_tar.c -- unit tests for fs_tar.c.
 *
 * A tree is made in a fresh temporary directory (in $TMPDIR, else /tmp),
 * archived into memory by pulling with buffers of 1, 511, 513 and 64 KiB
 * bytes (the four archives must be identical), and the archive is handed
 * to the system's tar (GNU tar, spawned with posix_spawnp) to list and to
 * extract into another temporary directory, where contents, modes,
 * mtimes, link targets (and, as root, a uid too big for ustar) are
 * compared with the originals.  A small ustar/pax reader in this file
 * checks headers directly: a file that shrank, grew or vanished after
 * fs_tar_new() (zeros and cuts, sizes as announced), a single file or
 * symlink as the root, member names for "dir/", "dir/." and a sparse file
 * of 8 GiB + 1 whose size goes in a pax record, and (when not root)
 * unreadable directories and files.  Also: the length is a
 * multiple of 512 ending in 1024 zero bytes, at most one file is open
 * while reading, and the errors of fs_tar_new() and fs_tar_read().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../fs/fs_tar.h"
#include "../t.h"
#include "../t_tmp.h"

extern char **environ;

#define BIG_SIZE	(1024 * 1024 + 1)
#define LONG_UID	3000000		/* over ustar's 7 octal digits */

static int	 fd_count(void);
static char	*archive(const char *, size_t, size_t *);
static int	 tar_run(const char *, size_t, const char *const *,
		    const char *);
static char	*long_name(int, char);
static void	 tree_make(const char *, const char *);
static char	*members(const char *, size_t);
static bool	 zeros(const char *, size_t);

/* Open descriptors of this process. */
static int
fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the one opendir holds */
}

/*
 * The archive of path, pulled bs bytes at a time (NULL if fs_tar_new
 * fails).  Checks every return and that no more than one file is open.
 */
static char *
archive(const char *path, size_t bs, size_t *len)
{
	char err[256] = "", *out = NULL, *buf, *np;
	size_t cap = 0, n = 0;
	struct fs_tar *t;
	ssize_t r;
	int base = fd_count(), calls = 0;

	if ((t = fs_tar_new(path, err, sizeof(err))) == NULL) {
		fprintf(stderr, "  fs_tar_new %s: %s\n", path, err);
		return NULL;
	}
	T_EQ_STR(fs_tar_error(t), "");
	if ((buf = malloc(bs)) == NULL)
		exit(1);
	while ((r = fs_tar_read(t, buf, bs)) > 0) {
		T_OK((size_t)r <= bs);
		if (n + r > cap) {
			cap = cap ? cap * 2 : 65536;
			if ((np = realloc(out, cap)) == NULL)
				exit(1);
			out = np;
		}
		memcpy(out + n, buf, r);
		n += r;
		if (bs >= 4096 || ++calls % 100000 == 0)
			T_OK(fd_count() <= base + 1);
	}
	T_EQ_INT(r, 0);
	/* The end stays the end. */
	T_EQ_INT(fs_tar_read(t, buf, bs), 0);
	fs_tar_free(t);
	T_EQ_INT(fd_count(), base);
	free(buf);
	*len = n;
	return out;
}

/*
 * Run tar with argv, the archive on its standard input and, if out is not
 * NULL, its standard output in the file out.  Its standard error is shown
 * only if it fails.  Its exit status, or -1.
 */
static int
tar_run(const char *a, size_t len, const char *const *argv, const char *out)
{
	posix_spawn_file_actions_t fa;
	char *v[16], ebuf[4096], *efile;
	int p[2], st = -1, efd;
	size_t off = 0, i;
	ssize_t n;
	pid_t pid;

	/* posix_spawnp wants char *const[]: copy the pointers. */
	for (i = 0; i < 15 && argv[i] != NULL; i++)
		memcpy(&v[i], &argv[i], sizeof(v[i]));
	v[i] = NULL;
	efile = t_path(getenv("TMPDIR") && *getenv("TMPDIR") ?
	    getenv("TMPDIR") : "/tmp", "t_fs_tar.err.XXXXXX");
	if ((efd = mkstemp(efile)) < 0)
		return -1;
	unlink(efile);
	if (pipe(p) < 0) {
		close(efd);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[0], 0);
	posix_spawn_file_actions_adddup2(&fa, efd, 2);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	posix_spawn_file_actions_addclose(&fa, p[1]);
	posix_spawn_file_actions_addclose(&fa, efd);
	posix_spawn_file_actions_addopen(&fa, 1, out ? out : "/dev/null",
	    O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (posix_spawnp(&pid, "tar", &fa, NULL, v, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		close(p[0]);
		close(p[1]);
		close(efd);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(p[0]);
	while (off < len && (n = write(p[1], a + off, len - off)) > 0)
		off += n;
	close(p[1]);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		st = -1;
	else
		st = WEXITSTATUS(st);
	if (st != 0 && (n = pread(efd, ebuf, sizeof(ebuf) - 1, 0)) > 0) {
		ebuf[n] = '\0';
		fprintf(stderr, "  tar: %s", ebuf);
	}
	close(efd);
	T_EQ_INT(off, len);
	return st;
}

/* n copies of c, in a buffer the caller frees. */
static char *
long_name(int n, char c)
{
	char *s = malloc(n + 1);

	if (s == NULL)
		exit(1);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/*
 * The tree archived by test_tree, at d/src:
 *   big (0600, 1 MiB + 1), caf\xc3\xa9.txt, empty, exec.sh (0755, mtime
 *   -100), fifo (skipped), link_file -> small.txt, link_long -> 200 'L',
 *   link_out -> the directory o (outside), nested/ (0700),
 *   nested/deeper/f, 160 'n' (a name too long for ustar), small.txt
 *   (0640, mtime 1000000000).
 */
static void
tree_make(const char *d, const char *o)
{
	struct timespec ts[2] = { { 0, 0 }, { 0, 0 } };
	char *big, *nm;

	mkdir(t_path(d, "src"), 0755);
	if ((big = malloc(BIG_SIZE)) == NULL)
		exit(1);
	for (size_t i = 0; i < BIG_SIZE; i++)
		big[i] = (char)(i * 7 % 251);
	t_spit(t_path(d, "src/big"), big, BIG_SIZE, 0600);
	free(big);
	t_spit(t_path(d, "src/caf\xc3\xa9.txt"), "caf\xc3\xa9\n", 6, 0644);
	t_spit(t_path(d, "src/empty"), "", 0, 0644);
	t_spit(t_path(d, "src/exec.sh"), "#!/bin/sh\n", 10, 0755);
	ts[0].tv_sec = ts[1].tv_sec = -100;
	utimensat(AT_FDCWD, t_path(d, "src/exec.sh"), ts, 0);
	if (mkfifo(t_path(d, "src/fifo"), 0644) < 0)
		perror("mkfifo");
	nm = long_name(200, 'L');
	if (symlink("small.txt", t_path(d, "src/link_file")) < 0 ||
	    symlink(nm, t_path(d, "src/link_long")) < 0 ||
	    symlink(o, t_path(d, "src/link_out")) < 0)
		perror("symlink");
	free(nm);
	mkdir(t_path(d, "src/nested"), 0700);
	chmod(t_path(d, "src/nested"), 0700);
	mkdir(t_path(d, "src/nested/deeper"), 0755);
	t_spit(t_path(d, "src/nested/deeper/f"), "x", 1, 0644);
	nm = long_name(164, 'n');
	memcpy(nm, "src/", 4);
	t_spit(t_path(d, nm), "long\n", 5, 0644);
	free(nm);
	t_spit(t_path(d, "src/small.txt"), "hello\n", 6, 0640);
	ts[0].tv_sec = ts[1].tv_sec = 1000000000;
	utimensat(AT_FDCWD, t_path(d, "src/small.txt"), ts, 0);
	/* Something in o that must not be archived through link_out. */
	t_spit(t_path(o, "outside"), "no\n", 3, 0644);
}

/* All zero? */
static bool
zeros(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != '\0')
			return false;
	return true;
}

/*
 * Read the archive with a small ustar/pax reader: "type name size" per
 * member (pax path and size applied), ';'-separated; "BAD" on any
 * inconsistency (checksum, magic, sizes, missing end).
 */
static char *
members(const char *a, size_t len)
{
	char *out = calloc(1, 65536), name[PATH_MAX], pname[PATH_MAX] = "";
	long long size, psize = -1;
	unsigned sum, want;
	size_t off = 0, o;
	const char *h, *p, *e;

	if (out == NULL)
		exit(1);
	while (off + 512 <= len) {
		h = a + off;
		if (zeros(h, 512))
			break;
		sum = 0;
		for (int i = 0; i < 512; i++)
			sum += i >= 148 && i < 156 ? ' ' :
			    (unsigned char)h[i];
		want = (unsigned)strtoul(h + 148, NULL, 8);
		if (sum != want || memcmp(h + 257, "ustar", 6) != 0) {
			strcpy(out, "BAD");
			return out;
		}
		size = strtoll(h + 124, NULL, 8);
		if (h[345] != '\0')
			snprintf(name, sizeof(name), "%.155s/%.100s", h + 345,
			    h);
		else
			snprintf(name, sizeof(name), "%.100s", h);
		off += 512;
		if (h[156] == 'x') {
			/* Records "len key=value\n". */
			for (p = a + off, e = p + size; p < e; p += o) {
				o = strtoul(p, NULL, 10);
				if (o == 0 || p + o > e)
					break;
				const char *kv = strchr(p, ' ') + 1;
				if (strncmp(kv, "path=", 5) == 0)
					snprintf(pname, sizeof(pname), "%.*s",
					    (int)(p + o - kv - 6), kv + 5);
				if (strncmp(kv, "size=", 5) == 0)
					psize = strtoll(kv + 5, NULL, 10);
			}
			off += (size + 511) / 512 * 512;
			continue;
		}
		if (pname[0] != '\0')
			snprintf(name, sizeof(name), "%s", pname);
		if (psize >= 0)
			size = psize;
		o = strlen(out);
		snprintf(out + o, 65536 - o, "%s%c %s %lld", o ? ";" : "",
		    h[156], name, size);
		pname[0] = '\0';
		psize = -1;
		if (h[156] == '0')
			off += (size + 511) / 512 * 512;
	}
	if (off + 1024 != len || !zeros(a + off, 1024))
		strcpy(out, "BAD");
	return out;
}

/* The tree, through tar -t, -tv and -x; four buffer sizes, one archive. */
static void
test_tree(void)
{
	static const size_t sizes[] = { 65536, 1, 511, 513 };
	char *d = t_tmpdir(), *o = t_tmpdir(), *x = t_tmpdir(), *a[4] = { 0 };
	char *list, *nm, *want, *got, *lt, *lp, *m, lbuf[PATH_MAX];
	size_t len[4], n, n2;
	struct stat st, st2;
	bool root = geteuid() == 0;
	const char *targv[] = { "tar", "--quoting-style=literal", "-tf", "-",
	    NULL };
	const char *vargv[] = { "tar", "-tvf", "-", NULL };
	const char *xargv[] = { "tar", "-xf", "-", "-C", x, NULL };
	static const char *const files[] = {
		"src/big", "src/caf\xc3\xa9.txt", "src/empty", "src/exec.sh",
		"src/nested/deeper/f", "src/small.txt",
	};

	tree_make(d, o);
	if (root)
		T_EQ_INT(lchown(t_path(d, "src/empty"), LONG_UID, LONG_UID), 0);
	for (int i = 0; i < 4; i++) {
		a[i] = archive(t_path(d, "src"), sizes[i], &len[i]);
		T_OK(a[i] != NULL);
		if (a[i] == NULL)
			goto out;
		T_EQ_INT(len[i], len[0]);
		T_OK(len[i] == len[0] && memcmp(a[i], a[0], len[0]) == 0);
	}
	T_EQ_INT(len[0] % 512, 0);
	T_OK(len[0] > BIG_SIZE + 1024);
	T_OK(zeros(a[0] + len[0] - 1024, 1024));
	/* 1. The names, in walk order. */
	nm = long_name(160, 'n');
	list = t_path(x, "list");
	T_EQ_INT(tar_run(a[0], len[0], targv, list), 0);
	got = t_slurp(list, &n);
	if (asprintf(&want, "src/\nsrc/big\nsrc/caf\xc3\xa9.txt\nsrc/empty\n"
	    "src/exec.sh\nsrc/link_file\nsrc/link_long\nsrc/link_out\n"
	    "src/nested/\nsrc/nested/deeper/\nsrc/nested/deeper/f\nsrc/%s\n"
	    "src/small.txt\n", nm) < 0)
		exit(1);
	T_EQ_STR(got, want);
	free(got);
	free(want);
	/* 2. Types, modes and link targets as tar -tv shows them. */
	T_EQ_INT(tar_run(a[0], len[0], vargv, list), 0);
	got = t_slurp(list, &n);
	T_OK(got != NULL && strstr(got, "src/link_file -> small.txt\n"));
	T_OK(got != NULL && strstr(got, "\n-rw-r----- "));
	T_OK(got != NULL && strstr(got, "\ndrwx------ "));
	T_OK(got != NULL && strstr(got, "\n-rwxr-xr-x "));
	T_OK(got != NULL && strstr(got, "1048577 "));
	free(got);
	unlink(list);
	/* 3. Our own reader: pax headers for the long name and link. */
	m = members(a[0], len[0]);
	T_OK(strstr(m, ";0 src/big 1048577;") != NULL);
	T_OK(strstr(m, ";2 src/link_out 0;") != NULL);
	T_OK(strstr(m, ";5 src/nested/ 0;") != NULL);
	if (asprintf(&want, ";0 src/%s 5;", nm) < 0)
		exit(1);
	T_OK(strstr(m, want) != NULL);
	free(want);
	free(m);
	/* 4. Extracted, everything is as it was. */
	T_EQ_INT(tar_run(a[0], len[0], xargv, NULL), 0);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		lt = t_slurp(t_path(d, files[i]), &n);
		lp = t_slurp(t_path(x, files[i]), &n2);
		T_OK(lt != NULL && lp != NULL && n == n2 &&
		    memcmp(lt, lp, n) == 0);
		if (lp == NULL)
			fprintf(stderr, "  missing %s\n", files[i]);
		free(lt);
		free(lp);
		T_OK(lstat(t_path(d, files[i]), &st) == 0 &&
		    lstat(t_path(x, files[i]), &st2) == 0 &&
		    st.st_mode == st2.st_mode);
	}
	if (asprintf(&want, "src/%s", nm) < 0)
		exit(1);
	lt = t_slurp(t_path(x, want), &n);
	free(want);
	T_EQ_STR(lt, "long\n");
	free(lt);
	T_OK(lstat(t_path(x, "src/nested"), &st) == 0 &&
	    (st.st_mode & 07777) == 0700 && S_ISDIR(st.st_mode));
	T_OK(lstat(t_path(x, "src/small.txt"), &st) == 0 &&
	    st.st_mtime == 1000000000);
	T_OK(lstat(t_path(x, "src/exec.sh"), &st) == 0 && st.st_mtime == -100);
	T_OK(lstat(t_path(x, "src/big"), &st) == 0 && st.st_size == BIG_SIZE);
	T_OK(lstat(t_path(x, "src/fifo"), &st) < 0 && errno == ENOENT);
	/* Links are links, with their targets; nothing came through them. */
	T_OK(lstat(t_path(x, "src/link_out"), &st) == 0 && S_ISLNK(st.st_mode));
	n = readlink(t_path(x, "src/link_out"), lbuf, sizeof(lbuf));
	T_OK(n == strlen(o) && memcmp(lbuf, o, n) == 0);
	n = readlink(t_path(x, "src/link_file"), lbuf, sizeof(lbuf));
	T_OK(n == 9 && memcmp(lbuf, "small.txt", 9) == 0);
	lt = long_name(200, 'L');
	n = readlink(t_path(x, "src/link_long"), lbuf, sizeof(lbuf));
	T_OK(n == 200 && memcmp(lbuf, lt, 200) == 0);
	free(lt);
	/* Through the link, via o. */
	T_OK(lstat(t_path(x, "src/link_out/outside"), &st) == 0);
	T_OK(lstat(t_path(x, "outside"), &st) < 0);
	if (root)
		T_OK(lstat(t_path(x, "src/empty"), &st) == 0 &&
		    st.st_uid == LONG_UID && st.st_gid == LONG_UID);
	free(nm);
out:
	for (int i = 0; i < 4; i++)
		free(a[i]);
	t_tmpdir_free(d);
	t_tmpdir_free(o);
	t_tmpdir_free(x);
}

/* Files that shrink, grow or vanish after fs_tar_new(). */
static void
test_changes(void)
{
	char *d = t_tmpdir(), buf[65536], err[256] = "", *a = NULL, *m, *np;
	const char *targv[] = { "tar", "-tf", "-", NULL };
	struct fs_tar *t;
	size_t len = 0, base;
	ssize_t r;
	int fd;

	mkdir(t_path(d, "t"), 0755);
	memset(buf, 'a', 1000);
	t_spit(t_path(d, "t/a"), buf, 1000, 0644);
	memset(buf, 'b', 1000);
	t_spit(t_path(d, "t/b"), buf, 1000, 0644);
	memset(buf, 'c', 1000);
	t_spit(t_path(d, "t/c"), buf, 1000, 0644);
	T_OK((t = fs_tar_new(t_path(d, "t"), err, sizeof(err))) != NULL);
	if (t == NULL)
		goto out;
	T_EQ_INT(truncate(t_path(d, "t/a"), 10), 0);
	if ((fd = open(t_path(d, "t/b"), O_WRONLY | O_APPEND)) >= 0) {
		T_EQ_INT(write(fd, buf, 500), 500);
		close(fd);
	}
	unlink(t_path(d, "t/c"));
	while ((r = fs_tar_read(t, buf, 700)) > 0) {
		if ((np = realloc(a, len + r)) == NULL)
			exit(1);
		a = np;
		memcpy(a + len, buf, r);
		len += r;
	}
	T_EQ_INT(r, 0);
	fs_tar_free(t);
	m = members(a, len);
	T_EQ_STR(m, "5 t/ 0;0 t/a 1000;0 t/b 1000;0 t/c 1000");
	free(m);
	/* Data: headers at 0 (t/), 512 (t/a), 512 + 1536 (t/b), ... */
	base = 1024;
	memset(buf, 'a', 10);
	T_OK(memcmp(a + base, buf, 10) == 0 && zeros(a + base + 10, 1014));
	base += 1024 + 512;
	memset(buf, 'b', 1000);
	T_OK(memcmp(a + base, buf, 1000) == 0 && zeros(a + base + 1000, 24));
	base += 1024 + 512;
	T_OK(zeros(a + base, 1024));
	T_EQ_INT(base + 1024 + 1024, len);
	T_EQ_INT(tar_run(a, len, targv, NULL), 0);
out:
	free(a);
	t_tmpdir_free(d);
}

/* A file or a symlink as the root; names for "dir/" and "dir/.". */
static void
test_roots(void)
{
	char *d = t_tmpdir(), *a, *m, *p;
	size_t len;

	mkdir(t_path(d, "proj"), 0755);
	t_spit(t_path(d, "proj/x.c"), "int x;\n", 7, 0644);
	if (symlink("proj/x.c", t_path(d, "ln")) < 0)
		perror("symlink");
	a = archive(t_path(d, "proj/x.c"), 100, &len);
	m = a ? members(a, len) : NULL;
	T_EQ_STR(m, "0 x.c 7");
	T_OK(a != NULL && memcmp(a + 512, "int x;\n", 7) == 0);
	free(m);
	free(a);
	/* The symlink itself, not its target. */
	a = archive(t_path(d, "ln"), 4096, &len);
	m = a ? members(a, len) : NULL;
	T_EQ_STR(m, "2 ln 0");
	T_OK(a != NULL && strcmp(a + 157, "proj/x.c") == 0);
	free(m);
	free(a);
	a = archive(t_path(d, "proj/"), 4096, &len);
	m = a ? members(a, len) : NULL;
	T_EQ_STR(m, "5 proj/ 0;0 proj/x.c 7");
	free(m);
	free(a);
	a = archive(t_path(d, "proj/."), 4096, &len);
	m = a ? members(a, len) : NULL;
	T_EQ_STR(m, "5 proj/ 0;0 proj/x.c 7");
	free(m);
	free(a);
	if (asprintf(&p, "%s/proj/..", d) < 0)
		exit(1);
	a = archive(p, 4096, &len);
	free(p);
	m = a ? members(a, len) : NULL;
	p = strrchr(d, '/') + 1;
	T_OK(m != NULL && strncmp(m, "5 ", 2) == 0 &&
	    strncmp(m + 2, p, strlen(p)) == 0 && m[2 + strlen(p)] == '/');
	free(m);
	free(a);
	t_tmpdir_free(d);
}

/* 8 GiB + 1 (sparse): the size goes in a pax record, 0 in ustar. */
static void
test_huge(void)
{
	char *d = t_tmpdir(), err[256] = "", buf[4096];
	struct fs_tar *t;
	ssize_t r;
	int fd;

	fd = open(t_path(d, "huge"), O_WRONLY | O_CREAT, 0644);
	if (fd < 0 || ftruncate(fd, 8LL * 1024 * 1024 * 1024 + 1) < 0) {
		fprintf(stderr, "  no sparse 8 GiB file here: skipped\n");
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	T_OK((t = fs_tar_new(t_path(d, "huge"), err, sizeof(err))) != NULL);
	if (t == NULL)
		goto out;
	T_EQ_INT(fs_tar_read(t, buf, sizeof(buf)), sizeof(buf));
	/* The 'x' header, its record, then the ustar header. */
	T_EQ_INT(buf[156], 'x');
	T_OK(memmem(buf + 512, 512, "19 size=8589934593\n", 19) != NULL);
	T_EQ_INT(buf[1024 + 156], '0');
	T_EQ_STR(buf + 1024, "huge");
	T_EQ_STR(buf + 1024 + 124, "00000000000");
	/* Data follows (zeros, as the file is a hole). */
	T_OK(zeros(buf + 1536, sizeof(buf) - 1536));
	r = fs_tar_read(t, buf, sizeof(buf));
	T_EQ_INT(r, sizeof(buf));
	fs_tar_free(t);
out:
	t_tmpdir_free(d);
}

/* Not root: an unreadable directory is archived empty, an unreadable
 * file as zeros; the archive stays valid. */
static void
test_unreadable(void)
{
	char *d = t_tmpdir(), *a, *m;
	size_t len;

	if (geteuid() == 0) {
		t_tmpdir_free(d);
		return;
	}
	mkdir(t_path(d, "u"), 0755);
	mkdir(t_path(d, "u/closed"), 0755);
	t_spit(t_path(d, "u/closed/f"), "x", 1, 0644);
	t_spit(t_path(d, "u/secret"), "abc", 3, 0644);
	chmod(t_path(d, "u/closed"), 0);
	chmod(t_path(d, "u/secret"), 0);
	a = archive(t_path(d, "u"), 4096, &len);
	m = a ? members(a, len) : NULL;
	T_EQ_STR(m, "5 u/ 0;5 u/closed/ 0;0 u/secret 3");
	T_OK(a != NULL && len == 6 * 512 && zeros(a + 3 * 512, 512));
	free(m);
	free(a);
	chmod(t_path(d, "u/closed"), 0755);
	t_tmpdir_free(d);
}

/* Errors from fs_tar_new and fs_tar_read. */
static void
test_errors(void)
{
	char *d = t_tmpdir(), err[256] = "", buf[16];
	struct fs_tar *t;

	errno = 0;
	T_OK(fs_tar_new(t_path(d, "missing"), err, sizeof(err)) == NULL);
	T_EQ_INT(errno, ENOENT);
	T_OK(strstr(err, "missing") != NULL);
	t_spit(t_path(d, "f"), "x", 1, 0644);
	errno = 0;
	T_OK(fs_tar_new(t_path(d, "f/sub"), err, sizeof(err)) == NULL);
	T_EQ_INT(errno, ENOTDIR);
	if (mkfifo(t_path(d, "fifo"), 0644) < 0)
		perror("mkfifo");
	errno = 0;
	T_OK(fs_tar_new(t_path(d, "fifo"), err, sizeof(err)) == NULL);
	T_EQ_INT(errno, EINVAL);
	errno = 0;
	T_OK(fs_tar_new("", err, sizeof(err)) == NULL);
	T_EQ_INT(errno, EINVAL);
	T_OK((t = fs_tar_new(t_path(d, "f"), err, sizeof(err))) != NULL);
	if (t != NULL) {
		T_EQ_INT(fs_tar_read(t, buf, 0), -EINVAL);
		T_OK(fs_tar_error(t)[0] != '\0');
		T_EQ_INT(fs_tar_read(t, buf, sizeof(buf)), sizeof(buf));
	}
	fs_tar_free(t);
	fs_tar_free(NULL);
	t_tmpdir_free(d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "tree", test_tree },
		{ "changes", test_changes },
		{ "roots", test_roots },
		{ "huge", test_huge },
		{ "unreadable", test_unreadable },
		{ "errors", test_errors },
	};

	umask(022);
	return T_RUN(cases);
}
