/*
 * oneshot.c -- a run once, forked from a fork server (oneshot.h).
 *
 * Its three pipes are read on the loop as they fill; its end is heard
 * from the reaper, which comes after the process has written everything
 * it will: what is left in the pipes is read then, before done.  Events
 * come from the event pipe's lines, each read whole (up to the kernel
 * frame cap: a longer line is dropped with a note, as a kernel's
 * oversized frame is), and from the raw pipes as stream text.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "../../kernelproto/kp_kernelspec.h"
#include "../../kernelproto/kp_msg.h"
#include "../../kernelproto/kp_wire.h"
#include "../../util/buf.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "../process/cgroup.h"
#include "../process/spawn.h"
#include "forksrv.h"
#include "kernel.h"
#include "oneshot.h"

#define READ_MAX	65536	/* read at once from a pipe */

enum { P_OUT, P_ERR, P_EV, NPIPE };

struct oneshot {
	struct loop		*loop;
	const struct oneshot_cb	*cb;
	void			*arg;
	struct forksrv_req	*freq;		/* its fork, until answered */
	pid_t			 pid;		/* 0: not yet, or reaped */
	int			 fd[NPIPE];	/* ours; -1: closed */
	struct buf		 line;		/* the event line so far */
	size_t			 max_line;
	size_t			 skipping;	/* bytes of a line too long */
	bool			 int_pending;	/* SIGINT once it is forked */
	unsigned		 kill_ms;
	uint64_t		 t_kill;
};

static void	on_pipe(struct loop *, int, void *, int, void *);
static void	on_forked(pid_t, int, const char *, void *);
static void	on_reaped(pid_t, int, void *);

/*
 * Whether spec's kernels, started as argv, may run code once: forked
 * ipykernels given only their connection file.  Options beyond it may
 * configure the shell, and a run once has only the server's.
 */
static bool
fits(const struct kp_kernelspec *spec, char *const *argv)
{
	return forksrv_fits(spec, argv) && argv[3] != NULL &&
	    strcmp(argv[3], "-f") == 0 && argv[4] != NULL && argv[5] == NULL;
}

/* Whether spec's code can be forked once now; see oneshot.h. */
bool
oneshot_can(const struct kernel_conf *conf, const struct kp_kernelspec *spec)
{
	struct forksrv_job job = { .spec = spec };
	char **argv;
	bool ok;

	if (!conf->fork || (argv = kp_kernelspec_argv(spec, "-")) == NULL)
		return false;
	job.argv = argv;
	ok = fits(spec, argv) && forksrv_can_run(&job);
	for (size_t i = 0; argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
	return ok;
}

/* The events of one line; see oneshot.h.  Returns what they borrow. */
json_t *
oneshot_line(const char *p, size_t len, struct kevent_set *set)
{
	struct kp_msg m = { 0 };
	json_error_t e;
	json_t *o = kp_wire_json_load(p, len, 0, &e), *t, *c;

	set->n = 0;
	t = json_object_get(o, "msg_type");
	c = json_object_get(o, "content");
	if (!json_is_string(t) || !json_is_object(c)) {
		snprintf(set->note, sizeof(set->note), "\n[execd: a message "
		    "of %zu bytes from the run could not be read]\n", len);
		set->ev[set->n++] = (struct kevent){ .kind = KEV_STDERR,
		    .text = set->note, .len = strlen(set->note),
		    .note = true };
		json_decref(o);
		return NULL;
	}
	m.header = json_pack("{s:O}", "msg_type", t);
	m.content = c;
	kevent_iopub(&m, set);
	json_decref(m.header);
	return o;
}

/* Report the events of one whole line. */
static void
take_line(struct oneshot *o, const char *p, size_t len)
{
	struct kevent_set set;
	json_t *held = oneshot_line(p, len, &set);

	for (size_t i = 0; i < set.n; i++)
		o->cb->event(&set.ev[i], o->arg);
	json_decref(held);
}

/* Bytes of the event pipe: whole lines reported, the rest kept. */
static void
take_events(struct oneshot *o, const char *p, size_t n)
{
	char note[160];
	const char *nl;
	size_t k;

	while (n > 0) {
		nl = memchr(p, '\n', n);
		k = nl != NULL ? (size_t)(nl - p) : n;
		if (o->skipping > 0 || o->line.len + k > o->max_line) {
			/* Over the cap: dropped, and said so at its end. */
			o->skipping += o->line.len + k;
			buf_reset(&o->line);
			if (nl != NULL) {
				snprintf(note, sizeof(note), "\n[execd: a "
				    "message of %zu bytes was over the frame "
				    "limit and was dropped]\n", o->skipping);
				o->cb->event(&(struct kevent){
				    .kind = KEV_STDERR, .text = note,
				    .len = strlen(note), .note = true },
				    o->arg);
				o->skipping = 0;
			}
		} else if (nl == NULL) {
			buf_add(&o->line, p, k);
		} else if (o->line.len > 0) {
			buf_add(&o->line, p, k);
			take_line(o, o->line.p, o->line.len);
			buf_reset(&o->line);
		} else {
			take_line(o, p, k);
		}
		if (nl == NULL)
			return;
		p += k + 1;
		n -= k + 1;
	}
}

/* Close pipe i. */
static void
pipe_close(struct oneshot *o, int i)
{
	if (o->fd[i] < 0)
		return;
	loop_del(o->loop, o->fd[i], NULL);
	close(o->fd[i]);
	o->fd[i] = -1;
}

/*
 * Read pipe i: up to READ_MAX bytes when some, everything when all (the
 * process is gone).  Its end closes it.
 */
static void
pipe_read(struct oneshot *o, int i, bool all)
{
	char b[READ_MAX];
	ssize_t n;

	while (o->fd[i] >= 0) {
		n = read(o->fd[i], b, sizeof(b));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			pipe_close(o, i);
			return;
		}
		if (i == P_EV)
			take_events(o, b, (size_t)n);
		else
			o->cb->event(&(struct kevent){ .kind = i == P_ERR ?
			    KEV_STDERR : KEV_STDOUT, .text = b,
			    .len = (size_t)n }, o->arg);
		if (!all)
			return;
	}
}

