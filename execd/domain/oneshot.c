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
#include <sys/socket.h>
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
	char			 name[48];	/* for the log */
	bool			 stay;		/* runs what ctl sends */
	int			 ctl;		/* ... our end; -1: closed */
	bool			 became;	/* a kernel's now */
	unsigned		 depth;		/* in its callbacks */
	bool			 freed;		/* ... freed there */
};

static void	on_pipe(struct loop *, int, void *, int, void *);
static void	on_forked(pid_t, int, const char *, void *);
static void	on_reaped(pid_t, int, void *);
static void	finish(struct oneshot *, const char *);
static void	release(struct oneshot *);

/* Callbacks may free o (oneshot_free): that waits until they are out. */
static void
enter(struct oneshot *o)
{
	o->depth++;
}

/* Out of o's callbacks: o is released if it was freed there. */
static void
leave(struct oneshot *o)
{
	if (--o->depth == 0 && o->freed && o->pid <= 0)
		release(o);	/* else once it is reaped */
}

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

	if (!conf->fork || !conf->no_kernel ||
	    (argv = kp_kernelspec_argv(spec, "-")) == NULL)
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

/*
 * Report the events of one whole line; a staying one's execute_reply
 * and status idle too.
 */
static void
take_line(struct oneshot *o, const char *p, size_t len)
{
	struct kevent_set set;
	json_t *held = oneshot_line(p, len, &set), *c;
	const char *type, *state;

	for (size_t i = 0; i < set.n && !o->freed; i++)
		o->cb->event(&set.ev[i], o->arg);
	type = json_string_value(json_object_get(held, "msg_type"));
	c = json_object_get(held, "content");
	state = json_string_value(json_object_get(c, "execution_state"));
	if (o->stay && !o->freed && type != NULL) {
		if (strcmp(type, "execute_reply") == 0) {
			/* The run ended: no kill for its interrupt. */
			loop_timer_cancel(o->loop, o->t_kill);
			o->t_kill = 0;
			o->cb->reply(c, o->arg);
		} else if (strcmp(type, "status") == 0 && state != NULL &&
		    strcmp(state, "idle") == 0)
			o->cb->idle(o->arg);
	}
	json_decref(held);
}

/* Bytes of the event pipe: whole lines reported, the rest kept. */
static void
take_events(struct oneshot *o, const char *p, size_t n)
{
	char note[160];
	const char *nl;
	size_t k;

	while (n > 0 && !o->freed) {
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
			/* One that became a kernel has said all it will. */
			if (i == P_EV && o->became)
				finish(o, NULL);
			return;
		}
		if (i == P_EV)
			take_events(o, b, (size_t)n);
		else
			o->cb->event(&(struct kevent){ .kind = i == P_ERR ?
			    KEV_STDERR : KEV_STDOUT, .text = b,
			    .len = (size_t)n }, o->arg);
		if (!all || o->freed)
			return;
	}
}

