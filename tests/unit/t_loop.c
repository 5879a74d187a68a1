/*
 * t_loop.c -- unit tests for loop.c.
 *
 * Each test builds a loop, arms it with pipes, eventfds, a ZeroMQ pair or
 * timers of a few milliseconds, runs it until a callback stops it and
 * checks what was called, in which order and with which arguments.  Every
 * loop also gets a watchdog timer, so a bug ends a test instead of hanging
 * it.  Times are only checked as lower bounds and generous upper bounds:
 * the tests must hold on a slow, loaded machine.  Covered: timers (order
 * by due time then insertion, cancel, timers added and cancelled from
 * callbacks, a randomised heap run), fd watches (read, write, hang-up,
 * level triggering, replace, delete from a callback, many watches), a
 * ZeroMQ socket, the hooks and their order, loop_stop(), and busy
 * polling (quick events taken without sleeping, a quiet loop that stops
 * spinning, none on one CPU), and the stall watchdog (a slow callback
 * logged once, a long poll never, its thread gone with the loop).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "../../execd/core/loop.h"
#include "../t.h"

#define WATCHDOG_MS	10000	/* far beyond any test's own timers */
#define SLOW_MS		5000	/* "fired promptly", on a loaded machine */
#define MAXREC		512

/* What the callbacks saw. */
struct rec {
	int		 n;		/* entries in ids */
	uint64_t	 ids[MAXREC];
	char		 trace[64];	/* one letter per hook or callback */
	size_t		 ntrace;
	int		 count, count2;
	int		 stop_at;	/* stop the loop when count gets here */
	int		 last_rev;
	int		 last_fd;
	void		*last_zsock;
	uint64_t	 when;		/* loop_now_ms() at the callback */
	uint64_t	 cancel_id;
	int		 fd, fd2;
};

static int	 watchdog_fired;

static void	 watchdog(struct loop *, uint64_t, void *);
static void	 arm(struct loop *);
static void	 put(struct rec *, char);
static int	 efd_new(int);
static void	 efd_read(int);
static uint64_t	 rnd(uint64_t *);
static uint64_t	 add_timers(struct loop *, const uint64_t *, size_t,
		    uint64_t *, struct rec *);
static int	 check_order(const uint64_t *, const uint64_t *,
		    const int *, size_t, const struct rec *, uint64_t);

/* A test ran too long: note it and stop the loop. */
static void
watchdog(struct loop *l, uint64_t id, void *arg)
{
	watchdog_fired = 1;
	loop_stop(l);
}

/* Give l a watchdog and clear the flag. */
static void
arm(struct loop *l)
{
	watchdog_fired = 0;
	loop_timer_add(l, WATCHDOG_MS, watchdog, NULL);
}

/* Append one letter to the trace. */
static void
put(struct rec *r, char c)
{
	if (r->ntrace < sizeof(r->trace) - 1)
		r->trace[r->ntrace++] = c;
	r->trace[r->ntrace] = '\0';
}

/* A non-blocking eventfd holding v (readable when v > 0). */
static int
efd_new(int v)
{
	int fd = eventfd((unsigned)v, EFD_NONBLOCK | EFD_CLOEXEC);

	if (fd < 0) {
		perror("eventfd");
		exit(1);
	}
	return fd;
}

/* Empty an eventfd. */
static void
efd_read(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		T_OK(!"eventfd read");
}

/* A fixed-seed xorshift generator, so failures reproduce. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Timer callback: record the id; stop when count reaches stop_at. */
static void
on_timer(struct loop *l, uint64_t id, void *arg)
{
	struct rec *r = arg;

	if (r->n < MAXREC)
		r->ids[r->n++] = id;
	r->when = loop_now_ms();
	put(r, 'X');
	if (++r->count == r->stop_at)
		loop_stop(l);
}

/* Timer callback: just stop. */
static void
on_timer_stop(struct loop *l, uint64_t id, void *arg)
{
	struct rec *r = arg;

	if (r != NULL)
		r->count2++;
	loop_stop(l);
}

/* Fd callback: record, read the eventfd or pipe, maybe stop. */
static void
on_fd(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	struct rec *r = arg;
	char buf[64];

	r->last_rev = rev;
	r->last_fd = fd;
	r->last_zsock = zsock;
	if (rev & LOOP_READ)
		(void)!read(fd, buf, sizeof(buf));
	if (++r->count == r->stop_at)
		loop_stop(l);
}

/* Fd callback that reads nothing: level triggering calls it again. */
static void
on_fd_noread(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	struct rec *r = arg;

	r->last_rev = rev;
	if (++r->count == r->stop_at)
		loop_stop(l);
}

/* A loop can be made and freed; freeing NULL is fine. */
static void
test_new_free(void)
{
	struct loop *l = loop_new();

	T_OK(l != NULL);
	loop_free(l);
	loop_free(NULL);
	/* Freed with watches and timers still pending. */
	l = loop_new();
	loop_timer_add(l, 1000, on_timer_stop, NULL);
	T_EQ_INT(loop_add_fd(l, 0, LOOP_READ, on_fd, NULL), 0);
	loop_free(l);
}

