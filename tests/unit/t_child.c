/*
 * t_child.c -- unit tests for child.c, the pid table and the reaper.
 *
 * Real children (forked, waiting in pause()) are registered, signalled and
 * reaped; signal 0 checks that a process exists without touching it.
 * Covered: a registered child's callback gets its pid and status once; a
 * callback may register another child; child_forget leaves the exit to be
 * reaped silently; child_signal_all signals every registered child and
 * may be called from another thread (the loop's watchdog) while the loop
 * thread adds and forgets entries, the table growing meanwhile.  That last
 * case is a data race unless the table is guarded: a build with
 * SANITIZER=thread reports it, a plain build may read freed memory.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../execd/process/child.h"
#include "../t.h"

#define NKIDS	3

static pid_t	 kid(void);
static void	 end_kids(const pid_t *, int);
static void	 on_exit_count(pid_t, int, void *);
static void	 on_exit_add(pid_t, int, void *);
static void	*signaller(void *);

static int	 exits, last_status;
static pid_t	 last_pid;

/* A child that waits for a signal; the test exits if fork fails. */
static pid_t
kid(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

/* SIGKILL each of pids and reap it, whoever registered it. */
static void
end_kids(const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
			;
	}
}

static void
on_exit_count(pid_t pid, int st, void *arg)
{
	exits++;
	last_pid = pid;
	last_status = st;
	(void)arg;
}

/* A callback that registers the child in arg, as a restart does. */
static void
on_exit_add(pid_t pid, int st, void *arg)
{
	on_exit_count(pid, st, NULL);
	T_EQ_INT(child_add(*(pid_t *)arg, 0, on_exit_count, NULL), 0);
}

/* Reap until want exits were reported or about 10 s passed. */
static void
reap_until(int want)
{
	struct timespec ts = { 0, 10 * 1000000 };

	for (int i = 0; i < 1000 && exits < want; i++) {
		child_reap();
		if (exits < want)
			nanosleep(&ts, NULL);
	}
}

/* The callback gets the pid and the status, once; a forgotten one none. */
static void
test_reap_calls_back_once(void)
{
	pid_t a = kid(), b = kid();

	exits = 0;
	T_EQ_INT(child_add(0, 0, on_exit_count, NULL), -EINVAL);
	T_EQ_INT(child_add(a, 0, on_exit_count, NULL), 0);
	T_EQ_INT(child_add(b, 0, on_exit_count, NULL), 0);
	T_OK(child_known(a) && child_known(b));
	child_forget(b);
	T_OK(!child_known(b));
	T_OK(child_any());
	kill(a, SIGTERM);
	kill(b, SIGTERM);
	reap_until(1);
	T_EQ_INT(exits, 1);
	T_EQ_INT(last_pid, a);
	T_OK(WIFSIGNALED(last_status) && WTERMSIG(last_status) == SIGTERM);
	T_OK(!child_known(a));
	/* b is reaped silently by the same reaper. */
	for (int i = 0; i < 1000 && child_any(); i++) {
		struct timespec ts = { 0, 10 * 1000000 };

		child_reap();
		nanosleep(&ts, NULL);
	}
	T_OK(!child_any());
	T_EQ_INT(exits, 1);
}

/* A callback may register a child: the table is not held across it. */
static void
test_callback_may_add(void)
{
	pid_t a = kid(), b = kid();

	exits = 0;
	T_EQ_INT(child_add(a, 0, on_exit_add, &b), 0);
	kill(a, SIGKILL);
	reap_until(1);
	T_EQ_INT(exits, 1);
	T_OK(child_known(b));
	kill(b, SIGKILL);
	reap_until(2);
	T_EQ_INT(exits, 2);
	T_EQ_INT(last_pid, b);
	T_OK(!child_known(b));
}

static atomic_bool	 sig_stop;
static atomic_int	 sig_low = 1000;
static atomic_long	 sig_calls;

/* The watchdog's part: signal 0 to everything, again and again. */
static void *
signaller(void *arg)
{
	int n;

	(void)arg;
	while (!atomic_load(&sig_stop)) {
		n = child_signal_all(0);
		if (n < atomic_load(&sig_low))
			atomic_store(&sig_low, n);
		atomic_fetch_add(&sig_calls, 1);
	}
	return NULL;
}

/*
 * child_signal_all from a second thread while this one changes the
 * table: NKIDS children stay registered throughout, so every call
 * reaches at least those (each counted once as registered, and once more
 * as a direct child when /proc lists children).
 */
static void
test_signal_all_from_another_thread(void)
{
	pid_t pids[NKIDS], extra = kid();
	pthread_t th;
	struct timespec ts = { 0, 1000000 };

	exits = 0;
	for (int i = 0; i < NKIDS; i++) {
		pids[i] = kid();
		T_EQ_INT(child_add(pids[i], 0, on_exit_count, NULL), 0);
	}
	atomic_store(&sig_stop, false);
	T_EQ_INT(pthread_create(&th, NULL, signaller, NULL), 0);
	/* Let it start before the table grows past its first size. */
	for (int i = 0; i < 1000 && atomic_load(&sig_calls) == 0; i++)
		nanosleep(&ts, NULL);
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < 40 + round; i++)
			T_EQ_INT(child_add(extra, 0, on_exit_count, NULL), 0);
		for (int i = 0; i < 40 + round; i++)
			child_forget(extra);
	}
	atomic_store(&sig_stop, true);
	pthread_join(th, NULL);
	T_OK(atomic_load(&sig_calls) > 0);
	T_OK(atomic_load(&sig_low) >= NKIDS);
	T_OK(!child_known(extra));
	for (int i = 0; i < NKIDS; i++) {
		T_OK(child_known(pids[i]));
		kill(pids[i], SIGKILL);
	}
	reap_until(NKIDS);
	T_EQ_INT(exits, NKIDS);
	end_kids(&extra, 1);
}

static const struct t_case cases[] = {
	{ "reap calls back once", test_reap_calls_back_once },
	{ "a callback may add a child", test_callback_may_add },
	{ "signal all from another thread",
	    test_signal_all_from_another_thread },
};

int
main(void)
{
	return T_RUN(cases);
}
