/*
 * loop.c -- the event loop: fd and ZeroMQ watches, a timer heap, hooks.
 *
 * One iteration: before-poll hooks (deferred frees), zmq_poll with the
 * shortest wait any timer or timeout hook allows, dispatch of ready
 * watches, due timers, then the after-poll hooks (libmicrohttpd's run
 * step, which must run every time because resumed connections only take
 * effect inside it).  Nothing here knows about HTTP, kernels or jobs.
 *
 * Busy polling (loop_busy_poll()) follows the kernel's halt polling: the
 * window a wait spins before it sleeps doubles, from SPIN_MIN_US up to
 * the maximum, each time an event comes within the maximum but after the
 * window, and halves, down to none, each time it comes later or not at
 * all.  Exchanges that answer within the window (a /proxy backend on
 * loopback, a client's next request) are then taken without a sleep and
 * a wakeup, which across CPUs costs tens of microseconds; a quiet loop
 * soon spins no more.  The spin yields between polls, so that a peer
 * woken on this CPU runs at once instead of after the window.
 *
 * A watchdog (Redis's software watchdog) tells when the loop is stuck:
 * the loop thread notes each step it takes (a hook, a watch's callback, a
 * timer, the poll) in a few atomics, and a thread of the loop's own
 * looks at them a few times per period.  That thread is made by
 * loop_new() and ended by loop_free(), not by loop_run(), so that it is
 * among the threads execd has when it builds its children's seccomp
 * filter, which refuses signals to each of them (sandbox.c).
 * A step other than the poll that lasts the period is logged once, with
 * its kind, the callback's address in the executable (addr2line names
 * the function) and its fd.  That thread reads those atomics and nothing
 * else of the loop, and only logs (log.c writes each line with one
 * write, from stack buffers); it never stops or signals anything.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include "log.h"
#include "loop.h"
#include "xmalloc.h"

#define MAX_HOOKS 8
#define SPIN_MIN_US 8

/* The steps of an iteration, as the watchdog names them. */
enum step { S_IDLE, S_BEFORE, S_TIMEOUT, S_POLL, S_FD, S_TIMER, S_AFTER };

static const char *const step_names[] = {
	"outside the loop", "a before-poll hook", "a timeout hook",
	"the poll", "an fd watch's callback", "a timer's callback",
	("an after-poll hook (libmicrohttpd's run step: requests and "
	"responses)")
};

/* Start of the executable's image (GNU ld and lld define it). */
extern const char __executable_start[];

/*
 * What the loop thread is doing, for the watchdog thread: written by the
 * loop thread only, read by the watchdog only.  seq changes with every
 * step, after the fields it covers.
 */
struct wd_note {
	atomic_ulong	 seq;
	atomic_int	 step;		/* enum step */
	atomic_uintptr_t cb;		/* the callback, or 0 */
	atomic_int	 fd;		/* -1: none */
};

/* The watchdog thread and how it is told to stop. */
struct wd {
	atomic_uint	 ms;		/* the period; 0: off */
	bool		 running, stop;
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;		/* CLOCK_MONOTONIC */
	struct wd_note	 note;
	atomic_uint_least64_t worst;	/* the longest step seen, ms */
	sigset_t	 sigs;		/* taken while stuck, by ... */
	loop_stuck_signal_cb *sig_cb;	/* ... this, once */
	uint64_t	 sig_seen;	/* one pending since, this step; 0 */
	void		*sig_arg;
};

/* One fd or ZeroMQ socket the loop polls, and whom it calls. */
struct pollsrc {
	int		 fd;
	void		*zsock;
	int		 events;
	loop_fd_cb	*cb;
	void		*arg;
	bool		 dead;
};

struct timer {
	uint64_t	 when;
	uint64_t	 id;
	loop_timer_cb	*cb;
	void		*arg;
};

struct hook {
	void		*cb;
	void		*arg;
};

struct loop {
	struct pollsrc	*w;
	size_t		 nw, capw;
	bool		 compact;
	zmq_pollitem_t	*items;
	size_t		 capitems;
	struct timer	*t;
	size_t		 nt, capt;
	uint64_t	 next_id;
	struct hook	 before[MAX_HOOKS], after[MAX_HOOKS], tmo[MAX_HOOKS];
	size_t		 nbefore, nafter, ntmo;
	bool		 stop;
	unsigned	 spin, spin_max;	/* busy-poll window and cap, us */
	struct wd	 wd;
};

