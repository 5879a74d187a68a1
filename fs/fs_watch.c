/*
 * fs_watch.c -- inotify watches turned into path events.
 *
 * One inotify descriptor per watch object.  A table sorted by watch
 * descriptor (wd) maps each watched directory to its current path; events
 * are translated against it in the order the kernel queued them, so an
 * event is named by the path its directory had at that moment.  Reading
 * is split in two: a batch from read(2) is first turned into a queue of
 * finished events (updating the table: new directories watched, moved
 * ones renamed, removed ones forgotten), then the queue is handed to the
 * callback.  A callback that stops the read leaves the rest of the queue
 * for the next call, and the table is never behind the events.
 *
 * Not for: following symlinks below the root (IN_DONT_FOLLOW), watching
 * anything but directories below the root, logging.  The thread rules are
 * in fs_watch.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_walk.h"
#include "fs_watch.h"

/* What every watched directory reports. */
#define DIR_MASK	(IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | \
			 IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | \
			 IN_MOVE_SELF)
/* What a watched file reports. */
#define FILE_MASK	(IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
/* One read(2): room for many events, at least one with the longest name. */
#define READ_BUF	(64 * 1024)

struct wdent {
	int		 wd;
	char		*path;
};

struct qev {
	enum fs_watch_kind kind;
	char		*path;
	bool		 dir;
	uint32_t	 cookie;
};

struct fs_watch {
	int		 fd;
	bool		 recursive;
	size_t		 max_dirs, max_queue;
	bool		 isdir;		/* the root is a directory */
	bool		 gone;		/* "gone" queued: nothing more */
	char		*root;
	int		 rootwd;

	struct wdent	*w;		/* sorted by wd */
	size_t		 nw, capw;

	struct qev	*q;		/* q[qhead..qn) wait for the callback */
	size_t		 qhead, qn, capq;
	bool		 qfull;		/* overflow queued for a full queue */

	uint32_t	 mvcookie;	/* a directory's moved_from, unpaired */
	char		*mvpath;

	/* One read(2) of events; here rather than on the caller's stack. */
	char		 rbuf[READ_BUF]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
};

/* State handed to the walker callbacks. */
struct scan {
	struct fs_watch	*fw;
	bool		 report;	/* queue a create for each entry */
	int		 rc;		/* first hard error: -ENOSPC, -ENOMEM */
};

static char	*join(const char *, const char *);
static size_t	 wd_find(const struct fs_watch *, int, bool *);
static int	 wd_add(struct fs_watch *, const char *, uint32_t, bool);
static void	 wd_del(struct fs_watch *, size_t);
static void	 subtree_drop(struct fs_watch *, const char *);
static int	 subtree_rename(struct fs_watch *, const char *, const char *);
static int	 scan_one(const char *, const char *, const struct stat *, int,
		    void *);
static int	 scan_tree(struct fs_watch *, const char *, bool);
static int	 queue_push(struct fs_watch *, enum fs_watch_kind, const char *,
		    bool, uint32_t);
static int	 queue_take(struct fs_watch *, enum fs_watch_kind, char *, bool,
		    uint32_t);
static void	 move_settle(struct fs_watch *);
static int	 set_gone(struct fs_watch *);
static int	 handle(struct fs_watch *, const struct inotify_event *);
static int	 deliver(struct fs_watch *, fs_watch_cb *, void *);
static void	 drain(struct fs_watch *);

/* Human names of the kinds, in enum order. */
static const char *const kind_names[] = {
	"create", "modify", "delete", "moved_from", "moved_to", "attrib",
	"overflow", "gone",
};

/* The name of a kind; see fs_watch.h. */
const char *
fs_watch_kind_name(enum fs_watch_kind k)
{
	if ((unsigned)k >= sizeof(kind_names) / sizeof(kind_names[0]))
		return "unknown";
	return kind_names[k];
}

/* dir + "/" + name in a new string (no doubled slash after "/"); NULL on
 * ENOMEM. */
static char *
join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	bool slash = dl > 0 && dir[dl - 1] != '/';
	char *p;

	if ((p = malloc(dl + slash + nl + 1)) == NULL)
		return NULL;
	memcpy(p, dir, dl);
	if (slash)
		p[dl] = '/';
	memcpy(p + dl + slash, name, nl + 1);
	return p;
}

