/*
 * forksrv.h -- fork servers: new ipykernel processes forked from one
 * that has done its imports, instead of started from nothing.
 *
 * A fork server is a small Python program of execd's (embedded, run as
 * `python3 -c`), started through spawn.c like a kernel (the sandbox's
 * seccomp filter, capabilities and identity), one per kernelspec.  It
 * imports ipykernel and what the spec says to preload, then waits on a
 * socket for requests, with no thread and no ZeroMQ context of its own.
 * Per request it forks the kernel once, as execd's child (clone with
 * CLONE_PARENT), so that execd reaps it and hears its real exit status;
 * where that clone cannot be made, a middle process forks the kernel
 * and exits, and execd (a child subreaper, or PID 1) adopts it.  The
 * kernel makes its own session, takes the pipe execd gave it as stdout
 * and stderr, then waits until execd has registered its pid and moved it
 * into its cgroup; only then does it copy the pages it will write (in one
 * go, not one fault at a time; which pages is learnt from the first
 * kernels' exits), set its rlimits, chdir and start IPKernelApp on the
 * connection file execd wrote, making its sockets, threads and ZeroMQ
 * context after the fork.
 *
 * A server also runs code once (oneshot.h): the process it forks for
 * that reads the code from a memory file execd wrote it to, runs it in a
 * copy of the IPython shell the server built at its start, as a new
 * kernel's first cell, and exits; no kernel, no ZeroMQ.  Its
 * registration, cgroup, go, rlimits and cwd are a kernel's.  One asked
 * to stay runs each code file execd sends it on a socket, in the same
 * shell, until the socket closes, or until execd sends it a connection
 * file: then it starts IPKernelApp on it, in that shell, and is a
 * kernel from then on.
 * execd never waits for a server: its answers are read on the loop.
 * Loop thread only.
 */
#ifndef EXECD_FORKSRV_H
#define EXECD_FORKSRV_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../../kernelproto/kp_kernelspec.h"
#include "../process/child.h"

struct forksrv_req;
struct limits;
struct loop;

/*
 * A fork's outcome: pid > 0 (rc 0), registered as forksrv_start says;
 * or rc < 0 with why in msg, when no kernel was forked for the job (the
 * server failed, died, or left it unanswered; launch it instead), or
 * -ESHUTDOWN from forksrv_shutdown (execd stops: launch nothing).
 */
typedef void	forksrv_done_cb(pid_t pid, int rc, const char *msg, void *arg);

/* One kernel, or one run once, to fork. */
struct forksrv_job {
	struct loop	*loop;		/* where the server is watched */
	const struct kp_kernelspec *spec;
	char *const	*argv;		/* kp_kernelspec_argv()'s */
	char *const	*envp;		/* the kernel's environment */
	const char	*cwd;		/* NULL: execd's */
	const struct limits *limits;	/* NULL: none */
	int		 out_fd;	/* its stdout (and stderr: a kernel) */
	const char	*code;		/* NULL: a kernel; else run this once */
	bool		 stay;		/* or run code as ctl_fd sends it */
	int		 ctl_fd;	/* ... a SOCK_SEQPACKET end */
	int		 err_fd;	/* run once: its stderr */
	int		 ev_fd;		/* ... and its events (oneshot.h) */
	bool		 keep_ids;	/* as spawn_opts.keep_ids */
	child_exit_cb	*cb;		/* its exit, as for child_add */
	void		*arg;
	forksrv_done_cb	*done;		/* the fork's outcome */
	void		*done_arg;
};

/*
 * Whether a kernel of spec, started as argv, can be forked: ipykernel
 * run as a module (`python -m ipykernel_launcher ...`) and not refused
 * by its spec ("metadata": {"execd": {"fork": false}}).
 */
bool	forksrv_fits(const struct kp_kernelspec *spec, char *const *argv);
/*
 * Ask for the kernel of job to be forked.  0 with *req set: asked, and
 * job->done hears the outcome later, from the loop (never from within
 * this call).  With a pid, the kernel leads its own session and process
 * group, is registered with child_add (job->cb hears its exit) and
 * tracked by cgroup.h under job->limits.  job's fds may be closed
 * once this returns (the server has its copy).  -EAGAIN when the spec's
 * server is not ready yet (it is started then: launch this one
 * normally); -ENOTSUP when there can be no server (execd adopts no
 * orphans, or a server of the spec failed to start three times in a
 * row); another -errno, with a message in err, when the request could
 * not be sent (the server is then stopped, and started again at the
 * next call); -ENOTSUP too for code when the server cannot run it
 * (its shell was not built: the spec's config names other classes).
 */
int	forksrv_start(const struct forksrv_job *job, struct forksrv_req **req,
	    char *err, size_t errlen);
/*
 * Whether job's code can be forked now: its server is up, ready, of the
 * current policy, and has a shell to run it in.
 */
bool	forksrv_can_run(const struct forksrv_job *job);
/*
 * A memory file (close-on-exec) holding code, read from its start: its
 * fd, or -errno with why in err.
 */
int	forksrv_code_file(const char *code, char *err, size_t errlen);
/*
 * The outcome of req is no longer wanted (its kernel was shut down
 * before it was forked): job->done is not called, and a kernel forked
 * for it is made to exit before it runs anything.
 */
void	forksrv_cancel(struct forksrv_req *req);
/* Stop every server (execd shuts down); what they owe hears -ESHUTDOWN. */
void	forksrv_shutdown(void);

#endif
