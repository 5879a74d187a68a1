/*
 * fs_tar.c -- a tar archive produced on demand, a few bytes at a time.
 *
 * fs_tar_new() lstat()s the path and, for a directory, collects every
 * entry below it with fs_walk() into an array (relative path, type, mode,
 * owner, size, mtime, link target): the headers then describe one moment
 * of the tree.  fs_tar_read() is a small state machine over that array:
 * for each entry the header blocks (a pax 'x' header first when ustar
 * cannot hold a value) are built into one buffer and copied out, then a
 * regular file's data, exactly the size the header announced, then the
 * padding to 512 bytes; after the last entry, two zero blocks.  File data
 * goes through a read-ahead buffer so that callers may pull one byte at a
 * time without one read(2) per byte.  Only the file being sent is open.
 *
 * Not for: extracting, compressing, or deciding what a client may read
 * (the HTTP layer resolves the path).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_tar.h"
#include "fs_walk.h"

#define BLOCK		512
#define DATA_BUF	(64 * 1024)	/* read-ahead of file data */
#define OCTAL_MAX_7	07777777LL	/* 7 octal digits: mode, uid, gid */
#define OCTAL_MAX_11	077777777777LL	/* 11 digits: size, mtime */
#define NAME_LEN	100
#define PREFIX_LEN	155
#define OWNER_LEN	32		/* uname, gname with their NUL */

/* One member of the archive. */
struct ent {
	char		*rel;		/* relative to the root; "" for it */
	char		*link;		/* a symlink's target */
	off_t		 size;		/* regular files only */
	time_t		 mtime;
	uid_t		 uid;
	gid_t		 gid;
	mode_t		 mode;		/* st_mode: type and permissions */
};

enum phase {
	PH_HDR,		/* copying hbuf */
	PH_DATA,	/* a file's data */
	PH_ZERO,	/* padding, or the end-of-archive blocks */
	PH_NEXT		/* between two entries */
};

/* A growable byte buffer. */
struct bytes {
	char		*p;
	size_t		 len, cap;
};

/* Last owner name looked up, per kind. */
struct owner {
	bool		 ok;
	unsigned long	 id;
	char		 name[64];
};

struct fs_tar {
	char		*root;		/* path, trailing slashes dropped */
	char		*base;		/* members start with it */
	struct ent	*e;
	size_t		 n, cap;
	size_t		 idx;		/* entry being sent */
	enum phase	 ph;
	bool		 last;		/* PH_ZERO is the end of the archive */
	struct bytes	 h;		/* header blocks of the current entry */
	size_t		 hoff;
	int		 fd;		/* the one open file, or -1 */
	bool		 zeros;		/* file gone or shrunk: send zeros */
	off_t		 left;		/* data bytes still due */
	size_t		 zleft;		/* zero bytes still due */
	char		*dbuf;		/* DATA_BUF bytes */
	size_t		 dlen, doff;
	int		 rc;		/* sticky error */
	struct owner	 user, group;
	char		 err[PATH_MAX + 128];
	char		 path[PATH_MAX];
};

static int	 bytes_add(struct bytes *, const void *, size_t);
static int	 ent_add(struct fs_tar *, const char *, const struct stat *,
		    const char *);
static int	 collect(const char *, const char *, const struct stat *, int,
		    void *);
static int	 base_set(struct fs_tar *);
static const char *owner_name(struct owner *, bool, unsigned long);
static bool	 octal_put(char *, size_t, long long);
static int	 pax_add(struct bytes *, const char *, const char *);
static bool	 name_split(const char *, size_t, size_t *);
static void	 header_fill(char *, const char *, size_t, const struct ent *,
		    char, const char *, const char *, const char *);
static int	 header_build(struct fs_tar *, const struct ent *);
static void	 file_open(struct fs_tar *, const struct ent *);
static void	 file_close(struct fs_tar *);
static ssize_t	 data_copy(struct fs_tar *, char *, size_t);
static int	 entry_start(struct fs_tar *);
static void	 entry_next(struct fs_tar *);

