/*
 * t_kernel.c -- the kernel manager against real kernels: Debian's
 * ipykernel, and the fake kernel in tests/fakekernel/ (written on pyzmq,
 * independently of kernelproto) for the faults a real kernel will not
 * produce on request.  Each test runs the event loop until what it waits
 * for happens or a generous deadline passes.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#include "../../execd/core/loop.h"
#include "../../execd/domain/kernel.h"
#include "../../execd/domain/metrics.h"
#include "../../execd/process/child.h"
#include "../t.h"

/*
 * The cap on a kernel's awaited requests, small: a send queue of a
 * thousand unanswered messages may fill ZeroMQ's (-EAGAIN) first.
 */
#define REQ_MAX		32

static struct loop		*L;
static struct kernel_conf	 conf;
static struct kp_kernelspec	**specs, **fake_specs;
static char			 rundir[] = "/tmp/t_kernel.XXXXXX";
static char			 fakedir[] = "/tmp/t_fakekernel.XXXXXX";

/* What the callbacks saw. */
static struct seen {
	int		 ready, restarting, dead;
	char		 why[2048];
	int		 done;
	char		 done_why[2048];
	char		 reply_status[32];
	char		 reply_ename[128];
	char		 ename[128];
	char		 out[1 << 16];	/* stream text and results, in order */
	int		 nout;
	size_t		 stream_bytes;	/* of all stream text */
	struct kernel	*k;
} S;

static void
reset_seen(void)
{
	struct kernel *k = S.k;

	memset(&S, 0, sizeof(S));
	S.k = k;
}

static void
ev(struct kernel *k, enum kernel_event e, const char *why, void *arg)
{
	if (e == KERNEL_READY)
		S.ready++;
	else if (e == KERNEL_RESTARTING)
		S.restarting++;
	else {
		S.dead++;
		S.k = NULL;
	}
	if (why != NULL)
		snprintf(S.why, sizeof(S.why), "%s", why);
}

static void
append(const char *s)
{
	size_t n = strlen(S.out);

	snprintf(S.out + n, sizeof(S.out) - n, "%s", s);
}

static void
output(struct kernel *k, const struct kp_msg *m, void *arg)
{
	const char *type = kp_msg_type(m);
	json_t *c = m->content;

	S.nout++;
	if (strcmp(type, "stream") == 0) {
		S.stream_bytes += json_string_length(json_object_get(c, "text"));
		/* Large text is only counted: out has no room for it. */
		if (json_string_length(json_object_get(c, "text")) < 4096)
			append(json_string_value(json_object_get(c, "text")));
	} else if (strcmp(type, "execute_result") == 0 ||
	    strcmp(type, "display_data") == 0) {
		append("[");
		append(type);
		append(":");
		append(json_string_value(json_object_get(json_object_get(c,
		    "data"), "text/plain")) ?: "");
		append("]");
	} else if (strcmp(type, "error") == 0) {
		snprintf(S.ename, sizeof(S.ename), "%s",
		    json_string_value(json_object_get(c, "ename")) ?: "");
	}
}

static void
done(struct kernel *k, const struct kp_msg *reply, const char *why,
    void *arg)
{
	S.done++;
	if (reply != NULL)
		snprintf(S.reply_status, sizeof(S.reply_status), "%s",
		    json_string_value(json_object_get(reply->content,
		    "status")) ?: "?");
	if (reply != NULL)
		snprintf(S.reply_ename, sizeof(S.reply_ename), "%s",
		    json_string_value(json_object_get(reply->content,
		    "ename")) ?: "");
	if (why != NULL)
		snprintf(S.done_why, sizeof(S.done_why), "%s", why);
}

static const struct kernel_exec_cb exec_cb = { output, done };

static void
on_sigchld(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	child_reap();
}

static int *wait_flag;
static int wait_want;

static void
check(struct loop *l, uint64_t id, void *arg)
{
	if (*wait_flag >= wait_want)
		loop_stop(l);
	else
		loop_timer_add(l, 5, check, NULL);
}

static void
deadline(struct loop *l, uint64_t id, void *arg)
{
	loop_stop(l);
}

/* Run the loop until *flag >= want or ms pass; true if reached. */
static int
wait_for(int *flag, int want, unsigned ms)
{
	uint64_t t1, t2;

	wait_flag = flag;
	wait_want = want;
	t1 = loop_timer_add(L, 0, check, NULL);
	t2 = loop_timer_add(L, ms, deadline, NULL);
	loop_run(L);
	loop_timer_cancel(L, t1);
	loop_timer_cancel(L, t2);
	return *flag >= want;
}

/* Run the loop for ms, whatever happens. */
static void
spin(unsigned ms)
{
	int never = 0;

	wait_for(&never, 1, ms);
}

/* Run the loop until s holds needle or ms pass; true if it does. */
static int
wait_text(const char *s, const char *needle, unsigned ms)
{
	for (unsigned t = 0; strstr(s, needle) == NULL && t < ms; t += 50)
		spin(50);
	return strstr(s, needle) != NULL;
}

static const struct kp_kernelspec *
spec_named(struct kp_kernelspec **list, const char *name)
{
	for (size_t i = 0; list != NULL && list[i] != NULL; i++)
		if (strcmp(list[i]->name, name) == 0)
			return list[i];
	return NULL;
}

