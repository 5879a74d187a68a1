/*
 * run.c -- a code run: its events, the cut of its output, its end.
 *
 * Events wait in two lists.  The queue holds events the reader may take
 * now.  The line holds what must wait: text being gathered (stdout and
 * stderr pieces, appended to while the same stream goes on) and, behind
 * such text, the events that came after it, so that order is kept.  While
 * the head lasts (the first half of max_output) text moves from the line
 * to the queue as the reader takes it; past the head, the line keeps only
 * the last half of max_output, its front dropped as more comes, and it
 * moves on once the run is over, after the marker that says what was
 * dropped.  Both lists hold whole events, so a reader never sees a cut
 * event.
 *
 * What is kept is the cut, not the output; but a reader that does not
 * read still leaves max_output of text waiting, which is far more than
 * the memory a stream may cost.  So text beyond RUN_MEM bytes is spooled:
 * written to a file of the run's (unlinked, in the directory run_init
 * named) and read back when it goes out, leaving in memory only the
 * item, which is small.  Spooled are the text events of the queue and the
 * pieces of the line but its last (text is appended there), those at the
 * front of each list staying in memory.  The file grows only with what
 * is spooled; the ranges of items gone are punched out of it, and it is
 * emptied whenever nothing in it is still held.  If it cannot be made or
 * written, text stays in memory, as before, and that is logged once.
 * What the events mean comes from the context (context.h); this
 * file knows neither kernels nor shells, nor any wire.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "context.h"
#include "kevent.h"
#include "run.h"

#define PIECE_MIN	(4 << 10)	/* memory of a piece of text in line */
#define PIECE_MAX	(64 << 10)
#define MOVE_MAX	(64 << 10)	/* text moved to the queue at once */
#define EV_COST		64		/* an event's bytes besides its data */
#define RUN_MEM		(256 << 10)	/* text held in memory, then spooled */
#define SPOOL_MIN	(4 << 10)	/* smaller text is never spooled */

/*
 * An event (which 0), or text of stream 1 or 2 still being gathered in
 * the line (which 1, 2: p[off..off+len) of cap bytes).  Text (a piece's,
 * or a text event's p[0..ev.text_len)) may be spooled: p is then NULL,
 * and byte i of it is at fbase + i in the run's file.
 */
struct item {
	struct item		*next;
	uint64_t		 seq;		/* once taken */
	int			 which;
	struct sse_event	 ev;
	json_t			*json;		/* ev's results or error */
	size_t			 cost;		/* which 0: counted bytes */
	size_t			 off, len, cap;
	bool			 text;		/* which 0: a text event */
	bool			 spooled;
	uint64_t		 fbase;		/* spooled: file offset of p[0] */
	uint64_t		 foff, flen;	/* ... the range written */
	char			*p;
};

struct list {
	struct item	*first, *last;
};

struct run {
	struct context		*ctx;
	run_notify_cb		*notify;
	void			*arg;
	size_t			 max_output, max_queue, max_replay;
	long long		 timeout_ms;
	uint64_t		 t0;
	struct list		 q;		/* events the reader may take */
	struct list		 line;		/* what waits */
	struct item		*taken;		/* the event run_next gave */
	struct list		 kept;		/* taken before, for replay */
	size_t			 kept_bytes;
	uint64_t		 seq;		/* of the last event taken */
	size_t			 q_bytes;	/* of events in q */
	size_t			 ev_bytes;	/* of events in line */
	size_t			 t_bytes, t_mem;	/* of text in line */
	size_t			 out_bytes;	/* went out as the head */
	size_t			 dropped;
	bool			 running;	/* the context reports to us */
	bool			 head_full;
	bool			 finishing;	/* the run is over */
	bool			 ended;		/* nothing more may queue */
	bool			 overflowed;
	bool			 saw_error;	/* an error event went out */
	bool			 in_new;	/* run_new has not returned */
	size_t			 mem;		/* text memory that may spool */
	int			 spool;		/* the file, or -1 */
	uint64_t		 spool_end;
	size_t			 nspooled;	/* items with text in it */
	bool			 spool_broken;
};

