/*
 * fs_atomic.c -- temporary file, fsync, rename: whole files or nothing.
 *
 * fs_atomic_open() decides, before a byte is written, which file will be
 * replaced (a symbolic link is followed hop by hop to its final target,
 * so the link itself survives) and with which mode and owner, then makes
 * the temporary with O_EXCL in the same directory so the final rename(2)
 * cannot cross filesystems.  fs_replace() is a streaming search and
 * replace on top: it makes no temporary at all until it meets the first
 * match, then copies the untouched prefix with pread(2).  The one piece
 * of state kept between calls is the journal directory: each temporary's
 * record there is a file of NUL-terminated fields ("execd-tmp 1", device,
 * inode, the temporary's name, its directory), locked by its writer with
 * flock(2) until the temporary is renamed or removed, so a record nobody
 * holds is a dead writer's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs_atomic.h"
#include "fs_ops.h"

#define TMP_SUFFIX	".execd-"
#define TMP_RAND	6	/* random characters after the suffix */
#define TMP_TRIES	100
#define LINK_HOPS	40	/* as the kernel's own limit */
#define REPLACE_CHUNK	(64 * 1024)
#define FLUSH_EVERY	(8 << 20)	/* start writeback every 8 MiB */
#define REC_MAGIC	"execd-tmp 1"
#define REC_PREFIX	"up-"
#define REC_RAND	12
#define REC_MAX		(NAME_MAX + PATH_MAX + 128)
#define REC_YOUNG_S	60	/* an unreadable record may be being written */

static int	jdir = -1;	/* the journal directory, or -1 */

/* Output of fs_replace(): buffered writes into the temporary. */
struct out {
	struct fs_atomic *a;
	char		*buf;
	size_t		 len;
};

static int	errf(char *, size_t, int, const char *, const char *);
static void	atomic_reset(struct fs_atomic *);
static int	target_find(struct fs_atomic *, mode_t, char *, size_t);
static int	tmp_create(struct fs_atomic *, char *, size_t);
static void	tmp_name(char *, size_t, const char *);
static void	rand_chars(char *, size_t);
static bool	tmp_name_ours(const char *);
static void	journal_add(struct fs_atomic *);
static void	journal_drop(struct fs_atomic *);
static int	record_sweep(int, const char *);
static int	owner_apply(struct fs_atomic *, uid_t, gid_t);
static int	out_put(struct out *, const void *, size_t);
static int	out_flush(struct out *);
static int	prefix_copy(int, struct out *, off_t);
static ssize_t	read_full(int, void *, size_t);

/* Message "<what> <path>: <strerror>" and -e. */
static int
errf(char *err, size_t errlen, int e, const char *what, const char *path)
{
	if (errlen > 0)
		snprintf(err, errlen, "%s%s%s: %s", what, *what ? " " : "",
		    path, strerror(e));
	return -e;
}

/* The state that holds nothing. */
static void
atomic_reset(struct fs_atomic *a)
{
	a->fd = -1;
	a->dirfd = -1;
	a->tmp[0] = '\0';
	a->name[0] = '\0';
	a->mode = 0;
	a->uid = (uid_t)-1;
	a->gid = (gid_t)-1;
	a->written = 0;
	a->flushed = 0;
	a->jfd = -1;
	a->jname[0] = '\0';
}

/*
 * Follow a->path to the file to replace, leaving its path in a->path and
 * the mode and owner to give it in a->mode, a->uid, a->gid.
 */
