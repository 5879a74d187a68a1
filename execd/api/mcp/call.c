/*
 * call.c -- one tools/call in flight: how it is answered (JSON at once,
 * deferred JSON, or an event stream of progress and log notifications
 * and then the response), its cancellation, its resumption, and its end.
 *
 * A streamed call numbers its events ("id: S-N": S the stream's number,
 * unique in execd, N the event's from 1) and holds them for a client
 * that lost the stream and comes back with GET and Last-Event-ID
 * (mcp_call_resume): the last MCP_REPLAY_BYTES of notifications and the
 * response, whatever its size.  A streamed call whose stream is gone
 * stays while its session does, running on unheard and holding what it
 * sends; once answered it is kept for a resume too, but only the
 * MCP_REPLAY_CALLS most recent such calls in all (older ones are freed).
 *
 * A call that is not streamed is freed once it is answered and nothing
 * of HTTP refers to it any more.  A client that goes away first (MCP: a
 * disconnection is not a cancellation), or a streamed call's session
 * that ends before its answer, has the tool's gone function let go of
 * what the tool holds, and what runs goes on unheard, as for a client of
 * POST /code that left.  Loop thread.
 */
#include <inttypes.h>
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

/* An event of a streamed call, framed, held for a resume. */
struct held {
	struct held	*next;
	uint64_t	 no;
	bool		 last;		/* the response */
	size_t		 len;
	char		 p[];
};

/* Between a stream and its call: NULL once a resumed one replaced it. */
struct link {
	struct mcp_call	*c;
};