/* The monotonic clock never goes back; the wall clock is near time(). */
static void
test_clocks(void)
{
	uint64_t prev = loop_now_ms(), now;
	int64_t wall = loop_wall_ms(), t = (int64_t)time(NULL) * 1000;
	int back = 0;

	for (int i = 0; i < 10000; i++) {
		now = loop_now_ms();
		back += now < prev;
		prev = now;
	}
	T_EQ_INT(back, 0);
	T_OK(wall > INT64_C(1600000000000));
	T_OK(wall > t - SLOW_MS && wall < t + SLOW_MS);
}

/* A timer fires once, not early, with its id and argument. */
static void
test_timer_fires(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 1 };
	uint64_t id, t0;

	arm(l);
	t0 = loop_now_ms();
	id = loop_timer_add(l, 20, on_timer, &r);
	T_OK(id != 0);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, 1);
	T_EQ_INT(r.ids[0], id);
	T_OK(r.when >= t0 + 20);
	T_OK(r.when < t0 + SLOW_MS);
	loop_free(l);
}

/*
 * Add timers with the given delays, ids in ids[].  Each is due at the
 * time of its adding plus its delay; the return value is how many
 * milliseconds the adding spanned.  It is retried a few times to get 0,
 * so that the due times are exactly base + delay, but a slow machine (or
 * valgrind) may not allow that: check_order() then allows for the spread.
 */
static uint64_t
add_timers(struct loop *l, const uint64_t *ms, size_t n, uint64_t *ids,
    struct rec *r)
{
	uint64_t t0 = 0, t1 = 0;

	for (int tries = 0; tries < 20; tries++) {
		if (tries > 0)
			for (size_t i = 0; i < n; i++)
				loop_timer_cancel(l, ids[i]);
		t0 = loop_now_ms();
		for (size_t i = 0; i < n; i++)
			ids[i] = loop_timer_add(l, ms[i], on_timer, r);
		t1 = loop_now_ms();
		if (t0 == t1)
			break;
	}
	return t1 - t0;
}

/*
 * The timers of ids[] that are not gone fired exactly once each, in an
 * order their due times allow: by delay, give or take spread ms, and in
 * insertion order for equal delays.  Returns the number of faults.
 */
static int
check_order(const uint64_t *ms, const uint64_t *ids, const int *gone,
    size_t n, const struct rec *r, uint64_t spread)
{
	static size_t pos[MAXREC];
	int bad = 0, live = 0;

	for (size_t i = 0; i < n; i++) {
		pos[i] = SIZE_MAX;
		for (int k = 0; k < r->n; k++)
			if (r->ids[k] == ids[i])
				pos[i] = pos[i] == SIZE_MAX ? (size_t)k :
				    SIZE_MAX - 1;
		if (gone != NULL && gone[i]) {
			bad += pos[i] != SIZE_MAX;
			continue;
		}
		live++;
		bad += pos[i] >= SIZE_MAX - 1;
	}
	bad += r->n != live;
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < n; j++) {
			if (pos[i] >= SIZE_MAX - 1 || pos[j] >= SIZE_MAX - 1 ||
			    pos[i] >= pos[j])
				continue;
			/* i fired before j. */
			if (ms[i] > ms[j] + spread ||
			    (ms[i] == ms[j] && i > j)) {
				if (bad++ < 5)
					fprintf(stderr, "  timer %zu (%ju ms) "
					    "before %zu (%ju ms)\n", i,
					    (uintmax_t)ms[i], j,
					    (uintmax_t)ms[j]);
			}
		}
	}
	return bad;
}

/* Timers fire by due time, then in the order they were added. */
static void
test_timer_order(void)
{
	static const uint64_t ms[] = { 30, 10, 20, 0, 10, 0, 30 };
	static const size_t want[] = { 3, 5, 1, 4, 2, 0, 6 };
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 7 };
	uint64_t ids[7], spread;

	arm(l);
	spread = add_timers(l, ms, 7, ids, &r);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.n, 7);
	T_EQ_INT(check_order(ms, ids, NULL, 7, &r, spread), 0);
	for (int i = 0; spread == 0 && i < 7 && i < r.n; i++)
		T_EQ_INT(r.ids[i], ids[want[i]]);
	for (size_t i = 0; i < 7; i++)
		for (size_t j = i + 1; j < 7; j++)
			T_OK(ids[i] != ids[j]);
	loop_free(l);
}

