/*
 * context.h -- code contexts: a kernel per context, found by id, one
 * default context per language, and the wait for readiness.
 *
 * A context is listed from its creation; it is usable once its kernel is
 * ready.  Deleting a context hides it at once and frees it once its
 * kernel is gone.  The registry exists once in the daemon: its state
 * lives in context.c, started by context_init() and stopped by
 * context_shutdown().  Loop thread only.
 */
#ifndef EXECD_CONTEXT_H
#define EXECD_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel.h"
#include "kevent.h"

struct context;
struct limits;

/* Called once per wait: ok, or why the context could not become ready. */
typedef void context_wait_cb(struct context *, const char *why, void *arg);

/* Warm kernels to keep per kernelspec, and when to cull idle contexts. */
struct context_pool {
	const char	*spec;		/* kernelspec name or language */
	unsigned	 n;
};

/*
 * Start the registry: kernels start under conf, which must outlive it,
 * and kernelspecs are discovered now (and again for a language not
 * found).
 */
void			 context_init(struct loop *,
			    const struct kernel_conf *conf);
/*
 * Keep n ready kernels per pool entry (started now, refilled after each
 * take), and delete contexts that ran nothing for idle_s seconds (0:
 * never); a kernel with subscribers, or with messages to or from it
 * within that time, is not idle.  Unknown languages are skipped with -ENOENT for the first.
 */
int			 context_set_policy(const struct context_pool *,
			    size_t npool, unsigned idle_s);
/* The default limits of a new kernel or shell of language, into out. */
typedef void context_limits_fn(const char *language, struct limits *out,
    void *arg);
/*
 * New kernels and shells take their default limits from fn (asked when
 * each starts, so SIGHUP's changes apply); NULL: none.
 */
void			 context_set_limits(context_limits_fn *fn, void *arg);
/* Bash contexts' shells keep their code files in dir (copied). */
void			 context_set_shell_dir(const char *dir);
/*
 * Delete every context, pooled ones included; refill stops.  The start
 * of shutdown: kernels are asked to shut down while the loop runs.
 */
void			 context_delete_all(void);
/*
 * Free the registry and what is left of its contexts, after
 * context_delete_all() and the loop.  No-op when not started.
 */
void			 context_shutdown(void);

/*
 * The kernelspec for a language: a spec named so, else the first (by
 * name) whose language is it.  NULL when none is installed.
 */
const struct kp_kernelspec *context_spec(const char *language);
/*
 * Every kernelspec installed, sorted by name, NULL-terminated (borrowed:
 * they live as long as the registry); the disk is searched again first,
 * for kernels installed since.
 */
const struct kp_kernelspec *const *context_specs(void);
/* "python (python3), fake (fake)": what is installed, for messages. */
char			*context_languages(void);

/*
 * A new context for language in cwd (NULL: execd's), under the default
 * limits with req's over them (NULL: none), taken ready from the warm
 * pool when one waits there and neither cwd nor limits are asked.  0 with
 * *out set; -ENOENT when no kernel serves the language, err saying so
 * (context_no_kernel); -errno with a message in err when the kernel
 * could not be started.
 */
int	context_create(const char *language, const char *cwd,
	    bool is_default, const struct limits *req, struct context **out,
	    char *err, size_t errlen);
/*
 * A context as context_create's, light where its language's fork server
 * can run code once (oneshot.h) and no warm kernel is waiting for it: a
 * process forked from the server that runs each code sent to it, in
 * order, in a shell of its own, as a kernel's cells, without a kernel
 * (no ZeroMQ, threads or connection file).  It is ready once that
 * process waits for code.  When a client wants a kernel of it
 * (context_kernel_want), the process starts one in that shell, its
 * state kept, and the context is a kernel's from then on.  A light
 * process that dies is started anew (a kernel's restart); one that
 * cannot be made gives way to a kernel.  Returns as context_create.
 */
int	context_create_light(const char *language, const char *cwd,
	    bool is_default, const struct limits *req, struct context **out,
	    char *err, size_t errlen);
