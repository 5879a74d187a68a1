/*
 * rungate.h -- the run gate: while a workspace restore runs (ckpt.h), no
 * run starts, whichever front end asks, so that no run sees a
 * half-restored tree.  A restore closes the gate for as long as its work
 * runs (closes nest); work that would start a run (a command, a code run
 * or a batch, a session's run, a Jupyter client's execute_request, an MCP
 * run tool) asks first and, while the gate is closed, waits: its go
 * function runs once the gate opens, waiters in the order they came.
 * Runs already going are not stopped.  Loop thread only.
 */
#ifndef EXECD_RUNGATE_H
#define EXECD_RUNGATE_H

#include <stdbool.h>

struct rungate_wait;
typedef void	rungate_fn(void *arg);

/* A restore begins; rungate_open() when it ends. */
void	rungate_close(void);
/* One close ends: at the last, every waiter's go runs, in order. */
void	rungate_open(void);
bool	rungate_closed(void);
/*
 * While the gate is closed: go(arg) is called once it opens (the gate
 * may be closed again by then: a go asks again).  The handle cancels it
 * until then.  The gate must be closed.
 */
struct rungate_wait *rungate_wait(rungate_fn *go, void *arg);
void	rungate_cancel(struct rungate_wait *);	/* NULL ok; not after go */
/* Forget every waiter without calling it (execd stops). */
void	rungate_shutdown(void);

#endif
