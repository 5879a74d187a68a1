/*
 * term.c -- the clients of a terminal session (see term.h): who writes,
 * who views, what they are sent and what their messages do.
 *
 * The shell, its ring and the registry are pty.c's; sockets, caps and
 * deferred frees are the hub's (wshub.c); the HTTP request is
 * route_pty.c's.  A terminal is the pty's watcher, so a route finds it
 * through pty_find(); when the pty goes, its clients hear exit -1 and the
 * terminal stays, detached (pty NULL), until the last of them has left,
 * so that a client never points at a freed terminal.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../sse/sse_fmt.h"
#include "../../core/log.h"
#include "../../core/xmalloc.h"
#include "../../domain/pty.h"
#include "../../domain/ring.h"
#include "../../transport/http.h"
#include "../../transport/ws.h"
#include "../../transport/wshub.h"
#include "term.h"

#define QUEUE_EXTRA	(4 * 1024 * 1024)	/* a client's queue past a replay */
#define MAX_IN_MSG	(1024 * 1024)		/* a client's message */
#define PING_MS		30000
#define IDLE_MS		60000
#define LINGER_MS	3000

#define F_STDIN		0x00
#define F_STDOUT	0x01
#define F_STDERR	0x02
#define F_REPLAY	0x03

/* A server frame; fields go out in upstream's order, empty ones left out. */
struct frame {
	const char	*type;
	const char	*session_id;
	const char	*mode;
	bool		 has_exit;
	int		 exit_code;
	const char	*error;
	const char	*code;
	bool		 viewer;	/* ours, last: a viewer's connected */
};

struct term {
	struct pty		*pty;		/* NULL once gone */
	struct wshub		*hub;
	size_t			 max_queue;	/* see QUEUE_EXTRA */
	struct term_client	*writer;	/* the attached writer */
	struct term_client	*claim;		/* a writer whose 101 is out */
};

struct term_client {
	struct term		*t;
	struct wshub_client	*m;
	struct term_opts	 o;
	bool			 evicted;	/* taken over before its 101 */
	bool			 waiting;	/* a viewer before the shell */
};

static const struct wshub_conf hub_conf = {
	.ws = { .max_msg = MAX_IN_MSG, .ping_ms = PING_MS, .idle_ms = IDLE_MS,
	    .linger_ms = LINGER_MS },
	.slow_code = WS_CLOSE_TOO_SLOW, .slow_reason = "SLOW_CLIENT",
};

static void	on_output(struct pty *, int, const char *, size_t, void *);
static void	on_exit_shell(struct pty *, int, void *);
static void	on_gone(struct pty *, const char *, void *);
static void	on_open(struct wshub_client *, void *);
static void	on_msg(struct wshub_client *, int, const char *, size_t,
		    void *);
static void	on_leave(struct wshub_client *, void *);
static void	detach(struct term_client *);
static void	attach(struct term_client *);
static void	frame_fmt(struct buf *, const struct frame *);
static void	send_frame(struct term_client *, const struct frame *);
static void	send_error(struct term_client *, const char *, const char *,
		    ...) __attribute__((format(printf, 3, 4)));
static void	send_exit(struct term_client *, int, const char *,
		    const char *);
static void	write_stdin(struct term_client *, const char *, size_t);
static void	control(struct term_msg *, bool, const char *, size_t);

/* Clients for p; p's watcher from now on. */
struct term *
term_new(struct loop *loop, struct pty *p, size_t replay)
{
	struct term *t = xcalloc(1, sizeof(*t));
	char name[8 + PTY_ID_LEN];

	t->pty = p;
	t->max_queue = replay + QUEUE_EXTRA;
	snprintf(name, sizeof(name), "pty=%s", pty_id(p));
	t->hub = wshub_new(loop, &hub_conf, name, on_open, on_msg, on_leave);
	pty_watch(p, on_output, on_exit_shell, on_gone, t);
	return t;
}

/* The terminal with this id (pty.c's registry), or NULL. */
struct term *
term_find(const char *id)
{
	struct pty *p = pty_find(id);

	return p != NULL ? pty_watcher(p) : NULL;
}

/* Whether a writer holds the terminal or is about to. */
bool
term_busy(const struct term *t)
{
	return t->writer != NULL || t->claim != NULL;
}

/* Join the hub with req's 101; a writer claims the terminal. */
int
term_connect(struct term *t, struct http_req *req, const struct term_opts *o)
{
	struct term_client *c = xcalloc(1, sizeof(*c));
	int rc;

	c->t = t;
	c->o = *o;
	if ((rc = wshub_join_req(t->hub, req, t->max_queue, c, &c->m)) < 0) {
		free(c);
		return rc;
	}
	if (!o->viewer) {
		if (t->claim != NULL)	/* a later takeover wins */
			t->claim->evicted = true;
		t->claim = c;
	}
	return 0;
}

