/*
 * rk_main.c -- execd-repl-kernel: a Jupyter kernel that drives a REPL.
 *
 *	execd-repl-kernel CONNECTION_FILE RESOURCE_DIR
 *
 * RESOURCE_DIR/kernel.json holds, under metadata.repl, how to start the
 * REPL, what marks the end of a run's output, how a value and an error
 * look and how to interrupt (rk_desc.h, docs/kernels.md).  The REPL runs
 * with pipes for its three streams (rk_proc.h); each run
 * writes the code, then the description's end line, and lasts until the
 * REPL has printed the marker.  The kernel answers the protocol on
 * kernelproto's kernel side (kp_kernel, kp_serve) meanwhile, so heartbeats,
 * kernel_info and interrupts are served while code runs.  If the REPL
 * dies, the kernel publishes an error that says how, writes it to stderr
 * and exits 1, so that its manager ends the run and starts a new one.
 *
 * A "program" description (Go on yaegi) has no REPL: each run writes a
 * file (for Go, the cell after the declarations kept, rk_go.h) and runs
 * argv on it, in a process group of its own; the run ends when that
 * process has ended and its output is read, and an interrupt is SIGINT
 * to its group, then SIGKILL a second later.  One thread; no dependency beyond
 * kernelproto's own (libzmq, jansson, OpenSSL).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "../kernelproto/kp_kernelspec.h"
#include "../kernelproto/kp_serve.h"
#include "../util/must.h"
#include "../util/utf8.h"
#include "rk_desc.h"
#include "rk_go.h"
#include "rk_proc.h"
#include "rk_scan.h"

#define LINE_CAP	(64 << 10)	/* a line, a value */
#define TEXT_FLUSH	(64 << 10)	/* stream text gathered per message */

struct rk {
	struct rk_desc	*d;
	struct kp_kernel *k;
	struct kp_serve	*s;
	struct rk_proc	 p;		/* the REPL */
	struct rk_scan	*so, *se;
	unsigned long	 runs;		/* runs started */
	bool		 seq;		/* the end line prints {seq} */
	bool		 ready;		/* the first end marker came */
	unsigned long	 ends[2];	/* end markers seen, per stream */
	bool		 done[2];	/* the run's marker came, per stream */
	int		 interrupted;	/* the current run was */
	int		 intr_step;	/* steps of the interrupt cycle */
	struct timespec	 intr_at;	/* when the last step went */
	int		 quit;		/* 1: shutdown asked */
	char		*text[2];	/* stdout, stderr gathered */
	size_t		 tlen[2];
	/* A "program" description: each run is a process of its own. */
	char		*dir, *file;	/* where its program is written */
	struct rk_go	 kept, cell;	/* Go: declarations kept, the run's */
	bool		 running;	/* a program runs (r.p) */
	bool		 exited;	/* and has been reaped */
	int		 status;	/* how it ended (waitpid) */
	struct timespec	 exit_at;	/* when it was reaped */
	int		 pidfd;		/* readable when it ends, or -1 */
	bool		 run_error;	/* it printed an error */
	bool		 discard;	/* one that keeps no declarations */
};

static void	die(const char *, ...) __attribute__((format(printf, 1, 2),
		    noreturn));
static void	flush_text(struct rk *);
static void	check_done(struct rk *);

