/*
 * route_code.c -- code contexts and code runs: POST /code/context,
 * GET/DELETE /code/contexts[/{id}], GET /code/contexts/{id}/connection,
 * POST /code (a stream) and DELETE /code (interrupt).
 *
 * A run turns the kernel's iopub messages into the events clients parse,
 * as upstream's execd does (docs/compatibility.md lists the differences):
 * init with the context id, a ping at once and every few seconds (the
 * stream layer's, evstream.h), stdout/stderr with
 * the kernel's text verbatim, execution_count then result, status "error"
 * then error, and execution_complete when the kernel has both replied and
 * gone idle.  Errors known before the stream starts are plain JSON
 * errors; a kernel that dies mid-run ends its stream with an error event
 * that says why.
 *
 * Output takes the bounded, paced path (feed.h): events wait in the run's
 * queue until the client has room, so a slow client slows nothing and a
 * large print is never an overflow.  A kernel's iopub cannot be paced (a
 * PUB socket drops what its subscriber does not take), so the queue is
 * bounded by cutting instead: the first half of --max-output goes out as
 * it comes, of the rest only the last half is kept (tail_add), and at the
 * end a stderr marker saying how many bytes were dropped precedes that
 * tail.  Text events hold at most EV_TEXT bytes each.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../fs/fs_ops.h"
#include "../fs/fs_path.h"
#include "../kernelproto/kp_connfile.h"
#include "../sse/sse_fmt.h"
#include "body.h"
#include "command.h"
#include "conf.h"
#include "context.h"
#include "evstream.h"
#include "execd.h"
#include "feed.h"
#include "http.h"
#include "kevent.h"
#include "limits.h"
#include "log.h"
#include "loop.h"
#include "route.h"
#include "session.h"
#include "xmalloc.h"

#define EV_TEXT		(64 << 10)	/* text bytes per output event */
#define PIECE_MIN	(4 << 10)	/* memory of a piece of text in line */
#define PIECE_MAX	(64 << 10)

/* Output kept for the tail, in order: one stream's bytes per piece. */
struct piece {
	struct piece	*next;
	int		 which;
	size_t		 off, len, cap;
	char		 p[];
};

struct run {
	struct execd		*app;
	struct http_req		*req;		/* until the stream opens */
	struct context		*ctx;
	struct feed		*feed;		/* once the stream opens */
	struct buf		 q;		/* events the feed has not taken */
	bool			 finishing;	/* the run is over */
	bool			 ended;		/* nothing more may queue */
	uint64_t		 t0;
	char			*code;
	char			 msg_id[33];
	bool			 running;	/* sent to the kernel */
	uint64_t		 tmo;
	long long		 timeout_ms;
	bool			 timed_out;
	bool			 saw_error;	/* an error event went out */
	size_t			 out_bytes;	/* went out as the head */
	bool			 head_full;
	struct piece		*t_first, *t_last;	/* the line */
	size_t			 t_bytes, t_mem;	/* of text, its pieces */
	size_t			 ev_bytes;	/* of events in line */
	size_t			 dropped;
};

static void	 run_start(struct run *);
static void	 run_command(struct http_req *, const char *);
static void	 run_free(struct run *);
static void	 run_forget(struct run *);
static void	 run_ready(struct context *, const char *, void *);
static void	 run_cancel(struct http_req *, void *);
static void	 run_output(struct kernel *, const struct kp_msg *, void *);
static void	 run_done(struct kernel *, const struct kp_msg *,
		    const char *, void *);
static void	 run_gone(void *);
static int	 run_pull(struct buf *, void *);
static void	 emit(struct run *, struct sse_event *);
static void	 emit_at(struct run *, struct sse_event *, bool);
static void	 emit_text(struct run *, int, const char *, size_t);
static void	 take(struct run *, int, const char *, size_t);
static void	 line_move(struct run *);
static void	 line_trim(struct run *, size_t);
static void	 line_finish(struct run *);
static void	 run_timeout(struct loop *, uint64_t, void *);
static void	 reply_errors(struct run *, const json_t *);
static void	 shell_output(int, const char *, size_t, void *);
static void	 shell_done(int, bool, const char *, void *);
static void	 error_events(struct run *, struct kevent *);
static void	 error_named(struct run *, const char *, const char *);

static const struct kernel_exec_cb run_cb = { run_output, run_done };