/* Free t once its pty is gone and no client is left. */
static void
maybe_free(struct term *t)
{
	if (t->pty != NULL || wshub_count(t->hub) > 0)
		return;
	wshub_free(t->hub);
	free(t);
}

/*
 * The terminal is being freed (deleted, or execd stops): clients on a
 * socket get exit -1 and a close with reason; those whose 101 is on its
 * way learn it in on_open.
 */
static void
on_gone(struct pty *p, const char *why, void *arg)
{
	struct term *t = arg;
	struct wshub_client *m;
	struct term_client *c;

	for (m = wshub_next(t->hub, NULL); m != NULL;
	    m = wshub_next(t->hub, m)) {
		c = wshub_arg(m);
		if (wshub_listening(m) || c->waiting)
			send_exit(c, -1, why, NULL);
		detach(c);
	}
	t->pty = NULL;
	maybe_free(t);
}

/* c no longer writes, waits or gets output; its socket stays. */
static void
detach(struct term_client *c)
{
	struct term *t = c->t;

	if (t->writer == c)
		t->writer = NULL;
	if (t->claim == c)
		t->claim = NULL;
	c->waiting = false;
	wshub_listen(c->m, false);
}

/* c left the hub: let go of it. */
static void
on_leave(struct wshub_client *m, void *arg)
{
	struct term_client *c = arg;
	struct term *t = c->t;

	detach(c);
	free(c);
	maybe_free(t);
}

/*
 * The 101 is out: become the writer (taking over or refusing), start the
 * shell if it never ran, attach.
 */
static void
on_open(struct wshub_client *m, void *arg)
{
	struct term_client *c = arg, *old;
	struct term *t = c->t;
	char err[256];

	if (t->pty == NULL) {	/* deleted meanwhile */
		send_exit(c, -1, "session deleted", NULL);
		return;
	}
	if (c->evicted) {
		detach(c);
		wshub_close(m, WS_CLOSE_TAKEN_OVER, "TAKEN_OVER");
		return;
	}
	if (!c->o.viewer) {
		if (t->claim == c)
			t->claim = NULL;
		if ((old = t->writer) != NULL && !c->o.takeover) {
			/* Another writer attached while our 101 was out. */
			send_error(c, "ALREADY_CONNECTED", "another client is "
			    "already connected to pty session %s",
			    pty_id(t->pty));
			detach(c);
			wshub_close(m, WS_CLOSE_NORMAL, "ALREADY_CONNECTED");
			return;
		}
		if (old != NULL) {
			log_info("pty=%s taken over", pty_id(t->pty));
			wshub_listen(old->m, false);
			t->writer = NULL;
			wshub_close(old->m, WS_CLOSE_TAKEN_OVER, "TAKEN_OVER");
		}
		t->writer = c;
		if (pty_state(t->pty) == PTY_NEW && pty_start(t->pty,
		    c->o.pipe, err, sizeof(err)) < 0) {
			log_warnx("pty=%s: %s", pty_id(t->pty), err);
			send_error(c, "START_FAILED", "%s", err);
			detach(c);
			wshub_close(m, WS_CLOSE_NORMAL, "START_FAILED");
			return;
		}
		for (struct wshub_client *v = wshub_next(t->hub, NULL);
		    v != NULL; v = wshub_next(t->hub, v)) {
			struct term_client *vc = wshub_arg(v);

			if (vc->waiting) {
				vc->waiting = false;
				attach(vc);
			}
		}
	} else if (pty_state(t->pty) == PTY_NEW) {
		c->waiting = true;
		return;
	}
	attach(c);
}

/*
 * Replay from since, then connected; then live output, or, if the shell
 * has exited already, its exit and a close.
 */
static void
attach(struct term_client *c)
{
	struct pty *p = c->t->pty;
	const struct ring *r = pty_ring(p);
	size_t n = ring_avail(r, c->o.since);
	unsigned char hdr[9];
	uint64_t at;
	char *buf;
	struct frame f = { .type = "connected", .session_id = pty_id(p),
	    .mode = pty_pipe_mode(p) ? "pipe" : "pty", .viewer = c->o.viewer };

	if (n > 0) {
		buf = xmalloc(n);
		n = ring_read(r, c->o.since, buf, n, &at);
		hdr[0] = F_REPLAY;
		for (int i = 0; i < 8; i++)
			hdr[1 + i] = (unsigned char)(at >> (56 - 8 * i));
		wshub_send(c->m, WS_BINARY, hdr, sizeof(hdr), buf, n);
		free(buf);
	}
	send_frame(c, &f);
	if (pty_state(p) == PTY_EXITED) {
		/* Never a second shell: say that this one is gone. */
		send_exit(c, pty_exit_code(p), "process exited", pty_why(p));
		return;
	}
	wshub_listen(c->m, true);
}