static int
target_find(struct fs_atomic *a, mode_t newmode, char *err, size_t errlen)
{
	char link[PATH_MAX], *slash;
	struct stat st;
	size_t len, dl;
	ssize_t n;
	bool created;
	int hops, rc;

	for (hops = 0;; hops++) {
		len = strlen(a->path);
		if (len == 0 || a->path[len - 1] == '/')
			return errf(err, errlen, EISDIR, "", a->path);
		if (lstat(a->path, &st) < 0) {
			if (errno != ENOENT)
				return errf(err, errlen, errno, "lstat",
				    a->path);
			break;
		}
		if (S_ISDIR(st.st_mode))
			return errf(err, errlen, EISDIR, "", a->path);
		if (S_ISREG(st.st_mode)) {
			a->mode = st.st_mode & 07777;
			a->uid = st.st_uid;
			a->gid = st.st_gid;
			return 0;
		}
		if (!S_ISLNK(st.st_mode)) {
			if (errlen > 0)
				snprintf(err, errlen, "%s: not a regular file",
				    a->path);
			return -EINVAL;
		}
		if (hops >= LINK_HOPS)
			return errf(err, errlen, ELOOP, "", a->path);
		if ((n = readlink(a->path, link, sizeof(link))) < 0)
			return errf(err, errlen, errno, "readlink", a->path);
		if (n == 0 || (size_t)n >= sizeof(link))
			return errf(err, errlen, n == 0 ? ENOENT :
			    ENAMETOOLONG, "readlink", a->path);
		link[n] = '\0';
		/* A relative target is relative to the link's directory. */
		slash = strrchr(a->path, '/');
		dl = link[0] == '/' || slash == NULL ? 0 :
		    (size_t)(slash - a->path) + 1;
		if (dl + (size_t)n >= sizeof(a->path))
			return errf(err, errlen, ENAMETOOLONG, "", a->path);
		memcpy(a->path + dl, link, (size_t)n + 1);
	}
	/* Not there: a new file, whose directory only path itself creates. */
	a->mode = newmode;
	a->uid = (uid_t)-1;
	a->gid = (gid_t)-1;
	if (hops > 0 || (slash = strrchr(a->path, '/')) == NULL ||
	    slash == a->path)
		return 0;
	*slash = '\0';
	rc = fs_mkdirs(a->path, 0, (uid_t)-1, (gid_t)-1, &created, err,
	    errlen);
	*slash = '/';
	return rc;
}

/* n random letters and digits, then a NUL (x holds n + 1). */
static void
rand_chars(char *x, size_t n)
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[16];
	struct timespec ts;

	if (n > sizeof(r))
		n = sizeof(r);
	if (getrandom(r, n, GRND_NONBLOCK) != (ssize_t)n) {
		/* No entropy yet: O_EXCL keeps us safe, retries do the rest. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (size_t i = 0; i < n; i++)
			r[i] = (unsigned char)(ts.tv_nsec >> (i * 5)) ^
			    (unsigned char)getpid() ^ (unsigned char)(i * 37);
	}
	for (size_t i = 0; i < n; i++)
		x[i] = set[r[i] % (sizeof(set) - 1)];
	x[n] = '\0';
}

/* ".<base>.execd-XXXXXX" with base cut to fit NAME_MAX, random X. */
static void
tmp_name(char *out, size_t outlen, const char *base)
{
	char x[TMP_RAND + 1];
	int bl = NAME_MAX - 1 - (int)(sizeof(TMP_SUFFIX) - 1) - TMP_RAND;

	rand_chars(x, TMP_RAND);
	snprintf(out, outlen, ".%.*s%s%s", bl, base, TMP_SUFFIX, x);
}

/* Whether name has the shape tmp_name() gives. */
static bool
tmp_name_ours(const char *name)
{
	size_t len = strlen(name), sl = sizeof(TMP_SUFFIX) - 1;

	if (len < 1 + sl + TMP_RAND || name[0] != '.' ||
	    strchr(name, '/') != NULL ||
	    memcmp(name + len - TMP_RAND - sl, TMP_SUFFIX, sl) != 0)
		return false;
	for (size_t i = len - TMP_RAND; i < len; i++)
		if (!((name[i] >= 'A' && name[i] <= 'Z') ||
		    (name[i] >= 'a' && name[i] <= 'z') ||
		    (name[i] >= '0' && name[i] <= '9')))
			return false;
	return true;
}

/*
 * Record the new temporary in the journal, if there is one and its path
 * is absolute, and keep the record locked.  Best effort: on any failure
 * the temporary simply goes unrecorded.
 */
static void
journal_add(struct fs_atomic *a)
{
	char rec[REC_MAX], name[sizeof(a->jname)], x[REC_RAND + 1];
	const char *slash = strrchr(a->path, '/');
	struct stat st;
	size_t len, dl;
	int fd = -1, n;

	if (jdir < 0 || a->path[0] != '/' || slash == NULL ||
	    fstat(a->fd, &st) < 0)
		return;
	dl = slash == a->path ? 1 : (size_t)(slash - a->path);
	n = snprintf(rec, sizeof(rec), "%s%c%llu%c%llu%c%s%c", REC_MAGIC, 0,
	    (unsigned long long)st.st_dev, 0, (unsigned long long)st.st_ino,
	    0, a->tmp, 0);
	if (n < 0 || (size_t)n + dl + 1 > sizeof(rec))
		return;
	len = (size_t)n;
	memcpy(rec + len, a->path, dl);
	len += dl;
	rec[len++] = '\0';
	for (int i = 0; i < TMP_TRIES && fd < 0; i++) {
		rand_chars(x, REC_RAND);
		snprintf(name, sizeof(name), "%s%s", REC_PREFIX, x);
		fd = openat(jdir, name, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0 && errno != EEXIST)
			return;
	}
	if (fd < 0)
		return;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 ||
	    write(fd, rec, len) != (ssize_t)len) {
		unlinkat(jdir, name, 0);
		close(fd);
		return;
	}
	a->jfd = fd;
	memcpy(a->jname, name, sizeof(name));
}

