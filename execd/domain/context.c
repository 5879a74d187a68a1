/*
 * context.c -- the registry of code contexts and their kernels.
 *
 * This file maps ids and languages to kernels and tells waiters when a
 * context becomes ready or fails, and runs code in a context whichever
 * serves it: a kernel; for a bash context without a bash kernel, a
 * shell session; for a context of one run, a run once (oneshot.h); for
 * a light context, a run once that stays until a kernel is wanted of it.
 * Either way a run reports kevents and one end, and is stopped by its
 * timeout the way its kind is.  It knows nothing of HTTP
 * or of how a run's events are queued and cut (run.c does).  The
 * registry exists once: its state is the file static R, made by
 * context_init() and freed by context_shutdown().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../util/buf.h"
#include "../../util/id.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "../process/limits.h"
#include "context.h"
#include "forksrv.h"
#include "oneshot.h"
#include "session.h"

struct waiter {
	context_wait_cb	*cb;
	void		*arg;
	struct waiter	*next;
};

/* A run in a context: what its callbacks need, until it ends. */
struct exec {
	struct context			*c;
	const struct context_run_cb	*cb;
	void				*arg;
	char				 msg_id[33];	/* a kernel's */
	long long			 timeout_ms;
	uint64_t			 tmo;
	bool				 timed_out;
	bool				 light;		/* sent to c->os */
	bool				 forgotten;	/* ... unheard */
	struct exec			*next;
};

struct context {
	struct kernel		*k;
	struct session		*sh;	/* a bash context without a kernel */
	bool			 once;	/* a context of one run, run once */
	bool			 used;	/* ... which has begun */
	bool			 light;	/* a run once that stays (os) */
	bool			 up;	/* ... and waits for code */
	struct oneshot		*os;	/* a run once's process */
	struct limits		 lim;	/* ... under these */
	char			 id[ID_UUID_LEN + 1];
	char			*language;
	char			*cwd;
	bool			 is_default;
	bool			 deleted;
	bool			 pooled;	/* warm, not yet handed out */
	const struct kp_kernelspec *spec;
	int			 runs;
	uint64_t		 last_use;	/* loop_now_ms */
	struct waiter		*waiters;
	struct exec		*execs;		/* runs not yet ended */
	struct context		*next;
};

struct pool {
	const struct kp_kernelspec	*spec;
	unsigned			 want;
	unsigned			 failures;	/* in a row */
};

#define MAX_POOLS		8
#define POOL_RETRY_MS		5000
#define POOL_MAX_FAILURES	3

/* The registry, one per daemon: file statics, set by context_init(). */
static struct registry {
	struct loop			*loop;
	const struct kernel_conf	*conf;
	struct kp_kernelspec		**specs;
	struct context			*list;
	struct pool			 pools[MAX_POOLS];
	size_t				 npools;
	unsigned			 idle_s;
	uint64_t			 t_cull, t_refill;
	bool				 closing;
	char				*shell_dir;
	context_limits_fn		*limits;	/* defaults, or NULL */
	void				*limits_arg;
} R;

static void	on_kernel(struct kernel *, enum kernel_event, const char *,
		    void *);
static void	wake(struct context *, const char *);
static int	start(const struct kp_kernelspec *, const char *,
		    const char *, bool, bool, const struct limits *,
		    struct context **, char *, size_t);
static void	job_limits(const char *, const struct limits *,
		    struct limits *);
static void	refill(void);
static void	on_refill(struct loop *, uint64_t, void *);
static void	on_cull(struct loop *, uint64_t, void *);
static void	unlink_context(struct context *);
static int	shell_context(const char *, bool, const struct limits *,
		    struct context **, char *, size_t);
static const struct kp_kernelspec *lookup(const char *);
static size_t	rescan(void);
static int	cmp_name(const void *, const void *);
static void	context_use(struct context *, int);
static void	exec_output(struct kernel *, const struct kp_msg *, void *);
static void	exec_done(struct kernel *, const struct kp_msg *,
		    const char *, void *);
static void	exec_timeout(struct loop *, uint64_t, void *);
static void	exec_end(struct exec *);
static void	shell_output(int, const char *, size_t, void *);
static void	shell_done(int, bool, const char *, void *);
static void	exec_event(struct exec *, struct kevent *);
static void	exec_finish(struct exec *, const json_t *, const char *);
static void	once_event(struct kevent *, void *);
static void	once_done(const char *, void *);
static void	light_event(struct kevent *, void *);
static void	light_idle(void *);
static void	light_reply(const json_t *, void *);
static void	light_done(const char *, void *);
static void	free_context(struct context *);
static struct exec *light_head(struct context *);
static void	end_light_runs(struct context *, const char *);

