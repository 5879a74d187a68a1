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
 * and exits 1, so that its manager ends the run and starts a new one.  One thread; no dependency beyond
 * kernelproto's own (libzmq, jansson, OpenSSL).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "../kernelproto/kp_kernelspec.h"
#include "../kernelproto/kp_serve.h"
#include "../util/must.h"
#include "../util/utf8.h"
#include "rk_desc.h"
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

/* ops->execute: code, then the end line, to the REPL. */
static int
op_execute(void *arg, const char *code, bool silent)
{
	struct rk *r = arg;

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
	return rk_desc_is_complete(((struct rk *)arg)->d, code);
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
	if (r->d->intr_write[0] != '\0')
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

int
main(int argc, char **argv)
{
	struct kp_kernelspec *spec;
	struct kp_conn conn;
	struct rk r = { .p = { .in = -1, .out = -1, .err = -1 } };
	char marker[40], id[33], err[256], *text;
	struct signalfd_siginfo si;
	struct timespec t0;
	sigset_t sigs;
	void *zctx;
	int sfd;
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
	if (rk_proc_start(&r.p, r.d->argv, err, sizeof(err)) < 0)
		die("%s", err);
	for (size_t i = 0; r.d->init[i] != NULL; i++) {
		queue(&r, r.d->init[i], strlen(r.d->init[i]));
		queue(&r, "\n", 1);
	}
	r.seq = strstr(r.d->end, "{seq}") != NULL;
	queue_end(&r);
	r.so = rk_scan_new(r.d, false, LINE_CAP, on_out, &r);
	r.se = rk_scan_new(r.d, true, LINE_CAP, on_err, &r);

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
		if (r.p.err < 0)
			it[4].events = 0;
		ms = r.interrupted ? 100 : 1000;
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
		if (it[5].revents & (ZMQ_POLLOUT | ZMQ_POLLERR))
			rk_proc_write(&r.p);
		if (r.p.err >= 0 && (it[4].revents & (ZMQ_POLLIN |
		    ZMQ_POLLERR)))
			if (rk_proc_read(&r.p.err, r.se) < 0)
				check_done(&r);
		if (it[3].revents & (ZMQ_POLLIN | ZMQ_POLLERR) &&
		    rk_proc_read(&r.p.out, r.so) < 0)
			repl_gone(&r, zctx);
		flush_text(&r);
		kp_kernel_hb(r.k);
		kp_serve_handle(r.s, KP_CONTROL);
		if (!kp_serve_busy(r.s))
			kp_serve_handle(r.s, KP_SHELL);
	}
	rk_proc_stop(&r.p);
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
