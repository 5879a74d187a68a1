/*
 * outstream.c -- events of commands and session runs (see outstream.h).
 *
 * Framing and event shapes only; what runs and when it ends is the
 * caller's.
 */
#include <errno.h>
#include <stdio.h>

#include "loop.h"
#include "outstream.h"

#define PING_MS	3000

const char outstream_bye[] = "{\"type\":\"error\",\"error\":{\"ename\":"
    "\"Shutdown\",\"evalue\":\"execd is shutting down\",\"traceback\":[]}}"
    "\n\n";

static void	ping(struct loop *, uint64_t, void *);

/* Start: init, a ping now and every few seconds. */
void
outstream_start(struct outstream *o, struct loop *loop, struct sse_stream *s,
    const char *id)
{
	o->loop = loop;
	o->s = s;
	o->t0 = loop_now_ms();
	lines_init(&o->line[1]);
	lines_init(&o->line[2]);
	outstream_push(o, &(struct sse_event){ .type = "init", .text = id });
	ping(loop, 0, o);
}

/* One event; a client that stopped reading gets a last one and the end. */
void
outstream_push(struct outstream *o, struct sse_event *ev)
{
	static const char over[] = "{\"type\":\"error\",\"error\":{\"ename\":"
	    "\"StreamOverflow\",\"evalue\":\"the client is not reading: "
	    "stream ended\",\"traceback\":[]}}\n\n";
	struct sse_buf b;

	if (o->s == NULL || sse_stream_ended(o->s))
		return;
	ev->timestamp = loop_wall_ms();
	sse_buf_init(&b);
	sse_fmt_event(&b, ev);
	if (sse_stream_push(o->s, b.p, b.len) == -ENOBUFS)
		sse_stream_finish(o->s, over, sizeof(over) - 1);
	sse_buf_reset(&b);
}

static void
ping(struct loop *l, uint64_t id, void *arg)
{
	struct outstream *o = arg;

	o->ping = 0;
	if (o->s == NULL || sse_stream_ended(o->s))
		return;
	outstream_push(o, &(struct sse_event){ .type = "ping",
	    .text = "pong" });
	o->ping = loop_timer_add(l, PING_MS, ping, o);
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

	outstream_push(t->o, &ev);
}

/* Output, cut into lines. */
void
outstream_output(struct outstream *o, int which, const char *p, size_t n)
{
	struct line_to t = { o, which };

	lines_feed(&o->line[which], p, n, line, &t);
}

/* Last lines, the final event, the end of the stream. */
void
outstream_end(struct outstream *o, int code, const char *const *tb,
    size_t ntb)
{
	struct sse_event ev = { 0 };
	char value[16];
	json_t *e, *a;

	for (int w = 1; w <= 2; w++) {
		struct line_to t = { o, w };

		lines_flush(&o->line[w], line, &t);
	}
	if (code == 0) {
		ev.type = "execution_complete";
		ev.execution_time = (long long)(loop_now_ms() - o->t0);
	} else {
		snprintf(value, sizeof(value), "%d", code);
		a = json_array();
		for (size_t i = 0; i < ntb; i++)
			json_array_append_new(a, json_string(tb[i]));
		e = json_pack("{s:s, s:s, s:o}", "ename", "CommandExecError",
		    "evalue", value, "traceback", a);
		ev.type = "error";
		ev.error = e;
	}
	outstream_push(o, &ev);
	json_decref((json_t *)(uintptr_t)ev.error);
	if (o->s != NULL && !sse_stream_ended(o->s))
		sse_stream_finish(o->s, NULL, 0);
}

/* The stream is gone. */
void
outstream_gone(struct outstream *o)
{
	if (o->ping != 0)
		loop_timer_cancel(o->loop, o->ping);
	o->ping = 0;
	o->s = NULL;
	lines_reset(&o->line[1]);
	lines_reset(&o->line[2]);
}