static int	 add_watch(struct loop *, int, void *, int, loop_fd_cb *,
		    void *);
static void	 compact_watches(struct loop *);
static void	 heap_up(struct loop *, size_t);
static void	 heap_down(struct loop *, size_t);
static void	 heap_remove(struct loop *, size_t);
static void	 run_timers(struct loop *);
static long	 poll_timeout(struct loop *);
static void	 add_hook(struct hook *, size_t *, void *, void *);
static int	 wait_events(struct loop *, size_t, long);
static uint64_t	 now_us(void);
static void	 note(struct loop *, enum step, void *, int);
static void	 wd_start(struct loop *);
static void	 wd_stop(struct loop *);
static void	*wd_main(void *);

/* A new loop with nothing to watch. */
struct loop *
loop_new(void)
{
	struct loop *l = xcalloc(1, sizeof(*l));
	pthread_condattr_t ca;

	l->next_id = 1;
	atomic_init(&l->wd.ms, LOOP_WATCHDOG_MS);
	atomic_init(&l->wd.note.seq, 0);
	atomic_init(&l->wd.note.step, S_IDLE);
	atomic_init(&l->wd.note.cb, 0);
	atomic_init(&l->wd.note.fd, -1);
	atomic_init(&l->wd.worst, 0);
	sigemptyset(&l->wd.sigs);
	if (pthread_mutex_init(&l->wd.mu, NULL) != 0 ||
	    pthread_condattr_init(&ca) != 0 ||
	    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
	    pthread_cond_init(&l->wd.cv, &ca) != 0)
		fatalx("cannot make the loop's watchdog lock");
	pthread_condattr_destroy(&ca);
	wd_start(l);
	return l;
}

/* Free the loop's own memory; the watched fds and sockets are the owners'. */
void
loop_free(struct loop *l)
{
	if (l == NULL)
		return;
	wd_stop(l);
	free(l->w);
	free(l->items);
	free(l->t);
	pthread_cond_destroy(&l->wd.cv);
	pthread_mutex_destroy(&l->wd.mu);
	free(l);
}

/* Watch a plain fd. */
int
loop_add_fd(struct loop *l, int fd, int events, loop_fd_cb *cb, void *arg)
{
	if (fd < 0)
		return -EBADF;
	return add_watch(l, fd, NULL, events, cb, arg);
}

/* Watch a ZeroMQ socket. */
int
loop_add_zsock(struct loop *l, void *zsock, int events, loop_fd_cb *cb,
    void *arg)
{
	if (zsock == NULL)
		return -EINVAL;
	return add_watch(l, -1, zsock, events, cb, arg);
}

static int
add_watch(struct loop *l, int fd, void *zsock, int events, loop_fd_cb *cb,
    void *arg)
{
	struct pollsrc *w;

	for (size_t i = 0; i < l->nw; i++) {
		w = &l->w[i];
		if (!w->dead && w->fd == fd && w->zsock == zsock) {
			w->events = events;
			w->cb = cb;
			w->arg = arg;
			return 0;
		}
	}
	if (l->nw == l->capw) {
		l->capw = l->capw ? l->capw * 2 : 16;
		l->w = xrealloc(l->w, l->capw * sizeof(*l->w));
	}
	l->w[l->nw++] = (struct pollsrc){ fd, zsock, events, cb, arg, false };
	return 0;
}

/* Stop watching; safe from any callback.  The slot is reused later. */
void
loop_del(struct loop *l, int fd, void *zsock)
{
	for (size_t i = 0; i < l->nw; i++) {
		if (!l->w[i].dead && l->w[i].fd == fd &&
		    l->w[i].zsock == zsock) {
			l->w[i].dead = true;
			l->compact = true;
			return;
		}
	}
}

static void
compact_watches(struct loop *l)
{
	size_t j = 0;

	for (size_t i = 0; i < l->nw; i++)
		if (!l->w[i].dead)
			l->w[j++] = l->w[i];
	l->nw = j;
	l->compact = false;
}

/* Schedule cb in ms milliseconds. */
uint64_t
loop_timer_add(struct loop *l, uint64_t ms, loop_timer_cb *cb, void *arg)
{
	uint64_t id;

	if (l->nt == l->capt) {
		l->capt = l->capt ? l->capt * 2 : 16;
		l->t = xrealloc(l->t, l->capt * sizeof(*l->t));
	}
	id = l->next_id++;

	l->t[l->nt] = (struct timer){ loop_now_ms() + ms, id, cb, arg };
	heap_up(l, l->nt++);
	return id;
}