/* Reply 400 naming what is installed. */
static void
unknown_language(struct http_req *req, const char *lang)
{
	struct execd *app = http_req_app(req);
	char *have = context_languages(app->contexts);

	http_reply_error(req, 400, HTTP_E_BODY, "no kernel is installed for "
	    "language '%s'; installed: %s", lang, have);
	free(have);
}

/* {"id","language"[,"cwd"]} of a context. */
static json_t *
context_json(struct context *c, bool with_cwd)
{
	json_t *o = json_pack("{s:s, s:s}", "id", context_id(c), "language",
	    context_language(c));

	if (with_cwd && context_cwd(c) != NULL)
		json_object_set_new(o, "cwd", json_string(context_cwd(c)));
	return o;
}

/*
 * Resolve and create a context's working directory, as upstream does
 * (mkdir -p).  0 with out filled; on failure reply and return -1.
 */
static int
prepare_cwd(struct http_req *req, const char *cwd, char *out, size_t outlen)
{
	char err[PATH_MAX + 128];
	struct stat st;
	bool created;
	int rc;

	if (fs_path_resolve(cwd, strlen(cwd), NULL, out, outlen) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid cwd '%s': "
		    "it must be absolute or start with ~", cwd);
		return -1;
	}
	if ((rc = fs_mkdirs(out, 0, (uid_t)-1, (gid_t)-1, &created, err,
	    sizeof(err))) < 0 || stat(out, &st) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid cwd '%s': %s",
		    cwd, rc < 0 ? err : "cannot stat it");
		return -1;
	}
	return 0;
}

/* A create request waits for its kernel: then 200, or 500 with why. */
static void
create_ready(struct context *c, const char *why, void *arg)
{
	struct http_req *req = arg;

	if (why != NULL)
		http_reply_error(req, 500, HTTP_E_RUNTIME, "error creating "
		    "code context. %s", why);
	else
		http_reply_json(req, 200, context_json(c, true));
}

static void
create_cancel(struct http_req *req, void *arg)
{
	context_wait_cancel(arg, req);
}

/* POST /code/context {"language","cwd"}: 200 once the kernel is ready. */
void
route_context_create(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	json_t *body = http_req_json(req);
	const char *lang, *cwd;
	char path[PATH_MAX], err[512];
	struct context *c;
	struct limits lim;
	int rc;

	lang = body_str(body, "language", "");
	cwd = body_str(body, "cwd", "");
	/* Only the request's: the context adds its language's defaults. */
	if (limits_for(&lim, NULL, body, err, sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s",
		    err);
		return;
	}
	if (lang[0] == '\0') {
		unknown_language(req, lang);
		return;
	}
	if (cwd[0] != '\0' && prepare_cwd(req, cwd, path, sizeof(path)) < 0)
		return;
	rc = context_create(app->contexts, lang, cwd[0] ? path : NULL, false,
	    &lim, &c, err, sizeof(err));
	if (rc == -ENOENT) {
		unknown_language(req, lang);
		return;
	}
	if (rc < 0) {
		http_reply_error(req, 500, HTTP_E_RUNTIME, "error creating "
		    "code context. %s", err);
		return;
	}
	http_req_defer(req, create_cancel, c);
	context_wait(c, create_ready, req);
}

static void
list_one(struct context *c, void *arg)
{
	json_array_append_new(arg, context_json(c, false));
}

/* Languages that name no kernel context upstream either. */
static bool
not_a_kernel_language(const char *lang)
{
	return strcmp(lang, "command") == 0 ||
	    strcmp(lang, "background-command") == 0;
}

/* GET /code/contexts[?language=L]: every live context (of L). */
void
route_context_list(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	const char *lang = http_req_query(req, "language");
	json_t *a = json_array();

	if (lang != NULL && lang[0] == '\0')
		lang = NULL;
	if (lang != NULL && not_a_kernel_language(lang)) {
		json_decref(a);
		http_reply_error(req, 400, HTTP_E_BODY, "unsupported language "
		    "context operation: %s", lang);
		return;
	}
	context_each(app->contexts, lang, list_one, a);
	http_reply_json(req, 200, a);
}

static void
delete_one(struct context *c, void *arg)
{
	context_delete(c);
}

/* DELETE /code/contexts?language=L: delete every context of L. */
void
route_context_delete_lang(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	const char *lang = http_req_query(req, "language");

	if (lang == NULL || lang[0] == '\0') {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "missing query parameter 'language'");
		return;
	}
	context_each(app->contexts, lang, delete_one, NULL);
	http_reply_empty(req);
}

