/*
 * rest.c -- the Jupyter Server REST API over execd's kernels: GET /api,
 * /api/status, and /api/kernels with interrupt and restart, in Jupyter
 * Server 2.x's shapes (jupyter_server/services/{api,kernels}); the
 * kernelspecs are kernelspecs.c's.
 *
 * A kernel here is a code context that a kernel serves, found and made
 * through the context registry (context.h); nothing is kept here but the
 * time the API started.  Errors are http_reply_error()'s, which the
 * routes' dialect words as {"message","reason"}.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/log.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../../domain/context.h"
#include "../../domain/kernel.h"
#include "jupyter.h"

static int64_t	started_ms;

/* Note when the API started serving; see jupyter.h. */
void
jupyter_start(void)
{
	started_ms = loop_wall_ms();
}

/* Unix ms as "2026-01-02T03:04:05.678000Z". */
void
jupyter_iso(int64_t ms, char out[32])
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	size_t n;

	gmtime_r(&s, &tm);
	n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%06dZ", (int)(ms % 1000) * 1000);
}

void
jupyter_reply_none(struct http_req *req)
{
	http_reply_text(req, 204, "application/json", "", 0, NULL, NULL);
}

void
jupyter_reply_located(struct http_req *req, unsigned status, json_t *v,
    const char *location)
{
	char *s = json_dumps(v, JSON_COMPACT);

	json_decref(v);
	if (s == NULL)
		fatalx("unencodable JSON reply");
	http_reply_text(req, status, "application/json", s, strlen(s),
	    "Location", location);
	free(s);
}

/* GET /api: {"version"}. */
void
jupyter_api(struct http_req *req)
{
	http_reply_json(req, 200, json_pack("{s:s}", "version",
	    JUPYTER_VERSION));
}

struct tally {
	int	kernels, connections;
	int64_t	last;
};

static void
tally_one(struct context *c, void *arg)
{
	struct tally *t = arg;
	struct kernel *k = context_kernel_want(c);

	if (k == NULL)
		return;
	t->kernels++;
	t->connections += (int)jupyter_connections(context_id(c));
	if (kernel_last_activity(k) > t->last)
		t->last = kernel_last_activity(k);
}

/* GET /api/status: started, last_activity, kernels, connections. */
void
jupyter_status(struct http_req *req)
{
	struct tally t = { .last = started_ms };
	char started[32], last[32];

	context_each(NULL, tally_one, &t);
	jupyter_iso(started_ms, started);
	jupyter_iso(t.last, last);
	http_reply_json(req, 200, json_pack("{s:i, s:i, s:s, s:s}",
	    "connections", t.connections, "kernels", t.kernels,
	    "last_activity", last, "started", started));
}

/*
 * The context of a kernel id, when a kernel serves it: one is made of a
 * light context named (or listed) in the Jupyter API.
 */
struct context *
jupyter_kernel_find(const char *id)
{
	struct context *c = context_find(id);

	return c != NULL && context_kernel_want(c) != NULL ? c : NULL;
}

/* The kernel model; see jupyter.h. */
json_t *
jupyter_kernel_model(struct context *c)
{
	struct kernel *k = context_kernel(c);
	char last[32];

	jupyter_iso(kernel_last_activity(k), last);
	return json_pack("{s:s, s:s, s:s, s:s, s:i}", "id", context_id(c),
	    "name", context_kernelspec(c)->name, "last_activity", last,
	    "execution_state", kernel_state_name(kernel_state(k)),
	    "connections", (int)jupyter_connections(context_id(c)));
}

/* The kernel of the path, or a 404 answer and NULL. */
static struct context *
path_kernel(struct http_req *req)
{
	const char *id = http_req_param(req, "kernel_id");
	struct context *c = jupyter_kernel_find(id);

	if (c == NULL)
		http_reply_error(req, 404, HTTP_E_NOT_FOUND,
		    "Kernel does not exist: %s", id);
	return c;
}

static void
list_one(struct context *c, void *arg)
{
	if (context_kernel_want(c) != NULL)
		json_array_append_new(arg, jupyter_kernel_model(c));
}

/* GET /api/kernels */
void
jupyter_kernels(struct http_req *req)
{
	json_t *a = json_array();

	context_each(NULL, list_one, a);
	http_reply_json(req, 200, a);
}

