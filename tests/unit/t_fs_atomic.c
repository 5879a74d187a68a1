/*
 * t_fs_atomic.c -- unit tests for fs_atomic.c.
 *
 * Each test works in a fresh temporary directory (in $TMPDIR, else /tmp)
 * under a umask of 022, and checks contents, modes, owners and inodes
 * with lstat() and readlink().  After every test the directories involved
 * must hold no ".*.execd-*" temporary.  Covered: commit of a new file
 * (newmode, parents created), of an existing 0640 file (mode kept, new
 * inode), an explicit mode and owner, abort (old content, no debris,
 * idempotent, after a failed open), links (the final target replaced, the
 * links intact, a dangling link's target created), refusals (directory,
 * trailing slash, fifo), a base name of NAME_MAX bytes; fs_replace:
 * counts, overlapping patterns, matches across the 64 KiB chunk
 * boundaries, patterns longer than a chunk, no match leaving the inode
 * alone, a 5 MiB file and random files against an in-memory reference,
 * mode kept, links, errors; the journal of temporaries (a dead writer's
 * removed, a live one's, a look-alike and a reused name kept).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../fs/fs_atomic.h"
#include "../t.h"
#include "../t_tmp.h"

#define CHUNK	(64 * 1024)

static void	 tmp_free(char *);
static const char *text(const char *);
static int	 debris(const char *);
static mode_t	 mode_of(const char *);
static ino_t	 ino_of(const char *);
static char	*ref_replace(const char *, size_t, const char *, const char *,
		    unsigned long long *, size_t *);
static int	 replace_s(const char *, const char *, const char *,
		    unsigned long long *);

/* Check for debris, remove the tree and free its name. */
static void
tmp_free(char *dir)
{
	T_EQ_INT(debris(dir), 0);
	t_tmpdir_free(dir);
}

/* A small file's content, or "(none)". */
static const char *
text(const char *path)
{
	static char buf[4096];
	size_t n;
	char *b = t_slurp(path, &n);

	if (b == NULL)
		return "(none)";
	snprintf(buf, sizeof(buf), "%s", b);
	free(b);
	return buf;
}

