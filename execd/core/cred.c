/*
 * cred.c -- a thread acting as another user for a while (see cred.h).
 *
 * Why a thread and not a forked worker: the file routes already run their
 * blocking work on the worker pool (work.c) and the rest in short steps on
 * the loop thread, and a file they open stays theirs to read and write
 * (downloads stream from it, uploads into it).  Giving those same threads
 * the user's credentials around each step lets every handler run as it is,
 * with the kernel checking each open, mkdir, rename, unlink, chmod and
 * chown against the user -- nothing here or in the routes guesses what the
 * kernel would allow.  A forked process per request would need each
 * answer, and each open descriptor, shipped back.
 *
 * Linux keeps credentials per thread; glibc's setresuid() and friends
 * make every thread of the process follow (they signal each one), which
 * is why the raw system calls are used.  Only the calling thread changes.
 *
 * What a thread takes: the supplementary groups, then the effective gid,
 * then the effective uid (the filesystem ids follow the effective ones).
 * The real and saved ids stay execd's.  So:
 *  - leaving the effective uid 0 clears the thread's effective
 *    capabilities (CAP_DAC_OVERRIDE, CAP_CHOWN, CAP_FOWNER, ...), which
 *    cred_enter() checks: a non-root identity with any effective
 *    capability left (a securebits setting could keep them) is refused;
 *  - the permitted set is kept (the saved uid is still 0), which is what
 *    lets cred_leave() come back; that code is execd's, never the user's;
 *  - with the real and saved uid still 0, processes of that user can
 *    neither signal execd nor trace the thread meanwhile (the kernel asks
 *    for a match on the real or saved uid, and on all three for ptrace).
 * A credential change resets the process's dumpable flag to the system's
 * suid_dumpable; execd keeps itself not dumpable (main.c), so the flag is
 * set again after every change.
 *
 * A thread that cannot give an identity back would go on as that user or
 * worse: cred_leave() then stops execd.
 *
 * A root (cred_root()) is per thread too: the thread first gives itself
 * its own root and working directory (unshare(CLONE_FS); the rest of
 * execd keeps sharing theirs), then chroots into the root's descriptor
 * for the stretch and back into its own "/" (held open meanwhile) after
 * it.  So every lookup of the stretch -- the handler's, the fs/ walks of
 * a search or a listing, a symlink's absolute target, ".." -- stays
 * beneath the root, with no change to the code that resolves them.
 *
 * A view (cred_view(), the isolated sessions' file routes) is a root
 * that is a mount namespace: a private copy of the session shell's, made
 * on the calling thread (setns into the shell's, unshare(CLONE_NEWNS),
 * every mount made private so that nothing done in the copy propagates,
 * then every procfs mount detached, checked by reading mountinfo again).
 * A chroot alone would leave the session's /proc in reach, and a link the
 * session plants to /proc/self/root, /proc/<pid>/cwd or /proc/<pid>/fd/N
 * is a "magic link" the kernel follows to wherever it points, past any
 * root: with no procfs in the view there is none to follow, for every
 * lookup of every route, as chroot contains the others.  A thread enters
 * the copy with setns (which needs a filesystem context of its own) and
 * goes back to its namespace, "/" and working directory after.  The copy
 * lives while a cred names it (the descriptor), so a request's; it holds
 * the session's mounts meanwhile, in no process's namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdatomic.h>
#include <pwd.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cred.h"
#include "log.h"
#include "xmalloc.h"

/* The 32-bit id calls where the plain ones take 16-bit ids. */
#ifdef SYS_setresuid32
#define SYS_SETRESUID	SYS_setresuid32
#define SYS_SETRESGID	SYS_setresgid32
#define SYS_SETGROUPS	SYS_setgroups32
#else
#define SYS_SETRESUID	SYS_setresuid
#define SYS_SETRESGID	SYS_setresgid
#define SYS_SETGROUPS	SYS_setgroups
#endif