/* The context named by the path, or a 404 reply and NULL. */
static struct context *
path_context(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	const char *id = http_req_param(req, "contextId");
	struct context *c = context_find(app->contexts, id);

	if (c == NULL)
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "context %s not found", id);
	return c;
}

/* GET /code/contexts/{id} */
void
route_context_get(struct http_req *req)
{
	struct context *c = path_context(req);

	if (c != NULL)
		http_reply_json(req, 200, context_json(c, false));
}

/* DELETE /code/contexts/{id} */
void
route_context_delete(struct http_req *req)
{
	struct context *c = path_context(req);

	if (c != NULL) {
		context_delete(c);
		http_reply_empty(req);
	}
}

/*
 * GET /code/contexts/{id}/connection: the kernel's connection info, with
 * the file's path, so a Jupyter client can attach to the same kernel.
 */
void
route_context_connection(struct http_req *req)
{
	struct context *c = path_context(req);
	const char *path;
	char err[256];
	struct kp_conn conn;
	json_t *o;
	FILE *f;
	char buf[4096];
	size_t n;

	if (c == NULL)
		return;
	if (context_shell(c) != NULL) {
		http_reply_error(req, 409, HTTP_E_RUNTIME, "context %s is a "
		    "shell session, not a kernel: there is nothing to attach "
		    "to", context_id(c));
		return;
	}
	if (!context_ready(c)) {
		http_reply_error(req, 409, HTTP_E_RUNTIME, "context %s is "
		    "not ready", context_id(c));
		return;
	}
	path = kernel_connection_file(context_kernel(c));
	if ((f = fopen(path, "re")) == NULL) {
		http_reply_errno(req, -errno, "cannot read %s", path);
		return;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (kp_connfile_parse(buf, n, &conn, err, sizeof(err)) < 0 ||
	    (o = kp_connfile_json(&conn)) == NULL) {
		explicit_bzero(&conn, sizeof(conn));
		http_reply_error(req, 500, HTTP_E_RUNTIME, "bad connection "
		    "file %s: %s", path, err);
		return;
	}
	explicit_bzero(&conn, sizeof(conn));
	explicit_bzero(buf, sizeof(buf));
	json_object_set_new(o, "connection_file", json_string(path));
	http_reply_json(req, 200, o);
}

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
	int rc;

	if ((rc = command_start(&o, NULL, NULL, &c, err, sizeof(err))) < 0) {
		http_reply_errno(req, rc, "error running commands %s", err);
		return;
	}
	(void)command_read(req, c, 0);
}

/*
 * POST /code {"code","context":{"id","language"},"timeout"}: run code in
 * a context (or the language's default one) and stream its events.
 */
void
route_code_run(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	json_t *body = http_req_json(req), *ctx;
	const char *id, *lang;
	char err[512];
	struct context *c;
	struct run *r;
	int rc;

	ctx = json_object_get(body, "context");
	if (body_int(body, "timeout", 0) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "field 'timeout' must not be negative");
		return;
	}
	id = body_str(ctx, "id", "");
	lang = body_str(ctx, "language", "");
	if (id[0] != '\0') {
		if ((c = context_find(app->contexts, id)) == NULL) {
			http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
			    "context %s not found", id);
			return;
		}
	} else if (lang[0] == '\0' || strcmp(lang, "command") == 0) {
		/* As upstream: no language means a shell command. */
		run_command(req, body_str(body, "code", ""));
		return;
	} else if (not_a_kernel_language(lang)) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, "
		    "language '%s' is not supported by /code; use /command",
		    lang);
		return;
	} else if ((c = context_default(app->contexts, lang)) == NULL) {
		rc = context_create(app->contexts, lang, NULL, true, NULL, &c,
		    err, sizeof(err));
		if (rc == -ENOENT) {
			unknown_language(req, lang);
			return;
		}
		if (rc < 0) {
			http_reply_error(req, 500, HTTP_E_RUNTIME,
			    "error running codes %s", err);
			return;
		}
	}
	r = xcalloc(1, sizeof(*r));
	r->app = app;
	r->req = req;
	r->ctx = c;
	r->code = xstrdup(body_str(body, "code", ""));
	r->timeout_ms = body_int(body, "timeout", 0);
	if (context_ready(c)) {
		run_start(r);
		return;
	}
	/* The kernel is starting (or restarting): answer when it is up. */
	http_req_defer(req, run_cancel, r);
	context_wait(c, run_ready, r);
}

