/*
 * job.c -- one shell command as a process group on the loop.
 *
 * This file starts the process, reads its pipes without blocking, writes
 * its stdin from a bounded queue when it has a pipe there, runs its
 * timers (timeout, the drain after exit) and reports completion; what the
 * output means (lines, events, files) is the caller's business.  Stopping
 * a job (DELETE, timeout, free) stops everything it started, found by
 * ptree.c through the job's session and the mark every job gets in its
 * environment; a job that ends by itself leaves what it started running.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../util/buf.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "cgroup.h"
#include "child.h"
#include "job.h"
#include "ptree.h"
#include "spawn.h"

#define READ_CHUNK	65536

struct job {
	struct loop	*loop;
	pid_t		 pid;
	int		 fd[3];		/* [1] stdout, [2] stderr; -1 closed */
	int		 in_fd;		/* our end of stdin; -1 none, closed */
	bool		 has_stdin;	/* started with a stdin pipe */
	bool		 in_watched;	/* waiting until in_fd takes more */
	bool		 in_closing;	/* close once inq is written */
	struct buf	 inq;		/* stdin bytes not yet written */
	size_t		 inq_off;
	bool		 reaped;
	int		 status;
	bool		 timed_out;
	bool		 done;
	bool		 stopping;	/* ptree_stop() was called */
	char		 why[160];	/* the limit that ended it, or "" */
	unsigned	 grace_ms;
	struct ptree_id	 tree;		/* what to stop */
	uint64_t	 t_timeout, t_drain;
	job_output_cb	*output;
	job_done_cb	*donecb;
	void		*arg;
};

static void	on_pipe(struct loop *, int, void *, int, void *);
static void	on_reaped(pid_t, int, void *);
static void	on_timeout(struct loop *, uint64_t, void *);
static void	on_drain(struct loop *, uint64_t, void *);
static void	close_pipe(struct job *, int);
static void	maybe_done(struct job *);
static void	on_stdin(struct loop *, int, void *, int, void *);
static void	stdin_flush(struct job *);
static void	stdin_shut(struct job *);
static char	**env_marked(char *const *, const char *);

extern char	**environ;