/* Append n bytes.  0 or -ENOMEM. */
static int
bytes_add(struct bytes *b, const void *p, size_t n)
{
	size_t cap;
	char *np;

	if (b->len + n > b->cap) {
		for (cap = b->cap ? b->cap : 2048; cap < b->len + n; cap *= 2)
			;
		if ((np = realloc(b->p, cap)) == NULL)
			return -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/* Record one entry.  0, -EFBIG past the cap, or -ENOMEM. */
static int
ent_add(struct fs_tar *t, const char *rel, const struct stat *st,
    const char *link)
{
	struct ent *ne, *e;
	size_t cap;

	if (t->n >= FS_TAR_MAX_ENTRIES)
		return -EFBIG;
	if (t->n == t->cap) {
		cap = t->cap ? t->cap * 2 : 64;
		if ((ne = realloc(t->e, cap * sizeof(*ne))) == NULL)
			return -ENOMEM;
		t->e = ne;
		t->cap = cap;
	}
	e = &t->e[t->n];
	memset(e, 0, sizeof(*e));
	if ((e->rel = strdup(rel)) == NULL ||
	    (link != NULL && (e->link = strdup(link)) == NULL)) {
		free(e->rel);
		return -ENOMEM;
	}
	e->size = S_ISREG(st->st_mode) ? st->st_size : 0;
	e->mtime = st->st_mtime;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->mode = st->st_mode;
	t->n++;
	return 0;
}

/*
 * Walker callback: record files, directories and symlinks.  A directory
 * that cannot be opened is recorded but not entered, so the walk goes on.
 */
static int
collect(const char *path, const char *rel, const struct stat *st, int depth,
    void *arg)
{
	struct fs_tar *t = arg;
	char link[PATH_MAX];
	ssize_t n;
	int fd, rc;

	if (S_ISLNK(st->st_mode)) {
		/* A link that cannot be read any more is left out. */
		if ((n = readlink(path, link, sizeof(link) - 1)) < 0)
			return 0;
		link[n] = '\0';
		rc = ent_add(t, rel, st, link);
	} else if (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode))
		rc = ent_add(t, rel, st, NULL);
	else
		return 0;
	if (rc < 0) {
		snprintf(t->err, sizeof(t->err), "%s: %s", path, rc == -EFBIG ?
		    "too many entries to archive" : strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(st->st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 1;
	close(fd);
	return 0;
}

/*
 * The first component of every member: the root's last component, or,
 * when that says nothing ("/", ".", ".."), the one realpath() gives; "."
 * for "/".  0 or -errno.
 */
static int
base_set(struct fs_tar *t)
{
	const char *s = strrchr(t->root, '/');
	char *real = NULL;
	int rc = 0;

	s = s == NULL ? t->root : s + 1;
	if (*s == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
		if ((real = realpath(t->root, NULL)) == NULL)
			return -errno;
		s = strrchr(real, '/');
		s = s == NULL ? real : s + 1;
		if (*s == '\0')
			s = ".";
	}
	if ((t->base = strdup(s)) == NULL)
		rc = -ENOMEM;
	free(real);
	return rc;
}

/* The name of a user (or group) id, "" when unknown; cached. */
static const char *
owner_name(struct owner *o, bool group, unsigned long id)
{
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	char buf[4096];

	if (o->ok && o->id == id)
		return o->name;
	o->name[0] = '\0';
	if (group) {
		if (getgrgid_r((gid_t)id, &gr, buf, sizeof(buf), &grp) == 0 &&
		    grp != NULL)
			snprintf(o->name, sizeof(o->name), "%s", grp->gr_name);
	} else if (getpwuid_r((uid_t)id, &pw, buf, sizeof(buf), &pwp) == 0 &&
	    pwp != NULL)
		snprintf(o->name, sizeof(o->name), "%s", pwp->pw_name);
	o->ok = true;
	o->id = id;
	return o->name;
}

/*
 * v in octal, zero-padded, in a field of w bytes ending with a NUL.  False
 * (and the field zeroed) when v is negative or needs more digits.
 */
static bool
octal_put(char *f, size_t w, long long v)
{
	char tmp[32];

	if (v < 0 || (w - 1 < 22 && (unsigned long long)v >> (3 * (w - 1)))) {
		snprintf(tmp, sizeof(tmp), "%0*o", (int)(w - 1), 0);
		memcpy(f, tmp, w);
		return false;
	}
	snprintf(tmp, sizeof(tmp), "%0*llo", (int)(w - 1), v);
	memcpy(f, tmp, w);
	return true;
}

/*
 * Append the pax record "<len> key=value\n", where len counts the whole
 * record, its own digits included.  0 or -ENOMEM.
 */
static int
pax_add(struct bytes *b, const char *key, const char *value)
{
	size_t rest = strlen(key) + strlen(value) + 3, d = 1, len;
	char num[24];
	int rc;

	/* " key=value\n" is rest bytes; find the digits that fit. */
	for (;;) {
		len = rest + d;
		snprintf(num, sizeof(num), "%zu", len);
		if (strlen(num) == d)
			break;
		d = strlen(num);
	}
	if ((rc = bytes_add(b, num, d)) < 0 ||
	    (rc = bytes_add(b, " ", 1)) < 0 ||
	    (rc = bytes_add(b, key, strlen(key))) < 0 ||
	    (rc = bytes_add(b, "=", 1)) < 0 ||
	    (rc = bytes_add(b, value, strlen(value))) < 0)
		return rc;
	return bytes_add(b, "\n", 1);
}

/*
 * Whether name (len bytes) fits ustar's name and prefix fields; *cut is 0
 * when it fits name alone, else the index of the '/' that separates the
 * prefix from the name.
 */
static bool
name_split(const char *name, size_t len, size_t *cut)
{
	size_t i;

	if (len <= NAME_LEN) {
		*cut = 0;
		return true;
	}
	/* The rest after the '/' must fit in name and not be empty. */
	for (i = len - NAME_LEN - 1; i <= PREFIX_LEN && i + 1 < len; i++) {
		if (name[i] == '/') {
			*cut = i;
			return true;
		}
	}
	return false;
}

/*
 * Fill the ustar header block h (BLOCK bytes, zeroed by the caller) for
 * name (len bytes), e, the type flag, the link target (or NULL) and the
 * owner names.  Values that do not fit are left for a pax header.
 */
static void
header_fill(char *h, const char *name, size_t len, const struct ent *e,
    char type, const char *link, const char *uname, const char *gname)
{
	unsigned sum = 0;
	size_t cut, l;

	if (name_split(name, len, &cut) && cut > 0) {
		memcpy(h + 345, name, cut);
		memcpy(h, name + cut + 1, len - cut - 1);
	} else
		memcpy(h, name, len < NAME_LEN ? len : NAME_LEN);
	octal_put(h + 100, 8, e->mode & 07777);
	octal_put(h + 108, 8, e->uid);
	octal_put(h + 116, 8, e->gid);
	octal_put(h + 124, 12, e->size);
	octal_put(h + 136, 12, e->mtime);
	h[156] = type;
	if (link != NULL) {
		l = strlen(link);
		memcpy(h + 157, link, l < NAME_LEN ? l : NAME_LEN);
	}
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	l = strlen(uname);
	memcpy(h + 265, uname, l < OWNER_LEN ? l : OWNER_LEN - 1);
	l = strlen(gname);
	memcpy(h + 297, gname, l < OWNER_LEN ? l : OWNER_LEN - 1);
	octal_put(h + 329, 8, 0);
	octal_put(h + 337, 8, 0);
	/* The checksum is computed with its own field as spaces. */
	memset(h + 148, ' ', 8);
	for (size_t i = 0; i < BLOCK; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	h[155] = ' ';
}

/*
 * Build the header blocks of e into t->h: 1. its member name; 2. the pax
 * records for what ustar cannot hold; 3. if any, the 'x' header and its
 * padded data; 4. the ustar header.  0 or -errno (message in t->err).
 */
static int
header_build(struct fs_tar *t, const struct ent *e)
{
	struct bytes name = { 0 }, pax = { 0 };
	struct ent pe;
	char blk[BLOCK], num[32], type, *pname = NULL;
	const char *uname, *gname, *last;
	size_t cut, pad;
	int rc;

	t->h.len = 0;
	t->hoff = 0;
	type = S_ISDIR(e->mode) ? '5' : S_ISLNK(e->mode) ? '2' : '0';
	/* 1. */
	if ((rc = bytes_add(&name, t->base, strlen(t->base))) < 0 ||
	    (e->rel[0] != '\0' && ((rc = bytes_add(&name, "/", 1)) < 0 ||
	    (rc = bytes_add(&name, e->rel, strlen(e->rel))) < 0)) ||
	    (type == '5' && (rc = bytes_add(&name, "/", 1)) < 0) ||
	    (rc = bytes_add(&name, "", 1)) < 0)
		goto out;
	name.len--;
	uname = owner_name(&t->user, false, e->uid);
	gname = owner_name(&t->group, true, e->gid);
	/* 2. */
	if (!name_split(name.p, name.len, &cut) &&
	    (rc = pax_add(&pax, "path", name.p)) < 0)
		goto out;
	if (e->link != NULL && strlen(e->link) > NAME_LEN &&
	    (rc = pax_add(&pax, "linkpath", e->link)) < 0)
		goto out;
	if ((long long)e->size > OCTAL_MAX_11) {
		snprintf(num, sizeof(num), "%lld", (long long)e->size);
		if ((rc = pax_add(&pax, "size", num)) < 0)
			goto out;
	}
	if ((long long)e->mtime < 0 || (long long)e->mtime > OCTAL_MAX_11) {
		snprintf(num, sizeof(num), "%lld", (long long)e->mtime);
		if ((rc = pax_add(&pax, "mtime", num)) < 0)
			goto out;
	}
	if ((long long)e->uid > OCTAL_MAX_7) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)e->uid);
		if ((rc = pax_add(&pax, "uid", num)) < 0)
			goto out;
	}
	if ((long long)e->gid > OCTAL_MAX_7) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)e->gid);
		if ((rc = pax_add(&pax, "gid", num)) < 0)
			goto out;
	}
	if ((strlen(uname) >= OWNER_LEN &&
	    (rc = pax_add(&pax, "uname", uname)) < 0) ||
	    (strlen(gname) >= OWNER_LEN &&
	    (rc = pax_add(&pax, "gname", gname)) < 0))
		goto out;
	/* 3. Named after the member's last component, cut to fit. */
	if (pax.len > 0) {
		for (cut = name.len; cut > 0 && name.p[cut - 1] == '/'; cut--)
			;
		name.p[cut] = '\0';
		last = strrchr(name.p, '/');
		last = last == NULL ? name.p : last + 1;
		if (asprintf(&pname, "PaxHeaders/%.80s", last) < 0) {
			pname = NULL;
			rc = -ENOMEM;
			goto out;
		}
		memset(&pe, 0, sizeof(pe));
		pe.mode = 0644;
		pe.size = (off_t)pax.len;
		pe.mtime = e->mtime < 0 || (long long)e->mtime > OCTAL_MAX_11 ?
		    0 : e->mtime;
		memset(blk, 0, sizeof(blk));
		header_fill(blk, pname, strlen(pname), &pe, 'x', NULL, "", "");
		pad = (BLOCK - pax.len % BLOCK) % BLOCK;
		if ((rc = bytes_add(&t->h, blk, BLOCK)) < 0 ||
		    (rc = bytes_add(&t->h, pax.p, pax.len)) < 0)
			goto out;
		memset(blk, 0, sizeof(blk));
		if ((rc = bytes_add(&t->h, blk, pad)) < 0)
			goto out;
		/* The ustar name below is a fallback: put it back whole. */
		name.p[cut] = cut < name.len ? '/' : '\0';
	}
	/* 4. */
	memset(blk, 0, sizeof(blk));
	header_fill(blk, name.p, name.len, e, type, e->link, uname, gname);
	rc = bytes_add(&t->h, blk, BLOCK);