static void
on_pipe(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct oneshot *o = arg;

	enter(o);
	for (int i = 0; i < NPIPE && !o->freed; i++)
		if (o->fd[i] == fd)
			pipe_read(o, i, false);
	leave(o);
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
    const char *cwd, const char *code, const char *name,
    const struct oneshot_cb *cb, void *arg, struct oneshot **out, char *err,
    size_t errlen)
{
	struct oneshot *o;
	struct forksrv_job job = { .loop = loop, .spec = spec, .cwd = cwd,
	    .limits = limits, .code = code, .keep_ids = !conf->as_user,
	    .cb = on_reaped, .done = on_forked };
	char **argv = NULL, **env = NULL;
	json_t *text = code != NULL ? json_string(code) : NULL;
	int p[NPIPE][2], ctl[2] = { -1, -1 }, rc = 0, i;

	for (i = 0; i < NPIPE; i++)
		p[i][0] = p[i][1] = -1;
	if (code != NULL && text == NULL) {
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
	if (code == NULL && socketpair(AF_UNIX, SOCK_SEQPACKET |
	    SOCK_CLOEXEC, 0, ctl) < 0) {
		rc = -errno;
		snprintf(err, errlen, "socketpair: %s", strerror(-rc));
		goto out;
	}
	o = xcalloc(1, sizeof(*o));
	o->stay = code == NULL;
	o->ctl = -1;
	snprintf(o->name, sizeof(o->name), "%s", name);
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
	job.stay = o->stay;
	job.ctl_fd = ctl[1];
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
	o->ctl = ctl[0];
	ctl[0] = -1;
	*out = o;
out:
	for (i = 0; i < NPIPE; i++)
		spawn_pipe_close(p[i]);
	spawn_pipe_close(ctl);
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
	for (int i = 0; i < NPIPE && !o->freed; i++) {
		pipe_read(o, i, true);
		pipe_close(o, i);
	}
	if (o->line.len > 0 && !o->freed)  /* a last line without its \n */
		take_line(o, o->line.p, o->line.len);
	buf_reset(&o->line);
	if (o->t_kill != 0)
		loop_timer_cancel(o->loop, o->t_kill);
	o->t_kill = 0;
	if (!o->freed)
		o->cb->done(why, o->arg);
}

/* The fork server's answer: its pid (registered, given its go), or not. */
static void
on_forked(pid_t pid, int rc, const char *msg, void *arg)
{
	struct oneshot *o = arg;

	o->freq = NULL;
	if (rc < 0) {
		enter(o);
		finish(o, msg);
		leave(o);
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
	const char *whose = o->stay ? "the context's process" :
	    "the run's process";
	char why[256], lim[160];

	o->pid = 0;
	kill(-pid, SIGKILL);	/* what it left in its group */
	if (o->stay)
		log_info("reaped: %s pid=%ld (light, status %d)", o->name,
		    (long)pid, st);
	else
		log_debug("reaped: %s pid=%ld (run once, status %d)",
		    o->name, (long)pid, st);
	if (o->freed) {
		release(o);	/* killed as it was freed: gone now */
		return;
	}
	if (cgroup_why(pid, st, lim, sizeof(lim)))
		snprintf(why, sizeof(why), "%s ended, %s%s", whose, lim,
		    strncmp(lim, "memory", 6) == 0 ? " (out of memory)" : "");
	else if (WIFSIGNALED(st))
		snprintf(why, sizeof(why), "%s was killed by signal %d (%s)",
		    whose, WTERMSIG(st), strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st) && (WEXITSTATUS(st) != 0 || o->stay))
		snprintf(why, sizeof(why), "%s exited with code %d", whose,
		    WEXITSTATUS(st));
	else
		why[0] = '\0';
	enter(o);
	finish(o, why[0] != '\0' ? why : NULL);
	leave(o);
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

/* Send ctl a message of tag and text, with fd. */
static int
tell(struct oneshot *o, char tag, const char *text, int fd)
{
	size_t len = text != NULL ? strlen(text) : 0;
	char *b = xmalloc(len + 1);
	struct iovec iov = { b, len + 1 };
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	b[0] = tag;
	if (len > 0)
		memcpy(b + 1, text, len);
	memset(&u, 0, sizeof(u));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	do
		n = sendmsg(o->ctl, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	free(b);
	return n < 0 ? -errno : 0;
}

/* Run more code in a staying one; see oneshot.h. */
int
oneshot_run(struct oneshot *o, const char *code)
{
	json_t *text = json_string(code);	/* NULL: not UTF-8 */
	char err[128];
	int fd, rc;

	if (text == NULL)
		return -EINVAL;
	json_decref(text);
	if (!o->stay || o->became || o->ctl < 0)
		return -EPIPE;
	if ((fd = forksrv_code_file(code, err, sizeof(err))) < 0)
		return fd;
	rc = tell(o, 'r', NULL, fd);
	close(fd);
	return rc;
}

/* A staying one becomes a kernel; see oneshot.h. */
pid_t
oneshot_become(struct oneshot *o, const char *connfile, int out_fd)
{
	pid_t pid = o->pid;
	int rc;

	if (!o->stay || o->became || pid <= 0 || o->ctl < 0)
		return -ESRCH;
	if ((rc = tell(o, 'k', connfile, out_fd)) < 0)
		return rc;
	child_forget(pid);	/* the kernel's from now on */
	o->pid = 0;
	o->became = true;
	close(o->ctl);
	o->ctl = -1;
	return pid;
}

/* Free o for good, out of its callbacks. */
static void
release(struct oneshot *o)
{
	buf_reset(&o->line);
	free(o);
}

/* Free o; its process, if any, is killed unheard. */
void
oneshot_free(struct oneshot *o)
{
	if (o == NULL || o->freed)
		return;
	if (o->freq != NULL)
		forksrv_cancel(o->freq);
	o->freq = NULL;
	if (o->pid > 0)
		kill(-o->pid, SIGKILL);	/* o goes once it is reaped */
	for (int i = 0; i < NPIPE; i++)
		pipe_close(o, i);
	if (o->ctl >= 0)
		close(o->ctl);
	o->ctl = -1;
	if (o->t_kill != 0)
		loop_timer_cancel(o->loop, o->t_kill);
	o->t_kill = 0;
	o->freed = true;
	if (o->depth == 0 && o->pid <= 0)
		release(o);
}