static char	*spool_dir;	/* run_init's */
static bool	 spool_warned;

static void	 on_event(struct kevent *, void *);
static void	 on_done(const json_t *, const char *, void *);
static void	 notify(struct run *);
static void	 emit(struct run *, const struct sse_event *, json_t *,
		    bool);
static void	 emit_text(struct run *, int, const char *, size_t);
static void	 error_events(struct run *, struct kevent *);
static void	 error_named(struct run *, const char *, const char *);
static void	 take(struct run *, int, const char *, size_t);
static void	 line_add(struct run *, int, const char *, size_t);
static void	 line_move(struct run *);
static void	 line_trim(struct run *, size_t);
static void	 line_finish(struct run *);
static void	 overflow(struct run *);
static void	 keep(struct run *, struct item *);
static void	 list_append(struct list *, struct item *);
static struct item *item_pop(struct list *);
static void	 item_free(struct run *, struct item *);
static void	 list_free(struct run *, struct list *);
static size_t	 text_mem(const struct item *);
static void	 spool_all(struct run *);
static bool	 spool_item(struct run *, struct item *);
static void	 unspool(struct run *, struct item *);
static void	 spool_release(struct run *, struct item *);
static unsigned char byte_at(struct run *, struct item *, size_t);

static const struct context_run_cb run_cb = { on_event, on_done };

/* Where runs spool text (copied); NULL: nowhere, text stays in memory. */
void
run_init(const char *dir)
{
	free(spool_dir);
	spool_dir = dir != NULL ? xstrdup(dir) : NULL;
}

/* Start the code; the first events are queued before this returns. */
struct run *
run_new(struct context *c, const struct run_opts *o, run_notify_cb *cb,
    void *arg)
{
	struct run *r = xcalloc(1, sizeof(*r));
	int rc;

	r->ctx = c;
	r->notify = cb;
	r->arg = arg;
	r->max_output = o->max_output;
	r->max_queue = o->max_queue;
	r->max_replay = o->max_replay;
	r->timeout_ms = o->timeout_ms;
	r->t0 = loop_now_ms();
	r->in_new = true;
	r->spool = -1;
	emit(r, &(struct sse_event){ .type = "init",
	    .text = context_id(c) }, NULL, false);
	r->running = true;
	if ((rc = context_run(c, o->code, o->timeout_ms, &run_cb, r)) < 0) {
		r->running = false;
		on_done(NULL, rc == -EINVAL ? "the code is not valid UTF-8" :
		    "the kernel is not available", r);
	}
	r->in_new = false;
	return r;
}

/* The next event: from the queue, after moving what may go from line. */
int
run_next(struct run *r, struct sse_event *ev)
{
	struct item *t;

	keep(r, r->taken);
	r->taken = NULL;
	if (r->overflowed)
		return RUN_OVERFLOW;
	while (r->q.first == NULL && r->line.first != NULL &&
	    (r->finishing || !r->head_full))
		line_move(r);
	if ((t = item_pop(&r->q)) == NULL)
		return r->ended && r->line.first == NULL ? RUN_END : RUN_WAIT;
	if (t->spooled)
		unspool(r, t);
	r->q_bytes -= t->cost;
	if (t->seq == 0)	/* not a replay */
		t->seq = ++r->seq;
	r->taken = t;
	*ev = t->ev;
	ev->seq = t->seq;
	return RUN_EVENT;
}

/*
 * The kept events after seq go back to the front of the queue, in order.
 * They are counted in the queue again, so a replay far behind the run
 * is bounded as a slow reader is.
 */
