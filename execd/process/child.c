/*
 * child.c -- the pid table and the reaper (tmux's server_child_signal).
 *
 * This file decides nothing about what children are for; it only waits
 * for them and tells their owners.  It never forks: spawning lives in one
 * place of its own.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/log.h"
#include "../core/xmalloc.h"
#include "cgroup.h"
#include "child.h"

struct child {
	pid_t		 pid;
	pid_t		 pgid;
	child_exit_cb	*cb;
	void		*arg;
};

/*
 * The table is the loop thread's, but child_signal_all() is also called
 * by the loop's watchdog thread when a SIGTERM finds the loop stuck in a
 * step (main.c's stuck_signal): the one moment the loop cannot be asked
 * to do it, so a flag or an eventfd for the loop to read would never be
 * read.  Nor may the watchdog read the table bare: the stuck step, or
 * the next one if the step ends just then, may be adding to it (a
 * realloc frees the array being read) or removing from it.  So a mutex
 * guards tab and ntab.  It is held only over the table itself, never
 * across a callback, a wait or anything but kill(), so the watchdog never
 * waits on the step that is stuck, and a callback may add a child.
 */
static pthread_mutex_t	 mu = PTHREAD_MUTEX_INITIALIZER;
static struct child	*tab;
static size_t		 ntab, captab;

static int	signal_direct_children(int);

/* Register a child; its exit will be reported to cb. */
int
child_add(pid_t pid, pid_t pgid, child_exit_cb *cb, void *arg)
{
	if (pid <= 0)
		return -EINVAL;
	pthread_mutex_lock(&mu);
	if (ntab == captab) {
		captab = captab ? captab * 2 : 16;
		tab = xrealloc(tab, captab * sizeof(*tab));
	}
	tab[ntab++] = (struct child){ pid, pgid, cb, arg };
	pthread_mutex_unlock(&mu);
	return 0;
}

/* Drop pid from the table; it will still be reaped. */
void
child_forget(pid_t pid)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < ntab; i++) {
		if (tab[i].pid == pid) {
			tab[i] = tab[--ntab];
			break;
		}
	}
	pthread_mutex_unlock(&mu);
}

/* waitpid(-1) until nothing more has exited, dispatching by pid. */
void
child_reap(void)
{
	struct child c;
	bool found;
	pid_t pid;
	int st;

	for (;;) {
		pid = waitpid(-1, &st, WNOHANG);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			return;
		found = false;
		pthread_mutex_lock(&mu);
		for (size_t i = 0; i < ntab; i++) {
			if (tab[i].pid == pid) {
				c = tab[i];
				tab[i] = tab[--ntab];
				found = true;
				break;
			}
		}
		pthread_mutex_unlock(&mu);
		if (found)
			c.cb(pid, st, c.arg);
		else
			log_debug("reaped pid %ld (status %d), not ours",
			    (long)pid, st);
		cgroup_release(pid);	/* after the owner asked cgroup_why */
	}
}

/*
 * Signal every direct child listed in /proc/self/task/<tid>/children.
 * The file exists on kernels built with CONFIG_PROC_CHILDREN; without it,
 * only registered children are signalled.
 */
static int
signal_direct_children(int sig)
{
	char path[320], buf[4096], *p, *end;
	DIR *d;
	struct dirent *de;
	FILE *f;
	long pid;
	int n = 0;
	size_t len;

	if ((d = opendir("/proc/self/task")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children",
		    de->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = '\0';
		for (p = buf; *p != '\0'; p = end) {
			pid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (pid > 0 && kill((pid_t)pid, sig) == 0)
				n++;
		}
	}
	closedir(d);
	return n;
}

/* Signal every registered group and every other direct child. */
int
child_signal_all(int sig)
{
	int n = 0;

	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < ntab; i++) {
		if (tab[i].pgid > 0 && kill(-tab[i].pgid, sig) == 0)
			n++;
		else if (kill(tab[i].pid, sig) == 0)
			n++;
	}
	pthread_mutex_unlock(&mu);
	return n + signal_direct_children(sig);
}

/* Whether pid is one of the registered children. */
bool
child_known(pid_t pid)
{
	bool known = false;

	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < ntab && !known; i++)
		known = tab[i].pid == pid;
	pthread_mutex_unlock(&mu);
	return known;
}

/* Whether any child exists, reaped or not yet. */
int
child_any(void)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	/* WNOWAIT leaves a zombie for child_reap() to collect. */
	if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno != ECHILD;
	return 1;
}