static struct kernel *
start(const struct kp_kernelspec *spec)
{
	char err[512];
	int rc;

	reset_seen();
	S.k = NULL;
	rc = kernel_start(L, &conf, NULL, spec, NULL, ev, NULL, &S.k, err,
	    sizeof(err));
	if (rc < 0)
		fprintf(stderr, "  kernel_start: %s\n", err);
	T_OK(rc == 0);
	return S.k;
}

static void
run(const char *code)
{
	char id[33];

	S.done = 0;
	S.out[0] = '\0';
	S.reply_status[0] = S.ename[0] = S.done_why[0] = '\0';
	S.reply_ename[0] = '\0';
	T_EQ_INT(kernel_execute(S.k, code, &exec_cb, NULL, id), 0);
	T_OK(wait_for(&S.done, 1, 30000));
}

/* Start code and interrupt it after ms (0: before the loop runs again). */
static void
run_interrupted(const char *code, unsigned ms)
{
	char id[33];

	S.done = 0;
	S.out[0] = '\0';
	S.reply_status[0] = S.ename[0] = S.done_why[0] = '\0';
	S.reply_ename[0] = '\0';
	T_EQ_INT(kernel_execute(S.k, code, &exec_cb, NULL, id), 0);
	if (ms > 0)
		spin(ms);
	T_EQ_INT(kernel_interrupt(S.k), 0);
}

static void
stop(void)
{
	if (S.k != NULL) {
		kernel_shutdown(S.k);
		T_OK(wait_for(&S.dead, 1, 15000));
	}
}

/* ---- real ipykernel ---- */

static void
test_python_state_stream_result_error(void)
{
	const struct kp_kernelspec *py = spec_named(specs, "python3");
	char cf[PATH_MAX];
	struct stat st;

	T_OK(py != NULL);
	if (py == NULL || start(py) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 60000));
	/* A copy: the kernel, and the path it owns, go at stop(). */
	snprintf(cf, sizeof(cf), "%s", kernel_connection_file(S.k));
	T_OK(stat(cf, &st) == 0 && (st.st_mode & 0777) == 0600);
	T_OK(json_is_object(kernel_info(S.k)));
	run("x = 41\nprint('hi')");
	T_EQ_STR(S.reply_status, "ok");
	T_EQ_STR(S.out, "hi\n");
	run("import sys; print('e', file=sys.stderr); x + 1");
	/* ipykernel flushes stderr from a thread: order is not fixed. */
	T_OK(strstr(S.out, "e\n") != NULL);
	T_OK(strstr(S.out, "[execute_result:42]") != NULL);
	run("1/0");
	T_EQ_STR(S.reply_status, "error");
	T_EQ_STR(S.ename, "ZeroDivisionError");
	run("from IPython.display import display; display(7)");
	T_EQ_STR(S.out, "[display_data:7]");
	stop();
	T_OK(stat(cf, &st) < 0);	/* connection file removed */
}

static void
test_python_interrupt_sleep(void)
{
	char id[33];

	if (start(spec_named(specs, "python3")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 60000));
	S.done = 0;
	S.out[0] = '\0';
	T_EQ_INT(kernel_execute(S.k, "import time; print('go', flush=True); "
	    "time.sleep(100)", &exec_cb, NULL, id), 0);
	/* ipykernel takes SIGINT as KeyboardInterrupt once the cell runs. */
	T_OK(wait_text(S.out, "go\n", 30000));
	spin(100);
	T_EQ_INT(S.done, 0);
	T_EQ_INT(kernel_interrupt(S.k), 0);
	T_OK(wait_for(&S.done, 1, 30000));
	T_EQ_STR(S.reply_status, "error");
	/*
	 * The name comes in the iopub error, or, when ipykernel tags that
	 * with another request as parent (see below), in the reply alone,
	 * which is where a run's stream then takes it from (kevent_reply).
	 */
	T_OK(strcmp(S.ename, "KeyboardInterrupt") == 0 ||
	    (S.ename[0] == '\0' &&
	    strcmp(S.reply_ename, "KeyboardInterrupt") == 0));
	/*
	 * The kernel works on.  (Output is not checked here: right after an
	 * interrupt ipykernel 6.17 sometimes tags a print with the previous
	 * request as parent, and such output is not this run's.)
	 */
	run("after = 1");
	T_EQ_STR(S.reply_status, "ok");
	stop();
}

/*
 * Interrupts right after the request, before the kernel has even read it:
 * ipykernel ignores SIGINT until it runs the cell, so an early one is lost
 * unless it is sent again.  The cell must never reach its end, the run
 * must end, and the kernel must run the next cell.  ipykernel swaps in
 * Python's SIGINT handler before it enters the cell; a signal that lands
 * in between is raised in ipykernel's own code, and the kernel dies of
 * it (Python ends by SIGINT on an uncaught KeyboardInterrupt).  Then the
 * run ends saying so and the kernel is started again, which is what
 * execd can do about it; most interrupts must still end in the cell.
 */
