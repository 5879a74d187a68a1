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
 * with no loop running.  A watchdog timer ends a test instead
 * of letting it hang.
 */
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
	{ "init_refuses_bad_counts", test_init_refuses_bad_counts },
};

int
main(void)
{
	return T_RUN(cases);
}
