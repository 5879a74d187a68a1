/*
 * t_run.c -- the code run (run.c) with no HTTP: its events, the cut of
 * its output, its timeout, interrupt and end, read as a client reads
 * them or not read at all until the run is over.  The contexts are real:
 * a bash context's shell, and Debian's ipykernel for a kernel's results,
 * its timeout (an interrupt reported as TimeoutError) and its death.
 */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <jansson.h>
#include <zmq.h>

#include "../../execd/core/loop.h"
#include "../../execd/domain/context.h"
#include "../../execd/domain/run.h"
#include "../../execd/process/child.h"
#include "../t.h"

#define MAX_EV	256

static struct loop		*L;
static struct kernel_conf	 kconf;
static char			 dir[] = "/tmp/t_run.XXXXXX";

/* What a reader took from a run. */
struct seen {
	char	 type[MAX_EV][24];
	uint64_t seq[MAX_EV];
	int	 n;
	char	 out[1 << 15];	/* stdout text, in order */
	char	 err[1 << 15];	/* stderr text, in order */
	size_t	 nout, nerr;
	char	 ename[64], evalue[256];
	char	 result[256];	/* the text/plain of the last result */
	char	 init[40];	/* the init event's text */
	int	 status;	/* RUN_END or RUN_OVERFLOW once over */
	int	 notified;
	bool	 reading;	/* take events as they come */
};

static struct seen	 S;
static struct run	*R;
static size_t		 replay_bytes;	/* run_opts.max_replay of start() */

static void
add(char *to, size_t *n, size_t cap, const char *p, size_t len)
{
	if (*n + len >= cap)
		len = cap - 1 - *n;
	memcpy(to + *n, p, len);
	*n += len;
	to[*n] = '\0';
}

/* Take every event there is now. */
static void
drain(void)
{
	struct sse_event ev;
	const json_t *t;
	int rc;

	while ((rc = run_next(R, &ev)) == RUN_EVENT) {
		if (S.n < MAX_EV) {
			S.seq[S.n] = ev.seq;
			snprintf(S.type[S.n++], sizeof(S.type[0]), "%s",
			    ev.type);
		}
		if (strcmp(ev.type, "stdout") == 0)
			add(S.out, &S.nout, sizeof(S.out), ev.text,
			    ev.text_len);
		else if (strcmp(ev.type, "stderr") == 0)
			add(S.err, &S.nerr, sizeof(S.err), ev.text,
			    ev.text_len ? ev.text_len : strlen(ev.text));
		else if (strcmp(ev.type, "init") == 0)
			snprintf(S.init, sizeof(S.init), "%s", ev.text);
		else if (strcmp(ev.type, "error") == 0) {
			snprintf(S.ename, sizeof(S.ename), "%s",
			    json_string_value(json_object_get(ev.error,
			    "ename")) ?: "");
			snprintf(S.evalue, sizeof(S.evalue), "%s",
			    json_string_value(json_object_get(ev.error,
			    "evalue")) ?: "");
		} else if (strcmp(ev.type, "result") == 0) {
			t = json_object_get(ev.results, "text");
			snprintf(S.result, sizeof(S.result), "%s",
			    json_string_value(t) ?: "");
		}
	}
	if (rc == RUN_END || rc == RUN_OVERFLOW)
		S.status = rc;
}

static void
on_notify(void *arg)
{
	S.notified++;
	if (S.reading)
		drain();
}

static void
on_sigchld(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	child_reap();
}

static bool	(*until_fn)(void);

static void
check(struct loop *l, uint64_t id, void *arg)
{
	if (until_fn())
		loop_stop(l);
	else
		loop_timer_add(l, 5, check, NULL);
}

static void
deadline(struct loop *l, uint64_t id, void *arg)
{
	loop_stop(l);
}

/* Run the loop until fn() holds or ms pass; whether it holds. */
static bool
wait_until(bool (*fn)(void), unsigned ms)
{
	uint64_t t1, t2;

	until_fn = fn;
	t1 = loop_timer_add(L, 0, check, NULL);
	t2 = loop_timer_add(L, ms, deadline, NULL);
	loop_run(L);
	loop_timer_cancel(L, t1);
	loop_timer_cancel(L, t2);
	return fn();
}