#define PWBUF_MAX	(1024 * 1024)	/* a passwd entry's strings */

/* The calling thread's identity, and what it gives back. */
static __thread struct {
	struct cred	 cur;
	unsigned	 depth;		/* 0: acting as execd */
	bool		 switched;	/* ids changed (not already these) */
	uid_t		 euid;
	gid_t		 egid;
	size_t		 ngroups;
	gid_t		 groups[CRED_NGROUPS];
	int		 old_root;	/* while in a root: "/" and ".", */
	int		 old_cwd;	/* to go back to */
	int		 old_ns;	/* and, in a view, the mount namespace */
} T;

struct cred_root {
	atomic_uint	 refs;
	int		 fd;
	bool		 ns;		/* fd: a mount namespace (cred_view) */
};

static bool	 same_groups(const gid_t *, size_t, const gid_t *, size_t);
static bool	 same_cred(const struct cred *, const struct cred *);
static int	 caps_effective(bool *);
static void	 keep_undumpable(void);

/* Whether two group lists hold the same ids (as sets). */
static bool
same_groups(const gid_t *a, size_t na, const gid_t *b, size_t nb)
{
	size_t i, j;

	for (i = 0; i < na; i++) {
		for (j = 0; j < nb && b[j] != a[i]; j++)
			;
		if (j == nb)
			return false;
	}
	for (j = 0; j < nb; j++) {
		for (i = 0; i < na && a[i] != b[j]; i++)
			;
		if (i == na)
			return false;
	}
	return true;
}

static bool
same_cred(const struct cred *a, const struct cred *b)
{
	return a->uid == b->uid && a->gid == b->gid && a->root == b->root &&
	    same_groups(a->groups, a->ngroups, b->groups, b->ngroups);
}

/* Whether the calling thread holds any effective capability. */
static int
caps_effective(bool *any)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	*any = false;
	for (size_t i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		if (d[i].effective != 0)
			*any = true;
	return 0;
}

static void
keep_undumpable(void)
{
	(void)prctl(PR_SET_DUMPABLE, 0);
}

/*
 * The thread's own filesystem context (root, cwd).  Each time: a thread
 * created since by one that had its own (pthread_create shares it with
 * CLONE_FS) shares it again, and would follow its chroot, while setns
 * refuses a shared one.  Free when it is not shared.
 */
static int
own_fs(void)
{
	return unshare(CLONE_FS) < 0 ? -errno : 0;
}

/* Back from a mount namespace entered from ns, to root and cwd. */
static void
ns_back(int ns, int root, int cwd)
{
	if (setns(ns, CLONE_NEWNS) < 0 || fchdir(root) < 0 ||
	    chroot(".") < 0 || fchdir(cwd) < 0)
		fatal("cannot leave a mount namespace");
}

