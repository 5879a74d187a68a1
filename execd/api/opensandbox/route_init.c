/*
 * route_init.c -- GET /ready and POST /internal/init: runtime
 * initialisation as upstream 1.1.1 serves it to its control plane.
 *
 * Both routes are open (HTTP_R_OPEN): no token is asked for and they are
 * served while execd holds every other route at 503 (--runtime-init).
 * Upstream leaves /internal/init open to anyone who reaches the port;
 * here, once execd is ready (or an init has bound a token), another init
 * must carry the token in force, so that a process inside the sandbox
 * cannot re-initialise it with a token of its own; with no token in
 * force at all there is nothing to prove the caller by, and another
 * init is refused 409 (docs/compatibility.md).  An init runs in
 * upstream's order: reset what runs and the periodic hooks (unless
 * preserveRuntimeState), bind, preStart (the request waits for it; a
 * failure is 500 and execd stays unready), the periodic hooks, ready.
 * One init at a time: another while preStart runs is 409.  The parsing
 * and the binding are domain/runtime.c's, the hooks lifecycle.c's.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "../../core/log.h"
#include "../../core/xmalloc.h"
#include "../../domain/command.h"
#include "../../domain/lifecycle.h"
#include "../../domain/pty.h"
#include "../../domain/runtime.h"
#include "../../domain/session.h"
#include "../../transport/http.h"
#include "../execd.h"
#include "route.h"

#define REINIT_WHY	"execd was initialised again"

/* An init waiting for its preStart. */
struct pending {
	struct http_req		*req;
	struct http_server	*http;
	struct http_server	*jhttp;		/* the Jupyter listener, or NULL */
	struct lifecycle	*own;		/* the request's hooks, or NULL */
	const struct lifecycle	*hooks;		/* own or the template's */
	char			*sid;
	uint64_t		 gen;
	json_t			*warnings;
	bool			 keep_hooks;	/* periodic ones go on as they are */
};

static struct pending	*inflight;

static void	finish(struct pending *);
static void	pending_free(struct pending *);
static void	pre_done(int, const char *, void *);
static void	pre_cancel(struct http_req *, void *);
static void	report(const char *, ...)
		    __attribute__((format(printf, 1, 2)));

/* 200 when ready, else 503; {"initialized","sandboxId"?,"generation"?}. */
void
route_ready(struct http_req *req)
{
	json_t *o = json_object();
	bool ready = runtime_ready();

	json_object_set_new(o, "initialized", json_boolean(ready));
	if (runtime_sandbox_id() != NULL && *runtime_sandbox_id() != '\0')
		json_object_set_new(o, "sandboxId",
		    json_string(runtime_sandbox_id()));
	if (runtime_generation() > 0)
		json_object_set_new(o, "generation",
		    json_integer((json_int_t)runtime_generation()));
	http_reply_json(req, ready ? 200 : 503, o);
}

/*
 * Whether req may initialise execd: the first init of a held execd is
 * open (its control plane has no token to show yet); later ones must
 * carry the token in force.  Answers req when it may not.
 */
static bool
may_init(struct http_req *req, struct http_server *srv)
{
	if (runtime_awaited() && runtime_token_md() == NULL)
		return true;
	if (!http_has_token(srv)) {
		http_reply_error(req, 409, HTTP_E_ALREADY_INIT,
		    "execd is initialised and has no access token by which "
		    "to authorise another runtime init (see GET /ready)");
		return false;
	}
	if (!http_req_token_ok(req)) {
		http_reply_deny(req);
		return false;
	}
	return true;
}

/*
 * A line in the start-up status file, as at start: a bootstrap script
 * may wait on an init's preStart too.  A line that cannot be written is
 * logged only (the script may have read its answer and removed the
 * file), as upstream does.
 */