/* Many timers, a third of them cancelled: the heap keeps its order. */
static void
test_timer_heap_random(void)
{
	enum { N = 300 };
	struct loop *l = loop_new();
	static struct rec r;
	static uint64_t ms[N], ids[N];
	static int gone[N];
	uint64_t seed = 0x2545f4914f6cdd1dULL, spread;
	int live = 0;

	memset(&r, 0, sizeof(r));
	for (int i = 0; i < N; i++)
		ms[i] = rnd(&seed) % 16;
	arm(l);
	spread = add_timers(l, ms, N, ids, &r);
	for (int i = 0; i < N; i++) {
		gone[i] = rnd(&seed) % 3 == 0;
		if (gone[i])
			loop_timer_cancel(l, ids[i]);
		else
			live++;
	}
	r.stop_at = live;
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.n, live);
	T_EQ_INT(check_order(ms, ids, gone, N, &r, spread), 0);
	loop_free(l);
}

/* Cancel: pending, twice, unknown, fired; nothing else is disturbed. */
static void
test_timer_cancel(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 2 };
	uint64_t a, b, c;

	arm(l);
	a = loop_timer_add(l, 1, on_timer, &r);
	b = loop_timer_add(l, 2, on_timer, &r);
	c = loop_timer_add(l, 3, on_timer, &r);
	loop_timer_cancel(l, b);
	loop_timer_cancel(l, b);
	loop_timer_cancel(l, 0);
	loop_timer_cancel(l, 123456789);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.n, 2);
	T_EQ_INT(r.ids[0], a);
	T_EQ_INT(r.ids[1], c);
	loop_timer_cancel(l, a);	/* fired already: ignored */
	r.stop_at = 3;
	loop_timer_add(l, 0, on_timer, &r);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(r.n, 3);
	loop_free(l);
}

/* Timer callback: cancel r->cancel_id, then count. */
static void
on_timer_cancel(struct loop *l, uint64_t id, void *arg)
{
	struct rec *r = arg;

	loop_timer_cancel(l, r->cancel_id);
	loop_timer_cancel(l, id);	/* itself: already gone */
	put(r, 'C');
}

/* A callback cancels a timer that is due in the same iteration. */
static void
test_timer_cancel_from_cb(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 1 };
	uint64_t last;

	arm(l);
	/* The first cancels the second; the third stops the loop. */
	loop_timer_add(l, 0, on_timer_cancel, &r);
	r.cancel_id = loop_timer_add(l, 0, on_timer, &r);
	last = loop_timer_add(l, 1, on_timer, &r);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_STR(r.trace, "CX");
	T_EQ_INT(r.n, 1);
	T_EQ_INT(r.ids[0], last);
	loop_free(l);
}

/* Timer callback: re-arm itself count times, alternately 0 and 1 ms. */
static void
on_timer_chain(struct loop *l, uint64_t id, void *arg)
{
	struct rec *r = arg;

	if (r->n < MAXREC)
		r->ids[r->n++] = id;
	if (++r->count == r->stop_at)
		loop_stop(l);
	else
		loop_timer_add(l, (uint64_t)r->count % 2, on_timer_chain, r);
}

/* Timers added from timer callbacks fire, each with a fresh id. */
static void
test_timer_from_cb(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 50 };
	int dup = 0;

	arm(l);
	loop_timer_add(l, 0, on_timer_chain, &r);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, 50);
	for (int i = 1; i < r.n; i++)
		dup += r.ids[i] <= r.ids[i - 1];
	T_EQ_INT(dup, 0);
	loop_free(l);
}

/* A readable fd: data there before the run, then data written later. */
static void
test_fd_read(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 1 };
	int p[2];

	T_EQ_INT(pipe(p), 0);
	arm(l);
	T_EQ_INT(write(p[1], "x", 1), 1);
	T_EQ_INT(loop_add_fd(l, p[0], LOOP_READ, on_fd, &r), 0);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, 1);
	T_EQ_INT(r.last_rev, LOOP_READ);
	T_EQ_INT(r.last_fd, p[0]);
	T_OK(r.last_zsock == NULL);
	loop_free(l);
	close(p[0]);
	close(p[1]);
}

/* Timer callback: write one byte to r->fd. */
static void
on_timer_write(struct loop *l, uint64_t id, void *arg)
{
	struct rec *r = arg;

	T_EQ_INT(write(r->fd, "y", 1), 1);
	put(r, 'W');
}

/* Fd callback for test_fd_wakeup: note it and stop. */
static void
on_fd_trace(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	struct rec *r = arg;
	char c;

	(void)!read(fd, &c, 1);
	put(r, 'R');
	loop_stop(l);
}

/* The poll wakes up for data that arrives while it waits. */
static void
test_fd_wakeup(void)
{
	struct loop *l = loop_new();
	struct rec r = { 0 };
	int p[2];

	T_EQ_INT(pipe(p), 0);
	r.fd = p[1];
	arm(l);
	T_EQ_INT(loop_add_fd(l, p[0], LOOP_READ, on_fd_trace, &r), 0);
	loop_timer_add(l, 5, on_timer_write, &r);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_STR(r.trace, "WR");
	loop_free(l);
	close(p[0]);
	close(p[1]);
}