/* Index of wd in the table (*found), or where it would go. */
static size_t
wd_find(const struct fs_watch *fw, int wd, bool *found)
{
	size_t lo = 0, hi = fw->nw, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (fw->w[mid].wd == wd) {
			*found = true;
			return mid;
		}
		if (fw->w[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

/*
 * Watch the directory path (or, for the root, whatever it is) with mask.
 * 0, or -ENOSPC at the cap, or -errno from inotify_add_watch / malloc.  A
 * wd already known (the same directory reached again) takes the new path.
 */
static int
wd_add(struct fs_watch *fw, const char *path, uint32_t mask, bool root)
{
	struct wdent *nw;
	size_t i, ncap;
	bool found;
	char *p;
	int wd;

	if (fw->nw >= fw->max_dirs)
		return -ENOSPC;
	if ((p = strdup(path)) == NULL)
		return -ENOMEM;
	if ((wd = inotify_add_watch(fw->fd, path, mask)) < 0) {
		free(p);
		return -errno;
	}
	i = wd_find(fw, wd, &found);
	if (found) {
		/* The root keeps its name whatever leads back to it. */
		if (wd == fw->rootwd)
			free(p);
		else {
			free(fw->w[i].path);
			fw->w[i].path = p;
		}
		goto out;
	}
	if (fw->nw == fw->capw) {
		ncap = fw->capw ? fw->capw * 2 : 16;
		if ((nw = realloc(fw->w, ncap * sizeof(*nw))) == NULL) {
			inotify_rm_watch(fw->fd, wd);
			free(p);
			return -ENOMEM;
		}
		fw->w = nw;
		fw->capw = ncap;
	}
	memmove(&fw->w[i + 1], &fw->w[i], (fw->nw - i) * sizeof(fw->w[0]));
	fw->w[i].wd = wd;
	fw->w[i].path = p;
	fw->nw++;
out:
	if (root)
		fw->rootwd = wd;
	return 0;
}

/* Forget table entry i (the kernel watch is the caller's business). */
static void
wd_del(struct fs_watch *fw, size_t i)
{
	free(fw->w[i].path);
	memmove(&fw->w[i], &fw->w[i + 1], (fw->nw - i - 1) * sizeof(fw->w[0]));
	fw->nw--;
}

/* Stop watching the directory path and everything below it. */
static void
subtree_drop(struct fs_watch *fw, const char *path)
{
	size_t len = strlen(path), i, j;
	const char *p;

	for (i = j = 0; i < fw->nw; i++) {
		p = fw->w[i].path;
		if (fw->w[i].wd != fw->rootwd && strncmp(p, path, len) == 0 &&
		    (p[len] == '\0' || p[len] == '/')) {
			inotify_rm_watch(fw->fd, fw->w[i].wd);
			free(fw->w[i].path);
			continue;
		}
		fw->w[j++] = fw->w[i];
	}
	fw->nw = j;
}

/* Rename the watched directory from (and those below it) to to.  0 or
 * -ENOMEM. */
static int
subtree_rename(struct fs_watch *fw, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to), rest;
	char *p, *np;

	for (size_t i = 0; i < fw->nw; i++) {
		p = fw->w[i].path;
		if (fw->w[i].wd == fw->rootwd || strncmp(p, from, fl) != 0 ||
		    (p[fl] != '\0' && p[fl] != '/'))
			continue;
		rest = strlen(p + fl);
		if ((np = malloc(tl + rest + 1)) == NULL)
			return -ENOMEM;
		memcpy(np, to, tl);
		memcpy(np + tl, p + fl, rest + 1);
		free(p);
		fw->w[i].path = np;
	}
	return 0;
}

/* Walker callback: watch each directory, maybe report each entry. */
static int
scan_one(const char *path, const char *rel, const struct stat *st, int depth,
    void *arg)
{
	struct scan *s = arg;
	bool dir = S_ISDIR(st->st_mode);
	int rc;

	if (s->report && (rc = queue_push(s->fw, FS_W_CREATE, path, dir, 0)) <
	    0) {
		s->rc = rc;
		return rc;
	}
	if (!dir)
		return 0;
	rc = wd_add(s->fw, path, DIR_MASK | IN_ONLYDIR | IN_DONT_FOLLOW, false);
	if (rc == -ENOMEM || (rc == -ENOSPC && s->rc == 0))
		s->rc = rc;
	if (rc == -ENOMEM || (rc == -ENOSPC && !s->report))
		return rc;
	/* Unwatchable (gone, no permission, cap): do not go in. */
	return rc < 0 ? 1 : 0;
}

/*
 * Watch every directory below dir; with report, queue a create for every
 * entry found.  0, or the first hard error (-ENOSPC at the cap when not
 * reporting, -ENOMEM).  Entries that vanish or cannot be read are skipped.
 */
static int
scan_tree(struct fs_watch *fw, const char *dir, bool report)
{
	struct scan s = { fw, report, 0 };
	char err[256];

	(void)fs_walk(dir, FS_WALK_ALL, scan_one, &s, err, sizeof(err));
	return s.rc;
}

/* Queue an event with a copy of path.  0 or -ENOMEM. */
static int
queue_push(struct fs_watch *fw, enum fs_watch_kind kind, const char *path,
    bool dir, uint32_t cookie)
{
	char *p;

	if ((p = strdup(path)) == NULL)
		return -ENOMEM;
	return queue_take(fw, kind, p, dir, cookie);
}

/*
 * Queue an event, taking ownership of path.  Past max_queue the
 * event is dropped and one "overflow" queued instead.  0 or -ENOMEM.
 */
static int
queue_take(struct fs_watch *fw, enum fs_watch_kind kind, char *path,
    bool dir, uint32_t cookie)
{
	struct qev *nq;
	size_t ncap;

	if (fw->qn - fw->qhead >= fw->max_queue) {
		free(path);
		if (fw->qfull)
			return 0;
		/* One slot past the cap, for the overflow itself. */
		if ((path = strdup(fw->root)) == NULL)
			return -ENOMEM;
		fw->qfull = true;
		kind = FS_W_OVERFLOW;
		dir = fw->isdir;
		cookie = 0;
	}
	if (fw->qhead > 0 && fw->qn == fw->capq) {
		memmove(fw->q, &fw->q[fw->qhead],
		    (fw->qn - fw->qhead) * sizeof(fw->q[0]));
		fw->qn -= fw->qhead;
		fw->qhead = 0;
	}
	if (fw->qn == fw->capq) {
		ncap = fw->capq ? fw->capq * 2 : 64;
		if ((nq = realloc(fw->q, ncap * sizeof(*nq))) == NULL) {
			free(path);
			return -ENOMEM;
		}
		fw->q = nq;
		fw->capq = ncap;
	}
	fw->q[fw->qn].kind = kind;
	fw->q[fw->qn].path = path;
	fw->q[fw->qn].dir = dir;
	fw->q[fw->qn].cookie = cookie;
	fw->qn++;
	return 0;
}

/* A directory's moved_from that no moved_to paired: it left the tree. */
static void
move_settle(struct fs_watch *fw)
{
	if (fw->mvpath == NULL)
		return;
	subtree_drop(fw, fw->mvpath);
	free(fw->mvpath);
	fw->mvpath = NULL;
	fw->mvcookie = 0;
}

/* The root went away: queue "gone", stop every watch.  0 or -ENOMEM. */
static int
set_gone(struct fs_watch *fw)
{
	fw->gone = true;
	free(fw->mvpath);
	fw->mvpath = NULL;
	while (fw->nw > 0) {
		inotify_rm_watch(fw->fd, fw->w[fw->nw - 1].wd);
		wd_del(fw, fw->nw - 1);
	}
	return queue_push(fw, FS_W_GONE, fw->root, fw->isdir, 0);
}

/*
 * Turn one kernel event into queued events and table changes.  0 or
 * -ENOMEM.  Steps: 1. overflow; 2. settle an unpaired move; 3. find the
 * directory; 4. events about a watched object itself; 5. named entries.
 */
static int
handle(struct fs_watch *fw, const struct inotify_event *ev)
{
	const uint32_t self = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED |
	    IN_UNMOUNT;
	bool found, dir = (ev->mask & IN_ISDIR) != 0;
	enum fs_watch_kind kind;
	const char *dpath;
	char *path;
	size_t i;
	int rc;

	/* 1. */
	if (ev->mask & IN_Q_OVERFLOW)
		return queue_push(fw, FS_W_OVERFLOW, fw->root, fw->isdir, 0);
	/* 2. */
	if (fw->mvpath != NULL && !((ev->mask & IN_MOVED_TO) &&
	    ev->cookie == fw->mvcookie))
		move_settle(fw);
	/* 3. */
	i = wd_find(fw, ev->wd, &found);
	if (!found)
		return 0;
	dpath = fw->w[i].path;
	/* 4. */
	if (ev->wd == fw->rootwd && (ev->mask & self))
		return set_gone(fw);
	if (ev->mask & IN_IGNORED) {
		wd_del(fw, i);
		return 0;
	}
	if (ev->mask & self)
		return 0;
	if (ev->len == 0 || ev->name[0] == '\0') {
		/* Subdirectories are reported by their parent. */
		if (ev->wd != fw->rootwd)
			return 0;
		if (ev->mask & IN_ATTRIB)
			return queue_push(fw, FS_W_ATTRIB, dpath, fw->isdir, 0);
		if ((ev->mask & IN_MODIFY) && !fw->isdir)
			return queue_push(fw, FS_W_MODIFY, dpath, false, 0);
		return 0;
	}
	/* 5. */
	if ((path = join(dpath, ev->name)) == NULL)
		return -ENOMEM;
	if (ev->mask & IN_CREATE)
		kind = FS_W_CREATE;
	else if (ev->mask & IN_MODIFY)
		kind = FS_W_MODIFY;
	else if (ev->mask & IN_DELETE)
		kind = FS_W_DELETE;
	else if (ev->mask & IN_MOVED_FROM)
		kind = FS_W_MOVED_FROM;
	else if (ev->mask & IN_MOVED_TO)
		kind = FS_W_MOVED_TO;
	else if (ev->mask & IN_ATTRIB)
		kind = FS_W_ATTRIB;
	else {
		free(path);
		return 0;
	}
	rc = 0;
	if (fw->recursive && dir && kind == FS_W_MOVED_FROM) {
		/* Keep the old path until the moved_to says where it went. */
		free(fw->mvpath);
		if ((fw->mvpath = strdup(path)) == NULL)
			rc = -ENOMEM;
		fw->mvcookie = ev->cookie;
	} else if (fw->recursive && dir && kind == FS_W_MOVED_TO &&
	    fw->mvpath != NULL) {
		rc = subtree_rename(fw, fw->mvpath, path);
		free(fw->mvpath);
		fw->mvpath = NULL;
		fw->mvcookie = 0;
	} else if (fw->recursive && dir && (kind == FS_W_MOVED_TO ||
	    kind == FS_W_CREATE)) {
		/* Past the cap (or gone already): silently not watched. */
		rc = wd_add(fw, path, DIR_MASK | IN_ONLYDIR | IN_DONT_FOLLOW,
		    false);
		if (rc == 0) {
			/* The create goes first, then what the scan finds. */
			if ((rc = queue_push(fw, kind, path, dir,
			    ev->cookie)) < 0) {
				free(path);
				return rc;
			}
			rc = scan_tree(fw, path, kind == FS_W_CREATE);
			free(path);
			return rc == -ENOMEM ? rc : 0;
		}
		rc = rc == -ENOMEM ? rc : 0;
	}
	if (rc < 0) {
		free(path);
		return rc;
	}
	return queue_take(fw, kind, path, dir,
	    kind == FS_W_MOVED_FROM || kind == FS_W_MOVED_TO ? ev->cookie : 0);
}

/* Hand queued events to cb.  0, or cb's error (that event is consumed). */
static int
deliver(struct fs_watch *fw, fs_watch_cb *cb, void *arg)
{
	struct fs_watch_event e;
	struct qev *q;
	int rc;

	while (fw->qhead < fw->qn) {
		q = &fw->q[fw->qhead++];
		e.kind = q->kind;
		e.path = q->path;
		e.dir = q->dir;
		e.cookie = q->cookie;
		rc = cb(&e, arg);
		free(q->path);
		q->path = NULL;
		if (rc < 0)
			return rc;
	}
	fw->qhead = fw->qn = 0;
	fw->qfull = false;
	return 0;
}

/* Read and discard whatever the kernel still has. */
static void
drain(struct fs_watch *fw)
{
	ssize_t n;

	while ((n = read(fw->fd, fw->rbuf, sizeof(fw->rbuf))) > 0 ||
	    (n < 0 && errno == EINTR))
		;
}

/* Start watching; see fs_watch.h. */
struct fs_watch *
fs_watch_new(const char *path, const struct fs_watch_opts *opts, char *err,
    size_t errlen)
{
	static const struct fs_watch_opts defaults;
	struct fs_watch *fw;
	struct stat st;
	size_t len;
	int rc, e;

	if (path == NULL || path[0] == '\0') {
		snprintf(err, errlen, "empty path");
		errno = EINVAL;
		return NULL;
	}
	if (stat(path, &st) < 0) {
		e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	if ((fw = calloc(1, sizeof(*fw))) == NULL ||
	    (fw->root = strdup(path)) == NULL) {
		free(fw);
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	/* "/a/b//" is reported as "/a/b"; "/" stays "/". */
	for (len = strlen(fw->root); len > 1 && fw->root[len - 1] == '/';)
		fw->root[--len] = '\0';
	if (opts == NULL)
		opts = &defaults;
	fw->isdir = S_ISDIR(st.st_mode);
	fw->recursive = opts->recursive && fw->isdir;
	fw->max_dirs = opts->max_dirs > 0 ? opts->max_dirs :
	    FS_WATCH_MAX_DIRS;
	fw->max_queue = opts->max_queue > 0 ? opts->max_queue :
	    FS_WATCH_MAX_QUEUE;
	fw->rootwd = -1;
	if ((fw->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "inotify_init1: %s", strerror(-rc));
		goto fail;
	}
	if ((rc = wd_add(fw, fw->root, fw->isdir ? DIR_MASK : FILE_MASK,
	    true)) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto fail;
	}
	if (fw->recursive && (rc = scan_tree(fw, fw->root, false)) < 0) {
		snprintf(err, errlen, "%s: %s", path, rc == -ENOSPC ?
		    "too many directories to watch" : strerror(-rc));
		goto fail;
	}
	return fw;
fail:
	fs_watch_free(fw);
	errno = -rc;
	return NULL;
}

/* The descriptor to poll; see fs_watch.h. */
int
fs_watch_fd(const struct fs_watch *fw)
{
	return fw->fd;
}

/* Watches in place; see fs_watch.h. */
size_t
fs_watch_count(const struct fs_watch *fw)
{
	return fw->nw;
}

/* Read and deliver every pending event; see fs_watch.h. */
int
fs_watch_read(struct fs_watch *fw, fs_watch_cb *cb, void *arg)
{
	const struct inotify_event *ev;
	ssize_t n;
	size_t off;
	int rc;

	for (;;) {
		if ((rc = deliver(fw, cb, arg)) < 0)
			return rc;
		if (fw->gone) {
			drain(fw);
			return 0;
		}
		if ((n = read(fw->fd, fw->rbuf, sizeof(fw->rbuf))) < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			/* Nothing more: a lone moved_from left the tree. */
			move_settle(fw);
			return 0;
		}
		if (n == 0)	/* not from inotify; never loop on it */
			return 0;
		for (off = 0; off + sizeof(*ev) <= (size_t)n;
		    off += sizeof(*ev) + ev->len) {
			/*
			 * Never trust a record the kernel would not write:
			 * out of line (inotify pads every name), with a name
			 * past the bytes read, or unended.
			 */
			if (off % _Alignof(struct inotify_event) != 0)
				break;
			ev = (const struct inotify_event *)(fw->rbuf + off);
			if (ev->len > (size_t)n - off - sizeof(*ev) ||
			    (ev->len > 0 && memchr(ev->name, '\0',
			    ev->len) == NULL))
				break;
			if ((rc = handle(fw, ev)) < 0)
				return rc;
			if (fw->gone)
				break;
		}
	}
}

/* Free everything; see fs_watch.h. */
void
fs_watch_free(struct fs_watch *fw)
{
	if (fw == NULL)
		return;
	if (fw->fd >= 0)
		close(fw->fd);
	for (size_t i = 0; i < fw->nw; i++)
		free(fw->w[i].path);
	for (size_t i = fw->qhead; i < fw->qn; i++)
		free(fw->q[i].path);
	free(fw->w);
	free(fw->q);
	free(fw->mvpath);
	free(fw->root);
	free(fw);
}
