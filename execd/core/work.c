/*
 * work.c -- the worker pool (libuv's threadpool, smaller).
 *
 * Two lists under one mutex: jobs waiting for a worker, and jobs whose fn
 * has run.  A worker takes the first waiting job it may run: a heavy one
 * only while fewer than heavy_max heavy jobs run, so patterns chosen by
 * clients can hold at most all workers but one.  Workers sleep on a
 * condition variable; a finished job is
 * moved to the second list and an eventfd on the loop is bumped, and the
 * loop thread runs the done callbacks.  Nothing else is shared.  A job
 * submitted by a thread acting as another user (cred.h) runs, and has its
 * done called, as that user too.
 *
 * A job its submitter gave up on (work_abandon: its file system stopped
 * answering) may hold its worker for ever, and a thread waiting on a hung
 * FUSE mount cannot even be killed.  Such a worker stops counting: while
 * every counted worker is busy, another is started in its stead, up to
 * WORK_MAX_THREADS in all, and a worker beyond the pool's size ends as
 * soon as it finds nothing to do.  Workers are detached, so that
 * shutdown waits for every worker but those stuck in abandoned jobs.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cred.h"
#include "log.h"
#include "loop.h"
#include "work.h"
#include "xmalloc.h"

#define WORK_MAX_THREADS	32

/* One job queued: fn on a worker, then done on the loop thread. */
struct work_job {
	work_fn		*fn;
	work_done_cb	*done;
	void		*arg;
	bool		 heavy;
	bool		 running;	/* fn has started */
	bool		 abandoned;	/* work_abandon() */
	struct cred	*cred;	/* the submitter's identity, or NULL */
	struct work_job	*next;
};

/* A FIFO of items. */
struct itemq {
	struct work_job	*head, *tail;
};

static struct {
	struct loop	*loop;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	struct itemq	 todo, done;
	unsigned	 size;		/* workers the pool keeps */
	unsigned	 nthreads;	/* alive */
	unsigned	 idle;		/* waiting for a job */
	unsigned	 stuck;		/* running an abandoned job */
	pthread_cond_t	 gone;		/* a worker ended, or got stuck */
	unsigned	 heavy_max, heavy_running;
	int		 efd;
	bool		 stopping;
} W = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
    .gone = PTHREAD_COND_INITIALIZER, .efd = -1 };

static void	 push(struct itemq *, struct work_job *);
static struct work_job *pop(struct itemq *);
static struct work_job *take(struct itemq *);
static struct work_job *submit(work_fn *, work_done_cb *, void *, bool);
static void	*worker(void *);
static int	 spawn(void);
static void	 finished(struct loop *, int, void *, int, void *);
static void	 run_done(void);
static void	 take_cred(const struct work_job *);

static void
push(struct itemq *q, struct work_job *j)
{
	j->next = NULL;
	if (q->tail != NULL)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
}

static struct work_job *
pop(struct itemq *q)
{
	struct work_job *j = q->head;

	if (j != NULL && (q->head = j->next) == NULL)
		q->tail = NULL;
	return j;
}

/* Unlink and return the first job of q a worker may run now, or NULL. */
static struct work_job *
take(struct itemq *q)
{
	struct work_job *j, *prev = NULL;

	for (j = q->head; j != NULL; prev = j, j = j->next) {
		if (j->heavy && W.heavy_running >= W.heavy_max)
			continue;
		if (prev == NULL)
			return pop(q);
		prev->next = j->next;
		if (q->tail == j)
			q->tail = prev;
		return j;
	}
	return NULL;
}

/*
 * Act as the job's submitter did (cred.h).  The submitting thread held
 * this very identity a moment ago, so failing to take it means the
 * process changed under us: never run the job as execd instead.
 */
static void
take_cred(const struct work_job *j)
{
	int rc;

	if ((rc = cred_enter(j->cred)) < 0)
		fatalx("work: cannot act as uid %lu gid %lu: %s",
		    (unsigned long)j->cred->uid, (unsigned long)j->cred->gid,
		    strerror(-rc));
}

/* A worker: run jobs until told to stop and none it may run is left. */
static void *
worker(void *unused)
{
	struct work_job *j;
	uint64_t one = 1;

	pthread_mutex_lock(&W.mu);
	for (;;) {
		/* One beyond the pool's size ends when it finds no job. */
		while ((j = take(&W.todo)) == NULL && !W.stopping &&
		    W.nthreads - W.stuck <= W.size) {
			W.idle++;
			pthread_cond_wait(&W.cv, &W.mu);
			W.idle--;
		}
		/*
		 * Stopping with only heavy jobs left that may not run yet:
		 * the workers running heavy ones take them in turn.
		 */
		if (j == NULL)
			break;
		if (j->heavy)
			W.heavy_running++;
		j->running = true;
		if (j->abandoned)	/* given up on while it waited */
			W.stuck++;
		pthread_mutex_unlock(&W.mu);
		take_cred(j);
		j->fn(j->arg);
		cred_leave(j->cred);
		pthread_mutex_lock(&W.mu);
		j->running = false;
		if (j->abandoned)
			W.stuck--;
		if (j->heavy) {
			W.heavy_running--;
			pthread_cond_broadcast(&W.cv);
		}
		push(&W.done, j);
		/* A full counter (EAGAIN) means a wake-up is pending. */
		(void)!write(W.efd, &one, sizeof(one));
	}
	W.nthreads--;
	pthread_cond_broadcast(&W.gone);
	pthread_mutex_unlock(&W.mu);
	return NULL;
}