/* A writable fd reports LOOP_WRITE only. */
static void
test_fd_write(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 1 };
	int p[2];

	T_EQ_INT(pipe(p), 0);
	arm(l);
	T_EQ_INT(loop_add_fd(l, p[1], LOOP_WRITE, on_fd_noread, &r), 0);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, 1);
	T_EQ_INT(r.last_rev, LOOP_WRITE);
	loop_free(l);
	close(p[0]);
	close(p[1]);
}

/* The writer is gone: a read watch is told to read (and reads EOF). */
static void
test_fd_hangup(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 1 };
	int p[2];
	char c;

	T_EQ_INT(pipe(p), 0);
	close(p[1]);
	arm(l);
	T_EQ_INT(loop_add_fd(l, p[0], LOOP_READ, on_fd_noread, &r), 0);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, 1);
	T_OK(r.last_rev & LOOP_READ);
	T_EQ_INT(read(p[0], &c, 1), 0);
	loop_free(l);
	close(p[0]);
}

/* Level-triggered: an fd left readable is reported again and again. */
static void
test_fd_level(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 5 };
	int fd = efd_new(1);

	arm(l);
	T_EQ_INT(loop_add_fd(l, fd, LOOP_READ, on_fd_noread, &r), 0);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, 5);
	T_EQ_INT(r.last_rev, LOOP_READ);
	loop_free(l);
	close(fd);
}

/* Fd callback: count, then delete its own watch. */
static void
on_fd_del_self(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	struct rec *r = arg;

	r->count++;
	loop_del(l, fd, NULL);
}

/* A watch deleted from its own callback is not called again. */
static void
test_del_self(void)
{
	struct loop *l = loop_new();
	struct rec r = { 0 };
	int fd = efd_new(1);

	arm(l);
	T_EQ_INT(loop_add_fd(l, fd, LOOP_READ, on_fd_del_self, &r), 0);
	loop_timer_add(l, 30, on_timer_stop, &r);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, 1);	/* still readable, but no longer watched */
	T_EQ_INT(r.count2, 1);
	loop_free(l);
	close(fd);
}

/* Fd callback: count, read, and delete the watch on r->fd2. */
static void
on_fd_del_other(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	struct rec *r = arg;

	if (fd == r->fd) {
		r->count++;
		efd_read(fd);
		loop_del(l, r->fd2, NULL);
	} else {
		r->count2++;
		efd_read(fd);
	}
}

/* A watch deleted by another's callback in the same round is skipped. */
static void
test_del_other(void)
{
	struct loop *l = loop_new();
	struct rec r = { 0 }, s = { 0 };

	r.fd = efd_new(1);
	r.fd2 = efd_new(1);
	arm(l);
	T_EQ_INT(loop_add_fd(l, r.fd, LOOP_READ, on_fd_del_other, &r), 0);
	T_EQ_INT(loop_add_fd(l, r.fd2, LOOP_READ, on_fd_del_other, &r), 0);
	loop_timer_add(l, 30, on_timer_stop, &s);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, 1);
	T_EQ_INT(r.count2, 0);
	T_EQ_INT(s.count2, 1);
	loop_free(l);
	close(r.fd);
	close(r.fd2);
}

/* Fd callback: put 'A' and stop. */
static void
on_fd_a(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	put(arg, 'A');
	loop_stop(l);
}

/* Fd callback: put 'B' and stop. */
static void
on_fd_b(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	put(arg, 'B');
	loop_stop(l);
}

/* Adding a watch for a watched fd replaces its callback and events. */
static void
test_replace(void)
{
	struct loop *l = loop_new();
	struct rec r = { 0 }, s = { .stop_at = 1 };
	int p[2];

	T_EQ_INT(pipe(p), 0);
	arm(l);
	T_EQ_INT(loop_add_fd(l, p[0], LOOP_READ, on_fd_a, &r), 0);
	T_EQ_INT(loop_add_fd(l, p[0], LOOP_READ, on_fd_b, &r), 0);
	T_EQ_INT(write(p[1], "z", 1), 1);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_STR(r.trace, "B");
	/* Events replaced too: read watch on the write end becomes write. */
	T_EQ_INT(loop_add_fd(l, p[1], LOOP_READ, on_fd_noread, &s), 0);
	T_EQ_INT(loop_add_fd(l, p[1], LOOP_WRITE, on_fd_noread, &s), 0);
	loop_del(l, p[0], NULL);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(s.count, 1);
	T_EQ_INT(s.last_rev, LOOP_WRITE);
	loop_free(l);
	close(p[0]);
	close(p[1]);
}

/* Fd callback: delete own watch and watch the same fd with on_fd_b. */
static void
on_fd_readd(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	put(arg, 'a');
	loop_del(l, fd, NULL);
	T_EQ_INT(loop_add_fd(l, fd, LOOP_READ, on_fd_b, arg), 0);
}

