/*
 * cgroup.h -- how a job's limits are enforced: a cgroup of its own where
 * execd has a writable one (v2 with the memory and pids controllers
 * delegated, or v1 memory and pids hierarchies), rlimits otherwise.
 *
 * cgroup_init() decides once, at start.  spawn.c makes each job's cgroup
 * (cgroup_new) before the fork, forks through cgroup_fork, the child
 * joins it (cgroup_join, raw system calls) unless it was born there, and
 * takes rlimits for the rest of its limits, and the job
 * is then tracked by its leader's pid: its owner asks why it ended
 * (cgroup_why) when the leader is reaped, and child.c removes the cgroup
 * (cgroup_release), killing whatever it still holds.  Making and
 * removing directories is slow in the kernel, so both happen on the loop
 * while nothing waits: a few empty cgroups are kept made, and one a job
 * is done with is removed after its answer has gone out.  Loop thread
 * only (cgroup.c's own thread excepted).
 */
#ifndef EXECD_CGROUP_H
#define EXECD_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "limits.h"

enum cgroup_mode {
	CGROUP_NONE,		/* rlimits only */
	CGROUP_V1,		/* memory and pids hierarchies */
	CGROUP_V2,		/* unified, memory and pids delegated */
};

struct cgroup;
struct loop;

/*
 * Find a cgroup execd may write (unless off) and make its directory for
 * jobs there, removing those a dead execd left.  Returns the mode; a
 * message in why says what was found or why there is none.
 */
enum cgroup_mode cgroup_init(struct loop *, bool off, char *why,
	    size_t whylen);
/*
 * Remove execd's directory (jobs still running are killed first).  It
 * does not touch the loop, which may already be freed.
 */
void	cgroup_shutdown(void);
enum cgroup_mode cgroup_mode(void);
/* "cgroup v2", "cgroup v1", "rlimits". */
const char *cgroup_mode_name(enum cgroup_mode);
/* True when l has limits a cgroup enforces (memory, processes). */
bool	cgroup_wanted(const struct limits *l);
/*
 * Make a cgroup with l's memory and process limits, open for a child to
 * join.  0 with *out set, or -errno with a message in err.
 */
int	cgroup_new(const struct limits *l, struct cgroup **out, char *err,
	    size_t errlen);
/*
 * Call fn(arg), which forks the job's child, so that the child is born in
 * cg where it can be: on the thread of execd that waits in cg (cgroup
 * v1; see cgroup.c), and on the caller's otherwise.  The child's pid, or
 * -1 with errno as fn left it.  On that thread, the caller waits with
 * wait(arg) meanwhile, which returns the pid once the child has exec'd
 * or ended, or -1 once fn has failed; fn goes on until the child has
 * exec'd, and the thread after that, without the caller.
 */
pid_t	cgroup_fork(struct cgroup *cg, pid_t (*fn)(void *),
	    pid_t (*wait)(void *), void *arg);
/* True when a child forked through cgroup_fork(cg) is born in cg. */
bool	cgroup_born_in(const struct cgroup *cg);
/*
 * The policy is read again: the threads that fork jobs from inside their
 * cgroups, which carry the old seccomp filter, retire, and spares made at
 * start take their place (no thread is made after start: the filters of
 * running children protect only the threads that existed when they were
 * built).  Call it before the new filter is built (sandbox_new).
 */
void	cgroup_renew(void);
/*
 * In the child, before exec, unless it was born in cg: move this process
 * into cg.  Raw system calls only.  0 or -1 with errno set.
 */
int	cgroup_join(const struct cgroup *cg);
/*
 * The same, with no thread of execd in it (none is born there): for a
 * process that is moved in by cgroup_move.
 */
int	cgroup_new_empty(const struct limits *l, struct cgroup **out,
	    char *err, size_t errlen);
/*
 * From execd: move process pid (a child that did not start through
 * spawn.c, forked by a fork server, say) into cg.  0 or -errno.
 */
int	cgroup_move(const struct cgroup *cg, pid_t pid);
/*
 * The job led by pid runs under l (copied) and in cg (NULL: none), which
 * it now owns; cgroup_release ends both.
 */
void	cgroup_track(pid_t pid, const struct limits *l, struct cgroup *cg);
/* Drop a cgroup no job took (the spawn failed). */
void	cgroup_free(struct cgroup *cg);
/*
 * Why the job led by pid ended with wait status st, when a limit ended
 * it: "memory limit of 256 MiB reached: killed by the kernel" and so on,
 * into buf; true then, false (buf empty) otherwise.
 */
bool	cgroup_why(pid_t pid, int st, char *buf, size_t len);
/* SIGKILL to every process in the job's cgroup; how many were sent. */
int	cgroup_kill(pid_t pid);
/* The job led by pid is over: kill what is left, remove its cgroup. */
void	cgroup_release(pid_t pid);
/* Jobs tracked now (for tests and metrics). */
size_t	cgroup_count(void);

#endif