static void
on_pipe(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct oneshot *o = arg;

	for (int i = 0; i < NPIPE; i++)
		if (o->fd[i] == fd)
			pipe_read(o, i, false);
}

/* Its interrupt went unheeded for kill_ms: its group is killed. */
static void
on_kill(struct loop *l, uint64_t id, void *arg)
{
	struct oneshot *o = arg;

	o->t_kill = 0;
	if (o->pid > 0)
		kill(-o->pid, SIGKILL);
}

/* Run code once; see oneshot.h. */
int
oneshot_start(struct loop *loop, const struct kernel_conf *conf,
    const struct limits *limits, const struct kp_kernelspec *spec,
    const char *cwd, const char *code, const struct oneshot_cb *cb,
    void *arg, struct oneshot **out, char *err, size_t errlen)
{
	struct oneshot *o;
	struct forksrv_job job = { .loop = loop, .spec = spec, .cwd = cwd,
	    .limits = limits, .code = code, .keep_ids = !conf->as_user,
	    .cb = on_reaped, .done = on_forked };
	char **argv = NULL, **env = NULL;
	json_t *text = json_string(code);	/* NULL: not UTF-8 */
	int p[NPIPE][2], rc = 0, i;

	for (i = 0; i < NPIPE; i++)
		p[i][0] = p[i][1] = -1;
	if (text == NULL) {
		snprintf(err, errlen, "the code is not valid UTF-8");
		return -EINVAL;
	}
	json_decref(text);
	if (!conf->fork || (argv = kp_kernelspec_argv(spec, "-")) == NULL ||
	    !fits(spec, argv)) {
		snprintf(err, errlen, "kernel %s cannot run code once",
		    spec->name);
		rc = -ENOTSUP;
		goto out;
	}
	for (i = 0; i < NPIPE; i++) {
		/* Our ends only are non-blocking: its writes must block. */
		if (pipe2(p[i], O_CLOEXEC) < 0 ||
		    fcntl(p[i][0], F_SETFL, O_NONBLOCK) < 0) {
			rc = -errno;
			snprintf(err, errlen, "pipe: %s", strerror(-rc));
			goto out;
		}
	}
	o = xcalloc(1, sizeof(*o));
	o->loop = loop;
	o->cb = cb;
	o->arg = arg;
	o->max_line = conf->max_frame > 0 ? conf->max_frame : BUF_MAX;
	buf_init(&o->line);
	env = kernel_env(spec);
	job.argv = argv;
	job.envp = env;
	job.out_fd = p[P_OUT][1];
	job.err_fd = p[P_ERR][1];
	job.ev_fd = p[P_EV][1];
	job.arg = job.done_arg = o;
	if ((rc = forksrv_start(&job, &o->freq, err, errlen)) < 0) {
		if (rc == -EAGAIN || rc == -ENOTSUP)
			snprintf(err, errlen, "no fork server of %s ready to "
			    "run code once", spec->name);
		free(o);
		goto out;
	}
	for (i = 0; i < NPIPE; i++) {
		o->fd[i] = p[i][0];
		p[i][0] = -1;
		loop_add_fd(loop, o->fd[i], LOOP_READ, on_pipe, o);
	}
	*out = o;
out:
	for (i = 0; i < NPIPE; i++)
		spawn_pipe_close(p[i]);
	for (i = 0; argv != NULL && argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
	for (i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
	return rc;
}

/* Read what is left, then done: the last thing o does. */
static void
finish(struct oneshot *o, const char *why)
{
	for (int i = 0; i < NPIPE; i++) {
		pipe_read(o, i, true);
		pipe_close(o, i);
	}
	if (o->line.len > 0)	/* a last line without its newline */
		take_line(o, o->line.p, o->line.len);
	buf_reset(&o->line);
	if (o->t_kill != 0)
		loop_timer_cancel(o->loop, o->t_kill);
	o->t_kill = 0;
	o->cb->done(why, o->arg);
}

/* The fork server's answer: its pid (registered, given its go), or not. */
static void
on_forked(pid_t pid, int rc, const char *msg, void *arg)
{
	struct oneshot *o = arg;

	o->freq = NULL;
	if (rc < 0) {
		finish(o, msg);
		return;
	}
	o->pid = pid;
	if (o->int_pending)
		oneshot_interrupt(o, o->kill_ms);
}

/* The reaper: the process ended, and how. */
static void
on_reaped(pid_t pid, int st, void *arg)
{
	struct oneshot *o = arg;
	char why[256], lim[160];

	o->pid = 0;
	kill(-pid, SIGKILL);	/* what it left in its group */
	if (cgroup_why(pid, st, lim, sizeof(lim)))
		snprintf(why, sizeof(why), "the run's process ended, %s%s",
		    lim, strncmp(lim, "memory", 6) == 0 ?
		    " (out of memory)" : "");
	else if (WIFSIGNALED(st))
		snprintf(why, sizeof(why), "the run's process was killed by "
		    "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
		snprintf(why, sizeof(why), "the run's process exited with "
		    "code %d", WEXITSTATUS(st));
	else
		why[0] = '\0';
	log_debug("run once pid=%ld ended (status %d)", (long)pid, st);
	finish(o, why[0] != '\0' ? why : NULL);
}

/* SIGINT, and SIGKILL later; see oneshot.h. */
int
oneshot_interrupt(struct oneshot *o, unsigned kill_ms)
{
	if (o->freq != NULL) {
		o->int_pending = true;
		o->kill_ms = kill_ms;
		return 0;
	}
	if (o->pid <= 0)
		return -ESRCH;
	if (kill(-o->pid, SIGINT) < 0)
		return -errno;
	if (kill_ms > 0 && o->t_kill == 0)
		o->t_kill = loop_timer_add(o->loop, kill_ms, on_kill, o);
	return 0;
}

/* Free o; its process, if any, is killed unheard. */
void
oneshot_free(struct oneshot *o)
{
	if (o == NULL)
		return;
	if (o->freq != NULL)
		forksrv_cancel(o->freq);
	if (o->pid > 0) {
		child_forget(o->pid);	/* reaped silently */
		kill(-o->pid, SIGKILL);
	}
	for (int i = 0; i < NPIPE; i++)
		pipe_close(o, i);
	if (o->t_kill != 0)
		loop_timer_cancel(o->loop, o->t_kill);
	buf_reset(&o->line);
	free(o);
}