/* Delete and re-add within one callback: the new watch takes over. */
static void
test_readd_in_cb(void)
{
	struct loop *l = loop_new();
	struct rec r = { 0 };
	int fd = efd_new(1);

	arm(l);
	T_EQ_INT(loop_add_fd(l, fd, LOOP_READ, on_fd_readd, &r), 0);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_STR(r.trace, "aB");
	loop_free(l);
	close(fd);
}

/* Fd callback: read, delete own watch, stop after r->stop_at. */
static void
on_fd_once(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	struct rec *r = arg;

	efd_read(fd);
	loop_del(l, fd, NULL);
	if (r->n < MAXREC)
		r->ids[r->n++] = (uint64_t)fd;
	if (++r->count == r->stop_at)
		loop_stop(l);
}

/* More watches than the initial arrays hold; each called exactly once. */
static void
test_many_watches(void)
{
	enum { N = 100 };
	struct loop *l = loop_new();
	static struct rec r;
	int fds[N], seen[N], bad = 0;

	memset(&r, 0, sizeof(r));
	r.stop_at = N;
	arm(l);
	for (int i = 0; i < N; i++) {
		/* Half readable now; the rest become readable below. */
		fds[i] = efd_new(i % 2);
		T_EQ_INT(loop_add_fd(l, fds[i], LOOP_READ, on_fd_once, &r),
		    0);
	}
	for (int i = 0; i < N; i += 2) {
		uint64_t one = 1;

		T_EQ_INT(write(fds[i], &one, sizeof(one)), sizeof(one));
	}
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, N);
	memset(seen, 0, sizeof(seen));
	for (int k = 0; k < r.n; k++)
		for (int i = 0; i < N; i++)
			if ((uint64_t)fds[i] == r.ids[k])
				seen[i]++;
	for (int i = 0; i < N; i++)
		bad += seen[i] != 1;
	T_EQ_INT(bad, 0);
	loop_free(l);
	for (int i = 0; i < N; i++)
		close(fds[i]);
}

/* Bad arguments are refused; deleting what is not watched is a no-op. */
static void
test_add_errors(void)
{
	struct loop *l = loop_new();
	int dummy;

	T_EQ_INT(loop_add_fd(l, -1, LOOP_READ, on_fd, NULL), -EBADF);
	T_EQ_INT(loop_add_zsock(l, NULL, LOOP_READ, on_fd, NULL), -EINVAL);
	loop_del(l, 12345, NULL);
	loop_del(l, -1, &dummy);
	loop_free(l);
}

/* A ZeroMQ socket is watched like an fd, reported with fd -1. */
static void
test_zsock(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 1 };
	void *ctx = zmq_ctx_new(), *a, *b;
	char buf[8] = "";

	a = zmq_socket(ctx, ZMQ_PAIR);
	b = zmq_socket(ctx, ZMQ_PAIR);
	T_OK(a != NULL && b != NULL);
	T_EQ_INT(zmq_bind(b, "inproc://t_loop"), 0);
	T_EQ_INT(zmq_connect(a, "inproc://t_loop"), 0);
	arm(l);
	T_EQ_INT(loop_add_zsock(l, b, LOOP_READ, on_fd_noread, &r), 0);
	loop_timer_add(l, 5, on_timer_stop, NULL);
	/* Nothing to read yet: the 5 ms timer ends the first run. */
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(r.count, 0);
	T_EQ_INT(zmq_send(a, "hi", 2, 0), 2);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, 1);
	T_EQ_INT(r.last_rev, LOOP_READ);
	T_EQ_INT(zmq_recv(b, buf, sizeof(buf), ZMQ_DONTWAIT), 2);
	T_EQ_STR(buf, "hi");
	loop_del(l, -1, b);
	loop_free(l);
	zmq_close(a);
	zmq_close(b);
	zmq_ctx_term(ctx);
}

/* Hooks: trace 'b'efore, 't'imeout, 'a'fter; stop on the second after. */
static void
hook_before(struct loop *l, void *arg)
{
	put(arg, 'b');
}

static long
hook_timeout(struct loop *l, void *arg)
{
	put(arg, 't');
	return 0;
}

static void
hook_after(struct loop *l, void *arg)
{
	struct rec *r = arg;

	put(r, 'a');
	if (++r->count2 == 2)
		loop_stop(l);
}

/* Per iteration: before, timeout, poll, callbacks, timers, after. */
static void
test_hooks_order(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = -1 };
	int fd = efd_new(1);

	loop_on_before_poll(l, hook_before, &r);
	loop_on_timeout(l, hook_timeout, &r);
	loop_on_after_poll(l, hook_after, &r);
	arm(l);
	T_EQ_INT(loop_add_fd(l, fd, LOOP_READ, on_fd_del_self, &r), 0);
	loop_timer_add(l, 0, on_timer, &r);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	/* on_fd_del_self counts without a letter; the timer puts 'X'. */
	T_EQ_STR(r.trace, "btXabta");
	T_EQ_INT(r.count, 2);
	loop_free(l);
	close(fd);
}

