/*
 * call.c -- one tools/call in flight: how it is answered (JSON at once,
 * deferred JSON, or an event stream of progress and log notifications
 * and then the response, stream.c's), its cancellation, and its end.
 *
 * A streamed call whose event stream is gone stays while its session
 * does, running on unheard, its events held for a client that resumes
 * the stream (mcp_call_resume); once answered it is kept for a resume
 * too, but only the MCP_REPLAY_CALLS most recent such calls in all
 * (older ones are freed).
 *
 * A call that is not streamed is freed once it is answered and nothing
 * of HTTP refers to it any more.  A client that goes away first (MCP: a
 * disconnection is not a cancellation), or a streamed call's session
 * that ends before its answer, has the tool's gone function let go of
 * what the tool holds, and what runs goes on unheard, as for a client of
 * POST /code that left.  Loop thread.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/xmalloc.h"
#include "mcp.h"

#define PROGRESS_TEXT	(16 << 10)	/* text one progress carries */

struct mcp_call {
	struct http_req		*req;		/* until answered or gone */
	struct mcp_stream	*st;		/* streamed: its events */
	struct mcp_session	*s;		/* NULL: orphaned */
	json_t			*id;
	json_t			*token;		/* progressToken, or NULL */
	void			*app;
	bool			 sse_ok;	/* the client accepts one */
	bool			 answered;
	bool			 working;	/* http_req_work owns req */
	bool			 kept;		/* on the list of done ones */
	long long		 progress;
	mcp_cancel_fn		*cancel;	/* interrupt what runs */
	mcp_cancel_fn		*gone;		/* the client left */
	void			*cancel_arg;
	atomic_int		 work_cancel;
	struct mcp_call		*next;		/* the session's calls */
	struct mcp_call		*kept_next;	/* done ones, oldest first */
};

struct work {
	struct mcp_call		*call;
	mcp_work_fn		*fn;
	mcp_work_done_fn	*done;
	void			*arg;
};

/* Answered streamed calls whose stream is gone, oldest first. */
static struct mcp_call	*kept_head;
static unsigned		 nkept;

static void	 call_free(struct mcp_call *);
static void	 lost(struct mcp_call *);
static void	 keep(struct mcp_call *);
static void	 unkeep(struct mcp_call *);
static void	 rest(struct mcp_call *);
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

struct mcp_session *
mcp_call_session(const struct mcp_call *c)
{
	return c->s;
}

unsigned
mcp_call_stream_no(const struct mcp_call *c)
{
	return c->st != NULL ? mcp_stream_no(c->st) : 0;
}

bool
mcp_call_answered(const struct mcp_call *c)
{
	return c->answered;
}

static void
call_free(struct mcp_call *c)
{
	unkeep(c);
	if (c->s != NULL)
		mcp_session_detach(c->s, c);
	mcp_stream_free(c->st);
	json_decref(c->id);
	json_decref(c->token);
	free(c);
}

/* An answered streamed call, its stream gone, kept for a resume. */
static void
keep(struct mcp_call *c)
{
	struct mcp_call **pp;

	if (c->kept)
		return;
	for (pp = &kept_head; *pp != NULL; pp = &(*pp)->kept_next)
		;
	*pp = c;
	c->kept = true;
	c->kept_next = NULL;
	if (++nkept > MCP_REPLAY_CALLS)
		call_free(kept_head);
}

static void
unkeep(struct mcp_call *c)
{
	struct mcp_call **pp;

	if (!c->kept)
		return;
	for (pp = &kept_head; *pp != c; pp = &(*pp)->kept_next)
		;
	*pp = c->kept_next;
	c->kept = false;
	nkept--;
}

/* A streamed call heard by no stream: kept while its session lives. */
static void
rest(struct mcp_call *c)
{
	if (c->s == NULL) {
		if (c->answered)
			call_free(c);
		else
			lost(c);
	} else if (c->answered)
		keep(c);
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
	rest(arg);
}

void
mcp_call_later(struct mcp_call *c, bool stream)
{
	struct http_req *req = c->req;

	if (stream && c->sse_ok && c->token != NULL) {
		c->req = NULL;
		c->st = mcp_stream_new(on_stream_gone, c);
		/* if req got 500 instead, a resume may still hear the call */
		mcp_stream_attach(c->st, req, 0);
		return;
	}
	http_req_defer(req, on_defer_cancel, c);
}

/* Resume: a new stream for c on req, from after event number after. */
void
mcp_call_resume(struct mcp_call *c, struct http_req *req, uint64_t after)
{
	mcp_stream_attach(c->st, req, after);
	if (mcp_stream_heard(c->st))
		unkeep(c);
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

/* The session ended (it unlinked c): a streamed call unheard goes. */
void
mcp_call_orphan(struct mcp_call *c)
{
	c->s = NULL;
	if (c->st != NULL && !mcp_stream_heard(c->st))
		rest(c);
}

/* One notifications/progress, when the call streams with a token. */
void
mcp_call_progress(struct mcp_call *c, const char *msg, size_t n)
{
	json_t *p;

	if (c->st == NULL || c->token == NULL || c->answered)
		return;
	if (n > PROGRESS_TEXT)
		n = PROGRESS_TEXT;
	p = json_pack("{s:O, s:I, s:o}", "progressToken", c->token,
	    "progress", ++c->progress, "message",
	    json_stringn_nocheck(msg, n));
	mcp_stream_emit(c->st, jsonrpc_notification("notifications/progress",
	    p), false);
}

/* A server's progress relayed with the call's own token; see mcp.h. */
void
mcp_call_progress_relay(struct mcp_call *c, json_t *params)
{
	if (c->st == NULL || c->token == NULL || c->answered) {
		json_decref(params);
		return;
	}
	json_object_set(params, "progressToken", c->token);
	mcp_stream_emit(c->st, jsonrpc_notification("notifications/progress",
	    params), false);
}

/* notifications/message at level, if the session asks for that level. */
void
mcp_call_log(struct mcp_call *c, int level, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (c->st == NULL || c->answered || c->s == NULL ||
	    level < mcp_session_log_level(c->s))
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s == NULL)
		return;
	mcp_stream_emit(c->st, jsonrpc_notification("notifications/message",
	    json_pack("{s:s, s:s, s:o}", "level", mcp_log_level_name(level),
	    "logger", "execd", "data", json_string_nocheck(s))), false);
	free(s);
}

/* The response; see mcp.h. */
static void
answer(struct mcp_call *c, json_t *msg)
{
	c->answered = true;
	if (c->st != NULL) {
		mcp_stream_emit(c->st, msg, true);
		if (!mcp_stream_heard(c->st))
			rest(c);
		return;		/* else kept or freed when it is gone */
	}
	if (c->s != NULL) {
		mcp_session_detach(c->s, c);
		c->s = NULL;
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
	return c->req != NULL || (c->st != NULL &&
	    (mcp_stream_heard(c->st) || c->s != NULL));
}

/* Set when the call is cancelled or its client left; see mcp.h. */
const atomic_int *
mcp_call_flag(const struct mcp_call *c)
{
	return &c->work_cancel;
}