static void
run_ready(struct context *c, const char *why, void *arg)
{
	struct run *r = arg;

	if (why != NULL) {
		http_reply_error(r->req, 500, HTTP_E_RUNTIME, "error running "
		    "codes %s", why);
		run_free(r);
		return;
	}
	run_start(r);
}

static void
run_cancel(struct http_req *req, void *arg)
{
	struct run *r = arg;

	context_wait_cancel(r->ctx, r);
	run_free(r);
}

/* Open the stream, send init and a ping, hand the code to the kernel. */
static void
run_start(struct run *r)
{
	int rc;

	r->t0 = loop_now_ms();
	/* Bounded by overflow(), past max_output + stream_cap. */
	buf_init_max(&r->q, SIZE_MAX / 2);
	emit(r, &(struct sse_event){ .type = "init",
	    .text = context_id(r->ctx) });
	r->feed = feed_reply(r->req, run_pull, run_gone, r);
	r->req = NULL;
	if (r->feed == NULL) {
		run_free(r);
		return;
	}
	if (context_shell(r->ctx) != NULL) {
		/* A bash context without a kernel: its shell runs the code. */
		r->running = true;
		context_use(r->ctx, +1);
		session_run(context_shell(r->ctx), r->code, NULL,
		    (unsigned)r->timeout_ms, shell_output, shell_done, r);
		return;
	}
	if ((rc = kernel_execute(context_kernel(r->ctx), r->code, &run_cb, r,
	    r->msg_id)) < 0) {
		run_done(context_kernel(r->ctx), NULL, rc == -EINVAL ?
		    "the code is not valid UTF-8" : "the kernel is not "
		    "available", r);
		return;
	}
	r->running = true;
	context_use(r->ctx, +1);
	if (r->timeout_ms > 0)
		r->tmo = loop_timer_add(r->app->loop, (uint64_t)r->timeout_ms,
		    run_timeout, r);
}

/* Give the queue and the line back, and end with an overflow event. */
static void
overflow(struct run *r)
{
	struct piece *t;

	while ((t = r->t_first) != NULL) {
		r->t_first = t->next;
		free(t);
	}
	r->t_last = NULL;
	r->t_bytes = r->t_mem = r->ev_bytes = 0;
	buf_reset(&r->q);
	evstream_fmt_overflow(&r->q, EVSTREAM_TYPED);
	r->ended = r->finishing = true;
}

/* A new piece at the end of the line (or at its front). */
static struct piece *
piece_new(struct run *r, int which, size_t cap, bool front)
{
	struct piece *t = xcalloc(1, sizeof(*t) + cap);

	t->which = which;
	t->cap = cap;
	if (front) {
		t->next = r->t_first;
		r->t_first = t;
		if (r->t_last == NULL)
			r->t_last = t;
	} else {
		if (r->t_last != NULL)
			r->t_last->next = t;
		else
			r->t_first = t;
		r->t_last = t;
	}
	if (which != 0)
		r->t_mem += cap;
	return t;
}

/*
 * Queue one event, stamped now: behind the output still in line, if any.
 * Past the bound (results far faster than the client reads) the stream
 * ends with an overflow event.
 */
static void
emit_at(struct run *r, struct sse_event *ev, bool front)
{
	size_t max = r->app->conf->max_output + r->app->conf->stream_cap;
	struct buf b;
	struct piece *t;

	if (r->ended)
		return;
	ev->timestamp = loop_wall_ms();
	if (r->t_first == NULL) {
		sse_fmt_event(&r->q, ev);
	} else {
		buf_init(&b);
		sse_fmt_event(&b, ev);
		t = piece_new(r, 0, b.len, front);
		memcpy(t->p, b.p, b.len);
		t->len = b.len;
		r->ev_bytes += b.len;
		buf_reset(&b);
	}
	if (r->q.len + r->ev_bytes > max)
		overflow(r);
	if (r->feed != NULL)
		feed_kick(r->feed);
}

static void
emit(struct run *r, struct sse_event *ev)
{
	emit_at(r, ev, false);
}