/* Timeout hook: a long wait; timers still fire at their time. */
static long
hook_timeout_long(struct loop *l, void *arg)
{
	struct rec *r = arg;

	r->count2++;
	return r->count2 % 2 ? 60000 : -1;
}

/* The shortest wait wins: a hook's long limit does not delay timers. */
static void
test_timeout_hook_min(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 3 };
	uint64_t t0 = loop_now_ms();

	loop_on_timeout(l, hook_timeout_long, &r);
	arm(l);
	loop_timer_add(l, 2, on_timer, &r);
	loop_timer_add(l, 4, on_timer, &r);
	loop_timer_add(l, 6, on_timer, &r);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(r.count, 3);
	T_OK(loop_now_ms() - t0 < SLOW_MS);
	loop_free(l);
}

/* Timeout hook with a short wait: after hook counts the wake-ups. */
static long
hook_timeout_short(struct loop *l, void *arg)
{
	return 1;
}

static void
hook_after_count(struct loop *l, void *arg)
{
	struct rec *r = arg;

	if (++r->count == r->stop_at)
		loop_stop(l);
}

/* A hook's wait alone keeps the loop turning, with nothing watched. */
static void
test_timeout_hook_wakes(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 5 };
	uint64_t t0 = loop_now_ms();

	loop_on_timeout(l, hook_timeout_short, &r);
	loop_on_after_poll(l, hook_after_count, &r);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(r.count, 5);
	T_OK(loop_now_ms() - t0 < SLOW_MS);
	loop_free(l);
}

/* Before hook that stops the loop at once. */
static void
hook_before_stop(struct loop *l, void *arg)
{
	struct rec *r = arg;

	r->count2++;
	loop_stop(l);
}

/* Stopped from a before hook: no poll, no callbacks, no after hooks. */
static void
test_stop_in_before_hook(void)
{
	struct loop *l = loop_new();
	struct rec r = { 0 };
	int fd = efd_new(1);

	loop_on_before_poll(l, hook_before_stop, &r);
	loop_on_after_poll(l, hook_after_count, &r);
	T_EQ_INT(loop_add_fd(l, fd, LOOP_READ, on_fd, &r), 0);
	loop_timer_add(l, 0, on_timer, &r);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(r.count2, 1);
	T_EQ_INT(r.count, 0);
	T_EQ_INT(r.n, 0);
	T_EQ_INT(loop_run(l), 0);	/* and again */
	T_EQ_INT(r.count2, 2);
	T_EQ_INT(r.count, 0);
	loop_free(l);
	close(fd);
}

/* Fd callback: read; the first fd's callback stops the loop. */
static void
on_fd_first_stops(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	struct rec *r = arg;

	efd_read(fd);
	if (fd == r->fd) {
		put(r, '1');
		loop_stop(l);
	} else {
		put(r, '2');
	}
}

/* Stopped in a callback: the rest waits for the next loop_run(). */
static void
test_stop_skips_rest(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 1 }, h = { .stop_at = -1 };

	r.fd = efd_new(1);
	r.fd2 = efd_new(1);
	arm(l);
	T_EQ_INT(loop_add_fd(l, r.fd, LOOP_READ, on_fd_first_stops, &r), 0);
	T_EQ_INT(loop_add_fd(l, r.fd2, LOOP_READ, on_fd_first_stops, &r),
	    0);
	loop_timer_add(l, 0, on_timer, &r);
	loop_on_after_poll(l, hook_after_count, &h);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_STR(r.trace, "1");
	T_EQ_INT(h.count, 0);
	/* The second run delivers what the first one left. */
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_STR(r.trace, "12X");
	T_EQ_INT(h.count, 0);	/* the timer stopped before the after hook */
	loop_free(l);
	close(r.fd);
	close(r.fd2);
}

/*
 * Busy polling.  A timerfd stands for the answer to a request: each tick
 * is taken and the next armed TICK_US ahead, so every wait ends soon
 * after it began, whoever else runs on the machine.
 */
#define TICK_N		200
#define TICK_WARM	50
#define TICK_US		200
#define SPIN_CAP_US	2000

struct ticks {
	int		 fd;
	int		 count;
	long		 nvcsw0;		/* sleeps before the measured part */
	long		 nvcsw;			/* ... and during it */
};

