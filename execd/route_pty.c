/*
 * route_pty.c -- interactive terminals: POST /pty, GET and DELETE
 * /pty/{sessionId}, and the WebSocket GET /pty/{sessionId}/ws.
 *
 * A terminal (pty.c) has at most one writer, the client whose input
 * reaches the shell, and any number of viewers (?viewer=1), who get the
 * same output and whose input is ignored (a viewer that comes before the
 * shell started waits for a writer to start it, so that it is told the
 * real mode).  On connect a client gets the
 * retained output from ?since= as one replay frame (0x03, 8-byte
 * big-endian offset, bytes), then {"type":"connected"}, then live output
 * as 0x01 (terminal or stdout) and 0x02 (stderr in pipe mode) frames.  A
 * writer's first connect starts the shell (?pty=0: on pipes); a second
 * writer is refused 409 unless it asks ?takeover=1, which closes the old
 * one with 4001.  When the shell exits every client gets
 * {"type":"exit","exit_code":N} and a close; a later connect replays the
 * output and says the same, and never starts another shell.  The ring
 * keeps the last --pty-replay bytes.  A client that lets more than that
 * plus QUEUE_EXTRA bytes pile up is closed with 4002 (it may reconnect
 * with ?since=); the ring records regardless.  Clients are freed in a
 * before-poll hook, never inside their own callbacks.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fs/fs_ops.h"
#include "../fs/fs_path.h"
#include "../sse/sse_fmt.h"
#include "body.h"
#include "conf.h"
#include "execd.h"
#include "http.h"
#include "limits.h"
#include "log.h"
#include "loop.h"
#include "pty.h"
#include "ring.h"
#include "route.h"
#include "ws.h"
#include "xmalloc.h"

#define QUEUE_EXTRA	(4 * 1024 * 1024)	/* a client's queue past a replay */
#define MAX_IN_MSG	(1024 * 1024)		/* a client's message */
#define PING_MS		30000
#define IDLE_MS		60000
#define LINGER_MS	3000

#define F_STDIN		0x00
#define F_STDOUT	0x01
#define F_STDERR	0x02
#define F_REPLAY	0x03

struct client;

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
	struct pty	*pty;
	struct client	*clients;	/* every client, upgraded or not */
	struct client	*writer;	/* the attached writer */
	struct client	*claim;		/* a writer whose 101 is on its way */
};

struct client {
	struct term		*t;	/* NULL once the terminal is gone */
	struct loop		*loop;
	struct http_upgrade	*u;
	struct ws		*ws;
	uint64_t		 since;
	size_t			 max_queue;	/* see QUEUE_EXTRA */
	bool			 viewer;
	bool			 takeover;
	bool			 pipe;
	bool			 evicted;	/* taken over before its 101 */
	bool			 live;		/* gets output */
	bool			 waiting;	/* a viewer before the shell */
	bool			 dead;		/* on the dead list */
	struct client		*next;		/* in t->clients */
	struct client		*dnext;		/* in dead */
};

static struct client	*dead;
static uint64_t		 t_sweep;	/* frees the dead, once armed */

static const struct ws_conf client_conf = {
	.max_msg = MAX_IN_MSG,
	.ping_ms = PING_MS, .idle_ms = IDLE_MS, .linger_ms = LINGER_MS,
};

static struct term	*find(const char *);
static void		 on_gone(struct pty *, const char *, void *);
static void		 unlink_client(struct client *);
static void		 on_upgraded(struct http_upgrade *, int, const char *,
			    size_t, void *);
static void		 on_http_shutdown(struct http_upgrade *, void *);
static void		 on_msg(struct ws *, int, const char *, size_t,
			    void *);
static void		 on_end(struct ws *, void *);
static void		 on_output(struct pty *, int, const char *, size_t,
			    void *);
static void		 on_exit_shell(struct pty *, int, void *);
static void		 sweep(struct loop *, uint64_t, void *);
static void		 attach(struct client *);
static void		 send_frame(struct client *, const struct frame *);
static void		 send_error(struct client *, const char *,
			    const char *, ...)
			    __attribute__((format(printf, 3, 4)));
static void		 send_exit(struct client *, int, const char *,
			    const char *);
static void		 write_stdin(struct client *, const char *, size_t);
static void		 control(struct client *, const char *, size_t);

