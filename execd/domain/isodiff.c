/*
 * isodiff.c -- an isolated session's diff and commit (see isodiff.h).
 *
 * An upper directory as overlayfs leaves it: a whiteout (a character
 * device 0/0) is a deleted lower entry; a directory whose
 * trusted.overlay.opaque (or user.overlay.opaque, for mounts with
 * userxattr) is "y" hides the lower directory's entries, so those the
 * upper does not name are deleted too, and so are those under a
 * directory made inside an opaque one; every other entry is added
 * (nothing below it) or modified (its copy-up, or a directory whose mode
 * or owner changed).  Directories the upper holds only as the parents
 * of changes are not changes themselves.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../../fs/fs_info.h"
#include "../../fs/fs_path.h"
#include "../../fs/fs_tree.h"
#include "../../util/utf8.h"
#include "../core/xmalloc.h"
#include "ckpt.h"
#include "isodiff.h"

enum kind { ADDED, MODIFIED, DELETED };

/* A lower entry as it was (the manifest). */
struct bent {
	char		*rel;
	dev_t		 dev;
	ino_t		 ino;
	off_t		 size;
	mode_t		 mode;
	struct timespec	 mtim, ctim;
	bool		 gone;		/* removed by a commit */
};

/* An upper entry as a commit found it. */
struct cent {
	char		*rel;
	ino_t		 ino;
	struct timespec	 mtim, ctim;
};

struct tree {
	char		*path;		/* the overlay path; NULL: none */
	struct bent	*b;
	size_t		 nb, sorted, capb;
	struct cent	*c;
	size_t		 nc, capc;
};

struct isodiff {
	pthread_mutex_t	 mtx;
	int		 refs;
	size_t		 n;
	struct tree	 t[ISODIFF_MAX];
};

struct chg {
	enum kind	 kind;
	char		*rel;
	struct stat	 up, lo;
	bool		 has_lo, opaque;
	char		*target, *old_target;
};

struct chgs {
	struct chg	*v;
	size_t		 n, cap;
};

