/*
 * service.c -- supervised services (service.h).
 *
 * A service's life: waiting (for the one it comes after) -> running ->
 * (it ends) backoff -> running ..., or exited when its restart policy
 * says no more; stopped at execd's exit.  One timer per service at most:
 * the wait for its turn (polling the earlier one's state and ready
 * path), or the backoff.  Its output is not kept beyond a tail, logged
 * when it ends: services write to their own logs if they need more.
 *
 * A service that will start again takes those after it along: each that
 * runs is stopped (job_stop: SIGTERM, SIGKILL after the grace period),
 * and its end puts it back to waiting, without a backoff, and takes its
 * own followers along in turn; one that is not running (in its backoff,
 * exited, waiting) waits again at once, and so do its followers.  All
 * then start in order as each one before them is ready again: an X
 * server's clients come back with the new server.  A service that ends
 * for good (its restart policy says no more) leaves its followers be.
 *
 * The ready path is checked with access() on a worker (work.h), never on
 * the loop: a path on a hung mount must not stall execd.  One check per
 * service is in flight at most; the next poll is armed when it answers.
 * A check that takes longer than --fs-timeout is abandoned (its worker
 * no longer counts, see work_abandon) and logged; the service is not
 * ready until a check answers.  A check's answer counts only for the run
 * it was made for.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../util/rfc3339.h"
#include "../config/conf.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/work.h"
#include "../core/xmalloc.h"
#include "../process/envfile.h"
#include "../process/job.h"
#include "service.h"

enum svc_state { S_WAITING, S_RUNNING, S_BACKOFF, S_EXITED, S_STOPPED };

static const char *const state_names[] = { "waiting", "running",
    "backoff", "exited", "stopped" };

struct svc {
	const struct conf_service *cf;
	enum svc_state	 state;
	struct job	*job;
	pid_t		 pid;
	unsigned	 restarts;	/* starts after the first */
	unsigned	 fails;		/* ends in a row, for the backoff */
	bool		 started;	/* once, at least */
	bool		 ready;
	bool		 requeued;	/* stopped for the one before it */
	unsigned	 run;		/* counts starts: whose check is it */
	struct probe	*probe;		/* the ready check in flight */
	char		 last[320];	/* how the last run ended, or "" */
	struct timespec	 since;		/* CLOCK_REALTIME */
	uint64_t	 t_run;		/* loop_now_ms() of the last start */
	uint64_t	 timer;		/* 0: none */
	char		 tail[SERVICE_TAIL];
	size_t		 ntail;
};

/* A check of a ready path, on a worker. */
struct probe {
	struct svc	*s;		/* NULL once the service is gone */
	char		*path;
	unsigned	 run;
	int		 rc;		/* access()'s */
	struct work_job	*job;
	bool		 abandoned;
	uint64_t	 t0;
};

static struct loop		*L;
static const struct conf	*C;
static struct svc		*svcs;
static size_t			 nsvcs;
static bool			 stopping;	/* service_stop() was called */

static void	try_start(struct svc *);
static void	on_timer(struct loop *, uint64_t, void *);
static void	requeue_after(struct svc *);
static void	probe_tick(struct svc *);

static void
set_state(struct svc *s, enum svc_state st)
{
	s->state = st;
	clock_gettime(CLOCK_REALTIME, &s->since);
}

static struct svc *
find(const char *name)
{
	for (size_t i = 0; i < nsvcs; i++)
		if (strcmp(svcs[i].cf->name, name) == 0)
			return &svcs[i];
	return NULL;
}

static void
status_text(int st, char *out, size_t len)
{
	if (WIFEXITED(st))
		snprintf(out, len, "exit status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(out, len, "killed by signal %d (%s)", WTERMSIG(st),
		    strsignal(WTERMSIG(st)));
	else
		snprintf(out, len, "status %d", st);
}

static void
arm(struct svc *s, uint64_t ms)
{
	if (s->timer != 0)
		loop_timer_cancel(L, s->timer);
	s->timer = loop_timer_add(L, ms, on_timer, s);
}

/* The wait before the next start, doubling with each end in a row. */
static uint64_t
backoff_ms(struct svc *s)
{
	uint64_t delay = SERVICE_BACKOFF_MIN_MS;

	for (unsigned i = 0; i < s->fails && delay < SERVICE_BACKOFF_MAX_MS;
	    i++)
		delay *= 2;
	s->fails++;
	return delay < SERVICE_BACKOFF_MAX_MS ? delay : SERVICE_BACKOFF_MAX_MS;
}

static void
on_output(struct job *j, int stream, const char *p, size_t n, void *arg)
{
	struct svc *s = arg;

	(void)j;
	(void)stream;
	if (n >= sizeof(s->tail)) {
		p += n - sizeof(s->tail);
		n = sizeof(s->tail);
	}
	if (s->ntail + n > sizeof(s->tail)) {
		size_t drop = s->ntail + n - sizeof(s->tail);

		memmove(s->tail, s->tail + drop, s->ntail - drop);
		s->ntail -= drop;
	}
	memcpy(s->tail + s->ntail, p, n);
	s->ntail += n;
}

