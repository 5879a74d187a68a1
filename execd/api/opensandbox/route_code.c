/*
 * route_code.c -- code runs: POST /code (a stream).
 *
 * A code run is a domain object (run.h): this file finds or makes its
 * context, waits for the context to be ready, and frames the run's events
 * as OpenSandbox's stream (sse_fmt.h) at the client's pace (feed.h).
 * Errors known before the stream starts are plain JSON errors.  Without a
 * language the code runs as a shell command, answered as POST /command
 * is (cmdstream.h).  Contexts are route_context.c's; DELETE /code, the
 * interrupt, route_cmd.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../../sse/sse_fmt.h"
#include "../../config/conf.h"
#include "../../core/xmalloc.h"
#include "../../domain/command.h"
#include "../../domain/context.h"
#include "../../domain/run.h"
#include "../../process/envfile.h"
#include "../../process/limits.h"
#include "../../transport/body.h"
#include "../../transport/evstream.h"
#include "../../transport/feed.h"
#include "../../transport/http.h"
#include "../../transport/tape.h"
#include "../execd.h"
#include "../idem.h"
#include "../runhold.h"
#include "cmdstream.h"
#include "route.h"

/* A code run's stream: the run, and the feed that takes its events. */
struct code_stream {
	struct http_req		*req;		/* until the stream opens */
	struct context		*ctx;
	char			*code;
	struct run_opts		 o;
	struct run		*run;
	struct feed		*feed;		/* once the stream opens */
	struct tape		*rec;		/* its bytes, for repeats */
	char			*ephemeral;	/* its context's id, deleted at
						   the end; NULL: kept */
};

static void	 stream_open(struct code_stream *);
static void	 stream_free(struct code_stream *);
static void	 run_command(struct http_req *, const char *);
static void	 on_ready(struct context *, const char *, void *);
static void	 on_cancel(struct http_req *, void *);
static void	 on_notify(void *);
static int	 on_pull(struct buf *, void *);
static void	 on_gone(void *);

/*
 * POST /code without a language: the code runs as a shell command, its
 * stream that of POST /command.
 */
static void
run_command(struct http_req *req, const char *code)
{
	struct execd *app = http_req_app(req);
	struct command_opts o = { .command = code,
	    .limits = &app->conf->limits[LIMITS_COMMAND] };
	struct command *c;
	char err[512];
	bool keep;
	int rc;

	if (cmdstream_line_endings(req, &keep) < 0)
		return;		/* answered 400 */
	o.envs = envfile_overlay(NULL);
	rc = command_start(&o, NULL, NULL, &c, err, sizeof(err));
	json_decref(o.envs);
	if (rc < 0) {
		http_reply_errno(req, rc, "error running commands %s", err);
		return;
	}
	if (cmdstream_reply(req, c, 0) == 0)
		idem_stream_replay(req, cmdstream_replay, c->id);
}

/*
 * POST /code {"code","context":{"id","language","ephemeral"},"timeout"}:
 * run code in a context (or the language's default one) and stream its
 * events.  An ephemeral run has a fresh context of its own, deleted when
 * the stream ends.
 */