struct mcp_call {
	struct http_req		*req;		/* until answered or gone */
	struct evstream		*es;		/* an event stream, until gone */
	struct link		*link;		/* es's */
	struct mcp_session	*s;		/* NULL: orphaned */
	json_t			*id;
	json_t			*token;		/* progressToken, or NULL */
	void			*app;
	bool			 sse_ok;	/* the client accepts one */
	bool			 answered;
	bool			 working;	/* http_req_work owns req */
	bool			 kept;		/* on the list of done ones */
	long long		 progress;
	unsigned		 stream_no;	/* streamed: S of its ids */
	uint64_t		 evno;		/* events numbered */
	struct held		*held, **held_tail;
	size_t			 held_bytes;	/* but the response's */
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
static unsigned		 last_stream;

static void	 call_free(struct mcp_call *);
static void	 lost(struct mcp_call *);
static void	 keep(struct mcp_call *);
static void	 unkeep(struct mcp_call *);
static void	 rest(struct mcp_call *);
static void	 emit(struct mcp_call *, json_t *, bool);
static void	 hold(struct mcp_call *, const char *, size_t, bool);
static struct evstream *stream_open(struct mcp_call *, struct http_req *);
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

unsigned
mcp_call_stream_no(const struct mcp_call *c)
{
	return c->stream_no;
}

bool
mcp_call_answered(const struct mcp_call *c)
{
	return c->answered;
}

static void
call_free(struct mcp_call *c)
{
	struct held *h;

	unkeep(c);
	if (c->s != NULL)
		mcp_session_detach(c->s, c);
	if (c->link != NULL)
		c->link->c = NULL;
	while ((h = c->held) != NULL) {
		c->held = h->next;
		free(h);
	}
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
	struct link *l = arg;
	struct mcp_call *c = l->c;

	free(l);
	if (c == NULL)
		return;		/* a resumed stream took its place */
	c->es = NULL;
	c->link = NULL;
	rest(c);
}

/* req answered with an event stream for c, or NULL (req got 500). */
static struct evstream *
stream_open(struct mcp_call *c, struct http_req *req)
{
	struct link *l = xcalloc(1, sizeof(*l));
	struct evstream_opts o = { .framing = &sse_framing_standard,
	    .shape = EVSTREAM_TYPED, .gone = on_stream_gone, .arg = l };
	struct evstream *es;

	l->c = c;
	if ((es = evstream_open(req, &o)) == NULL) {
		free(l);
		return NULL;
	}
	if (c->es != NULL) {
		/* the one it replaces, not seen gone yet, ends now */
		c->link->c = NULL;
		if (!evstream_ended(c->es))
			evstream_end(c->es, NULL, 0);
	}
	c->es = es;
	c->link = l;
	return es;
}

void
mcp_call_later(struct mcp_call *c, bool stream)
{
	struct http_req *req = c->req;

	if (stream && c->sse_ok && c->token != NULL) {
		c->req = NULL;
		if (++last_stream == 0)
			last_stream = 1;
		c->stream_no = last_stream;
		/* NULL: req was answered 500; a resume may still hear it */
		(void)stream_open(c, req);
		return;
	}
	http_req_defer(req, on_defer_cancel, c);
}

/* Resume: a new stream for c on req, from after event number after. */
void
mcp_call_resume(struct mcp_call *c, struct http_req *req, uint64_t after)
{
	struct evstream *es;
	struct held *h;

	if ((es = stream_open(c, req)) == NULL)
		return;
	unkeep(c);	/* heard again */
	for (h = c->held; h != NULL && !evstream_ended(es); h = h->next) {
		if (h->no <= after)
			continue;
		if (h->last)
			evstream_end(es, h->p, h->len);
		else if (evstream_room(es) >= h->len)
			(void)evstream_push(es, h->p, h->len);
	}
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
	if (c->stream_no != 0 && c->es == NULL)
		rest(c);
}

/* Hold a framed event; past the bound, the oldest notifications go. */
static void
hold(struct mcp_call *c, const char *p, size_t n, bool last)
{
	struct held *h = xmalloc(sizeof(*h) + n);

	h->next = NULL;
	h->no = c->evno;
	h->last = last;
	h->len = n;
	memcpy(h->p, p, n);
	if (c->held == NULL)
		c->held_tail = &c->held;
	*c->held_tail = h;
	c->held_tail = &h->next;
	if (!last)
		c->held_bytes += n;
	while (c->held_bytes > MCP_REPLAY_BYTES && !c->held->last) {
		h = c->held;
		c->held = h->next;
		c->held_bytes -= h->len;
		free(h);
	}
	if (c->held == NULL)
		c->held_tail = &c->held;
}

/*
 * Send msg (taken) on a streamed call's stream, numbered and held: a
 * notification only if the stream has room for it (lossy by nature: a
 * client behind loses notifications, never the end), the response last
 * whatever its size.
 */
static void
emit(struct mcp_call *c, json_t *msg, bool last)
{
	struct buf b;

	buf_init(&b);
	buf_addf(&b, "id: %u-%" PRIu64 "\ndata: ", c->stream_no, ++c->evno);
	if (sse_fmt_json(&b, msg) < 0) {
		buf_reset(&b);	/* a response unframed ends it all the same */
	} else
		buf_adds(&b, "\n\n");
	json_decref(msg);
	if (b.len > 0)
		hold(c, b.p, b.len, last);
	if (c->es != NULL && !evstream_ended(c->es)) {
		if (last)
			evstream_end(c->es, b.p, b.len);
		else if (evstream_room(c->es) >= b.len)
			(void)evstream_push(c->es, b.p, b.len);
	}
	buf_reset(&b);
}

/* One notifications/progress, when the call streams with a token. */
void
mcp_call_progress(struct mcp_call *c, const char *msg, size_t n)
{
	json_t *p;

	if (c->stream_no == 0 || c->token == NULL || c->answered)
		return;
	if (n > PROGRESS_TEXT)
		n = PROGRESS_TEXT;
	p = json_pack("{s:O, s:I, s:o}", "progressToken", c->token,
	    "progress", ++c->progress, "message",
	    json_stringn_nocheck(msg, n));
	emit(c, jsonrpc_notification("notifications/progress", p), false);
}

/* notifications/message at level, if the session asks for that level. */
void
mcp_call_log(struct mcp_call *c, int level, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (c->stream_no == 0 || c->answered || c->s == NULL ||
	    level < mcp_session_log_level(c->s))
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s == NULL)
		return;
	emit(c, jsonrpc_notification("notifications/message",
	    json_pack("{s:s, s:s, s:o}", "level", mcp_log_level_name(level),
	    "logger", "execd", "data", json_string_nocheck(s))), false);
	free(s);
}

/* The response; see mcp.h. */
static void
answer(struct mcp_call *c, json_t *msg)
{
	c->answered = true;
	if (c->stream_no != 0) {
		emit(c, msg, true);
		if (c->es == NULL)
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
	return c->req != NULL || c->es != NULL ||
	    (c->stream_no != 0 && c->s != NULL);
}

/* Set when the call is cancelled or its client left; see mcp.h. */
const atomic_int *
mcp_call_flag(const struct mcp_call *c)
{
	return &c->work_cancel;
}
