/*
 * outstream.c -- events of commands and session runs (see outstream.h).
 *
 * Framing and event shapes only; what runs and when it ends is the
 * caller's, and how a command's history is kept and replayed is cmdlog's.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../core/loop.h"
#include "../transport/evstream.h"
#include "cmdlog.h"
#include "outstream.h"

#define BATCH_MAX	(256 << 10)	/* log mode: append past this */

static void	emit(struct outstream *, struct sse_event *);
static void	flush(struct outstream *);
static void	begin(struct outstream *, struct loop *, const char *);

/* What every start has in common: the splitters, the clock, init. */
static void
begin(struct outstream *o, struct loop *loop, const char *id)
{
	o->loop = loop;
	o->t0 = loop_now_ms();
	o->seq = 0;
	o->now = 0;
	if (o->log != NULL) {
		lines_init_keep(&o->line[1]);
		lines_init_keep(&o->line[2]);
	} else {
		lines_init(&o->line[1]);
		lines_init(&o->line[2]);
	}
	buf_init(&o->batch);
	outstream_push(o, &(struct sse_event){ .type = "init", .text = id });
}

/* Start: init (the stream layer pings). */
void
outstream_start(struct outstream *o, struct loop *loop, struct evstream *s,
    const char *id)
{
	o->s = s;
	o->log = NULL;
	o->numbered = false;
	begin(o, loop, id);
}

/* Start with numbered events. */
void
outstream_start_numbered(struct outstream *o, struct loop *loop,
    struct evstream *s, const char *id)
{
	o->s = s;
	o->log = NULL;
	o->numbered = true;
	begin(o, loop, id);
}

/* Start writing a command's history. */
void
outstream_start_log(struct outstream *o, struct loop *loop,
    struct cmdlog *log, const char *id)
{
	o->s = NULL;
	o->log = log;
	o->numbered = true;
	begin(o, loop, id);
}

/* One event, appended at once in log mode. */
void
outstream_push(struct outstream *o, struct sse_event *ev)
{
	emit(o, ev);
	flush(o);
}

/*
 * One event: to the stream (a client that stopped reading gets the
 * layer's overflow event and the end), or to the batch for the log.
 */
static void
emit(struct outstream *o, struct sse_event *ev)
{
	if (o->log == NULL && (o->s == NULL || evstream_ended(o->s)))
		return;
	ev->timestamp = o->now != 0 ? o->now : loop_wall_ms();
	ev->seq = o->numbered ? ++o->seq : 0;
	if (o->log != NULL) {
		sse_fmt_event(&o->batch, ev);
		if (o->batch.len >= BATCH_MAX)
			flush(o);
		return;
	}
	(void)evstream_event(o->s, ev);
}

/* Log mode: append what the batch holds. */
static void
flush(struct outstream *o)
{
	if (o->log == NULL || o->batch.len == 0)
		return;
	/* A failure is cmdlog's to report; the run goes on regardless. */
	(void)cmdlog_append(o->log, o->batch.p, o->batch.len);
	buf_drain(&o->batch, o->batch.len);
	if (buf_cost(&o->batch) > BATCH_MAX * 2)
		buf_reset(&o->batch);	/* give a burst back */
}

struct line_to {
	struct outstream	*o;
	int			 which;
};

/* One line as an event; a blank line is the text "\n", as upstream. */
static void
line(const char *p, size_t n, void *arg)
{
	struct line_to *t = arg;
	struct sse_event ev = { .type = t->which == 1 ? "stdout" : "stderr",
	    .text = n > 0 ? p : "\n", .text_len = n > 0 ? n : 1 };

	emit(t->o, &ev);
}

/* Output, cut into lines. */
void
outstream_output(struct outstream *o, int which, const char *p, size_t n)
{
	struct line_to t = { o, which };

	/* The lines of one read were read at one time. */
	o->now = loop_wall_ms();
	lines_feed(&o->line[which], p, n, line, &t);
	o->now = 0;
	flush(o);
}

/* execution_complete, or the error event CommandExecError. */
static json_t *
final_event(struct sse_event *ev, int code, const char *const *tb,
    size_t ntb, long long exec_ms)
{
	char value[16];
	json_t *e, *a;

	if (code == 0) {
		*ev = (struct sse_event){ .type = "execution_complete",
		    .execution_time = exec_ms };
		return NULL;
	}
	snprintf(value, sizeof(value), "%d", code);
	a = json_array();
	for (size_t i = 0; i < ntb; i++)
		json_array_append_new(a, json_string(tb[i]));
	e = json_pack("{s:s, s:s, s:o}", "ename", "CommandExecError",
	    "evalue", value, "traceback", a);
	*ev = (struct sse_event){ .type = "error", .error = e };
	return e;
}