/*
 * One more worker, detached, taking no signals (those go to the loop's
 * signalfd).  With W.mu held.  0 or -errno.
 */
static int
spawn(void)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, &attr, worker, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return -rc;
	W.nthreads++;
	return 0;
}

/* Give up on a job; see work.h. */
void
work_abandon(struct work_job *j)
{
	pthread_mutex_lock(&W.mu);
	if (!j->abandoned) {
		j->abandoned = true;
		if (j->running)
			W.stuck++;
		/* No counted worker free: one more, in a stuck one's stead. */
		if (W.idle == 0 && W.nthreads < WORK_MAX_THREADS &&
		    spawn() < 0)
			log_warnx("work: cannot start a worker in place of a "
			    "stuck one");
	}
	pthread_mutex_unlock(&W.mu);
}

/* Start the pool; see work.h. */
int
work_init(struct loop *loop, unsigned n)
{
	int rc = 0;

	if (n == 0 || n > WORK_MAX_THREADS / 2)
		return -EINVAL;
	if ((W.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return -errno;
	W.loop = loop;
	W.size = n;
	W.heavy_max = n > 1 ? n - 1 : 1;
	loop_add_fd(loop, W.efd, LOOP_READ, finished, NULL);
	pthread_mutex_lock(&W.mu);
	while (W.nthreads < n && (rc = spawn()) == 0)
		;
	pthread_mutex_unlock(&W.mu);
	if (rc < 0) {
		work_shutdown();
		return rc;
	}
	return 0;
}

/* Queue a job, heavy or not. */
static struct work_job *
submit(work_fn *fn, work_done_cb *done, void *arg, bool heavy)
{
	struct work_job *j = xcalloc(1, sizeof(*j));

	j->fn = fn;
	j->done = done;
	j->arg = arg;
	j->heavy = heavy;
	j->cred = cred_dup_current();
	pthread_mutex_lock(&W.mu);
	if (W.nthreads == 0)
		fatalx("work_submit before work_init");
	push(&W.todo, j);
	/* A worker woken for a heavy job it may not run would sleep again. */
	pthread_cond_broadcast(&W.cv);
	pthread_mutex_unlock(&W.mu);
	return j;
}

/* Queue a job; see work.h. */
struct work_job *
work_submit(work_fn *fn, work_done_cb *done, void *arg)
{
	return submit(fn, done, arg, false);
}

/* Queue a heavy job; see work.h. */
struct work_job *
work_submit_heavy(work_fn *fn, work_done_cb *done, void *arg)
{
	return submit(fn, done, arg, true);
}

/* Count heavy jobs; see work.h. */
void
work_heavy_count(unsigned *running, unsigned *waiting)
{
	unsigned n = 0;

	pthread_mutex_lock(&W.mu);
	for (struct work_job *j = W.todo.head; j != NULL; j = j->next)
		n += j->heavy;
	*running = W.heavy_running;
	*waiting = n;
	pthread_mutex_unlock(&W.mu);
}

/* Run the done callbacks of every finished job. */
static void
run_done(void)
{
	struct work_job *j;

	for (;;) {
		pthread_mutex_lock(&W.mu);
		j = pop(&W.done);
		pthread_mutex_unlock(&W.mu);
		if (j == NULL)
			return;
		take_cred(j);
		j->done(j->arg);
		cred_leave(j->cred);
		cred_free(j->cred);
		free(j);
	}
}

static void
finished(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("work: eventfd");
	run_done();
}

/* Stop the pool; see work.h. */
void
work_shutdown(void)
{
	pthread_mutex_lock(&W.mu);
	W.stopping = true;
	pthread_cond_broadcast(&W.cv);
	/* Workers stuck in abandoned jobs are not waited for. */
	while (W.nthreads > W.stuck)
		pthread_cond_wait(&W.gone, &W.mu);
	W.stopping = false;
	pthread_mutex_unlock(&W.mu);
	run_done();
	if (W.efd >= 0) {
		loop_del(W.loop, W.efd, NULL);
		close(W.efd);
		W.efd = -1;
	}
}