/* Print why to stderr (execd keeps its tail) and exit 1. */
static void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("execd-repl-kernel: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* Bytes for the REPL's stdin. */
static void
queue(struct rk *r, const char *p, size_t n)
{
	rk_proc_queue(&r->p, p, n);
}

/* The end line, with the run's number for {seq}, to the REPL. */
static void
queue_end(struct rk *r)
{
	rk_proc_queue_line(&r->p, r->d->end, r->runs);
}

/* Milliseconds since *t. */
static long
since_ms(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1000 +
	    (now.tv_nsec - t->tv_nsec) / 1000000;
}

/*
 * An interrupt written to the REPL's stdin may come while it still reads
 * the code rather than runs it: jshell then takes it as input and lets
 * the code run.  So while an interrupted run goes on, every 300 ms the
 * interrupt is written again, and every other time the end line too, in
 * case the REPL dropped what it held (with {seq}, a late marker is
 * ignored); twenty steps at most.
 */
static void
intr_step(struct rk *r)
{
	if (!r->seq || r->d->intr_write[0] == '\0' || r->intr_step >= 20 ||
	    since_ms(&r->intr_at) < 300)
		return;
	queue(r, r->d->intr_write, strlen(r->d->intr_write));
	if (r->intr_step++ % 2 == 1)
		queue_end(r);
	clock_gettime(CLOCK_MONOTONIC, &r->intr_at);
}

/* Gathered stream text out as one message per stream. */
static void
flush_text(struct rk *r)
{
	static const char *const names[2] = { "stdout", "stderr" };

	for (int i = 0; i < 2; i++) {
		if (r->tlen[i] > 0 && r->ready)
			kp_serve_stream(r->s, names[i], r->text[i],
			    r->tlen[i]);
		r->tlen[i] = 0;
	}
}

/* An event of the REPL's stdout (arg: the kernel) or stderr. */
static void
on_event(struct rk *r, int stream, const struct rk_ev *ev)
{
	char *v;

	switch (ev->type) {
	case RK_EV_TEXT:
		if (r->tlen[stream] + ev->n > TEXT_FLUSH)
			flush_text(r);
		r->text[stream] = must(realloc(r->text[stream],
		    r->tlen[stream] + ev->n + 1));
		memcpy(r->text[stream] + r->tlen[stream], ev->p, ev->n);
		r->tlen[stream] += ev->n;
		break;
	case RK_EV_RESULT:
		flush_text(r);
		v = rk_scan_scrub(ev->p, ev->n);
		if (r->ready)
			kp_serve_result(r->s, json_pack("{s:s}", "text/plain",
			    v));
		free(v);
		break;
	case RK_EV_ERROR:
		flush_text(r);
		r->run_error = true;
		for (size_t i = 0; i < r->d->nerrors; i++)
			if (ev->ename == r->d->errors[i].ename &&
			    r->d->errors[i].discard)
				r->discard = true;
		if (r->ready)
			kp_serve_error(r->s, ev->ename, ev->evalue,
			    json_deep_copy(ev->traceback));
		break;
	case RK_EV_END:
		flush_text(r);
		r->ends[stream]++;
		if (stream == 0)
			r->ready = true;
		/*
		 * With {seq}, only the run's own marker ends it: a marker
		 * that an interrupt made us ask for again comes late, and
		 * is ignored then.  Without, the markers are counted.
		 */
		if (r->seq ? ev->seq == r->runs : r->ends[stream] > r->runs)
			r->done[stream] = true;
		check_done(r);
		break;
	}
}

static void
on_out(void *arg, const struct rk_ev *ev)
{
	on_event(arg, 0, ev);
}

static void
on_err(void *arg, const struct rk_ev *ev)
{
	on_event(arg, 1, ev);
}

/* End the current run once the REPL has printed its end marker(s). */
static void
check_done(struct rk *r)
{
	/* A stderr that closed will print no marker. */
	if (!kp_serve_busy(r->s) || !r->done[0] ||
	    (r->d->end_stderr && r->p.err >= 0 && !r->done[1]))
		return;
	flush_text(r);
	if (r->interrupted)
		kp_serve_error(r->s, r->d->intr_ename,
		    "the run was interrupted", NULL);
	r->interrupted = 0;
	kp_serve_done(r->s);
}

/* Write the whole of p[0..n) to path: 0, or -errno. */
static int
write_file(const char *path, const char *p, size_t n)
{
	ssize_t w;
	int fd, e;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) < 0)
		return -errno;
	for (; n > 0; p += w, n -= (size_t)w)
		if ((w = write(fd, p, n)) < 0 && errno != EINTR) {
			e = errno;
			close(fd);
			return -e;
		} else if (w < 0) {
			w = 0;
		}
	return close(fd) < 0 ? -errno : 0;
}