static bool
over(void)
{
	return S.status != 0;
}

static bool
never(void)
{
	return false;
}

/* The notify callback fired since the last reset (a run has ended). */
static bool
notified(void)
{
	return S.notified > 0;
}

/* A ready context of language, or NULL (reported). */
static struct context *
ctx_new(const char *language)
{
	struct context *c = NULL;
	char err[256];

	if (context_create(language, NULL, false, NULL, &c, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "  context_create %s: %s\n", language, err);
		T_OK(!"no context");
		return NULL;
	}
	for (int i = 0; i < 1200 && !context_ready(c); i++)
		wait_until(never, 50);
	T_OK(context_ready(c));
	return c;
}

/* Start code in c with max_output; read as it comes if reading. */
static void
start(struct context *c, const char *code, long long timeout_ms,
    size_t max_output, bool reading)
{
	struct run_opts o = { .code = code, .timeout_ms = timeout_ms,
	    .max_output = max_output, .max_queue = 1 << 20,
	    .max_replay = replay_bytes };

	memset(&S, 0, sizeof(S));
	S.reading = reading;
	R = run_new(c, &o, on_notify, NULL);
	if (reading)
		drain();
}

/* Run code to its end, reading as it comes; the run is freed. */
static void
run_all(struct context *c, const char *code, long long timeout_ms,
    size_t max_output)
{
	start(c, code, timeout_ms, max_output, true);
	T_OK(wait_until(over, 30000));
	run_free(R);
	R = NULL;
}

static bool
has(const char *type)
{
	for (int i = 0; i < S.n; i++)
		if (strcmp(S.type[i], type) == 0)
			return true;
	return false;
}

static int
idx(const char *type)
{
	for (int i = 0; i < S.n; i++)
		if (strcmp(S.type[i], type) == 0)
			return i;
	return -1;
}

static bool
going(void)
{
	return strstr(S.out, "go\n") != NULL;
}

/* Output and completion: init first, then text, complete last. */
static void
test_bash_output_and_completion(void)
{
	struct context *c = ctx_new("bash");

	if (c == NULL)
		return;
	T_OK(context_kernelspec(c) == NULL);	/* a shell, no kernel */
	run_all(c, "echo hi; echo oops >&2", 0, 1 << 20);
	T_EQ_INT(S.status, RUN_END);
	T_EQ_STR(S.type[0], "init");
	T_EQ_STR(S.init, context_id(c));
	T_EQ_STR(S.out, "hi\n");
	T_EQ_STR(S.err, "oops\n");
	T_OK(!has("error"));
	T_EQ_STR(S.type[S.n - 1], "execution_complete");
	context_delete(c);
}

/* A failing shell run: status "error", the error, then complete. */
static void
test_bash_failure_is_an_error(void)
{
	struct context *c = ctx_new("bash");

	if (c == NULL)
		return;
	run_all(c, "false", 0, 1 << 20);
	T_EQ_STR(S.ename, "CommandExecError");
	T_EQ_STR(S.evalue, "1");
	T_EQ_INT(idx("status") + 1, idx("error"));
	T_EQ_STR(S.type[S.n - 1], "execution_complete");
	context_delete(c);
}

/*
 * 10000 bytes past a max_output of 1000: the head (500) as it came, the
 * marker, the tail (500), whether read as it comes or only at the end.
 */
static void
cut(bool reading)
{
	struct context *c = ctx_new("bash");
	char tail[501];

	if (c == NULL)
		return;
	start(c, "for i in $(seq 0 9); do printf \"%01000d\" $i; done", 0,
	    1000, reading);
	T_OK(wait_until(notified, 30000));
	if (!reading) {
		/*
		 * Unread until it is quiet for half a second (over, on any
		 * machine but a stalled one): run_next still gives all that
		 * the cut keeps.
		 */
		for (int i = 0, last = -1; i < 60 && S.notified != last;
		    i++) {
			last = S.notified;
			wait_until(never, 500);
		}
		for (int i = 0; i < 1000 && !over(); i++) {
			drain();
			if (!over())
				wait_until(never, 20);
		}
	} else {
		T_OK(wait_until(over, 30000));
	}
	T_EQ_INT(S.status, RUN_END);
	T_EQ_INT(S.nout, 1000);
	snprintf(tail, sizeof(tail), "%0500d", 0);
	T_OK(strncmp(S.out, tail, 500) == 0);	/* the head: of block 0 */
	snprintf(tail, sizeof(tail), "%0500d", 9);
	T_EQ_STR(S.out + 500, tail);
	T_OK(strstr(S.err, "[execd: output limit reached, 9000 bytes "
	    "dropped]") != NULL);
	T_EQ_STR(S.type[S.n - 1], "execution_complete");
	run_free(R);
	R = NULL;
	context_delete(c);
}

