/*
 * pty.h -- terminal sessions: a shell on a pseudo-terminal (or, in pipe
 * mode, on three pipes), its replay ring, and the registry by id.
 *
 * A session is made without a shell; the first pty_start() spawns bash
 * (bash -c COMMAND when one was given) through spawn.c, in its own
 * session and process group, with the terminal as its controlling tty at
 * 80x24.  All output goes into a bounded ring with absolute offsets, read
 * as it comes whether anyone watches or not, and is handed to the one
 * watcher.  The shell is reaped by child.c; its exit is reported once
 * all its output has been read (or 500 ms after the reap, when some
 * process it left behind keeps the terminal open).  A shell runs at
 * most once per session: after it exits the session only replays.
 * Loop thread only.
 */
#ifndef EXECD_PTY_H
#define EXECD_PTY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct ring;
struct limits;
struct pty;

#define PTY_STDOUT	1	/* terminal output, or a pipe's stdout */
#define PTY_STDERR	2	/* a pipe's stderr (pipe mode only) */

#define PTY_ID_LEN	37	/* a dashed UUID and its NUL */

enum pty_state {
	PTY_NEW,		/* no shell yet */
	PTY_RUNNING,		/* started; its exit not yet reported */
	PTY_EXITED		/* exited; pty_exit_code() tells how */
};

/* Output just added to the ring (p, n borrowed), from stream PTY_*. */
typedef void pty_output_cb(struct pty *, int stream, const char *p,
    size_t n, void *arg);
/* The shell exited with code (-1: killed by a signal); called once. */
typedef void pty_exit_cb(struct pty *, int code, void *arg);

/*
 * The session is being freed (pty_free, or shutdown), for the reason why:
 * the watcher lets go of it.  Called once; no callback follows.
 */
typedef void pty_gone_cb(struct pty *, const char *why, void *arg);

/* Start the registry; its sessions run on loop. */
void		 pty_init(struct loop *);
/* pty_free() every session, saying execd is shutting down. */
void		 pty_shutdown(void);
/* pty_free() every session with why; the registry stays started. */
void		 pty_close_all(const char *why);
/*
 * A new session, registered under a fresh id, whose shell will start in
 * cwd (NULL: execd's) and run command (NULL: interactive), keeping the
 * last ring_cap bytes of output.  Never NULL.
 */
struct pty	*pty_new(const char *cwd, const char *command, size_t ring_cap);
/*
 * Whether a terminal can be made here: one is opened and closed again.
 * 0; -errno with a message in err (ENOENT, ENXIO, ENOTTY ...: the system
 * has none to give; EMFILE, ENFILE, ENOSPC, ENOMEM, EAGAIN: not now).
 */
int		 pty_probe(char *err, size_t errlen);
/* Whether a pty_probe() failure is for lack of resources, not support. */
bool		 pty_probe_transient(int rc);
/* The session with this id, or NULL. */
struct pty	*pty_find(const char *id);
/* Its shell, started from now on, runs under l (copied; see spawn.h). */
void		 pty_set_limits(struct pty *, const struct limits *l);
/* Once the shell exited: the limit that ended it, or "" (cgroup_why). */
const char	*pty_why(const struct pty *);
/*
 * Tell the watcher why (its gone callback), SIGKILL the shell's group,
 * close everything, unregister.  NULL ok.
 */
void		 pty_free(struct pty *, const char *why);

/* The one watcher, replacing any before; callbacks NULL: none. */
void		 pty_watch(struct pty *p, pty_output_cb *out, pty_exit_cb *ex,
		    pty_gone_cb *gone, void *arg);
/* The arg of the watcher, NULL if none. */
void		*pty_watcher(const struct pty *);

/*
 * Spawn the shell, on a terminal or (pipe) on pipes.  0; -EALREADY if a
 * shell was ever started; else -errno with a message in err.
 */
int		 pty_start(struct pty *, bool pipe, char *err, size_t errlen);

const char	*pty_id(const struct pty *);
enum pty_state	 pty_state(const struct pty *);
bool		 pty_alive(const struct pty *);	/* the process is not reaped */
bool		 pty_pipe_mode(const struct pty *);
int		 pty_exit_code(const struct pty *);	/* once PTY_EXITED */
const struct ring *pty_ring(const struct pty *);

/*
 * Write to the shell's stdin; what the terminal does not take at once
 * waits (up to 1 MiB).  0; -EPIPE when no shell runs or its stdin is
 * closed; -ENOBUFS when too much waits already; else -errno.
 */
int		 pty_write(struct pty *p, const void *buf, size_t len);
/* Set the terminal size (SIGWINCH follows).  0, -EINVAL, -ESRCH; pipe
   mode: 0, nothing done. */
int		 pty_resize(struct pty *, unsigned cols, unsigned rows);
/* Send sig to the shell's process group.  0 or -ESRCH, -errno. */
int		 pty_signal(struct pty *, int sig);

#endif