/* Number of ".*.execd-*" names in dir. */
static int
debris(const char *dir)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	if ((d = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		n += fnmatch(".*.execd-*", de->d_name, FNM_PERIOD) == 0;
	closedir(d);
	return n;
}

/* Permission bits (links not followed), 07777 if missing. */
static mode_t
mode_of(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return 07777;
	return st.st_mode & 07777;
}

/* Inode number (links not followed), 0 if missing. */
static ino_t
ino_of(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return 0;
	return st.st_ino;
}

/* The obvious in-memory replace, for comparison. */
static char *
ref_replace(const char *in, size_t n, const char *old, const char *new_,
    unsigned long long *count, size_t *outlen)
{
	size_t ol = strlen(old), nl = strlen(new_), o = 0;
	char *out = malloc(n * (nl > ol ? nl : 1) + 1);

	*count = 0;
	for (size_t i = 0; i < n;) {
		if (i + ol <= n && memcmp(in + i, old, ol) == 0) {
			memcpy(out + o, new_, nl);
			o += nl;
			i += ol;
			(*count)++;
		} else
			out[o++] = in[i++];
	}
	*outlen = o;
	return out;
}

/* fs_replace with C strings. */
static int
replace_s(const char *path, const char *old, const char *new_,
    unsigned long long *count)
{
	char err[PATH_MAX + 128];

	return fs_replace(path, old, strlen(old), new_, strlen(new_), count,
	    err, sizeof(err));
}

/* A new file: parents made, content whole, newmode, no temporary left. */
static void
test_commit_new(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	struct fs_atomic a;
	struct stat st;

	T_EQ_INT(fs_atomic_open(&a, t_path(d, "p/q/new"), 0755, err,
	    sizeof(err)), 0);
	T_EQ_INT(mode_of(t_path(d, "p/q")), 0755);
	T_EQ_INT(debris(t_path(d, "p/q")), 1);
	T_OK(!(lstat(t_path(d, "p/q/new"), &st) == 0));
	T_EQ_INT(fs_atomic_write(&a, "hello ", 6), 0);
	T_EQ_INT(fs_atomic_write(&a, "", 0), 0);
	T_EQ_INT(fs_atomic_write(&a, "world", 5), 0);
	T_EQ_INT(fs_atomic_commit(&a, 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_STR(text(t_path(d, "p/q/new")), "hello world");
	T_EQ_INT(mode_of(t_path(d, "p/q/new")), 0755);
	T_EQ_INT(debris(t_path(d, "p/q")), 0);
	T_EQ_INT(lstat(t_path(d, "p/q/new"), &st), 0);
	T_EQ_INT(st.st_uid, geteuid());
	/* The struct holds nothing now: writes fail, abort is harmless. */
	T_EQ_INT(fs_atomic_write(&a, "x", 1), -EBADF);
	fs_atomic_abort(&a);
	T_EQ_INT(fs_atomic_commit(&a, 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), -EBADF);
	/* Another newmode, and an empty file. */
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "empty"), 0604, err, sizeof(err)),
	    0);
	T_EQ_INT(fs_atomic_commit(&a, 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_INT(mode_of(t_path(d, "empty")), 0604);
	T_EQ_STR(text(t_path(d, "empty")), "");
	tmp_free(d);
}

/* An existing file keeps its mode; the new content has a new inode. */
static void
test_commit_existing(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	struct fs_atomic a;
	ino_t ino;

	t_spit(t_path(d, "f"), "old content", 11, 0640);
	ino = ino_of(t_path(d, "f"));
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "f"), 0755, err, sizeof(err)), 0);
	T_EQ_INT(fs_atomic_write(&a, "new", 3), 0);
	/* Until commit, the old file is what readers see. */
	T_EQ_STR(text(t_path(d, "f")), "old content");
	T_EQ_INT(fs_atomic_commit(&a, 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_STR(text(t_path(d, "f")), "new");
	T_EQ_INT(mode_of(t_path(d, "f")), 0640);
	T_OK(ino_of(t_path(d, "f")) != ino);
	/* Special bits are kept too. */
	T_EQ_INT(chmod(t_path(d, "f"), 02750), 0);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "f"), 0755, err, sizeof(err)), 0);
	T_EQ_INT(fs_atomic_commit(&a, 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_INT(mode_of(t_path(d, "f")), 02750);
	/* An explicit mode wins. */
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "f"), 0755, err, sizeof(err)), 0);
	T_EQ_INT(fs_atomic_write(&a, "x", 1), 0);
	T_EQ_INT(fs_atomic_commit(&a, 0600, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_INT(mode_of(t_path(d, "f")), 0600);
	T_EQ_STR(text(t_path(d, "f")), "x");
	tmp_free(d);
}

/* Owners: ours is fine; another needs root (-EPERM otherwise). */
static void
test_commit_owner(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	struct fs_atomic a;
	struct stat st;

	T_EQ_INT(fs_atomic_open(&a, t_path(d, "mine"), 0644, err, sizeof(err)),
	    0);
	T_EQ_INT(fs_atomic_commit(&a, 0, getuid(), getgid(), err,
	    sizeof(err)), 0);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "theirs"), 0644, err,
	    sizeof(err)), 0);
	T_EQ_INT(fs_atomic_write(&a, "t", 1), 0);
	if (geteuid() != 0) {
		T_EQ_INT(fs_atomic_commit(&a, 0, 0, (gid_t)-1, err,
		    sizeof(err)), -EPERM);
		T_OK(lstat(t_path(d, "theirs"), &st) < 0);
		tmp_free(d);
		return;
	}
	T_EQ_INT(fs_atomic_commit(&a, 0, 65534, 65533, err, sizeof(err)), 0);
	T_EQ_INT(lstat(t_path(d, "theirs"), &st), 0);
	T_EQ_INT(st.st_uid, 65534);
	T_EQ_INT(st.st_gid, 65533);
	/* Kept on the next write; a setgid bit survives the chown. */
	T_EQ_INT(chmod(t_path(d, "theirs"), 02640), 0);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "theirs"), 0644, err,
	    sizeof(err)), 0);
	T_EQ_INT(fs_atomic_commit(&a, 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_INT(lstat(t_path(d, "theirs"), &st), 0);
	T_EQ_INT(st.st_uid, 65534);
	T_EQ_INT(st.st_gid, 65533);
	T_EQ_INT(st.st_mode & 07777, 02640);
	/* One changed, the other kept. */
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "theirs"), 0644, err,
	    sizeof(err)), 0);
	T_EQ_INT(fs_atomic_commit(&a, 0, 0, (gid_t)-1, err, sizeof(err)), 0);
	T_EQ_INT(lstat(t_path(d, "theirs"), &st), 0);
	T_EQ_INT(st.st_uid, 0);
	T_EQ_INT(st.st_gid, 65533);
	tmp_free(d);
}

