/*
 * rk_proc.c -- starting, feeding, reading and ending the REPL process.
 *
 * The kernel is a small program of its own, not execd: this is its one
 * fork, kept as plain as execd's spawn.c is careful (the REPL inherits
 * the sandbox execd put the kernel in).  The REPL stays in the kernel's
 * process group, so that a manager that kills the kernel's group kills
 * what the REPL started too (jshell's second JVM outlives a jshell that
 * is killed alone); a "program" run (rk_proc.group) leads a group of
 * its own instead, which an interrupt or its end signals whole.  Its
 * stdin is non-blocking, so a
 * REPL that stops reading cannot stall the kernel's answers.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../util/must.h"
#include "rk_proc.h"

/* Fork and exec argv with the three pipes. */
int
rk_proc_start(struct rk_proc *p, char *const *argv, char *err,
    size_t errlen)
{
	int pi[2], po[2], pe[2], e;

	if (pipe2(pi, O_CLOEXEC) < 0 || pipe2(po, O_CLOEXEC) < 0 ||
	    pipe2(pe, O_CLOEXEC) < 0) {
		e = errno;
		snprintf(err, errlen, "pipe: %s", strerror(e));
		return -e;
	}
	if ((p->pid = fork()) < 0) {
		e = errno;
		snprintf(err, errlen, "fork: %s", strerror(e));
		return -e;
	}
	if (p->pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (p->group)
			setpgid(0, 0);
		if (getppid() == 1)
			_exit(127);
		if (dup2(pi[0], 0) < 0 || dup2(po[1], 1) < 0 ||
		    dup2(pe[1], 2) < 0)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "execd-repl-kernel: %s: %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	close(pi[0]);
	close(po[1]);
	close(pe[1]);
	p->in = pi[1];
	p->out = po[0];
	p->err = pe[0];
	fcntl(p->in, F_SETFL, O_NONBLOCK);
	if (p->group) {
		setpgid(p->pid, p->pid);	/* before anyone signals it */
		fcntl(p->out, F_SETFL, O_NONBLOCK);
		fcntl(p->err, F_SETFL, O_NONBLOCK);
	}
	return 0;
}

/* Bytes for its stdin. */
void
rk_proc_queue(struct rk_proc *p, const char *s, size_t n)
{
	p->wbuf = must(realloc(p->wbuf, p->wlen + n));
	memcpy(p->wbuf + p->wlen, s, n);
	p->wlen += n;
}

/* A line for its stdin, "{seq}" in it replaced by seq. */
void
rk_proc_queue_line(struct rk_proc *p, const char *line, unsigned long seq)
{
	char num[24];
	const char *q;

	snprintf(num, sizeof(num), "%lu", seq);
	while ((q = strstr(line, "{seq}")) != NULL) {
		rk_proc_queue(p, line, (size_t)(q - line));
		rk_proc_queue(p, num, strlen(num));
		line = q + 5;
	}
	rk_proc_queue(p, line, strlen(line));
	rk_proc_queue(p, "\n", 1);
}

/* Write what its stdin takes now; a closed stdin drops the queue. */
void
rk_proc_write(struct rk_proc *p)
{
	ssize_t w;

	if (p->in < 0 || p->wlen == 0)
		return;
	w = write(p->in, p->wbuf, p->wlen);
	if (w > 0) {
		memmove(p->wbuf, p->wbuf + w, p->wlen - (size_t)w);
		p->wlen -= (size_t)w;
	} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
		close(p->in);
		p->in = -1;
		p->wlen = 0;
	}
}

/* One read from *fd into sc. */
int
rk_proc_read(int *fd, struct rk_scan *sc)
{
	char buf[16384];
	ssize_t n;

	if ((n = read(*fd, buf, sizeof(buf))) > 0) {
		rk_scan_feed(sc, buf, (size_t)n);
		return 1;
	}
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	rk_scan_flush(sc);
	close(*fd);
	*fd = -1;
	return -1;
}

void
rk_proc_kill(struct rk_proc *p, int sig)
{
	if (p->pid > 0)
		kill(p->pid, sig);
}

/*
 * Kill it, reap it, say how it ended, and end what it started: SIGTERM
 * to the kernel's group, which the kernel blocks (it reads it from its
 * signalfd, and is about to exit anyway).
 */
void
rk_proc_reap(struct rk_proc *p, char *why, size_t whylen)
{
	int st;

	rk_proc_kill(p, SIGKILL);
	if (p->pid <= 0 || waitpid(p->pid, &st, 0) < 0)
		snprintf(why, whylen, "ended");
	else if (WIFSIGNALED(st))
		snprintf(why, whylen, "was killed by signal %d",
		    WTERMSIG(st));
	else
		snprintf(why, whylen, "exited with status %d",
		    WEXITSTATUS(st));
	p->pid = -1;
	kill(0, SIGTERM);
}

/* SIGTERM, 200 ms to go, then SIGKILL; close and free everything. */
void
rk_proc_stop(struct rk_proc *p)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	char why[64];

	rk_proc_kill(p, SIGTERM);
	nanosleep(&ts, NULL);
	rk_proc_reap(p, why, sizeof(why));
	if (p->in >= 0)
		close(p->in);
	if (p->out >= 0)
		close(p->out);
	if (p->err >= 0)
		close(p->err);
	p->in = p->out = p->err = -1;
	free(p->wbuf);
	p->wbuf = NULL;
	p->wlen = 0;
}