static void
on_done(struct job *j, int st, bool timed_out, void *arg)
{
	struct svc *s = arg;
	const struct conf_service *cf = s->cf;
	uint64_t ran = loop_now_ms() - s->t_run, delay;
	size_t from = 0;
	bool again;

	(void)timed_out;
	status_text(st, s->last, sizeof(s->last));
	/* The tail's last line or so, for the log. */
	while (s->ntail > 0 && (s->tail[s->ntail - 1] == '\n' ||
	    s->tail[s->ntail - 1] == '\r'))
		s->ntail--;
	if (s->ntail > 200)
		from = s->ntail - 200;
	log_msg(stopping ? LOG_L_INFO : LOG_L_WARN, __func__, 0, "service %s "
	    "(pid %d) ended: %s%s%.*s", cf->name,
	    (int)s->pid, s->last, s->ntail > 0 ? "; its output ends: " : "",
	    (int)(s->ntail - from), s->tail + from);
	s->job = NULL;
	s->pid = 0;
	s->ready = false;
	job_free(j);
	if (stopping) {
		set_state(s, S_STOPPED);
		return;
	}
	if (s->requeued) {
		/* Stopped for the one before it: wait for that one again. */
		s->requeued = false;
		set_state(s, S_WAITING);
		log_info("service %s: started again after %s", cf->name,
		    cf->after);
		requeue_after(s);
		try_start(s);
		return;
	}
	again = cf->restart == CONF_RESTART_ALWAYS ||
	    (cf->restart == CONF_RESTART_ON_FAILURE &&
	    !(WIFEXITED(st) && WEXITSTATUS(st) == 0));
	if (!again) {
		set_state(s, S_EXITED);
		return;
	}
	if (ran >= SERVICE_STABLE_MS)
		s->fails = 0;
	delay = backoff_ms(s);
	set_state(s, S_BACKOFF);
	log_info("service %s: started again in %llu ms", cf->name,
	    (unsigned long long)delay);
	arm(s, delay);
	requeue_after(s);
}

/*
 * s starts again: those after it, directly or not, start again once it
 * is ready (see the top of the file).
 */
static void
requeue_after(struct svc *s)
{
	for (size_t i = 0; i < nsvcs; i++) {
		struct svc *t = &svcs[i];

		if (strcmp(t->cf->after, s->cf->name) != 0)
			continue;
		switch (t->state) {
		case S_RUNNING:
			if (!t->requeued && t->job != NULL) {
				t->requeued = true;
				log_info("service %s: stopped, as %s starts "
				    "again", t->cf->name, s->cf->name);
				(void)job_stop(t->job);
			}
			break;
		case S_BACKOFF:
		case S_EXITED:
			if (t->timer != 0)
				loop_timer_cancel(L, t->timer);
			t->timer = 0;
			set_state(t, S_WAITING);
			requeue_after(t);
			arm(t, SERVICE_READY_POLL_MS);
			break;
		default:
			break;	/* waiting already, or stopped */
		}
	}
}

/* Run it now: 0, or -errno (logged; a backoff follows). */
static int
spawn(struct svc *s)
{
	const struct conf_service *cf = s->cf;
	json_t *env = json_object(), *over;
	struct job_opts o = { .argv = cf->argv, .cwd = cf->cwd,
	    .grace_ms = C->grace_ms, .out_fd = -1,
	    .limits = &C->limits[LIMITS_COMMAND] };
	char **envp, err[256];
	int rc;

	for (size_t i = 0; cf->env != NULL && cf->env[i] != NULL; i++) {
		const char *eq = strchr(cf->env[i], '=');
		char *k = xstrndup(cf->env[i], (size_t)(eq - cf->env[i]));

		json_object_set_new(env, k, json_string(eq + 1));
		free(k);
	}
	over = envfile_overlay(env);
	json_decref(env);
	envp = envfile_env(over, cf->cwd);
	json_decref(over);
	o.envp = envp;
	s->ntail = 0;
	rc = job_start(L, &o, on_output, on_done, s, &s->job, err,
	    sizeof(err));
	envfile_env_free(envp);
	if (rc < 0) {
		log_warnx("service %s: cannot start: %s", cf->name, err);
		snprintf(s->last, sizeof(s->last), "not started: %s", err);
		return rc;
	}
	if (s->started)
		s->restarts++;
	s->started = true;
	s->run++;
	s->pid = job_pid(s->job);
	s->t_run = loop_now_ms();
	s->ready = cf->ready == NULL;
	set_state(s, S_RUNNING);
	log_info("service %s started (pid %d)", cf->name, (int)s->pid);
	if (!s->ready)
		arm(s, SERVICE_READY_POLL_MS);
	return 0;
}

/* Start s if its turn came, else look again soon. */
static void
try_start(struct svc *s)
{
	struct svc *dep = s->cf->after[0] != '\0' ? find(s->cf->after) : NULL;

	if (dep != NULL && !(dep->state == S_RUNNING && dep->ready)) {
		arm(s, SERVICE_READY_POLL_MS);
		return;
	}
	if (spawn(s) < 0) {
		/* As if it had ended at once: the backoff applies. */
		set_state(s, S_BACKOFF);
		arm(s, backoff_ms(s));
	}
}