/* Text straight into the queue, as events of at most EV_TEXT bytes. */
static void
emit_text(struct run *r, int which, const char *p, size_t n)
{
	struct sse_event ev = { .type = which == 2 ? "stderr" : "stdout" };
	size_t k;

	while (n > 0) {
		k = n < EV_TEXT ? n : EV_TEXT;
		while (k < n && k > 1 && ((unsigned char)p[k] & 0xc0) == 0x80)
			k--;
		ev.text = p;
		ev.text_len = k;
		ev.timestamp = loop_wall_ms();
		sse_fmt_event(&r->q, &ev);
		p += k;
		n -= k;
	}
}

/*
 * Move the front of the line into the queue: an event whole, or up to
 * FEED_CHUNK bytes of text -- while the head lasts, only what is left of
 * it; once the run is over, anything.
 */
static void
line_move(struct run *r)
{
	size_t cap = r->app->conf->max_output, head = cap - cap / 2, k;
	struct piece *t = r->t_first;

	if (t->which == 0) {
		buf_add(&r->q, t->p + t->off, t->len);
		r->ev_bytes -= t->len;
		k = t->len;
	} else {
		k = t->len < FEED_CHUNK ? t->len : FEED_CHUNK;
		if (!r->finishing && k > head - r->out_bytes)
			k = head - r->out_bytes;
		while (k > 0 && k < t->len &&
		    ((unsigned char)t->p[t->off + k] & 0xc0) == 0x80)
			k--;
		if (!r->finishing && (r->out_bytes += k) >= head)
			r->head_full = true;
		emit_text(r, t->which, t->p + t->off, k);
		r->t_bytes -= k;
	}
	t->off += k;
	t->len -= k;
	if (t->len > 0 && k > 0)
		return;
	if (t->len > 0) {
		r->head_full = true;
		return;
	}
	r->t_first = t->next;
	if (r->t_first == NULL)
		r->t_last = NULL;
	if (t->which != 0)
		r->t_mem -= t->cap;
	free(t);
}

/* Whole events for the feed, about FEED_CHUNK bytes (see feed.h). */
static int
run_pull(struct buf *out, void *arg)
{
	struct run *r = arg;
	const char *p, *e;
	size_t avail, n = 0;

	while (r->q.len == 0 && r->t_first != NULL && (r->finishing ||
	    !r->head_full))
		line_move(r);
	p = r->q.p;
	avail = r->q.len;
	if (avail == 0)
		return r->ended && r->t_first == NULL ? FEED_END : FEED_WAIT;
	/* Up to the last event end within the chunk, or the first one. */
	while (n < avail && (e = memmem(p + n, avail - n, "\n\n", 2)) !=
	    NULL) {
		if ((size_t)(e + 2 - p) > FEED_CHUNK && n > 0)
			break;
		n = (size_t)(e + 2 - p);
	}
	if (n == 0)
		n = avail;	/* cannot happen: only whole events queue */
	buf_add(out, p, n);
	buf_drain(&r->q, n);
	if (r->q.len == 0 && buf_cost(&r->q) > 4 * FEED_CHUNK)
		buf_reset(&r->q);	/* give a burst back */
	if (r->q.len > 0 || (r->t_first != NULL && (r->finishing ||
	    !r->head_full)))
		return FEED_MORE;
	return r->ended && r->t_first == NULL ? FEED_END : FEED_WAIT;
}

/*
 * Drop n bytes of text from the front of the line (one piece at most);
 * an event there goes to the queue instead, since it cannot be cut.
 */
static void
line_trim(struct run *r, size_t n)
{
	struct piece *t = r->t_first;

	if (t->which == 0 || n >= t->len) {
		r->t_first = t->next;
		if (r->t_first == NULL)
			r->t_last = NULL;
		if (t->which == 0) {
			buf_add(&r->q, t->p + t->off, t->len);
			r->ev_bytes -= t->len;
		} else {
			r->t_bytes -= t->len;
			r->dropped += t->len;
			r->t_mem -= t->cap;
		}
		free(t);
		return;
	}
	t->off += n;
	t->len -= n;
	/* Never start inside a character. */
	while (t->len > 0 && ((unsigned char)t->p[t->off] & 0xc0) == 0x80) {
		t->off++;
		t->len--;
		n++;
	}
	r->t_bytes -= n;
	r->dropped += n;
}

