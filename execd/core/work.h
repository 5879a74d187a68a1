/*
 * work.h -- a small pool of threads for work that blocks: walking big
 * trees, removing them, rewriting or syncing files.
 *
 * A job's fn runs on a worker thread and must touch nothing of the loop,
 * MHD or ZeroMQ, only its own arg; its done then runs on the loop thread,
 * where it may reply to a request it deferred.  Jobs start in the order
 * they were submitted, except that heavy jobs (work_submit_heavy) never
 * take every worker: one that would waits, and later jobs pass it.  With
 * several workers, jobs may end in any order.
 * A job submitted while the thread acts as another user (cred.h) runs,
 * and has its done called, as that user.
 * work_init, work_submit, work_submit_heavy and work_shutdown: loop
 * thread only.
 */
#ifndef EXECD_WORK_H
#define EXECD_WORK_H

struct loop;
struct work_job;

typedef void work_fn(void *arg);
typedef void work_done_cb(void *arg);

/* Start n (1 to 16) worker threads reporting to loop.  0 or -errno. */
int	work_init(struct loop *, unsigned n);
/*
 * Queue a job: fn(arg) on a worker, then done(arg) on the loop thread.
 * The job is valid until its done is called.
 */
struct work_job *work_submit(work_fn *fn, work_done_cb *done, void *arg);
/*
 * The same for a job whose cost a client chooses (a grep pattern): at
 * most n - 1 heavy jobs run at once (1 with a single worker), so the
 * other kinds always find a worker.
 */
struct work_job *work_submit_heavy(work_fn *fn, work_done_cb *done,
	    void *arg);
/*
 * Its submitter gave up on the job (what fn waits on does not answer: a
 * hung mount): its worker, if it holds one, may be held for ever, so it
 * no longer counts, and while no other worker is free another is started
 * in its stead (up to 32 threads in all; the extra ones end when idle).
 * fn and done still run, whenever fn returns.  Before done, loop thread.
 */
void	work_abandon(struct work_job *);
/* Heavy jobs running, and heavy jobs waiting for their turn. */
void	work_heavy_count(unsigned *running, unsigned *waiting);
/*
 * Stop the workers once the jobs already queued have run, then call the
 * done of every job that has not had it.  Workers stuck in abandoned
 * jobs are not waited for, and those jobs' done is never called.  The
 * loop need not be running.
 */
void	work_shutdown(void);

#endif
