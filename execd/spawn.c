/*
 * spawn.c -- fork, prepare, exec (tmux's job_run, libuv's uv_spawn).
 *
 * Signals are blocked around fork() so that no handler of ours runs in the
 * child; the child resets every disposition and its mask before exec.  The
 * child reports a failed step as {step, errno} on a CLOEXEC pipe and
 * _exit(127)s; EOF on that pipe means the exec worked.  Nothing here
 * waits for children: child.c reaps.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "spawn.h"

extern char **environ;

enum step { S_DEVNULL, S_DUP, S_SETSID, S_CTTY, S_IDS, S_CHDIR, S_EXEC };

static const char *const step_names[] = {
	[S_DEVNULL] = "open /dev/null", [S_DUP] = "dup2",
	[S_SETSID] = "setsid", [S_CTTY] = "set the controlling terminal",
	[S_IDS] = "set user and groups",
	[S_CHDIR] = "chdir", [S_EXEC] = "exec",
};

struct report {
	int	step;
	int	err;
};

static void	child(const struct spawn_opts *, pid_t, int)
		    __attribute__((noreturn));
static void	fail(int, enum step) __attribute__((noreturn));

static void
fail(int fd, enum step s)
{
	struct report r = { s, errno };

	if (write(fd, &r, sizeof(r)) < 0)
		_exit(126);
	_exit(127);
}

/* In the child: set up and exec, or report and exit. */
static void
child(const struct spawn_opts *o, pid_t parent, int errfd)
{
	int fds[3] = { o->stdin_fd, o->stdout_fd, o->stderr_fd }, null;
	int fd3 = -1;
	sigset_t none;

	/* 0. Keep the error pipe clear of the fds about to be set up. */
	if (errfd < 10 && (errfd = fcntl(errfd, F_DUPFD_CLOEXEC, 10)) < 0)
		_exit(127);
	/* 1. Signals: defaults, nothing blocked, die with execd. */
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0)
		fail(errfd, S_SETSID);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);	/* execd died between fork and prctl */
	/* 2. Standard fds; everything else is close-on-exec or closed. */
	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		fail(errfd, S_DEVNULL);
	if (o->has_fd3 && (fd3 = fcntl(o->fd3, F_DUPFD_CLOEXEC, 10)) < 0)
		fail(errfd, S_DUP);
	for (int i = 0; i < 3; i++) {
		if (fds[i] < 0)
			fds[i] = null;
		/* Move fds out of 0..2 first so no dup2 clobbers another. */
		if (fds[i] < 3 && (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC,
		    3)) < 0)
			fail(errfd, S_DUP);
	}
	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], i) < 0)
			fail(errfd, S_DUP);
	if (fd3 >= 0 && dup2(fd3, 3) < 0)	/* dup2 clears CLOEXEC */
		fail(errfd, S_DUP);
	/* A new session leader takes a terminal as its own (forkpty). */
	if (o->ctty && ioctl(0, TIOCSCTTY, 0) < 0)
		fail(errfd, S_CTTY);
	/* 3. Identity: groups first, while we may still change them. */
	if (o->set_ids && (setgroups(o->ngroups, o->groups) < 0 ||
	    setgid(o->gid) < 0 || setuid(o->uid) < 0))
		fail(errfd, S_IDS);
	/* 4. Working directory, then exec with a PATH search. */
	if (o->cwd != NULL && chdir(o->cwd) < 0)
		fail(errfd, S_CHDIR);
	execvpe(o->argv[0], o->argv, o->envp ? o->envp : environ);
	fail(errfd, S_EXEC);
}

/* Fork and exec; see spawn.h. */
int
spawn_start(const struct spawn_opts *o, pid_t *pid, char *err, size_t errlen)
{
	sigset_t all, old;
	struct report r;
	int p[2], e;
	pid_t c, self = getpid();
	ssize_t n;

	if (o->argv == NULL || o->argv[0] == NULL)
		return -EINVAL;
	if (pipe2(p, O_CLOEXEC) < 0) {
		e = errno;
		snprintf(err, errlen, "pipe: %s", strerror(e));
		return -e;
	}
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	c = fork();
	if (c == 0) {
		close(p[0]);
		child(o, self, p[1]);
	}
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(p[1]);
	if (c < 0) {
		close(p[0]);
		snprintf(err, errlen, "fork: %s", strerror(e));
		return -e;
	}
	do
		n = read(p[0], &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == (ssize_t)sizeof(r)) {
		/* The child is gone (127); child.c reaps it silently. */
		snprintf(err, errlen, "%s %s: %s", step_names[r.step],
		    r.step == S_CHDIR ? o->cwd : r.step == S_IDS ||
		    r.step == S_CTTY ? "" :
		    o->argv[0], strerror(r.err));
		return -r.err;
	}
	*pid = c;
	return 0;
}
