/*
 * route_sys.c -- GET /ping, GET /metrics and the GET /metrics/watch stream.
 *
 * /metrics answers from one cheap sample: the CPU percentage is measured
 * between this sample and the previous one the daemon took (a request
 * never sleeps to measure).  Each watch stream keeps its own previous
 * sample and pushes one event a second until the client leaves.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <jansson.h>

#include "../sse/sse_fmt.h"
#include "execd.h"
#include "http.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "route.h"
#include "xmalloc.h"

#define WATCH_INTERVAL_MS	1000
/* Samples closer than this give a noisy rate: reuse the last one. */
#define MIN_CPU_WINDOW_USEC	100000

struct watch {
	struct execd		*app;
	struct sse_stream	*s;
	uint64_t		 timer;
	struct metrics_sample	 prev;
};

static json_t	*sample_json(const struct metrics_sample *, double);
static void	 watch_tick(struct loop *, uint64_t, void *);
static void	 watch_gone(struct sse_stream *, void *);
static void	 watch_shutdown(struct sse_stream *, void *);
static void	 watch_push(struct watch *, json_t *);

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

/* One sample, CPU measured since the daemon's previous sample. */
void
route_metrics(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	struct metrics_sample cur;
	char err[256];

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
	http_reply_json(req, 200, sample_json(&cur, app->mcpu_pct));
}

/* Open the stream, send a first sample now, then one a second. */
void
route_metrics_watch(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	struct watch *w = xcalloc(1, sizeof(*w));

	w->app = app;
	w->prev = app->msample;
	w->s = http_reply_stream(req, watch_shutdown, watch_gone, w);
	if (w->s == NULL) {
		free(w);
		return;
	}
	if (sse_stream_ended(w->s))	/* opened during shutdown */
		return;
	watch_tick(app->loop, 0, w);
}

static void
watch_push(struct watch *w, json_t *v)
{
	struct sse_buf b;

	sse_buf_init(&b);
	sse_fmt_json(&b, v);
	json_decref(v);
	sse_buf_add(&b, "\n\n", 2);
	if (sse_stream_push(w->s, b.p, b.len) == -ENOBUFS) {
		/* The client stopped reading: end the stream, say why. */
		sse_buf_reset(&b);
		sse_fmt_json(&b, v = json_pack("{s:s}", "error",
		    "client is not reading: stream ended"));
		json_decref(v);
		sse_buf_add(&b, "\n\n", 2);
		sse_stream_finish(w->s, b.p, b.len);
	}
	sse_buf_reset(&b);
}

static void
watch_tick(struct loop *l, uint64_t id, void *arg)
{
	struct watch *w = arg;
	struct metrics_sample cur;
	char err[256];

	w->timer = 0;
	if (metrics_read(&metrics_src_system, &cur, err, sizeof(err)) < 0) {
		watch_push(w, json_pack("{s:s}", "error", err));
	} else {
		watch_push(w, sample_json(&cur, metrics_cpu_pct(&w->prev,
		    &cur)));
		w->prev = cur;
	}
	if (!sse_stream_ended(w->s))
		w->timer = loop_timer_add(l, WATCH_INTERVAL_MS, watch_tick, w);
}

/* Shutdown: a final event, then the end of the body. */
static void
watch_shutdown(struct sse_stream *s, void *arg)
{
	struct watch *w = arg;
	static const char bye[] = "{\"error\":\"execd is shutting down\"}\n\n";

	if (w->timer != 0)
		loop_timer_cancel(w->app->loop, w->timer);
	w->timer = 0;
	sse_stream_finish(s, bye, sizeof(bye) - 1);
}

static void
watch_gone(struct sse_stream *s, void *arg)
{
	struct watch *w = arg;

	if (w->timer != 0)
		loop_timer_cancel(w->app->loop, w->timer);
	free(w);
}