/* Append text to the line: to its last piece, or in new ones. */
static void
line_add(struct run *r, int which, const char *p, size_t n)
{
	struct piece *t;
	size_t k;

	while (n > 0) {
		t = r->t_last;
		if (t == NULL || t->which != which || t->off + t->len ==
		    t->cap)
			t = piece_new(r, which, n < PIECE_MIN ? PIECE_MIN :
			    n > PIECE_MAX ? PIECE_MAX : n, false);
		k = t->cap - t->off - t->len < n ? t->cap - t->off - t->len :
		    n;
		memcpy(t->p + t->off + t->len, p, k);
		t->len += k;
		r->t_bytes += k;
		p += k;
		n -= k;
	}
}

/*
 * Output of stream 1 or 2 joins the line the client takes from.  While
 * the head lasts (the first half of --max-output) the line may hold all
 * of it; past it, the head is queued whole and the line keeps the last
 * half of --max-output, its front dropped as more comes (and so is a
 * piece that holds more memory than text: alternating stdout and stderr
 * makes small pieces).  That tail goes out once the run is over.
 */
static void
take(struct run *r, int which, const char *p, size_t n)
{
	size_t max = r->app->conf->max_output, head = max - max / 2;
	size_t cap = max / 2, k, room;

	if (r->ended || n == 0)
		return;
	if (!r->head_full) {
		room = head - r->out_bytes;
		k = room > r->t_bytes ? room - r->t_bytes : 0;
		if (k > n)
			k = n;
		while (k > 0 && k < n && ((unsigned char)p[k] & 0xc0) == 0x80)
			k--;
		line_add(r, which, p, k);
		p += k;
		n -= k;
		/* Full, or in more memory than it should take: queue it. */
		if (n > 0 || r->t_mem > head + 2 * PIECE_MAX) {
			/* The head is all in line: queue it. */
			while (!r->head_full && r->t_first != NULL)
				line_move(r);
			if (n > 0)
				r->head_full = true;
		}
	}
	if (n > cap) {
		r->dropped += n - cap;
		p += n - cap;
		n = cap;
		while (n > 0 && ((unsigned char)*p & 0xc0) == 0x80) {
			r->dropped++;	/* never start inside a character */
			p++;
			n--;
		}
	}
	line_add(r, which, p, n);
	while (r->t_first != NULL && (r->t_bytes > cap ||
	    r->t_mem > cap + 2 * PIECE_MAX))
		line_trim(r, r->t_bytes > cap ? r->t_bytes - cap :
		    r->t_first->len);
	if (r->feed != NULL)
		feed_kick(r->feed);
}

/*
 * The run is over: the marker goes before the tail if anything was
 * dropped, and whatever is in line may now go out.
 */
static void
line_finish(struct run *r)
{
	char msg[128];

	if (r->dropped > 0) {
		snprintf(msg, sizeof(msg), "\n[execd: output limit reached, "
		    "%zu bytes dropped]\n", r->dropped);
		emit_at(r, &(struct sse_event){ .type = "stderr",
		    .text = msg }, true);
	}
	r->dropped = 0;
	r->finishing = true;
}

/* Shell output, verbatim, as a kernel's stream text would be. */
static void
shell_output(int which, const char *p, size_t n, void *arg)
{
	take(arg, which, p, n);
}

/* The shell's run ended: a non-zero status is an error, as in Jupyter. */
static void
shell_done(int status, bool timed_out, const char *reset, void *arg)
{
	struct run *r = arg;
	char value[16], line[64];
	struct kevent e;
	json_t *tb;

	if (status != 0 || timed_out) {
		snprintf(value, sizeof(value), "%d", timed_out ? -1 : status);
		snprintf(line, sizeof(line), timed_out ? "timed out after %lld "
		    "ms" : "exit status %lld", timed_out ? r->timeout_ms :
		    (long long)status);
		tb = json_pack("[s]", line);
		if (reset[0] != '\0')
			json_array_append_new(tb, json_string(reset));
		kevent_error(&e, timed_out ? "TimeoutError" :
		    "CommandExecError", value, tb);
		json_decref(tb);
		error_events(r, &e);
	}
	r->timed_out = false;	/* reported here */
	run_done(NULL, &(struct kp_msg){ 0 }, NULL, r);
}

/* The run's time is up: interrupt; run_done reports the timeout. */
static void
run_timeout(struct loop *l, uint64_t id, void *arg)
{
	struct run *r = arg;

	r->tmo = 0;
	r->timed_out = true;
	kernel_interrupt(context_kernel(r->ctx));
}

