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
 * upstream's order: reset what runs (unless preserveRuntimeState), bind,
 * ready.  The parsing and the binding are domain/runtime.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "../../core/log.h"
#include "../../core/xmalloc.h"
#include "../../domain/command.h"
#include "../../domain/pty.h"
#include "../../domain/runtime.h"
#include "../../domain/session.h"
#include "../../transport/http.h"
#include "../execd.h"
#include "route.h"

#define REINIT_WHY	"execd was initialised again"

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
	if (!runtime_ready() && runtime_token_md() == NULL)
		return true;
	if (!http_has_token(srv)) {
		http_reply_error(req, 409, HTTP_E_ALREADY_INIT,
		    "runtime init already accepted; execd has no access token "
		    "by which to authorise another (see GET /ready)");
		return false;
	}
	if (!http_req_token_ok(req)) {
		http_reply_deny(req);
		return false;
	}
	return true;
}

/* POST /internal/init: check, reset, bind, ready; see the file comment. */
void
route_init(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	struct runtime_req r;
	const void *body;
	char err[512], *sid;
	uint64_t gen;
	json_t *o, *warnings;
	size_t n;

	if (!may_init(req, app->http))
		return;
	body = http_req_body(req, &n);
	if (runtime_req_parse(body, n, &r, err, sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "%s", err);
		return;
	}
	/* 1. What the previous generation left running, unless kept. */
	if (!r.preserve) {
		command_stop_all();
		session_close_all();
		pty_close_all(REINIT_WHY);
	}
	/* 2. The binding, and with it the token http.c accepts. */
	warnings = json_incref(r.warnings);
	sid = xstrdup(r.sandbox_id);
	gen = r.generation;
	runtime_bind(&r);
	http_bind_token(app->http, runtime_token_md());
	log_info("runtime init: sandbox %s generation %" PRIu64 "%s", sid,
	    gen, runtime_token_md() != NULL ? ", token bound" : "");
	/*
	 * 3. The entrypoint: execd never starts one, so upstream's classic
	 * mode applies and either policy leaves it as it is, unwarned.
	 */
	runtime_set_ready(true);
	http_hold(app->http, false);
	o = json_pack("{s:s, s:s, s:I}", "status", "initialized",
	    "sandboxId", sid, "generation", (json_int_t)gen);
	if (json_array_size(warnings) > 0)
		json_object_set(o, "warning", warnings);
	json_decref(warnings);
	free(sid);
	http_reply_json(req, 200, o);
}