static const struct kernel_exec_cb exec_cb = { exec_output, exec_done };
static const struct oneshot_cb once_cb = { .event = once_event,
    .done = once_done };
static const struct oneshot_cb light_cb = { light_event, light_idle,
    light_reply, light_done };

/* Start the registry; kernelspecs are discovered once, here. */
void
context_init(struct loop *loop, const struct kernel_conf *conf)
{
	char **dirs = kp_kernelspec_dirs();

	memset(&R, 0, sizeof(R));
	R.loop = loop;
	R.conf = conf;
	if (kp_kernelspec_find_all(dirs, &R.specs, NULL) < 0)
		R.specs = xcalloc(1, sizeof(*R.specs));
	kp_kernelspec_dirs_free(dirs);
}

/*
 * Free the registry and what is left of its contexts: after
 * context_delete_all() and the loop, when their kernels are gone (reaped)
 * or never will be.
 */
void
context_shutdown(void)
{
	struct context *c;

	if (R.specs == NULL)
		return;		/* not started, or already stopped */
	if (R.t_cull != 0)
		loop_timer_cancel(R.loop, R.t_cull);
	if (R.t_refill != 0)
		loop_timer_cancel(R.loop, R.t_refill);
	while ((c = R.list) != NULL) {
		R.list = c->next;
		free(c->language);
		free(c->cwd);
		free(c);
	}
	kp_kernelspec_list_free(R.specs);
	forksrv_shutdown();
	free(R.shell_dir);
	memset(&R, 0, sizeof(R));
}

/*
 * The spec serving language; see context.h.  A language not found sends
 * us to the disk again: kernelspecs may be installed after execd starts
 * (an image's entrypoint installs them in the background).
 */
const struct kp_kernelspec *
context_spec(const char *language)
{
	const struct kp_kernelspec *spec;

	if ((spec = lookup(language)) == NULL && rescan() > 0)
		spec = lookup(language);
	return spec;
}