static void
report(const char *fmt, ...)
{
	char line[128], err[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (lifecycle_status(err, sizeof(err), "%s", line) < 0)
		log_warnx("runtime init: %s", err);
}

/* POST /internal/init: check, reset, bind, hooks, ready; see above. */
void
route_init(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	struct runtime_req r;
	struct lifecycle *own = NULL;
	struct pending *p;
	const void *body;
	char err[512];
	bool preserve, keep_hooks;
	size_t n;
	int rc;

	if (!may_init(req, app->http))
		return;
	if (inflight != NULL) {
		http_reply_error(req, 409, HTTP_E_ALREADY_INIT, "runtime init "
		    "in progress: its preStart hook still runs");
		return;
	}
	body = http_req_body(req, &n);
	if (runtime_req_parse(body, n, &r, err, sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "%s", err);
		return;
	}
	if (r.lifecycle != NULL && lifecycle_parse(r.lifecycle, &own, err,
	    sizeof(err)) < 0) {
		runtime_req_reset(&r);
		http_reply_error(req, 400, HTTP_E_BODY, "invalid lifecycle: %s",
		    err);
		return;
	}
	/*
	 * 1. What the previous generation left running, unless kept; kept,
	 * its periodic hooks go on too, unless the request gives others.
	 */
	preserve = r.preserve;
	keep_hooks = preserve && own == NULL;
	if (!preserve) {
		command_stop_all();
		session_close_all();
		pty_close_all(REINIT_WHY);
	}
	if (!keep_hooks)
		lifecycle_periodic_stop();
	/* 2. The binding, and with it the token http.c accepts. */
	p = xcalloc(1, sizeof(*p));
	p->http = app->http;
	p->jhttp = app->jupyter_http;
	p->own = own;
	p->hooks = own != NULL ? own : lifecycle_template();
	p->keep_hooks = keep_hooks;
	p->warnings = json_incref(r.warnings);
	p->sid = xstrdup(r.sandbox_id);
	p->gen = r.generation;
	runtime_bind(&r);
	http_bind_token(app->http, runtime_token_md());
	if (app->jupyter_http != NULL)
		http_bind_token(app->jupyter_http, runtime_token_md());
	log_info("runtime init: sandbox %s generation %" PRIu64 "%s", p->sid,
	    p->gen, runtime_token_md() != NULL ? ", token bound" : "");
	/*
	 * 3. preStart, then the periodic hooks.  The entrypoint: execd never
	 * starts one, so upstream's classic mode applies and either policy
	 * leaves it as it is, unwarned.
	 */
	p->req = req;
	if (keep_hooks) {
		finish(p);
		return;
	}
	if (p->hooks != NULL && p->hooks->pre_start != NULL)
		report("running %" PRIu64, p->hooks->pre_start->timeout_s);
	if ((rc = lifecycle_pre_start(p->hooks, pre_done, p, err,
	    sizeof(err))) == 1) {
		report("done 0");
		finish(p);
		return;
	}
	if (rc < 0) {
		report("done 1");
		http_reply_error(req, 500, HTTP_E_RUNTIME, "runtime init "
		    "preStart: %s", err);
		pending_free(p);
		return;
	}
	inflight = p;
	http_req_defer(req, pre_cancel, p);
}

/* The periodic hooks, ready, 200; p is freed. */
static void
finish(struct pending *p)
{
	json_t *o;

	if (!p->keep_hooks)
		lifecycle_periodic_start(p->hooks);
	runtime_set_ready(true);
	http_hold(p->http, false);
	if (p->jhttp != NULL)
		http_hold(p->jhttp, false);
	o = json_pack("{s:s, s:s, s:I}", "status", "initialized",
	    "sandboxId", p->sid, "generation", (json_int_t)p->gen);
	if (json_array_size(p->warnings) > 0)
		json_object_set(o, "warning", p->warnings);
	http_reply_json(p->req, 200, o);
	pending_free(p);
}

/* preStart is over: go on, or 500 and stay as we are. */
static void
pre_done(int rc, const char *why, void *arg)
{
	struct pending *p = arg;

	inflight = NULL;
	report(rc == 0 ? "done 0" : "done 1");
	if (rc == 0) {
		finish(p);
		return;
	}
	http_reply_error(p->req, 500, HTTP_E_RUNTIME, "runtime init "
	    "preStart: %s", why);
	pending_free(p);
}

/* The client left or execd stops while preStart runs: stop it. */
static void
pre_cancel(struct http_req *req, void *arg)
{
	struct pending *p = arg;

	inflight = NULL;
	lifecycle_pre_start_cancel();
	pending_free(p);
}

static void
pending_free(struct pending *p)
{
	lifecycle_free(p->own);
	json_decref(p->warnings);
	free(p->sid);
	free(p);
}
