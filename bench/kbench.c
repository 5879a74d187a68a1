/*
 * kbench.c -- drives execd's kernel manager directly, with no HTTP in
 * between, for the kernel rows of bench/run.sh.
 *
 *   kbench start N
 *       N times: kernel_start() of the "python3" kernelspec until READY,
 *       then an orderly shutdown until DEAD.  Prints "median_us min_us
 *       max_us" of start to READY.
 *   kbench exec N PYTHON SCRIPT
 *       Starts one python3 kernel; after 10 warm-ups, N executions of
 *       "1+1", each timed from kernel_execute() to its done callback
 *       (execute_reply and status idle both in).  Then, while the same
 *       kernel keeps running, runs "PYTHON SCRIPT exec CONNECTION_FILE N"
 *       (the jupyter_client baseline), checks with one more "1+1" that
 *       ours still works, and prints "median_us min_us" of ours followed
 *       by the baseline's own output line.
 *
 * Our loop does not run while the baseline runs, so the two never compete
 * for the CPU; the baseline's iopub traffic queues on our SUB socket and
 * is dropped (another client's) when the loop runs again.  Every wait has
 * a deadline, and every process started here is stopped before exit.
 * This is a measuring tool, not part of execd.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "../execd/core/log.h"
#include "../execd/core/loop.h"
#include "../execd/domain/kernel.h"
#include "../execd/process/child.h"
#include "../execd/process/spawn.h"

#define SPEC_NAME	"python3"
#define WARMUPS		10
#define MAX_RUNS	100000
#define READY_MS	60000	/* kernel start to READY */
#define EXEC_MS		30000	/* one execution */
#define STOP_MS		15000	/* orderly shutdown to DEAD */
#define BASELINE_MS	120000	/* the whole baseline script */

static uint64_t	 now_us(void);
static int	 cmp_u64(const void *, const void *);
static uint64_t	 median(uint64_t *, size_t);
static void	 on_event(struct kernel *, enum kernel_event, const char *,
		    void *);
static void	 on_output(struct kernel *, const struct kp_msg *, void *);
static void	 on_done(struct kernel *, const struct kp_msg *,
		    const char *, void *);
static void	 on_sigchld(struct loop *, int, void *, int, void *);
static void	 on_deadline(struct loop *, uint64_t, void *);
static bool	 run_until(const bool *, unsigned);
static int	 start_one(uint64_t *);
static void	 stop_one(void);
static int	 exec_one(uint64_t *);
static int	 run_baseline(char *const *, char *, size_t);
static int	 cmd_start(size_t);
static int	 cmd_exec(size_t, const char *, const char *);
static int	 setup(void);
static void	 cleanup(void);
static long	 parse_runs(const char *);
static void	 usage(void);

static struct loop		*L;
static struct kernel_conf	 conf;
static struct kp_kernelspec	**specs;
static const struct kp_kernelspec *spec;
static char			 rundir[PATH_MAX];
static int			 sigfd = -1;

/* The one kernel, and what its callbacks reported. */
static struct {
	struct kernel	*k;
	bool		 ready, dead, done, done_ok;
	uint64_t	 t_ready, t_done;
	char		 why[1024];
} S;

/* CLOCK_MONOTONIC in microseconds. */
static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* qsort order for uint64_t. */
static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median of n > 0 values; sorts v. */
static uint64_t
median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Kernel state changes: note them and let run_until() return. */
static void
on_event(struct kernel *k, enum kernel_event e, const char *why, void *arg)
{
	if (e == KERNEL_READY) {
		S.t_ready = now_us();
		S.ready = true;
	} else if (e == KERNEL_DEAD) {
		S.dead = true;
		S.k = NULL;	/* freed once we return */
	}
	if (why != NULL)
		snprintf(S.why, sizeof(S.why), "%s", why);
	loop_stop(L);
}