/* The temporary is renamed or removed: remove its record, then unlock. */
static void
journal_drop(struct fs_atomic *a)
{
	if (a->jfd < 0)
		return;
	if (jdir >= 0)
		unlinkat(jdir, a->jname, 0);
	close(a->jfd);
	a->jfd = -1;
	a->jname[0] = '\0';
}

/*
 * One record of the journal (dfd) at start-up: held by a live writer, it
 * stays; else it goes, with the temporary it names if that is still the
 * file recorded.  1 if a temporary was removed, else 0.
 */
static int
record_sweep(int dfd, const char *name)
{
	char buf[REC_MAX + 1], *f[5], *p, *end;
	unsigned long long dev, ino;
	struct stat st, ts;
	ssize_t n;
	size_t nf = 0;
	int fd, td, rc = 0;

	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    flock(fd, LOCK_EX | LOCK_NB) < 0)
		goto out;		/* a live writer holds it */
	n = read(fd, buf, REC_MAX);
	/* 1. Five NUL-terminated fields, nothing after them. */
	for (p = buf; n > 0 && p < buf + n && nf < 5; p = end + 1) {
		if ((end = memchr(p, '\0', (size_t)(buf + n - p))) == NULL)
			break;
		f[nf++] = p;
	}
	if (nf != 5 || p != buf + n || strcmp(f[0], REC_MAGIC) != 0) {
		/* Half-written, maybe by a writer about to lock it. */
		if (time(NULL) - st.st_mtime < REC_YOUNG_S)
			goto out;
		goto drop;
	}
	/* 2. The temporary, if it is still the very file recorded. */
	dev = strtoull(f[1], &end, 10);
	ino = strtoull(f[2], &end, 10);
	if (!tmp_name_ours(f[3]) || f[4][0] != '/')
		goto drop;
	if ((td = open(f[4], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		goto drop;
	if (fstatat(td, f[3], &ts, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(ts.st_mode) && (unsigned long long)ts.st_dev == dev &&
	    (unsigned long long)ts.st_ino == ino && unlinkat(td, f[3], 0) == 0)
		rc = 1;
	close(td);
drop:
	unlinkat(dfd, name, 0);
out:
	close(fd);
	return rc;
}

/* See fs_atomic.h. */
int
fs_atomic_journal(const char *dir, unsigned *removed, char *err,
    size_t errlen)
{
	char path[PATH_MAX];
	struct dirent *de;
	unsigned n = 0;
	bool created;
	DIR *d;
	int dfd, rc;

	if (removed != NULL)
		*removed = 0;
	if (jdir >= 0)
		close(jdir);
	jdir = -1;
	if (dir == NULL)
		return 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
	    FS_ATOMIC_JOURNAL) >= sizeof(path))
		return errf(err, errlen, ENAMETOOLONG, "", dir);
	if ((rc = fs_mkdirs(path, 0700, (uid_t)-1, (gid_t)-1, &created, err,
	    errlen)) < 0)
		return rc;
	if ((dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
	    O_NOFOLLOW)) < 0)
		return errf(err, errlen, errno, "open", path);
	if ((rc = fcntl(dfd, F_DUPFD_CLOEXEC, 0)) < 0 ||
	    (d = fdopendir(rc)) == NULL) {
		rc = errf(err, errlen, errno, "read", path);
		close(dfd);
		return rc;
	}
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, REC_PREFIX, sizeof(REC_PREFIX) - 1) ==
		    0)
			n += (unsigned)record_sweep(dfd, de->d_name);
	closedir(d);
	jdir = dfd;
	if (removed != NULL)
		*removed = n;
	return 0;
}