/* The terminal with this id (pty.c's registry), or NULL. */
static struct term *
find(const char *id)
{
	struct pty *p = pty_find(id);

	return p != NULL ? pty_watcher(p) : NULL;
}

/* POST /pty [{"cwd","command"}]: 201 {"session_id"}; no shell yet. */
void
route_pty_create(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	json_t *body = http_req_json(req);
	char path[PATH_MAX] = "", err[PATH_MAX + 128];
	const char *cwd, *cmd;
	struct limits lim;
	struct term *t;
	bool created;

	if (limits_for(&lim, &app->conf->limits[LIMITS_PTY], body, err,
	    sizeof(err)) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "error parsing "
		    "request: %s", err);
		return;
	}
	cwd = body_str(body, "cwd", "");
	cmd = body_str(body, "command", "");
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
	t = xcalloc(1, sizeof(*t));
	t->pty = pty_new(cwd[0] ? path : NULL, cmd[0] ? cmd : NULL,
	    app->conf->pty_replay);
	pty_set_limits(t->pty, &lim);
	pty_watch(t->pty, on_output, on_exit_shell, on_gone, t);
	http_reply_json(req, 201, json_pack("{s:s}", "session_id",
	    pty_id(t->pty)));
}

/* GET /pty/{sessionId}: {"session_id","running","output_offset"}. */
void
route_pty_get(struct http_req *req)
{
	const char *id = http_req_param(req, "sessionId");
	struct term *t = find(id);
	json_t *v;

	if (t == NULL) {
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "pty session %s not found", id);
		return;
	}
	v = json_pack("{s:s, s:b, s:I}", "session_id", pty_id(t->pty),
	    "running", pty_alive(t->pty), "output_offset",
	    (json_int_t)ring_end(pty_ring(t->pty)));
	if (pty_state(t->pty) == PTY_EXITED)
		json_object_set_new(v, "exit_code",
		    json_integer(pty_exit_code(t->pty)));
	http_reply_json(req, 200, v);
}

/* DELETE /pty/{sessionId}: kill the shell; clients get exit -1. */
void
route_pty_delete(struct http_req *req)
{
	const char *id = http_req_param(req, "sessionId");
	struct term *t = find(id);

	if (t == NULL) {
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "pty session %s not found", id);
		return;
	}
	pty_free(t->pty, "session deleted");
	http_reply_empty(req);
}

/*
 * The terminal is being freed (deleted, or execd stops): clients on a
 * socket get exit -1 and a close with reason; those whose 101 is on its
 * way learn it in on_upgraded (c->t is NULL by then).
 */
static void
on_gone(struct pty *p, const char *why, void *arg)
{
	struct term *t = arg;
	struct client *c;

	while ((c = t->clients) != NULL) {
		t->clients = c->next;
		c->next = NULL;
		c->t = NULL;
		if (c->ws != NULL && (c->live || c->waiting))
			send_exit(c, -1, why, NULL);
		c->live = c->waiting = false;
	}
	free(t);
}

/* A WebSocket handshake's accept value, or -1 with why set. */
static int
handshake(struct http_req *req, char acc[WS_ACCEPT_LEN], const char **why)
{
	const char *up = http_req_header(req, "Upgrade");
	const char *conn = http_req_header(req, "Connection");
	const char *ver = http_req_header(req, "Sec-WebSocket-Version");

	if (up == NULL || !ws_header_has(up, "websocket"))
		*why = "'Upgrade: websocket' is missing";
	else if (conn == NULL || !ws_header_has(conn, "upgrade"))
		*why = "'Connection: upgrade' is missing";
	else if (ver == NULL || strcmp(ver, "13") != 0)
		*why = "Sec-WebSocket-Version must be 13";
	else if (ws_accept_key(http_req_header(req, "Sec-WebSocket-Key"),
	    acc) < 0)
		*why = "Sec-WebSocket-Key is missing or invalid";
	else
		return 0;
	return -1;
}

/* A query flag: exactly "1" (or, for pty, exactly "0"). */
static bool
query_is(struct http_req *req, const char *key, const char *val)
{
	const char *v = http_req_query(req, key);

	return v != NULL && strcmp(v, val) == 0;
}

/*
 * GET /pty/{sessionId}/ws[?since=N][&pty=0][&takeover=1][&viewer=1]:
 * refuse before the upgrade what can be refused (404, 409, 400), then
 * answer 101; the rest happens in on_upgraded.
 */