/*
 * A run of a "program" description: the program for code written to the
 * file (for Go, the cell after the declarations kept), and argv started
 * on it in a process group of its own, with no stdin.
 */
static int
prog_start(struct rk *r, const char *code)
{
	char err[256], *text;
	size_t len;
	int rc;

	rk_go_clear(&r->cell);
	if (strcmp(r->d->program, "go") == 0) {
		if (rk_go_parse(code, strlen(code), &r->cell) < 0) {
			rk_go_clear(&r->cell);
			kp_serve_error(r->s, r->d->incomplete_ename, "the code "
			    "is incomplete (an unclosed bracket, string or "
			    "comment)", NULL);
			return -EINVAL;
		}
		text = rk_go_program(&r->kept, &r->cell, &len);
	} else {
		len = strlen(code);
		text = must(strdup(code));
	}
	rc = write_file(r->file, text, len);
	free(text);
	if (rc < 0) {
		snprintf(err, sizeof(err), "%s: %s", r->file, strerror(-rc));
		kp_serve_error(r->s, "KernelError", err, NULL);
		return rc;
	}
	r->p = (struct rk_proc){ .group = true, .in = -1, .out = -1,
	    .err = -1 };
	if ((rc = rk_proc_start(&r->p, r->d->argv, err, sizeof(err))) < 0) {
		kp_serve_error(r->s, "KernelError", err, NULL);
		return rc;
	}
	close(r->p.in);			/* it reads an empty stdin */
	r->p.in = -1;
	r->pidfd = (int)syscall(SYS_pidfd_open, r->p.pid, 0);
	r->runs++;
	r->interrupted = 0;
	r->running = true;
	r->exited = false;
	r->run_error = r->discard = false;
	return 0;
}

/*
 * Reap the program once it has ended, and end its group with it (what
 * it left running would hold its pipes).  The run ends when its output
 * is read, or 200 ms after, whatever else holds its pipes.
 */
static void
prog_check(struct rk *r)
{
	char msg[128];
	int st;

	if (!r->running)
		return;
	if (!r->exited && waitpid(r->p.pid, &st, WNOHANG) == r->p.pid) {
		r->exited = true;
		r->status = st;
		kill(-r->p.pid, SIGKILL);
		clock_gettime(CLOCK_MONOTONIC, &r->exit_at);
	}
	if (r->interrupted && !r->exited && since_ms(&r->intr_at) > 1000)
		kill(-r->p.pid, SIGKILL);	/* SIGINT was not enough */
	if (!r->exited || ((r->p.out >= 0 || r->p.err >= 0) &&
	    since_ms(&r->exit_at) < 200))
		return;
	for (int i = 0; i < 2; i++) {
		int *fd = i == 0 ? &r->p.out : &r->p.err;

		if (*fd >= 0) {
			close(*fd);
			*fd = -1;
		}
	}
	rk_scan_flush(r->so);
	rk_scan_flush(r->se);
	flush_text(r);
	if (r->pidfd >= 0)
		close(r->pidfd);
	r->pidfd = -1;
	r->running = false;
	r->p.pid = -1;
	if (r->interrupted) {
		kp_serve_error(r->s, r->d->intr_ename, "the run was "
		    "interrupted", NULL);
	} else if (!r->run_error && (!WIFEXITED(r->status) ||
	    WEXITSTATUS(r->status) != 0)) {
		if (WIFSIGNALED(r->status))
			snprintf(msg, sizeof(msg), "the program was killed by "
			    "signal %d", WTERMSIG(r->status));
		else
			snprintf(msg, sizeof(msg), "the program exited with "
			    "status %d", WEXITSTATUS(r->status));
		kp_serve_error(r->s, "ExitError", msg, NULL);
	}
	/* A cell that compiled keeps its declarations, even if it failed. */
	if (!r->discard)
		rk_go_keep(&r->kept, &r->cell);
	rk_go_clear(&r->cell);
	r->interrupted = 0;
	kp_serve_done(r->s);
}

