/*
 * pty.c -- terminal sessions (see pty.h): the shell process, its
 * terminal or pipes, the replay ring and the registry.  Clients and
 * WebSockets are term.c's (the one watcher), HTTP is route_pty.c's;
 * forking is spawn.c's and reaping child.c's.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "../../util/buf.h"
#include "../../util/id.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "../process/cgroup.h"
#include "../process/child.h"
#include "../process/limits.h"
#include "../process/spawn.h"
#include "pty.h"
#include "ring.h"
#include "runtime.h"

_Static_assert(PTY_ID_LEN == ID_UUID_LEN + 1, "a terminal id is a UUID");

#define READ_CHUNK	(32 * 1024)	/* also the largest output frame */
#define READS_PER_TURN	8		/* then let the loop go round */
#define STDIN_CAP	(1024 * 1024)
#define EXIT_GRACE_MS	500

struct pty {
	struct loop	*loop;
	char		 id[PTY_ID_LEN];
	char		*cwd;
	char		*command;
	struct ring	 ring;
	enum pty_state	 state;
	bool		 pipe;
	pid_t		 pid;		/* > 0 until reaped */
	struct limits	 limits;	/* of every shell it starts */
	char		 why[160];	/* the limit that ended it, or "" */
	int		 code;
	int		 in_fd;		/* the master, or a stdin pipe */
	int		 out_fd;	/* the master, or a stdout pipe */
	int		 err_fd;	/* a stderr pipe, or -1 */
	struct buf	 pending;	/* stdin not yet taken */
	uint64_t	 t_grace;
	pty_output_cb	*out_cb;
	pty_exit_cb	*exit_cb;
	pty_gone_cb	*gone_cb;
	void		*arg;
	struct pty	*next;
};

static struct loop	*L;
static struct pty	*ptys;

static int	spawn_pty(struct pty *, char **, char *, size_t);
static int	spawn_pipes(struct pty *, char **, char *, size_t);
static void	on_io(struct loop *, int, void *, int, void *);
static void	on_reap(pid_t, int, void *);
static void	on_grace(struct loop *, uint64_t, void *);
static void	read_out(struct pty *, int, int);
static void	flush_stdin(struct pty *);
static void	rewatch(struct pty *);
static void	close_fds(struct pty *);
static void	finish(struct pty *);
static int	kill_session(pid_t, int);

/* Remember the loop every session runs on. */
void
pty_init(struct loop *loop)
{
	L = loop;
}

/* Free every session (shutdown). */
void
pty_shutdown(void)
{
	while (ptys != NULL)
		pty_free(ptys, "execd is shutting down");
}

/* Free every session, telling its clients why. */
void
pty_close_all(const char *why)
{
	while (ptys != NULL)
		pty_free(ptys, why);
}

/* A registered session without a shell. */
struct pty *
pty_new(const char *cwd, const char *command, size_t ring_cap)
{
	struct pty *p = xcalloc(1, sizeof(*p));

	p->loop = L;
	id_uuid(p->id);
	p->cwd = cwd != NULL ? xstrdup(cwd) : NULL;
	p->command = command != NULL ? xstrdup(command) : NULL;
	ring_init(&p->ring, ring_cap);
	buf_init(&p->pending);
	p->in_fd = p->out_fd = p->err_fd = -1;
	p->next = ptys;
	ptys = p;
	return p;
}

/* Open a terminal and close it again; see pty.h. */
int
pty_probe(char *err, size_t errlen)
{
	int m, s, rc;

	if (openpty(&m, &s, NULL, NULL, NULL) < 0) {
		rc = errno != 0 ? -errno : -ENXIO;
		snprintf(err, errlen, "openpty: %s", strerror(-rc));
		return rc;
	}
	close(m);
	close(s);
	return 0;
}

/* Out of descriptors, terminals or memory: another try may succeed. */
bool
pty_probe_transient(int rc)
{
	return rc == -EMFILE || rc == -ENFILE || rc == -ENOSPC ||
	    rc == -ENOMEM || rc == -EAGAIN || rc == -EINTR;
}

/* The registered session with this id, or NULL. */
struct pty *
pty_find(const char *id)
{
	for (struct pty *p = ptys; p != NULL; p = p->next)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
}