/* Cancel a pending timer; a fired or unknown id is ignored. */
void
loop_timer_cancel(struct loop *l, uint64_t id)
{
	for (size_t i = 0; i < l->nt; i++) {
		if (l->t[i].id == id) {
			heap_remove(l, i);
			return;
		}
	}
}

static bool
earlier(const struct timer *a, const struct timer *b)
{
	return a->when < b->when || (a->when == b->when && a->id < b->id);
}

static void
heap_up(struct loop *l, size_t i)
{
	struct timer tmp;

	while (i > 0 && earlier(&l->t[i], &l->t[(i - 1) / 2])) {
		tmp = l->t[i];
		l->t[i] = l->t[(i - 1) / 2];
		l->t[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

static void
heap_down(struct loop *l, size_t i)
{
	struct timer tmp;
	size_t c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= l->nt)
			return;
		if (c + 1 < l->nt && earlier(&l->t[c + 1], &l->t[c]))
			c++;
		if (!earlier(&l->t[c], &l->t[i]))
			return;
		tmp = l->t[i];
		l->t[i] = l->t[c];
		l->t[c] = tmp;
		i = c;
	}
}

static void
heap_remove(struct loop *l, size_t i)
{
	l->t[i] = l->t[--l->nt];
	if (i < l->nt) {
		heap_up(l, i);
		heap_down(l, i);
	}
}

static void
run_timers(struct loop *l)
{
	uint64_t now = loop_now_ms(), first_new = l->next_id;
	struct timer t;

	/*
	 * Pop before calling: the callback may add or cancel timers.  Timers
	 * added meanwhile wait for the next iteration, so one that re-arms
	 * itself with 0 ms cannot starve the poll.
	 */
	while (l->nt > 0 && l->t[0].when <= now && l->t[0].id < first_new &&
	    !l->stop) {
		t = l->t[0];
		heap_remove(l, 0);
		note(l, S_TIMER, (void *)t.cb, -1);
		t.cb(l, t.id, t.arg);
	}
}

static void
add_hook(struct hook *h, size_t *n, void *cb, void *arg)
{
	if (*n == MAX_HOOKS)
		fatalx("too many loop hooks");
	h[(*n)++] = (struct hook){ cb, arg };
}

/* Run cb at the start of every iteration. */
void
loop_on_before_poll(struct loop *l, loop_hook_cb *cb, void *arg)
{
	add_hook(l->before, &l->nbefore, (void *)cb, arg);
}

/* Let cb shorten every poll's wait. */
void
loop_on_timeout(struct loop *l, loop_timeout_cb *cb, void *arg)
{
	add_hook(l->tmo, &l->ntmo, (void *)cb, arg);
}

/* Run cb after every poll, whether or not anything was ready. */
void
loop_on_after_poll(struct loop *l, loop_hook_cb *cb, void *arg)
{
	add_hook(l->after, &l->nafter, (void *)cb, arg);
}

static long
poll_timeout(struct loop *l)
{
	long tmo = -1, t;
	uint64_t now;

	if (l->nt > 0) {
		now = loop_now_ms();
		tmo = l->t[0].when > now ? (long)(l->t[0].when - now) : 0;
	}
	for (size_t i = 0; i < l->ntmo; i++) {
		t = ((loop_timeout_cb *)l->tmo[i].cb)(l, l->tmo[i].arg);
		if (t >= 0 && (tmo < 0 || t < tmo))
			tmo = t;
	}
	return tmo;
}

/*
 * Let waits spin up to max_us first (0: never).  Spinning only pays when
 * whoever answers can run meanwhile, so a thread that may use one CPU
 * only never spins.  Returns the cap in force.
 */
unsigned
loop_busy_poll(struct loop *l, unsigned max_us)
{
	cpu_set_t cpus;

	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 &&
	    CPU_COUNT(&cpus) < 2)
		max_us = 0;
	l->spin_max = max_us;
	l->spin = 0;
	return max_us;
}