out:
	if (rc < 0)
		snprintf(t->err, sizeof(t->err), "%s: %s", name.p != NULL ?
		    name.p : t->base, strerror(-rc));
	free(pname);
	free(pax.p);
	free(name.p);
	return rc;
}

/*
 * Open e's file for its data; when it is gone or no longer a regular
 * file, the data will be zeros.
 */
static void
file_open(struct fs_tar *t, const struct ent *e)
{
	struct stat st;
	int n;

	t->zeros = true;
	t->dlen = t->doff = 0;
	if (e->rel[0] == '\0')
		n = snprintf(t->path, sizeof(t->path), "%s", t->root);
	else
		n = snprintf(t->path, sizeof(t->path), "%s%s%s", t->root,
		    strcmp(t->root, "/") == 0 ? "" : "/", e->rel);
	if (n < 0 || (size_t)n >= sizeof(t->path))
		return;
	t->fd = open(t->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
	    O_CLOEXEC);
	if (t->fd < 0)
		return;
	if (fstat(t->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		file_close(t);
		return;
	}
	t->zeros = false;
}

/* Close the open file, if any. */
static void
file_close(struct fs_tar *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

/*
 * Copy up to len bytes of the current file's data (zeros once it is gone
 * or has shrunk) into out.  Bytes copied (> 0), or -errno on a read error.
 */
static ssize_t
data_copy(struct fs_tar *t, char *out, size_t len)
{
	size_t n;
	ssize_t r;
	int e;

	if ((off_t)len > t->left)
		len = (size_t)t->left;
	if (!t->zeros && t->doff == t->dlen) {
		n = t->left < DATA_BUF ? (size_t)t->left : DATA_BUF;
		do
			r = read(t->fd, t->dbuf, n);
		while (r < 0 && errno == EINTR);
		if (r < 0) {
			e = errno;
			snprintf(t->err, sizeof(t->err), "%s: %s", t->path,
			    strerror(e));
			return -e;
		}
		if (r == 0) {
			/* Shrunk since its header: zeros to the size. */
			file_close(t);
			t->zeros = true;
		}
		t->dlen = (size_t)r;
		t->doff = 0;
	}
	if (t->zeros) {
		memset(out, 0, len);
		n = len;
	} else {
		n = t->dlen - t->doff;
		if (n > len)
			n = len;
		memcpy(out, t->dbuf + t->doff, n);
		t->doff += n;
	}
	t->left -= (off_t)n;
	return (ssize_t)n;
}

/* Begin entry t->idx, or the end blocks past the last.  0 or -errno. */
static int
entry_start(struct fs_tar *t)
{
	int rc;

	if (t->idx >= t->n) {
		t->ph = PH_ZERO;
		t->zleft = 2 * BLOCK;
		t->last = true;
		return 0;
	}
	if ((rc = header_build(t, &t->e[t->idx])) < 0)
		return rc;
	t->ph = PH_HDR;
	return 0;
}

/* The current entry's header is out: its data, or the next entry. */
static void
entry_next(struct fs_tar *t)
{
	const struct ent *e = &t->e[t->idx];

	if (t->ph == PH_HDR && S_ISREG(e->mode) && e->size > 0) {
		t->left = e->size;
		file_open(t, e);
		t->ph = PH_DATA;
		return;
	}
	if (t->ph == PH_DATA) {
		file_close(t);
		t->zleft = (BLOCK - (size_t)(e->size % BLOCK)) % BLOCK;
		t->ph = PH_ZERO;
		if (t->zleft > 0)
			return;
	}
	t->idx++;
	t->ph = PH_NEXT;
}

/* Collect the entries; see fs_tar.h. */
struct fs_tar *
fs_tar_new(const char *path, char *err, size_t errlen)
{
	struct fs_tar *t;
	struct stat st;
	char link[PATH_MAX];
	ssize_t n = 0;
	size_t len;
	int rc;

	if (path == NULL || path[0] == '\0') {
		snprintf(err, errlen, "empty path");
		errno = EINVAL;
		return NULL;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL ||
	    (t->root = strdup(path)) == NULL ||
	    (t->dbuf = malloc(DATA_BUF)) == NULL) {
		if (t != NULL)
			free(t->root);
		free(t);
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	t->fd = -1;
	for (len = strlen(t->root); len > 1 && t->root[len - 1] == '/';)
		t->root[--len] = '\0';
	/* 1. The root itself, never followed. */
	if (lstat(t->root, &st) < 0) {
		rc = -errno;
		snprintf(t->err, sizeof(t->err), "%s: %s", path, strerror(-rc));
		goto fail;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
	    !S_ISLNK(st.st_mode)) {
		rc = -EINVAL;
		snprintf(t->err, sizeof(t->err), "%s: not a file, directory "
		    "or symlink", path);
		goto fail;
	}
	if ((rc = base_set(t)) < 0) {
		snprintf(t->err, sizeof(t->err), "%s: %s", path, strerror(-rc));
		goto fail;
	}
	if (S_ISLNK(st.st_mode) && (n = readlink(t->root, link,
	    sizeof(link) - 1)) < 0) {
		rc = -errno;
		snprintf(t->err, sizeof(t->err), "%s: %s", path, strerror(-rc));
		goto fail;
	}
	if (S_ISLNK(st.st_mode))
		link[n] = '\0';
	if ((rc = ent_add(t, "", &st, S_ISLNK(st.st_mode) ? link : NULL)) <
	    0) {
		snprintf(t->err, sizeof(t->err), "%s: %s", path, strerror(-rc));
		goto fail;
	}
	/* 2. Everything below a directory. */
	if (S_ISDIR(st.st_mode) && (rc = fs_walk(t->root, FS_WALK_ALL, collect,
	    t, t->err, sizeof(t->err))) < 0)
		goto fail;
	t->err[0] = '\0';
	if ((rc = entry_start(t)) < 0)
		goto fail;
	return t;
fail:
	snprintf(err, errlen, "%s", t->err);
	fs_tar_free(t);
	errno = -rc;
	return NULL;
}

/* Pull archive bytes; see fs_tar.h. */
ssize_t
fs_tar_read(struct fs_tar *t, void *buf, size_t len)
{
	char *out = buf;
	size_t done = 0, n;
	ssize_t r;
	int rc;

	if (t->rc < 0)
		return t->rc;
	if (len == 0) {
		snprintf(t->err, sizeof(t->err), "empty buffer");
		return -EINVAL;
	}
	while (done < len) {
		switch (t->ph) {
		case PH_HDR:
			n = t->h.len - t->hoff;
			if (n > len - done)
				n = len - done;
			memcpy(out + done, t->h.p + t->hoff, n);
			t->hoff += n;
			done += n;
			if (t->hoff == t->h.len)
				entry_next(t);
			break;
		case PH_DATA:
			if ((r = data_copy(t, out + done, len - done)) < 0) {
				file_close(t);
				t->rc = (int)r;
				return r;
			}
			done += (size_t)r;
			if (t->left == 0)
				entry_next(t);
			break;
		case PH_ZERO:
			n = t->zleft < len - done ? t->zleft : len - done;
			memset(out + done, 0, n);
			t->zleft -= n;
			done += n;
			if (t->zleft > 0)
				break;
			if (t->last)
				return (ssize_t)done;
			t->idx++;
			t->ph = PH_NEXT;
			break;
		case PH_NEXT:
			if ((rc = entry_start(t)) < 0) {
				t->rc = rc;
				return rc;
			}
			break;
		}
	}
	return (ssize_t)done;
}

/* The last error's message; see fs_tar.h. */
const char *
fs_tar_error(const struct fs_tar *t)
{
	return t->err;
}

/* Free everything; see fs_tar.h. */
void
fs_tar_free(struct fs_tar *t)
{
	if (t == NULL)
		return;
	file_close(t);
	for (size_t i = 0; i < t->n; i++) {
		free(t->e[i].rel);
		free(t->e[i].link);
	}
	free(t->e);
	free(t->h.p);
	free(t->dbuf);
	free(t->base);
	free(t->root);
	free(t);
}