/* Tell the watcher, kill, close and unregister. */
void
pty_free(struct pty *p, const char *why)
{
	struct pty **pp;

	if (p == NULL)
		return;
	if (p->gone_cb != NULL)
		p->gone_cb(p, why, p->arg);
	for (pp = &ptys; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	if (p->pid > 0) {
		/* The group, then whatever else the shell's session holds. */
		kill(-p->pid, SIGKILL);
		kill_session(p->pid, SIGKILL);
		(void)cgroup_kill(p->pid);	/* what left the session too */
		child_forget(p->pid);
	}
	close_fds(p);
	loop_timer_cancel(p->loop, p->t_grace);
	ring_reset(&p->ring);
	free(p->cwd);
	free(p->command);
	free(p);
}

/* Set the one watcher of output, exit and the end. */
void
pty_watch(struct pty *p, pty_output_cb *out, pty_exit_cb *ex,
    pty_gone_cb *gone, void *arg)
{
	p->out_cb = out;
	p->exit_cb = ex;
	p->gone_cb = gone;
	p->arg = arg;
}

/* The watcher's arg. */
void *
pty_watcher(const struct pty *p)
{
	return p->arg;
}

/* Start the shell once; see pty.h. */
int
pty_start(struct pty *p, bool pipe, char *err, size_t errlen)
{
	char *argv[] = { (char *)(uintptr_t)"/bin/bash",
	    (char *)(uintptr_t)"--norc", (char *)(uintptr_t)"--noprofile",
	    p->command != NULL ? (char *)(uintptr_t)"-c" : NULL,
	    p->command, NULL };
	int rc;

	if (p->state != PTY_NEW) {
		snprintf(err, errlen, "the shell of pty session %s was "
		    "started already", p->id);
		return -EALREADY;
	}
	rc = pipe ? spawn_pipes(p, argv, err, errlen) :
	    spawn_pty(p, argv, err, errlen);
	if (rc < 0)
		return rc;
	p->pipe = pipe;
	p->state = PTY_RUNNING;
	child_add(p->pid, p->pid, on_reap, p);
	rewatch(p);
	log_info("pty=%s pid=%ld %s shell started", p->id, (long)p->pid,
	    pipe ? "pipe" : "pty");
	return 0;
}

/* bash on a new terminal of 80x24, which becomes its controlling tty. */
static int
spawn_pty(struct pty *p, char **argv, char *err, size_t errlen)
{
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	struct spawn_opts so = { .argv = argv, .cwd = p->cwd, .ctty = 1,
	    .limits = &p->limits };
	int m, s, rc;
	char **env;

	if (openpty(&m, &s, NULL, NULL, &ws) < 0) {
		rc = -errno;
		snprintf(err, errlen, "openpty: %s", strerror(-rc));
		return rc;
	}
	if (fcntl(m, F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(s, F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(m, F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		snprintf(err, errlen, "fcntl: %s", strerror(-rc));
		goto fail;
	}
	so.stdin_fd = so.stdout_fd = so.stderr_fd = s;
	so.envp = env = runtime_env_child();
	rc = spawn_start(&so, &p->pid, err, errlen);
	runtime_env_free(env);
	if (rc < 0)
		goto fail;
	close(s);
	p->in_fd = p->out_fd = m;
	return 0;
fail:
	close(m);
	close(s);
	return rc;
}

/* bash on three pipes, in a process group of its own. */
static int
spawn_pipes(struct pty *p, char **argv, char *err, size_t errlen)
{
	struct spawn_opts so = { .argv = argv, .cwd = p->cwd,
	    .limits = &p->limits };
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
	int rc;
	char **env;

	if ((rc = spawn_pipe(in, 1)) < 0 || (rc = spawn_pipe(out, 0)) < 0 ||
	    (rc = spawn_pipe(er, 0)) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(-rc));
		goto fail;
	}
	so.stdin_fd = in[0];
	so.stdout_fd = out[1];
	so.stderr_fd = er[1];
	so.envp = env = runtime_env_child();
	rc = spawn_start(&so, &p->pid, err, errlen);
	runtime_env_free(env);
	if (rc < 0)
		goto fail;
	close(in[0]);
	close(out[1]);
	close(er[1]);
	p->in_fd = in[1];
	p->out_fd = out[0];
	p->err_fd = er[0];
	return 0;
fail:
	spawn_pipe_close(in);
	spawn_pipe_close(out);
	spawn_pipe_close(er);
	return rc;
}

/* Watch the outputs, and stdin only while something waits for it. */
static void
rewatch(struct pty *p)
{
	int want = p->pending.len > 0 ? LOOP_WRITE : 0;

	if (p->pipe) {
		if (p->out_fd >= 0)
			loop_add_fd(p->loop, p->out_fd, LOOP_READ, on_io, p);
		if (p->err_fd >= 0)
			loop_add_fd(p->loop, p->err_fd, LOOP_READ, on_io, p);
		if (p->in_fd >= 0 && want)
			loop_add_fd(p->loop, p->in_fd, want, on_io, p);
		else if (p->in_fd >= 0)
			loop_del(p->loop, p->in_fd, NULL);
	} else if (p->out_fd >= 0) {
		loop_add_fd(p->loop, p->out_fd, LOOP_READ | want, on_io, p);
	}
}

/* The terminal or a pipe is ready: flush stdin, read output. */
static void
on_io(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct pty *p = arg;

	if ((rev & LOOP_WRITE) && fd == p->in_fd)
		flush_stdin(p);
	if ((rev & LOOP_READ) && (fd == p->out_fd || fd == p->err_fd))
		read_out(p, fd, READS_PER_TURN);
}

/*
 * Read up to max chunks from an output into the ring and to the
 * watcher.  End of file (EIO from a master whose terminal has no more
 * users) closes that output; the exit waits for it.
 */
static void
read_out(struct pty *p, int fd, int max)
{
	char buf[READ_CHUNK];
	int stream = fd == p->err_fd ? PTY_STDERR : PTY_STDOUT;
	ssize_t n = 0;

	for (int i = 0; i < max; i++) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
			break;
		ring_write(&p->ring, buf, (size_t)n);
		if (p->out_cb != NULL)
			p->out_cb(p, stream, buf, (size_t)n, p->arg);
	}
	if (n > 0 || (n < 0 && errno == EINTR))
		return;		/* more to come: next turn */
	loop_del(p->loop, fd, NULL);
	close(fd);
	if (fd == p->err_fd) {
		p->err_fd = -1;
	} else {
		if (!p->pipe) {		/* the master was stdin too */
			p->in_fd = -1;
			buf_reset(&p->pending);
		}
		p->out_fd = -1;
	}
	if (p->pid == 0 && p->out_fd < 0 && p->err_fd < 0)
		finish(p);
}

/* Write what waits for stdin, as much as it takes now. */
static void
flush_stdin(struct pty *p)
{
	ssize_t n;

	while (p->pending.len > 0) {
		n = write(p->in_fd, p->pending.p, p->pending.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			log_debug("pty=%s stdin: %s", p->id, strerror(errno));
			buf_reset(&p->pending);
			break;
		}
		buf_drain(&p->pending, (size_t)n);
	}
	rewatch(p);
}

/* Write to stdin, queueing what does not go at once. */
int
pty_write(struct pty *p, const void *buf, size_t len)
{
	ssize_t n = 0;

	if (p->state != PTY_RUNNING || p->in_fd < 0)
		return -EPIPE;
	if (p->pending.len + len > STDIN_CAP)
		return -ENOBUFS;
	if (p->pending.len == 0) {
		do
			n = write(p->in_fd, buf, len);
		while (n < 0 && errno == EINTR);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == EIO ? -EPIPE : -errno;
		if (n < 0)
			n = 0;
	}
	if ((size_t)n < len) {
		buf_add(&p->pending, (const char *)buf + n,
		    len - (size_t)n);
		rewatch(p);
	}
	return 0;
}

/* TIOCSWINSZ on the master; the kernel sends SIGWINCH. */
int
pty_resize(struct pty *p, unsigned cols, unsigned rows)
{
	struct winsize ws = { .ws_row = (unsigned short)rows,
	    .ws_col = (unsigned short)cols };

	if (cols == 0 || rows == 0 || cols > 0xffff || rows > 0xffff)
		return -EINVAL;
	if (p->pipe)
		return 0;
	if (p->state != PTY_RUNNING || p->out_fd < 0)
		return -ESRCH;
	if (ioctl(p->out_fd, TIOCSWINSZ, &ws) < 0)
		return -errno;
	return 0;
}

/* sig to the shell's process group, while it lives. */
int
pty_signal(struct pty *p, int sig)
{
	if (p->pid <= 0)
		return -ESRCH;
	if (kill(-p->pid, sig) < 0)
		return -errno;
	return 0;
}

/*
 * The shell was reaped: take what output is there now; the exit is
 * reported at end of file, or after a grace period if something the
 * shell left behind keeps its terminal or pipes open.
 */
static void
on_reap(pid_t pid, int st, void *arg)
{
	struct pty *p = arg;

	p->pid = 0;
	p->code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (cgroup_why(pid, st, p->why, sizeof(p->why)))
		log_info("pty=%s %s", p->id, p->why);
	log_info("pty=%s pid=%ld shell exited (%s %d)", p->id, (long)pid,
	    WIFEXITED(st) ? "status" : "signal", WIFEXITED(st) ?
	    WEXITSTATUS(st) : WTERMSIG(st));
	if (p->out_fd >= 0)
		read_out(p, p->out_fd, 64);
	if (p->err_fd >= 0)
		read_out(p, p->err_fd, 64);
	if (p->out_fd < 0 && p->err_fd < 0)
		finish(p);
	else if (p->state == PTY_RUNNING && p->t_grace == 0)
		p->t_grace = loop_timer_add(p->loop, EXIT_GRACE_MS, on_grace,
		    p);
}

/* Limits of the shells to come; see pty.h. */
void
pty_set_limits(struct pty *p, const struct limits *l)
{
	p->limits = *l;
}

/* The limit that ended the shell; see pty.h. */
const char *
pty_why(const struct pty *p)
{
	return p->why;
}

/* The output never ended after the reap: report the exit anyway. */
static void
on_grace(struct loop *l, uint64_t id, void *arg)
{
	struct pty *p = arg;

	p->t_grace = 0;
	if (p->state == PTY_RUNNING)
		finish(p);
}

/* Close what is open and report the exit once. */
static void
finish(struct pty *p)
{
	if (p->state != PTY_RUNNING)
		return;
	loop_timer_cancel(p->loop, p->t_grace);
	p->t_grace = 0;
	close_fds(p);
	p->state = PTY_EXITED;
	if (p->exit_cb != NULL)
		p->exit_cb(p, p->code, p->arg);
}

/* Stop watching and close the terminal or pipes; drop waiting stdin. */
static void
close_fds(struct pty *p)
{
	if (p->out_fd >= 0) {
		loop_del(p->loop, p->out_fd, NULL);
		close(p->out_fd);
	}
	if (p->err_fd >= 0) {
		loop_del(p->loop, p->err_fd, NULL);
		close(p->err_fd);
	}
	if (p->in_fd >= 0 && p->in_fd != p->out_fd) {
		loop_del(p->loop, p->in_fd, NULL);
		close(p->in_fd);
	}
	p->in_fd = p->out_fd = p->err_fd = -1;
	buf_reset(&p->pending);
}

/*
 * Signal every process of session sid (an interactive shell puts its
 * jobs in process groups of their own).  Returns how many.
 */
static int
kill_session(pid_t sid, int sig)
{
	char path[300], buf[512], *s;
	DIR *d;
	struct dirent *de;
	FILE *f;
	long pid, session;
	int n = 0;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		s = fgets(buf, sizeof(buf), f);
		fclose(f);
		/* After "pid (comm) ": state ppid pgrp session. */
		if (s == NULL || (s = strrchr(buf, ')')) == NULL ||
		    sscanf(s + 1, " %*c %*d %*d %ld", &session) != 1)
			continue;
		pid = strtol(de->d_name, NULL, 10);
		if (session == (long)sid && kill((pid_t)pid, sig) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* The dashed UUID. */
const char *
pty_id(const struct pty *p)
{
	return p->id;
}

/* New, running or exited. */
enum pty_state
pty_state(const struct pty *p)
{
	return p->state;
}

/* Whether the shell process exists (not yet reaped). */
bool
pty_alive(const struct pty *p)
{
	return p->pid > 0;
}

/* Whether the shell was started on pipes. */
bool
pty_pipe_mode(const struct pty *p)
{
	return p->pipe;
}

/* The exit status, -1 for a signal; meaningful once exited. */
int
pty_exit_code(const struct pty *p)
{
	return p->code;
}

/* The replay ring, for reading. */
const struct ring *
pty_ring(const struct pty *p)
{
	return &p->ring;
}