/* zmq_poll, spinning first while the window is open; see the top. */
static int
wait_events(struct loop *l, size_t n, long tmo)
{
	uint64_t t0, waited;
	int r;

	if (l->spin_max == 0 || tmo == 0)
		return zmq_poll(l->items, (int)n, tmo);
	t0 = now_us();
	if (l->spin > 0) {
		do {
			if ((r = zmq_poll(l->items, (int)n, 0)) != 0)
				return r;	/* the window holds */
			(void)sched_yield();	/* to whoever shares this CPU */
		} while (now_us() - t0 < l->spin);
	}
	r = zmq_poll(l->items, (int)n, tmo);
	waited = now_us() - t0;
	if (r > 0 && waited <= l->spin_max)
		l->spin = l->spin == 0 ? SPIN_MIN_US :
		    l->spin * 2 < l->spin_max ? l->spin * 2 : l->spin_max;
	else
		l->spin = l->spin / 2 >= SPIN_MIN_US ? l->spin / 2 : 0;
	return r;
}

/* The loop proper; returns when loop_stop() was called. */
int
loop_run(struct loop *l)
{
	struct pollsrc *w;
	size_t n;
	long tmo;
	int r, rev;

	l->stop = false;
	while (!l->stop) {
		for (size_t i = 0; i < l->nbefore; i++) {
			note(l, S_BEFORE, l->before[i].cb, -1);
			((loop_hook_cb *)l->before[i].cb)(l,
			    l->before[i].arg);
		}
		if (l->stop)
			break;
		if (l->compact)
			compact_watches(l);
		n = l->nw;
		if (n > l->capitems) {
			l->capitems = l->capw;
			l->items = xrealloc(l->items,
			    l->capitems * sizeof(*l->items));
		}
		for (size_t i = 0; i < n; i++) {
			w = &l->w[i];
			l->items[i] = (zmq_pollitem_t){ .socket = w->zsock,
			    .fd = w->fd < 0 ? 0 : w->fd,
			    .events = (short)(((w->events & LOOP_READ) ?
			    ZMQ_POLLIN : 0) | ((w->events & LOOP_WRITE) ?
			    ZMQ_POLLOUT : 0)) };
		}
		note(l, S_TIMEOUT, NULL, -1);
		tmo = poll_timeout(l);
		note(l, S_POLL, NULL, -1);
		r = wait_events(l, n, tmo);
		if (r < 0 && errno != EINTR) {
			r = -errno;
			note(l, S_IDLE, NULL, -1);
			return r;
		}
		for (size_t i = 0; r > 0 && i < n && !l->stop; i++) {
			w = &l->w[i];
			rev = ((l->items[i].revents & ZMQ_POLLIN) ?
			    LOOP_READ : 0) | ((l->items[i].revents &
			    ZMQ_POLLOUT) ? LOOP_WRITE : 0);
			/* An error wakes whatever the watch waits for. */
			if (l->items[i].revents & ZMQ_POLLERR)
				rev |= w->events;
			if (rev == 0 || w->dead)
				continue;
			note(l, S_FD, (void *)w->cb, w->fd);
			w->cb(l, w->fd, w->zsock, rev, w->arg);
		}
		run_timers(l);
		for (size_t i = 0; i < l->nafter && !l->stop; i++) {
			note(l, S_AFTER, l->after[i].cb, -1);
			((loop_hook_cb *)l->after[i].cb)(l, l->after[i].arg);
		}
	}
	note(l, S_IDLE, NULL, -1);
	return 0;
}

/* Make loop_run() return after the current callback. */
void
loop_stop(struct loop *l)
{
	l->stop = true;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Monotonic milliseconds, for timers and durations. */
uint64_t
loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wall-clock Unix milliseconds, for timestamps on the wire. */
int64_t
loop_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Log a step other than the poll that lasts ms or more (0: none). */
void
loop_watchdog(struct loop *l, unsigned ms)
{
	atomic_store(&l->wd.ms, ms);
}

/* Tell the watchdog which step begins; loop thread, no system call. */
static void
note(struct loop *l, enum step st, void *cb, int fd)
{
	struct wd_note *n = &l->wd.note;

	atomic_store_explicit(&n->step, st, memory_order_relaxed);
	atomic_store_explicit(&n->cb, (uintptr_t)cb, memory_order_relaxed);
	atomic_store_explicit(&n->fd, fd, memory_order_relaxed);
	atomic_fetch_add_explicit(&n->seq, 1, memory_order_release);
}

/* What to do with a signal while stuck; see loop.h. */
void
loop_watchdog_signals(struct loop *l, const sigset_t *sigs,
    loop_stuck_signal_cb *cb, void *arg)
{
	pthread_mutex_lock(&l->wd.mu);
	l->wd.sigs = *sigs;
	l->wd.sig_cb = cb;
	l->wd.sig_arg = arg;
	pthread_mutex_unlock(&l->wd.mu);
}

/*
 * Stuck at now: a signal of wd.sigs pending for the process, still
 * pending LOOP_SIGNAL_WAIT_MS later in the same step, goes to the callback
 * (once; it is not taken from the pending set).  A long step that ends in
 * that time takes the signal itself, in order.  With wd.mu held.
 */
static void
wd_signals(struct loop *l, uint64_t now)
{
	sigset_t pending;
	loop_stuck_signal_cb *cb = l->wd.sig_cb;

	if (cb == NULL || sigpending(&pending) < 0)
		return;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sigismember(&l->wd.sigs, sig) == 1 &&
		    sigismember(&pending, sig) == 1) {
			if (l->wd.sig_seen == 0)
				l->wd.sig_seen = now;
			if (now - l->wd.sig_seen < LOOP_SIGNAL_WAIT_MS)
				return;
			l->wd.sig_cb = NULL;
			pthread_mutex_unlock(&l->wd.mu);
			cb(sig, l->wd.sig_arg);
			pthread_mutex_lock(&l->wd.mu);
			return;
		}
	}
}