static void
test_bash_cut_read_as_it_comes(void)
{
	cut(true);
}

static void
test_bash_cut_read_at_the_end(void)
{
	cut(false);
}

/* Descriptors of this process open on files in dir (spool files). */
static int
fds_in(const char *d)
{
	char link[300], to[512];
	struct dirent *de;
	DIR *fds = opendir("/proc/self/fd");
	ssize_t n;
	int count = 0;

	if (fds == NULL)
		return -1;
	while ((de = readdir(fds)) != NULL) {
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		if ((n = readlink(link, to, sizeof(to) - 1)) <= 0)
			continue;
		to[n] = '\0';
		if (strncmp(to, d, strlen(d)) == 0 && to[strlen(d)] == '/')
			count++;
	}
	closedir(fds);
	return count;
}

/*
 * 6 MB of numbered lines past a max_output of 4 MiB, not read until the
 * run is over: what the cut keeps waits in a spool file of spool_dir
 * (when there is one, not in memory), and all of it arrives: 2 MiB of
 * head from "1\n", the marker, 2 MiB of tail ending in the last line.
 */
static void
cut_spooled(const char *spool_dir)
{
	struct context *c = ctx_new("bash");
	const size_t half = 2 << 20;
	const size_t total = 6888896;	/* seq 1 1000000 */
	char *out = malloc(2 * half + 1), want[32];
	size_t nout = 0, head = 0;
	struct sse_event ev;
	size_t used0, used = 0;
	int rc, spooled = 0;

	if (c == NULL || out == NULL)
		return;
	run_init(spool_dir);
	used0 = mallinfo2().uordblks;
	start(c, "seq 1 1000000", 0, 2 * half, false);
	/* Unread until it is quiet for half a second (it is over). */
	for (int i = 0, last = -1; i < 60 && S.notified != last; i++) {
		last = S.notified;
		wait_until(never, 500);
		if (mallinfo2().uordblks > used0 &&
		    mallinfo2().uordblks - used0 > used)
			used = mallinfo2().uordblks - used0;
		if (spool_dir != NULL && fds_in(spool_dir) > spooled)
			spooled = fds_in(spool_dir);
	}
	if (spool_dir != NULL) {
		T_EQ_INT(spooled, 1);
		/* Not the 4 MiB kept: those wait on disk. */
		if (used0 > 0)
			T_OK(used < (1 << 20));
	}
	while ((rc = run_next(R, &ev)) == RUN_EVENT) {
		if (strcmp(ev.type, "stdout") == 0) {
			T_OK(nout + ev.text_len <= 2 * half);
			if (nout + ev.text_len > 2 * half)
				break;
			memcpy(out + nout, ev.text, ev.text_len);
			nout += ev.text_len;
		} else if (strcmp(ev.type, "stderr") == 0) {
			head = nout;
			snprintf(want, sizeof(want), "%zu bytes dropped",
			    total - 2 * half);
			T_OK(memmem(ev.text, ev.text_len, want,
			    strlen(want)) != NULL);
		}
	}
	T_EQ_INT(rc, RUN_END);
	T_EQ_INT(head, half);
	T_EQ_INT(nout, 2 * half);
	out[nout] = '\0';
	T_OK(strncmp(out, "1\n2\n3\n", 6) == 0);
	T_OK(nout > 8 && strcmp(out + nout - 8, "1000000\n") == 0);
	run_free(R);
	R = NULL;
	if (spool_dir != NULL)
		T_EQ_INT(fds_in(spool_dir), 0);
	run_init(NULL);
	free(out);
	context_delete(c);
}

static void
test_bash_cut_spooled_while_unread(void)
{
	cut_spooled(dir);
}

