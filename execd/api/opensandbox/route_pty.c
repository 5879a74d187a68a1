/*
 * route_pty.c -- interactive terminals: POST /pty, GET and DELETE
 * /pty/{sessionId}, and the WebSocket GET /pty/{sessionId}/ws.
 *
 * Requests only: the shell, its ring and the registry are pty.c's; the
 * clients of a terminal (writer, viewers, takeover, replay, what their
 * messages do) are term.c's; the WebSocket handshake is ws.c's.  This
 * file refuses what can be refused before a 101 and holds no state.
 */
#include <limits.h>
#include <string.h>

#include "../../../fs/fs_ops.h"
#include "../../../fs/fs_path.h"
#include "../../config/conf.h"
#include "../../domain/pty.h"
#include "../../domain/ring.h"
#include "../../process/limits.h"
#include "../../transport/body.h"
#include "../../transport/http.h"
#include "../../transport/ws.h"
#include "../execd.h"
#include "route.h"
#include "term.h"

/*
 * POST /pty [{"cwd","command"}]: 201 {"session_id"}; no shell yet.  As
 * upstream's spec: 501 NOT_SUPPORTED where no terminal can be made (no
 * /dev/ptmx, no devpts), found by opening one.
 */
void
route_pty_create(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	json_t *body = http_req_json(req);
	char path[PATH_MAX] = "", err[PATH_MAX + 128];
	const char *cwd, *cmd;
	struct limits lim;
	struct pty *p;
	bool created;
	int rc;

	if (limits_for(&lim, &app->conf->limits[LIMITS_PTY], body, err,
	    sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "error parsing "
		    "request: %s", err);
		return;
	}
	cwd = body_str(body, "cwd", "");
	cmd = body_str(body, "command", "");
	if ((rc = pty_probe(err, sizeof(err))) < 0) {
		if (pty_probe_transient(rc))
			http_reply_errno(req, rc, "error creating pty "
			    "session: %s", err);
		else
			http_reply_error(req, 501, "NOT_SUPPORTED", "no "
			    "terminal can be made here: %s", err);
		return;
	}
	if (cwd[0] != '\0') {
		if (fs_path_resolve(cwd, strlen(cwd), NULL, path,
		    sizeof(path)) < 0) {
			http_reply_error(req, 400, HTTP_E_BODY, "error parsing "
			    "request: working directory '%s' must be absolute "
			    "or start with ~", cwd);
			return;
		}
		/* As upstream: a missing cwd is created. */
		if (fs_mkdirs(path, 0, (uid_t)-1, (gid_t)-1, &created, err,
		    sizeof(err)) < 0) {
			http_reply_error(req, 500, HTTP_E_RUNTIME, "error "
			    "creating pty session: working directory %s: %s",
			    cwd, err);
			return;
		}
	}
	p = pty_new(cwd[0] ? path : NULL, cmd[0] ? cmd : NULL,
	    app->conf->pty_replay);
	pty_set_limits(p, &lim);
	(void)term_new(app->loop, p, app->conf->pty_replay);
	http_reply_json(req, 201, json_pack("{s:s}", "session_id",
	    pty_id(p)));
}

/* GET /pty/{sessionId}: {"session_id","running","output_offset"}. */
void
route_pty_get(struct http_req *req)
{
	const char *id = http_req_param(req, "sessionId");
	struct pty *p = pty_find(id);
	json_t *v;

	if (p == NULL) {
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "pty session %s not found", id);
		return;
	}
	v = json_pack("{s:s, s:b, s:I}", "session_id", pty_id(p),
	    "running", pty_alive(p), "output_offset",
	    (json_int_t)ring_end(pty_ring(p)));
	if (pty_state(p) == PTY_EXITED)
		json_object_set_new(v, "exit_code",
		    json_integer(pty_exit_code(p)));
	http_reply_json(req, 200, v);
}

/* DELETE /pty/{sessionId}: kill the shell; clients get exit -1. */
void
route_pty_delete(struct http_req *req)
{
	const char *id = http_req_param(req, "sessionId");
	struct pty *p = pty_find(id);

	if (p == NULL) {
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "pty session %s not found", id);
		return;
	}
	pty_free(p, "session deleted");
	http_reply_empty(req);
}

/*
 * GET /pty/{sessionId}/ws[?since=N][&pty=0][&takeover=1][&viewer=1]:
 * refuse before the upgrade what can be refused (404, 409, 400), then
 * hand the request to the terminal, which answers 101.
 */
void
route_pty_ws(struct http_req *req)
{
	const char *id = http_req_param(req, "sessionId");
	const char *why = "it is not valid";
	struct term *t = term_find(id);
	struct term_opts o;
	bool valid;

	if (t == NULL) {
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "pty session %s not found", id);
		return;
	}
	valid = ws_handshake(req, &why) == 0;
	term_opts_parse(&o, http_req_query(req, "since"),
	    http_req_query(req, "viewer"), http_req_query(req, "takeover"),
	    http_req_query(req, "pty"));
	if (!o.viewer && term_busy(t) && !(o.takeover && valid)) {
		http_reply_error(req, 409, "ALREADY_CONNECTED", "another "
		    "client is already connected to pty session %s", id);
		return;
	}
	if (!valid || term_connect(t, req, &o) < 0)
		http_reply_error(req, 400, HTTP_E_BODY, "not a WebSocket "
		    "handshake: %s", why);
}