static const char *
shell(void)
{
	return access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

/*
 * envp (NULL: execd's) with any inherited mark dropped and mark added:
 * an array the caller frees, whose strings are borrowed.
 */
static char **
env_marked(char *const *envp, const char *mark)
{
	char *const *e = envp != NULL ? envp : environ;
	size_t n = 0, k = 0, vl = strlen(PTREE_MARK_VAR);
	char **out;

	while (e[n] != NULL)
		n++;
	out = xreallocarray(NULL, n + 2, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		if (strncmp(e[i], PTREE_MARK_VAR, vl) != 0 || e[i][vl] != '=')
			out[k++] = e[i];
	out[k++] = (char *)(uintptr_t)mark;
	out[k] = NULL;
	return out;
}

/* Start the job; see job.h. */
int
job_start(struct loop *loop, const struct job_opts *o, job_output_cb *output,
    job_done_cb *done, void *arg, struct job **out, char *err, size_t errlen)
{
	struct job *j = xcalloc(1, sizeof(*j));
	char *argv[] = { (char *)(uintptr_t)shell(), (char *)(uintptr_t)"-c",
	    (char *)(uintptr_t)o->cmd, NULL };
	struct spawn_opts so = { .argv = argv, .envp = o->envp, .cwd = o->cwd,
	    .stdin_fd = -1, .set_ids = o->set_ids, .uid = o->uid,
	    .gid = o->gid, .groups = o->groups, .ngroups = o->ngroups,
	    .limits = o->limits };
	int p1[2] = { -1, -1 }, p2[2] = { -1, -1 }, p0[2] = { -1, -1 }, rc;
	char **envm, prog[PATH_MAX];

	if (o->argv != NULL) {
		/* As upstream words it (Go's exec.ErrNotFound). */
		if (o->argv[0] == NULL || (rc = spawn_lookup(o->argv[0],
		    o->cwd, o->envp, prog, sizeof(prog))) < 0) {
			snprintf(err, errlen, "exec: \"%s\": executable file "
			    "not found in $PATH", o->argv[0] != NULL ?
			    o->argv[0] : "");
			free(j);
			return -ENOENT;
		}
		so.argv = o->argv;
		so.path = prog;
	}
	j->loop = loop;
	j->fd[0] = j->fd[1] = j->fd[2] = -1;
	j->in_fd = -1;
	buf_init(&j->inq);
	ptree_mark_new(&j->tree);
	envm = env_marked(o->envp, j->tree.mark);
	so.envp = envm;
	if (o->stdin_pipe) {
		/* Our end only is non-blocking, as for the output pipes. */
		if ((rc = spawn_pipe(p0, 1)) < 0) {
			snprintf(err, errlen, "pipe: %s", strerror(-rc));
			goto fail;
		}
		so.stdin_fd = p0[0];
	}
	j->output = output;
	j->donecb = done;
	j->arg = arg;
	j->grace_ms = o->grace_ms;
	if (o->out_fd >= 0) {
		so.stdout_fd = so.stderr_fd = o->out_fd;
	} else {
		/*
		 * Only our ends are non-blocking: a child writing faster
		 * than we read must block, not fail with EAGAIN.
		 */
		if ((rc = spawn_pipe(p1, 0)) < 0 ||
		    (rc = spawn_pipe(p2, 0)) < 0) {
			snprintf(err, errlen, "pipe: %s", strerror(-rc));
			goto fail;
		}
		so.stdout_fd = p1[1];
		so.stderr_fd = p2[1];
	}
	rc = spawn_start(&so, &j->pid, err, errlen);
	free(envm);
	envm = NULL;
	if (rc < 0)
		goto fail;
	ptree_id_set(&j->tree, j->pid);
	if (o->stdin_pipe) {
		close(p0[0]);
		j->in_fd = p0[1];
		j->has_stdin = true;
	}
	if (o->out_fd < 0) {
		close(p1[1]);
		close(p2[1]);
		j->fd[1] = p1[0];
		j->fd[2] = p2[0];
		loop_add_fd(loop, j->fd[1], LOOP_READ, on_pipe, j);
		loop_add_fd(loop, j->fd[2], LOOP_READ, on_pipe, j);
	}
	child_add(j->pid, j->pid, on_reaped, j);
	if (o->timeout_ms > 0)
		j->t_timeout = loop_timer_add(loop, o->timeout_ms, on_timeout,
		    j);
	*out = j;
	return 0;
fail:
	free(envm);
	spawn_pipe_close(p0);
	spawn_pipe_close(p1);
	spawn_pipe_close(p2);
	free(j);
	return rc;
}

/* Read what the pipe has (a bounded amount per call, for fairness). */
static void
on_pipe(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct job *j = arg;
	char buf[READ_CHUNK];
	int which = fd == j->fd[1] ? 1 : 2;
	ssize_t n;

	n = read(fd, buf, sizeof(buf));
	if (n > 0) {
		j->output(j, which, buf, (size_t)n, j->arg);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	close_pipe(j, which);
	maybe_done(j);
}

static void
close_pipe(struct job *j, int which)
{
	if (j->fd[which] < 0)
		return;
	loop_del(j->loop, j->fd[which], NULL);
	close(j->fd[which]);
	j->fd[which] = -1;
}

/* Reaped: done once the pipes are drained, or after the drain time. */
static void
on_reaped(pid_t pid, int st, void *arg)
{
	struct job *j = arg;

	j->reaped = true;
	j->status = st;
	(void)cgroup_why(pid, st, j->why, sizeof(j->why));
	/* Stopped: what it left running goes with it. */
	if (j->stopping)
		(void)cgroup_kill(pid);
	if (j->fd[1] >= 0 || j->fd[2] >= 0)
		j->t_drain = loop_timer_add(j->loop, JOB_DRAIN_MS, on_drain, j);
	maybe_done(j);
}

/*
 * The shell is gone but something it started still holds a pipe: take
 * what is already there and stop waiting.
 */
static void
on_drain(struct loop *l, uint64_t id, void *arg)
{
	struct job *j = arg;
	char buf[READ_CHUNK];
	ssize_t n;

	j->t_drain = 0;
	for (int w = 1; w <= 2; w++) {
		while (j->fd[w] >= 0 && (n = read(j->fd[w], buf,
		    sizeof(buf))) > 0)
			j->output(j, w, buf, (size_t)n, j->arg);
		close_pipe(j, w);
	}
	maybe_done(j);
}

static void
maybe_done(struct job *j)
{
	if (j->done || !j->reaped || j->fd[1] >= 0 || j->fd[2] >= 0)
		return;
	j->done = true;
	stdin_shut(j);
	loop_timer_cancel(j->loop, j->t_timeout);
	loop_timer_cancel(j->loop, j->t_drain);
	j->t_timeout = j->t_drain = 0;
	/* Last: the callback may free the job. */
	j->donecb(j, j->status, j->timed_out, j->arg);
}

static void
on_timeout(struct loop *l, uint64_t id, void *arg)
{
	struct job *j = arg;

	j->t_timeout = 0;
	j->timed_out = true;
	job_stop(j);
}

/*
 * SIGTERM to the whole tree, SIGKILL after the grace period (ptree.c's
 * timer, so it happens even when the job completes and is freed first).
 */
int
job_stop(struct job *j)
{
	if (j->reaped)
		return -ESRCH;
	if (!j->stopping)
		(void)ptree_stop(j->loop, &j->tree, j->grace_ms);
	j->stopping = true;
	return 0;
}

bool
job_running(const struct job *j)
{
	return !j->reaped;
}

pid_t
job_pid(const struct job *j)
{
	return j->pid;
}

/* The limit that ended the job; see job.h. */
const char *
job_why(const struct job *j)
{
	return j->why;
}

/* Forget the job; a running one is killed, and reaped silently. */
void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	if (!j->reaped) {
		(void)ptree_kill(&j->tree);
		(void)cgroup_kill(j->pid);
		child_forget(j->pid);
	}
	close_pipe(j, 1);
	close_pipe(j, 2);
	stdin_shut(j);
	loop_timer_cancel(j->loop, j->t_timeout);
	loop_timer_cancel(j->loop, j->t_drain);
	free(j);
}

/* Queue bytes for stdin and write what the pipe takes now. */
int
job_stdin_write(struct job *j, const void *p, size_t n)
{
	if (!j->has_stdin)
		return -ENOTTY;
	if (j->in_fd < 0 || j->in_closing)
		return -EPIPE;
	if (n > JOB_STDIN_MAX)
		return -EFBIG;
	if (job_stdin_queued(j) + n > JOB_STDIN_MAX)
		return -ENOBUFS;
	buf_add(&j->inq, p, n);
	stdin_flush(j);
	return j->in_fd < 0 ? -EPIPE : 0;
}

/* Close stdin once everything queued is written. */
int
job_stdin_close(struct job *j)
{
	if (!j->has_stdin)
		return -ENOTTY;
	if (j->in_fd < 0 || j->in_closing)
		return -EPIPE;
	j->in_closing = true;
	if (job_stdin_queued(j) == 0)
		stdin_shut(j);
	return 0;
}

/* Bytes queued for stdin and not yet written. */
size_t
job_stdin_queued(const struct job *j)
{
	return j->inq.len - j->inq_off;
}

/* The pipe takes more. */
static void
on_stdin(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	stdin_flush(arg);
}

/*
 * Write the queue until the pipe is full (then wait until it takes more)
 * or empty (then close if asked).  A job that closed its end loses the
 * rest, as a process writing to a closed pipe would.
 */
static void
stdin_flush(struct job *j)
{
	ssize_t w;

	while (j->in_fd >= 0 && job_stdin_queued(j) > 0) {
		w = write(j->in_fd, j->inq.p + j->inq_off, job_stdin_queued(j));
		if (w > 0) {
			j->inq_off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			if (!j->in_watched)
				loop_add_fd(j->loop, j->in_fd, LOOP_WRITE,
				    on_stdin, j);
			j->in_watched = true;
			return;
		}
		stdin_shut(j);		/* EPIPE: nobody reads it any more */
		return;
	}
	if (j->in_fd < 0)
		return;
	buf_reset(&j->inq);
	j->inq_off = 0;
	if (j->in_watched)
		loop_del(j->loop, j->in_fd, NULL);
	j->in_watched = false;
	if (j->in_closing)
		stdin_shut(j);
}

/* Close our end of stdin and drop what was queued. */
static void
stdin_shut(struct job *j)
{
	if (j->in_fd >= 0) {
		if (j->in_watched)
			loop_del(j->loop, j->in_fd, NULL);
		close(j->in_fd);
	}
	j->in_fd = -1;
	j->in_watched = false;
	buf_reset(&j->inq);
	j->inq_off = 0;
}
