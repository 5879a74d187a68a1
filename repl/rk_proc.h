/*
 * rk_proc.h -- the REPL process behind execd-repl-kernel: started with
 * pipes for its three streams, in the kernel's process group (so that
 * nothing it starts outlives a kernel killed with its group), with
 * SIGKILL as its parent-death signal.  Main thread only.
 */
#ifndef RK_PROC_H
#define RK_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "rk_scan.h"

struct rk_proc {
	pid_t	 pid;		/* leader of its group */
	bool	 group;		/* start it in a process group of its own,
				 * its output pipes non-blocking */
	int	 in, out, err;	/* its pipes; -1 once closed */
	char	*wbuf;		/* bytes waiting for its stdin */
	size_t	 wlen;
};

/* Start argv (PATH searched).  0, or -errno with a message in err. */
int	rk_proc_start(struct rk_proc *, char *const *argv, char *err,
	    size_t errlen);
/* Queue bytes for its stdin; rk_proc_write sends what it takes. */
void	rk_proc_queue(struct rk_proc *, const char *s, size_t n);
void	rk_proc_write(struct rk_proc *);
/* Queue line (with "{seq}" replaced by seq) and a newline. */
void	rk_proc_queue_line(struct rk_proc *, const char *line,
	    unsigned long seq);
/* Read what waits on *fd into sc: 1 when bytes came, 0 when none did
 * (EAGAIN), or -1 at EOF (*fd closed, -1). */
int	rk_proc_read(int *fd, struct rk_scan *sc);
/* Send sig to the REPL's process (not its children). */
void	rk_proc_kill(struct rk_proc *, int sig);
/* Kill and reap it, say how it ended into why, and SIGTERM the group. */
void	rk_proc_reap(struct rk_proc *, char *why, size_t whylen);
/* End it: SIGTERM, a moment, SIGKILL, reap; free the queue. */
void	rk_proc_stop(struct rk_proc *);

#endif