/* Open a->path's directory and make the temporary in it. */
static int
tmp_create(struct fs_atomic *a, char *err, size_t errlen)
{
	char *slash = strrchr(a->path, '/');
	const char *base = slash != NULL ? slash + 1 : a->path;
	int e;

	if (strlen(base) > NAME_MAX)
		return errf(err, errlen, ENAMETOOLONG, "", a->path);
	memcpy(a->name, base, strlen(base) + 1);
	if (slash == NULL)
		a->dirfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else if (slash == a->path)
		a->dirfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else {
		*slash = '\0';
		a->dirfd = open(a->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		e = errno;
		*slash = '/';
		errno = e;
	}
	if (a->dirfd < 0)
		return errf(err, errlen, errno, "open directory of", a->path);
	for (int i = 0; i < TMP_TRIES; i++) {
		tmp_name(a->tmp, sizeof(a->tmp), a->name);
		a->fd = openat(a->dirfd, a->tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC | O_NOFOLLOW, 0600);
		if (a->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	e = errno;
	a->tmp[0] = '\0';
	return errf(err, errlen, e, "create temporary file beside",
	    a->path);
}

/* See fs_atomic.h. */
int
fs_atomic_open(struct fs_atomic *a, const char *path, mode_t newmode,
    char *err, size_t errlen)
{
	size_t len = strlen(path);
	int rc;

	atomic_reset(a);
	if (len == 0)
		return errf(err, errlen, ENOENT, "", path);
	if (len >= sizeof(a->path))
		return errf(err, errlen, ENAMETOOLONG, "", path);
	memcpy(a->path, path, len + 1);
	if ((rc = target_find(a, newmode, err, errlen)) < 0 ||
	    (rc = tmp_create(a, err, errlen)) < 0) {
		fs_atomic_abort(a);
		atomic_reset(a);
		return rc;
	}
	journal_add(a);
	return 0;
}

/* Write everything; see fs_atomic.h. */
int
fs_atomic_write(struct fs_atomic *a, const void *p, size_t n)
{
	const char *s = p;
	ssize_t w;

	if (a->fd < 0)
		return -EBADF;
	while (n > 0) {
		if ((w = write(a->fd, s, n)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		s += w;
		n -= (size_t)w;
		a->written += w;
	}
	/*
	 * Start writeback of each full stretch as it is written, without
	 * waiting for it, so that the fsync at commit finds little left to
	 * do: a big upload then ends with a short sync, not a long stall.
	 */
	if (a->written - a->flushed >= FLUSH_EVERY) {
		(void)sync_file_range(a->fd, a->flushed, a->written - a->flushed,
		    SYNC_FILE_RANGE_WRITE);
		a->flushed = a->written;
	}
	return 0;
}

/*
 * Give the temporary the owner asked for (uid, gid) or, where they are -1,
 * the one kept from the old file.  Only a failure for an id asked for is
 * an error: keeping the old owner is best effort for an unprivileged
 * daemon.
 */
static int
owner_apply(struct fs_atomic *a, uid_t uid, gid_t gid)
{
	uid_t tu = uid != (uid_t)-1 ? uid : a->uid;
	gid_t tg = gid != (gid_t)-1 ? gid : a->gid;
	struct stat st;

	if (fstat(a->fd, &st) < 0)
		return -errno;
	if ((tu == (uid_t)-1 || tu == st.st_uid) &&
	    (tg == (gid_t)-1 || tg == st.st_gid))
		return 0;
	if (fchown(a->fd, tu, tg) == 0)
		return 0;
	if (uid != (uid_t)-1 || gid != (gid_t)-1) {
		/* Retry with what was asked for alone. */
		if (fchown(a->fd, uid, gid) < 0)
			return -errno;
		return 0;
	}
	/* Only kept ids, and we may not give both: the group, at least? */
	if (tg != (gid_t)-1 && fchown(a->fd, (uid_t)-1, tg) < 0)
		return 0;	/* no: the new file stays ours */
	return 0;
}

/* See fs_atomic.h. */
int
fs_atomic_commit(struct fs_atomic *a, mode_t mode, uid_t uid, gid_t gid,
    char *err, size_t errlen)
{
	int rc, fd;

	if (a->fd < 0 || a->dirfd < 0 || a->tmp[0] == '\0')
		return errf(err, errlen, EBADF, "commit", a->path);
	/* 1. Data on disk, then owner, then mode (chown may clear suid). */
	if (fsync(a->fd) < 0) {
		rc = errf(err, errlen, errno, "fsync", a->path);
		goto fail;
	}
	if ((rc = owner_apply(a, uid, gid)) < 0) {
		rc = errf(err, errlen, -rc, "chown", a->path);
		goto fail;
	}
	if (fchmod(a->fd, mode != 0 ? mode : a->mode) < 0) {
		rc = errf(err, errlen, errno, "chmod", a->path);
		goto fail;
	}
	fd = a->fd;
	a->fd = -1;
	if (close(fd) < 0) {
		rc = errf(err, errlen, errno, "close", a->path);
		goto fail;
	}
	/* 2. In place in one step; the directory entry made durable. */
	if (renameat(a->dirfd, a->tmp, a->dirfd, a->name) < 0) {
		rc = errf(err, errlen, errno, "rename to", a->path);
		goto fail;
	}
	a->tmp[0] = '\0';
	(void)fsync(a->dirfd);
	fs_atomic_abort(a);
	return 0;
fail:
	fs_atomic_abort(a);
	return rc;
}

/* See fs_atomic.h. */
void
fs_atomic_abort(struct fs_atomic *a)
{
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
	if (a->tmp[0] != '\0' && a->dirfd >= 0)
		unlinkat(a->dirfd, a->tmp, 0);
	a->tmp[0] = '\0';
	if (a->dirfd >= 0)
		close(a->dirfd);
	a->dirfd = -1;
	/* Last: the record outlives the temporary, never the other way. */
	journal_drop(a);
}

/* Write out the buffered bytes. 0 or -errno. */
static int
out_flush(struct out *o)
{
	int rc;

	if (o->len == 0)
		return 0;
	rc = fs_atomic_write(o->a, o->buf, o->len);
	o->len = 0;
	return rc;
}

/* Buffer n bytes for the temporary (large runs go straight through). */
static int
out_put(struct out *o, const void *p, size_t n)
{
	int rc;

	if (n == 0)
		return 0;
	if (o->len + n > REPLACE_CHUNK && (rc = out_flush(o)) < 0)
		return rc;
	if (n >= REPLACE_CHUNK)
		return fs_atomic_write(o->a, p, n);
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	return 0;
}

/* Copy bytes [0, upto) of in to the output. 0 or -errno. */
static int
prefix_copy(int in, struct out *o, off_t upto)
{
	off_t off = 0;
	ssize_t r;
	size_t want;
	int rc;

	if ((rc = out_flush(o)) < 0)
		return rc;
	while (off < upto) {
		want = upto - off < REPLACE_CHUNK ? (size_t)(upto - off) :
		    REPLACE_CHUNK;
		if ((r = pread(in, o->buf, want, off)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;	/* shrunk under us */
		if ((rc = fs_atomic_write(o->a, o->buf, (size_t)r)) < 0)
			return rc;
		off += r;
	}
	return 0;
}

/* read() until n bytes or end of file. Bytes read, or -errno. */
static ssize_t
read_full(int fd, void *p, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		if ((r = read(fd, (char *)p + got, n - got)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Streaming search and replace; see fs_atomic.h. */
int
fs_replace(const char *path, const char *old, size_t oldlen,
    const char *new_, size_t newlen, unsigned long long *count, char *err,
    size_t errlen)
{
	struct fs_atomic a;
	struct out o = { .a = &a };
	struct stat st;
	unsigned long long n = 0;
	const char *m;
	char *buf = NULL;
	size_t have = 0, pos, keep, off;
	off_t base = 0;
	ssize_t r;
	bool opened = false, eof = false;
	int in, rc;

	atomic_reset(&a);
	/* O_NONBLOCK: opening a fifo must not hang before we refuse it. */
	if ((in = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK |
	    O_NOCTTY)) < 0)
		return errf(err, errlen, errno, "open", path);
	if (fstat(in, &st) < 0) {
		rc = errf(err, errlen, errno, "stat", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? errf(err, errlen, EISDIR, "", path) :
		    -EINVAL;
		if (rc == -EINVAL && errlen > 0)
			snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	/* Checked after the file, as upstream: a missing file is 404. */
	if (oldlen == 0) {
		if (errlen > 0)
			snprintf(err, errlen, "old content must not be empty");
		rc = -EINVAL;
		goto out;
	}
	if (oldlen > SIZE_MAX - 2 * REPLACE_CHUNK) {
		rc = -ENOMEM;
		goto out;
	}
	if ((buf = malloc(REPLACE_CHUNK + oldlen - 1)) == NULL ||
	    (o.buf = malloc(REPLACE_CHUNK)) == NULL) {
		rc = errf(err, errlen, ENOMEM, "replace in", path);
		goto out;
	}
	while (!eof) {
		/* 1. Top up: the carried tail, then one chunk. */
		if ((r = read_full(in, buf + have, REPLACE_CHUNK)) < 0) {
			rc = errf(err, errlen, (int)-r, "read", path);
			goto out;
		}
		eof = r < REPLACE_CHUNK;
		have += (size_t)r;
		/* 2. Every match, leftmost first, none overlapping. */
		for (pos = 0; (m = memmem(buf + pos, have - pos, old,
		    oldlen)) != NULL; pos = off + oldlen) {
			off = (size_t)(m - buf);
			if (!opened) {
				rc = fs_atomic_open(&a, path, st.st_mode &
				    07777, err, errlen);
				if (rc < 0)
					goto out;
				opened = true;
				rc = prefix_copy(in, &o, base + (off_t)off);
			} else
				rc = out_put(&o, buf + pos, off - pos);
			if (rc < 0 || (rc = out_put(&o, new_, newlen)) < 0)
				goto wfail;
			n++;
		}
		/* 3. Keep what could start a match; pass the rest on. */
		keep = have - pos;
		if (eof)
			keep = 0;
		else if (keep > oldlen - 1)
			keep = oldlen - 1;
		if (opened && (rc = out_put(&o, buf + pos,
		    have - pos - keep)) < 0)
			goto wfail;
		memmove(buf, buf + have - keep, keep);
		base += (off_t)(have - keep);
		have = keep;
	}
	if (opened) {
		if ((rc = out_flush(&o)) < 0)
			goto wfail;
		if ((rc = fs_atomic_commit(&a, 0, (uid_t)-1, (gid_t)-1, err,
		    errlen)) < 0)
			goto out;
	}
	*count = n;
	rc = 0;
	goto out;
wfail:
	rc = errf(err, errlen, -rc, "write temporary file for", path);
out:
	if (opened)
		fs_atomic_abort(&a);
	free(o.buf);
	free(buf);
	close(in);
	return rc;
}
