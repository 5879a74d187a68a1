/*
 * ckpt.c -- workspace checkpoints (ckpt.h).
 *
 * The store holds one pack file per checkpoint, named by its id, with
 * the bytes of each regular file from a block boundary (its entry has
 * the offset and length): the manifest
 * (paths, types, modes, owners, times, link targets, inodes, ctimes) is
 * in memory only, so a restart forgets checkpoints and ckpt_init empties
 * the store.  Entries are kept in pre-order, names sorted, so that a
 * parent always comes before its children; an index sorted by path finds
 * the entry of a live file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "../../fs/fs_ops.h"
#include "../../fs/fs_path.h"
#include "../../fs/fs_tree.h"
#include "../core/xmalloc.h"
#include "ckpt.h"

struct ent {
	char		*rel;		/* "" for the root */
	char		*link;		/* a symbolic link's target */
	mode_t		 mode;		/* type and permissions */
	uid_t		 uid;
	gid_t		 gid;
	dev_t		 dev;		/* the live inode's, to know it again */
	ino_t		 ino;
	dev_t		 rdev;		/* device nodes */
	struct timespec	 ctim;
	struct timespec	 atim, mtim;
	uint64_t	 off, len;	/* a regular file's bytes in the pack */
	bool		 recent;	/* ctime too close to trust */
	bool		 keep;		/* restore: found unchanged */
};

struct ckpt {
	struct ckpt_info info;
	char		*store;		/* this checkpoint's pack file */
	int		 pack;		/* open while it is taken */
	uint64_t	 packlen;
	struct ent	*ents;		/* pre-order */
	size_t		 n, cap;
	struct ent	**byname;	/* sorted by rel */
};

static pthread_mutex_t	 mtx = PTHREAD_MUTEX_INITIALIZER;
static char		*store_dir;
static dev_t		 store_dev;	/* never recorded nor pruned */
static ino_t		 store_ino;
static struct ckpt	*ckpts[CKPT_MAX];
static size_t		 nckpts;

static struct ckpt	*find(const char *);
static void		 ckpt_free(struct ckpt *);
static int		 record(struct ckpt *, const char *, const char *,
			    const struct stat *, char *, size_t);
static int		 copy_range(int, uint64_t, int, uint64_t, uint64_t,
			    bool, uint64_t *);
static bool		 is_recent(const struct timespec *);
static int		 by_rel(const void *, const void *);
static struct ent	*lookup(struct ckpt *, const char *);
static int		 prune(struct ckpt *, char *, size_t, size_t,
			    struct ckpt_counts *, char *, size_t);
static int		 rebuild(struct ckpt *, size_t, const char *,
			    struct ckpt_counts *, char *, size_t);
static int		 settle_dir(struct ent *, const char *, bool,
			    struct ckpt_counts *, char *, size_t);
static int		 remove_any(const char *, char *, size_t);
static bool		 same(struct ckpt *, size_t, const char *,
			    const struct stat *);
static int		 join(char *, size_t, const char *, const char *);

/* The checkpoint named id, or NULL; mtx held. */
static struct ckpt *
find(const char *id)
{
	size_t i;

	for (i = 0; i < nckpts; i++)
		if (strcmp(ckpts[i]->info.id, id) == 0)
			return ckpts[i];
	return NULL;
}

static void
ckpt_free(struct ckpt *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < c->n; i++) {
		free(c->ents[i].rel);
		free(c->ents[i].link);
	}
	free(c->ents);
	free(c->byname);
	free(c->store);
	free(c);
}

/* root + "/" + rel into buf (rel "" gives root); 0 or -ENAMETOOLONG. */
static int
join(char *buf, size_t len, const char *root, const char *rel)
{
	int n;

	if (rel[0] == '\0')
		n = snprintf(buf, len, "%s", root);
	else
		n = snprintf(buf, len, "%s/%s", root, rel);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* See ckpt.h. */
int
ckpt_init(const char *dir, char *err, size_t errlen)
{
	char msg[CKPT_ERRLEN];
	DIR *d;
	struct dirent *de;
	char p[PATH_MAX];
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	if ((d = opendir(dir)) == NULL) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	/*
	 * Checkpoints live in memory: the packs a past run left are garbage.
	 * Only packs (named by an id): the directory is the operator's.
	 */
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != CKPT_ID_LEN ||
		    strspn(de->d_name, "0123456789abcdef") != CKPT_ID_LEN)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		(void)fs_tree_remove(p, msg, sizeof(msg));
	}
	closedir(d);
	if (stat(dir, &st) < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	store_dev = st.st_dev;
	store_ino = st.st_ino;
	free(store_dir);
	store_dir = xstrdup(dir);
	return 0;
}