/* Append ,"key":"val" (the comma only after the first field). */
static void
add_str(struct buf *b, const char *key, const char *val)
{
	if (val == NULL || val[0] == '\0')
		return;
	buf_addf(b, ",\"%s\":", key);
	sse_fmt_string(b, val, strlen(val));
}

/* A JSON text frame, compact, in upstream's field order, into b. */
static void
frame_fmt(struct buf *b, const struct frame *f)
{
	buf_adds(b, "{\"type\":");
	sse_fmt_string(b, f->type, strlen(f->type));
	add_str(b, "session_id", f->session_id);
	add_str(b, "mode", f->mode);
	if (f->has_exit)
		buf_addf(b, ",\"exit_code\":%d", f->exit_code);
	add_str(b, "error", f->error);
	add_str(b, "code", f->code);
	if (f->viewer)
		buf_adds(b, ",\"viewer\":true");
	buf_adds(b, "}");
}

/* Send one JSON text frame to c. */
static void
send_frame(struct term_client *c, const struct frame *f)
{
	struct buf b;

	buf_init(&b);
	frame_fmt(&b, f);
	wshub_send(c->m, WS_TEXT, NULL, 0, b.p, b.len);
	buf_reset(&b);
}

/* {"type":"error","error":...,"code":code}. */
static void
send_error(struct term_client *c, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	struct frame f = { .type = "error", .error = msg, .code = code };

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	send_frame(c, &f);
}

/* {"type":"exit","exit_code":code}, then a normal close. */
static void
send_exit(struct term_client *c, int code, const char *why,
    const char *limit)
{
	struct frame f = { .type = "exit", .has_exit = true,
	    .exit_code = code, .error = limit != NULL && limit[0] != '\0' ?
	    limit : NULL };

	wshub_listen(c->m, false);
	c->waiting = false;
	send_frame(c, &f);
	wshub_close(c->m, WS_CLOSE_NORMAL, why);
}

/* Shell output: one frame to every live client; the hub drops slow ones. */
static void
on_output(struct pty *p, int stream, const char *s, size_t n, void *arg)
{
	struct term *t = arg;
	unsigned char hdr = stream == PTY_STDERR ? F_STDERR : F_STDOUT;

	wshub_broadcast(t->hub, WS_BINARY, &hdr, 1, s, n);
}

/* The shell exited: every client hears it and is closed. */
static void
on_exit_shell(struct pty *p, int code, void *arg)
{
	struct term *t = arg;

	for (struct wshub_client *m = wshub_next(t->hub, NULL); m != NULL;
	    m = wshub_next(t->hub, m))
		if (wshub_listening(m))
			send_exit(wshub_arg(m), code, "process exited",
			    pty_why(p));
}

/* A message from a client; viewers only get answers to pings. */
static void
on_msg(struct wshub_client *m, int type, const char *p, size_t n, void *arg)
{
	struct term_client *c = arg;
	struct term_msg msg;
	struct pty *pty = c->t->pty;

	if (pty == NULL || (!wshub_listening(m) && !c->waiting))
		return;
	term_msg_parse(&msg, c->o.viewer, type, p, n);
	if (msg.reply.len > 0)
		wshub_send(m, WS_TEXT, NULL, 0, msg.reply.p, msg.reply.len);
	switch (msg.op) {
	case TERM_MSG_STDIN:
		write_stdin(c, msg.p, msg.n);
		break;
	case TERM_MSG_SIGNAL:
		pty_signal(pty, msg.sig);
		break;
	case TERM_MSG_BADSIG:
		log_info("pty=%s: signal %s ignored", pty_id(pty),
		    msg.p != NULL ? msg.p : "(none)");
		break;
	case TERM_MSG_RESIZE:
		pty_resize(pty, msg.cols, msg.rows);
		break;
	case TERM_MSG_NONE:
		break;
	}
	term_msg_reset(&msg);
}

