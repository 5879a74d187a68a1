/*
 * spawn.h -- start a child process: the only fork() in execd.
 *
 * The child gets its own session and process group, default signal
 * dispositions and an empty mask, PR_SET_PDEATHSIG, only the fds it is
 * given, then execs.  Errors before the exec (a missing program, a bad
 * cwd) are reported synchronously through a close-on-exec pipe, so the
 * caller learns them from spawn_start() itself.  Loop thread only.
 */
#ifndef EXECD_SPAWN_H
#define EXECD_SPAWN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct spawn_opts {
	char *const	*argv;		/* argv[0] is looked up in PATH */
	const char	*path;		/* not NULL: exec'd as it is, with
					   argv (no search, no shell) */
	char *const	*envp;		/* NULL: execd's environment */
	const char	*cwd;		/* NULL: execd's */
	int		 stdin_fd;	/* -1: /dev/null */
	int		 stdout_fd;	/* -1: /dev/null */
	int		 stderr_fd;	/* -1: /dev/null */
	int		 set_ids;	/* switch to uid, gid and groups */
	uid_t		 uid;
	gid_t		 gid;
	const gid_t	*groups;	/* supplementary groups */
	size_t		 ngroups;
	int		 has_fd3;	/* fd3 becomes the child's fd 3 */
	int		 fd3;
	int		 ctty;		/* stdin_fd is a terminal: make it
					   the controlling terminal */
	const struct limits *limits;	/* NULL: none; see cgroup.h */
	int		 keep_ids;	/* not the default user: execd's */
	const struct isoplan *plan;	/* NULL: execd's namespaces; else
					   applied before the sandbox */
};

/* Who children run as when not set_ids (spawn_default_user). */
struct spawn_user {
	uid_t		 uid;
	gid_t		 gid;
	const gid_t	*groups;	/* supplementary, as initgroups() */
	size_t		 ngroups;
	const char	*name;		/* USER and LOGNAME */
	const char	*home;		/* HOME */
};

struct sandbox;
struct limits;
struct isoplan;
/*
 * Every child started after this enters sb (see sandbox.h) before it
 * changes identity; NULL, the default, for none.  sb must outlive them.
 */
void	spawn_init(const struct sandbox *sb);
/*
 * The policy's generation: it changes at each spawn_init, so that a
 * process kept to fork children from (a fork server) can tell that its
 * filter is an older policy's.
 */
unsigned spawn_generation(void);
/*
 * The i-th rlimit that spawn_start gives a child under l (in_cgroup:
 * memory and processes are left to the cgroup), for a process that sets
 * its own: 1 with *res (RLIMIT_*), *cur and *max (UINT64_MAX: none), 0
 * when there is none at i, -1 past the last i.
 */
int	spawn_rlimit(const struct limits *l, int in_cgroup, size_t i,
	    int *res, uint64_t *cur, uint64_t *max);
/*
 * Children started without set_ids (nor keep_ids) from now on run as u,
 * with its HOME, USER and LOGNAME in their environment; NULL, the
 * default, for execd's own identity.  u must outlive them.
 */
void	spawn_default_user(const struct spawn_user *u);
/*
 * Make execd the OOM killer's last choice: its oom_score_adj as low as it
 * may set it (-1000 with CAP_SYS_RESOURCE), and every child's, written in
 * the child, child_adj.  The value execd has, into *self.  0 or -errno.
 */
int	spawn_oom_init(int child_adj, int *self);
/*
 * Fork and exec.  With o->limits, the child runs in a cgroup of its own
 * when cgroup.h has them (memory, processes) and under rlimits for the
 * rest, and is tracked there by its pid (cgroup_why, cgroup_release).
 * 0 with *pid set (the child leads process group *pid),
 * or -errno from the step that failed, with a message in err.  The fds
 * given stay open in the caller.
 */
int	spawn_start(const struct spawn_opts *, pid_t *pid, char *err,
	    size_t errlen);
/*
 * Find the program a child runs for argv[0] name, as upstream does for a
 * command given as argv: an absolute name as it is; a name with a '/'
 * under cwd (NULL: execd's); a bare name in the first absolute directory
 * of envp's PATH (NULL envp: execd's environment) that holds a regular
 * file of that name with an execute bit.  0 with the path in out, or
 * -ENOENT, -ENAMETOOLONG.
 */
int	spawn_lookup(const char *name, const char *cwd, char *const *envp,
	    char *out, size_t outlen);
/*
 * A close-on-exec pipe between execd and a child, execd's end (fds[ours])
 * non-blocking.  0, or -errno with nothing left open (fds untouched, or
 * both -1).
 */
int	spawn_pipe(int fds[2], int ours);
/* Close whichever ends of a pipe are open (>= 0); both become -1. */
void	spawn_pipe_close(int fds[2]);

#endif