/* p is d or under it. */
static bool
under(const char *p, const char *d)
{
	size_t n = strlen(d);

	if (n == 1 && d[0] == '/')
		return p[0] == '/';
	return strncmp(p, d, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static int
join(char *buf, size_t len, const char *root, const char *rel)
{
	int n = rel[0] == '\0' ? snprintf(buf, len, "%s", root) :
	    snprintf(buf, len, "%s%s%s", root,
	    root[strlen(root) - 1] == '/' ? "" : "/", rel);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool
ts_eq(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/*
 * openat2's resolution without it (a kernel before 5.6, or valgrind,
 * which does not know the call): rel one component at a time from dfd,
 * each opened O_NOFOLLOW, so that a link anywhere on the way fails
 * (ELOOP or ENOTDIR) as RESOLVE_NO_SYMLINKS does, and ".." is refused
 * (EXDEV) as RESOLVE_BENEATH refuses it.  flags hold O_NOFOLLOW.
 */
static int
open_by_steps(int dfd, const char *rel, int flags)
{
	char comp[NAME_MAX + 1];
	const char *p = rel, *end;
	int cur = dfd, next, e;
	size_t n;

	if (*p == '/') {
		errno = EXDEV;
		return -1;
	}
	for (;;) {
		while (*p == '/')
			p++;
		end = p + strcspn(p, "/");
		n = (size_t)(end - p);
		if (n > NAME_MAX) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		memcpy(comp, n > 0 ? p : ".", n > 0 ? n : 1);
		comp[n > 0 ? n : 1] = '\0';
		if (strcmp(comp, "..") == 0) {
			errno = EXDEV;
			goto fail;
		}
		while (*end == '/')
			end++;
		if (*end == '\0') {
			next = openat(cur, comp, flags);
			e = errno;
			if (cur != dfd)
				close(cur);
			errno = e;
			return next;
		}
		next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (next < 0)
			goto fail;
		if (cur != dfd)
			close(cur);
		cur = next;
		p = end;
	}
fail:
	e = errno;
	if (cur != dfd)
		close(cur);
	errno = e;
	return -1;
}

/*
 * rel under root, opened without following a symbolic link on the way
 * nor at its end (O_PATH | O_NOFOLLOW gives the link itself): code in
 * the session may swap a directory of its upper for a link to anywhere
 * between the walk and the read, and execd reads as root.
 */
static int
open_beneath(const char *root, const char *rel, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
		    RESOLVE_NO_MAGICLINKS,
	};
	int dfd, fd, e;

	if ((dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		fd = open_by_steps(dfd, rel, (int)how.flags);
	e = errno;
	close(dfd);
	errno = e;
	return fd;
}

/* --- the manifest ----------------------------------------------------- */

static void
base_add(struct tree *t, const char *rel, const struct stat *st)
{
	struct bent *e;

	if (t->nb == t->capb) {
		t->capb = t->capb == 0 ? 256 : t->capb * 2;
		t->b = xreallocarray(t->b, t->capb, sizeof(*t->b));
	}
	e = &t->b[t->nb++];
	memset(e, 0, sizeof(*e));
	e->rel = xstrdup(rel);
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->size = st->st_size;
	e->mode = st->st_mode;
	e->mtim = st->st_mtim;
	e->ctim = st->st_ctim;
}

static int
base_one(const char *abs, const char *rel, const struct stat *st, void *arg)
{
	struct tree *t = arg;

	if (t->nb >= CKPT_MAX_ENTRIES)
		return -EFBIG;
	base_add(t, rel, st);
	return 0;
}

static int
by_rel(const void *a, const void *b)
{
	return strcmp(((const struct bent *)a)->rel,
	    ((const struct bent *)b)->rel);
}

/* The manifest's entry of rel (gone ones too), or NULL. */
static struct bent *
base_find(struct tree *t, const char *rel)
{
	struct bent key = { .rel = (char *)(uintptr_t)rel }, *e;

	e = bsearch(&key, t->b, t->sorted, sizeof(*t->b), by_rel);
	if (e != NULL)
		return e;
	for (size_t i = t->sorted; i < t->nb; i++)
		if (strcmp(t->b[i].rel, rel) == 0)
			return &t->b[i];
	return NULL;
}

static void
base_sort(struct tree *t)
{
	if (t->nb > 0)	/* t->b is NULL then */
		qsort(t->b, t->nb, sizeof(*t->b), by_rel);
	t->sorted = t->nb;
}

/* After a commit wrote rel: the manifest says what is there now. */
static void
base_set(struct tree *t, const char *rel, const struct stat *st)
{
	struct bent *e = base_find(t, rel);

	if (e == NULL) {
		base_add(t, rel, st);
		return;
	}
	e->gone = false;
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->size = st->st_size;
	e->mode = st->st_mode;
	e->mtim = st->st_mtim;
	e->ctim = st->st_ctim;
}

/* After a commit removed rel and what was under it. */
static void
base_gone(struct tree *t, const char *rel)
{
	for (size_t i = 0; i < t->nb; i++)
		if (under(t->b[i].rel, rel))
			t->b[i].gone = true;
}

struct isodiff *
isodiff_take(size_t n, const char *const *paths, char *err, size_t errlen)
{
	struct isodiff *d = xcalloc(1, sizeof(*d));
	char abs[PATH_MAX], rel[PATH_MAX];
	struct stat st;
	int rc;

	pthread_mutex_init(&d->mtx, NULL);
	d->refs = 1;
	d->n = n < ISODIFF_MAX ? n : ISODIFF_MAX;
	for (size_t i = 0; i < d->n; i++) {
		struct tree *t = &d->t[i];

		if (paths[i] == NULL)
			continue;
		t->path = xstrdup(paths[i]);
		if (lstat(paths[i], &st) < 0) {
			snprintf(err, errlen, "%s: %s", paths[i],
			    strerror(errno));
			isodiff_drop(d);
			return NULL;
		}
		base_add(t, "", &st);
		snprintf(abs, sizeof(abs), "%s", paths[i]);
		rel[0] = '\0';
		if ((rc = ckpt_walk(abs, sizeof(abs), rel, sizeof(rel),
		    base_one, t)) < 0) {
			snprintf(err, errlen, "recording %s: %s", paths[i],
			    rc == -EFBIG ? "too many entries" : strerror(-rc));
			isodiff_drop(d);
			return NULL;
		}
		base_sort(t);
	}
	return d;
}

void
isodiff_hold(struct isodiff *d)
{
	d->refs++;
}

void
isodiff_drop(struct isodiff *d)
{
	if (d == NULL || --d->refs > 0)
		return;
	for (size_t i = 0; i < d->n; i++) {
		struct tree *t = &d->t[i];

		for (size_t j = 0; j < t->nb; j++)
			free(t->b[j].rel);
		for (size_t j = 0; j < t->nc; j++)
			free(t->c[j].rel);
		free(t->b);
		free(t->c);
		free(t->path);
	}
	pthread_mutex_destroy(&d->mtx);
	free(d);
}

int
isodiff_overlay_of(const struct isodiff *d, const char *p)
{
	int best = -1;

	for (size_t i = 0; i < d->n; i++)
		if (d->t[i].path != NULL && under(p, d->t[i].path) &&
		    (best < 0 || strlen(d->t[i].path) >
		    strlen(d->t[best].path)))
			best = (int)i;
	return best;
}

/* The upper entry rel as a commit left it (its ino and times). */
static struct cent *
committed(struct tree *t, const char *rel)
{
	for (size_t i = 0; i < t->nc; i++)
		if (strcmp(t->c[i].rel, rel) == 0)
			return &t->c[i];
	return NULL;
}

static void
set_committed(struct tree *t, const char *rel, const struct stat *up)
{
	struct cent *c = committed(t, rel);

	if (c == NULL) {
		if (t->nc == t->capc) {
			t->capc = t->capc == 0 ? 16 : t->capc * 2;
			t->c = xreallocarray(t->c, t->capc, sizeof(*t->c));
		}
		c = &t->c[t->nc++];
		c->rel = xstrdup(rel);
	}
	c->ino = up->st_ino;
	c->mtim = up->st_mtim;
	c->ctim = up->st_ctim;
}

/* --- reading an upper ------------------------------------------------- */

static bool
is_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

static bool
is_opaque(const char *abs)
{
	static const char *const names[] = {
		"trusted.overlay.opaque", "user.overlay.opaque", NULL
	};
	char v[8];

	for (const char *const *n = names; *n != NULL; n++)
		if (lgetxattr(abs, *n, v, sizeof(v)) == 1 && v[0] == 'y')
			return true;
	return false;
}

static char *
link_of(const char *p)
{
	char buf[PATH_MAX];
	ssize_t n = readlink(p, buf, sizeof(buf) - 1);

	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

static struct chg *
chg_add(struct chgs *cs, enum kind k, const char *rel)
{
	struct chg *c;

	if (cs->n == cs->cap) {
		cs->cap = cs->cap == 0 ? 32 : cs->cap * 2;
		cs->v = xreallocarray(cs->v, cs->cap, sizeof(*cs->v));
	}
	c = &cs->v[cs->n++];
	memset(c, 0, sizeof(*c));
	c->kind = k;
	c->rel = xstrdup(rel);
	return c;
}

static void
chgs_free(struct chgs *cs)
{
	for (size_t i = 0; i < cs->n; i++) {
		free(cs->v[i].rel);
		free(cs->v[i].target);
		free(cs->v[i].old_target);
	}
	free(cs->v);
	memset(cs, 0, sizeof(*cs));
}

struct scan {
	struct isodiff	*d;
	struct tree	*t;
	const char	*upper;
	struct chgs	*cs;
	char		**hidden;	/* rels of opaque directories */
	size_t		 nhidden;
	int		 err;
};

/* Whether rel is under an opaque directory of the upper. */
static bool
is_hidden(struct scan *s, const char *rel)
{
	for (size_t i = 0; i < s->nhidden; i++)
		if (under(rel, s->hidden[i]) && strcmp(rel, s->hidden[i]) != 0)
			return true;
	return false;
}

/* Whether lower path full lies in another overlay nested in this one. */
static bool
nested(struct scan *s, const char *full)
{
	for (size_t i = 0; i < s->d->n; i++) {
		const char *p = s->d->t[i].path;

		if (p != NULL && &s->d->t[i] != s->t && strlen(p) >
		    strlen(s->t->path) && under(p, s->t->path) &&
		    under(full, p))
			return true;
	}
	return false;
}

/* The lower entries of the directory rel the upper dir abs hides. */
static void
hidden_deletions(struct scan *s, const char *abs, const char *rel,
    const char *full)
{
	char p[PATH_MAX], r[PATH_MAX], u[PATH_MAX];
	struct dirent *de;
	struct stat st;
	struct chg *c;
	DIR *dir;

	if ((dir = opendir(full)) == NULL)
		return;
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (join(u, sizeof(u), abs, de->d_name) < 0 ||
		    join(p, sizeof(p), full, de->d_name) < 0 ||
		    join(r, sizeof(r), rel, de->d_name) < 0)
			continue;
		if (lstat(u, &st) == 0 || errno != ENOENT)
			continue;	/* the upper names it */
		if (lstat(p, &st) < 0 || nested(s, p))
			continue;
		c = chg_add(s->cs, DELETED, r);
		c->lo = st;
		c->has_lo = true;
		if (S_ISLNK(st.st_mode))
			c->old_target = link_of(p);
	}
	closedir(dir);
}

static int
scan_one(const char *abs, const char *rel, const struct stat *up, void *arg)
{
	struct scan *s = arg;
	char full[PATH_MAX];
	struct stat lo;
	struct cent *cm;
	struct chg *c;
	bool has_lo, hidden, opaque;

	if (join(full, sizeof(full), s->t->path, rel) < 0)
		return -ENAMETOOLONG;
	if (nested(s, full))
		return 1;
	hidden = is_hidden(s, rel);
	has_lo = lstat(full, &lo) == 0;
	if (is_whiteout(up)) {
		if (has_lo && !hidden) {
			c = chg_add(s->cs, DELETED, rel);
			c->lo = lo;
			c->has_lo = true;
			if (S_ISLNK(lo.st_mode))
				c->old_target = link_of(full);
		}
		return 1;
	}
	if (S_ISDIR(up->st_mode)) {
		opaque = is_opaque(abs) || hidden;
		if (opaque) {
			s->hidden = xreallocarray(s->hidden, s->nhidden + 1,
			    sizeof(*s->hidden));
			s->hidden[s->nhidden++] = xstrdup(rel);
		}
		if (has_lo && S_ISDIR(lo.st_mode)) {
			size_t before = s->cs->n, at;

			c = chg_add(s->cs, MODIFIED, rel);
			at = s->cs->n - 1;
			if (opaque)
				hidden_deletions(s, abs, rel, full);
			c = &s->cs->v[at];
			c->up = *up;
			c->lo = lo;
			c->has_lo = true;
			c->opaque = opaque;
			/* A parent of changes only: no change itself. */
			if (s->cs->n == at + 1 && (up->st_mode == lo.st_mode &&
			    up->st_uid == lo.st_uid &&
			    up->st_gid == lo.st_gid)) {
				free(c->rel);
				s->cs->n = before;
			}
			return 0;
		}
	} else if (has_lo &&
	    (cm = committed(s->t, rel)) != NULL && cm->ino == up->st_ino &&
	    ts_eq(&cm->mtim, &up->st_mtim) && ts_eq(&cm->ctim, &up->st_ctim))
		return 0;	/* committed, untouched since */
	c = chg_add(s->cs, has_lo ? MODIFIED : ADDED, rel);
	c->up = *up;
	if (S_ISLNK(up->st_mode))
		c->target = link_of(abs);
	if (has_lo) {
		c->lo = lo;
		c->has_lo = true;
		if (S_ISLNK(lo.st_mode))
			c->old_target = link_of(full);
	}
	return 0;
}

/* Overlay i's changes into cs; 0 or -errno. */
static int
scan(struct isodiff *d, size_t i, const char *upper, struct chgs *cs)
{
	struct scan s = { .d = d, .t = &d->t[i], .upper = upper, .cs = cs };
	char abs[PATH_MAX], rel[PATH_MAX];
	int rc;

	if (upper == NULL || d->t[i].path == NULL)
		return 0;
	snprintf(abs, sizeof(abs), "%s", upper);
	rel[0] = '\0';
	rc = ckpt_walk(abs, sizeof(abs), rel, sizeof(rel), scan_one, &s);
	for (size_t k = 0; k < s.nhidden; k++)
		free(s.hidden[k]);
	free(s.hidden);
	return rc;
}

/* --- answers ---------------------------------------------------------- */

static const char *
type_name(mode_t m)
{
	if (S_ISREG(m))
		return "file";
	if (S_ISDIR(m))
		return "dir";
	if (S_ISLNK(m))
		return "symlink";
	return "other";
}

static const char *
kind_name(enum kind k)
{
	return k == ADDED ? "added" : k == MODIFIED ? "modified" : "deleted";
}

static json_t *
chg_json(const struct tree *t, const struct chg *c)
{
	char full[PATH_MAX];
	const struct stat *now = c->kind == DELETED ? &c->lo : &c->up;
	json_t *o;

	(void)join(full, sizeof(full), t->path, c->rel);
	o = json_pack("{s:s,s:s,s:s,s:I,s:i}", "path", full, "change",
	    kind_name(c->kind), "type", type_name(now->st_mode), "size",
	    (json_int_t)now->st_size, "mode",
	    (int)fs_mode_decimal(now->st_mode & 07777));
	if (c->kind == DELETED ? c->old_target != NULL : c->target != NULL)
		json_object_set_new(o, "target", json_string(c->kind ==
		    DELETED ? c->old_target : c->target));
	if (c->kind == MODIFIED) {
		json_object_set_new(o, "old_type",
		    json_string(type_name(c->lo.st_mode)));
		json_object_set_new(o, "old_size",
		    json_integer((json_int_t)c->lo.st_size));
		json_object_set_new(o, "old_mode",
		    json_integer(fs_mode_decimal(c->lo.st_mode & 07777)));
		if (c->old_target != NULL)
			json_object_set_new(o, "old_target",
			    json_string(c->old_target));
	}
	if (c->opaque)
		json_object_set_new(o, "opaque", json_true());
	return o;
}

/*
 * A file's bytes as a string when they are short UTF-8 text, else NULL:
 * rel under root (an upper, or the real tree, whose links a commit may
 * have made: neither is followed).
 */
static json_t *
text_of(const char *root, const char *rel, const struct stat *st)
{
	char *buf;
	ssize_t n;
	size_t got = 0;
	json_t *j = NULL;
	int fd;

	if (!S_ISREG(st->st_mode) || st->st_size > ISODIFF_TEXT_MAX)
		return NULL;
	if ((fd = open_beneath(root, rel, O_RDONLY)) < 0)
		return NULL;
	buf = xmalloc(ISODIFF_TEXT_MAX + 1);
	while (got < ISODIFF_TEXT_MAX + 1 &&
	    (n = read(fd, buf + got, ISODIFF_TEXT_MAX + 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (got <= ISODIFF_TEXT_MAX && memchr(buf, 0, got) == NULL) {
		size_t k = 0, l;

		while (k < got && (l = utf8_len((unsigned char *)buf + k,
		    got - k)) > 0)
			k += l;
		if (k == got)
			j = json_stringn(buf, got);
	}
	free(buf);
	return j;
}

/* Check P: absolute, normal; into rel of its overlay.  The index or -1. */
static int
locate(struct isodiff *d, const char *p, const char **rel,
    struct isodiff_req *q)
{
	int i;

	if (p[0] != '/' || strstr(p, "//") != NULL ||
	    strstr(p, "/./") != NULL || strstr(p, "/../") != NULL ||
	    (strlen(p) >= 2 && (strcmp(p + strlen(p) - 2, "/.") == 0 ||
	    (strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0))) ||
	    strlen(p) >= PATH_MAX) {
		q->status = 400;
		q->code = "INVALID_REQUEST_BODY";
		snprintf(q->err, sizeof(q->err), "path \"%.900s\" must be an "
		    "absolute path without '.' or '..' parts", p);
		return -1;
	}
	if ((i = isodiff_overlay_of(d, p)) < 0) {
		q->status = 400;
		q->code = "INVALID_REQUEST_BODY";
		snprintf(q->err, sizeof(q->err), "path \"%.900s\" is not "
		    "under an overlay path of the session", p);
		return -1;
	}
	*rel = p + strlen(d->t[i].path);
	while (**rel == '/')
		(*rel)++;
	return i;
}

static json_t *
scan_error(struct isodiff_req *q, const char *upper, int rc)
{
	q->status = 500;
	q->code = "RUNTIME_ERROR";
	snprintf(q->err, sizeof(q->err), "reading the upper %.900s: %s",
	    upper, strerror(-rc));
	return NULL;
}

/* One path's change, with contents (isodiff_diff with a path). */
static json_t *
diff_one(struct isodiff *d, struct isodiff_req *q)
{
	struct chgs cs = { 0 };
	const char *rel;
	char lo[PATH_MAX];
	struct stat st;
	struct chg *c = NULL;
	json_t *o, *old = NULL, *new = NULL;
	int i, rc;

	if ((i = locate(d, q->path, &rel, q)) < 0)
		return NULL;
	if ((rc = scan(d, (size_t)i, q->uppers[i], &cs)) < 0) {
		chgs_free(&cs);
		return scan_error(q, q->uppers[i], rc);
	}
	for (size_t k = 0; k < cs.n && c == NULL; k++)
		if (strcmp(cs.v[k].rel, rel) == 0)
			c = &cs.v[k];
	/* Under a deleted directory: deleted too, if the real tree has it. */
	for (size_t k = 0, n = cs.n; k < n && c == NULL; k++)
		if (cs.v[k].kind == DELETED && under(rel, cs.v[k].rel)) {
			(void)join(lo, sizeof(lo), d->t[i].path, rel);
			if (lstat(lo, &st) < 0)
				break;
			c = chg_add(&cs, DELETED, rel);
			c->lo = st;
			c->has_lo = true;
		}
	if (c == NULL) {
		chgs_free(&cs);
		return json_pack("{s:s,s:s}", "path", q->path, "change",
		    "none");
	}
	o = chg_json(&d->t[i], c);
	if (c->kind != DELETED && q->uppers[i] != NULL)
		new = text_of(q->uppers[i], rel, &c->up);
	if (c->has_lo)
		old = text_of(d->t[i].path, rel, &c->lo);
	if (old != NULL)
		json_object_set_new(o, "old_content", old);
	if (new != NULL)
		json_object_set_new(o, "new_content", new);
	json_object_set_new(o, "text", json_boolean((!c->has_lo ||
	    !S_ISREG(c->lo.st_mode) || old != NULL) && (c->kind == DELETED ||
	    !S_ISREG(c->up.st_mode) || new != NULL)));
	chgs_free(&cs);
	return o;
}

json_t *
isodiff_diff(struct isodiff *d, struct isodiff_req *q)
{
	json_t *ovs, *a, *o = NULL;
	struct chgs cs;
	int rc;

	q->status = 200;
	pthread_mutex_lock(&d->mtx);
	if (q->path != NULL) {
		o = diff_one(d, q);
		goto out;
	}
	ovs = json_array();
	for (size_t i = 0; i < d->n; i++) {
		if (d->t[i].path == NULL)
			continue;
		memset(&cs, 0, sizeof(cs));
		if ((rc = scan(d, i, q->uppers[i], &cs)) < 0) {
			chgs_free(&cs);
			json_decref(ovs);
			o = scan_error(q, q->uppers[i], rc);
			goto out;
		}
		a = json_array();
		for (size_t k = 0; k < cs.n; k++)
			json_array_append_new(a, chg_json(&d->t[i], &cs.v[k]));
		json_array_append_new(ovs, json_pack("{s:s,s:o}", "path",
		    d->t[i].path, "changes", a));
		chgs_free(&cs);
	}
	o = json_pack("{s:o}", "overlays", ovs);
out:
	pthread_mutex_unlock(&d->mtx);
	return o;
}

/* --- commit ----------------------------------------------------------- */

/* Whether the lower entry rel is still what the manifest says. */
static bool
unchanged(struct tree *t, const char *rel, const struct stat *now, bool is)
{
	struct bent *e = base_find(t, rel);

	if (e == NULL || e->gone)
		return !is;
	if (!is)
		return false;
	if ((e->mode & S_IFMT) != (now->st_mode & S_IFMT) ||
	    e->ino != now->st_ino || e->dev != now->st_dev)
		return false;
	/* A directory's times move with its entries: those are checked. */
	if (S_ISDIR(now->st_mode))
		return true;
	return e->size == now->st_size && ts_eq(&e->mtim, &now->st_mtim) &&
	    ts_eq(&e->ctim, &now->st_ctim);
}

struct check {
	struct tree	*t;
	bool		 ok;
};

static int
check_one(const char *abs, const char *rel, const struct stat *st, void *arg)
{
	struct check *k = arg;

	if (!unchanged(k->t, rel, st, true)) {
		k->ok = false;
		return -ECANCELED;
	}
	return 0;
}

/*
 * Whether the lower entry rel (at full) is what the manifest says; with
 * tree, everything under it too (what a commit would remove).
 */
static bool
still(struct tree *t, const char *rel, const char *full, bool tree)
{
	struct check k = { .t = t, .ok = true };
	char abs[PATH_MAX], r[PATH_MAX];
	struct stat st;
	bool is = lstat(full, &st) == 0;

	if (!unchanged(t, rel, &st, is))
		return false;
	if (!is || !tree || !S_ISDIR(st.st_mode))
		return true;
	/* What the tree held then and no longer does is a change too. */
	for (size_t i = 0; i < t->nb; i++)
		if (!t->b[i].gone && under(t->b[i].rel, rel) &&
		    strcmp(t->b[i].rel, rel) != 0) {
			char p[PATH_MAX];

			if (join(p, sizeof(p), t->path, t->b[i].rel) < 0 ||
			    lstat(p, &st) < 0)
				return false;
		}
	snprintf(abs, sizeof(abs), "%s", full);
	snprintf(r, sizeof(r), "%s", rel);
	(void)ckpt_walk(abs, sizeof(abs), r, sizeof(r), check_one, &k);
	return k.ok;
}

/* rm -rf path (fs_tree.h: links inside are never followed). */
static int
rm_one(const char *path)
{
	char err[64];

	return fs_tree_remove(path, err, sizeof(err));
}

static int
copy_fd(int in, int out)
{
	char buf[65536];
	ssize_t n, w;

	for (;;) {
		n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n == 0)
			return 0;
		if (n < 0)
			break;
	}
	if (errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
	    errno != EOPNOTSUPP)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		for (ssize_t off = 0; off < n; off += w)
			if ((w = write(out, buf + off, (size_t)(n - off))) < 0)
				return -errno;
	return n < 0 ? -errno : 0;
}

/*
 * The permission bits a commit gives the real entry of up: the upper's,
 * but a non-directory's setuid and setgid bits, which would let code of
 * the session (as root, or as its uid) leave a program that runs with
 * its privilege in the real tree.  A directory keeps setgid: its files
 * take its group, which grants nothing.  (File capabilities, the
 * security.capability attribute, are not copied: no attribute is.)
 */
static mode_t
commit_mode(const struct stat *up)
{
	mode_t m = up->st_mode & 07777;

	return S_ISDIR(up->st_mode) ? m : m & ~(mode_t)(S_ISUID | S_ISGID);
}

/* m's bits as fs_mode_decimal's digits, the special ones first: 4755. */
static int
mode4(mode_t m)
{
	return (int)(((m >> 9) & 7) * 1000 + fs_mode_decimal(m & 0777));
}

/*
 * The upper's non-directory rel (under upper) made at tmp with its mode
 * (commit_mode), owner and mtime; what is read must be the entry the
 * walk saw.
 */
static int
make_tmp(const char *upper, const char *rel, const struct stat *up,
    const char *tmp)
{
	struct timespec ts[2] = { up->st_atim, up->st_mtim };
	char target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int in, out, rc = 0;

	if (!S_ISREG(up->st_mode) && !S_ISLNK(up->st_mode)) {
		if (mknod(tmp, (up->st_mode & S_IFMT) | commit_mode(up),
		    up->st_rdev) < 0 ||
		    lchown(tmp, up->st_uid, up->st_gid) < 0)
			return -errno;
		return 0;
	}
	if ((in = open_beneath(upper, rel, S_ISLNK(up->st_mode) ? O_PATH :
	    O_RDONLY)) < 0)
		return -errno;
	if (fstat(in, &st) < 0 || st.st_ino != up->st_ino ||
	    (st.st_mode & S_IFMT) != (up->st_mode & S_IFMT)) {
		close(in);
		return -ESTALE;		/* changed since the walk */
	}
	if (S_ISLNK(up->st_mode)) {
		n = readlinkat(in, "", target, sizeof(target) - 1);
		rc = n < 0 ? -errno : 0;
		close(in);
		if (rc < 0)
			return rc;
		target[n] = '\0';
		if (symlink(target, tmp) < 0 ||
		    lchown(tmp, up->st_uid, up->st_gid) < 0)
			return -errno;
		return 0;
	}
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	rc = copy_fd(in, out);
	close(in);
	if (rc == 0 && (fchown(out, up->st_uid, up->st_gid) < 0 ||
	    fchmod(out, commit_mode(up)) < 0 || futimens(out, ts) < 0))
		rc = -errno;
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

/*
 * The lower's parents of rel: each must be a real directory (not a link
 * out of the tree: -ENOTDIR), and missing ones are made as the upper has
 * them (with make; else -ENOENT).
 */
static int
parents(struct tree *t, const char *upper, const char *rel, bool make)
{
	char r[PATH_MAX], lo[PATH_MAX], up[PATH_MAX];
	struct stat st;

	snprintf(r, sizeof(r), "%s", rel);
	for (char *s = strchr(r, '/'); s != NULL; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (join(lo, sizeof(lo), t->path, r) < 0 ||
		    join(up, sizeof(up), upper, r) < 0)
			return -ENAMETOOLONG;
		if (lstat(lo, &st) == 0 && !S_ISDIR(st.st_mode))
			return -ENOTDIR;
		if (lstat(lo, &st) < 0) {
			if (!make)
				return -ENOENT;
			if (lstat(up, &st) < 0 || !S_ISDIR(st.st_mode))
				return -ENOTDIR;
			if (mkdir(lo, st.st_mode & 07777) < 0 ||
			    chown(lo, st.st_uid, st.st_gid) < 0 ||
			    chmod(lo, st.st_mode & 07777) < 0)
				return -errno;
			if (lstat(lo, &st) == 0)
				base_set(t, r, &st);
		}
		*s = '/';
	}
	return 0;
}

/* Apply c to the lower at full. */
static int
apply(struct tree *t, const char *upper, const struct chg *c,
    const char *full)
{
	char tmp[PATH_MAX];
	struct stat st;
	bool is;
	int rc;

	if (c->kind == DELETED) {
		rc = parents(t, upper, c->rel, false);
		return rc == -ENOENT ? 0 : rc < 0 ? rc : rm_one(full);
	}
	if ((rc = parents(t, upper, c->rel, true)) < 0)
		return rc;
	is = lstat(full, &st) == 0;
	if (S_ISDIR(c->up.st_mode)) {
		if (is && !S_ISDIR(st.st_mode)) {
			if (unlink(full) < 0)
				return -errno;
			is = false;
		}
		if (!is && mkdir(full, 0700) < 0)
			return -errno;
		if (chown(full, c->up.st_uid, c->up.st_gid) < 0 ||
		    chmod(full, c->up.st_mode & 07777) < 0)
			return -errno;
		return 0;
	}
	if ((rc = fs_path_tmp_beside(full, ".execd-commit-", tmp,
	    sizeof(tmp))) < 0 ||
	    (rc = make_tmp(upper, c->rel, &c->up, tmp)) < 0)
		return rc;
	/* A directory is not renamed over: it goes first. */
	if (is && S_ISDIR(st.st_mode) && (rc = rm_one(full)) < 0) {
		unlink(tmp);
		return rc;
	}
	if (rename(tmp, full) < 0) {
		rc = -errno;
		unlink(tmp);
		return rc;
	}
	return 0;
}

static bool
selected(const char *full, struct isodiff_req *q)
{
	if (q->npaths == 0)
		return true;
	for (size_t i = 0; i < q->npaths; i++)
		if (under(full, q->paths[i]))
			return true;
	return false;
}

json_t *
isodiff_commit(struct isodiff *d, struct isodiff_req *q)
{
	json_t *applied = NULL, *conflicts, *failed, *stripped, *o = NULL;
	char full[PATH_MAX], up[PATH_MAX];
	struct chgs cs;
	struct stat st;
	const char *rel;
	int rc;

	q->status = 200;
	pthread_mutex_lock(&d->mtx);
	for (size_t k = 0; k < q->npaths; k++)
		if (locate(d, q->paths[k], &rel, q) < 0)
			goto out;
	applied = json_array();
	conflicts = json_array();
	failed = json_array();
	stripped = json_array();
	for (size_t i = 0; i < d->n; i++) {
		struct tree *t = &d->t[i];

		if (t->path == NULL)
			continue;
		memset(&cs, 0, sizeof(cs));
		if ((rc = scan(d, i, q->uppers[i], &cs)) < 0) {
			chgs_free(&cs);
			json_decref(applied);
			json_decref(conflicts);
			json_decref(failed);
			json_decref(stripped);
			o = scan_error(q, q->uppers[i], rc);
			goto out;
		}
		for (size_t k = 0; k < cs.n; k++) {
			const struct chg *c = &cs.v[k];
			bool tree;

			if (join(full, sizeof(full), t->path, c->rel) < 0 ||
			    !selected(full, q))
				continue;
			/* What the change would remove must be untouched. */
			tree = c->kind == DELETED || (c->has_lo &&
			    S_ISDIR(c->lo.st_mode) && !S_ISDIR(c->up.st_mode));
			if (!still(t, c->rel, full, tree)) {
				json_array_append_new(conflicts, json_pack(
				    "{s:s,s:s}", "path", full, "reason",
				    "changed outside the session since it "
				    "started"));
				continue;
			}
			if ((rc = apply(t, q->uppers[i], c, full)) < 0) {
				json_array_append_new(failed, json_pack(
				    "{s:s,s:s}", "path", full, "error",
				    strerror(-rc)));
				continue;
			}
			if (c->kind == DELETED)
				base_gone(t, c->rel);
			else if (lstat(full, &st) == 0) {
				base_set(t, c->rel, &st);
				if (!S_ISDIR(c->up.st_mode) &&
				    join(up, sizeof(up), q->uppers[i],
				    c->rel) == 0 && lstat(up, &st) == 0)
					set_committed(t, c->rel, &st);
			}
			json_array_append_new(applied, json_string(full));
			if (c->kind != DELETED && commit_mode(&c->up) !=
			    (c->up.st_mode & 07777))
				json_array_append_new(stripped, json_pack(
				    "{s:s,s:i,s:i}", "path", full, "mode",
				    mode4(c->up.st_mode), "committed_mode",
				    mode4(commit_mode(&c->up))));
		}
		chgs_free(&cs);
		base_sort(t);
	}
	o = json_pack("{s:o,s:o,s:o,s:o}", "applied", applied, "conflicts",
	    conflicts, "failed", failed, "stripped", stripped);
out:
	pthread_mutex_unlock(&d->mtx);
	return o;
}
