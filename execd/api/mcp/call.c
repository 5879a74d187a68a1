/*
 * call.c -- one tools/call in flight: how it is answered (JSON at once,
 * deferred JSON, or an event stream of progress notifications and then
 * the response), its cancellation, and its end.
 *
 * A call is freed once it is answered and nothing of HTTP refers to it
 * any more: at once for JSON, when the stream is gone for an event
 * stream.  A client that goes away first (MCP: a disconnection is not a
 * cancellation) has the tool's gone function let go of what the tool
 * holds, and what runs goes on unheard, as for a client of POST /code
 * that left.  Loop thread.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../sse/sse_fmt.h"
#include "../../core/xmalloc.h"
#include "../../transport/evstream.h"
#include "mcp.h"

#define PROGRESS_TEXT	(16 << 10)	/* text one progress carries */

struct mcp_call {
	struct http_req		*req;		/* until answered or gone */
	struct evstream		*es;		/* an event stream, until gone */
	struct mcp_session	*s;		/* NULL: orphaned */
	json_t			*id;
	json_t			*token;		/* progressToken, or NULL */
	void			*app;
	bool			 sse_ok;	/* the client accepts one */
	bool			 answered;
	bool			 working;	/* http_req_work owns req */
	long long		 progress;
	mcp_cancel_fn		*cancel;	/* interrupt what runs */
	mcp_cancel_fn		*gone;		/* the client left */
	void			*cancel_arg;
	atomic_int		 work_cancel;
	struct mcp_call		*next;		/* the session's calls */
};

struct work {
	struct mcp_call		*call;
	mcp_work_fn		*fn;
	mcp_work_done_fn	*done;
	void			*arg;
};

static void	 call_free(struct mcp_call *);
static void	 lost(struct mcp_call *);
static void	 on_defer_cancel(struct http_req *, void *);
static void	 on_stream_gone(void *);
static void	 work_fn(void *);
static void	 work_reply(struct http_req *, void *);

struct mcp_call *
mcp_call_new(struct http_req *req, struct mcp_session *s, const json_t *id,
    const json_t *token, bool sse_ok)
{
	struct mcp_call *c = xcalloc(1, sizeof(*c));

	c->req = req;
	c->app = http_req_app(req);
	c->s = s;
	c->id = json_deep_copy(id);
	c->token = token != NULL ? json_deep_copy(token) : NULL;
	c->sse_ok = sse_ok;
	if (s != NULL)
		mcp_session_attach(s, c);
	return c;
}

const json_t *
mcp_call_id(const struct mcp_call *c)
{
	return c->id;
}

struct mcp_call **
mcp_call_nextp(struct mcp_call *c)
{
	return &c->next;
}

void *
mcp_call_app(const struct mcp_call *c)
{
	return c->app;
}

static void
call_free(struct mcp_call *c)
{
	if (c->s != NULL)
		mcp_session_detach(c->s, c);
	json_decref(c->id);
	json_decref(c->token);
	free(c);
}

/* The client left before the answer: the tool lets go, then the call. */
static void
lost(struct mcp_call *c)
{
	if (c->gone != NULL)
		c->gone(c->cancel_arg);
	call_free(c);
}

static void
on_defer_cancel(struct http_req *req, void *arg)
{
	struct mcp_call *c = arg;

	(void)req;
	c->req = NULL;
	lost(c);
}

static void
on_stream_gone(void *arg)
{
	struct mcp_call *c = arg;

	c->es = NULL;
	if (c->answered)
		call_free(c);
	else
		lost(c);
}

void
mcp_call_later(struct mcp_call *c, bool stream)
{
	struct evstream_opts o = { .framing = &sse_framing_standard,
	    .shape = EVSTREAM_TYPED, .gone = on_stream_gone, .arg = c };
	struct http_req *req = c->req;

	if (stream && c->sse_ok && c->token != NULL) {
		c->req = NULL;
		c->es = evstream_open(req, &o);
		/* NULL: req was answered 500; nothing will hear the call */
		return;
	}
	http_req_defer(req, on_defer_cancel, c);
}