/* Abort: the old content stays, no temporary is left, twice is fine. */
static void
test_abort(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	struct fs_atomic a;
	ino_t ino;

	t_spit(t_path(d, "f"), "keep me", 7, 0640);
	ino = ino_of(t_path(d, "f"));
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "f"), 0755, err, sizeof(err)), 0);
	T_EQ_INT(fs_atomic_write(&a, "garbage", 7), 0);
	T_EQ_INT(debris(d), 1);
	fs_atomic_abort(&a);
	T_EQ_INT(debris(d), 0);
	T_EQ_STR(text(t_path(d, "f")), "keep me");
	T_EQ_INT(ino_of(t_path(d, "f")), ino);
	T_EQ_INT(mode_of(t_path(d, "f")), 0640);
	fs_atomic_abort(&a);
	/* A new file aborted: nothing at all. */
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "g"), 0755, err, sizeof(err)), 0);
	fs_atomic_abort(&a);
	T_OK(ino_of(t_path(d, "g")) == 0);
	/* After a failed open, abort is a no-op. */
	T_EQ_INT(mkdir(t_path(d, "dir"), 0755), 0);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "dir"), 0755, err, sizeof(err)),
	    -EISDIR);
	fs_atomic_abort(&a);
	fs_atomic_abort(&a);
	T_EQ_INT(fs_atomic_write(&a, "x", 1), -EBADF);
	T_EQ_INT(debris(t_path(d, "dir")), 0);
	tmp_free(d);
}