static void
test_python_interrupt_right_after_execute(void)
{
	static const unsigned delays[] = { 0, 0, 1, 1, 2, 3 };
	const size_t n = sizeof(delays) / sizeof(delays[0]);
	int ready = 1, died = 0;

	if (start(spec_named(specs, "python3")) == NULL)
		return;
	T_OK(wait_for(&S.ready, ready, 60000));
	for (size_t i = 0; i < n; i++) {
		run_interrupted("import time\nfor i in range(50):\n"
		    "    time.sleep(0.2)\nprint('cell-end')", delays[i]);
		T_OK(wait_for(&S.done, 1, 20000));
		T_OK(strstr(S.out, "cell-end") == NULL);
		if (S.reply_status[0] == '\0' &&
		    strstr(S.done_why, "killed by signal 2") != NULL) {
			died++;
			T_OK(wait_for(&S.ready, ++ready, 60000));
		} else
			T_EQ_STR(S.reply_status, "error");
		run("print('next')");
		T_EQ_STR(S.reply_status, "ok");
	}
	T_OK(died * 2 < (int)n);
	stop();
}

static void
test_python_input_is_an_error_not_a_hang(void)
{
	if (start(spec_named(specs, "python3")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 60000));
	run("input('name? ')");
	T_EQ_STR(S.reply_status, "error");
	T_EQ_STR(S.ename, "StdinNotImplementedError");
	stop();
}

static void
test_python_killed_mid_run_restarts_fresh(void)
{
	char id[33];
	pid_t old;

	if (start(spec_named(specs, "python3")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 60000));
	run("y = 5");
	old = kernel_pid(S.k);
	S.done = 0;
	T_EQ_INT(kernel_execute(S.k, "import time; time.sleep(100)",
	    &exec_cb, NULL, id), 0);
	spin(300);
	kill(old, SIGKILL);
	T_OK(wait_for(&S.done, 1, 10000));
	T_OK(strstr(S.done_why, "killed by signal 9") != NULL);
	T_OK(wait_for(&S.ready, 2, 60000));
	T_EQ_INT(S.restarting, 1);
	T_OK(kernel_pid(S.k) != old && kernel_pid(S.k) > 0);
	run("print(y)");
	T_EQ_STR(S.ename, "NameError");	/* fresh state */
	stop();
}

static void
test_python_restart_and_shutdown_leave_no_process(void)
{
	pid_t old;

	if (start(spec_named(specs, "python3")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 60000));
	old = kernel_pid(S.k);
	T_EQ_INT(kernel_restart(S.k), 0);
	T_OK(wait_for(&S.ready, 2, 60000));
	T_OK(kill(old, 0) < 0 && errno == ESRCH);
	old = kernel_pid(S.k);
	stop();
	T_EQ_INT(S.dead, 1);
	T_OK(kill(old, 0) < 0 && errno == ESRCH);
}

static void
test_python_jupyter_client_attaches(void)
{
	char cmd[2048];
	FILE *p;
	char line[256] = "";

	if (start(spec_named(specs, "python3")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 60000));
	run("shared = 'from-execd'");
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c '"
	    "from jupyter_client import BlockingKernelClient\n"
	    "c = BlockingKernelClient(connection_file=\"%s\")\n"
	    "c.load_connection_file(); c.start_channels()\n"
	    "c.wait_for_ready(timeout=30)\n"
	    "out = []\n"
	    "c.execute_interactive(\"print(shared); attached = 1\","
	    " timeout=30, output_hook=lambda m: out.append("
	    "m[\"content\"].get(\"text\", \"\")))\n"
	    "print(\"\".join(out).strip())\n' 2>&1",
	    kernel_connection_file(S.k));
	p = popen(cmd, "r");
	T_OK(p != NULL);
	if (p != NULL) {
		if (fgets(line, sizeof(line), p) == NULL)
			line[0] = '\0';
		pclose(p);
	}
	T_EQ_STR(line, "from-execd\n");
	/* Their messages came to our iopub too; ours still work. */
	run("print(attached)");
	T_EQ_STR(S.out, "1\n");
	stop();
}

/* ---- the fake kernel: faults ---- */

static const struct kp_kernelspec *
fake(const char *name)
{
	const struct kp_kernelspec *s = spec_named(fake_specs, name);

	T_OK(s != NULL);
	return s;
}

static void
test_fake_exit_at_start_reports_status_and_stderr(void)
{
	if (start(fake("fake-exit3")) == NULL)
		return;
	T_OK(wait_for(&S.dead, 1, 20000));
	T_EQ_INT(S.ready, 0);
	T_OK(strstr(S.why, "exited with code 3") != NULL);
	T_OK(strstr(S.why, "fakekernel: exiting with 3") != NULL);
}

static void
test_fake_never_ready_times_out(void)
{
	unsigned saved = conf.ready_timeout_ms;

	conf.ready_timeout_ms = 1500;
	if (start(fake("fake-noinfo")) != NULL) {
		T_OK(wait_for(&S.dead, 1, 20000));
		T_OK(strstr(S.why, "did not answer kernel_info") != NULL);
		T_EQ_INT(S.restarting, 1);	/* started again, once */
	}
	conf.ready_timeout_ms = saved;
}

static void
test_fake_first_kernel_info_lost(void)
{
	unsigned saved = conf.ready_timeout_ms;

	/* Ready well before the timeout: execd asks again. */
	conf.ready_timeout_ms = 5000;
	if (start(fake("fake-lose1")) != NULL) {
		T_OK(wait_for(&S.ready, 1, 10000));
		T_EQ_INT(S.dead, 0);
		stop();
	}
	conf.ready_timeout_ms = saved;
}

