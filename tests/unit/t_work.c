/*
 * t_work.c -- unit tests for work.c, the worker pool.
 *
 * Jobs record which thread ran their fn and their done, and done stops
 * the loop when the last one is in.  Covered: every fn runs off the loop
 * thread and every done on it, each exactly once; jobs start in the
 * order submitted (one worker); two workers run two slow jobs at the same
 * time; heavy jobs never hold every worker (a plain job submitted after
 * three blocked heavy ones runs at once) and still all run at shutdown;
 * work_shutdown() waits for queued jobs and runs their done callbacks
 * with no loop running; a job given up on (work_abandon) has its worker
 * replaced while it runs.  A watchdog timer ends a test instead
 * of letting it hang.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../../execd/core/loop.h"
#include "../../execd/core/work.h"
#include "../t.h"

#define WATCHDOG_MS	10000
#define NJOBS		200

struct job {
	int		 id;
	pthread_t	 ran_on;
	bool		 ran_elsewhere;	/* fn not on the loop thread */
	int		 dones;
	bool		 done_on_loop;
	int		 sleep_ms;
};

static struct loop	*L;
static pthread_t	 loop_thread;
static int		 ndone, order[NJOBS], norder, want;
static pthread_mutex_t	 mu = PTHREAD_MUTEX_INITIALIZER;

static void
watchdog(struct loop *l, uint64_t id, void *arg)
{
	fprintf(stderr, "  watchdog: the loop ran %d ms\n", WATCHDOG_MS);
	loop_stop(l);
}

static void
fn(void *arg)
{
	struct job *j = arg;
	struct timespec ts = { 0, (long)j->sleep_ms * 1000000 };

	j->ran_on = pthread_self();
	j->ran_elsewhere = !pthread_equal(j->ran_on, loop_thread);
	pthread_mutex_lock(&mu);
	if (norder < NJOBS)
		order[norder++] = j->id;
	pthread_mutex_unlock(&mu);
	if (j->sleep_ms > 0)
		nanosleep(&ts, NULL);
}

static void
done(void *arg)
{
	struct job *j = arg;

	j->dones++;
	j->done_on_loop = pthread_equal(pthread_self(), loop_thread);
	if (++ndone == want && L != NULL)
		loop_stop(L);
}

/* Start a loop and a pool of n workers. */
static void
setup(unsigned n)
{
	L = loop_new();
	loop_thread = pthread_self();
	ndone = norder = 0;
	loop_timer_add(L, WATCHDOG_MS, watchdog, NULL);
	T_EQ_INT(work_init(L, n), 0);
}

static void
teardown(void)
{
	work_shutdown();
	loop_free(L);
	L = NULL;
}

static void
test_every_job_runs_once_off_the_loop(void)
{
	static struct job jobs[NJOBS];

	setup(1);
	want = NJOBS;
	for (int i = 0; i < NJOBS; i++) {
		jobs[i] = (struct job){ .id = i };
		work_submit(fn, done, &jobs[i]);
	}
	loop_run(L);
	T_EQ_INT(ndone, NJOBS);
	for (int i = 0; i < NJOBS; i++) {
		T_OK(jobs[i].ran_elsewhere);
		T_EQ_INT(jobs[i].dones, 1);
		T_OK(jobs[i].done_on_loop);
		T_EQ_INT(order[i], i);		/* one worker: in order */
	}
	teardown();
}

static void
test_two_workers_run_at_once(void)
{
	struct job a = { .id = 1, .sleep_ms = 300 },
	    b = { .id = 2, .sleep_ms = 300 };
	struct timespec t0, t1;
	long ms;

	setup(2);
	want = 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	work_submit(fn, done, &a);
	work_submit(fn, done, &b);
	loop_run(L);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) /
	    1000000;
	T_EQ_INT(ndone, 2);
	T_OK(!pthread_equal(a.ran_on, b.ran_on));
	T_OK(ms < 550);		/* not 600: side by side */
	teardown();
}

static atomic_int gate;
static unsigned	 seen_running, seen_waiting;

/* A heavy job: wait (bounded) until the plain job opens the gate. */
static void
heavy_fn(void *arg)
{
	struct timespec ts = { 0, 1000000 };

	for (int i = 0; i < 5000 && atomic_load(&gate) == 0; i++)
		nanosleep(&ts, NULL);
	fn(arg);
}

/* The plain job: it ran while the heavy ones held what they may. */
static void
plain_fn(void *arg)
{
	work_heavy_count(&seen_running, &seen_waiting);
	fn(arg);
	atomic_store(&gate, 1);
}