/* The execute_result of "1+1"; nothing to keep. */
static void
on_output(struct kernel *k, const struct kp_msg *m, void *arg)
{
}

/* Reply and idle are both in (or the kernel died): stop the clock. */
static void
on_done(struct kernel *k, const struct kp_msg *reply, const char *why,
    void *arg)
{
	S.t_done = now_us();
	S.done = true;
	S.done_ok = reply != NULL;
	if (reply == NULL)
		snprintf(S.why, sizeof(S.why), "%s", why != NULL ? why : "?");
	loop_stop(L);
}

static const struct kernel_exec_cb exec_cb = { on_output, on_done };

/* SIGCHLD arrived: empty the signalfd and let the reaper run. */
static void
on_sigchld(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	child_reap();
}

/* A wait took too long. */
static void
on_deadline(struct loop *l, uint64_t id, void *arg)
{
	*(bool *)arg = true;
	loop_stop(l);
}

/* Run the loop until *flag is set or ms pass; true if it was set. */
static bool
run_until(const bool *flag, unsigned ms)
{
	bool late = false;
	uint64_t t;

	if (*flag)
		return true;
	t = loop_timer_add(L, ms, on_deadline, &late);
	while (!*flag && !late)
		if (loop_run(L) < 0)
			break;
	loop_timer_cancel(L, t);
	return *flag;
}

/* Start the kernel and wait for READY; 0 with the time it took, or -1. */
static int
start_one(uint64_t *us)
{
	char err[512];
	uint64_t t0;

	memset(&S, 0, sizeof(S));
	t0 = now_us();
	if (kernel_start(L, &conf, NULL, spec, NULL, on_event, NULL, &S.k, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "kbench: kernel_start: %s\n", err);
		return -1;
	}
	if (!run_until(&S.ready, READY_MS) || S.dead) {
		fprintf(stderr, "kbench: kernel not ready: %s\n",
		    S.dead ? S.why : "timed out");
		return -1;
	}
	*us = S.t_ready - t0;
	return 0;
}

/* Shut the kernel down and wait until it is reaped; SIGKILL if need be. */
static void
stop_one(void)
{
	pid_t pid;

	if (S.k == NULL)
		return;
	pid = kernel_pid(S.k);
	kernel_shutdown(S.k);
	if (run_until(&S.dead, STOP_MS))
		return;
	fprintf(stderr, "kbench: kernel pid %ld ignored shutdown, killing "
	    "it\n", (long)pid);
	if (pid > 0)
		kill(-pid, SIGKILL);
	if (!run_until(&S.dead, STOP_MS))
		fprintf(stderr, "kbench: kernel pid %ld not reaped\n",
		    (long)pid);
}

/* One "1+1" to its done callback; 0 with the time it took, or -1. */
static int
exec_one(uint64_t *us)
{
	char id[33];
	uint64_t t0;
	int rc;

	if (S.k == NULL) {
		fprintf(stderr, "kbench: the kernel died: %s\n", S.why);
		return -1;
	}
	S.done = false;
	t0 = now_us();
	if ((rc = kernel_execute(S.k, "1+1", &exec_cb, NULL, id)) < 0) {
		fprintf(stderr, "kbench: kernel_execute: %s\n",
		    strerror(-rc));
		return -1;
	}
	if (!run_until(&S.done, EXEC_MS)) {
		fprintf(stderr, "kbench: no reply to 1+1 within %d ms\n",
		    EXEC_MS);
		if (S.k != NULL)
			kernel_execute_forget(S.k, id);
		return -1;
	}
	if (!S.done_ok) {
		fprintf(stderr, "kbench: 1+1 failed: %s\n", S.why);
		return -1;
	}
	*us = S.t_done - t0;
	return 0;
}

/*
 * Run argv with its stdout into a pipe and its stderr on ours, while our
 * loop stands still; 0 with the last line it printed in line, or -1.
 */