void
route_code_run(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	json_t *body = http_req_json(req), *ctx;
	const char *id, *lang;
	char err[2048];
	struct context *c;
	struct code_stream *s;
	bool ephemeral;
	int rc;

	if (runhold(req, route_code_run))
		return;	/* a restore runs: after it */
	if (idem_front(req))
		return;
	ctx = json_object_get(body, "context");
	if (body_int(body, "timeout", 0) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "field 'timeout' must not be negative");
		return;
	}
	id = body_str(ctx, "id", "");
	lang = body_str(ctx, "language", "");
	ephemeral = json_is_true(json_object_get(ctx, "ephemeral"));
	if (ephemeral && (id[0] != '\0' || lang[0] == '\0' ||
	    strcmp(lang, "command") == 0)) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "an ephemeral run names a language and no context id");
		return;
	}
	if (id[0] != '\0') {
		if ((c = context_find(id)) == NULL) {
			http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
			    "context %s not found", id);
			return;
		}
	} else if (lang[0] == '\0' || strcmp(lang, "command") == 0) {
		/* As upstream: no language means a shell command. */
		run_command(req, body_str(body, "code", ""));
		return;
	} else if (context_is_command_language(lang)) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "language '%s' is not supported by /code; use /command",
		    lang);
		return;
	} else if (ephemeral || (c = context_default(lang)) == NULL) {
		rc = ephemeral ? context_create_once(lang, NULL, &c, err,
		    sizeof(err)) : context_create_light(lang, NULL, true,
		    NULL, &c, err, sizeof(err));
		if (rc == -ENOENT) {
			http_reply_error(req, 400, HTTP_E_BODY, "%s", err);
			return;
		}
		if (rc < 0) {
			http_reply_error(req, 500, HTTP_E_RUNTIME,
			    "error running codes %s", err);
			return;
		}
	}
	s = xcalloc(1, sizeof(*s));
	s->req = req;
	s->ctx = c;
	if (ephemeral)
		s->ephemeral = xstrdup(context_id(c));
	s->code = xstrdup(body_str(body, "code", ""));
	s->o = (struct run_opts){ .code = s->code,
	    .timeout_ms = body_int(body, "timeout", 0),
	    .max_output = app->conf->max_output,
	    .max_queue = app->conf->stream_cap };
	if (context_ready(c)) {
		stream_open(s);
		return;
	}
	/* The kernel is starting (or restarting): answer when it is up. */
	http_req_defer(req, on_cancel, s);
	context_wait(c, on_ready, s);
}

static void
on_ready(struct context *c, const char *why, void *arg)
{
	struct code_stream *s = arg;

	if (why != NULL) {
		http_reply_error(s->req, 500, HTTP_E_RUNTIME, "error running "
		    "codes %s", why);
		stream_free(s);
		return;
	}
	stream_open(s);
}

static void
on_cancel(struct http_req *req, void *arg)
{
	struct code_stream *s = arg;

	context_wait_cancel(s->ctx, s);
	stream_free(s);
}

/* Start the run, then its stream: init and a ping go out at once. */
static void
stream_open(struct code_stream *s)
{
	struct http_req *req = s->req;

	s->run = run_new(s->ctx, &s->o, on_notify, s);
	s->rec = idem_stream_record(req);
	s->req = NULL;
	if ((s->feed = feed_reply(req, on_pull, on_gone, s)) == NULL)
		stream_free(s);
}

/* The run has more: take it if the client has room. */
static void
on_notify(void *arg)
{
	struct code_stream *s = arg;

	if (s->feed != NULL)
		feed_kick(s->feed);
}

/* Whole events for the feed, about FEED_CHUNK bytes (see feed.h). */
static int
on_pull(struct buf *out, void *arg)
{
	struct code_stream *s = arg;
	struct sse_event ev;
	size_t start = out->len;
	int rc;

	while ((rc = run_next(s->run, &ev)) == RUN_EVENT) {
		ev.seq = 0;	/* upstream's /code events carry none */
		sse_fmt_event(out, &ev);
		if (out->len - start >= FEED_CHUNK)
			break;
	}
	if (rc == RUN_OVERFLOW)
		evstream_fmt_overflow(out, EVSTREAM_TYPED);
	if (out->len > start)
		tape_add(s->rec, out->p + start, out->len - start);
	if (rc == RUN_EVENT)
		return FEED_MORE;
	if (rc == RUN_WAIT)
		return FEED_WAIT;
	tape_end(s->rec, true);
	s->rec = NULL;
	return FEED_END;
}

/* The stream is gone: the run goes on in its context, unheard. */
static void
on_gone(void *arg)
{
	struct code_stream *s = arg;

	s->feed = NULL;
	stream_free(s);
}

/*
 * An ephemeral run's context goes with its stream, whether the run ended
 * or its client left: found again by id, as the kernel may have died.
 */
static void
stream_free(struct code_stream *s)
{
	struct context *c;

	tape_end(s->rec, false);
	run_free(s->run);
	if (s->ephemeral != NULL && (c = context_find(s->ephemeral)) != NULL)
		context_delete(c);
	free(s->ephemeral);
	free(s->code);
	free(s);
}
