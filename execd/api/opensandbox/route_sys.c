/*
 * route_sys.c -- GET /ping, GET /metrics and the GET /metrics/watch stream.
 *
 * /metrics answers from one cheap sample: the CPU percentage is measured
 * between this sample and the previous one the daemon took (a request
 * never sleeps to measure).  Each watch stream keeps its own previous
 * sample and pushes one event a second until the client leaves; pings,
 * the overflow and the final event are the stream layer's (evstream.h).
 */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#include "../../config/conf.h"
#include "../../core/log.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../../domain/isolated.h"
#include "../../domain/metrics.h"
#include "../../process/cgroup.h"
#include "../../transport/evstream.h"
#include "../../transport/http.h"
#include "../execd.h"
#include "route.h"

#define WATCH_INTERVAL_MS	1000
/* Samples closer than this give a noisy rate: reuse the last one. */
#define MIN_CPU_WINDOW_USEC	100000

struct sampler {
	struct loop		*loop;
	struct evstream		*s;
	uint64_t		 timer;
	struct metrics_sample	 prev;
};

static json_t	*sample_json(const struct metrics_sample *, double);
static void	 sampler_tick(struct loop *, uint64_t, void *);
static void	 sampler_gone(void *);

/* 200 with no body: the daemon is up. */
void
route_ping(struct http_req *req)
{
	http_reply_empty(req);
}

static double
round2(double v)
{
	return round(v * 100.0) / 100.0;
}

/* The wire object, keys as upstream names them. */
static json_t *
sample_json(const struct metrics_sample *s, double pct)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:I}",
	    "cpu_count", s->cpu_count,
	    "cpu_used_pct", round2(pct),
	    "mem_total_mib", round2(s->mem_total_mib),
	    "mem_used_mib", round2(s->mem_used_mib),
	    "timestamp", (json_int_t)s->timestamp_ms);
}

/*
 * How children are isolated (an addition to upstream's object): the
 * seccomp profile, no_new_privs, what enforces limits, the default limits
 * per kind of job, execd's OOM score, the default user and how many
 * isolated sessions are open.
 */
static json_t *
isolation_json(const struct conf *c)
{
	json_t *o, *d;
	char buf[16] = "";
	int fd;
	ssize_t n;

	fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	d = json_object();
	for (int k = 0; k < LIMITS_NKINDS; k++)
		json_object_set_new(d, limits_kind_name((enum limits_kind)k),
		    limits_json(&c->limits[k]));
	o = json_pack("{s:s, s:s, s:b, s:s, s:o, s:i}",
	    "seccomp", sandbox_profile_name(c->sandbox.profile),
	    "seccomp_mode", c->sandbox.log_only ? "log" : "enforce",
	    "no_new_privs", c->sandbox.no_new_privs,
	    "limits", cgroup_mode_name(cgroup_mode()),
	    "default_limits", d,
	    "oom_score_adj", atoi(buf));
	if (o != NULL) {
		json_object_set_new(o, "user", c->user.set ?
		    json_string(c->user.name) : json_null());
		json_object_set_new(o, "isolated_sessions",
		    json_integer((json_int_t)isolated_count()));
	}
	return o;
}

/* One sample, CPU measured since the daemon's previous sample. */
void
route_metrics(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	struct metrics_sample cur;
	char err[256];
	json_t *body;

	if (metrics_read(&metrics_src_system, &cur, err, sizeof(err)) < 0) {
		http_reply_error(req, 500, HTTP_E_RUNTIME,
		    "error reading runtime metrics. %s", err);
		return;
	}
	if (cur.wall_usec - app->msample.wall_usec >= MIN_CPU_WINDOW_USEC ||
	    app->msample.wall_usec == 0) {
		if (app->msample.wall_usec != 0)
			app->mcpu_pct = metrics_cpu_pct(&app->msample, &cur);
		app->msample = cur;
	}
	body = sample_json(&cur, app->mcpu_pct);
	if (body != NULL) {
		json_object_set_new(body, "isolation",
		    isolation_json(app->conf));
		json_object_set_new(body, "loop_stall_max_ms", json_integer(
		    (json_int_t)loop_worst_stall_ms(app->loop)));
	}
	http_reply_json(req, 200, body);
}

/* Open the stream, send a first sample now, then one a second. */
void
route_metrics_watch(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	struct sampler *w = xcalloc(1, sizeof(*w));
	struct evstream_opts o = { .shape = EVSTREAM_PLAIN,
	    .gone = sampler_gone, .arg = w };

	w->loop = app->loop;
	w->prev = app->msample;
	if ((w->s = evstream_open(req, &o)) == NULL) {
		free(w);
		return;
	}
	if (evstream_ended(w->s))	/* opened during shutdown */
		return;
	sampler_tick(app->loop, 0, w);
}

/* One sample (or the error reading it), then the next in a second. */
static void
sampler_tick(struct loop *l, uint64_t id, void *arg)
{
	struct sampler *w = arg;
	struct metrics_sample cur;
	char err[256];

	w->timer = 0;
	if (evstream_ended(w->s))
		return;
	if (metrics_read(&metrics_src_system, &cur, err, sizeof(err)) < 0) {
		(void)evstream_json(w->s, json_pack("{s:s}", "error", err));
	} else {
		(void)evstream_json(w->s, sample_json(&cur,
		    metrics_cpu_pct(&w->prev, &cur)));
		w->prev = cur;
	}
	if (!evstream_ended(w->s))
		w->timer = loop_timer_add(l, WATCH_INTERVAL_MS, sampler_tick,
		    w);
}

static void
sampler_gone(void *arg)
{
	struct sampler *w = arg;

	if (w->timer != 0)
		loop_timer_cancel(w->loop, w->timer);
	free(w);
}
