/*
 * sandbox.h -- what every child of execd runs under: a seccomp filter, a
 * capability bounding set and no_new_privs.
 *
 * The filter is built once, when execd starts (sandbox_new, main thread),
 * as a denylist: the calls in the profile's groups fail with EPERM (or
 * are only logged, in log mode), everything else is allowed.  Whatever
 * the profile, calls aimed at execd itself (signals, tracing, reading its
 * memory, changing its limits) fail, so a child cannot take the daemon
 * down.  sandbox_enter() runs in a child between fork and exec, in
 * execd's memory: raw system calls only, no allocation; sandbox_load()
 * runs on a thread of execd that forks them (see cgroup.c's residents).
 */
#ifndef EXECD_SANDBOX_H
#define EXECD_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum sandbox_profile {
	SANDBOX_OFF,		/* only execd is protected */
	SANDBOX_DEFAULT,	/* the container runtimes' denylist */
	SANDBOX_STRICT,		/* default, and no debugging of others */
};

struct sandbox_conf {
	enum sandbox_profile	 profile;
	bool			 log_only;	/* log, do not refuse */
	bool			 no_new_privs;
	uint64_t		 caps;		/* bounding set kept */
};

/* The bounding set kept by default: the container runtimes' own. */
extern const uint64_t sandbox_default_caps;

struct sandbox;

/*
 * Build the filter for the children of this process, which it protects:
 * its pid, its process group and the threads it has now (a signal to a
 * thread's id kills the process), so start every thread first.  0 with
 * *out set, or -errno with a message in err.
 */
int	sandbox_new(const struct sandbox_conf *, struct sandbox **out,
	    char *err, size_t errlen);
void	sandbox_free(struct sandbox *);		/* NULL ok */
/*
 * On a thread of execd that forks children and does nothing else: set
 * no_new_privs (where configured) and load the filter into this thread
 * alone, so that every child it forks from now on is born under them.
 * Raw system calls.  0 or -errno.
 */
int	sandbox_load(const struct sandbox *);
/*
 * In the child, before exec and while it still has its privileges:
 * drop the capabilities, set no_new_privs, load the filter, unless it
 * was born under them (filtered: forked by a thread that ran
 * sandbox_load with this sb).  0 or -errno.
 */
int	sandbox_enter(const struct sandbox *, bool filtered);

/* "off", "default", "strict"; 0 or -EINVAL. */
int	sandbox_profile_parse(const char *, enum sandbox_profile *);
const char *sandbox_profile_name(enum sandbox_profile);
/*
 * A capability list, "chown,net_raw,..." (names with or without "cap_",
 * any case), "all" or "none", into a mask.  0, or -EINVAL with the
 * unknown name in err.
 */
int	sandbox_caps_parse(const char *, uint64_t *, char *err, size_t errlen);
/* The mask as such a list, into buf. */
void	sandbox_caps_format(uint64_t, char *buf, size_t len);

#endif