/* ops->execute: code, then the end line, to the REPL. */
static int
op_execute(void *arg, const char *code, bool silent)
{
	struct rk *r = arg;

	if (r->d->program[0] != '\0')
		return prog_start(r, code);
	if (r->p.in < 0)
		return -EPIPE;
	if (strcmp(rk_desc_is_complete(r->d, code), "incomplete") == 0) {
		/* The end line would be swallowed by the open construct. */
		kp_serve_error(r->s, r->d->incomplete_ename,
		    "the code is incomplete (an unclosed bracket, string "
		    "or comment)", NULL);
		return -EINVAL;
	}
	r->runs++;
	r->interrupted = 0;
	r->done[0] = r->done[1] = false;
	queue(r, code, strlen(code));
	queue(r, "\n", 1);
	queue_end(r);
	return 0;
}

static const char *
op_is_complete(void *arg, const char *code)
{
	const struct rk_desc *d = ((struct rk *)arg)->d;
	struct rk_go g = { 0 };
	int rc;

	if (strcmp(d->program, "go") != 0)
		return rk_desc_is_complete(d, code);
	/* Go: what its own scanner leaves open. */
	rc = rk_go_parse(code, strlen(code), &g);
	rk_go_clear(&g);
	return rc < 0 ? "incomplete" : "complete";
}

/* Interrupt the current run, once per run (repeats would reach the REPL
 * as input once the run has stopped). */
static void
op_interrupt(void *arg)
{
	struct rk *r = arg;

	if (!kp_serve_busy(r->s) || r->interrupted)
		return;
	r->interrupted = 1;
	r->intr_step = 0;
	clock_gettime(CLOCK_MONOTONIC, &r->intr_at);
	if (r->running)
		kill(-r->p.pid, r->d->intr_signal != 0 ? r->d->intr_signal :
		    SIGINT);
	else if (r->d->intr_write[0] != '\0')
		queue(r, r->d->intr_write, strlen(r->d->intr_write));
	else if (r->d->intr_signal != 0)
		rk_proc_kill(&r->p, r->d->intr_signal);
}

static void
op_shutdown(void *arg, bool restart)
{
	((struct rk *)arg)->quit = 1;
}

static const struct kp_serve_ops ops = {
	op_execute, op_is_complete, op_interrupt, op_shutdown,
};

/* The REPL ended: say so in the current run, and go. */
static void
repl_gone(struct rk *r, void *zctx)
{
	char why[128];

	rk_proc_reap(&r->p, why, sizeof(why));
	fprintf(stderr, "execd-repl-kernel: the REPL (%s) %s\n",
	    r->d->argv[0], why);
	/*
	 * No execute_reply: the run ends when the manager sees this process
	 * exit (execd reports the exit with the tail of stderr, which says
	 * why), so a request queued behind it cannot be taken and lost.
	 */
	if (kp_serve_busy(r->s)) {
		char msg[256];

		flush_text(r);
		snprintf(msg, sizeof(msg), "the REPL (%s) %s; its state is "
		    "gone", r->d->argv[0], why);
		kp_serve_error(r->s, "KernelError", msg, NULL);
	}
	/* Let the last messages leave before the sockets close. */
	zmq_poll(NULL, 0, 200);
	exit(1);
}

/* Is argv0 a program on PATH (or a path to one)? */
static bool
on_path(const char *argv0)
{
	char buf[4096];
	const char *path = getenv("PATH"), *e;

	if (strchr(argv0, '/') != NULL)
		return access(argv0, X_OK) == 0;
	for (; path != NULL; path = *e != '\0' ? e + 1 : NULL) {
		e = strchrnul(path, ':');
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)(e - path),
		    e == path ? "." : path, argv0);
		if (access(buf, X_OK) == 0)
			return true;
	}
	return false;
}