/* Last lines, the final event, the end of the stream or the log. */
void
outstream_end(struct outstream *o, int code, const char *const *tb,
    size_t ntb)
{
	struct sse_event ev;
	json_t *e;

	for (int w = 1; w <= 2; w++) {
		struct line_to t = { o, w };

		lines_flush(&o->line[w], line, &t);
	}
	e = final_event(&ev, code, tb, ntb,
	    (long long)(loop_now_ms() - o->t0));
	emit(o, &ev);
	json_decref(e);
	flush(o);
	if (o->log != NULL)
		cmdlog_end(o->log);
	else if (o->s != NULL && !evstream_ended(o->s))
		evstream_end(o->s, NULL, 0);
}

/* The stream is gone, or the run is over. */
void
outstream_gone(struct outstream *o)
{
	o->s = NULL;
	o->log = NULL;
	lines_reset(&o->line[1]);
	lines_reset(&o->line[2]);
	buf_reset(&o->batch);
}

/* One output line as an event, formatted. */
void
outstream_fmt_line(struct buf *b, int which, const char *p, size_t n,
    uint64_t seq, int64_t timestamp)
{
	struct sse_event ev = { .type = which == 1 ? "stdout" : "stderr",
	    .text = n > 0 ? p : "\n", .text_len = n > 0 ? n : 1,
	    .timestamp = timestamp, .seq = seq };

	sse_fmt_event(b, &ev);
}

/* The final event, formatted. */
void
outstream_fmt_end(struct buf *b, int code, const char *const *tb,
    size_t ntb, long long exec_ms, uint64_t seq, int64_t timestamp)
{
	struct sse_event ev;
	json_t *e = final_event(&ev, code, tb, ntb, exec_ms);

	ev.timestamp = timestamp;
	ev.seq = seq;
	sse_fmt_event(b, &ev);
	json_decref(e);
}

/* A reader that has seen nothing yet. */
void
outstream_strip_init(struct outstream_strip *st)
{
	memset(st, 0, sizeof(*st));
}

/*
 * The escaped text of one stdout or stderr event ev[0..k), from t (just
 * after its opening quote): where its closing quote is (0: not found),
 * and the length of the escapes of its terminator at the end (0, 2 for
 * "\n" or "\r", 4 for "\r\n"), *cr if it is a lone "\r".
 */
static size_t
text_end(const char *ev, size_t k, size_t t, size_t *term, bool *cr)
{
	size_t i = t, last = SIZE_MAX, prev = SIZE_MAX;

	while (i < k && ev[i] != '"') {
		prev = last;
		last = i;
		i += ev[i] == '\\' ? 2 : 1;
	}
	*term = 0;
	*cr = false;
	if (i >= k)
		return 0;
	if (last != SIZE_MAX && ev[last] == '\\' && ev[last + 1] == 'n') {
		*term = prev != SIZE_MAX && ev[prev] == '\\' &&
		    ev[prev + 1] == 'r' ? 4 : 2;
	} else if (last != SIZE_MAX && ev[last] == '\\' &&
	    ev[last + 1] == 'r') {
		*term = 2;
		*cr = true;
	}
	return i;
}

/* See outstream.h. */
void
outstream_strip(struct outstream_strip *st, struct buf *out, const char *p,
    size_t n)
{
	static const char out_pre[] = "{\"type\":\"stdout\",\"text\":\"";
	static const char err_pre[] = "{\"type\":\"stderr\",\"text\":\"";
	static const char gap_pre[] = "{\"type\":\"history_gap\"";
	const size_t pre = sizeof(out_pre) - 1;
	const char *e;
	size_t k, end, term;
	int which;
	bool cr;

	_Static_assert(sizeof(out_pre) == sizeof(err_pre), "one prefix size");
	for (; n > 0; p += k, n -= k) {
		e = memmem(p, n, "\n\n", 2);
		k = e != NULL ? (size_t)(e - p) + 2 : n;
		which = k > pre && memcmp(p, out_pre, pre) == 0 ? 1 :
		    k > pre && memcmp(p, err_pre, pre) == 0 ? 2 : 0;
		if (which == 0 || (end = text_end(p, k, pre, &term,
		    &cr)) == 0) {
			if (k >= sizeof(gap_pre) - 1 && memcmp(p, gap_pre,
			    sizeof(gap_pre) - 1) == 0)
				st->cr[1] = st->cr[2] = false;
			buf_add(out, p, k);
			continue;
		}
		if (end - pre == 2 && term == 2 && !cr && st->cr[which]) {
			/* The "\n" of a "\r\n" whose "\r" ended a line. */
			st->cr[which] = false;
			continue;
		}
		st->cr[which] = cr;
		buf_add(out, p, pre);
		if (end - pre == term)
			buf_add(out, "\\n", 2);	/* a blank line */
		else
			buf_add(out, p + pre, end - pre - term);
		buf_add(out, p + end, k - end);
	}
}