/* With no place to spool (or one that fails), text stays in memory. */
static void
test_bash_cut_unspooled(void)
{
	cut_spooled(NULL);
}

/* A shell's timeout: TimeoutError, then complete. */
static void
test_bash_timeout(void)
{
	struct context *c = ctx_new("bash");

	if (c == NULL)
		return;
	run_all(c, "sleep 30", 300, 1 << 20);
	T_EQ_STR(S.ename, "TimeoutError");
	T_EQ_STR(S.type[S.n - 1], "execution_complete");
	context_delete(c);
}

/* A run freed while it runs is heard no more; the next run is clean. */
static void
test_bash_free_while_running(void)
{
	struct context *c = ctx_new("bash");

	if (c == NULL)
		return;
	start(c, "sleep 0.3; echo late", 0, 1 << 20, true);
	run_free(R);
	R = NULL;
	run_all(c, "sleep 0.5; echo next", 0, 1 << 20);
	T_EQ_STR(S.out, "next\n");
	context_delete(c);
}

/* A kernel's result, count first; then its timeout and an interrupt. */
/*
 * Events are numbered 1, 2, ... as taken; the kept ones are taken again
 * after any number the reader saw, with the same numbers; a number never
 * given, or one whose successors are no longer kept, is refused.
 */
static void
test_bash_replay(void)
{
	struct context *c = ctx_new("bash");
	struct seen first;

	if (c == NULL)
		return;
	replay_bytes = 1 << 20;
	start(c, "echo one; echo two >&2; false", 0, 1 << 20, true);
	T_OK(wait_until(over, 30000));
	first = S;
	T_OK(first.n >= 6);	/* init, 2 texts, status, error, complete */
	for (int i = 0; i < first.n; i++)
		T_EQ_INT((long long)first.seq[i], i + 1);
	T_EQ_INT(run_replay(R, (uint64_t)first.n + 1), -EINVAL);

	memset(&S, 0, sizeof(S));
	T_EQ_INT(run_replay(R, 0), 0);
	drain();
	T_EQ_INT(S.status, RUN_END);
	T_EQ_INT(S.n, first.n);
	for (int i = 0; i < first.n; i++) {
		T_EQ_STR(S.type[i], first.type[i]);
		T_EQ_INT((long long)S.seq[i], (long long)first.seq[i]);
	}
	T_EQ_STR(S.out, "one\n");
	T_EQ_STR(S.err, "two\n");

	memset(&S, 0, sizeof(S));
	T_EQ_INT(run_replay(R, 2), 0);
	drain();
	T_EQ_INT(S.n, first.n - 2);
	T_EQ_INT((long long)S.seq[0], 3);
	T_EQ_STR(S.type[S.n - 1], "execution_complete");
	run_free(R);

	/* A bound of a few events: only the last ones come again. */
	replay_bytes = 200;
	start(c, "echo one; echo two >&2; false", 0, 1 << 20, true);
	T_OK(wait_until(over, 30000));
	first = S;
	T_EQ_INT(run_replay(R, 0), -ERANGE);
	memset(&S, 0, sizeof(S));
	T_EQ_INT(run_replay(R, (uint64_t)first.n - 1), 0);
	drain();
	T_EQ_INT(S.n, 1);
	T_EQ_STR(S.type[0], "execution_complete");
	T_EQ_INT((long long)S.seq[0], first.n);
	run_free(R);
	R = NULL;
	replay_bytes = 0;
	context_delete(c);
}