static int
run_baseline(char *const *argv, char *line, size_t linelen)
{
	struct spawn_opts so = { .argv = argv, .stdin_fd = -1,
	    .stderr_fd = STDERR_FILENO };
	char buf[4096], err[256];
	uint64_t deadline = now_us() + (uint64_t)BASELINE_MS * 1000;
	struct pollfd pfd;
	size_t len = 0, m;
	ssize_t n;
	pid_t pid, w;
	int p[2], st = 0, rc = -1;
	char *nl, *last;

	if (pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "kbench: pipe: %s\n", strerror(errno));
		return -1;
	}
	so.stdout_fd = p[1];
	if (spawn_start(&so, &pid, err, sizeof(err)) < 0) {
		fprintf(stderr, "kbench: %s: %s\n", argv[0], err);
		close(p[0]);
		close(p[1]);
		return -1;
	}
	close(p[1]);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	for (;;) {
		uint64_t now = now_us();

		if (now >= deadline) {
			fprintf(stderr, "kbench: %s took over %d ms, killing "
			    "it\n", argv[0], BASELINE_MS);
			kill(-pid, SIGKILL);
			break;
		}
		if (poll(&pfd, 1, (int)((deadline - now) / 1000 + 1)) < 0 &&
		    errno != EINTR)
			break;
		if ((pfd.revents & (POLLIN | POLLHUP)) == 0)
			continue;
		if ((n = read(p[0], buf + len, sizeof(buf) - 1 - len)) <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf) - 1) {	/* keep the tail only */
			memmove(buf, buf + len / 2, len - len / 2);
			len -= len / 2;
		}
	}
	close(p[0]);
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (w != pid) {
		fprintf(stderr, "kbench: waitpid: %s\n", strerror(errno));
		return -1;
	}
	buf[len] = '\0';
	while (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	nl = strrchr(buf, '\n');
	last = nl != NULL ? nl + 1 : buf;
	if ((m = strlen(last)) >= linelen)	/* linelen > 0 */
		m = linelen - 1;
	memcpy(line, last, m);
	line[m] = '\0';
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && line[0] != '\0')
		rc = 0;
	else if (WIFEXITED(st))
		fprintf(stderr, "kbench: %s exited with code %d\n", argv[0],
		    WEXITSTATUS(st));
	else
		fprintf(stderr, "kbench: %s ended by signal %d\n", argv[0],
		    WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return rc;
}

/* kbench start N */
static int
cmd_start(size_t runs)
{
	uint64_t *v = calloc(runs, sizeof(*v)), med;
	int rc = -1;

	if (v == NULL)
		return -1;
	for (size_t i = 0; i < runs; i++) {
		if (start_one(&v[i]) < 0)
			goto out;
		stop_one();
		if (S.k != NULL)
			goto out;
	}
	med = median(v, runs);	/* sorts v */
	printf("%llu %llu %llu\n", (unsigned long long)med,
	    (unsigned long long)v[0], (unsigned long long)v[runs - 1]);
	rc = 0;
out:
	stop_one();
	free(v);
	return rc;
}

/* kbench exec N PYTHON SCRIPT */
static int
cmd_exec(size_t runs, const char *python, const char *script)
{
	uint64_t *v = calloc(runs, sizeof(*v)), t, med;
	char py[PATH_MAX], sc[PATH_MAX], cf[PATH_MAX], nbuf[32];
	char verb[] = "exec", line[512];
	char *argv[] = { py, sc, verb, cf, nbuf, NULL };
	int rc = -1;

	if (v == NULL)
		return -1;
	if (start_one(&t) < 0)
		goto out;
	for (size_t i = 0; i < WARMUPS; i++)
		if (exec_one(&t) < 0)
			goto out;
	for (size_t i = 0; i < runs; i++)
		if (exec_one(&v[i]) < 0)
			goto out;
	med = median(v, runs);	/* sorts v */
	snprintf(py, sizeof(py), "%s", python);
	snprintf(sc, sizeof(sc), "%s", script);
	snprintf(cf, sizeof(cf), "%s", kernel_connection_file(S.k));
	snprintf(nbuf, sizeof(nbuf), "%zu", runs);
	if (run_baseline(argv, line, sizeof(line)) < 0)
		goto out;
	/* Ours still works after the other client came and went. */
	if (exec_one(&t) < 0)
		goto out;
	printf("%llu %llu %s\n", (unsigned long long)med,
	    (unsigned long long)v[0], line);
	rc = 0;
out:
	stop_one();
	free(v);
	return rc;
}

