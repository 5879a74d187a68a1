/*
 * child.h -- the pid table and the one reaper.
 *
 * Whoever starts a child registers its pid here with a callback; the
 * reaper (run when the signalfd reports SIGCHLD) collects every exited
 * child with waitpid(-1) and calls the owner's callback, and silently
 * reaps the rest: orphans that execd inherits as PID 1 or as a child
 * subreaper.  Loop thread only, but for child_signal_all(), which any
 * thread may call (the loop's watchdog does when the loop is stuck).
 */
#ifndef EXECD_CHILD_H
#define EXECD_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

/* Called once, after the child was reaped; status as from waitpid. */
typedef void child_exit_cb(pid_t, int status, void *arg);

/* Track pid (leading process group pgid, or 0 for none). 0 or -errno. */
int	child_add(pid_t pid, pid_t pgid, child_exit_cb *cb, void *arg);
/* Forget pid without waiting for it (its exit is then reaped silently). */
void	child_forget(pid_t pid);
/* Reap everything that has exited; call after SIGCHLD. */
void	child_reap(void);
/*
 * Send sig to every registered process group and to every other direct
 * child (found in /proc), for an orderly shutdown.  Returns how many
 * processes or groups were signalled.  Any thread; it waits for nothing
 * but a table change in progress.
 */
int	child_signal_all(int sig);
/* Whether pid is registered: a child execd started, not one it adopted. */
bool	child_known(pid_t pid);
/* True while execd has any child at all, registered or not. */
int	child_any(void);

#endif