/* Bytes for the shell; on failure the client is told and closed. */
static void
write_stdin(struct term_client *c, const char *p, size_t n)
{
	int rc = pty_write(c->t->pty, p, n);

	if (rc == 0)
		return;
	send_error(c, "STDIN_WRITE_FAILED", "write to pty session %s: %s",
	    pty_id(c->t->pty), rc == -ENOBUFS ? "too much input is waiting "
	    "for the shell" : strerror(-rc));
	detach(c);
	wshub_close(c->m, WS_CLOSE_NORMAL, "STDIN_WRITE_FAILED");
}

/* Parse a client's message; see term.h. */
void
term_msg_parse(struct term_msg *m, bool viewer, int type, const char *p,
    size_t n)
{
	memset(m, 0, sizeof(*m));
	buf_init(&m->reply);
	m->op = TERM_MSG_NONE;
	if (type == WS_BINARY) {
		/* 0x00 + bytes; empty frames and other prefixes: ignored. */
		if (!viewer && n > 1 && p[0] == F_STDIN) {
			m->op = TERM_MSG_STDIN;
			m->p = p + 1;
			m->n = n - 1;
		}
		return;
	}
	control(m, viewer, p, n);
}

/* A JSON control frame: stdin, signal, resize, ping. */
static void
control(struct term_msg *m, bool viewer, const char *p, size_t n)
{
	static const struct {
		const char	*name;
		int		 sig;
	} sigs[] = { { "SIGINT", SIGINT }, { "SIGTERM", SIGTERM },
	    { "SIGKILL", SIGKILL }, { "SIGQUIT", SIGQUIT },
	    { "SIGHUP", SIGHUP } };
	static const struct frame pong = { .type = "pong" };
	json_t *v, *cols, *rows, *data;
	json_error_t e;
	const char *type, *s;
	char msg[512];
	size_t i;

	if ((v = json_loadb(p, n, 0, &e)) == NULL)
		return;		/* as upstream: ignored */
	m->json = v;
	type = json_string_value(json_object_get(v, "type"));
	if (type == NULL)
		type = "";
	if (strcmp(type, "ping") == 0) {
		frame_fmt(&m->reply, &pong);
	} else if (viewer) {
		/* A viewer's input goes nowhere. */
	} else if (strcmp(type, "stdin") == 0) {
		data = json_object_get(v, "data");
		s = json_string_value(data);
		if (s != NULL && s[0] != '\0') {
			m->op = TERM_MSG_STDIN;
			m->p = s;
			m->n = json_string_length(data);
		}
	} else if (strcmp(type, "signal") == 0) {
		s = json_string_value(json_object_get(v, "signal"));
		for (i = 0; s != NULL && i < sizeof(sigs) / sizeof(sigs[0]);
		    i++)
			if (strcmp(s, sigs[i].name) == 0)
				break;
		m->op = TERM_MSG_BADSIG;
		m->p = s;
		if (s != NULL && i < sizeof(sigs) / sizeof(sigs[0])) {
			m->op = TERM_MSG_SIGNAL;
			m->sig = sigs[i].sig;
		}
	} else if (strcmp(type, "resize") == 0) {
		cols = json_object_get(v, "cols");
		rows = json_object_get(v, "rows");
		if (json_is_integer(cols) && json_is_integer(rows) &&
		    json_integer_value(cols) > 0 &&
		    json_integer_value(rows) > 0 &&
		    json_integer_value(cols) <= 0xffff &&
		    json_integer_value(rows) <= 0xffff) {
			m->op = TERM_MSG_RESIZE;
			m->cols = (unsigned)json_integer_value(cols);
			m->rows = (unsigned)json_integer_value(rows);
		}
	} else {
		snprintf(msg, sizeof(msg), "unknown frame type \"%s\"", type);
		frame_fmt(&m->reply, &(struct frame){ .type = "error",
		    .error = msg, .code = "INVALID_FRAME" });
	}
}

/* Free what the parse held. */
void
term_msg_reset(struct term_msg *m)
{
	json_decref(m->json);
	m->json = NULL;
	buf_reset(&m->reply);
	m->p = NULL;
	m->op = TERM_MSG_NONE;
}

/* The query of a connect; see term.h. */
void
term_opts_parse(struct term_opts *o, const char *since, const char *viewer,
    const char *takeover, const char *pty)
{
	memset(o, 0, sizeof(*o));
	/* As upstream: lenient, anything unparsable is 0. */
	if (since == NULL || since[0] == '\0' ||
	    http_parse_uint(since, UINT64_MAX, &o->since) < 0)
		o->since = 0;
	o->viewer = viewer != NULL && strcmp(viewer, "1") == 0;
	o->takeover = takeover != NULL && strcmp(takeover, "1") == 0;
	o->pipe = pty != NULL && strcmp(pty, "0") == 0;
}