int
run_replay(struct run *r, uint64_t seq)
{
	struct list back = { NULL, NULL };
	struct item *t;

	keep(r, r->taken);
	r->taken = NULL;
	if (seq > r->seq)
		return -EINVAL;
	if (seq == r->seq)
		return 0;
	if (r->kept.first == NULL || r->kept.first->seq > seq + 1)
		return -ERANGE;
	while ((t = item_pop(&r->kept)) != NULL) {
		r->kept_bytes -= t->cost;
		if (t->seq <= seq) {
			item_free(r, t);
			continue;
		}
		list_append(&back, t);
		r->q_bytes += t->cost;
	}
	if (back.last != NULL) {
		back.last->next = r->q.first;
		if (r->q.first == NULL)
			r->q.last = back.last;
		r->q.first = back.first;
	}
	return 0;
}

int
run_interrupt(struct run *r)
{
	if (!r->running)
		return -ESRCH;
	return context_interrupt(r->ctx);
}

void
run_free(struct run *r)
{
	if (r == NULL)
		return;
	if (r->running)
		context_run_forget(r->ctx, r);
	list_free(r, &r->q);
	list_free(r, &r->line);
	list_free(r, &r->kept);
	item_free(r, r->taken);
	if (r->spool >= 0)
		close(r->spool);
	free(r);
}

/* Keep a taken event for replay, the oldest going past max_replay. */
static void
keep(struct run *r, struct item *t)
{
	if (t == NULL)
		return;
	if (r->max_replay == 0) {
		item_free(r, t);
		return;
	}
	list_append(&r->kept, t);
	r->kept_bytes += t->cost;
	while (r->kept_bytes > r->max_replay &&
	    (t = item_pop(&r->kept)) != NULL) {
		r->kept_bytes -= t->cost;
		item_free(r, t);
	}
}

/* Tell the reader, unless it is still in run_new's caller. */
static void
notify(struct run *r)
{
	if (!r->in_new)
		r->notify(r->arg);
}

/* One event the context reported. */
static void
on_event(struct kevent *e, void *arg)
{
	struct run *r = arg;

	switch (e->kind) {
	case KEV_STDOUT:
	case KEV_STDERR:
		if (e->note)		/* whole, never cut */
			emit(r, &(struct sse_event){ .type = "stderr",
			    .text = e->text, .text_len = e->len }, NULL,
			    false);
		else
			take(r, e->kind == KEV_STDERR ? 2 : 1, e->text,
			    e->len);
		break;
	case KEV_COUNT:
		emit(r, &(struct sse_event){ .type = "execution_count",
		    .execution_count = e->count }, NULL, false);
		break;
	case KEV_RESULT:
		emit(r, &(struct sse_event){ .type = "result",
		    .results = e->results }, e->results, false);
		e->results = NULL;
		break;
	case KEV_ERROR:
		error_events(r, e);
		break;
	}
	kevent_clear(e);
	spool_all(r);
	notify(r);
}

/* The run is over: final events, then nothing more. */
static void
on_done(const json_t *reply, const char *why, void *arg)
{
	struct run *r = arg;
	struct kevent e;

	r->running = false;	/* the context may go now */
	line_finish(r);
	if (reply == NULL) {
		error_named(r, "KernelError", why);
	} else {
		/* A failure the kernel only replied (see kevent_reply). */
		if (!r->saw_error && kevent_reply(reply, &e))
			error_events(r, &e);
		emit(r, &(struct sse_event){ .type = "execution_complete",
		    .execution_time = (long long)(loop_now_ms() - r->t0) },
		    NULL, false);
	}
	r->ended = true;
	notify(r);
}

