/*
 * isolated.c -- isolated sessions (see isolated.h and docs/isolation.md).
 *
 * A session is a directory <upper_root>/<id> (mode 0711: its shell, run
 * as the session's uid, reads its code there), one <n>/ below it for
 * each overlay (0700, upper/ and work/ inside, or a tmpfs the shell's
 * namespace mounts there when persist is false), a session.c shell
 * started with an isoplan, and its background runs, whose output execd
 * itself writes to <state_dir>/isolated-<id>-<run>.log.  Runs are
 * serialised in the shell, background ones too.  Teardown kills the
 * shell's group and every process left in its mount namespace, so the
 * namespace and its mounts go with them, then removes the directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../util/buf.h"
#include "../../util/id.h"
#include "../../util/rfc3339.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/work.h"
#include "../core/xmalloc.h"
#include "../process/isoplan.h"
#include "isolated.h"

#define SWEEP_MS	1000

extern char **environ;

struct isorun {
	char		 id[ID_UUID_LEN + 1];
	struct isosess	*s;
	bool		 background;
	int		 fd;		/* the log, while it runs */
	uint64_t	 written;	/* to it, at most ISOLATED_LOG_READ_MAX */
	char		*log;
	bool		 running;
	bool		 has_code;
	int		 code;
	const char	*error;
	struct timespec	 started, finished;
	/* A foreground run's caller. */
	session_output_cb *output;
	session_done_cb	*done;
	void		*arg;
	bool		 forgotten;
	struct isorun	*next;
};

struct isosess {
	char		 id[ID_UUID_LEN + 1];
	char		*dir;		/* <upper_root>/<id> */
	struct isoreq	 req;
	struct isoplan	*plan;
	struct session_how how;
	char		**env;
	struct session	*sh;
	struct timespec	 created, last_run;
	uint64_t	 idle_since;	/* loop_now_ms of the last activity */
	unsigned	 running;	/* runs queued or running */
	struct isodiff	*diff;		/* the lower trees at create */
	ino_t		 ns[8];		/* mount namespaces its shells had */
	size_t		 nns;
	struct isorun	*runs;
	struct isosess	*next;
};

static struct loop	*iso_loop;
/* Arrays, not allocations: a worker's isolated_check may read upper_root
 * while the loop shuts the module down. */
static char		 upper_root[PATH_MAX];
static char		 state_dir[PATH_MAX];
static bool		 closing;	/* isolated_shutdown has run */
static unsigned		 grace;
static unsigned long long upper_max;
static struct isosess	*registry;
static uint64_t		 t_sweep;

/* What the probe found. */
static bool		 probed;
static bool		 can_mountns, can_overlay, can_netns, can_setuid;
static char		 why_not[PATH_MAX + 512];
/* uid_mode "userns": its own probe, and its own reason. */
static bool		 can_userns, can_userns_net, userns_full;
static char		 why_not_userns[PATH_MAX + 512];

static const char *const default_roots[] = {
	"/workspace", "/mnt", "/media", "/data", NULL
};
/* Where binds may come from: default_roots, or the configuration's
 * (set at start, before any worker reads it). */
static const char *const *allowed_roots = default_roots;
static char	**allowed_own;
static const struct limits *sess_limits;
/* The most bytes of contents a ?path= diff shows. */
static unsigned long long diff_max = ULLONG_MAX;

static void	 sweep(struct loop *, uint64_t, void *);
static void	 teardown(struct isosess *);
static void	 ensure_probed(void);
static void	 probe_mountns(void);
static void	 note_ns(struct isosess *);
static int	 take_base(const struct isoreq *, struct isolated_paths *,
		    char *, size_t);

/* ts as a JSON string in RFC 3339 (rfc3339.h). */
static json_t *
rfc3339(const struct timespec *ts)
{
	char buf[RFC3339_LEN];

	rfc3339_ns(ts, buf);
	return json_string(buf);
}

/* nftw's: remove whatever it is (depth first, links not followed). */
static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	if (remove(p) < 0 && errno != ENOENT)
		log_warn("remove %s", p);
	return 0;
}

