/*
 * isolated.h -- isolated sessions (/v1/isolated, docs/isolation.md): the
 * registry, each session's shell (a session.c session started in the
 * namespaces of an isoplan), its upper directories, background runs and
 * their logs, idle expiry and teardown.  What this host allows is probed
 * once, on the first use of isolated_available() or the capabilities, in
 * a throwaway child.  Loop thread only, but
 * isolated_check, which looks at the client's paths, runs on a worker.
 */
#ifndef EXECD_ISOLATED_H
#define EXECD_ISOLATED_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>

#include "isodiff.h"
#include "isoreq.h"
#include "session.h"

struct loop;
struct isosess;

/* The upper root when none is configured, as upstream's. */
#define ISOLATED_UPPER_ROOT	"/var/lib/execd/isolation"

/* Per logs read, as upstream's maxBackgroundLogReadBytes. */
#define ISOLATED_LOG_READ_MAX	(16ULL << 20)

/*
 * Start: upper directories go under upper_root (created 0711), run logs
 * and code under state_dir; grace_ms as session.h's.  Reclaims what a
 * killed execd left under upper_root (see reclaim in isolated.c).
 */
void	isolated_init(struct loop *, const char *upper_root,
	    const char *state_dir, unsigned grace_ms);
/*
 * The most bytes each overlay's upper may hold (0: no cap): a tmpfs of
 * that size, the shell's own for persist false, one execd mounts on the
 * overlay's directory for persistent ones (in memory then, not on disk).
 */
void	isolated_set_upper_max(unsigned long long bytes);
/*
 * Where binds may come from (after symlinks): the n roots (copied), or,
 * with NULL, /workspace, /mnt, /media and /data.  At start.
 */
void	isolated_set_allowed(const char *const *roots, size_t n);
/*
 * The most bytes of contents (old and new together) a diff of one path
 * shows; past it they are left out and "text" is false.  At start.
 */
void	isolated_set_diff_max(unsigned long long bytes);
/*
 * The limits of session shells (the policy's "session" kind, which
 * outlives every session and is updated in place on reload): isolated
 * shells get them too, and their cgroup.
 */
struct limits;
void	isolated_set_limits(const struct limits *l);
/* Apply that to d, the answer of a diff of one path (any thread). */
void	isolated_diff_trim(json_t *d);
/* Tear every session down (shutdown). */
void	isolated_shutdown(void);
/* Sessions can be made here. */
bool	isolated_available(void);
/* GET /v1/isolated/capabilities's document (new reference). */
json_t	*isolated_capabilities(void);
/* How many sessions are open now. */
size_t	isolated_count(void);

/* What isolated_check learns of the paths of a request. */
struct isolated_paths {
	struct stat	 lower[ISOREQ_MAX];	/* each overlay path's */
	char		 source[ISOREQ_MAX][4096];	/* binds', resolved */
	struct isodiff	*base;		/* the overlays' lower trees */
};

/*
 * On a worker: the request's paths as upstream wants them (existing,
 * binds from inside the allowed roots, their destinations existing).
 * 0, or -1 with the message in err (400 RUNTIME_ERROR).
 */
int	isolated_check(const struct isoreq *, struct isolated_paths *,
	    char *err, size_t errlen);
/* What isolated_check left in p (its baseline); loop thread. */
void	isolated_paths_free(struct isolated_paths *p);
/*
 * Make a session of r (taken over: r is zeroed) whose paths were
 * checked into p; the session, or NULL with *status (400, 500, 503),
 * *code and a message in err.
 */
struct isosess	*isolated_create(struct isoreq *r,
		    const struct isolated_paths *p, int *status,
		    const char **code, char *err, size_t errlen);
struct isosess	*isolated_find(const char *id);
const char	*isolated_id(const struct isosess *);
/* Tear the session down.  0, or -ENOENT. */
int		 isolated_delete(const char *id);
/* SessionState; and the short form GET /sessions lists (new refs). */
json_t		*isolated_state(const struct isosess *);
json_t		*isolated_list(void);
/*
 * For a diff or a commit on a worker: q's uppers set to where execd
 * reads them (persistent ones on disk; those of persist false on the
 * tmpfs of the shell's namespace, through /proc/<shell>/root: NULL when
 * the shell is gone, with them) in buf, which must outlive the job; the
 * session's record, held (isodiff_drop it on the loop thread after).
 */
struct isodiff	*isolated_changes(struct isosess *, struct isodiff_req *q,
		    char (*buf)[PATH_MAX + 64]);
/*
 * The root of the session's view (its shell's, /proc/<pid>/root) as an
 * O_PATH directory descriptor for the file routes, the session counting
 * as used now.  The descriptor, or -errno (-ESRCH: no shell).
 */
int		 isolated_root(struct isosess *);
/*
 * The pid of the session's shell now (0: none), whose identity the file
 * routes take (cred_of_pid).
 */
pid_t		 isolated_pid(const struct isosess *);
/* The shell is gone and could not be started again. */
bool		 isolated_dead(const struct isosess *);

/*
 * A foreground run of code, with envs (an object of strings, or NULL)
 * exported first; timeout_ms 0 for none.  done's reset is not "" when
 * the shell ended.  0, -EINVAL (envs), -ESRCH (the shell is gone for
 * good).
 */
int	isolated_run(struct isosess *, const char *code, const json_t *envs,
	    unsigned timeout_ms, session_output_cb *output,
	    session_done_cb *done, void *arg);
/* The caller of a run with this arg went away: interrupt, forget it. */
void	isolated_run_forget(struct isosess *, void *arg);
/*
 * A background run: its id into run_id; its output, up to the first
 * ISOLATED_LOG_READ_MAX bytes, is kept in a log.  0, or -1 with a
 * message in err (400).
 */
int	isolated_background(struct isosess *, const char *code,
	    const json_t *envs, char run_id[37], char *err, size_t errlen);
/* A run's status document (new reference), or NULL: no such run. */
json_t	*isolated_run_state(struct isosess *, const char *run_id);
/*
 * A run's log from cursor (clamped to its size): an fd to read from
 * (the caller closes it; -1 when there is no log yet), the bytes to send
 * (at most ISOLATED_LOG_READ_MAX) and the next cursor.  0 or -ENOENT.
 */
int	isolated_logs(struct isosess *, const char *run_id, uint64_t cursor,
	    int *fd, uint64_t *off, uint64_t *len, uint64_t *next);

#endif