/*
 * A context for one run (a batch item's, an ephemeral run's), never the
 * default, under the default limits with req's over them.  Where the
 * language's fork server can run code once (oneshot.h), it is a run
 * once: ready at once, its process forked when its run starts and gone
 * when the run ends, after which the context runs nothing more (-EBUSY)
 * and waits only to be deleted; it has no kernel (context_kernel is
 * NULL), and a run of it that is forgotten stops.  Elsewhere it is
 * context_create's.  Returns as context_create.
 */
int	context_create_once(const char *language, const struct limits *req,
	    struct context **out, char *err, size_t errlen);
/*
 * What a client is told of a language no kernel serves, naming those
 * installed; the caller frees it.
 */
char	*context_no_kernel(const char *language);
/*
 * Whether language names a shell command ("command",
 * "background-command"), which no code context serves, upstream either.
 */
bool	 context_is_command_language(const char *language);
/* The live context of this id, or NULL. */
struct context	*context_find(const char *id);
/* The live default context of language, or NULL. */
struct context	*context_default(const char *language);
/*
 * Call fn for each live context (of language, when not NULL), newest
 * first; fn may delete the context it is given.
 */
void	context_each(const char *language,
	    void (*fn)(struct context *, void *), void *arg);

/*
 * What a run of code in a context reports, whichever serves the context
 * (a kernel, or a bash context's shell).  Loop thread.
 */
struct context_run_cb {
	/*
	 * Each event of the run, in order (stdout, stderr, count, result,
	 * error; a run stopped by its timeout reports a TimeoutError); the
	 * callee owns what ev holds and clears it (kevent_clear).
	 */
	void	(*event)(struct kevent *ev, void *arg);
	/*
	 * Exactly once, unless context_run_forget() came first: the run is
	 * over.  reply is the kernel's execute_reply content (borrowed; an
	 * empty object for a shell), or NULL with why when the run could
	 * not finish (the kernel died, restarted or shut down).  The context
	 * may be freed as soon as this returns.
	 */
	void	(*done)(const json_t *reply, const char *why, void *arg);
};

/*
 * Run code in c (which must be ready), stopped after timeout_ms (0:
 * never) the way c's kind stops a run: a kernel is interrupted and a
 * TimeoutError reported in place of its KeyboardInterrupt; a shell's run
 * is ended and the shell reset.  arg names the run for
 * context_run_forget().  0; -EINVAL when code is not valid UTF-8; another
 * -errno when c cannot run code: then no callback fires.
 */
int	context_run(struct context *c, const char *code, long long timeout_ms,
	    const struct context_run_cb *cb, void *arg);
/* Stop reporting the run named arg (its caller went away; it goes on). */
void	context_run_forget(struct context *c, void *arg);
/* Interrupt what runs in c.  0, -ESRCH if nothing runs, or -errno. */
int	context_interrupt(struct context *c);
/* Delete: shut the kernel down, hide the context now. */
void	context_delete(struct context *);

/*
 * Wait until the context is ready (at once if it is).  The callback runs
 * exactly once unless context_wait_cancel() is called first.
 */
void	context_wait(struct context *c, context_wait_cb *cb, void *arg);
void	context_wait_cancel(struct context *, void *arg);

const char	*context_id(const struct context *);
const char	*context_language(const struct context *);
const char	*context_cwd(const struct context *);	/* NULL: none */
bool		 context_ready(const struct context *);
/* The kernel that serves c; NULL for a shell, a run once, a light one. */
struct kernel	*context_kernel(const struct context *);
/*
 * c's kernel, made now of a light context's process when it is one
 * (ready: no kernel of one not yet up).  The kernel is starting then:
 * runs already sent end first, its state is the light context's.  NULL
 * when c has no kernel and none can be made.
 */
struct kernel	*context_kernel_want(struct context *);
/* The kernelspec c's kernel runs (its name is Jupyter's kernel name). */
const struct kp_kernelspec *context_kernelspec(const struct context *);

#endif