static void
test_heavy_jobs_leave_a_worker(void)
{
	static struct job jobs[4];

	atomic_store(&gate, 0);
	setup(2);
	want = 4;
	for (int i = 0; i < 3; i++) {
		jobs[i] = (struct job){ .id = i };
		work_submit_heavy(heavy_fn, done, &jobs[i]);
	}
	jobs[3] = (struct job){ .id = 3 };
	work_submit(plain_fn, done, &jobs[3]);
	loop_run(L);
	T_EQ_INT(ndone, 4);
	/* The plain job went first, past the heavy ones still waiting. */
	T_EQ_INT(order[0], 3);
	T_EQ_INT(seen_running, 1);
	T_EQ_INT(seen_waiting, 2);
	for (int i = 0; i < 4; i++)
		T_EQ_INT(jobs[i].dones, 1);
	teardown();
	/* Queued heavy jobs all run at shutdown too. */
	atomic_store(&gate, 1);
	setup(2);
	want = -1;
	for (int i = 0; i < 4; i++) {
		jobs[i] = (struct job){ .id = i, .sleep_ms = 5 };
		work_submit_heavy(fn, done, &jobs[i]);
	}
	teardown();
	T_EQ_INT(ndone, 4);
}

static void
test_shutdown_finishes_queued_jobs(void)
{
	static struct job jobs[20];

	setup(1);
	want = -1;		/* the loop is not run */
	for (int i = 0; i < 20; i++) {
		jobs[i] = (struct job){ .id = i, .sleep_ms = 5 };
		work_submit(fn, done, &jobs[i]);
	}
	teardown();
	T_EQ_INT(ndone, 20);
	for (int i = 0; i < 20; i++) {
		T_OK(jobs[i].ran_elsewhere);
		T_EQ_INT(jobs[i].dones, 1);
		T_OK(jobs[i].done_on_loop);
	}
}

/* A job that waits until released (a hung mount's read). */
static atomic_bool	 released;

static void
blocked(void *arg)
{
	struct job *j = arg;

	j->ran_on = pthread_self();
	while (!atomic_load(&released))
		usleep(1000);
}

static int
threads_now(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	if (d == NULL)
		return -1;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n - 2;	/* . and .. */
}

/*
 * The threads once there are n, or after 5 s: a worker that has ended
 * (detached) may take a moment to leave the task list.
 */
static int
threads_settle(int n)
{
	for (int i = 0; i < 5000 && threads_now() != n; i++)
		usleep(1000);
	return threads_now();
}

/*
 * One worker, held by a job its submitter gave up on: a worker is started
 * in its stead, so later jobs run; once the held job returns, its done
 * runs and the pool is back to one worker.  A job abandoned before it
 * started still runs, and shutdown waits for none stuck.
 */
static void
test_abandoned_job_is_replaced(void)
{
	struct job stuck = { .id = 1 }, later = { .id = 2 }, queued = {
	    .id = 3 };
	struct work_job *sj;
	int base;

	atomic_store(&released, false);
	T_EQ_INT(threads_settle(1), 1);	/* earlier tests' workers gone */
	setup(1);
	/* The loop's own threads and the worker: what the pool goes back to. */
	base = threads_now();
	sj = work_submit(blocked, done, &stuck);
	while (stuck.ran_on == 0)
		usleep(1000);
	work_abandon(sj);
	T_EQ_INT(threads_settle(base + 1), base + 1);
	want = 1;
	work_submit(fn, done, &later);
	loop_run(L);
	T_EQ_INT(later.dones, 1);
	T_EQ_INT(stuck.dones, 0);
	atomic_store(&released, true);
	want = 2;
	loop_run(L);
	T_EQ_INT(stuck.dones, 1);
	T_EQ_INT(threads_settle(base), base);

	/* Abandoned while queued behind a stuck job: it runs all the same. */
	atomic_store(&released, false);
	stuck = (struct job){ .id = 1 };
	sj = work_submit(blocked, done, &stuck);
	while (stuck.ran_on == 0)
		usleep(1000);
	work_abandon(work_submit(fn, done, &queued));
	work_abandon(sj);
	want = 3;
	loop_run(L);
	T_EQ_INT(queued.dones, 1);
	atomic_store(&released, true);
	want = 4;
	loop_run(L);
	T_EQ_INT(stuck.dones, 1);
	teardown();
}

static void
test_init_refuses_bad_counts(void)
{
	struct loop *l = loop_new();

	T_EQ_INT(work_init(l, 0), -EINVAL);
	T_EQ_INT(work_init(l, 1000), -EINVAL);
	loop_free(l);
}

static const struct t_case cases[] = {
	{ "every_job_runs_once_off_the_loop",
	    test_every_job_runs_once_off_the_loop },
	{ "two_workers_run_at_once", test_two_workers_run_at_once },
	{ "shutdown_finishes_queued_jobs", test_shutdown_finishes_queued_jobs },
	{ "heavy_jobs_leave_a_worker", test_heavy_jobs_leave_a_worker },
	{ "abandoned_job_is_replaced", test_abandoned_job_is_replaced },
	{ "init_refuses_bad_counts", test_init_refuses_bad_counts },
};

int
main(void)
{
	return T_RUN(cases);
}
