/*
 * job.h -- shell jobs: spawn, collect output, enforce a timeout.
 *
 * A job runs `bash -c CMD` (sh when there is no bash) in its own process
 * group.  It is complete when it has been reaped and its pipes are at
 * EOF; a grandchild that keeps a pipe open may delay that by at most the
 * drain time (JOB_DRAIN_MS) after the exit.  Loop thread only.
 */
#ifndef EXECD_JOB_H
#define EXECD_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define JOB_DRAIN_MS	1000

struct loop;
struct job;

struct job_opts {
	const char	*cmd;
	const char	*cwd;		/* NULL: execd's */
	char *const	*envp;		/* NULL: execd's */
	int		 set_ids;	/* run as uid/gid with groups */
	uid_t		 uid;
	gid_t		 gid;
	const gid_t	*groups;
	size_t		 ngroups;
	unsigned	 timeout_ms;	/* 0: none */
	unsigned	 grace_ms;	/* SIGTERM to SIGKILL */
	int		 out_fd;	/* >= 0: stdout and stderr go there */
};

/* Output read from the job's stdout (1) or stderr (2), as it comes. */
typedef void job_output_cb(struct job *, int stream, const char *p,
    size_t n, void *arg);
/*
 * Called once when the job is complete: status as from waitpid.  The
 * callback may free the job.
 */
typedef void job_done_cb(struct job *, int status, bool timed_out,
    void *arg);

/* Start; 0 with *out set, or -errno with a message in err (no callback). */
int	job_start(struct loop *loop, const struct job_opts *o,
	    job_output_cb *output, job_done_cb *done, void *arg,
	    struct job **out, char *err, size_t errlen);
/* SIGTERM to the group now, SIGKILL after the grace period. */
int	job_stop(struct job *);
bool	job_running(const struct job *);	/* not yet reaped */
pid_t	job_pid(const struct job *);
/* NULL ok.  A job still running is killed (the group, SIGKILL). */
void	job_free(struct job *);

#endif