static void
test_python_result_timeout_interrupt(void)
{
	struct context *c = ctx_new("python");

	if (c == NULL)
		return;
	/* Its kernelspec, among those installed: Jupyter's kernel name. */
	T_OK(context_kernelspec(c) != NULL);
	T_OK(context_kernelspec(c) != NULL &&
	    strcmp(context_kernelspec(c)->language, "python") == 0);
	{
		const struct kp_kernelspec *const *all = context_specs();
		bool listed = false;

		for (size_t i = 0; all[i] != NULL; i++)
			listed |= all[i] == context_kernelspec(c);
		T_OK(listed);
	}
	run_all(c, "6 * 7", 0, 1 << 20);
	T_EQ_STR(S.result, "42");
	T_OK(idx("execution_count") >= 0 &&
	    idx("execution_count") < idx("result"));
	T_EQ_STR(S.type[S.n - 1], "execution_complete");

	/* The timeout's interrupt is reported as TimeoutError, not more. */
	run_all(c, "import time; time.sleep(30)", 1500, 1 << 20);
	T_EQ_STR(S.ename, "TimeoutError");
	T_OK(strstr(S.evalue, "1500 ms") != NULL);
	T_EQ_STR(S.type[S.n - 1], "execution_complete");

	/*
	 * An interrupt asked of the run, once the cell runs (it says so):
	 * ipykernel takes SIGINT as KeyboardInterrupt only then, however
	 * slow the machine.
	 */
	start(c, "import time; print('go', flush=True); time.sleep(30)", 0,
	    1 << 20, true);
	T_OK(wait_until(going, 30000));
	wait_until(never, 100);
	T_EQ_INT(run_interrupt(R), 0);
	T_OK(wait_until(over, 20000));
	T_EQ_STR(S.ename, "KeyboardInterrupt");
	T_EQ_STR(S.type[S.n - 1], "execution_complete");
	T_EQ_INT(run_interrupt(R), -ESRCH);
	run_free(R);
	R = NULL;
	context_delete(c);
}

/* Results far faster than nobody reads them: the run overflows. */
static void
test_python_overflow(void)
{
	struct context *c = ctx_new("python");
	struct run_opts o = { .code = "from IPython.display import display\n"
	    "for i in range(300): display('x' * 100)",
	    .max_output = 1000, .max_queue = 4000 };

	if (c == NULL)
		return;
	memset(&S, 0, sizeof(S));
	R = run_new(c, &o, on_notify, NULL);
	/* Far more results than the bound holds, then a first read. */
	for (int i = 0; i < 600 && S.notified < 150; i++)
		wait_until(never, 50);
	drain();
	T_EQ_INT(S.status, RUN_OVERFLOW);
	T_EQ_INT(S.n, 0);	/* what was queued went with it */
	run_free(R);
	R = NULL;
	context_delete(c);
}

/* A kernel that dies mid-run: KernelError, and no completion. */
static void
test_python_death(void)
{
	struct context *c = ctx_new("python");

	if (c == NULL)
		return;
	run_all(c, "import os; os.kill(os.getpid(), 9)", 0, 1 << 20);
	T_EQ_INT(S.status, RUN_END);
	T_EQ_STR(S.ename, "KernelError");
	T_OK(!has("execution_complete"));
	context_delete(c);
}

static void
setup(void)
{
	static int sigfd;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	L = loop_new();
	loop_add_fd(L, sigfd, LOOP_READ, on_sigchld, NULL);
	if (mkdtemp(dir) == NULL)
		abort();
	kconf = (struct kernel_conf){ .zctx = zmq_ctx_new(),
	    .runtime_dir = dir, .ready_timeout_ms = 60000,
	    .hb_interval_ms = 500, .hb_misses = 3, .grace_ms = 2000,
	    .max_restarts = 3, .max_frame = 1 << 20 };
	context_init(L, &kconf);
	context_set_shell_dir(dir);
}

static const struct t_case cases[] = {
	{ "bash output and completion", test_bash_output_and_completion },
	{ "bash failure is an error", test_bash_failure_is_an_error },
	{ "bash cut, read as it comes", test_bash_cut_read_as_it_comes },
	{ "bash cut, read at the end", test_bash_cut_read_at_the_end },
	{ "bash cut spooled while unread",
	    test_bash_cut_spooled_while_unread },
	{ "bash cut with no spool", test_bash_cut_unspooled },
	{ "bash timeout", test_bash_timeout },
	{ "bash run freed while running", test_bash_free_while_running },
	{ "bash events replayed after a number", test_bash_replay },
	{ "python result, timeout, interrupt",
	    test_python_result_timeout_interrupt },
	{ "python overflow of an unread run", test_python_overflow },
	{ "python death ends the run", test_python_death },
};

int
main(void)
{
	char cmd[128];
	int rc;

	setup();
	rc = T_RUN(cases);
	context_delete_all();
	for (int i = 0; i < 100; i++)
		wait_until(never, 20);
	context_shutdown();
	loop_free(L);
	zmq_ctx_term(kconf.zctx);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		rc = 1;
	return rc;
}
