/*
 * job.h -- shell jobs: spawn, collect output, enforce a timeout.
 *
 * A job runs `bash -c CMD` (sh when there is no bash), or an argv of its
 * own without a shell, in its own process
 * group, with PTREE_MARK_VAR=<random> added to its environment (how its
 * processes are found when it is stopped).  It is complete when it has
 * been reaped and its pipes are at EOF; a grandchild that keeps a pipe
 * open may delay that by at most the drain time (JOB_DRAIN_MS) after the
 * exit.  Loop thread only.
 */
#ifndef EXECD_JOB_H
#define EXECD_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define JOB_DRAIN_MS	1000
#define JOB_STDIN_MAX	(1 << 20)	/* stdin bytes queued at most */

struct loop;
struct job;
struct limits;

struct job_opts {
	const char	*cmd;		/* run by the shell, unless argv */
	char *const	*argv;		/* not NULL: run without a shell, the
					   program found by spawn_lookup()
					   in envp's PATH */
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
	int		 stdin_pipe;	/* stdin: job_stdin_*, not /dev/null */
	const struct limits *limits;	/* NULL: none (spawn.h) */
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
/*
 * SIGTERM now and SIGKILL after the grace period to everything the job
 * started, inside its group or not (ptree.h says how it is found).
 */
int	job_stop(struct job *);
bool	job_running(const struct job *);	/* not yet reaped */
/*
 * Stdin of a job started with stdin_pipe.  job_stdin_write() queues n
 * bytes, written as the job reads them (never blocking the loop): 0,
 * -ENOTTY without a pipe, -EPIPE once stdin was closed (by
 * job_stdin_close(), or the job closed its end, or it is complete),
 * -EFBIG when n alone is over JOB_STDIN_MAX, -ENOBUFS when the queue would
 * pass it (nothing is queued).  job_stdin_close() closes stdin once the
 * queue is written: 0, -ENOTTY, or -EPIPE if it was closed already.
 */
int	job_stdin_write(struct job *, const void *p, size_t n);
int	job_stdin_close(struct job *);
size_t	job_stdin_queued(const struct job *);
pid_t	job_pid(const struct job *);
/* Once done: the limit that ended it ("process limit of 64 reached"),
 * or "" (cgroup_why). */
const char *job_why(const struct job *);
/* NULL ok.  A job still running is killed (its whole tree, SIGKILL). */
void	job_free(struct job *);

#endif