/* A kernel being started for a request. */
struct start {
	struct http_req		*req;
	struct context		*c;
	jupyter_started_cb	*done;
	void			*arg;
};

static void
start_ready(struct context *c, const char *why, void *arg)
{
	struct start *s = arg;

	s->done(s->req, why == NULL ? c : NULL, why, s->arg);
	free(s);
}

static void
start_cancel(struct http_req *req, void *arg)
{
	struct start *s = arg;

	context_wait_cancel(s->c, s);
	s->done(NULL, NULL, "the client went away", s->arg);
	free(s);
}

/* Start a kernel for a request; see jupyter.h. */
int
jupyter_kernel_new(struct http_req *req, const char *name,
    jupyter_started_cb *done, void *arg)
{
	struct context *c;
	struct start *s;
	char err[2048];
	int rc;

	if (name[0] == '\0')
		name = jupyter_default_name();
	/* A kernel name, never execd's shell (which is no kernel). */
	if (context_spec(name) == NULL) {
		http_reply_error(req, 404, HTTP_E_NOT_FOUND,
		    "No such kernel named %s", name);
		return -1;
	}
	rc = context_create(name, NULL, false, NULL, &c, err, sizeof(err));
	if (rc < 0) {
		http_reply_error(req, rc == -ENOENT ? 404 : 500,
		    rc == -ENOENT ? HTTP_E_NOT_FOUND : HTTP_E_RUNTIME, "%s",
		    err);
		return -1;
	}
	s = xcalloc(1, sizeof(*s));
	s->req = req;
	s->c = c;
	s->done = done;
	s->arg = arg;
	http_req_defer(req, start_cancel, s);
	context_wait(c, start_ready, s);
	return 0;
}

static void
started(struct http_req *req, struct context *c, const char *why,
    void *arg)
{
	char loc[64];

	if (req == NULL)
		return;
	if (c == NULL) {
		http_reply_error(req, 500, HTTP_E_RUNTIME, "%s", why);
		return;
	}
	snprintf(loc, sizeof(loc), "/api/kernels/%s", context_id(c));
	jupyter_reply_located(req, 201, jupyter_kernel_model(c), loc);
}

/* POST /api/kernels {"name"}: 201 with the model once it is ready. */
void
jupyter_kernel_start(struct http_req *req)
{
	json_t *body = http_req_json(req);

	jupyter_kernel_new(req, body_str(body, "name", ""), started, NULL);
}

/* GET /api/kernels/{kernel_id} */
void
jupyter_kernel_get(struct http_req *req)
{
	struct context *c = path_kernel(req);

	if (c != NULL)
		http_reply_json(req, 200, jupyter_kernel_model(c));
}

/* DELETE /api/kernels/{kernel_id}: the context goes with it. */
void
jupyter_kernel_delete(struct http_req *req)
{
	struct context *c = path_kernel(req);

	if (c != NULL) {
		context_delete(c);
		jupyter_reply_none(req);
	}
}

/* POST /api/kernels/{kernel_id}/interrupt: 204. */
void
jupyter_kernel_interrupt(struct http_req *req)
{
	struct context *c = path_kernel(req);
	int rc;

	if (c == NULL)
		return;
	if ((rc = kernel_interrupt(context_kernel(c))) < 0 && rc != -ESRCH)
		http_reply_errno(req, rc, "cannot interrupt kernel %s",
		    context_id(c));
	else
		jupyter_reply_none(req);
}

static void
restarted(struct context *c, const char *why, void *arg)
{
	struct http_req *req = arg;

	if (why != NULL)
		http_reply_error(req, 500, HTTP_E_RUNTIME,
		    "Exception restarting kernel: %s", why);
	else
		http_reply_json(req, 200, jupyter_kernel_model(c));
}

static void
restart_cancel(struct http_req *req, void *arg)
{
	context_wait_cancel(arg, req);
}

/* POST /api/kernels/{kernel_id}/restart: the model once ready again. */
void
jupyter_kernel_restart(struct http_req *req)
{
	struct context *c = path_kernel(req);
	int rc;

	if (c == NULL)
		return;
	if ((rc = kernel_restart(context_kernel(c))) < 0) {
		http_reply_error(req, 500, HTTP_E_RUNTIME,
		    "Exception restarting kernel: %s", strerror(-rc));
		return;
	}
	http_req_defer(req, restart_cancel, c);
	context_wait(c, restarted, req);
}