static void
probe_run(void *arg)
{
	struct probe *p = arg;

	p->rc = access(p->path, F_OK);
}

static void
probe_done(void *arg)
{
	struct probe *p = arg;
	struct svc *s = p->s;

	if (s != NULL) {
		s->probe = NULL;
		if (s->state == S_RUNNING && s->timer != 0) {
			loop_timer_cancel(L, s->timer);	/* the abandon's */
			s->timer = 0;
		}
		if (p->abandoned)
			log_info("service %s: the check of %s answered after "
			    "all", s->cf->name, p->path);
		if (s->state == S_RUNNING && !s->ready && !stopping) {
			if (p->run == s->run && p->rc == 0) {
				s->ready = true;
				log_info("service %s is ready (%s)",
				    s->cf->name, s->cf->ready);
			} else
				arm(s, SERVICE_READY_POLL_MS);
		}
	}
	free(p->path);
	free(p);
}

/*
 * The poll of a service's ready path: a check on a worker, unless one is
 * in flight, which is abandoned once it has taken --fs-timeout.  The
 * check's done arms the next poll.
 */
static void
probe_tick(struct svc *s)
{
	struct probe *p = s->probe;
	uint64_t limit = (uint64_t)(C->fs_timeout > 0 ? C->fs_timeout : 60) *
	    1000, now = loop_now_ms();

	if (p != NULL) {
		if (!p->abandoned && now - p->t0 >= limit) {
			p->abandoned = true;
			work_abandon(p->job);
			log_warnx("service %s: %s did not answer in %llu s "
			    "(a hung mount?): not ready until it does",
			    s->cf->name, p->path,
			    (unsigned long long)(limit / 1000));
		}
		if (!p->abandoned)
			arm(s, limit - (now - p->t0));
		return;
	}
	p = xcalloc(1, sizeof(*p));
	p->s = s;
	p->path = xstrdup(s->cf->ready);
	p->run = s->run;
	p->t0 = now;
	s->probe = p;
	p->job = work_submit(probe_run, probe_done, p);
	arm(s, limit);	/* to abandon it; its answer cancels this */
}

static void
on_timer(struct loop *l, uint64_t id, void *arg)
{
	struct svc *s = arg;

	(void)l;
	(void)id;
	s->timer = 0;
	switch (s->state) {
	case S_WAITING:
	case S_BACKOFF:
		try_start(s);
		break;
	case S_RUNNING:
		if (!s->ready)
			probe_tick(s);
		break;
	default:
		break;
	}
}

void
service_start(struct loop *loop, const struct conf *c)
{
	L = loop;
	C = c;
	nsvcs = c->nservices;
	if (nsvcs == 0)
		return;
	svcs = xcalloc(nsvcs, sizeof(*svcs));
	for (size_t i = 0; i < nsvcs; i++) {
		svcs[i].cf = &c->services[i];
		set_state(&svcs[i], S_WAITING);
	}
	/* In order: one that waits for an earlier one polls for its turn. */
	for (size_t i = 0; i < nsvcs; i++)
		try_start(&svcs[i]);
}

json_t *
service_list(void)
{
	json_t *arr = json_array(), *o;
	char since[RFC3339_LEN];

	for (size_t i = 0; i < nsvcs; i++) {
		struct svc *s = &svcs[i];

		rfc3339_ns(&s->since, since);
		o = json_pack("{s:s, s:s, s:I, s:b, s:s}", "name", s->cf->name,
		    "state", state_names[s->state], "restarts",
		    (json_int_t)s->restarts, "ready", s->ready, "since",
		    since);
		json_object_set_new(o, "pid", s->state == S_RUNNING ?
		    json_integer(s->pid) : json_null());
		json_object_set_new(o, "last_exit", s->last[0] != '\0' ?
		    json_string(s->last) : json_null());
		json_array_append_new(arr, o);
	}
	return arr;
}

void
service_stop(void)
{
	stopping = true;
	for (size_t i = 0; i < nsvcs; i++) {
		struct svc *s = &svcs[i];

		if (s->timer != 0)
			loop_timer_cancel(L, s->timer);
		s->timer = 0;
		if (s->state == S_WAITING || s->state == S_BACKOFF)
			set_state(s, S_STOPPED);
	}
}

void
service_shutdown(void)
{
	/* In reverse: the X server last. */
	for (size_t i = nsvcs; i-- > 0;) {
		struct svc *s = &svcs[i];

		if (s->timer != 0)
			loop_timer_cancel(L, s->timer);
		if (s->job != NULL)
			log_info("service %s (pid %d) stopped", s->cf->name,
			    (int)s->pid);
		job_free(s->job);
		s->job = NULL;
		s->state = S_STOPPED;
		if (s->probe != NULL)
			s->probe->s = NULL;	/* its done frees it alone */
	}
	free(svcs);
	svcs = NULL;
	nsvcs = 0;
}