static void
test_fake_deaf_first_start_is_started_again(void)
{
	unsigned saved = conf.ready_timeout_ms;

	/*
	 * The first process never answers (tslab whose receive loop died
	 * while binding); a third of the timeout in, execd starts it again,
	 * once, and the new process answers.
	 */
	conf.ready_timeout_ms = 3000;
	if (start(fake("fake-deaf1")) != NULL) {
		T_OK(wait_for(&S.ready, 1, 10000));
		T_EQ_INT(S.restarting, 1);
		T_OK(strstr(S.why, "starting it again") != NULL);
		T_EQ_INT(S.dead, 0);
		stop();
	}
	conf.ready_timeout_ms = saved;
}

static void
test_fake_dies_mid_execution(void)
{
	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	run("print before\ndie 7");
	T_OK(strstr(S.done_why, "exited with code 7") != NULL);
	T_EQ_STR(S.out, "before\n");
	T_OK(wait_for(&S.ready, 2, 20000));	/* restarted */
	run("kill 11");
	T_OK(strstr(S.done_why, "killed by signal 11") != NULL);
	T_OK(wait_for(&S.ready, 3, 20000));
	stop();
}

static void
test_fake_interrupt_by_message(void)
{
	char id[33];

	if (start(fake("fake-msgint")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	S.done = 0;
	T_EQ_INT(kernel_execute(S.k, "sleep 30", &exec_cb, NULL, id), 0);
	spin(300);
	T_EQ_INT(kernel_interrupt(S.k), 0);	/* interrupt_request */
	T_OK(wait_for(&S.done, 1, 5000));
	T_EQ_STR(S.ename, "KeyboardInterrupt");
	stop();
}

/* An interrupt before the kernel shows the run busy is kept, then sent. */
static void
interrupt_before_busy(const char *spec)
{
	if (start(fake(spec)) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	for (int i = 0; i < 3; i++) {
		run_interrupted("sleep 30\nprint cell-end", 0);
		T_OK(wait_for(&S.done, 1, 5000));
		T_EQ_STR(S.ename, "KeyboardInterrupt");
		T_OK(strstr(S.out, "cell-end") == NULL);
		run("print next");
		T_EQ_STR(S.out, "next\n");
	}
	stop();
}

static void
test_fake_interrupt_before_busy(void)
{
	interrupt_before_busy("fake");
}

static void
test_fake_interrupt_by_message_before_busy(void)
{
	interrupt_before_busy("fake-msgint");
}

/* Interrupted, idle, never a reply: the run ends as interrupted. */
static void
test_fake_idle_without_reply_after_interrupt(void)
{
	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	run_interrupted("nointerrupt 0.5\nnoreply", 100);
	T_OK(wait_for(&S.done, 1, 4000));
	T_EQ_STR(S.reply_status, "error");
	T_EQ_STR(S.reply_ename, "KeyboardInterrupt");
	T_EQ_INT(S.restarting, 0);
	run("print next");
	T_EQ_STR(S.reply_status, "ok");
	T_EQ_STR(S.out, "next\n");
	stop();
}

/* A reply after the run was ended as interrupted is ignored. */
static void
test_fake_late_reply_is_ignored(void)
{
	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	run_interrupted("nointerrupt 0.3\nlatereply 1.5", 100);
	T_OK(wait_for(&S.done, 1, 4000));
	T_EQ_STR(S.reply_ename, "KeyboardInterrupt");
	run("print next");	/* waits for the late reply's cell */
	T_EQ_STR(S.reply_status, "ok");
	T_EQ_STR(S.out, "next\n");
	spin(300);
	T_EQ_INT(S.done, 1);
	stop();
}

/* No interrupt, idle, never a reply: the run still ends, as an error. */
static void
test_fake_idle_without_reply_ends(void)
{
	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	run("noreply");
	T_EQ_STR(S.reply_status, "error");
	T_OK(S.reply_ename[0] != '\0');
	stop();
}

/*
 * The reply came, the idle never does (a PUB socket dropped it): the run
 * ends with a note that output may be missing.
 */
static void
test_fake_reply_without_idle_ends(void)
{
	char id[33];

	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	S.done = 0;
	T_EQ_INT(kernel_execute(S.k, "print a\nnoidle", &exec_cb, NULL, id),
	    0);
	T_OK(wait_for(&S.done, 1, 10000));
	T_EQ_STR(S.reply_status, "ok");
	T_OK(strncmp(S.out, "a\n", 2) == 0);
	T_OK(strstr(S.out, "incomplete") != NULL);
	run("print next");
	T_EQ_STR(S.out, "next\n");
	stop();
}

/* A kernel deaf to interrupts is restarted, and the run says so. */
static void
test_fake_interrupt_ignored_restarts(void)
{
	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	run_interrupted("nointerrupt 60", 300);
	T_OK(wait_for(&S.done, 1, 15000));
	T_OK(strstr(S.done_why, "interrupt") != NULL);
	T_OK(strstr(S.done_why, "restarted") != NULL);
	T_OK(wait_for(&S.ready, 2, 20000));
	run("print next");
	T_EQ_STR(S.out, "next\n");
	stop();
}

static void
test_fake_bad_messages_are_dropped(void)
{
	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	run("badsig\nnodelim\nprint end");
	T_EQ_STR(S.reply_status, "ok");
	T_OK(strstr(S.out, "after-badsig\n") != NULL);
	T_OK(strstr(S.out, "end\n") != NULL);
	stop();
}

static void
test_fake_invalid_utf8_output_is_kept(void)
{
	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	run("badutf8\nprint end");
	T_EQ_STR(S.reply_status, "ok");
	/* Both variants arrive, each bad part as U+FFFD. */
	T_OK(S.nout >= 3);
	T_OK(strstr(S.out, "\xef\xbf\xbd") != NULL);
	T_OK(strstr(S.out, "end\n") != NULL);
	stop();
}

static void
test_fake_output_between_idle_and_reply_is_kept(void)
{
	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	run("idlefirst");
	T_EQ_STR(S.reply_status, "ok");
	T_OK(S.nout >= 1);
	T_OK(S.out[0] != '\0');
	stop();
}

static void
test_fake_flood_in_order(void)
{
	char want[64];

	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	run("flood 2000 10\nprint last");
	T_OK(S.nout >= 2001);
	snprintf(want, sizeof(want), "last\n");
	T_OK(strlen(S.out) >= 5 &&
	    strcmp(S.out + strlen(S.out) - 5, want) == 0);
	stop();
}

/* Over max_frame, a stream message still arrives: in pieces of 1 MiB. */
static void
test_fake_oversized_message_in_pieces(void)
{
	if (start(fake("fake")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	run("big 2000000\nprint small");
	T_EQ_STR(S.out, "small\n");
	T_EQ_INT((long long)S.stream_bytes, 2000000 + 6);
	T_OK(S.nout >= 3);
	stop();
}

static void
test_fake_no_heartbeat_is_dead(void)
{
	if (start(fake("fake-nohb")) == NULL)
		return;
	T_OK(wait_for(&S.ready, 1, 20000));
	T_OK(wait_for(&S.restarting, 1, 15000));
	T_OK(strstr(S.why, "heartbeat") != NULL);
	kernel_shutdown(S.k);
	T_OK(wait_for(&S.dead, 1, 15000));
}

static void
put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

static void
test_fake_oom_kill_is_named(void)
{
	char dir[] = "/tmp/t_kernel_cg.XXXXXX", p[256], cmd[700], id[33];
	struct metrics_src src;
	char proc[128], cg[128];
	pid_t pid;

	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	snprintf(cg, sizeof(cg), "%s/cg", dir);
	snprintf(p, sizeof(p), "%s/proc/self", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s %s/box", p, cg);
	T_EQ_INT(system(cmd), 0);
	snprintf(p, sizeof(p), "%s/proc/self/cgroup", dir);
	put_file(p, "0::/box\n");
	snprintf(p, sizeof(p), "%s/cg/cgroup.controllers", dir);
	put_file(p, "memory\n");
	snprintf(p, sizeof(p), "%s/cg/box/memory.events", dir);
	put_file(p, "oom 0\noom_kill 0\n");
	src = (struct metrics_src){ proc, cg };
	conf.cgroup = &src;
	if (start(fake("fake")) != NULL) {
		T_OK(wait_for(&S.ready, 1, 20000));
		S.done = 0;
		T_EQ_INT(kernel_execute(S.k, "sleep 30", &exec_cb, NULL, id),
		    0);
		spin(200);
		/* What the kernel's OOM killer does, as the cgroup tells. */
		put_file(p, "oom 1\noom_kill 1\n");
		pid = kernel_pid(S.k);
		kill(pid, SIGKILL);
		T_OK(wait_for(&S.done, 1, 10000));
		T_OK(strstr(S.done_why, "out-of-memory") != NULL);
		T_OK(wait_for(&S.ready, 2, 20000));
		stop();
	}
	conf.cgroup = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	T_EQ_INT(system(cmd), 0);
}

static void
write_spec(const char *name, const char *flags, const char *interrupt)
{
	char *dir, *path, cwd[1024];
	FILE *f;

	if (getcwd(cwd, sizeof(cwd)) == NULL)
		abort();
	if (asprintf(&dir, "%s/kernels/%s", fakedir, name) < 0)
		abort();
	mkdir(dir, 0755);
	if (asprintf(&path, "%s/kernel.json", dir) < 0)
		abort();
	f = fopen(path, "w");
	if (f != NULL) {
		fprintf(f, "{\"argv\": [\"/usr/bin/python3\", \"%s/tests/"
		    "fakekernel/fakekernel.py\", %s\"-f\", "
		    "\"{connection_file}\"], \"display_name\": \"Fake\", "
		    "\"language\": \"fake\", \"interrupt_mode\": \"%s\"}",
		    cwd, flags, interrupt);
		fclose(f);
	}
	free(path);
	free(dir);
}

/* ---- consumers: subscribers, requests of their own, stdin ---- */

/* What a subscriber saw. */
struct sub_seen {
	struct kernel_sub	*sub;
	int			 n;		/* iopub messages */
	int			 room;		/* messages it can take; 0: any */
	int			 dropped;
	int			 busy, idle;	/* status messages */
	int			 st_busy, st_idle, st_restarting;
	int			 st_idle_restarted;	/* idle since */
	char			 text[4096];	/* stream text */
	struct sub_seen		*drop;		/* unsubscribe it, then itself */
};

static struct sub_seen	SA, SB, SC;

/* What a consumer's request heard. */
static struct req_seen {
	int	 replies, inputs;
	char	 reply_type[64], status[32], prompt[64], why[256];
} Q;

static int
sub_iopub(struct kernel *k, const struct kp_msg *m, void *arg)
{
	struct sub_seen *s = arg;
	const char *type = kp_msg_type(m), *st, *t;
	size_t n = strlen(s->text);

	if (s->room > 0 && s->n == s->room)
		return -ENOBUFS;	/* a slow client's queue is full */
	s->n++;
	if (strcmp(type, "status") == 0) {
		st = json_string_value(json_object_get(m->content,
		    "execution_state")) ?: "";
		s->busy += strcmp(st, "busy") == 0;
		s->idle += strcmp(st, "idle") == 0;
	} else if (strcmp(type, "stream") == 0 &&
	    (t = json_string_value(json_object_get(m->content, "text"))) !=
	    NULL) {
		snprintf(s->text + n, sizeof(s->text) - n, "%s", t);
	}
	if (s->drop != NULL) {
		/* Mid-delivery: another subscriber, then itself. */
		kernel_unsubscribe(k, s->drop->sub);
		kernel_unsubscribe(k, s->sub);
		s->drop = NULL;
	}
	return 0;
}

static void
sub_state(struct kernel *k, enum kernel_state st, void *arg)
{
	struct sub_seen *s = arg;

	s->st_busy += st == KERNEL_S_BUSY;
	s->st_idle += st == KERNEL_S_IDLE;
	s->st_restarting += st == KERNEL_S_RESTARTING;
	s->st_idle_restarted += st == KERNEL_S_IDLE && s->st_restarting > 0;
}

static void
sub_dropped(struct kernel *k, void *arg)
{
	struct sub_seen *s = arg;

	s->dropped++;
}

static const struct kernel_sub_cb sub_cb = { sub_iopub, sub_state,
    sub_dropped };

static void
req_reply(struct kernel *k, const struct kp_msg *m, const char *why,
    void *arg)
{
	Q.replies++;
	if (m != NULL) {
		snprintf(Q.reply_type, sizeof(Q.reply_type), "%s",
		    kp_msg_type(m));
		snprintf(Q.status, sizeof(Q.status), "%s",
		    json_string_value(json_object_get(m->content, "status")) ?:
		    "");
	}
	if (why != NULL)
		snprintf(Q.why, sizeof(Q.why), "%s", why);
}

/* Answer an input request with "bob", as a notebook's user would. */
static void
req_input(struct kernel *k, const struct kp_msg *m, void *arg)
{
	struct kp_msg *r;

	Q.inputs++;
	snprintf(Q.prompt, sizeof(Q.prompt), "%s", json_string_value(
	    json_object_get(m->content, "prompt")) ?: "");
	r = kp_msg_new("input_reply", "consumer-session", "tester",
	    json_pack("{s:s}", "value", "bob"), m->header);
	T_OK(r != NULL);
	T_EQ_INT(kernel_send(k, KP_STDIN, r, NULL, NULL), 0);
	kp_msg_free(r);
}

static const struct kernel_req_cb req_cb = { req_reply, req_input };

/* Send a consumer's message and wait for its reply. */
static void
request(struct kp_msg *m)
{
	memset(&Q, 0, sizeof(Q));
	T_OK(m != NULL);
	T_EQ_INT(kernel_send(S.k, KP_SHELL, m, &req_cb, NULL), 0);
	kp_msg_free(m);
	T_OK(wait_for(&Q.replies, 1, 30000));
}

static void
test_python_consumers(void)
{
	const struct kp_kernelspec *py = spec_named(specs, "python3");
	int64_t t0;

	if (py == NULL || start(py) == NULL)
		return;
	T_EQ_STR(kernel_state_name(kernel_state(S.k)), "starting");
	T_OK(wait_for(&S.ready, 1, 60000));
	T_EQ_INT(kernel_state(S.k), KERNEL_S_IDLE);
	T_EQ_INT(kernel_consumers(S.k), 0);
	memset(&SA, 0, sizeof(SA));
	memset(&SB, 0, sizeof(SB));
	memset(&SC, 0, sizeof(SC));
	SA.sub = kernel_subscribe(S.k, &sub_cb, &SA);
	SB.sub = kernel_subscribe(S.k, &sub_cb, &SB);
	T_EQ_INT(kernel_consumers(S.k), 2);

	/* 1. An execution of execd's: both subscribers see all of it. */
	t0 = kernel_last_activity(S.k);
	spin(20);
	run("print('seen by all')");
	T_OK(strstr(S.out, "seen by all") != NULL);
	T_OK(strstr(SA.text, "seen by all") != NULL);
	T_EQ_STR(SA.text, SB.text);
	T_OK(SA.busy >= 1 && SA.idle >= 1);
	T_EQ_INT(SA.n, SB.n);
	T_OK(SA.st_busy >= 1 && SA.st_idle >= 1);
	T_OK(kernel_last_activity(S.k) > t0);
	T_EQ_INT(kernel_state(S.k), KERNEL_S_IDLE);

	/* 2. A request of a consumer's own gets its reply. */
	request(kp_msg_kernel_info_request("consumer-session"));
	T_EQ_STR(Q.reply_type, "kernel_info_reply");
	/* Clients choose their msg_ids: a UUID and more, of any length. */
	{
		struct kp_msg *lm = kp_msg_kernel_info_request(
		    "consumer-session");
		const char *long_id = "3f1c2b7a-9d4e-4c21-8a6b-0e5f7d9c1a2b_"
		    "31337_0123456789abcdef";

		T_OK(lm != NULL);
		json_object_set_new(lm->header, "msg_id",
		    json_string(long_id));
		request(lm);
		T_EQ_STR(Q.reply_type, "kernel_info_reply");
	}
	request(kp_msg_complete_request("consumer-session", "pri", 3));
	T_EQ_STR(Q.reply_type, "complete_reply");
	T_EQ_STR(Q.status, "ok");

	/*
	 * 2b. A msg_id that is awaited already (a consumer's request, or an
	 * execution of execd's) or empty is refused, nothing sent: replies
	 * and output are routed by it.
	 */
	{
		struct kp_msg *cm, *dup;
		char id[33];

		cm = kp_msg_new("comm_msg", "consumer-session", "tester",
		    json_pack("{s:s, s:{}}", "comm_id", "no-such-comm",
		    "data"), NULL);
		T_OK(cm != NULL);
		T_EQ_INT(kernel_send(S.k, KP_SHELL, cm, &req_cb, NULL), 0);
		T_EQ_INT(kernel_send(S.k, KP_SHELL, cm, &req_cb, NULL),
		    -EEXIST);
		T_EQ_INT(kernel_send(S.k, KP_SHELL, cm, NULL, NULL), -EEXIST);
		kernel_send_forget(S.k, kp_msg_id(cm));
		S.done = 0;
		S.out[0] = '\0';
		T_EQ_INT(kernel_execute(S.k, "print('mine')", &exec_cb, NULL,
		    id), 0);
		dup = kp_msg_execute_request("consumer-session",
		    "print('forged')", false, false);
		T_OK(dup != NULL);
		json_object_set_new(dup->header, "msg_id", json_string(id));
		T_EQ_INT(kernel_send(S.k, KP_SHELL, dup, &req_cb, NULL),
		    -EEXIST);
		json_object_set_new(dup->header, "msg_id", json_string(""));
		T_EQ_INT(kernel_send(S.k, KP_SHELL, dup, &req_cb, NULL),
		    -EINVAL);
		T_OK(wait_for(&S.done, 1, 30000));
		T_OK(strstr(S.out, "mine") != NULL);
		T_OK(strstr(S.out, "forged") == NULL);
		kp_msg_free(cm);
		kp_msg_free(dup);
	}

	/* 3. Its execution asks for input: the request that allowed it. */
	S.out[0] = '\0';
	request(kp_msg_execute_request("consumer-session",
	    "name = input('who? ')\nprint('hi ' + name)", false, true));
	T_EQ_INT(Q.inputs, 1);
	T_EQ_STR(Q.prompt, "who? ");
	T_EQ_STR(Q.status, "ok");
	/* Its iopub may trail the reply. */
	T_OK(wait_text(SA.text, "hi bob", 30000));
	T_OK(wait_text(SB.text, "hi bob", 30000));
	T_OK(strstr(S.out, "hi bob") == NULL);	/* not execd's run */

	/* 4. A slow subscriber is dropped; the others go on. */
	SC.sub = kernel_subscribe(S.k, &sub_cb, &SC);
	SC.room = 2;
	SA.n = SB.n = 0;
	run("print('after the slow one')");
	T_EQ_INT(SC.n, 2);
	T_EQ_INT(SC.dropped, 1);
	T_EQ_INT(kernel_consumers(S.k), 2);
	T_OK(SA.n > 2 && SA.n == SB.n);
	T_OK(strstr(SA.text, "after the slow one") != NULL);
	T_EQ_INT(SA.dropped + SB.dropped, 0);

	/* 5. A subscriber that ends another's and its own mid-delivery. */
	memset(&SC, 0, sizeof(SC));
	SC.sub = kernel_subscribe(S.k, &sub_cb, &SC);
	SC.drop = &SB;
	T_EQ_INT(kernel_consumers(S.k), 3);
	SB.n = 0;
	run("print(1)");
	T_EQ_INT(kernel_consumers(S.k), 1);
	T_EQ_INT(SC.n, 1);
	T_OK(SA.n > SC.n);

	/* 6. Requests that are never answered are bounded, and forgotten. */
	{
		char first[33] = "";
		struct kp_msg *cm;
		int rc = 0, sent = 0;

		memset(&Q, 0, sizeof(Q));
		for (int i = 0; i <= REQ_MAX; i++) {
			/* A comm_msg to no comm: ipykernel never replies. */
			cm = kp_msg_new("comm_msg", "consumer-session",
			    "tester", json_pack("{s:s, s:{}}", "comm_id",
			    "no-such-comm", "data"), NULL);
			T_OK(cm != NULL);
			rc = kernel_send(S.k, KP_SHELL, cm, &req_cb, NULL);
			if (i == 0)
				snprintf(first, sizeof(first), "%s",
				    kp_msg_id(cm));
			kp_msg_free(cm);
			if (rc != 0)
				break;
			sent++;
		}
		T_EQ_INT(sent, REQ_MAX);
		T_EQ_INT(rc, -ENOBUFS);
		kernel_send_forget(S.k, first);
		request(kp_msg_kernel_info_request("consumer-session"));
		T_EQ_STR(Q.reply_type, "kernel_info_reply");
	}

	/* 7. Death: restarting, then idle again; requests end with why. */
	/*
	 * The unanswered comm_msgs above may still be turning the kernel
	 * busy and idle: only an idle after the restart counts.
	 */
	request(kp_msg_execute_request("consumer-session",
	    "import os\nos.kill(os.getpid(), 9)", false, false));
	T_OK(Q.why[0] != '\0' || strcmp(Q.reply_type, "execute_reply") == 0);
	T_OK(wait_for(&SA.st_restarting, 1, 30000));
	T_OK(wait_for(&SA.st_idle_restarted, 1, 60000));
	T_EQ_INT(kernel_state(S.k), KERNEL_S_IDLE);
	kernel_unsubscribe(S.k, SA.sub);
	T_EQ_INT(kernel_consumers(S.k), 0);
	stop();
}

static void
setup(void)
{
	static struct loop_sig { int fd; } sig;
	char **dirs, *kd;
	char *fdirs[2] = { fakedir, NULL };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sig.fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	L = loop_new();
	loop_add_fd(L, sig.fd, LOOP_READ, on_sigchld, NULL);
	if (mkdtemp(rundir) == NULL || mkdtemp(fakedir) == NULL)
		abort();
	conf = (struct kernel_conf){ .zctx = zmq_ctx_new(),
	    .runtime_dir = rundir, .ready_timeout_ms = 60000,
	    .hb_interval_ms = 500, .hb_misses = 3, .grace_ms = 2000,
	    .max_restarts = 3, .max_frame = 1 << 20, .max_requests = REQ_MAX };
	dirs = kp_kernelspec_dirs();
	kp_kernelspec_find_all(dirs, &specs, NULL);
	kp_kernelspec_dirs_free(dirs);
	if (asprintf(&kd, "%s/kernels", fakedir) < 0)
		abort();
	mkdir(kd, 0755);
	free(kd);
	write_spec("fake", "", "signal");
	write_spec("fake-msgint", "", "message");
	write_spec("fake-exit3", "\"--exit-at-start\", \"3\", ", "signal");
	write_spec("fake-noinfo", "\"--no-kernel-info\", ", "signal");
	write_spec("fake-lose1", "\"--lose-first-info\", ", "signal");
	write_spec("fake-nohb", "\"--no-heartbeat\", ", "signal");
	if (asprintf(&kd, "\"--deaf-first-start\", \"%s/deaf1\", ",
	    fakedir) < 0)
		abort();
	write_spec("fake-deaf1", kd, "signal");
	free(kd);
	kp_kernelspec_find_all(fdirs, &fake_specs, NULL);
}

static const struct t_case cases[] = {
	{ "python state, stream, result, error, display",
	    test_python_state_stream_result_error },
	{ "python interrupt of a sleep", test_python_interrupt_sleep },
	{ "python interrupt right after execute",
	    test_python_interrupt_right_after_execute },
	{ "python input is an error, not a hang",
	    test_python_input_is_an_error_not_a_hang },
	{ "python killed mid-run restarts fresh",
	    test_python_killed_mid_run_restarts_fresh },
	{ "python restart and shutdown leave no process",
	    test_python_restart_and_shutdown_leave_no_process },
	{ "python jupyter_client attaches",
	    test_python_jupyter_client_attaches },
	{ "python consumers: subscribers, requests, stdin, state",
	    test_python_consumers },
	{ "fake exit at start", test_fake_exit_at_start_reports_status_and_stderr },
	{ "fake never ready", test_fake_never_ready_times_out },
	{ "fake loses the first kernel_info", test_fake_first_kernel_info_lost },
	{ "fake deaf at its first start is started again",
	    test_fake_deaf_first_start_is_started_again },
	{ "fake dies mid-execution", test_fake_dies_mid_execution },
	{ "fake interrupt by message", test_fake_interrupt_by_message },
	{ "fake interrupt before busy", test_fake_interrupt_before_busy },
	{ "fake interrupt by message before busy",
	    test_fake_interrupt_by_message_before_busy },
	{ "fake idle without reply after interrupt",
	    test_fake_idle_without_reply_after_interrupt },
	{ "fake late reply ignored", test_fake_late_reply_is_ignored },
	{ "fake idle without reply ends", test_fake_idle_without_reply_ends },
	{ "fake reply without idle ends", test_fake_reply_without_idle_ends },
	{ "fake interrupt ignored restarts",
	    test_fake_interrupt_ignored_restarts },
	{ "fake bad messages dropped", test_fake_bad_messages_are_dropped },
	{ "fake invalid UTF-8 output kept",
	    test_fake_invalid_utf8_output_is_kept },
	{ "fake output between idle and reply",
	    test_fake_output_between_idle_and_reply_is_kept },
	{ "fake flood in order", test_fake_flood_in_order },
	{ "fake oversized message in pieces",
	    test_fake_oversized_message_in_pieces },
	{ "fake no heartbeat", test_fake_no_heartbeat_is_dead },
	{ "fake OOM kill is named", test_fake_oom_kill_is_named },
};

int
main(void)
{
	char cmd[256];
	int rc;

	setup();
	rc = T_RUN(cases);
	kp_kernelspec_list_free(specs);
	kp_kernelspec_list_free(fake_specs);
	loop_free(L);
	zmq_ctx_term(conf.zctx);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", rundir, fakedir);
	if (system(cmd) != 0)
		rc = 1;
	return rc;
}