/* See ckpt.h. */
void
ckpt_shutdown(void)
{
	pthread_mutex_lock(&mtx);
	while (nckpts > 0) {
		struct ckpt *c = ckpts[--nckpts];

		unlink(c->store);
		ckpt_free(c);
	}
	free(store_dir);
	store_dir = NULL;
	pthread_mutex_unlock(&mtx);
}

/* Whether a ctime is so close to now that a later write may share it. */
static bool
is_recent(const struct timespec *t)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_REALTIME, &now);
	ms = (long long)(now.tv_sec - t->tv_sec) * 1000 +
	    (now.tv_nsec - t->tv_nsec) / 1000000;
	return ms < CKPT_RECENT_MS;
}

#define BLK	4096	/* where each file starts in a pack */

static uint64_t
round_up(uint64_t n)
{
	return (n + BLK - 1) / BLK * BLK;
}

/*
 * len bytes of in from ioff to out at ooff (to_eof: all of in from ioff,
 * *done set to how many): a reflink (FICLONERANGE) where the filesystem
 * makes one, else copy_file_range, else reads and writes.  Offsets are
 * multiples of BLK; a reflink of a range not ending at in's end is taken
 * rounded up and out cut back to ooff + len.
 */
static int
copy_range(int in, uint64_t ioff, int out, uint64_t ooff, uint64_t len,
    bool to_eof, uint64_t *done)
{
	struct file_clone_range r = { .src_fd = in, .src_offset = ioff,
	    .src_length = to_eof ? 0 : round_up(len), .dest_offset = ooff };
	loff_t io = (loff_t)ioff, oo = (loff_t)ooff;
	uint64_t left = to_eof ? UINT64_MAX : len, got = 0;
	char buf[65536];
	bool range = true;
	struct stat st;
	ssize_t n, w;

	if (ioctl(out, FICLONERANGE, &r) == 0) {
		if (to_eof) {
			if (fstat(in, &st) < 0)
				return -errno;
			*done = (uint64_t)st.st_size - ioff;
			return 0;
		}
		if (ftruncate(out, (off_t)(ooff + len)) < 0)
			return -errno;
		*done = len;
		return 0;
	}
	while (left > 0) {
		size_t want = left > (1u << 30) ? (1u << 30) : (size_t)left;

		if (range) {
			n = copy_file_range(in, &io, out, &oo, want, 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL ||
			    errno == ENOSYS || errno == EOPNOTSUPP)) {
				range = false;
				continue;
			}
		} else {
			if (want > sizeof(buf))
				want = sizeof(buf);
			if ((n = pread(in, buf, want, io)) > 0) {
				for (ssize_t off = 0; off < n; off += w)
					if ((w = pwrite(out, buf + off,
					    (size_t)(n - off), oo + off)) < 0)
						return -errno;
				io += n;
				oo += n;
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		left -= (uint64_t)n;
		got += (uint64_t)n;
	}
	if (!to_eof && got != len)
		return -EIO;	/* the pack is shorter than its manifest */
	*done = got;
	return 0;
}

/* One entry into c's manifest (and its bytes into the store). */
static int
record(struct ckpt *c, const char *abs, const char *rel, const struct stat *st,
    char *err, size_t errlen)
{
	struct ent *e;
	char buf[PATH_MAX];
	ssize_t n;
	int fd, rc;

	if (c->n >= CKPT_MAX_ENTRIES) {
		snprintf(err, errlen, "the tree has more than %d entries",
		    CKPT_MAX_ENTRIES);
		return -EFBIG;
	}
	if (c->n == c->cap) {
		c->cap = c->cap == 0 ? 256 : c->cap * 2;
		c->ents = xreallocarray(c->ents, c->cap, sizeof(*c->ents));
	}
	e = &c->ents[c->n];
	memset(e, 0, sizeof(*e));
	e->mode = st->st_mode;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->rdev = st->st_rdev;
	e->ctim = st->st_ctim;
	e->atim = st->st_atim;
	e->mtim = st->st_mtim;
	if (S_ISLNK(st->st_mode)) {
		if ((n = readlink(abs, buf, sizeof(buf) - 1)) < 0) {
			rc = -errno;
			snprintf(err, errlen, "error reading link %s: %s", abs,
			    strerror(errno));
			return rc;
		}
		buf[n] = '\0';
		e->link = xstrdup(buf);
	} else if (S_ISREG(st->st_mode)) {
		if ((fd = open(abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			rc = -errno;
			snprintf(err, errlen, "error reading %s: %s", abs,
			    strerror(errno));
			return rc;
		}
		e->off = round_up(c->packlen);
		rc = copy_range(fd, 0, c->pack, e->off, 0, true, &e->len);
		close(fd);
		if (rc < 0) {
			snprintf(err, errlen, "error copying %s: %s", abs,
			    strerror(-rc));
			return rc;
		}
		c->packlen = e->off + e->len;
		c->info.bytes += e->len;
	}
	/* Checked after the copy: a write during it may share its tick. */
	e->recent = is_recent(&e->ctim);
	e->rel = xstrdup(rel);
	c->n++;
	if (S_ISDIR(st->st_mode)) {
		if (rel[0] != '\0')
			c->info.dirs++;
	} else {
		c->info.files++;
	}
	return 0;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * See ckpt.h: every entry under the directory abs (rel under the root;
 * both buffers of their size, extended and restored here) given to fn,
 * pre-order, children in name order.
 */
int
ckpt_walk(char *abs, size_t alen, char *rel, size_t rlen, ckpt_walk_fn *fn,
    void *arg)
{
	size_t al = strlen(abs), rl = strlen(rel), nn = 0, cap = 0, i;
	char **names = NULL;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = 0;

	if ((d = opendir(abs)) == NULL)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (nn == cap) {
			cap = cap == 0 ? 16 : cap * 2;
			names = xreallocarray(names, cap, sizeof(*names));
		}
		names[nn++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (nn > 0)	/* names is NULL then */
		qsort(names, nn, sizeof(*names), by_name);
	for (i = 0; i < nn && rc == 0; i++) {
		if ((size_t)snprintf(abs + al, alen - al, "/%s", names[i]) >=
		    alen - al || (size_t)snprintf(rel + rl, rlen - rl, "%s%s",
		    rl > 0 ? "/" : "", names[i]) >= rlen - rl) {
			rc = -ENAMETOOLONG;
			break;
		}
		if (lstat(abs, &st) < 0) {
			if (errno != ENOENT)
				rc = -errno;
			continue;
		}
		if ((rc = fn(abs, rel, &st, arg)) < 0)
			break;
		if (rc == 0 && S_ISDIR(st.st_mode))
			rc = ckpt_walk(abs, alen, rel, rlen, fn, arg);
		else
			rc = 0;
	}
	abs[al] = '\0';
	rel[rl] = '\0';
	for (i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* ckpt_walk's fn of a checkpoint: sockets and the store left out. */
static int
take_one(const char *abs, const char *rel, const struct stat *st, void *arg)
{
	if (S_ISSOCK(st->st_mode) || (st->st_dev == store_dev &&
	    st->st_ino == store_ino))
		return 1;
	return record(arg, abs, rel, st, NULL, 0);
}

static int
by_rel(const void *a, const void *b)
{
	return strcmp((*(struct ent *const *)a)->rel,
	    (*(struct ent *const *)b)->rel);
}

/* The entry of path rel, or NULL. */
static struct ent *
lookup(struct ckpt *c, const char *rel)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = strcmp(rel, c->byname[mid]->rel);

		if (d == 0)
			return c->byname[mid];
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* A new id: random hex digits. */
static void
new_id(char *id)
{
	unsigned char b[CKPT_ID_LEN / 2];
	size_t i;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		for (i = 0; i < sizeof(b); i++)
			b[i] = (unsigned char)((t.tv_nsec >> (i * 3)) ^
			    (t.tv_sec >> i) ^ (long)getpid() ^ (long)nckpts);
	}
	for (i = 0; i < sizeof(b); i++)
		sprintf(id + 2 * i, "%02x", b[i]);
}

/* See ckpt.h. */
int
ckpt_take(const char *path, struct ckpt_info *out, char *err, size_t errlen)
{
	char abs[PATH_MAX], rel[PATH_MAX], msg[CKPT_ERRLEN];
	struct ckpt *c = NULL;
	struct stat st;
	size_t i;
	int rc;

	pthread_mutex_lock(&mtx);
	if (store_dir == NULL) {
		snprintf(err, errlen, "no checkpoint store");
		rc = -ENOSYS;
		goto out;
	}
	if (lstat(path, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "error checkpointing %s: %s", path,
		    strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "error checkpointing %s: not a "
		    "directory", path);
		rc = -ENOTDIR;
		goto out;
	}
	if (nckpts >= CKPT_MAX) {
		snprintf(err, errlen, "the checkpoint store is full (%d "
		    "checkpoints): delete one first", CKPT_MAX);
		rc = -ENOSPC;
		goto out;
	}
	c = xcalloc(1, sizeof(*c));
	do
		new_id(c->info.id);
	while (find(c->info.id) != NULL);
	snprintf(c->info.path, sizeof(c->info.path), "%s", path);
	c->info.created = (int64_t)time(NULL);
	c->store = xasprintf("%s/%s", store_dir, c->info.id);
	if ((c->pack = open(c->store, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "error making %s: %s", c->store,
		    strerror(errno));
		free(c->store);
		c->store = NULL;
		goto out;
	}
	snprintf(abs, sizeof(abs), "%s", path);
	rel[0] = '\0';
	msg[0] = '\0';
	if ((rc = record(c, abs, rel, &st, msg, sizeof(msg))) == 0)
		rc = ckpt_walk(abs, sizeof(abs), rel, sizeof(rel),
		    take_one, c);
	if (rc < 0) {
		if (rc == -ENOSPC || rc == -EDQUOT) {
			rc = -ENOSPC;
			snprintf(err, errlen, "the checkpoint store's "
			    "filesystem is full");
		} else if (rc == -EFBIG) {
			snprintf(err, errlen, "error checkpointing %s: more "
			    "than %d entries", path, CKPT_MAX_ENTRIES);
		} else {
			snprintf(err, errlen, "error checkpointing %s: %s",
			    path, msg[0] != '\0' ? msg : strerror(-rc));
		}
		close(c->pack);
		unlink(c->store);
		goto out;
	}
	/* Whole blocks, so that a reflink of the last file is one too. */
	rc = ftruncate(c->pack, (off_t)round_up(c->packlen));
	if (close(c->pack) < 0)
		rc = -1;
	c->pack = -1;
	if (rc < 0) {
		rc = errno == ENOSPC || errno == EDQUOT ? -ENOSPC : -errno;
		snprintf(err, errlen, "error writing %s: %s", c->store,
		    strerror(errno));
		unlink(c->store);
		goto out;
	}
	c->byname = xreallocarray(NULL, c->n, sizeof(*c->byname));
	for (i = 0; i < c->n; i++)
		c->byname[i] = &c->ents[i];
	qsort(c->byname, c->n, sizeof(*c->byname), by_rel);
	ckpts[nckpts++] = c;
	*out = c->info;
	c = NULL;
	rc = 0;
out:
	ckpt_free(c);
	pthread_mutex_unlock(&mtx);
	return rc;
}

/* Remove path, whatever it is (a tree: all of it). */
static int
remove_any(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int tries, rc = 0;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	/* A process writing into it may add entries as it goes. */
	for (tries = 0; tries < 5; tries++)
		if ((rc = fs_tree_remove(path, err, errlen)) == 0)
			break;
	return rc;
}

/*
 * The live directory abs (entry index di's) pruned: every child the
 * manifest does not name, or names with another type, removed; every
 * non-directory unchanged since marked keep; subdirectories walked.
 */
static int
prune(struct ckpt *c, char *abs, size_t alen, size_t di,
    struct ckpt_counts *cnt, char *err, size_t errlen)
{
	const char *prel = c->ents[di].rel;
	size_t al = strlen(abs);
	char rel[PATH_MAX];
	struct dirent *de;
	struct stat st;
	struct ent *e;
	DIR *d;
	int rc = 0;

	if ((d = opendir(abs)) == NULL)
		return errno == ENOENT ? 0 : -errno;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(abs + al, alen - al, "/%s", de->d_name) >=
		    alen - al || (size_t)snprintf(rel, sizeof(rel), "%s%s%s",
		    prel, prel[0] != '\0' ? "/" : "", de->d_name) >=
		    sizeof(rel)) {
			rc = -ENAMETOOLONG;
			break;
		}
		if (lstat(abs, &st) < 0) {
			if (errno != ENOENT)
				rc = -errno;
			continue;
		}
		if (S_ISSOCK(st.st_mode) || (st.st_dev == store_dev &&
		    st.st_ino == store_ino))
			continue;
		e = lookup(c, rel);
		if (e == NULL || (e->mode & S_IFMT) != (st.st_mode & S_IFMT)) {
			if ((rc = remove_any(abs, err, errlen)) < 0)
				break;
			cnt->removed++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			rc = prune(c, abs, alen, (size_t)(e - c->ents), cnt,
			    err, errlen);
			continue;
		}
		if (e->dev == st.st_dev && e->ino == st.st_ino &&
		    e->ctim.tv_sec == st.st_ctim.tv_sec &&
		    e->ctim.tv_nsec == st.st_ctim.tv_nsec &&
		    (!e->recent || same(c, (size_t)(e - c->ents), abs, &st))) {
			e->keep = true;
			cnt->unchanged++;
			if (e->recent && !is_recent(&e->ctim))
				e->recent = false;
		}
	}
	closedir(d);
	abs[al] = '\0';
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "error restoring %s: %s", abs,
		    strerror(-rc));
	return rc;
}

/*
 * Whether the live entry abs (lstat st) is entry i exactly: its mode,
 * owner, mtime, and bytes or link target.  For entries whose ctime
 * cannot be trusted.
 */
static bool
same(struct ckpt *c, size_t i, const char *abs, const struct stat *st)
{
	const struct ent *e = &c->ents[i];
	char a[65536], b[sizeof(a)];
	ssize_t n, m;
	bool eq = false;
	off_t off;
	int fa;

	if (st->st_mode != e->mode || st->st_uid != e->uid ||
	    st->st_gid != e->gid || st->st_mtim.tv_sec != e->mtim.tv_sec ||
	    st->st_mtim.tv_nsec != e->mtim.tv_nsec)
		return false;
	if (S_ISLNK(e->mode)) {
		if ((n = readlink(abs, a, sizeof(a) - 1)) < 0)
			return false;
		a[n] = '\0';
		return strcmp(a, e->link) == 0;
	}
	if (!S_ISREG(e->mode))
		return st->st_rdev == e->rdev;
	if ((uint64_t)st->st_size != e->len)
		return false;
	if ((fa = open(abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return false;
	for (off = e->off;;) {
		n = read(fa, a, sizeof(a));
		m = n > 0 ? pread(c->pack, b, (size_t)n, off) : 0;
		if (n < 0 || m != n || memcmp(a, b, (size_t)n) != 0)
			break;
		if (n == 0) {
			eq = true;
			break;
		}
		off += n;
	}
	close(fa);
	return eq;
}

/*
 * Entry i (a non-directory) put back at abs: built at a temporary name
 * beside it with its mode, owner and times, then renamed over whatever
 * is there, so that a reader sees the old entry or the new one whole.
 */
static int
rebuild(struct ckpt *c, size_t i, const char *abs, struct ckpt_counts *cnt,
    char *err, size_t errlen)
{
	struct ent *e = &c->ents[i];
	struct timespec ts[2] = { e->atim, e->mtim };
	char tmp[PATH_MAX];
	uint64_t done;
	struct stat st;
	int fd = -1, rc;

	if ((rc = fs_path_tmp_beside(abs, ".execd-restore-", tmp,
	    sizeof(tmp))) < 0)
		goto fail;
	if (S_ISREG(e->mode)) {
		if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600)) < 0) {
			rc = -errno;
			goto fail;
		}
		if ((rc = copy_range(c->pack, e->off, fd, 0, e->len, false,
		    &done)) < 0 || (rc = fchown(fd, e->uid, e->gid) < 0 ||
		    fchmod(fd, e->mode & 07777) < 0 ||
		    futimens(fd, ts) < 0 ? -errno : 0) < 0)
			goto fail;
		if (close(fd) < 0) {
			fd = -1;
			rc = -errno;
			goto fail;
		}
		fd = -1;
	} else {
		if (S_ISLNK(e->mode))
			rc = symlink(e->link, tmp);
		else
			rc = mknod(tmp, e->mode, e->rdev);
		if (rc < 0 || lchown(tmp, e->uid, e->gid) < 0 ||
		    (!S_ISLNK(e->mode) && chmod(tmp, e->mode & 07777) < 0) ||
		    utimensat(AT_FDCWD, tmp, ts, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			goto fail;
		}
	}
	/* A directory a run made there meanwhile gives way. */
	if (rename(tmp, abs) < 0 && ((errno != EISDIR && errno != ENOTEMPTY &&
	    errno != EEXIST) || remove_any(abs, err, errlen) < 0 ||
	    rename(tmp, abs) < 0)) {
		rc = -errno;
		goto fail;
	}
	/* The new inode is the one to know again next time. */
	if (lstat(abs, &st) == 0) {
		e->dev = st.st_dev;
		e->ino = st.st_ino;
		e->ctim = st.st_ctim;
		e->recent = is_recent(&e->ctim);
	}
	cnt->written++;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	snprintf(err, errlen, "error restoring %s: %s", abs, strerror(-rc));
	return rc;
}

/*
 * Directory entry e at abs: made when missing (early, 0700), or given
 * its mode, owner and times back (late, after its children).
 */
static int
settle_dir(struct ent *e, const char *abs, bool late, struct ckpt_counts *cnt,
    char *err, size_t errlen)
{
	struct timespec ts[2] = { e->atim, e->mtim };
	struct stat st;
	int rc;

	if (!late) {
		if (lstat(abs, &st) == 0) {
			if (S_ISDIR(st.st_mode))
				return 0;
			/* Made by a run since the walk passed. */
			if ((rc = remove_any(abs, err, errlen)) < 0)
				goto fail;
			cnt->removed++;
		}
		if (mkdir(abs, 0700) < 0) {
			rc = -errno;
			goto fail;
		}
		cnt->dirs++;
		e->keep = true;		/* counted once */
		return 0;
	}
	if (lstat(abs, &st) < 0) {
		rc = -errno;
		goto fail;
	}
	if (st.st_uid != e->uid || st.st_gid != e->gid ||
	    (st.st_mode & 07777) != (e->mode & 07777)) {
		if (lchown(abs, e->uid, e->gid) < 0 ||
		    chmod(abs, e->mode & 07777) < 0) {
			rc = -errno;
			goto fail;
		}
		if (!e->keep)
			cnt->dirs++;
	}
	e->keep = false;
	if (utimensat(AT_FDCWD, abs, ts, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = -errno;
		goto fail;
	}
	return 0;
fail:
	snprintf(err, errlen, "error restoring %s: %s", abs, strerror(-rc));
	return rc;
}

/* See ckpt.h. */
int
ckpt_restore(const char *id, struct ckpt_info *info, struct ckpt_counts *out,
    char *err, size_t errlen)
{
	struct ckpt_counts cnt = { 0 };
	char abs[PATH_MAX];
	struct ckpt *c;
	struct stat st;
	size_t i;
	int rc = 0;

	err[0] = '\0';
	pthread_mutex_lock(&mtx);
	if ((c = find(id)) == NULL) {
		snprintf(err, errlen, "checkpoint %s not found", id);
		rc = -ENOENT;
		goto out;
	}
	for (i = 0; i < c->n; i++)
		c->ents[i].keep = false;
	if ((c->pack = open(c->store, O_RDONLY | O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "error reading %s: %s", c->store,
		    strerror(errno));
		goto out;
	}
	/* The root: a directory again if something else took its place. */
	snprintf(abs, sizeof(abs), "%s", c->info.path);
	if (lstat(abs, &st) == 0 && !S_ISDIR(st.st_mode)) {
		if ((rc = remove_any(abs, err, errlen)) < 0)
			goto out;
		cnt.removed++;
	}
	/* Gone with its parents: made again as mkdir -p does. */
	if (lstat(abs, &st) < 0 && errno == ENOENT) {
		bool made;

		if ((rc = fs_mkdirs(abs, 0700, (uid_t)-1, (gid_t)-1, &made,
		    err, errlen)) < 0)
			goto out;
		cnt.dirs++;
		c->ents[0].keep = true;
	}
	if ((rc = settle_dir(&c->ents[0], abs, false, &cnt, err, errlen)) < 0)
		goto out;
	/* 1: what is not in the checkpoint goes; what did not change stays. */
	if ((rc = prune(c, abs, sizeof(abs), 0, &cnt, err, errlen)) < 0)
		goto out;
	/* 2: the rest comes back, parents before their children. */
	for (i = 1; i < c->n; i++) {
		struct ent *e = &c->ents[i];

		if ((rc = join(abs, sizeof(abs), c->info.path, e->rel)) < 0)
			break;
		if (S_ISDIR(e->mode))
			rc = settle_dir(e, abs, false, &cnt, err, errlen);
		else if (!e->keep)
			rc = rebuild(c, i, abs, &cnt, err, errlen);
		if (rc < 0)
			goto out;
	}
	if (rc < 0) {
		snprintf(err, errlen, "error restoring under %s: a path too "
		    "long", c->info.path);
		goto out;
	}
	/* 3: directories' modes, owners and times, children first. */
	for (i = c->n; i-- > 0;) {
		struct ent *e = &c->ents[i];

		if (!S_ISDIR(e->mode))
			continue;
		if ((rc = join(abs, sizeof(abs), c->info.path, e->rel)) < 0) {
			snprintf(err, errlen, "error restoring under %s: a "
			    "path too long", c->info.path);
			goto out;
		}
		if ((rc = settle_dir(e, abs, true, &cnt, err, errlen)) < 0)
			goto out;
	}
	*info = c->info;
	*out = cnt;
out:
	/* -ENOENT says the id is unknown: a file a run removed is not that. */
	if (rc == -ENOENT && c != NULL)
		rc = -EIO;
	if (c != NULL && c->pack >= 0) {
		close(c->pack);
		c->pack = -1;
	}
	pthread_mutex_unlock(&mtx);
	return rc;
}

/* See ckpt.h. */
int
ckpt_drop(const char *id, char *err, size_t errlen)
{
	struct ckpt *c = NULL;
	size_t i;
	int rc = 0;

	pthread_mutex_lock(&mtx);
	for (i = 0; i < nckpts; i++)
		if (strcmp(ckpts[i]->info.id, id) == 0)
			break;
	if (i == nckpts) {
		snprintf(err, errlen, "checkpoint %s not found", id);
		rc = -ENOENT;
		goto out;
	}
	c = ckpts[i];
	memmove(&ckpts[i], &ckpts[i + 1], (nckpts - i - 1) * sizeof(*ckpts));
	nckpts--;
	unlink(c->store);
	ckpt_free(c);
out:
	pthread_mutex_unlock(&mtx);
	return rc;
}

/* See ckpt.h. */
void
ckpt_list(struct ckpt_info **out, size_t *n)
{
	size_t i;

	pthread_mutex_lock(&mtx);
	*out = xreallocarray(NULL, nckpts > 0 ? nckpts : 1, sizeof(**out));
	for (i = 0; i < nckpts; i++)
		(*out)[i] = ckpts[i]->info;
	*n = nckpts;
	pthread_mutex_unlock(&mtx);
}