static long
thread_sleeps(void)
{
	struct rusage ru;

	T_EQ_INT(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_nvcsw;
}

static void
tick_arm(int fd)
{
	struct itimerspec its = { .it_value = { 0, TICK_US * 1000 } };

	T_EQ_INT(timerfd_settime(fd, 0, &its, NULL), 0);
}

static void
on_tick(struct loop *l, int fd, void *zsock, int rev, void *arg)
{
	struct ticks *k = arg;
	uint64_t v;

	(void)!read(fd, &v, sizeof(v));
	if (++k->count == TICK_WARM)
		k->nvcsw0 = thread_sleeps();
	if (k->count == TICK_WARM + TICK_N) {
		k->nvcsw = thread_sleeps() - k->nvcsw0;
		loop_stop(l);
		return;
	}
	tick_arm(fd);
}

/* How often the loop slept for TICK_N ticks, busy polling up to cap_us;
 * then what 200 quiet ms cost it in CPU time. */
static long
tick_sleeps(unsigned cap_us, double *quiet_ms)
{
	struct loop *l = loop_new();
	struct ticks k = { .count = 0 };
	struct timespec a, b;

	k.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	T_OK(k.fd >= 0);
	loop_busy_poll(l, cap_us);
	arm(l);
	T_EQ_INT(loop_add_fd(l, k.fd, LOOP_READ, on_tick, &k), 0);
	tick_arm(k.fd);
	T_EQ_INT(loop_run(l), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(k.count, TICK_WARM + TICK_N);
	loop_del(l, k.fd, NULL);
	loop_timer_add(l, 200, on_timer_stop, NULL);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	T_EQ_INT(loop_run(l), 0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	*quiet_ms = (double)(b.tv_sec - a.tv_sec) * 1e3 +
	    (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	loop_free(l);
	close(k.fd);
	return k.nvcsw;
}

/*
 * With busy polling, events that come soon are taken without the loop
 * sleeping; without it, it sleeps for most of them.  A quiet loop soon
 * stops spinning: 200 ms of waiting cost a small part of that in CPU.
 */
static void
test_busy_poll_takes_quick_events(void)
{
	struct loop *l = loop_new();
	cpu_set_t cpus;
	long spun, slept;
	double quiet_spun, quiet_slept;

	T_EQ_INT(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	if (loop_busy_poll(l, SPIN_CAP_US) == 0) {
		T_EQ_INT(CPU_COUNT(&cpus), 1);	/* off only there */
		loop_free(l);
		return;
	}
	loop_free(l);
	spun = tick_sleeps(SPIN_CAP_US, &quiet_spun);
	slept = tick_sleeps(0, &quiet_slept);
	T_OK(spun < TICK_N / 2);
	T_OK(slept > TICK_N / 2);
	T_OK(quiet_spun < 50);
	if (t_fail_)
		fprintf(stderr, "sleeps in %d ticks: %ld busy polling, %ld "
		    "not; CPU in 200 quiet ms: %.1f ms and %.1f ms\n", TICK_N,
		    spun, slept, quiet_spun, quiet_slept);
}

/* A loop confined to one CPU never spins. */
static void
test_busy_poll_off_on_one_cpu(void)
{
	struct loop *l = loop_new();
	cpu_set_t all, one;

	T_EQ_INT(sched_getaffinity(0, sizeof(all), &all), 0);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	T_EQ_INT(sched_setaffinity(0, sizeof(one), &one), 0);
	T_EQ_INT(loop_busy_poll(l, SPIN_CAP_US), 0);
	T_EQ_INT(sched_setaffinity(0, sizeof(all), &all), 0);
	T_EQ_INT(loop_busy_poll(l, 0), 0);
	loop_free(l);
}

static void	test_watchdog_logs_a_stall_once(void);
static void	test_watchdog_quiet_while_polling(void);
static void	test_watchdog_takes_a_signal_while_stuck(void);

static const struct t_case cases[] = {
	{ "new and free", test_new_free },
	{ "clocks", test_clocks },
	{ "timer fires", test_timer_fires },
	{ "timer order", test_timer_order },
	{ "timer heap random", test_timer_heap_random },
	{ "timer cancel", test_timer_cancel },
	{ "timer cancel from callback", test_timer_cancel_from_cb },
	{ "timer from callback", test_timer_from_cb },
	{ "fd read", test_fd_read },
	{ "fd wakeup", test_fd_wakeup },
	{ "fd write", test_fd_write },
	{ "fd hangup", test_fd_hangup },
	{ "fd level triggered", test_fd_level },
	{ "delete self", test_del_self },
	{ "delete other", test_del_other },
	{ "replace watch", test_replace },
	{ "re-add in callback", test_readd_in_cb },
	{ "many watches", test_many_watches },
	{ "add errors", test_add_errors },
	{ "zmq socket", test_zsock },
	{ "hooks order", test_hooks_order },
	{ "timeout hook min", test_timeout_hook_min },
	{ "timeout hook wakes", test_timeout_hook_wakes },
	{ "stop in before hook", test_stop_in_before_hook },
	{ "stop skips rest", test_stop_skips_rest },
	{ "busy poll takes quick events", test_busy_poll_takes_quick_events },
	{ "busy poll off on one CPU", test_busy_poll_off_on_one_cpu },
	{ "watchdog logs a stall once", test_watchdog_logs_a_stall_once },
	{ "watchdog quiet while polling", test_watchdog_quiet_while_polling },
	{ "watchdog takes a signal the stuck loop cannot",
	    test_watchdog_takes_a_signal_while_stuck },
};

/* Threads of this process. */
static int
threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Run l with stderr in a temporary file; what was logged, in out. */
static int
run_logged(struct loop *l, char *out, size_t len)
{
	FILE *f = tmpfile();
	int saved, rc;
	size_t n;

	if (f == NULL || (saved = dup(STDERR_FILENO)) < 0)
		return -1;
	dup2(fileno(f), STDERR_FILENO);
	rc = loop_run(l);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	fclose(f);
	return rc;
}

/* How many times needle occurs in hay. */
static int
occurs(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* A callback that holds the loop thread, as a blocking read would. */
static void
on_slow(struct loop *l, uint64_t id, void *arg)
{
	struct timespec ts = { 1, 500000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	loop_stop(l);
}

/* A callback of 1.5 s under a 100 ms watchdog: one line, naming it. */
static void
test_watchdog_logs_a_stall_once(void)
{
	struct loop *l = loop_new();
	char log[8192];
	int before = threads();

	arm(l);
	loop_watchdog(l, 100);
	T_EQ_INT(loop_worst_stall_ms(l), 0);
	loop_timer_add(l, 1, on_slow, NULL);
	T_EQ_INT(run_logged(l, log, sizeof(log)), 0);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(occurs(log, "event loop stuck"), 1);
	T_OK(strstr(log, "a timer's callback") != NULL);
	/*
	 * Seen every 25 ms: 1.5 s less a tick or two, more on a loaded
	 * machine whose watchdog wakes late; never much more than 1.5 s.
	 */
	T_OK(loop_worst_stall_ms(l) >= 750);
	T_OK(loop_worst_stall_ms(l) <= 2000);
	loop_free(l);
	T_EQ_INT(threads(), before - 1);	/* the watchdog's thread ends */
}

/* A loop that waits 600 ms in its poll is not stuck. */
static void
test_watchdog_quiet_while_polling(void)
{
	struct loop *l = loop_new();
	struct rec r = { .stop_at = 1 };
	char log[8192];

	arm(l);
	loop_watchdog(l, 100);
	loop_timer_add(l, 600, on_timer, &r);
	T_EQ_INT(run_logged(l, log, sizeof(log)), 0);
	T_EQ_INT(r.count, 1);
	T_EQ_INT(occurs(log, "event loop stuck"), 0);
	T_EQ_INT(loop_worst_stall_ms(l), 0);
	loop_free(l);
}

/*
 * The stuck loop's process: the watchdog's callback says so and ends it
 * (by SIGKILL: an exit would have valgrind, when the suite runs under it,
 * check the forked copy's memory for leaks and change its status).
 */
static int	 stuck_pipe = -1;

static void
on_stuck_signal(int sig, void *arg)
{
	char c = sig == SIGTERM ? 'T' : '?';

	(void)!write(stuck_pipe, &c, 1);
	raise(SIGKILL);
}

static void
on_very_slow(struct loop *l, uint64_t id, void *arg)
{
	struct timespec ts = { 30, 0 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	_exit(3);	/* the signal was never taken */
}

/*
 * A process whose loop is held by a 30 s callback gets SIGTERM (blocked,
 * as execd blocks it for its signalfd): the watchdog hands it to the
 * callback, which exits, long before the callback would have returned.
 */
static void
test_watchdog_takes_a_signal_while_stuck(void)
{
	int fds[2], st = 0, done = 0;
	struct timespec ts = { 0, 20 * 1000000 };
	char c = 0;
	pid_t pid;

	sigset_t set, old;

	T_EQ_INT(pipe(fds), 0);
	/* Blocked from the start: the child is never killed by it. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, &old);
	fflush(stdout);
	fflush(stderr);
	if ((pid = fork()) == 0) {
		struct loop *l;

		close(fds[0]);
		stuck_pipe = fds[1];
		l = loop_new();
		loop_watchdog(l, 100);
		loop_watchdog_signals(l, &set, on_stuck_signal, NULL);
		loop_timer_add(l, 1, on_very_slow, NULL);
		c = 'R';
		(void)!write(stuck_pipe, &c, 1);
		loop_run(l);
		_exit(4);	/* the signal was never taken */
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	T_OK(pid > 0);
	close(fds[1]);
	T_EQ_INT(read(fds[0], &c, 1), 1);	/* its loop is about to run */
	T_EQ_INT(c, 'R');
	/* Stuck for a while first, however slow the machine. */
	ts.tv_nsec = 400 * 1000000;
	nanosleep(&ts, NULL);
	T_EQ_INT(kill(pid, SIGTERM), 0);
	ts.tv_nsec = 20 * 1000000;
	for (int i = 0; i < 1000 && (done = waitpid(pid, &st, WNOHANG)) ==
	    0; i++)
		nanosleep(&ts, NULL);	/* 20 s at most; 30 s is the callback */
	if (done == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		T_OK(!"the stuck process did not end");
	}
	T_OK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	T_EQ_INT(read(fds[0], &c, 1), 1);
	T_EQ_INT(c, 'T');
	close(fds[0]);
}

int
main(void)
{
	return T_RUN(cases);
}
