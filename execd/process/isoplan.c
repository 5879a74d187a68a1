/*
 * isoplan.c -- build an isolation plan in execd, apply it in a child
 * (see isoplan.h).  Everything isoplan_apply touches was written into
 * the plan by the parent.
 */
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../core/xmalloc.h"
#include "isoplan.h"

/* Absolute, and nothing overlayfs's option string would misread. */
bool
isoplan_path_ok(const char *p)
{
	return p[0] == '/' && strpbrk(p, ",:\\\n") == NULL &&
	    strlen(p) < PATH_MAX;
}

static struct isoplan_step *
add(struct isoplan *p, enum isoplan_kind kind, const char *target)
{
	struct isoplan_step *s;

	if (p->n >= ISOPLAN_STEPS)
		return NULL;
	p->step = xreallocarray(p->step, p->n + 1, sizeof(*p->step));
	s = &p->step[p->n];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	snprintf(s->target, sizeof(s->target), "%s", target);
	return s;
}

void
isoplan_free(struct isoplan *p)
{
	free(p->step);
	p->step = NULL;
	p->n = 0;
}

int
isoplan_overlay(struct isoplan *p, const char *target, const char *dir,
    bool tmp, mode_t mode, uid_t uid, gid_t gid)
{
	struct isoplan_step *s;
	int n;

	if (!isoplan_path_ok(target) || !isoplan_path_ok(dir))
		return -EINVAL;
	if ((s = add(p, tmp ? ISOPLAN_OVERLAY_TMP : ISOPLAN_OVERLAY,
	    target)) == NULL)
		return -E2BIG;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	snprintf(s->upper, sizeof(s->upper), "%s/upper", dir);
	snprintf(s->work, sizeof(s->work), "%s/work", dir);
	/* Mounted in a user namespace, trusted.* xattrs are out of reach. */
	n = snprintf(s->opts, sizeof(s->opts),
	    "lowerdir=%s,upperdir=%s/upper,workdir=%s/work%s", target, dir, dir,
	    p->userns.on && !p->userns.full ? ",userxattr" : "");
	if (n < 0 || (size_t)n >= sizeof(s->opts))
		return -ENAMETOOLONG;
	if (p->upper_max > 0)
		snprintf(s->tmpopts, sizeof(s->tmpopts), "mode=0700,size=%llu",
		    p->upper_max);
	else
		snprintf(s->tmpopts, sizeof(s->tmpopts), "mode=0700");
	s->mode = mode & 07777;
	s->uid = uid;
	s->gid = gid;
	p->n++;
	return 0;
}

int
isoplan_readonly(struct isoplan *p, const char *target)
{
	if (target[0] != '/' || strlen(target) >= PATH_MAX)
		return -EINVAL;
	if (add(p, ISOPLAN_READONLY, target) == NULL)
		return -E2BIG;
	p->n++;
	return 0;
}

int
isoplan_bind(struct isoplan *p, const char *source, const char *target,
    bool ro)
{
	struct isoplan_step *s;

	if (source[0] != '/' || target[0] != '/' ||
	    strlen(source) >= PATH_MAX || strlen(target) >= PATH_MAX)
		return -EINVAL;
	if ((s = add(p, ro ? ISOPLAN_BIND_RO : ISOPLAN_BIND, target)) == NULL)
		return -E2BIG;
	snprintf(s->source, sizeof(s->source), "%s", source);
	p->n++;
	return 0;
}

/*
 * Bind src on dst; read-only too when ro.  The remount keeps the flags
 * the mount had: in a user namespace, those of execd's mounts are locked
 * and a remount that would clear one fails.
 */
static int
bind_on(const char *src, const char *dst, bool ro)
{
	static const struct { unsigned long st, ms; } keep[] = {
		{ ST_NOSUID, MS_NOSUID }, { ST_NODEV, MS_NODEV },
		{ ST_NOEXEC, MS_NOEXEC }, { ST_NOATIME, MS_NOATIME },
		{ ST_NODIRATIME, MS_NODIRATIME }, { ST_RELATIME, MS_RELATIME },
	};
	unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
	struct statvfs sv;

	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -1;
	if (!ro)
		return 0;
	if (statvfs(dst, &sv) == 0)
		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
			if (sv.f_flag & keep[i].st)
				flags |= keep[i].ms;
	return mount(NULL, dst, NULL, flags, NULL);
}

/* "in out 1\n" into buf (64 bytes): no stdio in the child. */
static void
one_map(char *buf, unsigned long in, unsigned long out)
{
	char t[24];
	size_t n = 0, k;

	for (int i = 0; i < 2; i++) {
		unsigned long v = i == 0 ? in : out;

		k = 0;
		do {
			t[k++] = (char)('0' + v % 10);
			v /= 10;
		} while (v != 0);
		while (k > 0)
			buf[n++] = t[--k];
		buf[n++] = ' ';
	}
	memcpy(buf + n, "1\n", 3);
}

/* "/proc/PID/NAME" into buf (64 bytes). */
static void
proc_path(char *buf, long pid, const char *name)
{
	char t[24];
	size_t n = 6, k = 0;

	memcpy(buf, "/proc/", 6);
	do {
		t[k++] = (char)('0' + pid % 10);
		pid /= 10;
	} while (pid != 0);
	while (k > 0)
		buf[n++] = t[--k];
	buf[n++] = '/';
	memcpy(buf + n, name, strlen(name) + 1);
}

