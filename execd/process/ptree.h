/*
 * ptree.h -- every process a job started, found in /proc, and signalled.
 *
 * A job's first process leads its own session and process group, but what
 * it starts may leave both (set -m, setsid) and, once its parent is gone,
 * be adopted by execd (a subreaper or PID 1).  A tree is the set of
 * processes with evidence that the job started them:
 *   - the job's session (while that session id is provably still the
 *     job's: its leader is there with the start time recorded, or a
 *     process already seen in the tree is in it);
 *   - a process seen in the tree before (pid and start time);
 *   - a child of a process in the tree (ppid chains, to any depth);
 *   - an orphan adopted by execd whose environment carries the job's
 *     mark (PTREE_MARK_VAR=<random>, set by the job at spawn).
 * /proc is scanned again until a round finds nothing new (bounded), so
 * what forks while being signalled is caught too.  A cgroup per job would
 * make this exact; until then a process that both leaves the session and
 * clears its environment after its parent died escapes.  Loop thread only.
 */
#ifndef EXECD_PTREE_H
#define EXECD_PTREE_H

#include <sys/types.h>

#define PTREE_MARK_VAR	"EXECD_JOB"
#define PTREE_MARK_LEN	(sizeof(PTREE_MARK_VAR) + 1 + 16 + 1)
#define PTREE_ROUNDS	16	/* scans per signal at most */
#define PTREE_MAX	32768	/* processes remembered per tree */

struct loop;

struct ptree_id {			/* caller storage */
	pid_t			leader;	/* session and group id */
	unsigned long long	start;	/* leader's start time; 0 unknown */
	char			mark[PTREE_MARK_LEN]; /* "EXECD_JOB=hex" */
};

/* A fresh mark, "EXECD_JOB=" and 16 random hex digits, into id->mark. */
void	ptree_mark_new(struct ptree_id *);
/* Record the leader (right after spawn, before it can be reaped). */
void	ptree_id_set(struct ptree_id *, pid_t leader);
/*
 * Stop the tree: SIGTERM (then SIGCONT, so stopped processes see it) to
 * every member now, SIGKILL to every member after grace_ms.  The
 * escalation belongs to this module and runs even after the job is freed;
 * stopping a tree already being stopped does nothing.  Returns the number
 * of processes signalled (0 if none was left).
 */
int	ptree_stop(struct loop *, const struct ptree_id *, unsigned grace_ms);
/* SIGKILL to every member now; the number signalled. */
int	ptree_kill(const struct ptree_id *);
/* SIGKILL every tree whose grace period is pending; forget them all. */
void	ptree_shutdown(void);

#endif