/* Send error event e (status "error", then the error); e is cleared. */
static void
error_events(struct run *r, struct kevent *e)
{
	struct sse_event st = { .type = "status", .text = "error" };
	struct sse_event ev = { .type = "error", .error = e->error };

	r->saw_error = true;
	emit(r, &st);
	emit(r, &ev);
	kevent_clear(e);
}

/* An error of our own, as error_events sends it. */
static void
error_named(struct run *r, const char *ename, const char *evalue)
{
	struct kevent e;

	kevent_error(&e, ename, evalue, NULL);
	error_events(r, &e);
}

/* One iopub message of the run. */
static void
run_output(struct kernel *k, const struct kp_msg *m, void *arg)
{
	struct run *r = arg;
	struct kevent_set set;
	struct kevent *e;
	struct sse_event ev;

	kevent_iopub(m, &set);
	for (size_t i = 0; i < set.n; i++) {
		e = &set.ev[i];
		switch (e->kind) {
		case KEV_STDOUT:
		case KEV_STDERR:
			if (e->text == set.note)	/* whole, never cut */
				emit(r, &(struct sse_event){ .type = "stderr",
				    .text = e->text });
			else
				take(r, e->kind == KEV_STDERR ? 2 : 1,
				    e->text, e->len);
			break;
		case KEV_COUNT:
			ev = (struct sse_event){ .type = "execution_count",
			    .execution_count = e->count };
			emit(r, &ev);
			break;
		case KEV_RESULT:
			ev = (struct sse_event){ .type = "result",
			    .results = e->results };
			emit(r, &ev);
			break;
		case KEV_ERROR:
			/* An interrupt of ours is reported as the timeout. */
			if (!r->timed_out ||
			    strcmp(e->ename, "KeyboardInterrupt") != 0)
				error_events(r, e);
			break;
		}
	}
	kevent_set_clear(&set);
}

/*
 * A reply that says the run failed when no error event went out: clients
 * must still see an error (see kevent_reply).
 */
static void
reply_errors(struct run *r, const json_t *c)
{
	struct kevent e;

	if (!r->saw_error && !r->timed_out && kevent_reply(c, &e))
		error_events(r, &e);
}

/* The run is over: final events, then the end of the stream. */
static void
run_done(struct kernel *k, const struct kp_msg *reply, const char *why,
    void *arg)
{
	struct run *r = arg;
	struct sse_event ev = { .type = "execution_complete" };
	char msg[128];

	if (r->running)
		context_use(r->ctx, -1);
	r->running = false;
	/* The context may go with its kernel: nothing may reach it now. */
	if (r->tmo != 0)
		loop_timer_cancel(r->app->loop, r->tmo);
	r->tmo = 0;
	line_finish(r);
	if (r->timed_out) {
		snprintf(msg, sizeof(msg), "execution timed out after %lld ms "
		    "and was interrupted", r->timeout_ms);
		error_named(r, "TimeoutError", msg);
	}
	if (reply == NULL) {
		error_named(r, "KernelError", why);
	} else {
		reply_errors(r, reply->content);
		ev.execution_time = (long long)(loop_now_ms() - r->t0);
		emit(r, &ev);
	}
	r->ended = true;	/* after the final event, nothing */
	if (r->feed != NULL)
		feed_kick(r->feed);
}

/*
 * Nobody listens any more: the kernel finishes the run on its own, and the
 * context no longer counts it.
 */
static void
run_forget(struct run *r)
{
	if (!r->running)
		return;
	if (context_shell(r->ctx) != NULL)
		session_run_forget(context_shell(r->ctx), r);
	else
		kernel_execute_forget(context_kernel(r->ctx), r->msg_id);
	context_use(r->ctx, -1);
	r->running = false;
}

/* The stream is gone: stop listening to the kernel for it. */
static void
run_gone(void *arg)
{
	struct run *r = arg;

	r->feed = NULL;
	run_forget(r);
	run_free(r);
}

static void
run_free(struct run *r)
{
	struct piece *t;

	while ((t = r->t_first) != NULL) {
		r->t_first = t->next;
		free(t);
	}
	buf_reset(&r->q);
	if (r->tmo != 0)
		loop_timer_cancel(r->app->loop, r->tmo);
	free(r->code);
	free(r);
}