void
route_pty_ws(struct http_req *req)
{
	struct execd *app = http_req_app(req);
	const char *id = http_req_param(req, "sessionId"), *why = NULL;
	struct term *t = find(id);
	char acc[WS_ACCEPT_LEN];
	const char *hdrs[] = { "Upgrade", "websocket",
	    "Sec-WebSocket-Accept", acc, NULL };
	struct client *c;
	bool valid, viewer, takeover;

	if (t == NULL) {
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "pty session %s not found", id);
		return;
	}
	valid = handshake(req, acc, &why) == 0;
	viewer = query_is(req, "viewer", "1");
	takeover = query_is(req, "takeover", "1");
	if (!viewer && (t->writer != NULL || t->claim != NULL) &&
	    !(takeover && valid)) {
		http_reply_error(req, 409, "ALREADY_CONNECTED", "another "
		    "client is already connected to pty session %s", id);
		return;
	}
	if (!valid) {
		http_reply_error(req, 400, HTTP_E_BODY, "not a WebSocket "
		    "handshake: %s", why);
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->t = t;
	c->loop = app->loop;
	c->max_queue = app->conf->pty_replay + QUEUE_EXTRA;
	c->viewer = viewer;
	c->takeover = takeover;
	c->pipe = query_is(req, "pty", "0");
	/* As upstream: lenient, anything unparsable is 0. */
	if (http_req_query_uint(req, "since", UINT64_MAX, &c->since) < 0)
		c->since = 0;
	if (!viewer) {
		if (t->claim != NULL)	/* a later takeover wins */
			t->claim->evicted = true;
		t->claim = c;
	}
	c->next = t->clients;
	t->clients = c;
	http_reply_upgrade(req, hdrs, on_upgraded, on_http_shutdown, c);
}