/* Write s to the file p (a /proc map); raw calls only. */
static int
put(const char *p, const char *s)
{
	int fd, e;
	ssize_t n;

	if ((fd = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	n = write(fd, s, strlen(s));
	e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/*
 * A new user namespace for this process, mapped as u says.  A full map
 * must be written from execd's namespace by a process with CAP_SETUID
 * there: a helper forked first (a raw clone, no atfork handlers, as
 * this child may share execd's memory) waits for the namespace, writes
 * both maps and reports with its exit status.
 */
static int
enter_userns(const struct isoplan_userns *u)
{
	char p[64], map[64];
	int sync[2], st = 0, e = 0;
	pid_t self = (pid_t)syscall(SYS_getpid), h;
	char c = 0;

	if (!u->full) {
		if (unshare(CLONE_NEWUSER) < 0)
			return -1;
		/*
		 * execd is not dumpable, so its children's /proc/self files
		 * are root's until they exec, and this uid may not write
		 * them: dumpable for the three writes (spawn.c forks this
		 * child, so the flag is on its own copy of execd's memory).
		 */
		if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
			return -1;
		/* setgroups before gid_map, or the kernel refuses it. */
		one_map(map, u->uid, u->uid_out);
		if (put("/proc/self/setgroups", "deny") < 0 ||
		    put("/proc/self/uid_map", map) < 0)
			e = errno;
		one_map(map, u->gid, u->gid_out);
		if (e == 0 && put("/proc/self/gid_map", map) < 0)
			e = errno;
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 && e == 0)
			e = errno;
		errno = e;
		return e != 0 ? -1 : 0;
	}
	if (pipe2(sync, O_CLOEXEC) < 0)
		return -1;
	if ((h = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL,
	    NULL)) < 0) {
		e = errno;
		close(sync[0]);
		close(sync[1]);
		errno = e;
		return -1;
	}
	if (h == 0) {
		close(sync[1]);
		if (read(sync[0], &c, 1) != 1)
			syscall(SYS_exit, 1);
		proc_path(p, (long)self, "uid_map");
		if (put(p, u->uid_map) < 0)
			syscall(SYS_exit, 2);
		proc_path(p, (long)self, "gid_map");
		if (put(p, u->gid_map) < 0)
			syscall(SYS_exit, 3);
		syscall(SYS_exit, 0);
	}
	close(sync[0]);
	if (unshare(CLONE_NEWUSER) < 0)
		e = errno;
	/* The helper reads 1 byte, or end of file: it gives up. */
	if (e == 0 && write(sync[1], &c, 1) != 1)
		e = errno;
	close(sync[1]);
	while (waitpid(h, &st, 0) < 0)
		if (errno != EINTR) {
			e = e != 0 ? e : errno;
			break;
		}
	if (e == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
		e = EPERM;
	errno = e;
	return e != 0 ? -1 : 0;
}

/* The upper and work directories of an overlay on a tmpfs of its own. */
static int
tmp_upper(const struct isoplan_step *s)
{
	if (mount("tmpfs", s->dir, "tmpfs", MS_NOSUID | MS_NODEV,
	    s->tmpopts) < 0)
		return -1;
	if (mkdir(s->upper, 0700) < 0 || mkdir(s->work, 0700) < 0)
		return -1;
	return 0;
}

/* lo up in a fresh network namespace (it starts down). */
static int
lo_up(void)
{
	struct ifreq ifr;
	int fd, rc = -1, e;

	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	e = errno;
	close(fd);
	errno = e;
	return rc;
}

int
isoplan_apply(const struct isoplan *p, int *step)
{
	const struct isoplan_step *s;

	/* One id mapped: only the user namespace's own may mount. */
	*step = -2;
	if (p->userns.on && !p->userns.full && enter_userns(&p->userns) < 0)
		return -1;
	*step = -1;
	if (unshare(CLONE_NEWNS | (p->private_net ? CLONE_NEWNET : 0)) < 0)
		return -1;
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return -1;
	if (p->private_net && lo_up() < 0)
		return -1;
	for (size_t i = 0; i < p->n; i++) {
		s = &p->step[i];
		*step = (int)i;
		switch (s->kind) {
		case ISOPLAN_OVERLAY_TMP:
			if (tmp_upper(s) < 0)
				return -1;
			/* FALLTHROUGH */
		case ISOPLAN_OVERLAY:
			/*
			 * The merged root looks as the real one; in a user
			 * namespace of one id, an owner it does not map
			 * cannot be given: the upper keeps its own.
			 */
			if ((chown(s->upper, s->uid, s->gid) < 0 &&
			    !(p->userns.on && !p->userns.full &&
			    (errno == EINVAL || errno == EPERM))) ||
			    chmod(s->upper, s->mode) < 0)
				return -1;
			if (mount("overlay", s->target, "overlay", 0,
			    s->opts) < 0)
				return -1;
			break;
		case ISOPLAN_READONLY:
			if (bind_on(s->target, s->target, true) < 0)
				return -1;
			break;
		case ISOPLAN_BIND:
		case ISOPLAN_BIND_RO:
			if (bind_on(s->source, s->target,
			    s->kind == ISOPLAN_BIND_RO) < 0)
				return -1;
			break;
		}
	}
	*step = (int)p->n;
	if (p->private_tmp && mount("tmpfs", "/tmp", "tmpfs",
	    MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		return -1;
	/*
	 * Every id mapped: the user namespace last, so that the mount and
	 * network namespaces stay execd's namespace's (nothing in the
	 * session has a capability over them, and execd's copies of them
	 * for the file routes are not locked).
	 */
	*step = -2;
	if (p->userns.on && p->userns.full && enter_userns(&p->userns) < 0)
		return -1;
	return 0;
}