/* Through links: the final target is replaced, the links stay links. */
static void
test_symlink(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "", buf[PATH_MAX];
	struct fs_atomic a;
	ssize_t n;

	T_EQ_INT(mkdir(t_path(d, "sub"), 0755), 0);
	t_spit(t_path(d, "sub/target"), "old", 3, 0640);
	T_EQ_INT(symlink("sub/target", t_path(d, "link")), 0);
	T_EQ_INT(symlink(t_path(d, "link"), t_path(d, "link2")), 0);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "link2"), 0755, err, sizeof(err)),
	    0);
	T_EQ_INT(debris(t_path(d, "sub")), 1);
	T_EQ_INT(debris(d), 0);
	T_EQ_INT(fs_atomic_write(&a, "new", 3), 0);
	T_EQ_INT(fs_atomic_commit(&a, 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_STR(text(t_path(d, "sub/target")), "new");
	T_EQ_INT(mode_of(t_path(d, "sub/target")), 0640);
	n = readlink(t_path(d, "link"), buf, sizeof(buf) - 1);
	T_EQ_INT(n, 10);
	buf[n < 0 ? 0 : n] = '\0';
	T_EQ_STR(buf, "sub/target");
	n = readlink(t_path(d, "link2"), buf, sizeof(buf) - 1);
	buf[n < 0 ? 0 : n] = '\0';
	T_EQ_STR(buf, t_path(d, "link"));
	T_EQ_INT(debris(t_path(d, "sub")), 0);
	/* A dangling link: its target is created, the link kept. */
	T_EQ_INT(symlink("sub/fresh", t_path(d, "dl")), 0);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "dl"), 0604, err, sizeof(err)),
	    0);
	T_EQ_INT(fs_atomic_write(&a, "f", 1), 0);
	T_EQ_INT(fs_atomic_commit(&a, 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_STR(text(t_path(d, "sub/fresh")), "f");
	T_EQ_INT(mode_of(t_path(d, "sub/fresh")), 0604);
	T_EQ_INT(mode_of(t_path(d, "dl")), 0777);
	/* ... but not the target's missing directory. */
	T_EQ_INT(symlink("nodir/x", t_path(d, "dl2")), 0);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "dl2"), 0644, err, sizeof(err)),
	    -ENOENT);
	T_OK(ino_of(t_path(d, "nodir")) == 0);
	/* A link to a directory, a loop. */
	T_EQ_INT(symlink("sub", t_path(d, "ldir")), 0);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "ldir"), 0644, err, sizeof(err)),
	    -EISDIR);
	T_EQ_INT(symlink("loop", t_path(d, "loop")), 0);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "loop"), 0644, err, sizeof(err)),
	    -ELOOP);
	tmp_free(d);
}