void
mcp_call_on_cancel(struct mcp_call *c, mcp_cancel_fn *cancel,
    mcp_cancel_fn *gone, void *arg)
{
	c->cancel = cancel;
	c->gone = gone;
	c->cancel_arg = arg;
}

void
mcp_call_cancel(struct mcp_call *c)
{
	atomic_store(&c->work_cancel, 1);
	if (c->cancel != NULL && !c->answered)
		c->cancel(c->cancel_arg);
}

void
mcp_call_orphan(struct mcp_call *c)
{
	c->s = NULL;
}

/* One notifications/progress, if the stream has room for it. */
void
mcp_call_progress(struct mcp_call *c, const char *msg, size_t n)
{
	json_t *p;

	if (c->es == NULL || c->token == NULL || c->answered ||
	    evstream_ended(c->es))
		return;
	if (n > PROGRESS_TEXT)
		n = PROGRESS_TEXT;
	/* lossy by nature: a client behind loses progress, not the end */
	if (evstream_room(c->es) < 6 * n + 256)
		return;
	p = json_pack("{s:O, s:I, s:o}", "progressToken", c->token,
	    "progress", ++c->progress, "message",
	    json_stringn_nocheck(msg, n));
	(void)evstream_json(c->es, jsonrpc_notification(
	    "notifications/progress", p));
}

/* The response; see mcp.h. */
static void
answer(struct mcp_call *c, json_t *msg)
{
	struct buf b;

	c->answered = true;
	if (c->s != NULL) {
		mcp_session_detach(c->s, c);
		c->s = NULL;
	}
	if (c->es != NULL) {
		buf_init(&b);
		if (!evstream_ended(c->es)) {
			if (sse_fmt_json_event(&b, &sse_framing_standard,
			    msg) < 0)
				buf_reset(&b);	/* end it all the same */
			evstream_end(c->es, b.p, b.len);
		}
		buf_reset(&b);
		json_decref(msg);
		return;		/* freed when the stream is gone */
	}
	if (c->req != NULL)
		http_reply_json(c->req, 200, msg);
	else
		json_decref(msg);
	c->req = NULL;
	if (!c->working)
		call_free(c);
}

void
mcp_call_result(struct mcp_call *c, json_t *result)
{
	answer(c, jsonrpc_result(c->id, result));
}

void
mcp_call_rpc_error(struct mcp_call *c, int code, const char *msg)
{
	answer(c, jsonrpc_error(c->id, code, msg));
}

void
mcp_call_fail(struct mcp_call *c, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	mcp_call_result(c, json_pack("{s:[{s:s, s:o}], s:b}", "content",
	    "type", "text", "text", json_string_nocheck(s != NULL ? s :
	    "error"), "isError", 1));
	free(s);
}

void
mcp_call_text(struct mcp_call *c, const char *text, json_t *structured)
{
	json_t *r = json_pack("{s:[{s:s, s:o}]}", "content", "type", "text",
	    "text", json_string_nocheck(text));

	if (structured != NULL)
		json_object_set_new(r, "structuredContent", structured);
	mcp_call_result(c, r);
}

/* Work on a worker; see mcp.h. */
void
mcp_call_work(struct mcp_call *c, mcp_work_fn *fn, mcp_work_done_fn *done,
    void *arg)
{
	struct work *w = xcalloc(1, sizeof(*w));
	struct http_req *req = c->req;

	*w = (struct work){ c, fn, done, arg };
	c->working = true;
	http_req_work(req, HTTP_WORK_HEAVY, &c->work_cancel, work_fn,
	    work_reply, w);
}

static void
work_fn(void *arg)
{
	struct work *w = arg;

	w->fn(w->arg);
}

/* req NULL: the client left or the deadline passed; answer nowhere. */
static void
work_reply(struct http_req *req, void *arg)
{
	struct work *w = arg;
	struct mcp_call *c = w->call;

	c->req = req;
	c->working = false;
	w->done(c, w->arg);
	free(w);
}

bool
mcp_call_waited(const struct mcp_call *c)
{
	return c->req != NULL || c->es != NULL;
}

/* Set when the call is cancelled or its client left; see mcp.h. */
const atomic_int *
mcp_call_flag(const struct mcp_call *c)
{
	return &c->work_cancel;
}