static int
cmp_name(const void *a, const void *b)
{
	const struct kp_kernelspec *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/*
 * Search the kernelspec path again and add the kernels of names not yet
 * known, keeping the list sorted.  Known specs stay as they are, even if
 * their files changed: contexts and pools point at them.  Returns how many
 * were added.
 */
static size_t
rescan(void)
{
	struct kp_kernelspec **found;
	char **dirs = kp_kernelspec_dirs();
	size_t n = 0, added = 0;
	int rc;

	rc = kp_kernelspec_find_all(dirs, &found, NULL);
	kp_kernelspec_dirs_free(dirs);
	if (rc < 0)
		return 0;
	while (R.specs[n] != NULL)
		n++;
	for (size_t i = 0; found[i] != NULL; i++) {
		size_t j;

		for (j = 0; j < n; j++)
			if (strcmp(R.specs[j]->name, found[i]->name) == 0)
				break;
		if (j < n) {
			kp_kernelspec_free(found[i]);
			continue;
		}
		log_info("kernelspec %s (language %s) found in %s",
		    found[i]->name, found[i]->language,
		    found[i]->resource_dir);
		R.specs = xreallocarray(R.specs, n + 2, sizeof(*R.specs));
		R.specs[n++] = found[i];
		R.specs[n] = NULL;
		added++;
	}
	free(found);
	if (added > 0)
		qsort(R.specs, n, sizeof(*R.specs), cmp_name);
	return added;
}

/* The spec serving language among those known. */
static const struct kp_kernelspec *
lookup(const char *language)
{
	for (size_t i = 0; R.specs[i] != NULL; i++)
		if (strcmp(R.specs[i]->name, language) == 0)
			return R.specs[i];
	for (size_t i = 0; R.specs[i] != NULL; i++)
		if (strcasecmp(R.specs[i]->language, language) == 0)
			return R.specs[i];
	return NULL;
}

/* Every spec, after a search for new ones. */
const struct kp_kernelspec *const *
context_specs(void)
{
	rescan();
	return (const struct kp_kernelspec *const *)R.specs;
}

/* Installed languages with their kernel names, for error messages. */
char *
context_languages(void)
{
	struct buf b;

	buf_init(&b);
	for (size_t i = 0; R.specs[i] != NULL; i++)
		buf_addf(&b, "%s%s (%s)", i ? ", " : "",
		    R.specs[i]->language, R.specs[i]->name);
	if (lookup("bash") == NULL)
		buf_addf(&b, "%sbash (execd's shell)", b.len ? ", " : "");
	return b.p;
}

/* Take default limits from fn; see context.h. */
void
context_set_limits(context_limits_fn *fn, void *arg)
{
	R.limits = fn;
	R.limits_arg = arg;
}

/* A context's limits: the defaults of its language, req's over them. */
static void
job_limits(const char *language, const struct limits *req,
    struct limits *out)
{
	memset(out, 0, sizeof(*out));
	if (R.limits != NULL)
		R.limits(language, out, R.limits_arg);
	if (req != NULL)
		limits_over(out, req);
}

/* A context on a new kernel (pooled: warm, unlisted). */
static int
start(const struct kp_kernelspec *spec, const char *language,
    const char *cwd, bool is_default, bool pooled, const struct limits *req,
    struct context **out, char *err, size_t errlen)
{
	struct context *c = xcalloc(1, sizeof(*c));
	struct limits lim;
	int rc;

	c->spec = spec;
	c->language = xstrdup(language);
	c->cwd = cwd != NULL ? xstrdup(cwd) : NULL;
	c->is_default = is_default;
	c->pooled = pooled;
	c->last_use = loop_now_ms();
	job_limits(spec->language, req, &lim);
	if ((rc = kernel_start(R.loop, R.conf, &lim, spec, cwd, on_kernel,
	    c, &c->k, err, errlen)) < 0) {
		free(c->language);
		free(c->cwd);
		free(c);
		return rc;
	}
	snprintf(c->id, sizeof(c->id), "%s", kernel_id(c->k));
	c->next = R.list;
	R.list = c;
	*out = c;
	return 0;
}

/*
 * Without a bash kernel, a bash context is a persistent shell session:
 * ready at once, state kept between runs.
 */
static int
shell_context(const char *cwd, bool is_default, const struct limits *req,
    struct context **out, char *err, size_t errlen)
{
	struct context *c = xcalloc(1, sizeof(*c));
	struct limits lim;

	c->language = xstrdup("bash");
	c->cwd = cwd != NULL ? xstrdup(cwd) : NULL;
	c->is_default = is_default;
	c->last_use = loop_now_ms();
	job_limits("bash", req, &lim);
	if ((c->sh = session_new(R.loop, R.shell_dir, cwd,
	    R.conf->grace_ms, &lim, err, errlen)) == NULL) {
		free(c->language);
		free(c->cwd);
		free(c);
		return -EIO;
	}
	snprintf(c->id, sizeof(c->id), "%s", session_id(c->sh));
	c->next = R.list;
	R.list = c;
	log_info("context=%s language=bash created (a shell session)",
	    c->id);
	*out = c;
	return 0;
}

/* A ready pooled context of spec, or NULL. */
static struct context *
take_pooled(const struct kp_kernelspec *spec)
{
	for (struct context *c = R.list; c != NULL; c = c->next)
		if (c->pooled && !c->deleted && c->spec == spec &&
		    kernel_ready(c->k))
			return c;
	return NULL;
}

/* What a client is told of a language no kernel serves. */
char *
context_no_kernel(const char *language)
{
	char *have = context_languages(), *msg;

	msg = xasprintf("no kernel is installed for language '%s'; "
	    "installed: %s", language, have);
	free(have);
	return msg;
}

/* Languages that name shell commands, which no context serves. */
bool
context_is_command_language(const char *language)
{
	return strcmp(language, "command") == 0 ||
	    strcmp(language, "background-command") == 0;
}

/* A context for language; see context.h. */
int
context_create(const char *language, const char *cwd,
    bool is_default, const struct limits *req, struct context **out,
    char *err, size_t errlen)
{
	const struct kp_kernelspec *spec = context_spec(language);
	struct context *c;
	char *msg;
	int rc;

	if (spec == NULL && strcmp(language, "bash") == 0)
		return shell_context(cwd, is_default, req, out, err,
		    errlen);
	if (spec == NULL) {
		msg = context_no_kernel(language);
		snprintf(err, errlen, "%s", msg);
		free(msg);
		return -ENOENT;
	}
	/* A pooled kernel runs under the defaults only. */
	if (cwd == NULL && (req == NULL || req->set == 0) &&
	    (c = take_pooled(spec)) != NULL) {
		c->pooled = false;
		free(c->language);
		c->language = xstrdup(language);
		c->is_default = is_default;
		c->last_use = loop_now_ms();
		log_info("context=%s language=%s taken from the pool", c->id,
		    language);
		/* Replace it after this reply has gone out, not before. */
		if (R.t_refill == 0)
			R.t_refill = loop_timer_add(R.loop, 0, on_refill,
			    NULL);
		*out = c;
		return 0;
	}
	if ((rc = start(spec, language, cwd, is_default, false, req, &c,
	    err, errlen)) < 0)
		return rc;
	log_info("context=%s language=%s created", c->id, language);
	*out = c;
	return 0;
}

/* A context for one run; see context.h. */
int
context_create_once(const char *language, const struct limits *req,
    struct context **out, char *err, size_t errlen)
{
	const struct kp_kernelspec *spec = context_spec(language);
	struct context *c;

	if (spec == NULL || !oneshot_can(R.conf, spec))
		return context_create(language, NULL, false, req, out, err,
		    errlen);
	c = xcalloc(1, sizeof(*c));
	c->once = true;
	c->spec = spec;
	c->language = xstrdup(language);
	c->last_use = loop_now_ms();
	job_limits(spec->language, req, &c->lim);
	id_uuid(c->id);
	c->next = R.list;
	R.list = c;
	log_debug("context=%s language=%s created (run once)", c->id,
	    language);
	*out = c;
	return 0;
}

/* A light context's process: a run once that stays. */
static int
light_start(struct context *c, char *err, size_t errlen)
{
	char name[64];

	snprintf(name, sizeof(name), "context=%s", c->id);
	return oneshot_start(R.loop, R.conf, &c->lim, c->spec, c->cwd, NULL,
	    name, &light_cb, c, &c->os, err, errlen);
}

/* A light context, or context_create's; see context.h. */
int
context_create_light(const char *language, const char *cwd,
    bool is_default, const struct limits *req, struct context **out,
    char *err, size_t errlen)
{
	const struct kp_kernelspec *spec = context_spec(language);
	struct context *c;

	if (spec == NULL || !oneshot_can(R.conf, spec) ||
	    (cwd == NULL && (req == NULL || req->set == 0) &&
	    take_pooled(spec) != NULL))
		return context_create(language, cwd, is_default, req, out,
		    err, errlen);
	c = xcalloc(1, sizeof(*c));
	c->light = true;
	c->spec = spec;
	c->language = xstrdup(language);
	c->cwd = cwd != NULL ? xstrdup(cwd) : NULL;
	c->is_default = is_default;
	c->last_use = loop_now_ms();
	job_limits(spec->language, req, &c->lim);
	id_uuid(c->id);
	if (light_start(c, err, errlen) < 0) {
		log_warnx("context=%s: %s; a kernel instead", c->id, err);
		free_context(c);
		return context_create(language, cwd, is_default, req, out,
		    err, errlen);
	}
	c->next = R.list;
	R.list = c;
	log_info("context=%s language=%s created (light)", c->id, language);
	*out = c;
	return 0;
}

/* Free what c holds, and c. */
static void
free_context(struct context *c)
{
	free(c->language);
	free(c->cwd);
	free(c);
}

/* Start kernels until every pool has what it wants (ready or starting). */
static void
refill(void)
{
	struct context *c;
	unsigned have;
	char err[512];

	if (R.closing)
		return;
	for (size_t i = 0; i < R.npools; i++) {
		struct pool *p = &R.pools[i];

		if (p->failures >= POOL_MAX_FAILURES)
			continue;
		have = 0;
		for (c = R.list; c != NULL; c = c->next)
			if (c->pooled && !c->deleted && c->spec == p->spec)
				have++;
		while (have < p->want) {
			if (start(p->spec, p->spec->language, NULL, false,
			    true, NULL, &c, err, sizeof(err)) < 0) {
				log_warnx("pool %s: %s", p->spec->name, err);
				p->failures++;
				break;
			}
			have++;
		}
	}
}

static void
on_refill(struct loop *l, uint64_t id, void *arg)
{

	R.t_refill = 0;
	refill();
}

/* Pools and culling; see context.h. */
int
context_set_policy(const struct context_pool *pool, size_t npool,
    unsigned idle_s)
{
	const struct kp_kernelspec *spec;
	int rc = 0;

	for (size_t i = 0; i < npool && R.npools < MAX_POOLS; i++) {
		if ((spec = context_spec(pool[i].spec)) == NULL) {
			log_warnx("pool: no kernel for %s", pool[i].spec);
			rc = -ENOENT;
			continue;
		}
		R.pools[R.npools++] = (struct pool){ spec, pool[i].n, 0 };
	}
	R.idle_s = idle_s;
	if (idle_s > 0)
		R.t_cull = loop_timer_add(R.loop, 1000, on_cull, NULL);
	refill();
	return rc;
}

/* Delete contexts that ran nothing for idle_s seconds. */
static void
on_cull(struct loop *l, uint64_t id, void *arg)
{
	uint64_t now = loop_now_ms(), limit = (uint64_t)R.idle_s * 1000;

	R.t_cull = 0;
	for (struct context *c = R.list, *next; c != NULL; c = next) {
		next = c->next;		/* c may be freed */
		if (c->deleted || c->pooled || c->runs > 0 ||
		    now - c->last_use < limit)
			continue;
		/*
		 * A kernel's other consumers use it too: one with a subscriber
		 * (a client watching it) is not idle, nor one that a consumer
		 * sent to or heard from lately.  One that is not ready (it
		 * starts or restarts) could not be used yet: its idle time
		 * counts from its ready.
		 */
		if (c->k != NULL && (kernel_state(c->k) == KERNEL_S_STARTING ||
		    kernel_state(c->k) == KERNEL_S_RESTARTING ||
		    kernel_consumers(c->k) > 0 ||
		    loop_wall_ms() - kernel_last_activity(c->k) <
		    (int64_t)limit))
			continue;
		log_info("context=%s idle for %u s: deleting it", c->id,
		    R.idle_s);
		context_delete(c);
	}
	R.t_cull = loop_timer_add(l, 1000, on_cull, NULL);
}

/* Count a run in or out, and note the use. */
static void
context_use(struct context *c, int delta)
{
	c->runs += delta;
	c->last_use = loop_now_ms();
}

/* Delete everything, pooled contexts included, and stop refilling. */
void
context_delete_all(void)
{
	struct context *c, *next;

	R.closing = true;
	if (R.t_cull != 0)
		loop_timer_cancel(R.loop, R.t_cull);
	if (R.t_refill != 0)
		loop_timer_cancel(R.loop, R.t_refill);
	R.t_cull = R.t_refill = 0;
	for (c = R.list; c != NULL; c = next) {
		next = c->next;
		context_delete(c);
	}
}

/* A live context by id. */
struct context *
context_find(const char *id)
{
	for (struct context *c = R.list; c != NULL; c = c->next)
		if (!c->deleted && !c->pooled && strcmp(c->id, id) == 0)
			return c;
	return NULL;
}

/* The live default context of a language. */
struct context *
context_default(const char *language)
{
	for (struct context *c = R.list; c != NULL; c = c->next)
		if (!c->deleted && !c->pooled && c->is_default &&
		    strcmp(c->language, language) == 0)
			return c;
	return NULL;
}

/* Visit live contexts, newest first; fn may delete the one it is given. */
void
context_each(const char *language,
    void (*fn)(struct context *, void *), void *arg)
{
	struct context *c, *next;

	for (c = R.list; c != NULL; c = next) {
		next = c->next;
		if (!c->deleted && !c->pooled && (language == NULL ||
		    strcmp(c->language, language) == 0))
			fn(c, arg);
	}
}

/* Hide the context and stop its kernel; freed when the kernel is gone. */
void
context_delete(struct context *c)
{
	if (c->deleted)
		return;
	c->deleted = true;
	log_info("context=%s deleted", c->id);
	wake(c, "the context was deleted");
	/* A run once's runs end now, unheard of it from here on. */
	oneshot_free(c->os);
	c->os = NULL;
	if (c->once && c->execs != NULL)
		exec_finish(c->execs, NULL, "the context was deleted");
	end_light_runs(c, "the context was deleted");
	if (c->k == NULL) {
		/*
		 * A shell or a run once goes at once: no kernel to wait for.
		 * A shell reports the end of its runs as it is freed.
		 */
		session_free(c->sh);
		unlink_context(c);
		free_context(c);
		return;
	}
	kernel_shutdown(c->k);
}

/* Tell every waiter; why is NULL for "ready". */
static void
wake(struct context *c, const char *why)
{
	struct waiter *w;

	while ((w = c->waiters) != NULL) {
		c->waiters = w->next;
		w->cb(c, why, w->arg);
		free(w);
	}
}

/* Wait for readiness; see context.h. */
void
context_wait(struct context *c, context_wait_cb *cb, void *arg)
{
	struct waiter *w, **pp;

	if (context_ready(c)) {
		cb(c, NULL, arg);
		return;
	}
	w = xcalloc(1, sizeof(*w));
	w->cb = cb;
	w->arg = arg;
	for (pp = &c->waiters; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = w;	/* in arrival order */
}

/* Forget a wait by its arg. */
void
context_wait_cancel(struct context *c, void *arg)
{
	for (struct waiter **pp = &c->waiters; *pp != NULL;
	    pp = &(*pp)->next) {
		if ((*pp)->arg == arg) {
			struct waiter *w = *pp;

			*pp = w->next;
			free(w);
			return;
		}
	}
}

static void
unlink_context(struct context *c)
{
	for (struct context **pp = &R.list; *pp != NULL;
	    pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			return;
		}
	}
}

/* Kernel events: wake waiters; a dead kernel takes its context along. */
static void
on_kernel(struct kernel *k, enum kernel_event ev, const char *why,
    void *arg)
{
	struct context *c = arg;

	switch (ev) {
	case KERNEL_READY:
		if (c->pooled)
			for (size_t i = 0; i < R.npools; i++)
				if (R.pools[i].spec == c->spec)
					R.pools[i].failures = 0;
		wake(c, NULL);
		break;
	case KERNEL_RESTARTING:
		log_warnx("context=%s restarting: %s", c->id, why);
		break;
	case KERNEL_DEAD:
		if (!c->deleted)
			log_warnx("context=%s is dead: %s", c->id, why);
		if (c->pooled && !c->deleted && !R.closing) {
			/* A warm kernel that could not start: try later. */
			for (size_t i = 0; i < R.npools; i++)
				if (R.pools[i].spec == c->spec)
					R.pools[i].failures++;
			if (R.t_refill == 0)
				R.t_refill = loop_timer_add(R.loop,
				    POOL_RETRY_MS, on_refill, NULL);
		}
		c->deleted = true;
		wake(c, why);
		unlink_context(c);
		oneshot_free(c->os);
		end_light_runs(c, why);
		free_context(c);
		break;
	}
}

const char *
context_id(const struct context *c)
{
	return c->id;
}

const char *
context_language(const struct context *c)
{
	return c->language;
}

const char *
context_cwd(const struct context *c)
{
	return c->cwd;
}

bool
context_ready(const struct context *c)
{
	return !c->deleted && (c->sh != NULL || c->once ||
	    (c->light ? c->up : kernel_ready(c->k)));
}

const struct kp_kernelspec *
context_kernelspec(const struct context *c)
{
	return c->k != NULL ? c->spec : NULL;
}

struct kernel *
context_kernel(const struct context *c)
{
	return c->k;
}

/* The light context's process, told to become a kernel. */
static pid_t
become(const char *connfile, int out_fd, void *arg)
{
	struct context *c = arg;

	return oneshot_become(c->os, connfile, out_fd);
}

/* c's kernel, made now of a light context's process; see context.h. */
struct kernel *
context_kernel_want(struct context *c)
{
	char err[512];

	if (c->k != NULL || !c->light || !c->up || c->deleted)
		return c->k;
	if (kernel_adopt(R.loop, R.conf, &c->lim, c->spec, c->cwd, c->id,
	    become, c, on_kernel, c, &c->k, err, sizeof(err)) < 0) {
		log_warnx("context=%s: no kernel made of it: %s", c->id, err);
		c->k = NULL;
		return NULL;
	}
	c->light = false;
	log_info("context=%s becomes a kernel", c->id);
	return c->k;
}

/* Run code in c: on its kernel, or in its shell. */
int
context_run(struct context *c, const char *code, long long timeout_ms,
    const struct context_run_cb *cb, void *arg)
{
	struct exec *x;
	char err[256], name[64];
	int rc;

	if (c->deleted || (c->sh == NULL && c->k == NULL && !c->once &&
	    c->os == NULL))
		return -ESRCH;
	if (c->once && c->used)
		return -EBUSY;		/* its one run has begun */
	x = xcalloc(1, sizeof(*x));
	x->c = c;
	x->cb = cb;
	x->arg = arg;
	x->timeout_ms = timeout_ms;
	if (c->sh != NULL)
		rc = session_run(c->sh, code, NULL, (unsigned)timeout_ms,
		    shell_output, shell_done, x);
	else if (c->light) {
		x->light = true;
		rc = oneshot_run(c->os, code);
	} else if (c->once) {
		snprintf(name, sizeof(name), "context=%s", c->id);
		rc = oneshot_start(R.loop, R.conf, &c->lim, c->spec, c->cwd,
		    code, name, &once_cb, x, &c->os, err, sizeof(err));
		if (rc < 0)
			log_warnx("context=%s: %s", c->id, err);
	} else
		rc = kernel_execute(c->k, code, &exec_cb, x, x->msg_id);
	if (rc < 0) {
		free(x);
		return rc;
	}
	c->used = true;
	if (c->sh == NULL && timeout_ms > 0)
		x->tmo = loop_timer_add(R.loop, (uint64_t)timeout_ms,
		    exec_timeout, x);
	x->next = c->execs;
	c->execs = x;
	context_use(c, +1);
	return 0;
}

/* The run named arg no longer reports: it goes on, unheard. */
void
context_run_forget(struct context *c, void *arg)
{
	struct exec *x;

	for (x = c->execs; x != NULL && x->arg != arg; x = x->next)
		;
	if (x == NULL)
		return;
	if (x->light) {
		/* It runs to its end: the next one's events follow it. */
		x->forgotten = true;
		return;
	}
	if (c->sh != NULL)
		session_run_forget(c->sh, x);
	else if (c->k != NULL)
		kernel_execute_forget(c->k, x->msg_id);
	if (c->once) {
		/* A run once no one hears is of no use to anyone: it stops. */
		oneshot_free(c->os);
		c->os = NULL;
	}
	exec_end(x);
}

int
context_interrupt(struct context *c)
{
	if (c->sh != NULL)
		return session_interrupt(c->sh);
	if (c->k != NULL)
		return kernel_interrupt(c->k);
	return c->os != NULL ? oneshot_interrupt(c->os, 0) : -ESRCH;
}

/* The run is over for its caller: unlink and free it. */
static void
exec_end(struct exec *x)
{
	struct context *c = x->c;

	for (struct exec **pp = &c->execs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	if (x->tmo != 0)
		loop_timer_cancel(R.loop, x->tmo);
	context_use(c, -1);
	free(x);
}

/* An event of a run: an interrupt of ours is reported as the timeout. */
static void
exec_event(struct exec *x, struct kevent *ev)
{
	if (ev->kind == KEV_ERROR && x->timed_out &&
	    strcmp(ev->ename, "KeyboardInterrupt") == 0) {
		kevent_clear(ev);
		return;
	}
	x->cb->event(ev, x->arg);
}

/* The events of one iopub message of a kernel's run. */
static void
exec_output(struct kernel *k, const struct kp_msg *m, void *arg)
{
	struct kevent_set set;

	kevent_iopub(m, &set);
	for (size_t i = 0; i < set.n; i++)
		exec_event(arg, &set.ev[i]);
}

/* A kernel's run ended. */
static void
exec_done(struct kernel *k, const struct kp_msg *reply, const char *why,
    void *arg)
{
	exec_finish(arg, reply != NULL ? reply->content : NULL, why);
}

/* An event of a run once. */
static void
once_event(struct kevent *ev, void *arg)
{
	exec_event(arg, ev);
}

/* A run once ended: its process is gone. */
static void
once_done(const char *why, void *arg)
{
	struct exec *x = arg;
	struct context *c = x->c;
	json_t *none = json_object();

	oneshot_free(c->os);
	c->os = NULL;
	exec_finish(x, why == NULL ? none : NULL, why);
	json_decref(none);
}

/* The light run that runs now: the first sent of those not ended. */
static struct exec *
light_head(struct context *c)
{
	struct exec *h = NULL;

	for (struct exec *x = c->execs; x != NULL; x = x->next)
		if (x->light)
			h = x;		/* newest first: the last is oldest */
	return h;
}

/* Every light run not ended ends, with why. */
static void
end_light_runs(struct context *c, const char *why)
{
	struct exec *x;

	while ((x = light_head(c)) != NULL) {
		if (x->forgotten)
			exec_end(x);
		else
			exec_finish(x, NULL, why);
	}
}

/* An event of a light context's process: its run's. */
static void
light_event(struct kevent *ev, void *arg)
{
	struct exec *x = light_head(arg);

	if (x != NULL && !x->forgotten)
		exec_event(x, ev);
	else
		kevent_clear(ev);
}

/* The light context's process waits for code: ready the first time. */
static void
light_idle(void *arg)
{
	struct context *c = arg;

	if (c->up || c->k != NULL)
		return;
	c->up = true;
	log_info("context=%s ready (light)", c->id);
	wake(c, NULL);
}

/* A light run ended; the next, if out of time, is interrupted. */
static void
light_reply(const json_t *reply, void *arg)
{
	struct context *c = arg;
	struct exec *x = light_head(c);

	if (x == NULL)
		return;
	if (x->forgotten)
		exec_end(x);
	else
		exec_finish(x, reply, NULL);
	if ((x = light_head(c)) != NULL && x->timed_out && c->os != NULL)
		oneshot_interrupt(c->os, R.conf->grace_ms);
}

/*
 * The light context's process is gone: its runs end; it is started
 * again (a kernel's restart), or a kernel takes over when it never came
 * up.  After it became a kernel, that is all it had to say.
 */
static void
light_done(const char *why, void *arg)
{
	struct context *c = arg;
	const char *what = why != NULL ? why : "the process ended";
	char err[512] = "";

	oneshot_free(c->os);
	c->os = NULL;
	end_light_runs(c, what);
	if (c->k != NULL) {
		/* It has begun to be the kernel (or is gone: the reaper's). */
		kernel_adopt_begun(c->k);
		return;
	}
	if (c->deleted)
		return;
	if (c->up) {
		log_warnx("context=%s: %s; starting it anew", c->id, what);
		c->up = false;
		if (light_start(c, err, sizeof(err)) == 0)
			return;
		what = err;
	}
	log_warnx("context=%s: %s; a kernel instead", c->id, what);
	c->light = false;
	if (kernel_start(R.loop, R.conf, &c->lim, c->spec, c->cwd,
	    on_kernel, c, &c->k, err, sizeof(err)) < 0) {
		log_warnx("context=%s is dead: %s", c->id, err);
		c->deleted = true;
		wake(c, err);
		unlink_context(c);
		free_context(c);
	}
}

/*
 * A kernel's run or a run once ended (reply: the execute_reply's
 * content, or NULL with why): its timeout first, if it had one.
 */
static void
exec_finish(struct exec *x, const json_t *reply, const char *why)
{
	const struct context_run_cb *cb = x->cb;
	void *carg = x->arg;
	struct kevent e;
	char msg[128];

	if (x->timed_out) {
		snprintf(msg, sizeof(msg), "execution timed out after %lld ms "
		    "and was interrupted", x->timeout_ms);
		kevent_error(&e, "TimeoutError", msg, NULL);
		cb->event(&e, carg);
	}
	/* The context may go with its kernel: nothing may reach it now. */
	exec_end(x);
	cb->done(reply, why, carg);
}

/*
 * A kernel's run or a run once is out of time: interrupt (a run once
 * is killed if that does not end it within the grace); exec_finish
 * reports it.
 */
static void
exec_timeout(struct loop *l, uint64_t id, void *arg)
{
	struct exec *x = arg;

	x->tmo = 0;
	x->timed_out = true;
	/* A light run waiting its turn is interrupted when it comes. */
	if (x->c->once || x == light_head(x->c)) {
		if (x->c->os != NULL)
			oneshot_interrupt(x->c->os, R.conf->grace_ms);
	} else if (!x->light && x->c->k != NULL) {
		kernel_interrupt(x->c->k);
	}
}

/* Shell output, verbatim, as a kernel's stream text would be. */
static void
shell_output(int which, const char *p, size_t n, void *arg)
{
	struct exec *x = arg;
	struct kevent e = { .kind = which == 2 ? KEV_STDERR : KEV_STDOUT,
	    .text = p, .len = n };

	x->cb->event(&e, x->arg);
}

/* The shell's run ended: a non-zero status is an error, as in Jupyter. */
static void
shell_done(int status, bool timed_out, const char *reset, void *arg)
{
	struct exec *x = arg;
	const struct context_run_cb *cb = x->cb;
	void *carg = x->arg;
	char value[16], line[64];
	struct kevent e;
	json_t *tb, *none;

	if (status != 0 || timed_out) {
		snprintf(value, sizeof(value), "%d", timed_out ? -1 : status);
		snprintf(line, sizeof(line), timed_out ? "timed out after %lld "
		    "ms" : "exit status %lld", timed_out ? x->timeout_ms :
		    (long long)status);
		tb = json_pack("[s]", line);
		if (reset[0] != '\0')
			json_array_append_new(tb, json_string(reset));
		kevent_error(&e, timed_out ? "TimeoutError" :
		    "CommandExecError", value, tb);
		json_decref(tb);
		cb->event(&e, carg);
	}
	exec_end(x);
	none = json_object();
	cb->done(none, NULL, carg);
	json_decref(none);
}

/* Where shell contexts keep their run files. */
void
context_set_shell_dir(const char *dir)
{
	free(R.shell_dir);
	R.shell_dir = xstrdup(dir);
}
