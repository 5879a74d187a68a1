/*
 * session.h -- persistent bash sessions: one bash process per session,
 * whose working directory, variables (exported or not), functions and
 * aliases survive between runs.
 *
 * Each run's code is written to a file that the shell sources with stdin
 * from /dev/null and fd 3 closed; the shell then reports the exit status
 * with a per-run random nonce on fd 3, a pipe that only execd reads, so
 * output cannot fake the end of a run.  If the shell itself ends (exit,
 * exec, set -e), the run ends with that status and the session starts a
 * fresh shell and says it was reset.  Runs on one session queue in order.
 *
 * The shell of a session a client opens starts with execd's environment
 * and the variables of the EXECD_ENVS file over it (envfile.h); before
 * each run, the variables of that file that changed since the shell last
 * got them are exported to it, so that what an SDK appends there reaches
 * open sessions too.
 *
 * The sessions clients open (POST /session) are kept in this module's
 * registry, by id, from session_open() until session_close() or
 * session_shutdown(); a code context's shell is made with session_new()
 * and belongs to its context alone.  Loop thread only.
 */
#ifndef EXECD_SESSION_H
#define EXECD_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct limits;
struct loop;
struct session;

/* Output of a run: stream 1 (stdout) or 2 (stderr), raw bytes. */
typedef void session_output_cb(int stream, const char *p, size_t n,
    void *arg);
/*
 * The run ended: exit status (128+N for a signal, as bash reports it),
 * and a note when the session had to be reset ("" otherwise).  Called
 * exactly once per run unless session_run_forget() came first.
 */
typedef void session_done_cb(int status, bool timed_out, const char *reset,
    void *arg);

/*
 * Start the registry: its sessions run on loop, keep their code files in
 * dir and give a timed-out run grace_ms between SIGTERM and SIGKILL.
 */
void		 session_init(struct loop *, const char *dir, unsigned grace_ms);
/* session_free() every registered session (shutdown). */
void		 session_shutdown(void);
/*
 * A new registered session whose shell starts in cwd, under limits l
 * (NULL: none; copied, for every shell it starts); NULL on failure.
 */
struct session	*session_open(const char *cwd, const struct limits *l,
		    char *err, size_t errlen);
/* The registered session with this id, or NULL. */
struct session	*session_find(const char *id);
/* Unregister and session_free() the session id.  0, or -ENOENT. */
int		 session_close(const char *id);
/* session_close() every registered session. */
void		 session_close_all(void);

/*
 * A session whose shell starts in cwd (NULL: execd's), under l (NULL:
 * none); NULL on failure.
 */
struct session	*session_new(struct loop *, const char *dir, const char *cwd,
		    unsigned grace_ms, const struct limits *l, char *err,
		    size_t errlen);
/*
 * How an isolated session's shell starts (isolated.c): in plan's
 * namespaces, as uid and gid when set_ids, with envp (NULL: execd's).
 * Everything here must outlive the session.
 */
struct isoplan;
struct session_how {
	const struct isoplan	*plan;
	const struct limits	*limits;	/* NULL: none */
	bool			 set_ids;
	bool			 keep_ids;	/* not the default user */
	uid_t			 uid;
	gid_t			 gid;
	char *const		*envp;
};
/* session_new(), every shell it starts made as how says. */
struct session	*session_new_how(struct loop *, const char *dir,
		    const char *cwd, unsigned grace_ms,
		    const struct session_how *how, char *err, size_t errlen);
/* The pid of the shell now (0: none). */
pid_t		 session_pid(const struct session *);
/* Kill the shell's whole process group and free (runs end, reset). */
void		 session_free(struct session *);
const char	*session_id(const struct session *);

/*
 * Queue a run of code (cwd: a cd first, which sticks; NULL none).
 * timeout_ms 0 for none.  0 or -errno.
 */
int	session_run(struct session *s, const char *code, const char *cwd,
	    unsigned timeout_ms, session_output_cb *output,
	    session_done_cb *done, void *arg);
/* SIGINT to what the current run started.  0, or -ESRCH if none runs. */
int	session_interrupt(struct session *);
/* Stop reporting a run whose caller went away (it still runs). */
void	session_run_forget(struct session *, void *arg);

#endif