/* The longest stall seen; see loop.h. */
uint64_t
loop_worst_stall_ms(struct loop *l)
{
	return atomic_load(&l->wd.worst);
}

/* Start the watchdog thread, with every signal blocked. */
static void
wd_start(struct loop *l)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&l->wd.thread, NULL, wd_main, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		log_warnx("no loop watchdog: %s", strerror(rc));
		return;
	}
	l->wd.running = true;
}

/* Stop the watchdog thread and wait for it; no-op if it is not running. */
static void
wd_stop(struct loop *l)
{
	if (!l->wd.running)
		return;
	pthread_mutex_lock(&l->wd.mu);
	l->wd.stop = true;
	pthread_cond_signal(&l->wd.cv);
	pthread_mutex_unlock(&l->wd.mu);
	pthread_join(l->wd.thread, NULL);
	l->wd.running = false;
}

/*
 * The watchdog thread: four looks per period at what the loop thread
 * noted (one a second while it is off).  A step (not the poll, not
 * outside loop_run()) seen unchanged for the period is logged once; the
 * loop's next step ends the stall.
 */
static void *
wd_main(void *arg)
{
	struct loop *l = arg;
	struct wd_note *n = &l->wd.note;
	unsigned long seq, last = 0;
	uint64_t now, since = 0, tick;
	unsigned ms;
	struct timespec ts;
	uintptr_t cb;
	bool logged = false;
	char fds[32];
	int st, fd;

	pthread_mutex_lock(&l->wd.mu);
	while (!l->wd.stop) {
		ms = atomic_load(&l->wd.ms);
		tick = ms == 0 ? 1000 : ms / 4 > 0 ? ms / 4 : 1;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(tick / 1000);
		ts.tv_nsec += (long)(tick % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&l->wd.cv, &l->wd.mu, &ts);
		if (l->wd.stop)
			break;
		seq = atomic_load_explicit(&n->seq, memory_order_acquire);
		st = atomic_load_explicit(&n->step, memory_order_relaxed);
		cb = atomic_load_explicit(&n->cb, memory_order_relaxed);
		fd = atomic_load_explicit(&n->fd, memory_order_relaxed);
		now = loop_now_ms();
		if (seq != last || st == S_POLL || st == S_IDLE || ms == 0) {
			last = seq;
			since = now;
			l->wd.sig_seen = 0;
			logged = false;
			continue;
		}
		if (now - since > atomic_load(&l->wd.worst))
			atomic_store(&l->wd.worst, now - since);
		if (now - since >= ms)
			wd_signals(l, now);
		if (logged || now - since < ms)
			continue;
		/* Read again: the fields belong to this step, not the next. */
		if (atomic_load_explicit(&n->seq, memory_order_acquire) != seq)
			continue;
		logged = true;
		fds[0] = '\0';
		if (fd >= 0)
			snprintf(fds, sizeof(fds), ", fd %d", fd);
		log_warnx("event loop stuck for over %llu ms in %s "
		    "(callback at +0x%lx in the executable%s): no request "
		    "is answered meanwhile", (unsigned long long)(now - since),
		    step_names[st], (unsigned long)(cb != 0 ? cb -
		    (uintptr_t)__executable_start : 0), fds);
	}
	pthread_mutex_unlock(&l->wd.mu);
	return NULL;
}