/* Directories, trailing slashes, fifos and long names. */
static void
test_open_refused(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "", name[NAME_MAX + 2];
	struct fs_atomic a;

	T_EQ_INT(fs_atomic_open(&a, d, 0644, err, sizeof(err)), -EISDIR);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "x/"), 0644, err, sizeof(err)),
	    -EISDIR);
	T_OK(ino_of(t_path(d, "x")) == 0);
	T_EQ_INT(mkfifo(t_path(d, "fifo"), 0600), 0);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "fifo"), 0644, err, sizeof(err)),
	    -EINVAL);
	T_OK(strstr(err, "not a regular file") != NULL);
	t_spit(t_path(d, "file"), "", 0, 0644);
	T_EQ_INT(fs_atomic_open(&a, t_path(d, "file/x"), 0644, err,
	    sizeof(err)), -ENOTDIR);
	T_EQ_INT(fs_atomic_open(&a, "", 0644, err, sizeof(err)), -ENOENT);
	/* A base name of NAME_MAX bytes still gets its temporary. */
	memset(name, 'b', NAME_MAX);
	name[NAME_MAX] = '\0';
	T_EQ_INT(fs_atomic_open(&a, t_path(d, name), 0644, err, sizeof(err)),
	    0);
	T_EQ_INT(strlen(a.tmp), NAME_MAX);
	T_EQ_INT(fs_atomic_write(&a, "L", 1), 0);
	T_EQ_INT(fs_atomic_commit(&a, 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_STR(text(t_path(d, name)), "L");
	name[NAME_MAX] = 'b';
	name[NAME_MAX + 1] = '\0';
	T_EQ_INT(fs_atomic_open(&a, t_path(d, name), 0644, err, sizeof(err)),
	    -ENAMETOOLONG);
	tmp_free(d);
}

/* Counts, overlapping patterns, deletion, growth, no match. */
static void
test_replace_basic(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	unsigned long long n = 99;
	struct stat st1, st2;

	t_spit(t_path(d, "f"), "hello world, hello you", 22, 0640);
	T_EQ_INT(replace_s(t_path(d, "f"), "hello", "bye", &n), 0);
	T_EQ_INT(n, 2);
	T_EQ_STR(text(t_path(d, "f")), "bye world, bye you");
	T_EQ_INT(mode_of(t_path(d, "f")), 0640);
	t_spit(t_path(d, "a"), "aaaa", 4, 0644);
	T_EQ_INT(replace_s(t_path(d, "a"), "aa", "b", &n), 0);
	T_EQ_INT(n, 2);
	T_EQ_STR(text(t_path(d, "a")), "bb");
	t_spit(t_path(d, "a"), "aaaaa", 5, 0644);
	T_EQ_INT(replace_s(t_path(d, "a"), "aaa", "X", &n), 0);
	T_EQ_INT(n, 1);
	T_EQ_STR(text(t_path(d, "a")), "Xaa");
	t_spit(t_path(d, "a"), "abababa", 7, 0644);
	T_EQ_INT(replace_s(t_path(d, "a"), "aba", "<>", &n), 0);
	T_EQ_INT(n, 2);
	T_EQ_STR(text(t_path(d, "a")), "<>b<>");
	/* Replacing with nothing; replacing with more. */
	t_spit(t_path(d, "a"), "x-y-z-", 6, 0644);
	T_EQ_INT(replace_s(t_path(d, "a"), "-", "", &n), 0);
	T_EQ_INT(n, 3);
	T_EQ_STR(text(t_path(d, "a")), "xyz");
	T_EQ_INT(replace_s(t_path(d, "a"), "y", "[long]", &n), 0);
	T_EQ_INT(n, 1);
	T_EQ_STR(text(t_path(d, "a")), "x[long]z");
	/* Binary bytes, NUL included. */
	t_spit(t_path(d, "bin"), "a\0b\0a\0b", 7, 0644);
	T_EQ_INT(fs_replace(t_path(d, "bin"), "\0b", 2, "\0\0\0", 3, &n, err,
	    sizeof(err)), 0);
	T_EQ_INT(n, 2);
	/* No match: the very same inode and times, count 0. */
	T_EQ_INT(lstat(t_path(d, "f"), &st1), 0);
	n = 99;
	T_EQ_INT(replace_s(t_path(d, "f"), "absent", "x", &n), 0);
	T_EQ_INT(n, 0);
	T_EQ_INT(lstat(t_path(d, "f"), &st2), 0);
	T_EQ_INT(st2.st_ino, st1.st_ino);
	T_EQ_INT(st2.st_mtim.tv_nsec, st1.st_mtim.tv_nsec);
	T_EQ_INT(st2.st_ctim.tv_nsec, st1.st_ctim.tv_nsec);
	T_EQ_STR(text(t_path(d, "f")), "bye world, bye you");
	/* A pattern longer than the file; an empty file. */
	T_EQ_INT(replace_s(t_path(d, "a"), "much longer than the file", "", &n),
	    0);
	T_EQ_INT(n, 0);
	t_spit(t_path(d, "e"), "", 0, 0644);
	T_EQ_INT(replace_s(t_path(d, "e"), "x", "y", &n), 0);
	T_EQ_INT(n, 0);
	tmp_free(d);
}

/* Errors: missing, directory, fifo, empty pattern; count untouched. */
static void
test_replace_errors(void)
{
	char *d = t_tmpdir(), err[PATH_MAX + 128] = "";
	unsigned long long n = 77;

	T_EQ_INT(replace_s(t_path(d, "none"), "a", "b", &n), -ENOENT);
	T_OK(ino_of(t_path(d, "none")) == 0);
	T_EQ_INT(replace_s(d, "a", "b", &n), -EISDIR);
	T_EQ_INT(mkfifo(t_path(d, "fifo"), 0600), 0);
	T_EQ_INT(replace_s(t_path(d, "fifo"), "a", "b", &n), -EINVAL);
	t_spit(t_path(d, "f"), "abc", 3, 0644);
	T_EQ_INT(fs_replace(t_path(d, "f"), "", 0, "x", 1, &n, err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "old content must not be empty");
	/* The file is looked at first: missing wins over an empty old. */
	T_EQ_INT(fs_replace(t_path(d, "none"), "", 0, "x", 1, &n, err,
	    sizeof(err)), -ENOENT);
	T_EQ_INT(n, 77);
	T_EQ_STR(text(t_path(d, "f")), "abc");
	tmp_free(d);
}

/* Matches straddling each 64 KiB chunk boundary, at every offset. */
static void
test_replace_boundary(void)
{
	static const char pat[] = "NEEDLE";
	char *d = t_tmpdir(), *buf, *want, *got;
	size_t size = 3 * CHUNK + 100, wl, gl;
	unsigned long long n, wn;
	int ok = 1;

	buf = malloc(size);
	for (int shift = -7; shift <= 1; shift++) {
		memset(buf, 'x', size);
		/* One match ending, straddling or starting at each boundary. */
		for (int k = 1; k <= 3; k++)
			memcpy(buf + (size_t)k * CHUNK + shift, pat, 6);
		t_spit(t_path(d, "f"), buf, size, 0644);
		want = ref_replace(buf, size, pat, "pin", &wn, &wl);
		T_EQ_INT(wn, 3);
		n = 0;
		T_EQ_INT(replace_s(t_path(d, "f"), pat, "pin", &n), 0);
		T_EQ_INT(n, 3);
		got = t_slurp(t_path(d, "f"), &gl);
		if (got == NULL || gl != wl || memcmp(got, want, wl) != 0) {
			fprintf(stderr, "  shift %d: content differs\n",
			    shift);
			ok = 0;
		}
		free(got);
		free(want);
	}
	T_OK(ok);
	/* A match that is the last bytes of the file, after a full chunk. */
	memset(buf, 'x', CHUNK);
	memcpy(buf + CHUNK - 3, "END", 3);
	t_spit(t_path(d, "g"), buf, CHUNK, 0644);
	T_EQ_INT(replace_s(t_path(d, "g"), "END", "fin", &n), 0);
	T_EQ_INT(n, 1);
	got = t_slurp(t_path(d, "g"), &gl);
	T_OK(got != NULL && gl == CHUNK && memcmp(got + CHUNK - 3, "fin",
	    3) == 0);
	free(got);
	free(buf);
	tmp_free(d);
}

/* A pattern longer than a chunk, found across chunks. */
static void
test_replace_long_pattern(void)
{
	char *d = t_tmpdir(), *buf, *pat, *got, err[PATH_MAX + 128] = "";
	size_t pl = CHUNK + 1000, size = 4 * CHUNK, gl;
	unsigned long long n;

	buf = malloc(size);
	pat = malloc(pl);
	memset(pat, 'p', pl);
	pat[0] = 'P';
	memset(buf, '.', size);
	memcpy(buf + 100, pat, pl);
	memcpy(buf + 2 * CHUNK + 7, pat, pl);
	t_spit(t_path(d, "f"), buf, size, 0644);
	T_EQ_INT(fs_replace(t_path(d, "f"), pat, pl, "!", 1, &n, err,
	    sizeof(err)), 0);
	T_EQ_INT(n, 2);
	got = t_slurp(t_path(d, "f"), &gl);
	T_EQ_INT(gl, size - 2 * pl + 2);
	T_OK(got != NULL && got[100] == '!' && got[99] == '.' &&
	    got[101] == '.');
	T_OK(got != NULL && got[2 * CHUNK + 7 - pl + 1] == '!');
	free(got);
	free(pat);
	free(buf);
	tmp_free(d);
}

/* 5 MiB against the in-memory reference; mode kept; via a link. */
static void
test_replace_large(void)
{
	char *d = t_tmpdir(), *buf, *want, *got;
	size_t size = 5 << 20, wl, gl;
	unsigned long long n = 0, wn;
	unsigned x = 12345;

	buf = malloc(size);
	for (size_t i = 0; i < size; i++) {
		x = x * 1103515245 + 12345;
		buf[i] = "abc\n"[(x >> 16) & 3];
	}
	t_spit(t_path(d, "big"), buf, size, 0604);
	T_EQ_INT(symlink("big", t_path(d, "lnk")), 0);
	want = ref_replace(buf, size, "abca", "Z", &wn, &wl);
	T_OK(wn > 10000);
	T_EQ_INT(replace_s(t_path(d, "lnk"), "abca", "Z", &n), 0);
	T_EQ_INT(n, wn);
	got = t_slurp(t_path(d, "big"), &gl);
	T_EQ_INT(gl, wl);
	T_OK(got != NULL && gl == wl && memcmp(got, want, wl) == 0);
	T_EQ_INT(mode_of(t_path(d, "big")), 0604);
	T_EQ_INT(mode_of(t_path(d, "lnk")), 0777);
	free(got);
	free(want);
	free(buf);
	tmp_free(d);
}

/*
 * Random files and patterns over a two-letter alphabet, against the
 * reference: many ways for a match to meet a chunk boundary and the carry.
 */
static void
test_replace_random(void)
{
	char *d = t_tmpdir(), *buf, *want, *got, pat[8], rep[8];
	unsigned long long n, wn;
	size_t size, wl, gl;
	unsigned x = 777;
	int bad = 0;

	buf = malloc(3 * CHUNK);
	for (int it = 0; it < 40; it++) {
		x = x * 1103515245 + 12345;
		size = CHUNK - 20 + (x >> 8) % (2 * CHUNK + 40);
		for (size_t i = 0; i < size; i++) {
			x = x * 1103515245 + 12345;
			buf[i] = (x >> 16) % 5 == 0 ? 'b' : 'a';
		}
		x = x * 1103515245 + 12345;
		memset(pat, '\0', sizeof(pat));
		for (size_t i = 0, pl = 1 + (x >> 8) % 6; i < pl; i++) {
			x = x * 1103515245 + 12345;
			pat[i] = (x >> 16) % 3 == 0 ? 'b' : 'a';
		}
		snprintf(rep, sizeof(rep), "%.*s", (int)(x >> 20) % 4, "XYZW");
		t_spit(t_path(d, "r"), buf, size, 0644);
		want = ref_replace(buf, size, pat, rep, &wn, &wl);
		n = 0;
		if (replace_s(t_path(d, "r"), pat, rep, &n) != 0 || n != wn)
			bad++;
		got = t_slurp(t_path(d, "r"), &gl);
		if (got == NULL || gl != wl || memcmp(got, want, wl) != 0) {
			fprintf(stderr, "  size %zu pattern %s: differs\n",
			    size, pat);
			bad++;
		}
		free(got);
		free(want);
	}
	T_EQ_INT(bad, 0);
	free(buf);
	tmp_free(d);
}

/* Number of entries in dir (dot files too, not . and ..). */
static int
entries(const char *dir)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* A writer that dies: its descriptors close with nothing cleaned up. */
static void
crash(struct fs_atomic *a)
{
	close(a->fd);
	close(a->dirfd);
	if (a->jfd >= 0)
		close(a->jfd);
}

/*
 * The journal: a temporary whose record no live writer holds is removed
 * at the next fs_atomic_journal(), with its record; a temporary being
 * written, a file that only looks like ours, and a recorded name that now
 * holds another file are kept.  Commit and abort remove their record.
 */
static void
test_journal(void)
{
	char *d = t_tmpdir(), *run, *jdir, err[PATH_MAX + 128];
	char deadtmp[PATH_MAX], movedtmp[PATH_MAX], fake[PATH_MAX];
	struct fs_atomic dead, moved, live, gone;
	unsigned removed = 99;

	run = strdup(t_path(d, "run"));
	jdir = strdup(t_path(d, "run/" FS_ATOMIC_JOURNAL));
	t_mkdir(d, "files");
	T_EQ_INT(fs_atomic_journal(run, &removed, err, sizeof(err)), 0);
	T_EQ_INT(removed, 0);
	T_EQ_INT(entries(jdir), 0);
	T_EQ_INT(mode_of(jdir), 0700);

	T_EQ_INT(fs_atomic_open(&dead, t_path(d, "files/a"), 0644, err,
	    sizeof(err)), 0);
	T_EQ_INT(fs_atomic_write(&dead, "partial", 7), 0);
	snprintf(deadtmp, sizeof(deadtmp), "%s/files/%s", d, dead.tmp);
	T_EQ_INT(entries(jdir), 1);
	crash(&dead);
	T_OK(access(deadtmp, F_OK) == 0);

	T_EQ_INT(fs_atomic_open(&moved, t_path(d, "files/b"), 0644, err,
	    sizeof(err)), 0);
	snprintf(movedtmp, sizeof(movedtmp), "%s/files/%s", d, moved.tmp);
	crash(&moved);
	/* Someone put another file (another inode) under that name since. */
	t_spit(t_path(d, "files/other"), "other", 5, 0600);
	T_EQ_INT(rename(t_path(d, "files/other"), movedtmp), 0);

	T_EQ_INT(fs_atomic_open(&live, t_path(d, "files/c"), 0644, err,
	    sizeof(err)), 0);
	T_EQ_INT(fs_atomic_write(&live, "live", 4), 0);
	snprintf(fake, sizeof(fake), "%s/files/.d.execd-AbCdEf", d);
	t_spit(fake, "not ours", 8, 0600);
	T_EQ_INT(entries(jdir), 3);

	/* The restart. */
	T_EQ_INT(fs_atomic_journal(run, &removed, err, sizeof(err)), 0);
	T_EQ_INT(removed, 1);
	T_OK(access(deadtmp, F_OK) < 0 && errno == ENOENT);
	T_EQ_STR(text(movedtmp), "other");
	T_EQ_STR(text(fake), "not ours");
	T_EQ_INT(entries(jdir), 1);
	T_EQ_INT(fs_atomic_commit(&live, 0, (uid_t)-1, (gid_t)-1, err,
	    sizeof(err)), 0);
	T_EQ_STR(text(t_path(d, "files/c")), "live");
	T_EQ_INT(entries(jdir), 0);
	T_EQ_INT(fs_atomic_open(&gone, t_path(d, "files/e"), 0644, err,
	    sizeof(err)), 0);
	T_EQ_INT(entries(jdir), 1);
	fs_atomic_abort(&gone);
	T_EQ_INT(entries(jdir), 0);

	/* Off again: nothing is recorded. */
	T_EQ_INT(fs_atomic_journal(NULL, NULL, err, sizeof(err)), 0);
	T_EQ_INT(fs_atomic_open(&gone, t_path(d, "files/f"), 0644, err,
	    sizeof(err)), 0);
	T_EQ_INT(entries(jdir), 0);
	fs_atomic_abort(&gone);
	unlink(movedtmp);
	unlink(fake);
	T_EQ_INT(debris(t_path(d, "files")), 0);
	free(run);
	free(jdir);
	tmp_free(d);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "atomic_commit_new", test_commit_new },
		{ "atomic_commit_existing", test_commit_existing },
		{ "atomic_commit_owner", test_commit_owner },
		{ "atomic_abort", test_abort },
		{ "atomic_symlink", test_symlink },
		{ "atomic_open_refused", test_open_refused },
		{ "replace_basic", test_replace_basic },
		{ "replace_errors", test_replace_errors },
		{ "replace_boundary", test_replace_boundary },
		{ "replace_long_pattern", test_replace_long_pattern },
		{ "replace_large", test_replace_large },
		{ "replace_random", test_replace_random },
		{ "atomic_journal", test_journal },
	};

	umask(022);
	return T_RUN(cases);
}
