/*
 * loop.h -- the one event loop, Redis-ae style, over zmq_poll(3).
 *
 * zmq_poll is level-triggered for plain fds and ZeroMQ sockets alike, so
 * kernel sockets, pipes, the signalfd and libmicrohttpd's epoll fd are all
 * watched the same way.  Timers live in a min-heap.  Everything here runs on
 * the loop thread, and every callback is called from it.
 */
#ifndef EXECD_LOOP_H
#define EXECD_LOOP_H

#include <signal.h>
#include <stdint.h>

#define LOOP_READ	1
#define LOOP_WRITE	2

struct loop;

/* fd is -1 for a ZeroMQ socket; revents is LOOP_READ|LOOP_WRITE. */
typedef void loop_fd_cb(struct loop *, int fd, void *zsock, int revents,
    void *arg);
/* Called once when the timer is due; the timer is gone by then. */
typedef void loop_timer_cb(struct loop *, uint64_t id, void *arg);
/* Called at the start of every iteration, before polling. */
typedef void loop_hook_cb(struct loop *, void *arg);

struct loop	*loop_new(void);
void		 loop_free(struct loop *);	/* NULL ok; closes nothing */

/*
 * Watch fd (or the ZeroMQ socket zsock, with fd -1) for events.  One watch
 * per fd or socket; adding it again replaces the watch.  0 or -errno.
 * A watch may be deleted from inside any callback, its own included.
 */
int	 loop_add_fd(struct loop *, int fd, int events, loop_fd_cb *, void *);
int	 loop_add_zsock(struct loop *, void *zsock, int events, loop_fd_cb *,
	    void *);
void	 loop_del(struct loop *, int fd_or_minus1, void *zsock_or_null);

/* Call cb once, ms milliseconds from now.  Returns a nonzero id. */
uint64_t loop_timer_add(struct loop *, uint64_t ms, loop_timer_cb *, void *);
void	 loop_timer_cancel(struct loop *, uint64_t id);	/* unknown id ok */

void	 loop_on_before_poll(struct loop *, loop_hook_cb *, void *);
/*
 * Called on every iteration to learn the longest wait (ms, -1 for none)
 * that the hook's owner allows, and then after the poll with
 * loop_on_after_poll; libmicrohttpd's run step is such a pair.
 */
typedef long loop_timeout_cb(struct loop *, void *arg);
void	 loop_on_timeout(struct loop *, loop_timeout_cb *, void *);
void	 loop_on_after_poll(struct loop *, loop_hook_cb *, void *);

/* Run until loop_stop(); 0, or -errno if polling itself failed. */
int	 loop_run(struct loop *);
void	 loop_stop(struct loop *);

/*
 * Before sleeping, poll for up to max_us (0: never) while events have been
 * coming that soon; see loop.c.  No effect on a thread confined to one
 * CPU.  Returns the cap in force.
 */
unsigned loop_busy_poll(struct loop *, unsigned max_us);

/*
 * The watchdog: a thread of the loop's own, made by loop_new() and ended
 * by loop_free(), logs once per stall a callback or hook of loop_run()
 * that has held the loop thread for ms or more (0: none; by default
 * LOOP_WATCHDOG_MS), naming the kind of step, the callback's address and
 * its fd.  It reads nothing else of the loop and never interrupts it.
 */
#define LOOP_WATCHDOG_MS	500
void	 loop_watchdog(struct loop *, unsigned ms);
/*
 * The longest the loop thread has been held by one callback or hook since
 * loop_new(), in ms, as the watchdog saw it: it looks every quarter of its
 * period (125 ms by default), so shorter stalls are not seen and the value
 * is low by up to that much.  Any thread.
 */
uint64_t loop_worst_stall_ms(struct loop *);
/*
 * A signal a stuck loop cannot take: while one step has held the loop
 * thread past the watchdog's period, a signal of sigs pending for the
 * process (blocked, as signals read from a signalfd are) for
 * LOOP_SIGNAL_WAIT_MS more in that same step makes the watchdog call
 * cb(sig, arg) once, on its own thread.  cb is what is
 * left to do when the loop will not come back in time -- end the
 * children and exit -- and must not wait for the loop.  Call before
 * loop_run(); sigs is copied.
 */
#define LOOP_SIGNAL_WAIT_MS	1000
typedef void	loop_stuck_signal_cb(int sig, void *arg);
void	 loop_watchdog_signals(struct loop *, const sigset_t *sigs,
	    loop_stuck_signal_cb *cb, void *arg);

uint64_t loop_now_ms(void);		/* CLOCK_MONOTONIC, ms */
int64_t	 loop_wall_ms(void);		/* CLOCK_REALTIME, Unix ms */

#endif