/* Take c off its terminal's lists. */
static void
unlink_client(struct client *c)
{
	struct term *t = c->t;
	struct client **pp;

	if (t == NULL)
		return;
	for (pp = &t->clients; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (t->writer == c)
		t->writer = NULL;
	if (t->claim == c)
		t->claim = NULL;
	c->t = NULL;
	c->live = c->waiting = false;
}

/*
 * Free c on the next turn of the loop, never inside its own callbacks: a
 * timer of 0 ms, armed by the first of the dead, waits for the next
 * iteration.
 */
static void
bury(struct client *c)
{
	unlink_client(c);
	if (c->dead)
		return;
	c->dead = true;
	c->dnext = dead;
	dead = c;
	if (t_sweep == 0)
		t_sweep = loop_timer_add(c->loop, 0, sweep, NULL);
}

/* Free the clients that ended, closing sockets. */
static void
sweep(struct loop *l, uint64_t id, void *arg)
{
	struct client *c;

	t_sweep = 0;
	while ((c = dead) != NULL) {
		dead = c->dnext;
		ws_free(c->ws);
		if (c->u != NULL)
			http_upgrade_close(c->u);
		free(c);
	}
}

/*
 * The 101 is out (or failed, u NULL): speak WebSocket, become the writer
 * (taking over or refusing), start the shell if it never ran, attach.
 */
static void
on_upgraded(struct http_upgrade *u, int fd, const char *extra, size_t n,
    void *arg)
{
	struct client *c = arg, *old;
	struct term *t = c->t;
	struct ws_conf wc = client_conf;
	char err[256];

	if (u == NULL) {
		unlink_client(c);
		free(c);
		return;
	}
	c->u = u;
	wc.max_queue = c->max_queue;
	c->ws = ws_new(c->loop, fd, extra, n, &wc, on_msg, on_end, c);
	if (t == NULL) {	/* deleted meanwhile */
		send_exit(c, -1, "session deleted", NULL);
		return;
	}
	if (c->evicted) {
		unlink_client(c);
		ws_close(c->ws, WS_CLOSE_TAKEN_OVER, "TAKEN_OVER");
		return;
	}
	if (!c->viewer) {
		if (t->claim == c)
			t->claim = NULL;
		if ((old = t->writer) != NULL && !c->takeover) {
			/* Another writer attached while our 101 was out. */
			send_error(c, "ALREADY_CONNECTED", "another client is "
			    "already connected to pty session %s",
			    pty_id(t->pty));
			unlink_client(c);
			ws_close(c->ws, WS_CLOSE_NORMAL, "ALREADY_CONNECTED");
			return;
		}
		if (old != NULL) {
			log_info("pty=%s taken over", pty_id(t->pty));
			old->live = false;
			t->writer = NULL;
			ws_close(old->ws, WS_CLOSE_TAKEN_OVER, "TAKEN_OVER");
		}
		t->writer = c;
		if (pty_state(t->pty) == PTY_NEW && pty_start(t->pty, c->pipe,
		    err, sizeof(err)) < 0) {
			log_warnx("pty=%s: %s", pty_id(t->pty), err);
			send_error(c, "START_FAILED", "%s", err);
			unlink_client(c);
			ws_close(c->ws, WS_CLOSE_NORMAL, "START_FAILED");
			return;
		}
		for (struct client *v = t->clients; v != NULL; v = v->next) {
			if (v->waiting) {
				v->waiting = false;
				attach(v);
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
attach(struct client *c)
{
	struct pty *p = c->t->pty;
	const struct ring *r = pty_ring(p);
	size_t n = ring_avail(r, c->since);
	unsigned char hdr[9];
	uint64_t at;
	char *buf;
	struct frame f = { .type = "connected", .session_id = pty_id(p),
	    .mode = pty_pipe_mode(p) ? "pipe" : "pty", .viewer = c->viewer };

	if (n > 0) {
		buf = xmalloc(n);
		n = ring_read(r, c->since, buf, n, &at);
		hdr[0] = F_REPLAY;
		for (int i = 0; i < 8; i++)
			hdr[1 + i] = (unsigned char)(at >> (56 - 8 * i));
		ws_send(c->ws, WS_BINARY, hdr, sizeof(hdr), buf, n);
		free(buf);
	}
	send_frame(c, &f);
	if (pty_state(p) == PTY_EXITED) {
		/* Never a second shell: say that this one is gone. */
		send_exit(c, pty_exit_code(p), "process exited", pty_why(p));
		return;
	}
	c->live = true;
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

/* A JSON text frame, compact, in upstream's field order. */
static void
send_frame(struct client *c, const struct frame *f)
{
	struct buf b;

	buf_init(&b);
	buf_adds(&b, "{\"type\":");
	sse_fmt_string(&b, f->type, strlen(f->type));
	add_str(&b, "session_id", f->session_id);
	add_str(&b, "mode", f->mode);
	if (f->has_exit)
		buf_addf(&b, ",\"exit_code\":%d", f->exit_code);
	add_str(&b, "error", f->error);
	add_str(&b, "code", f->code);
	if (f->viewer)
		buf_adds(&b, ",\"viewer\":true");
	buf_adds(&b, "}");
	ws_send(c->ws, WS_TEXT, NULL, 0, b.p, b.len);
	buf_reset(&b);
}

/* {"type":"error","error":...,"code":code}. */
static void
send_error(struct client *c, const char *code, const char *fmt, ...)
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
send_exit(struct client *c, int code, const char *why, const char *limit)
{
	struct frame f = { .type = "exit", .has_exit = true,
	    .exit_code = code, .error = limit != NULL && limit[0] != '\0' ?
	    limit : NULL };

	c->live = c->waiting = false;
	send_frame(c, &f);
	ws_close(c->ws, WS_CLOSE_NORMAL, why);
}

/* Shell output: one frame to every live client; drop the slow ones. */
static void
on_output(struct pty *p, int stream, const char *s, size_t n, void *arg)
{
	struct term *t = arg;
	unsigned char hdr = stream == PTY_STDERR ? F_STDERR : F_STDOUT;

	for (struct client *c = t->clients; c != NULL; c = c->next) {
		if (!c->live || c->ws == NULL)
			continue;
		if (ws_send(c->ws, WS_BINARY, &hdr, 1, s, n) == -ENOBUFS) {
			log_info("pty=%s: a client reads too slowly, closing "
			    "it", pty_id(p));
			c->live = false;
			ws_close(c->ws, WS_CLOSE_TOO_SLOW, "SLOW_CLIENT");
		}
	}
}

/* The shell exited: every client hears it and is closed. */
static void
on_exit_shell(struct pty *p, int code, void *arg)
{
	struct term *t = arg;

	for (struct client *c = t->clients; c != NULL; c = c->next)
		if (c->live && c->ws != NULL)
			send_exit(c, code, "process exited", pty_why(p));
}

/* A message from a client; viewers only get answers to pings. */
static void
on_msg(struct ws *ws, int type, const char *p, size_t n, void *arg)
{
	struct client *c = arg;

	if (c->t == NULL || (!c->live && !c->waiting))
		return;
	if (type == WS_BINARY) {
		/* 0x00 + bytes; empty frames and other prefixes: ignored. */
		if (!c->viewer && n > 1 && p[0] == F_STDIN)
			write_stdin(c, p + 1, n - 1);
		return;
	}
	control(c, p, n);
}

/* Bytes for the shell; on failure the client is told and closed. */
static void
write_stdin(struct client *c, const char *p, size_t n)
{
	int rc = pty_write(c->t->pty, p, n);

	if (rc == 0)
		return;
	send_error(c, "STDIN_WRITE_FAILED", "write to pty session %s: %s",
	    pty_id(c->t->pty), rc == -ENOBUFS ? "too much input is waiting "
	    "for the shell" : strerror(-rc));
	unlink_client(c);
	ws_close(c->ws, WS_CLOSE_NORMAL, "STDIN_WRITE_FAILED");
}

/* A JSON control frame: stdin, signal, resize, ping. */
static void
control(struct client *c, const char *p, size_t n)
{
	static const struct {
		const char	*name;
		int		 sig;
	} sigs[] = { { "SIGINT", SIGINT }, { "SIGTERM", SIGTERM },
	    { "SIGKILL", SIGKILL }, { "SIGQUIT", SIGQUIT },
	    { "SIGHUP", SIGHUP } };
	static const struct frame pong = { .type = "pong" };
	json_t *v, *cols, *rows;
	json_error_t e;
	const char *type, *s;
	size_t i;

	if ((v = json_loadb(p, n, 0, &e)) == NULL)
		return;		/* as upstream: ignored */
	type = json_string_value(json_object_get(v, "type"));
	if (type == NULL)
		type = "";
	if (strcmp(type, "ping") == 0) {
		send_frame(c, &pong);
	} else if (c->viewer) {
		/* A viewer's input goes nowhere. */
	} else if (strcmp(type, "stdin") == 0) {
		s = json_string_value(json_object_get(v, "data"));
		if (s != NULL && s[0] != '\0')
			write_stdin(c, s, json_string_length(
			    json_object_get(v, "data")));
	} else if (strcmp(type, "signal") == 0) {
		s = json_string_value(json_object_get(v, "signal"));
		for (i = 0; s != NULL && i < sizeof(sigs) / sizeof(sigs[0]);
		    i++)
			if (strcmp(s, sigs[i].name) == 0)
				break;
		if (s != NULL && i < sizeof(sigs) / sizeof(sigs[0]))
			pty_signal(c->t->pty, sigs[i].sig);
		else
			log_info("pty=%s: signal %s ignored",
			    pty_id(c->t->pty), s != NULL ? s : "(none)");
	} else if (strcmp(type, "resize") == 0) {
		cols = json_object_get(v, "cols");
		rows = json_object_get(v, "rows");
		if (json_is_integer(cols) && json_is_integer(rows) &&
		    json_integer_value(cols) > 0 &&
		    json_integer_value(rows) > 0 &&
		    json_integer_value(cols) <= 0xffff &&
		    json_integer_value(rows) <= 0xffff)
			pty_resize(c->t->pty,
			    (unsigned)json_integer_value(cols),
			    (unsigned)json_integer_value(rows));
	} else {
		send_error(c, "INVALID_FRAME", "unknown frame type \"%s\"",
		    type);
	}
	json_decref(v);
}

/* The conversation is over: free c before the next poll. */
static void
on_end(struct ws *ws, void *arg)
{
	bury(arg);
}

/* execd stops: close at once (the terminals go in pty_shutdown()). */
static void
on_http_shutdown(struct http_upgrade *u, void *arg)
{
	struct client *c = arg;

	if (c->ws != NULL) {
		ws_close(c->ws, WS_CLOSE_GOING_AWAY, "execd is shutting down");
		ws_free(c->ws);
		c->ws = NULL;
	}
	http_upgrade_close(u);
	c->u = NULL;
	bury(c);
}