static void
rm_tree(const char *p)
{
	nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/*
 * rm_tree(p) on a worker, then free(p): an upper directory holds all a
 * session wrote, which may be many files, and the loop must not wait.
 * Queued removals still run at shutdown (work_shutdown waits for them).
 */
static void
rm_tree_job(void *p)
{
	rm_tree(p);
}

static void
rm_tree_later(char *p)
{
	work_submit(rm_tree_job, free, p);
}

/* A dashed UUID, as our session directories are named. */
static bool
is_uuid(const char *s)
{
	if (strlen(s) != ID_UUID_LEN)
		return false;
	for (size_t i = 0; i < ID_UUID_LEN; i++)
		if (i == 8 || i == 13 || i == 18 || i == 23 ? s[i] != '-' :
		    strchr("0123456789abcdef", s[i]) == NULL)
			return false;
	return true;
}

/* Whether pid is a live process other than this one. */
static bool
other_alive(long pid)
{
	return pid > 0 && pid != (long)getpid() &&
	    (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* The pid in a session directory's execd.pid, 0 if none. */
static long
owner_of(const char *dir)
{
	char p[PATH_MAX + 16], buf[32];
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/execd.pid", dir);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strtol(buf, NULL, 10);
}

/*
 * The tmpfs execd mounted on a session's overlay directories (a capped
 * persistent upper), detached: the directory can then be removed.
 */
static void
unmount_uppers(const char *dir)
{
	char p[PATH_MAX + 32];

	for (int i = 0; i < ISOREQ_MAX; i++) {
		snprintf(p, sizeof(p), "%s/%d", dir, i);
		(void)umount2(p, MNT_DETACH | UMOUNT_NOFOLLOW);
	}
}

/*
 * What a killed execd left: the session directories and probes of an
 * execd that is no longer running (their execd.pid, their name).
 */
static void
reclaim(void)
{
	DIR *d = opendir(upper_root);
	struct dirent *e;
	char *p;
	unsigned n = 0;
	long pid;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (!is_uuid(e->d_name) &&
		    strncmp(e->d_name, ".probe-", 7) != 0)
			continue;
		p = xasprintf("%s/%s", upper_root, e->d_name);
		pid = e->d_name[0] == '.' ? strtol(e->d_name + 7, NULL, 10) :
		    owner_of(p);
		if (!other_alive(pid)) {
			unmount_uppers(p);
			rm_tree_later(p);
			n++;
		} else {
			free(p);
		}
	}
	closedir(d);
	if (n > 0)
		log_info("isolated: removing %u directories left under %s",
		    n, upper_root);
}

/* Whether the kernel lists a filesystem type. */
static bool
has_fs(const char *name)
{
	FILE *f = fopen("/proc/filesystems", "re");
	char line[128], *t;
	bool yes = false;

	if (f == NULL)
		return false;
	while (!yes && fgets(line, sizeof(line), f) != NULL) {
		t = strrchr(line, '\t');
		t = t != NULL ? t + 1 : line;
		t[strcspn(t, "\n")] = '\0';
		yes = strcmp(t, name) == 0;
	}
	fclose(f);
	return yes;
}

/* Whether this process has cap in its effective set. */
static bool
has_cap(int cap)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return (d[cap / 32].effective & (1U << (cap % 32))) != 0;
}

/*
 * The user namespace a userns session's shell gets (see isoplan.h):
 * every id as itself when execd may set any, else uid (gid) inside as
 * execd's euid (egid) outside.
 */
/*
 * The identity map of every id execd's own user namespace has, from its
 * map file (/proc/self/uid_map): each range "inside outside count" as
 * "inside inside count", so that a map the kernel takes is written even
 * when execd itself runs in a user namespace of some ids only.
 */
static void
identity_map(const char *file, char *out, size_t outlen)
{
	FILE *f = fopen(file, "re");
	unsigned long a, b, n;
	size_t len = 0;
	int k;

	snprintf(out, outlen, "0 0 4294967295\n");
	if (f == NULL)
		return;
	while (fscanf(f, "%lu %lu %lu", &a, &b, &n) == 3) {
		k = snprintf(out + len, outlen - len, "%lu %lu %lu\n", a, a, n);
		if (k < 0 || (size_t)k >= outlen - len) {
			snprintf(out, outlen, "0 0 4294967295\n");
			break;
		}
		len += (size_t)k;
	}
	fclose(f);
}

static void
userns_of(struct isoplan_userns *u, bool has_uid, uid_t uid, bool has_gid,
    gid_t gid)
{
	memset(u, 0, sizeof(*u));
	u->on = true;
	u->full = userns_full;
	if (u->full) {
		identity_map("/proc/self/uid_map", u->uid_map,
		    sizeof(u->uid_map));
		identity_map("/proc/self/gid_map", u->gid_map,
		    sizeof(u->gid_map));
	}
	u->uid_out = geteuid();
	u->gid_out = getegid();
	u->uid = has_uid ? uid : u->uid_out;
	u->gid = has_gid ? gid : has_uid ? (gid_t)uid : u->gid_out;
}

/*
 * uid_mode "userns" tried once as a session would have it, in a child
 * that dies with what it made: a user namespace, a mount namespace it
 * owns with an overlay mount in it (userxattr: Linux 5.11), a network
 * namespace.  The child's exit status is 64 * stage + errno.
 */
static void
probe_userns(void)
{
	char dir[PATH_MAX + 32], l[PATH_MAX + 40];
	struct isoplan plan;
	pid_t pid;
	int st, rc, step, stage, e;

	userns_full = has_cap(CAP_SETUID) && has_cap(CAP_SETGID);
	snprintf(dir, sizeof(dir), "%s/.probe-%ld-u", upper_root,
	    (long)getpid());
	snprintf(l, sizeof(l), "%s/l", dir);
	memset(&plan, 0, sizeof(plan));
	userns_of(&plan.userns, false, 0, false, 0);
	if (mkdir(dir, 0700) < 0 || mkdir(l, 0700) < 0 ||
	    isoplan_overlay(&plan, l, dir, false, 0700, geteuid(),
	    getegid()) < 0 || mkdir(plan.step[0].upper, 0700) < 0 ||
	    mkdir(plan.step[0].work, 0700) < 0) {
		snprintf(why_not_userns, sizeof(why_not_userns), "cannot make "
		    "directories under the upper root %s: %s", upper_root,
		    strerror(errno));
		isoplan_free(&plan);
		rm_tree(dir);
		return;
	}
	if ((pid = fork()) == 0) {
		rc = isoplan_apply(&plan, &step);
		e = errno > 0 && errno < 64 ? errno : EIO;
		stage = rc == 0 ? 0 : step == -2 ? 1 : step == -1 ? 2 : 3;
		if (rc == 0)	/* 1: no network namespace */
			_exit(unshare(CLONE_NEWNET) < 0 ? 1 : 0);
		_exit(64 * stage + e);
	}
	isoplan_free(&plan);
	if (pid < 0) {
		snprintf(why_not_userns, sizeof(why_not_userns), "fork: %s",
		    strerror(errno));
		rm_tree(dir);
		return;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	rm_tree(dir);
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
	stage = rc / 64;
	e = rc % 64;
	if (rc == 0 || rc == 1) {
		can_userns = true;
		can_userns_net = rc == 0;
		return;
	}
	switch (rc == 255 ? 0 : stage) {
	case 1:
		snprintf(why_not_userns, sizeof(why_not_userns), "execd cannot "
		    "make a user namespace here (%s): the kernel's "
		    "user.max_user_namespaces (or Debian's "
		    "kernel.unprivileged_userns_clone) is 0, or a seccomp or "
		    "AppArmor profile refuses unshare", strerror(e));
		break;
	case 2:
		snprintf(why_not_userns, sizeof(why_not_userns), "execd cannot "
		    "make a mount namespace in a user namespace "
		    "(%s)", strerror(e));
		break;
	case 3:
		snprintf(why_not_userns, sizeof(why_not_userns), "an overlay "
		    "mount in a user namespace fails (%s): it needs Linux "
		    "5.11 or later, and an upper root (%s) on a filesystem "
		    "that can be an overlay's upper", strerror(e), upper_root);
		break;
	default:
		snprintf(why_not_userns, sizeof(why_not_userns), "the user "
		    "namespace probe ended abnormally");
	}
}

/*
 * Try, in a child that dies with what it made: a mount namespace, an
 * overlay mount in it (on dirs under upper_root), a network namespace.
 * Its exit status says how far it got.
 */
static void
probe(void)
{
	probe_mountns();
	probe_userns();
}

static void
probe_mountns(void)
{
	char dir[PATH_MAX + 32], l[PATH_MAX + 40], u[PATH_MAX + 40],
	    w[PATH_MAX + 40], m[PATH_MAX + 40], opts[4 * PATH_MAX + 200];
	pid_t pid;
	int st, rc;

	can_setuid = has_cap(CAP_SETUID);
	if (!has_fs("overlay"))
		snprintf(why_not, sizeof(why_not), "overlayfs is not in "
		    "/proc/filesystems");
	snprintf(dir, sizeof(dir), "%s/.probe-%ld", upper_root,
	    (long)getpid());
	snprintf(l, sizeof(l), "%s/l", dir);
	snprintf(u, sizeof(u), "%s/u", dir);
	snprintf(w, sizeof(w), "%s/w", dir);
	snprintf(m, sizeof(m), "%s/m", dir);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s",
	    l, u, w);
	if (mkdir(dir, 0700) < 0 || mkdir(l, 0700) < 0 || mkdir(u, 0700) < 0 ||
	    mkdir(w, 0700) < 0 || mkdir(m, 0700) < 0) {
		snprintf(why_not, sizeof(why_not), "cannot make directories "
		    "under the upper root %s: %s", upper_root, strerror(errno));
		rm_tree(dir);
		return;
	}
	if ((pid = fork()) == 0) {
		/* Raw calls only: execd has threads. */
		if (unshare(CLONE_NEWNS) < 0)
			_exit(10);
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(11);
		rc = mount("overlay", m, "overlay", 0, opts) < 0 ? 2 : 0;
		if (unshare(CLONE_NEWNET) < 0)
			rc |= 4;
		_exit(rc);
	}
	if (pid < 0) {
		snprintf(why_not, sizeof(why_not), "fork: %s", strerror(errno));
		rm_tree(dir);
		return;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	rm_tree(dir);
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
	if (rc >= 10 || rc == 255) {
		snprintf(why_not, sizeof(why_not), "execd cannot make a mount "
		    "namespace here (it needs CAP_SYS_ADMIN, and a seccomp "
		    "profile that allows unshare and mount)");
		return;
	}
	can_mountns = true;
	can_netns = (rc & 4) == 0;
	if (rc & 2) {
		if (why_not[0] == '\0')
			snprintf(why_not, sizeof(why_not), "an overlay mount "
			    "with its upper directory under %s fails",
			    upper_root);
		return;
	}
	can_overlay = why_not[0] == '\0';
}

void
isolated_init(struct loop *l, const char *root, const char *sdir,
    unsigned grace_ms)
{
	iso_loop = l;
	snprintf(upper_root, sizeof(upper_root), "%s", root);
	snprintf(state_dir, sizeof(state_dir), "%s", sdir);
	closing = false;
	grace = grace_ms;
	probed = false;
	reclaim();
}

/*
 * The probe, once, on the first use of /v1/isolated: most execds never
 * get one, and a fork and two namespaces cost a start ~0.1 s.
 */
static void
ensure_probed(void)
{
	char *p, *q;

	if (probed || upper_root[0] == '\0')
		return;
	probed = true;
	/* mkdir -p, 0711 for the last (the shells pass through). */
	p = xstrdup(upper_root);
	for (q = p + 1; *q != '\0'; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		(void)mkdir(p, 0755);
		*q = '/';
	}
	free(p);
	if (mkdir(upper_root, 0711) < 0 && errno != EEXIST)
		log_warn("isolated: %s", upper_root);
	else
		(void)chmod(upper_root, 0711);
	if (!isoplan_path_ok(upper_root)) {
		snprintf(why_not, sizeof(why_not), "the upper root %s has a "
		    "',', ':' or '\\' overlayfs cannot take", upper_root);
		return;
	}
	probe();
	log_info("isolated: %s%s", isolated_available() ? "available" :
	    "unavailable: ", isolated_available() ? "" : why_not);
}

void
isolated_set_upper_max(unsigned long long bytes)
{
	upper_max = bytes;
}

void
isolated_set_allowed(const char *const *roots, size_t n)
{
	for (size_t i = 0; allowed_own != NULL && allowed_own[i] != NULL; i++)
		free(allowed_own[i]);
	free(allowed_own);
	allowed_own = NULL;
	allowed_roots = default_roots;
	if (roots == NULL)
		return;
	allowed_own = xcalloc(n + 1, sizeof(*allowed_own));
	for (size_t i = 0; i < n; i++)
		allowed_own[i] = xstrdup(roots[i]);
	allowed_roots = (const char *const *)allowed_own;
}

void
isolated_set_limits(const struct limits *l)
{
	sess_limits = l;
}

void
isolated_set_diff_max(unsigned long long bytes)
{
	diff_max = bytes;
}

void
isolated_diff_trim(json_t *d)
{
	const json_t *o = json_object_get(d, "old_content"),
	    *n = json_object_get(d, "new_content");
	size_t len = (o != NULL ? json_string_length(o) : 0) +
	    (n != NULL ? json_string_length(n) : 0);

	if ((o == NULL && n == NULL) || len <= diff_max)
		return;
	json_object_del(d, "old_content");
	json_object_del(d, "new_content");
	json_object_set_new(d, "text", json_false());
}

void
isolated_shutdown(void)
{
	struct isosess *s;

	while ((s = registry) != NULL) {
		registry = s->next;
		teardown(s);
	}
	loop_timer_cancel(iso_loop, t_sweep);
	t_sweep = 0;
	closing = true;
	isolated_set_allowed(NULL, 0);
}

bool
isolated_available(void)
{
	ensure_probed();
	return (can_mountns && can_overlay) || can_userns;
}

/* Sessions with setuid (execd's own user namespace) can be made. */
static bool
setpriv_ok(void)
{
	return can_mountns && can_overlay;
}

size_t
isolated_count(void)
{
	size_t n = 0;

	for (struct isosess *s = registry; s != NULL; s = s->next)
		n++;
	return n;
}

json_t *
isolated_capabilities(void)
{
	json_t *o;
	char msg[sizeof(why_not) + sizeof(why_not_userns) + 64];

	ensure_probed();
	o = json_pack("{s:b,s:s,s:b,s:b,s:b,s:b}",
	    "available", isolated_available(), "isolator", "execd",
	    "setpriv_available", setpriv_ok() && can_setuid,
	    "userns_available", can_userns,
	    "commit_supported", isolated_available(), "diff_supported",
	    isolated_available());
	msg[0] = '\0';
	if (!setpriv_ok())
		snprintf(msg, sizeof(msg), "%s", why_not);
	else if (!can_netns)
		snprintf(msg, sizeof(msg), "no network namespaces here: "
		    "share_net false is refused");
	if (!can_userns) {
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
		    "%suid_mode userns: %s", msg[0] != '\0' ? "; " : "",
		    why_not_userns);
		json_object_set_new(o, "userns_message",
		    json_string(why_not_userns));
	}
	if (msg[0] != '\0')
		json_object_set_new(o, "message", json_string(msg));
	return o;
}

/* p is d or under it. */
static bool
under(const char *p, const char *d)
{
	size_t n = strlen(d);

	return strncmp(p, d, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

int
isolated_check(const struct isoreq *r, struct isolated_paths *p, char *err,
    size_t errlen)
{
	char real[PATH_MAX];
	struct stat st;
	bool ok;

	for (size_t i = 0; i < r->noverlay; i++) {
		const char *path = r->overlay[i].path;

		if (!isoplan_path_ok(path)) {
			snprintf(err, errlen, "overlay path \"%s\" must be an "
			    "absolute path without ',', ':' or '\\'", path);
			return -1;
		}
		if (stat(path, &p->lower[i]) < 0 ||
		    !S_ISDIR(p->lower[i].st_mode)) {
			snprintf(err, errlen, "overlay path \"%s\" must be an "
			    "existing path (a directory)", path);
			return -1;
		}
		if (r->strict && under(path, "/tmp")) {
			snprintf(err, errlen, "overlay path \"%s\" is not "
			    "allowed in the strict profile: its /tmp is a "
			    "private tmpfs (use balanced)", path);
			return -1;
		}
		if (r->overlay[i].mode !=
		    ISOREQ_RW && under(upper_root, path)) {
			snprintf(err, errlen, "overlay path \"%s\" is not "
			    "allowed: it holds execd's upper root", path);
			return -1;
		}
	}
	for (size_t i = 0; i < r->nbind; i++) {
		if (realpath(r->bind[i].source, real) == NULL) {
			snprintf(err, errlen, "binds[%zu].source \"%s\" must be "
			    "an existing path", i, r->bind[i].source);
			return -1;
		}
		ok = false;
		for (const char *const *a = allowed_roots; *a != NULL; a++)
			ok = ok || under(real, *a);
		if (!ok) {
			snprintf(err, errlen, "binds[%zu].source \"%s\" is not "
			    "in allowlist", i, r->bind[i].source);
			return -1;
		}
		snprintf(p->source[i], sizeof(p->source[i]), "%s", real);
		if (stat(r->bind[i].dest, &st) < 0) {
			snprintf(err, errlen, "binds[%zu].dest \"%s\" must be "
			    "an existing path", i, r->bind[i].dest);
			return -1;
		}
	}
	for (size_t i = 0; i < r->nwritable; i++)
		if (stat(r->writable[i], &st) < 0) {
			snprintf(err, errlen, "extra_writable[%zu] \"%s\" must be "
			    "an existing path", i, r->writable[i]);
			return -1;
		}
	return take_base(r, p, err, errlen);
}

void
isolated_paths_free(struct isolated_paths *p)
{
	isodiff_drop(p->base);
	p->base = NULL;
}

/*
 * The overlays' lower trees as they are now (what a commit checks for
 * changes made outside the session), recorded before the session's
 * namespace exists, so that a change made meanwhile is a conflict rather
 * than lost.
 */
static int
take_base(const struct isoreq *r, struct isolated_paths *p, char *err,
    size_t errlen)
{
	const char *paths[ISOREQ_MAX];

	for (size_t i = 0; i < r->noverlay; i++)
		paths[i] = r->overlay[i].mode == ISOREQ_OVERLAY ?
		    r->overlay[i].path : NULL;
	if ((p->base = isodiff_take(r->noverlay, paths, err, errlen)) == NULL)
		return -1;
	return 0;
}

/* Overlay order: parents first, so nested paths mount over them. */
static size_t
depth(const char *p)
{
	size_t n = 0;

	for (; *p != '\0'; p++)
		n += *p == '/';
	return n;
}

/* The shell's environment: PATH, HOME and the keys let through. */
static char **
make_env(const struct isoreq *r, uid_t uid)
{
	char **env = xcalloc(ISOREQ_MAX + 4, sizeof(*env));
	const char *path = getenv("PATH"), *v;
	struct passwd *pw = getpwuid(uid);
	size_t n = 0;

	env[n++] = xasprintf("PATH=%s", path != NULL ? path :
	    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	env[n++] = xasprintf("HOME=%s", pw != NULL ? pw->pw_dir : "/");
	if (r->env_allow == 1)
		for (size_t i = 0; i < r->nkeys; i++)
			if (strcmp(r->keys[i], "PATH") != 0 &&
			    strcmp(r->keys[i], "HOME") != 0 &&
			    (v = getenv(r->keys[i])) != NULL)
				env[n++] = xasprintf("%s=%s", r->keys[i], v);
	env[n] = NULL;
	return env;
}

static void
free_env(char **env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

static void
sess_free(struct isosess *s)
{
	struct isorun *r;

	while ((r = s->runs) != NULL) {
		s->runs = r->next;
		if (r->fd >= 0)
			close(r->fd);
		if (r->log != NULL)
			unlink(r->log);
		free(r->log);
		free(r);
	}
	isoreq_free(&s->req);
	isodiff_drop(s->diff);
	if (s->plan != NULL)
		isoplan_free(s->plan);
	free(s->plan);
	free_env(s->env);
	free(s->dir);
	free(s);
}

/* Mark dir as this execd's (reclaim). */
static int
write_owner(const char *dir)
{
	char p[PATH_MAX + 16], buf[32];
	int fd, n, rc;

	snprintf(p, sizeof(p), "%s/execd.pid", dir);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	rc = write(fd, buf, (size_t)n) == n ? 0 : -1;
	close(fd);
	return rc;
}

/* Add s's overlay i to its plan, its directory made; see isoplan.h. */
static int
plan_overlay(struct isosess *s, size_t i, const struct stat *lower,
    char *err, size_t errlen)
{
	const struct isoreq_overlay *ov = &s->req.overlay[i];
	char dir[PATH_MAX], sub[PATH_MAX + 8];
	bool tmp = ov->persist == 0;
	int rc;

	switch (ov->mode) {
	case ISOREQ_RW:
		return 0;
	case ISOREQ_RO:
		rc = isoplan_readonly(s->plan, ov->path);
		break;
	case ISOREQ_OVERLAY:
		snprintf(dir, sizeof(dir), "%s/%zu", s->dir, i);
		if (mkdir(dir, 0700) < 0) {
			snprintf(err, errlen, "%s: %s", dir, strerror(errno));
			return -1;
		}
		snprintf(sub, sizeof(sub), "mode=0700,size=%llu", upper_max);
		if (!tmp && upper_max > 0 && mount("tmpfs", dir, "tmpfs",
		    MS_NOSUID | MS_NODEV, sub) < 0) {
			snprintf(err, errlen, "a tmpfs of %llu bytes on %s: %s",
			    upper_max, dir, strerror(errno));
			return -1;
		}
		if (!tmp) {
			snprintf(sub, sizeof(sub), "%s/upper", dir);
			rc = mkdir(sub, 0700);
			snprintf(sub, sizeof(sub), "%s/work", dir);
			if (rc < 0 || mkdir(sub, 0700) < 0) {
				snprintf(err, errlen, "%s: %s", sub,
				    strerror(errno));
				return -1;
			}
		}
		rc = isoplan_overlay(s->plan, ov->path, dir, tmp,
		    lower->st_mode, lower->st_uid, lower->st_gid);
		break;
	default:
		rc = -EINVAL;
	}
	if (rc < 0)
		snprintf(err, errlen, "overlay %s: %s", ov->path, strerror(-rc));
	return rc < 0 ? -1 : 0;
}

struct isosess *
isolated_create(struct isoreq *r, const struct isolated_paths *p,
    int *status, const char **code, char *err, size_t errlen)
{
	struct isosess *s;
	size_t order[ISOREQ_MAX], n = 0;
	const char *cwd = NULL;
	bool userns;

	*status = 400;
	*code = "RUNTIME_ERROR";
	if (!isolated_available() || closing) {
		*status = 503;
		*code = "SERVICE_UNAVAILABLE";
		snprintf(err, errlen, "isolation unavailable");
		return NULL;
	}
	/*
	 * No uid_mode: setuid in execd's namespace where it can make one,
	 * else a user namespace.
	 */
	userns = r->uid_userns == 1 || (r->uid_userns < 0 && !setpriv_ok());
	if (userns && !can_userns) {
		*status = 503;
		*code = "NOT_SUPPORTED";
		snprintf(err, errlen, "uid_mode \"userns\" is not available: "
		    "%s", why_not_userns);
		return NULL;
	}
	if (!userns && !setpriv_ok()) {
		*status = 503;
		*code = "NOT_SUPPORTED";
		snprintf(err, errlen, "uid_mode \"setpriv\" is not available: "
		    "%s", why_not);
		return NULL;
	}
	if (!userns && (r->has_uid || r->has_gid) && !can_setuid) {
		*status = 503;
		*code = "NOT_SUPPORTED";
		snprintf(err, errlen, "uid_mode \"setpriv\" is not available: "
		    "execd lacks CAP_SETUID");
		return NULL;
	}
	if (r->share_net == 0 && !(userns ? can_userns_net : can_netns)) {
		*status = 503;
		*code = "NOT_SUPPORTED";
		snprintf(err, errlen, "share_net false is not available: no "
		    "network namespaces here");
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	id_uuid(s->id);
	s->req = *r;
	memset(r, 0, sizeof(*r));
	r = &s->req;
	if ((s->diff = p->base) != NULL)
		isodiff_hold(s->diff);
	s->plan = xcalloc(1, sizeof(*s->plan));
	s->plan->private_tmp = r->strict;
	s->plan->private_net = r->share_net == 0;
	s->plan->upper_max = upper_max;
	if (userns)
		userns_of(&s->plan->userns, r->has_uid, r->uid, r->has_gid,
		    r->gid);
	s->dir = xasprintf("%s/%s", upper_root, s->id);
	*status = 500;
	if (mkdir(s->dir, 0711) < 0) {
		snprintf(err, errlen, "%s: %s", s->dir, strerror(errno));
		sess_free(s);
		return NULL;
	}
	if (write_owner(s->dir) < 0) {
		snprintf(err, errlen, "%s/execd.pid: %s", s->dir,
		    strerror(errno));
		goto fail;
	}
	/* Insertion sort by depth: few entries. */
	for (size_t i = 0; i < r->noverlay; i++) {
		size_t j = n++;

		while (j > 0 && depth(r->overlay[order[j - 1]].path) >
		    depth(r->overlay[i].path)) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (size_t k = 0; k < n; k++)
		if (plan_overlay(s, order[k], &p->lower[order[k]], err,
		    errlen) < 0)
			goto fail;
	for (size_t i = 0; i < r->nbind; i++)
		if (isoplan_bind(s->plan, p->source[i], r->bind[i].dest,
		    r->bind[i].readonly) < 0) {
			snprintf(err, errlen, "too many mounts");
			goto fail;
		}
	s->how.plan = s->plan;
	s->how.limits = sess_limits;
	if (userns && !s->plan->userns.full) {
		/* The map made the shell its uid and gid already. */
		s->how.keep_ids = true;
	} else if (r->has_uid || r->has_gid) {
		s->how.set_ids = true;
		s->how.uid = r->has_uid ? r->uid : 0;
		s->how.gid = r->has_gid ? r->gid : s->how.uid;
	}
	s->env = make_env(r, s->how.set_ids ? s->how.uid : s->how.keep_ids ?
	    s->plan->userns.uid : getuid());
	s->how.envp = s->env;
	cwd = r->overlay[0].path;
	if ((s->sh = session_new_how(iso_loop, s->dir, cwd, grace, &s->how,
	    err, errlen)) == NULL)
		goto fail;
	note_ns(s);
	clock_gettime(CLOCK_REALTIME, &s->created);
	s->last_run = s->created;
	s->idle_since = loop_now_ms();
	s->next = registry;
	registry = s;
	if (t_sweep == 0)
		t_sweep = loop_timer_add(iso_loop, SWEEP_MS, sweep, NULL);
	log_info("isolated=%s created (%zu overlays)", s->id, r->noverlay);
	return s;
fail:
	unmount_uppers(s->dir);
	rm_tree(s->dir);
	sess_free(s);
	return NULL;
}

struct isosess *
isolated_find(const char *id)
{
	for (struct isosess *s = registry; s != NULL; s = s->next)
		if (strcmp(s->id, id) == 0)
			return s;
	return NULL;
}

const char *
isolated_id(const struct isosess *s)
{
	return s->id;
}

struct isodiff *
isolated_changes(struct isosess *s, struct isodiff_req *q,
    char (*buf)[PATH_MAX + 64])
{
	pid_t pid = session_pid(s->sh);

	for (size_t i = 0; i < s->req.noverlay && i < ISODIFF_MAX; i++) {
		q->uppers[i] = NULL;
		if (s->req.overlay[i].mode != ISOREQ_OVERLAY)
			continue;
		if (s->req.overlay[i].persist != 0)
			snprintf(buf[i], sizeof(buf[i]), "%s/%zu/upper", s->dir,
			    i);
		else if (pid > 0)
			snprintf(buf[i], sizeof(buf[i]), "/proc/%ld/root%s/%zu/"
			    "upper", (long)pid, s->dir, i);
		else
			continue;
		q->uppers[i] = buf[i];
	}
	if (s->diff != NULL)
		isodiff_hold(s->diff);
	return s->diff;
}

bool
isolated_dead(const struct isosess *s)
{
	return session_pid(s->sh) == 0;
}

int
isolated_root(struct isosess *s)
{
	pid_t pid = session_pid(s->sh);
	char p[64];
	int fd;

	if (pid == 0)
		return -ESRCH;
	s->idle_since = loop_now_ms();
	/* A procfs link: nothing of the client's is looked up here. */
	snprintf(p, sizeof(p), "/proc/%ld/root", (long)pid);
	if ((fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

pid_t
isolated_pid(const struct isosess *s)
{
	return session_pid(s->sh);
}

/* The inode of pid's mount namespace, 0 if unknown. */
static ino_t
mnt_ns(pid_t pid)
{
	char p[64];
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%ld/ns/mnt", (long)pid);
	return stat(p, &st) == 0 ? st.st_ino : 0;
}

/*
 * SIGKILL every process in the mount namespace ns (what a run left
 * behind in a session of its own: the shell's group does not hold it).
 */
static void
kill_ns(ino_t ns)
{
	DIR *d;
	struct dirent *e;
	long pid;
	char *end;

	if (ns == 0 || ns == mnt_ns(getpid()) || (d = opendir("/proc")) ==
	    NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		pid = strtol(e->d_name, &end, 10);
		if (*end == '\0' && pid > 1 && mnt_ns((pid_t)pid) == ns)
			kill((pid_t)pid, SIGKILL);
	}
	closedir(d);
}

/*
 * Remember the mount namespace of s's shell now: a shell that ended (an
 * exit) and was started again leaves its namespace to what it started
 * there, which teardown must find too.
 */
static void
note_ns(struct isosess *s)
{
	ino_t ns = session_pid(s->sh) > 0 ? mnt_ns(session_pid(s->sh)) : 0;

	if (ns == 0)
		return;
	for (size_t i = 0; i < s->nns; i++)
		if (s->ns[i] == ns)
			return;
	if (s->nns == sizeof(s->ns) / sizeof(s->ns[0]))
		memmove(s->ns, s->ns + 1, sizeof(s->ns) - sizeof(s->ns[0]));
	else
		s->nns++;
	s->ns[s->nns - 1] = ns;
}

/* Kill everything of s, remove its files, free it (unregistered). */
static void
teardown(struct isosess *s)
{
	note_ns(s);
	session_free(s->sh);	/* its runs end, each reported */
	for (size_t i = 0; i < s->nns; i++)
		kill_ns(s->ns[i]);
	unmount_uppers(s->dir);
	rm_tree_later(xstrdup(s->dir));
	log_info("isolated=%s removed", s->id);
	sess_free(s);
}

int
isolated_delete(const char *id)
{
	struct isosess *s, **pp;

	for (pp = &registry; (s = *pp) != NULL; pp = &s->next)
		if (strcmp(s->id, id) == 0) {
			*pp = s->next;
			teardown(s);
			return 0;
		}
	return -ENOENT;
}

/* Idle sessions go: nothing running for idle_timeout_seconds. */
static void
sweep(struct loop *l, uint64_t tid, void *arg)
{
	struct isosess *s, **pp = &registry;
	uint64_t now = loop_now_ms();

	t_sweep = 0;
	while ((s = *pp) != NULL) {
		if (s->req.idle_s > 0 && s->running == 0 &&
		    now - s->idle_since >= (uint64_t)s->req.idle_s * 1000) {
			log_info("isolated=%s idle for %us: removed", s->id,
			    s->req.idle_s);
			*pp = s->next;
			teardown(s);
			continue;
		}
		pp = &s->next;
	}
	if (registry != NULL)
		t_sweep = loop_timer_add(l, SWEEP_MS, sweep, NULL);
}

static json_t *
short_state(const struct isosess *s)
{
	json_t *o = json_pack("{s:s,s:s,s:o,s:o}", "session_id", s->id,
	    "status", isolated_dead(s) ? "dead" : "active", "created_at",
	    rfc3339(&s->created), "last_run_at", rfc3339(&s->last_run));
	uint64_t idle, gone;

	if (s->req.idle_s > 0) {
		idle = (uint64_t)s->req.idle_s;
		gone = s->running > 0 ? 0 : (loop_now_ms() - s->idle_since) /
		    1000;
		json_object_set_new(o, "idle_remaining_seconds",
		    json_integer((json_int_t)(gone < idle ? idle - gone : 0)));
	}
	return o;
}

json_t *
isolated_state(const struct isosess *s)
{
	json_t *o = short_state(s);

	isoreq_echo(&s->req, o);
	return o;
}

json_t *
isolated_list(void)
{
	json_t *a = json_array();

	for (struct isosess *s = registry; s != NULL; s = s->next)
		json_array_append_new(a, short_state(s));
	return json_pack("{s:o}", "sessions", a);
}

/* code after an export of each of envs; NULL when a name is not one. */
static char *
with_envs(const char *code, const json_t *envs)
{
	struct buf b;
	const char *k;
	json_t *v;
	char *out;
	json_t *e = (json_t *)(uintptr_t)envs;	/* only read */

	buf_init(&b);
	json_object_foreach(e, k, v) {
		if (k[0] == '\0' || strspn(k, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(k) ||
		    (k[0] >= '0' && k[0] <= '9') || !json_is_string(v)) {
			buf_reset(&b);
			return NULL;
		}
		buf_addf(&b, "export %s=", k);
		buf_add_shquoted(&b, json_string_value(v));
		buf_add(&b, "\n", 1);
	}
	buf_adds(&b, code);
	out = xstrndup(b.p != NULL ? b.p : "", b.len);
	buf_reset(&b);
	return out;
}

static void
run_output(int stream, const char *p, size_t n, void *arg)
{
	struct isorun *r = arg;

	if (r->background) {
		/* As upstream keeps it: the first 16 MiB. */
		if (r->written + n > ISOLATED_LOG_READ_MAX)
			n = (size_t)(ISOLATED_LOG_READ_MAX - r->written);
		if (r->fd >= 0 && n > 0 && write(r->fd, p, n) < 0)
			log_warn("isolated run=%s log", r->id);
		r->written += n;
	} else if (!r->forgotten)
		r->output(stream, p, n, r->arg);
}

static void
run_done(int status, bool timed_out, const char *reset, void *arg)
{
	struct isorun *r = arg, **pp;
	struct isosess *s = r->s;

	r->running = false;
	clock_gettime(CLOCK_REALTIME, &r->finished);
	if (s->running > 0)
		s->running--;
	note_ns(s);
	s->last_run = r->finished;
	s->idle_since = loop_now_ms();
	if (!r->background) {
		if (!r->forgotten)
			r->done(status, timed_out, reset, r->arg);
		for (pp = &s->runs; *pp != NULL; pp = &(*pp)->next)
			if (*pp == r) {
				*pp = r->next;
				break;
			}
		free(r);
		return;
	}
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (reset[0] != '\0')
		r->error = "session terminated";
	else {
		r->has_code = true;
		r->code = status;
	}
}

static struct isorun *
new_run(struct isosess *s, bool background)
{
	struct isorun *r = xcalloc(1, sizeof(*r));

	id_uuid(r->id);
	r->s = s;
	r->fd = -1;
	r->background = background;
	r->running = true;
	clock_gettime(CLOCK_REALTIME, &r->started);
	r->next = s->runs;
	s->runs = r;
	return r;
}

int
isolated_run(struct isosess *s, const char *code, const json_t *envs,
    unsigned timeout_ms, session_output_cb *output, session_done_cb *done,
    void *arg)
{
	char *full = with_envs(code, envs);
	struct isorun *r;

	if (full == NULL)
		return -EINVAL;
	if (isolated_dead(s)) {
		free(full);
		return -ESRCH;
	}
	note_ns(s);
	r = new_run(s, false);
	r->output = output;
	r->done = done;
	r->arg = arg;
	s->running++;
	session_run(s->sh, full, NULL, timeout_ms, run_output, run_done, r);
	free(full);
	return 0;
}

void
isolated_run_forget(struct isosess *s, void *arg)
{
	for (struct isorun *r = s->runs; r != NULL; r = r->next)
		if (!r->background && r->arg == arg && !r->forgotten) {
			r->forgotten = true;
			/*
			 * Upstream: a client that leaves cancels its run;
			 * when it is the one running now (nothing queued
			 * behind it can be).
			 */
			if (s->running == 1)
				(void)session_interrupt(s->sh);
		}
}

int
isolated_background(struct isosess *s, const char *code, const json_t *envs,
    char run_id[37], char *err, size_t errlen)
{
	char *full = with_envs(code, envs);
	struct isorun *r;

	if (full == NULL) {
		snprintf(err, errlen, "envs: names must be shell names and "
		    "values strings");
		return -1;
	}
	if (isolated_dead(s)) {
		free(full);
		snprintf(err, errlen, "session is not active");
		return -1;
	}
	note_ns(s);
	r = new_run(s, true);
	r->log = xasprintf("%s/isolated-%s-%s.log", state_dir, s->id, r->id);
	if ((r->fd = open(r->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_APPEND, 0600)) < 0)
		log_warn("isolated run=%s: %s", r->id, r->log);
	s->running++;
	session_run(s->sh, full, NULL, 0, run_output, run_done, r);
	free(full);
	snprintf(run_id, 37, "%s", r->id);
	return 0;
}

static struct isorun *
find_run(struct isosess *s, const char *id)
{
	for (struct isorun *r = s->runs; r != NULL; r = r->next)
		if (r->background && strcmp(r->id, id) == 0)
			return r;
	return NULL;
}

json_t *
isolated_run_state(struct isosess *s, const char *id)
{
	struct isorun *r = find_run(s, id);
	json_t *o;

	if (r == NULL)
		return NULL;
	o = json_pack("{s:s,s:s,s:b,s:o}", "session_id", s->id, "run_id",
	    r->id, "running", r->running, "started_at",
	    rfc3339(&r->started));
	if (r->has_code)
		json_object_set_new(o, "exit_code", json_integer(r->code));
	if (r->error != NULL)
		json_object_set_new(o, "error", json_string(r->error));
	if (!r->running)
		json_object_set_new(o, "finished_at", rfc3339(&r->finished));
	return o;
}

int
isolated_logs(struct isosess *s, const char *id, uint64_t cursor, int *fd,
    uint64_t *off, uint64_t *len, uint64_t *next)
{
	struct isorun *r = find_run(s, id);
	struct stat st;
	uint64_t size;

	if (r == NULL)
		return -ENOENT;
	*fd = -1;
	*off = *len = *next = 0;
	if (r->log == NULL || (*fd = open(r->log, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	if (fstat(*fd, &st) < 0) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	size = (uint64_t)st.st_size;
	*off = cursor < size ? cursor : size;
	*len = size - *off;
	if (*len > ISOLATED_LOG_READ_MAX)
		*len = ISOLATED_LOG_READ_MAX;
	*next = *off + *len;
	return 0;
}