/* Act in r as the thread's root; 0 or -errno with nothing changed. */
static int
root_enter(const struct cred_root *r)
{
	int rc;

	if ((rc = own_fs()) < 0)
		return rc;
	T.old_ns = -1;
	if ((T.old_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if ((T.old_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = -errno;
		close(T.old_root);
		return rc;
	}
	if (r->ns) {
		/* setns gives the thread the namespace's root and cwd. */
		if ((T.old_ns = open("/proc/thread-self/ns/mnt", O_RDONLY |
		    O_CLOEXEC)) < 0 || setns(r->fd, CLONE_NEWNS) < 0) {
			rc = -errno;
			if (T.old_ns >= 0)
				close(T.old_ns);
			close(T.old_root);
			close(T.old_cwd);
			return rc;
		}
		return 0;
	}
	if (fchdir(r->fd) < 0 || chroot(".") < 0) {
		rc = -errno;
		if (fchdir(T.old_cwd) < 0)
			fatal("cannot go back to the working directory");
		close(T.old_root);
		close(T.old_cwd);
		return rc;
	}
	return 0;
}

static void
root_leave(void)
{
	if (T.old_ns >= 0) {
		ns_back(T.old_ns, T.old_root, T.old_cwd);
		close(T.old_ns);
		T.old_ns = -1;
	} else if (fchdir(T.old_root) < 0 || chroot(".") < 0 ||
	    fchdir(T.old_cwd) < 0)
		fatal("cannot leave a root directory");
	close(T.old_root);
	close(T.old_cwd);
}

/* Unescape mountinfo's \ooo in p..end into out; 0 or -EINVAL. */
static int
unescape(const char *p, const char *end, char *out, size_t outlen)
{
	size_t n = 0;
	unsigned v;

	for (; p < end; p++) {
		if (*p != '\\')
			v = (unsigned char)*p;
		else {
			if (end - p < 4 || p[1] < '0' || p[1] > '3' ||
			    p[2] < '0' || p[2] > '7' || p[3] < '0' || p[3] > '7')
				return -EINVAL;
			v = (unsigned)(p[1] - '0') * 64 + (unsigned)(p[2] - '0') *
			    8 + (unsigned)(p[3] - '0');
			p += 3;
		}
		if (v == 0 || n + 1 >= outlen)
			return -EINVAL;
		out[n++] = (char)v;
	}
	out[n] = '\0';
	return out[0] == '/' ? 0 : -EINVAL;
}

/* See cred.h. */
int
cred_proc_mounts(const char *text, size_t len,
    void (*fn)(const char *, void *), void *arg)
{
	static __thread char path[PATH_MAX];
	const char *p = text, *end = text + len, *le, *f[8], *fe[8];
	const char *t, *te;
	size_t nf;
	int count = 0;

	for (; p < end; p = le < end ? le + 1 : end) {
		if ((le = memchr(p, '\n', (size_t)(end - p))) == NULL)
			le = end;
		if (le == p)
			continue;
		/* Fields 0-5, then optional ones up to "-", then the type. */
		t = p;
		nf = 0;
		for (;;) {
			while (t < le && *t == ' ')
				t++;
			if (t == le)
				return -EINVAL;
			te = memchr(t, ' ', (size_t)(le - t));
			if (te == NULL)
				te = le;
			if (nf >= 6 && te - t == 1 && *t == '-')
				break;
			if (nf < 8) {
				f[nf] = t;
				fe[nf] = te;
			}
			nf++;
			t = te;
		}
		if (nf < 6)
			return -EINVAL;
		t = te;
		while (t < le && *t == ' ')
			t++;
		te = memchr(t, ' ', (size_t)(le - t));
		if (te == NULL)
			te = le;
		if (t == te)
			return -EINVAL;
		if (unescape(f[4], fe[4], path, sizeof(path)) < 0)
			return -EINVAL;
		if (te - t == 4 && memcmp(t, "proc", 4) == 0) {
			if (fn != NULL)
				fn(path, arg);
			count++;
		}
	}
	return count;
}

/* The mount points cred_proc_mounts finds, kept. */
struct mpaths {
	char	**v;
	size_t	  n;
};

static void
keep_path(const char *path, void *arg)
{
	struct mpaths *m = arg;

	m->v = xreallocarray(m->v, m->n + 1, sizeof(*m->v));
	m->v[m->n++] = xstrdup(path);
}

/*
 * Detach the procfs mount at path, by what path is now: opened without
 * following a link at its end, checked to be procfs, and detached
 * through its descriptor (/proc/thread-self/fd/N), so that code renaming
 * the directories above it meanwhile cannot make execd detach another
 * filesystem of the view (an overlay, say: writes would then go to its
 * lower).  A mount under one detached before is gone with it; what is
 * left is the caller's to find.
 */
static void
detach(const char *path)
{
	struct statfs sf;
	char p[64];
	int fd;

	if ((fd = open(path, O_PATH | O_NOFOLLOW | O_DIRECTORY |
	    O_CLOEXEC)) < 0)
		return;
	if (fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC) {
		snprintf(p, sizeof(p), "/proc/thread-self/fd/%d", fd);
		(void)umount2(p, MNT_DETACH);
	}
	close(fd);
}

/*
 * Detach every procfs mount text names, the last mounted first, so that
 * /proc, the way to the descriptors, goes last.
 */
static int
detach_all(const char *text, size_t len)
{
	struct mpaths m = { NULL, 0 };
	int rc;

	rc = cred_proc_mounts(text, len, keep_path, &m);
	for (size_t i = m.n; i-- > 0;) {
		if (rc >= 0)
			detach(m.v[i]);
		free(m.v[i]);
	}
	free(m.v);
	return rc;
}

/* The whole of fd, from its start, into *buf (freed by the caller). */
static ssize_t
read_all(int fd, char **buf)
{
	size_t len = 0, cap = 16384;
	ssize_t r;

	*buf = xmalloc(cap);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		if (len == cap) {
			if (cap >= PWBUF_MAX * 16)
				return -E2BIG;
			*buf = xrealloc(*buf, cap *= 2);
		}
		if ((r = read(fd, *buf + len, cap - len)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return (ssize_t)len;
		len += (size_t)r;
	}
}

/*
 * On the calling thread, in pid's mount namespace: a private copy of it
 * with no procfs mounted, as a namespace descriptor in *nsfd.  The
 * thread is back in its own namespace, root and cwd after.
 */
static int
make_view(pid_t pid, int *nsfd, char *err, size_t errlen)
{
	int target = -1, self = -1, oroot = -1, ocwd = -1, mi = -1, rc;
	const char *step = "";
	struct stat a, b;
	char p[64], *text = NULL;
	ssize_t n;

	*nsfd = -1;
	if ((rc = own_fs()) < 0) {
		snprintf(err, errlen, "unshare(CLONE_FS): %s", strerror(-rc));
		return rc;
	}
	snprintf(p, sizeof(p), "/proc/%ld/root", (long)pid);
	if (stat(p, &a) < 0) {
		rc = errno == ENOENT ? -ESRCH : -errno;
		snprintf(err, errlen, "%s: %s", p, strerror(-rc));
		return rc;
	}
	snprintf(p, sizeof(p), "/proc/%ld/ns/mnt", (long)pid);
	if ((target = open(p, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (self = open("/proc/thread-self/ns/mnt", O_RDONLY |
	    O_CLOEXEC)) < 0 ||
	    (oroot = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (ocwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = errno == ENOENT ? -ESRCH : -errno;
		snprintf(err, errlen, "%s: %s", p, strerror(-rc));
		goto out;
	}
	if (setns(target, CLONE_NEWNS) < 0) {
		rc = -errno;
		snprintf(err, errlen, "setns: %s", strerror(-rc));
		goto out;
	}
	/* In pid's namespace now: from here on, always come back. */
	rc = 0;
	if (unshare(CLONE_NEWNS) < 0)
		step = "unshare(CLONE_NEWNS)", rc = -errno;
	/* Private first: a detach must not reach the namespaces copied. */
	else if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
		step = "private mounts", rc = -errno;
	else if (stat("/", &b) < 0)
		step = "/", rc = -errno;
	else if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		step = "the process's root is not its namespace's",
		    rc = -EXDEV;
	else if ((*nsfd = open("/proc/thread-self/ns/mnt", O_RDONLY |
	    O_CLOEXEC)) < 0 || (mi = open("/proc/thread-self/mountinfo",
	    O_RDONLY | O_CLOEXEC)) < 0)
		step = "/proc/thread-self", rc = -errno;
	else if ((n = read_all(mi, &text)) < 0)
		step = "mountinfo", rc = (int)n;
	else if ((rc = detach_all(text, (size_t)n)) < 0)
		step = "mountinfo";
	else {
		/* The same file, read again: what is left mounted now. */
		free(text);
		if ((n = read_all(mi, &text)) < 0)
			step = "mountinfo", rc = (int)n;
		else if ((rc = cred_proc_mounts(text, (size_t)n, NULL,
		    NULL)) != 0)
			step = rc < 0 ? "mountinfo" :
			    "a procfs mount could not be detached",
			    rc = rc < 0 ? rc : -EBUSY;
	}
	ns_back(self, oroot, ocwd);
	if (rc < 0)
		snprintf(err, errlen, "%s: %s", step, strerror(-rc));
out:
	free(text);
	if (rc < 0 && *nsfd >= 0) {
		close(*nsfd);
		*nsfd = -1;
	}
	if (mi >= 0)
		close(mi);
	if (target >= 0)
		close(target);
	if (self >= 0)
		close(self);
	if (oroot >= 0)
		close(oroot);
	if (ocwd >= 0)
		close(ocwd);
	return rc < 0 ? rc : 0;
}

/* See cred.h. */
int
cred_view(pid_t pid, struct cred *out, char *err, size_t errlen)
{
	int fd, rc;

	if ((rc = make_view(pid, &fd, err, errlen)) < 0)
		return rc;
	if ((rc = cred_root(fd, out)) < 0) {
		snprintf(err, errlen, "getgroups: %s", strerror(-rc));
		return rc;
	}
	out->root->ns = true;
	return 0;
}

/* See cred.h. */
int
cred_root(int dirfd, struct cred *out)
{
	const char *h = getenv("HOME");
	int n;

	memset(out, 0, sizeof(*out));
	out->uid = geteuid();
	out->gid = getegid();
	if ((n = getgroups(CRED_NGROUPS, out->groups)) < 0) {
		n = -errno;
		close(dirfd);
		return n;
	}
	out->ngroups = (size_t)n;
	snprintf(out->home, sizeof(out->home), "%s",
	    h != NULL && h[0] == '/' ? h : "/");
	out->root = xmalloc(sizeof(*out->root));
	atomic_init(&out->root->refs, 1);
	out->root->fd = dirfd;
	out->root->ns = false;
	return 0;
}

void
cred_root_drop(struct cred *c)
{
	if (c->root != NULL && atomic_fetch_sub(&c->root->refs, 1) == 1) {
		close(c->root->fd);
		free(c->root);
	}
	c->root = NULL;
}

void
cred_free(struct cred *c)
{
	if (c == NULL)
		return;
	cred_root_drop(c);
	free(c);
}

/* Look an identity up; see cred.h. */
int
cred_lookup(uid_t uid, gid_t gid, struct cred *out, char *err,
    size_t errlen)
{
	struct passwd pw, *res = NULL;
	size_t len = 1024;
	char *buf = NULL;
	int rc, n;

	memset(out, 0, sizeof(*out));
	out->uid = uid;
	out->gid = gid;
	for (;;) {
		buf = xmalloc(len);
		rc = getpwuid_r(uid, &pw, buf, len, &res);
		if (rc != ERANGE || len >= PWBUF_MAX)
			break;
		free(buf);
		len *= 2;
	}
	/* Not found may also be said with one of these (getpwuid_r(3)). */
	if (rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM)
		rc = 0, res = NULL;
	if (rc != 0) {
		snprintf(err, errlen, "lookup filesystem user %lu: %s",
		    (unsigned long)uid, strerror(rc));
		free(buf);
		return -rc;
	}
	if (res == NULL) {
		/* No account: no groups of its own, and "/" for "~". */
		snprintf(out->home, sizeof(out->home), "/");
		free(buf);
		return 0;
	}
	if (strlen(pw.pw_dir) >= sizeof(out->home)) {
		snprintf(err, errlen, "lookup filesystem user %lu: home "
		    "directory too long", (unsigned long)uid);
		free(buf);
		return -ENAMETOOLONG;
	}
	snprintf(out->home, sizeof(out->home), "%s",
	    pw.pw_dir[0] == '/' ? pw.pw_dir : "/");
	n = CRED_NGROUPS;
	if (getgrouplist(pw.pw_name, pw.pw_gid, out->groups, &n) < 0) {
		snprintf(err, errlen, "lookup filesystem groups of %s: more "
		    "than %d groups", pw.pw_name, CRED_NGROUPS);
		free(buf);
		return -E2BIG;
	}
	out->ngroups = (size_t)n;
	free(buf);
	return 0;
}

/*
 * Blank-separated decimal ids of p..end into v (at most max): their
 * count, or -EINVAL (not an id; (uid_t)-1 is none), -E2BIG (over max).
 */
static int
parse_ids(const char *p, const char *end, gid_t *v, size_t max)
{
	unsigned long long x;
	size_t n = 0;

	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p == end)
			return (int)n;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (x = 0; p < end && *p >= '0' && *p <= '9'; p++)
			if ((x = x * 10 + (unsigned)(*p - '0')) >= 0xffffffffULL)
				return -EINVAL;
		if (n == max)
			return -E2BIG;
		v[n++] = (gid_t)x;
	}
}

/* See cred.h. */
int
cred_parse_status(const char *text, size_t len, struct cred *out)
{
	static __thread gid_t groups[CRED_NGROUPS];
	const char *p = text, *end = text + len, *le;
	gid_t ids[4];
	int n, got = 0, ng = 0;
	uid_t uid = 0;
	gid_t gid = 0;

	for (; p < end; p = le < end ? le + 1 : end) {
		le = memchr(p, '\n', (size_t)(end - p));
		if (le == NULL)
			le = end;
		if (le - p >= 4 && memcmp(p, "Uid:", 4) == 0) {
			if (parse_ids(p + 4, le, ids, 4) != 4)
				return -EINVAL;
			uid = (uid_t)ids[3];	/* the filesystem uid */
			got |= 1;
		} else if (le - p >= 4 && memcmp(p, "Gid:", 4) == 0) {
			if (parse_ids(p + 4, le, ids, 4) != 4)
				return -EINVAL;
			gid = ids[3];
			got |= 2;
		} else if (le - p >= 7 && memcmp(p, "Groups:", 7) == 0) {
			if ((n = parse_ids(p + 7, le, groups, CRED_NGROUPS)) < 0)
				return n;
			ng = n;
			got |= 4;
		}
	}
	if (got != 7)
		return -EINVAL;
	out->uid = uid;
	out->gid = gid;
	out->ngroups = (size_t)ng;
	memcpy(out->groups, groups, (size_t)ng * sizeof(gid_t));
	return 0;
}

/* See cred.h. */
int
cred_of_pid(pid_t pid, struct cred *out, char *err, size_t errlen)
{
	char p[64], *buf;
	struct cred *acct;
	size_t len = 0, cap = 4096;
	ssize_t r;
	int fd, rc;

	snprintf(p, sizeof(p), "/proc/%ld/status", (long)pid);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0) {
		rc = errno == ENOENT ? -ESRCH : -errno;
		snprintf(err, errlen, "%s: %s", p, strerror(-rc));
		return rc;
	}
	buf = xmalloc(cap);
	for (;;) {
		if (len == cap) {
			if (cap >= PWBUF_MAX) {
				rc = -E2BIG;
				goto out;
			}
			buf = xrealloc(buf, cap *= 2);
		}
		if ((r = read(fd, buf + len, cap - len)) < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	memset(out, 0, sizeof(*out));
	if ((rc = cred_parse_status(buf, len, out)) < 0)
		goto out;
	/* Home as the account's (its groups are the process's, not these). */
	acct = xmalloc(sizeof(*acct));
	rc = cred_lookup(out->uid, out->gid, acct, err, errlen);
	if (rc == 0 || rc == -E2BIG)
		memcpy(out->home, acct->home, sizeof(out->home));
	free(acct);
	free(buf);
	close(fd);
	return rc == -E2BIG ? 0 : rc;
out:
	snprintf(err, errlen, "%s: %s", p, rc == -E2BIG ? "too long, or too many groups" :
	    strerror(-rc));
	free(buf);
	close(fd);
	return rc;
}

/* Take c on this thread; see cred.h. */
int
cred_enter(const struct cred *c)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	bool any = false;
	int n, rc;

	if (c == NULL)
		return 0;
	if (T.depth > 0) {
		if (!same_cred(&T.cur, c))
			return -EBUSY;
		T.depth++;
		return 0;
	}
	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return -errno;
	if ((n = getgroups(CRED_NGROUPS, T.groups)) < 0)
		return -errno;
	/* The root first: chroot needs the privilege the ids may drop. */
	if (c->root != NULL && (rc = root_enter(c->root)) < 0)
		return rc;
	T.euid = eu;
	T.egid = eg;
	T.ngroups = (size_t)n;
	T.switched = !(eu == c->uid && eg == c->gid &&
	    same_groups(T.groups, T.ngroups, c->groups, c->ngroups));
	if (T.switched) {
		if (syscall(SYS_SETGROUPS, c->ngroups, c->groups) < 0) {
			rc = -errno;
			goto undo_root;
		}
		if (syscall(SYS_SETRESGID, -1, c->gid, -1) < 0) {
			rc = -errno;
			goto undo_groups;
		}
		if (syscall(SYS_SETRESUID, -1, c->uid, -1) < 0) {
			rc = -errno;
			goto undo_gid;
		}
		keep_undumpable();
	}
	if (c->uid != 0) {
		if ((rc = caps_effective(&any)) == 0 && any)
			rc = -EPERM;
		if (rc < 0) {
			if (!T.switched)
				goto undo_root;
			if (syscall(SYS_SETRESUID, -1, T.euid, -1) < 0)
				fatal("cannot take uid %lu back",
				    (unsigned long)T.euid);
			keep_undumpable();
			goto undo_gid;
		}
	}
	T.cur = *c;
	T.depth = 1;
	return 0;
undo_gid:
	if (syscall(SYS_SETRESGID, -1, T.egid, -1) < 0)
		fatal("cannot take gid %lu back", (unsigned long)T.egid);
undo_groups:
	if (syscall(SYS_SETGROUPS, T.ngroups, T.groups) < 0)
		fatal("cannot take the supplementary groups back");
undo_root:
	if (c->root != NULL)
		root_leave();
	return rc;
}

/* Give the identity back; see cred.h. */
void
cred_leave(const struct cred *c)
{
	if (c == NULL)
		return;
	if (T.depth == 0)
		fatalx("leaving an identity never entered");
	if (--T.depth > 0)
		return;
	if (T.switched) {
		/* The uid first: back at 0, the thread may set the rest. */
		if (syscall(SYS_SETRESUID, -1, T.euid, -1) < 0)
			fatal("cannot take uid %lu back",
			    (unsigned long)T.euid);
		if (syscall(SYS_SETRESGID, -1, T.egid, -1) < 0)
			fatal("cannot take gid %lu back",
			    (unsigned long)T.egid);
		if (syscall(SYS_SETGROUPS, T.ngroups, T.groups) < 0)
			fatal("cannot take the supplementary groups back");
		keep_undumpable();
		T.switched = false;
	}
	if (T.cur.root != NULL)
		root_leave();
}

const struct cred *
cred_current(void)
{
	return T.depth > 0 ? &T.cur : NULL;
}

struct cred *
cred_dup_current(void)
{
	struct cred *c;

	if (T.depth == 0)
		return NULL;
	c = xmalloc(sizeof(*c));
	*c = T.cur;
	if (c->root != NULL)
		atomic_fetch_add(&c->root->refs, 1);
	return c;
}

const char *
cred_home(void)
{
	return T.depth > 0 ? T.cur.home : NULL;
}
