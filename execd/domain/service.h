/*
 * service.h -- the policy file's services: long-running programs execd
 * starts in order, restarts when they end, stops when it stops, and
 * reports (GET /services).  The desktop image's X server, window
 * manager, VNC server and noVNC are such services.
 *
 * Each runs as a job (job.h): the spawn path of every command, so under
 * the same sandbox profile, limits and cgroup.  A service with after
 * starts once that service is running and ready; one with ready is ready
 * once that path exists (polled on a worker), else once started.  A service that
 * ends is started again, per its restart policy, after a backoff that
 * doubles from SERVICE_BACKOFF_MIN_MS to SERVICE_BACKOFF_MAX_MS with each
 * end in a row and falls back to the least once a run lasted
 * SERVICE_STABLE_MS; those after it, directly or not, are stopped and
 * started again once it is ready again.  Loop thread only.
 */
#ifndef EXECD_SERVICE_H
#define EXECD_SERVICE_H

#include <jansson.h>

#define SERVICE_BACKOFF_MIN_MS	500
#define SERVICE_BACKOFF_MAX_MS	30000
#define SERVICE_STABLE_MS	10000
#define SERVICE_READY_POLL_MS	100
#define SERVICE_TAIL		1024	/* output kept, its last bytes */

struct loop;
struct conf;

/* Start c's services (c stays alive; its limits are read at each start). */
void	 service_start(struct loop *, const struct conf *c);
/*
 * [{name, state, pid, restarts, ready, last_exit, since}]: state is
 * waiting, running, backoff (to be started again), exited (not to be)
 * or stopped; pid while running, else null; last_exit: how the last run
 * ended ("exit status 1", "killed by signal 9 (Killed)"), or null;
 * since: when the state began, RFC 3339.
 */
json_t	*service_list(void);
/*
 * Shutdown begins: none is started again; those running end with the
 * rest of execd's children (SIGTERM, then SIGKILL after the grace).
 */
void	 service_stop(void);
/* At exit: any still running killed (its whole tree, SIGKILL), freed. */
void	 service_shutdown(void);

#endif