/* The loop, SIGCHLD on a signalfd, a runtime dir, the conf, the spec. */
static int
setup(void)
{
	const char *tmp = getenv("TMPDIR");
	char **dirs;
	sigset_t set;

	log_init(LOG_L_WARN);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		fprintf(stderr, "kbench: signalfd: %s\n", strerror(errno));
		return -1;
	}
	L = loop_new();
	if (loop_add_fd(L, sigfd, LOOP_READ, on_sigchld, NULL) < 0)
		return -1;
	snprintf(rundir, sizeof(rundir), "%s/kbench.XXXXXX",
	    tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(rundir) == NULL) {
		fprintf(stderr, "kbench: mkdtemp %s: %s\n", rundir,
		    strerror(errno));
		rundir[0] = '\0';
		return -1;
	}
	conf = (struct kernel_conf){ .zctx = zmq_ctx_new(),
	    .runtime_dir = rundir, .ready_timeout_ms = READY_MS,
	    .hb_interval_ms = 1000, .hb_misses = 3, .grace_ms = 2000,
	    .max_restarts = 0, .max_frame = 64 << 20, .cgroup = NULL };
	if (conf.zctx == NULL)
		return -1;
	dirs = kp_kernelspec_dirs();
	if (kp_kernelspec_find_all(dirs, &specs, NULL) < 0)
		specs = NULL;
	kp_kernelspec_dirs_free(dirs);
	for (size_t i = 0; specs != NULL && specs[i] != NULL; i++)
		if (strcmp(specs[i]->name, SPEC_NAME) == 0)
			spec = specs[i];
	if (spec == NULL) {
		fprintf(stderr, "kbench: no \"%s\" kernelspec found\n",
		    SPEC_NAME);
		return -1;
	}
	return 0;
}

/* Undo setup(); the kernel is gone by now, and so are its files. */
static void
cleanup(void)
{
	if (rundir[0] != '\0' && rmdir(rundir) < 0)
		fprintf(stderr, "kbench: rmdir %s: %s\n", rundir,
		    strerror(errno));
	kp_kernelspec_list_free(specs);
	if (conf.zctx != NULL)
		zmq_ctx_term(conf.zctx);
	loop_free(L);
	if (sigfd >= 0)
		close(sigfd);
}

/* A run count, 1..MAX_RUNS, or -1. */
static long
parse_runs(const char *s)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || n < 1 || n > MAX_RUNS)
		return -1;
	return n;
}

/* Say how to call us, and exit 2. */
static void
usage(void)
{
	fprintf(stderr, "usage: kbench start N\n"
	    "       kbench exec N PYTHON SCRIPT\n");
	exit(2);
}

/* Check the arguments, set up, run one command, clean up. */
int
main(int argc, char **argv)
{
	long n;
	int rc;

	if (argc < 3 || (n = parse_runs(argv[2])) < 0)
		usage();
	if (strcmp(argv[1], "start") == 0 && argc == 3)
		;
	else if (strcmp(argv[1], "exec") == 0 && argc == 5)
		;
	else
		usage();
	if ((rc = setup()) == 0)
		rc = argv[1][0] == 's' ? cmd_start((size_t)n) :
		    cmd_exec((size_t)n, argv[3], argv[4]);
	cleanup();
	return rc == 0 ? 0 : 1;
}
