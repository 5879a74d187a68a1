/*
 * isoplan.h -- the namespaces and mounts an isolated session's shell is
 * started in (see docs/isolation.md).
 *
 * A plan is built by its owner before the fork, every string and number
 * in it ready; spawn.c's child applies it (isoplan_apply) after its fds
 * are set up and before the sandbox, the capability drop and the change
 * of identity, while it still may mount.  The child shares execd's
 * memory until it execs: isoplan_apply makes system calls only, no
 * allocation and no stdio.
 *
 * What it does, in order: a new user namespace first when asked with
 * one id mapped (see struct isoplan_userns), a new mount namespace (and a new network
 * namespace with lo up when asked), every mount in it made a slave of
 * execd's (what execd mounts later still reaches the session; nothing
 * the session mounts reaches execd); then each step in the order given
 * (parents before the paths nested in them); then a private tmpfs on
 * /tmp when asked; then the user namespace with every id mapped.
 */
#ifndef EXECD_ISOPLAN_H
#define EXECD_ISOPLAN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define ISOPLAN_STEPS	64	/* at most, in one plan */

enum isoplan_kind {
	ISOPLAN_OVERLAY,	/* overlay of target on itself, upper on disk */
	ISOPLAN_OVERLAY_TMP,	/* the same, upper on a tmpfs on dir */
	ISOPLAN_READONLY,	/* target bound on itself, read-only */
	ISOPLAN_BIND,		/* source bound on target */
	ISOPLAN_BIND_RO,	/* source bound on target, read-only */
};

struct isoplan_step {
	enum isoplan_kind kind;
	char		 target[PATH_MAX];
	char		 source[PATH_MAX];	/* binds */
	char		 dir[PATH_MAX];		/* overlays: upper and work
						   are dir/upper, dir/work */
	char		 upper[PATH_MAX + 8];
	char		 work[PATH_MAX + 8];
	char		 opts[3 * PATH_MAX + 64];	/* overlay's data */
	char		 tmpopts[64];	/* the tmpfs's, ISOPLAN_OVERLAY_TMP */
	mode_t		 mode;		/* the lower root's, for the upper */
	uid_t		 uid;
	gid_t		 gid;
};

/*
 * A user namespace (uid_mode "userns").  full: execd may set any ids
 * (CAP_SETUID and CAP_SETGID), and every id inside is the same id
 * outside, the map written by a short-lived helper child still in
 * execd's namespace; the user namespace is made last, after the mounts,
 * which stay in namespaces execd's own user namespace owns.  Else it is
 * made first and owns the mount and network namespaces (only so may an
 * unprivileged process make them), and the process maps one uid and one
 * gid of its own: uid inside is execd's euid outside, gid its egid
 * (setgroups denied, as the kernel wants of such a map).
 */
struct isoplan_userns {
	bool			 on;
	bool			 full;
	uid_t			 uid, uid_out;
	gid_t			 gid, gid_out;
	/* full: the maps to write ("0 0 4294967295\n" in the initial
	 * namespace; in another, each of its ranges as itself) */
	char			 uid_map[512];
	char			 gid_map[512];
};

/* Zeroed to start with; isoplan_free() it. */
struct isoplan {
	bool			 private_tmp;
	bool			 private_net;
	struct isoplan_userns	 userns;
	unsigned long long	 upper_max;	/* bytes of a tmpfs upper; 0:
						   the kernel's default */
	size_t			 n;
	struct isoplan_step	*step;		/* n of them (~32 KiB each) */
};

/*
 * Add an overlay step of target (an absolute path without ',', ':' or
 * '\\', which overlayfs's options cannot carry) whose upper and work
 * directories go under dir; the upper root takes mode, uid and gid (the
 * lower's) so that the merged root looks as the real one.  tmp: dir gets
 * a tmpfs of its own in the child, of p->upper_max bytes when not 0 (set
 * it first).  0 or -EINVAL (bad path), -E2BIG
 * (too many steps), -ENAMETOOLONG.
 */
int	isoplan_overlay(struct isoplan *, const char *target, const char *dir,
	    bool tmp, mode_t mode, uid_t uid, gid_t gid);
/* Add a read-only step of target (bound on itself). */
int	isoplan_readonly(struct isoplan *, const char *target);
/* Add a bind of source on target, read-only if ro. */
int	isoplan_bind(struct isoplan *, const char *source, const char *target,
	    bool ro);
/* Free p's steps (p itself is the caller's). */
void	isoplan_free(struct isoplan *p);
/* True when p can be an overlay's path (see isoplan_overlay). */
bool	isoplan_path_ok(const char *p);

/*
 * In the child: apply p.  0, or -1 with errno set and the number of the
 * step that failed in *step (-2: the user namespace, -1: the others, n:
 * /tmp).
 */
int	isoplan_apply(const struct isoplan *p, int *step);

#endif