/*
 * A "program" description: a private directory for the program file
 * ({file}), and the interpreter checked now, so that a missing one is
 * said at the start.  Ready at once: nothing runs between runs.
 */
static void
prog_setup(struct rk *r)
{
	const char *tmp = getenv("TMPDIR");
	char path[4096];

	snprintf(path, sizeof(path), "%s/execd-repl-XXXXXX",
	    tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(path) == NULL)
		die("mkdtemp %s: %s", path, strerror(errno));
	r->dir = must(strdup(path));
	snprintf(path, sizeof(path), "%s/main%s", r->dir, r->d->extension);
	r->file = must(strdup(path));
	rk_desc_set_file(r->d, r->file);
	if (!on_path(r->d->argv[0]))
		die("%s: not found on PATH", r->d->argv[0]);
	r->ready = true;
}

int
main(int argc, char **argv)
{
	struct kp_kernelspec *spec;
	struct kp_conn conn;
	struct rk r = { .p = { .in = -1, .out = -1, .err = -1 }, .pidfd = -1 };
	char marker[40], id[33], err[256], *text;
	struct signalfd_siginfo si;
	struct timespec t0;
	sigset_t sigs;
	void *zctx;
	int sfd;
	bool prog;
	long ms;
	FILE *f;
	size_t n;

	if (argc != 3)
		die("usage: execd-repl-kernel CONNECTION_FILE RESOURCE_DIR");
	kp_msg_new_id(id);
	snprintf(marker, sizeof(marker), "@%.16s@", id);
	if (rk_desc_load(argv[2], marker, &spec, &r.d, err,
	    sizeof(err)) < 0)
		die("%s", err);
	if ((f = fopen(argv[1], "re")) == NULL)
		die("%s: %s", argv[1], strerror(errno));
	text = must(calloc(1, 65536));
	n = fread(text, 1, 65535, f);
	fclose(f);
	if (kp_connfile_parse(text, n, &conn, err, sizeof(err)) < 0)
		die("%s: %s", argv[1], err);
	free(text);

	/* Lead a group, so that ending the REPL's children (rk_proc_reap)
	 * can never reach whoever started us. */
	if (getpgrp() != getpid() && setpgid(0, 0) < 0)
		die("setpgid: %s", strerror(errno));
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGPIPE);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	if ((sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		die("signalfd: %s", strerror(errno));
	if (r.d->program[0] != '\0') {
		prog_setup(&r);
	} else {
		if (rk_proc_start(&r.p, r.d->argv, err, sizeof(err)) < 0)
			die("%s", err);
		for (size_t i = 0; r.d->init[i] != NULL; i++) {
			queue(&r, r.d->init[i], strlen(r.d->init[i]));
			queue(&r, "\n", 1);
		}
		r.seq = strstr(r.d->end, "{seq}") != NULL;
		queue_end(&r);
	}
	/* A program's errors are on its stderr, a REPL's on its stdout. */
	prog = r.d->program[0] != '\0';
	r.so = rk_scan_new(r.d, prog, LINE_CAP, on_out, &r);
	r.se = rk_scan_new(r.d, !prog, LINE_CAP, on_err, &r);

	zctx = zmq_ctx_new();
	if (kp_kernel_open(zctx, &conn, 64 << 20, &r.k, err, sizeof(err)) < 0)
		die("%s", err);
	r.s = kp_serve_new(r.k, json_pack("{s:s, s:s, s:s, s:{s:s, s:s, "
	    "s:s}, s:s}", "implementation", "execd-repl-kernel",
	    "implementation_version", "1", "banner", spec->display_name,
	    "language_info", "name", r.d->language, "file_extension",
	    r.d->extension, "mimetype", "text/plain", "status", "ok"),
	    &ops, &r);
	kp_serve_status(r.s, "starting");
	clock_gettime(CLOCK_MONOTONIC, &t0);

	while (!r.quit) {
		zmq_pollitem_t it[7] = {
			{ kp_kernel_socket(r.k, KP_CONTROL), 0, ZMQ_POLLIN, 0 },
			{ kp_kernel_socket(r.k, KP_HB), 0, ZMQ_POLLIN, 0 },
			{ NULL, sfd, ZMQ_POLLIN, 0 },
			{ NULL, r.p.out, ZMQ_POLLIN, 0 },
			{ NULL, r.p.err, ZMQ_POLLIN, 0 },
			{ NULL, r.p.in, ZMQ_POLLOUT, 0 },
			{ kp_kernel_socket(r.k, KP_SHELL), 0, ZMQ_POLLIN, 0 },
		};
		int nit = kp_serve_busy(r.s) ? 6 : 7;

		if (r.p.wlen == 0 || r.p.in < 0)
			it[5].fd = -1, it[5].events = 0;
		/* A running program's end: its pidfd (stdin's place). */
		if (r.running && !r.exited && r.pidfd >= 0)
			it[5].fd = r.pidfd, it[5].events = ZMQ_POLLIN;
		if (r.p.err < 0)
			it[4].events = 0;
		if (r.p.out < 0)
			it[3].events = 0;
		ms = r.interrupted ? 100 : 1000;
		if (r.running && (r.exited || r.pidfd < 0))
			ms = 20;
		if (zmq_poll(it, nit, ms) < 0 && errno != EINTR)
			die("zmq_poll: %s", zmq_strerror(errno));
		if (r.interrupted && kp_serve_busy(r.s))
			intr_step(&r);
		if (!r.ready && since_ms(&t0) > r.d->ready_ms) {
			rk_proc_reap(&r.p, err, sizeof(err));
			die("the REPL (%s) did not print its end marker within "
			    "%d s of its start", r.d->argv[0],
			    r.d->ready_ms / 1000);
		}
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGINT)
				op_interrupt(&r);
			else if (si.ssi_signo == SIGTERM)
				r.quit = 1;
		}
		if (!r.running && it[5].revents & (ZMQ_POLLOUT | ZMQ_POLLERR))
			rk_proc_write(&r.p);
		if (r.p.err >= 0 && (it[4].revents & (ZMQ_POLLIN |
		    ZMQ_POLLERR)))
			if (rk_proc_read(&r.p.err, r.se) < 0)
				check_done(&r);
		if (r.p.out >= 0 && it[3].revents & (ZMQ_POLLIN |
		    ZMQ_POLLERR)) {
			/*
			 * A program's pipe does not block: take up to 256 KiB
			 * at once, so that a fast printer's output leaves in
			 * messages of up to TEXT_FLUSH, not one per read.
			 */
			int rc, k = prog ? 16 : 1;

			while ((rc = rk_proc_read(&r.p.out, r.so)) > 0 &&
			    --k > 0)
				;
			if (rc < 0 && !prog)
				repl_gone(&r, zctx);
		}
		prog_check(&r);
		flush_text(&r);
		kp_kernel_hb(r.k);
		kp_serve_handle(r.s, KP_CONTROL);
		if (!kp_serve_busy(r.s))
			kp_serve_handle(r.s, KP_SHELL);
	}
	if (r.running)
		kill(-r.p.pid, SIGKILL);
	if (r.d->program[0] == '\0' || r.running)
		rk_proc_stop(&r.p);
	if (r.file != NULL) {
		unlink(r.file);
		rmdir(r.dir);
	}
	free(r.file);
	free(r.dir);
	rk_go_clear(&r.kept);
	rk_go_clear(&r.cell);
	if (r.pidfd >= 0)
		close(r.pidfd);
	rk_scan_free(r.so);
	rk_scan_free(r.se);
	kp_serve_free(r.s);
	kp_kernel_close(r.k);
	zmq_ctx_term(zctx);
	rk_desc_free(r.d);
	kp_kernelspec_free(spec);
	free(r.text[0]);
	free(r.text[1]);
	return 0;
}
