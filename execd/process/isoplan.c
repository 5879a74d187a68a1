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
#include <sys/socket.h>
#include <sys/stat.h>
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
	n = snprintf(s->opts, sizeof(s->opts),
	    "lowerdir=%s,upperdir=%s/upper,workdir=%s/work", target, dir, dir);
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

/* Bind src on dst; read-only too when ro. */
static int
bind_on(const char *src, const char *dst, bool ro)
{
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -1;
	if (ro && mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY,
	    NULL) < 0)
		return -1;
	return 0;
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
			/* The merged root looks as the real one. */
			if (chown(s->upper, s->uid, s->gid) < 0 ||
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
	return 0;
}