/* Status "error", then the error itself; e is cleared. */
static void
error_events(struct run *r, struct kevent *e)
{
	r->saw_error = true;
	emit(r, &(struct sse_event){ .type = "status", .text = "error" },
	    NULL, false);
	emit(r, &(struct sse_event){ .type = "error", .error = e->error },
	    e->error, false);
	e->error = NULL;
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

/* The bytes an event's JSON costs to hold and to send. */
static size_t
json_cost(const json_t *j)
{
	return j != NULL ? json_dumpb(j, NULL, 0, JSON_COMPACT) : 0;
}

/*
 * A copy of ev, stamped now, holding its text; json is ev's results or
 * error, whose reference it takes.
 */
static struct item *
item_new(const struct sse_event *ev, json_t *json)
{
	size_t n = ev->text == NULL ? 0 : ev->text_len > 0 ? ev->text_len :
	    strlen(ev->text);
	struct item *t = xcalloc(1, sizeof(*t));

	t->ev = *ev;
	t->ev.timestamp = loop_wall_ms();
	if (ev->text != NULL) {
		t->p = xcalloc(1, n + 1);
		memcpy(t->p, ev->text, n);
		t->ev.text = t->p;
		t->ev.text_len = n;
	}
	t->json = json;
	t->cost = EV_COST + n + json_cost(t->json);
	return t;
}

static void
list_append(struct list *l, struct item *t)
{
	t->next = NULL;
	if (l->last != NULL)
		l->last->next = t;
	else
		l->first = t;
	l->last = t;
}

static void
list_push(struct list *l, struct item *t)
{
	t->next = l->first;
	l->first = t;
	if (l->last == NULL)
		l->last = t;
}

static struct item *
item_pop(struct list *l)
{
	struct item *t = l->first;

	if (t != NULL && (l->first = t->next) == NULL)
		l->last = NULL;
	return t;
}

static void
item_free(struct run *r, struct item *t)
{
	if (t == NULL)
		return;
	if (t->spooled)
		spool_release(r, t);
	else
		r->mem -= text_mem(t);
	json_decref(t->json);
	free(t->p);
	free(t);
}

static void
list_free(struct run *r, struct list *l)
{
	struct item *t;

	while ((t = item_pop(l)) != NULL)
		item_free(r, t);
}

/*
 * Queue one event (copied, and json's reference taken: ev's results or
 * error): behind the text still in line, if any (at the line's front if
 * front).  Past the bound, the run overflows.
 */
static void
emit(struct run *r, const struct sse_event *ev, json_t *json, bool front)
{
	struct item *t;

	if (r->ended) {
		json_decref(json);
		return;
	}
	t = item_new(ev, json);
	if (r->line.first == NULL) {
		list_append(&r->q, t);
		r->q_bytes += t->cost;
	} else {
		if (front)
			list_push(&r->line, t);
		else
			list_append(&r->line, t);
		r->ev_bytes += t->cost;
	}
	if (r->q_bytes + r->ev_bytes > r->max_output + r->max_queue)
		overflow(r);
}

/* Text straight into the queue, as events of at most RUN_TEXT bytes. */
static void
emit_text(struct run *r, int which, const char *p, size_t n)
{
	struct sse_event ev = { .type = which == 2 ? "stderr" : "stdout" };
	struct item *t;
	size_t k;

	while (n > 0) {
		k = n < RUN_TEXT ? n : RUN_TEXT;
		while (k < n && k > 1 && ((unsigned char)p[k] & 0xc0) == 0x80)
			k--;
		ev.text = p;
		ev.text_len = k;
		t = item_new(&ev, NULL);
		t->text = true;
		r->mem += text_mem(t);
		list_append(&r->q, t);
		r->q_bytes += t->cost;
		p += k;
		n -= k;
	}
}

/* Give back everything held; the reader is told RUN_OVERFLOW. */
static void
overflow(struct run *r)
{
	list_free(r, &r->q);
	list_free(r, &r->line);
	list_free(r, &r->kept);
	r->q_bytes = r->ev_bytes = r->t_bytes = r->t_mem = r->kept_bytes = 0;
	r->overflowed = r->ended = r->finishing = true;
}

/* A new text piece at the end of the line. */
static struct item *
piece_new(struct run *r, int which, size_t cap)
{
	struct item *t = xcalloc(1, sizeof(*t));

	t->which = which;
	t->cap = cap;
	t->p = xmalloc(cap);
	list_append(&r->line, t);
	r->t_mem += cap;
	r->mem += cap;
	return t;
}

/*
 * Move the front of the line into the queue: an event whole, or up to
 * MOVE_MAX bytes of text -- while the head lasts, only what is left of
 * it; once the run is over, anything.
 */
static void
line_move(struct run *r)
{
	size_t head = r->max_output - r->max_output / 2, k;
	struct item *t = r->line.first;

	if (t->which == 0) {
		item_pop(&r->line);
		r->ev_bytes -= t->cost;
		list_append(&r->q, t);
		r->q_bytes += t->cost;
		return;
	}
	if (t->spooled)
		unspool(r, t);
	k = t->len < MOVE_MAX ? t->len : MOVE_MAX;
	if (!r->finishing && k > head - r->out_bytes)
		k = head - r->out_bytes;
	while (k > 0 && k < t->len &&
	    ((unsigned char)t->p[t->off + k] & 0xc0) == 0x80)
		k--;
	if (!r->finishing && (r->out_bytes += k) >= head)
		r->head_full = true;
	emit_text(r, t->which, t->p + t->off, k);
	r->t_bytes -= k;
	t->off += k;
	t->len -= k;
	if (t->len > 0) {
		if (k == 0)
			r->head_full = true;
		return;
	}
	item_pop(&r->line);
	r->t_mem -= t->cap;
	item_free(r, t);
}

/*
 * Drop n bytes of text from the front of the line (one piece at most);
 * an event there goes to the queue instead, since it cannot be cut.
 */
static void
line_trim(struct run *r, size_t n)
{
	struct item *t = r->line.first;

	if (t->which == 0 || n >= t->len) {
		item_pop(&r->line);
		if (t->which == 0) {
			r->ev_bytes -= t->cost;
			list_append(&r->q, t);
			r->q_bytes += t->cost;
			return;
		}
		r->t_bytes -= t->len;
		r->dropped += t->len;
		r->t_mem -= t->cap;
		item_free(r, t);
		return;
	}
	t->off += n;
	t->len -= n;
	/* Never start inside a character. */
	while (t->len > 0 && (byte_at(r, t, t->off) & 0xc0) == 0x80) {
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
	struct item *t;
	size_t k;

	while (n > 0) {
		t = r->line.last;
		if (t == NULL || t->which != which || t->spooled ||
		    t->off + t->len == t->cap)
			t = piece_new(r, which, n < PIECE_MIN ? PIECE_MIN :
			    n > PIECE_MAX ? PIECE_MAX : n);
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
 * Output of stream 1 or 2 joins the line the reader takes from.  While
 * the head lasts the line may hold all of it; past it, the head is queued
 * whole and the line keeps the last half of max_output, its front dropped
 * as more comes (and so is a piece that holds more memory than text:
 * alternating stdout and stderr makes small pieces).  That tail goes out
 * once the run is over.
 */
static void
take(struct run *r, int which, const char *p, size_t n)
{
	size_t head = r->max_output - r->max_output / 2;
	size_t cap = r->max_output / 2, k, room;

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
			while (!r->head_full && r->line.first != NULL)
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
	while (r->line.first != NULL && (r->t_bytes > cap ||
	    r->t_mem > cap + 2 * PIECE_MAX))
		line_trim(r, r->t_bytes > cap ? r->t_bytes - cap :
		    r->line.first->len);
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
		emit(r, &(struct sse_event){ .type = "stderr", .text = msg },
		    NULL, true);
	}
	r->dropped = 0;
	r->finishing = true;
}

/* Text memory of t that spool_all may give back. */
static size_t
text_mem(const struct item *t)
{
	if (t->spooled || t->p == NULL)
		return 0;
	if (t->which != 0)
		return t->cap;
	return t->text ? t->ev.text_len + 1 : 0;
}

/*
 * Past RUN_MEM bytes of text in memory, spool what the reader takes last:
 * of each list the front stays (the queue's first RUN_MEM / 2 bytes, the
 * line's next), and the line's last piece, which text is added to.
 */
static void
spool_all(struct run *r)
{
	struct list *lists[2] = { &r->q, &r->line };
	size_t keep, m;

	if (r->mem <= RUN_MEM || r->spool_broken)
		return;
	keep = 0;
	for (int i = 0; i < 2; i++) {
		for (struct item *t = lists[i]->first; t != NULL;
		    t = t->next) {
			if ((m = text_mem(t)) < SPOOL_MIN)
				continue;
			if (keep + m <= RUN_MEM / 2 ||
			    (i == 1 && t == r->line.last)) {
				keep += m;
				continue;
			}
			if (!spool_item(r, t))
				return;
		}
	}
}

/* Write t's text to the file and free its memory; false on failure. */
static bool
spool_item(struct run *r, struct item *t)
{
	size_t start = t->which != 0 ? t->off : 0;
	size_t len = t->which != 0 ? t->len : t->ev.text_len, done = 0;
	ssize_t n;

	if (spool_dir == NULL) {	/* none: in memory, as asked */
		r->spool_broken = true;
		return false;
	}
	if (r->spool < 0) {
		r->spool = open(spool_dir, O_TMPFILE | O_RDWR | O_CLOEXEC,
		    0600);
		if (r->spool < 0)
			goto broken;
		r->spool_end = 0;
	}
	while (done < len) {
		n = pwrite(r->spool, t->p + start + done, len - done,
		    (off_t)(r->spool_end + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto broken;
		done += (size_t)n;
	}
	r->mem -= text_mem(t);
	t->foff = r->spool_end;
	t->flen = len;
	t->fbase = r->spool_end - start;
	r->spool_end += len;
	free(t->p);
	t->p = NULL;
	t->spooled = true;
	r->nspooled++;
	return true;
broken:
	if (!spool_warned)
		log_warn("code output kept in memory: cannot spool it to %s",
		    spool_dir);
	spool_warned = true;
	r->spool_broken = true;
	return false;
}

/* Read t's text back into memory. */
static void
unspool(struct run *r, struct item *t)
{
	size_t cap = t->which != 0 ? t->cap : t->ev.text_len + 1;
	size_t start = t->which != 0 ? t->off : 0;
	size_t len = t->which != 0 ? t->len : t->ev.text_len, done = 0;
	ssize_t n;

	t->p = xcalloc(1, cap);
	while (done < len) {
		n = pread(r->spool, t->p + start + done, len - done,
		    (off_t)(t->fbase + start + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Cannot happen short of a failing disk: say so. */
			log_warn("code output lost reading it back");
			memset(t->p + start + done, '?', len - done);
			break;
		}
		done += (size_t)n;
	}
	spool_release(r, t);
	if (t->which == 0)
		t->ev.text = t->p;
	r->mem += text_mem(t);
}

/* t's text leaves the file: punch its range out, or empty the file. */
static void
spool_release(struct run *r, struct item *t)
{
	t->spooled = false;
	if (--r->nspooled == 0) {
		if (ftruncate(r->spool, 0) == 0)
			r->spool_end = 0;
		return;
	}
	(void)fallocate(r->spool, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    (off_t)t->foff, (off_t)t->flen);
}

/* Byte i of t's text, wherever it is. */
static unsigned char
byte_at(struct run *r, struct item *t, size_t i)
{
	unsigned char c = 0;

	if (!t->spooled)
		return (unsigned char)t->p[i];
	if (pread(r->spool, &c, 1, (off_t)(t->fbase + i)) != 1)
		return 0;
	return c;
}
