/*
 * t_ws.c -- unit tests for ws.c: the handshake's accept value (RFC 6455's
 * own example), header token lists, and a server ws on one end of a
 * socketpair driven by the loop, talking to a wslay client context on the
 * other end: a message each way and the close handshake, bytes handed
 * over as already read, the cap on what may wait to be sent, and a
 * silent peer given up on.  Every loop run has a watchdog timer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <wslay/wslay.h>

#include "../t.h"
#include "../../execd/loop.h"
#include "../../execd/ws.h"

#define WATCHDOG_MS	5000

/* What the server side saw. */
struct srv {
	struct ws	*ws;
	int		 nmsg;
	int		 type;
	char		 msg[64];
	int		 nend;
	int		 reply;		/* answer "hello" and close */
	struct loop	*loop;
};

/* The client side: a wslay client on the other socket. */
struct cli {
	int			 fd;
	wslay_event_context_ptr	 ctx;
	int			 nmsg;
	int			 opcode;
	char			 msg[64];
	size_t			 len;
	uint16_t		 close_code;
	char			*out;		/* capture instead of fd */
	size_t			 nout;
};

static int	watchdog_fired;

static void
watchdog(struct loop *l, uint64_t id, void *arg)
{
	watchdog_fired = 1;
	loop_stop(l);
}

static void
on_msg(struct ws *ws, int type, const char *p, size_t n, void *arg)
{
	struct srv *s = arg;

	s->nmsg++;
	s->type = type;
	snprintf(s->msg, sizeof(s->msg), "%.*s", (int)n, p);
	if (s->reply) {
		T_EQ_INT(ws_send(ws, WS_BINARY, "\x01", 1, "world", 5), 0);
		ws_close(ws, WS_CLOSE_NORMAL, "bye");
		T_OK(ws_closing(ws));
		T_EQ_INT(ws_send(ws, WS_TEXT, NULL, 0, "late", 4), -EPIPE);
	}
	loop_stop(s->loop);
}

static void
on_end(struct ws *ws, void *arg)
{
	struct srv *s = arg;

	s->nend++;
	loop_stop(s->loop);
}

static ssize_t
c_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
    void *user)
{
	struct cli *c = user;
	ssize_t r = recv(c->fd, buf, len, MSG_DONTWAIT);

	if (r <= 0) {
		wslay_event_set_error(ctx, r < 0 && errno == EAGAIN ?
		    WSLAY_ERR_WOULDBLOCK : WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return r;
}

static ssize_t
c_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len,
    int flags, void *user)
{
	struct cli *c = user;
	ssize_t r;

	if (c->out != NULL) {
		memcpy(c->out + c->nout, data, len);
		c->nout += len;
		return (ssize_t)len;
	}
	r = send(c->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (r < 0) {
		wslay_event_set_error(ctx, errno == EAGAIN ?
		    WSLAY_ERR_WOULDBLOCK : WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return r;
}

static int
c_mask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
	memset(buf, 0x5a, len);
	return 0;
}

static void
c_msg(wslay_event_context_ptr ctx,
    const struct wslay_event_on_msg_recv_arg *a, void *user)
{
	struct cli *c = user;

	c->nmsg++;
	c->opcode = a->opcode;
	if (a->opcode == WSLAY_CONNECTION_CLOSE) {
		c->close_code = a->status_code;
		return;
	}
	c->len = a->msg_length < sizeof(c->msg) ? a->msg_length :
	    sizeof(c->msg);
	memcpy(c->msg, a->msg, c->len);
}

static void
cli_init(struct cli *c, int fd)
{
	static const struct wslay_event_callbacks cbs = {
		.recv_callback = c_recv, .send_callback = c_send,
		.genmask_callback = c_mask, .on_msg_recv_callback = c_msg,
	};

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	T_EQ_INT(wslay_event_context_client_init(&c->ctx, &cbs, c), 0);
}

static void
cli_text(struct cli *c, const char *s)
{
	struct wslay_event_msg m = { WSLAY_TEXT_FRAME, (const uint8_t *)s,
	    strlen(s) };

	T_EQ_INT(wslay_event_queue_msg(c->ctx, &m), 0);
	T_EQ_INT(wslay_event_send(c->ctx), 0);
}

/* Run the loop until a callback stops it, or the watchdog. */
static void
run(struct loop *l)
{
	uint64_t wd = loop_timer_add(l, WATCHDOG_MS, watchdog, NULL);

	loop_run(l);
	loop_timer_cancel(l, wd);
}

static const struct ws_conf conf = {
	.max_queue = 1 << 20, .max_msg = 1 << 16, .linger_ms = 2000,
};

static void
t_accept(void)
{
	char out[WS_ACCEPT_LEN];

	/* RFC 6455, section 1.3. */
	T_EQ_INT(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
	T_EQ_STR(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	T_EQ_INT(ws_accept_key(NULL, out), -EINVAL);
	T_EQ_INT(ws_accept_key("", out), -EINVAL);
	T_EQ_INT(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ=", out), -EINVAL);
	T_EQ_INT(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ===", out), -EINVAL);
	T_EQ_INT(ws_accept_key("dGhlIHNhbXBsZSBub25jZ!==", out), -EINVAL);
	/* 24 base64 digits, but not of 16 bytes. */
	T_EQ_INT(ws_accept_key("dGhlIHNhbXBsZSBub25jZR==", out), -EINVAL);
	T_EQ_INT(ws_accept_key("dGhlIHNhbXBsZSBub25jZQAA", out), -EINVAL);
}

static void
t_header(void)
{
	T_OK(ws_header_has("Upgrade", "upgrade"));
	T_OK(ws_header_has("keep-alive, Upgrade", "upgrade"));
	T_OK(ws_header_has("keep-alive,upgrade ,x", "upgrade"));
	T_OK(ws_header_has("WebSocket", "websocket"));
	T_OK(!ws_header_has("keep-alive", "upgrade"));
	T_OK(!ws_header_has("upgraded", "upgrade"));
	T_OK(!ws_header_has("", "upgrade"));
	T_OK(!ws_header_has(" , ,", "upgrade"));
}

/* A message each way, then our close and the client's answer. */
static void
t_talk(void)
{
	struct loop *l = loop_new();
	struct srv s = { .reply = 1, .loop = l };
	struct cli c;
	int sv[2];

	T_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	cli_init(&c, sv[1]);
	s.ws = ws_new(l, sv[0], NULL, 0, &conf, on_msg, on_end, &s);
	cli_text(&c, "hello");
	run(l);
	T_EQ_INT(s.nmsg, 1);
	T_EQ_INT(s.type, WS_TEXT);
	T_EQ_STR(s.msg, "hello");
	/* The reply and the close frame are on the socket by now. */
	T_EQ_INT(wslay_event_recv(c.ctx), 0);
	T_EQ_INT(c.nmsg, 2);
	T_EQ_INT(c.opcode, WSLAY_CONNECTION_CLOSE);
	T_EQ_INT(c.close_code, WS_CLOSE_NORMAL);
	T_EQ_INT(wslay_event_send(c.ctx), 0);	/* the client's close */
	T_EQ_INT(s.nend, 0);
	run(l);
	T_EQ_INT(s.nend, 1);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(ws_queued(s.ws), 0);
	ws_free(s.ws);
	wslay_event_context_free(c.ctx);
	close(sv[0]);
	close(sv[1]);
	loop_free(l);
}

/* Bytes read before the ws existed are delivered like the rest. */
static void
t_extra(void)
{
	struct loop *l = loop_new();
	struct srv s = { .loop = l };
	struct cli c;
	char buf[256];
	int sv[2];

	T_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	cli_init(&c, sv[1]);
	c.out = buf;
	cli_text(&c, "early");
	T_OK(c.nout > 5 && c.nout < sizeof(buf));
	s.ws = ws_new(l, sv[0], buf, c.nout, &conf, on_msg, on_end, &s);
	run(l);
	T_EQ_INT(s.nmsg, 1);
	T_EQ_STR(s.msg, "early");
	T_EQ_INT(watchdog_fired, 0);
	ws_free(s.ws);
	wslay_event_context_free(c.ctx);
	close(sv[0]);
	close(sv[1]);
	loop_free(l);
}

/* A peer that reads nothing: the queue stops at the cap. */
static void
t_cap(void)
{
	struct loop *l = loop_new();
	struct srv s = { .loop = l };
	struct ws_conf small = conf;
	static char chunk[64 * 1024];
	int sv[2], i, rc = 0;

	small.max_queue = 256 * 1024;
	T_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	s.ws = ws_new(l, sv[0], NULL, 0, &small, on_msg, on_end, &s);
	for (i = 0; i < 1000 && (rc = ws_send(s.ws, WS_BINARY, "\x01", 1,
	    chunk, sizeof(chunk))) == 0; i++)
		T_OK(ws_queued(s.ws) <= small.max_queue);
	T_EQ_INT(rc, -ENOBUFS);
	T_OK(i < 1000);
	T_OK(ws_queued(s.ws) + sizeof(chunk) + 1 > small.max_queue);
	/* Small messages still fit while there is room. */
	T_EQ_INT(ws_send(s.ws, WS_TEXT, NULL, 0, "x", 1), 0);
	ws_free(s.ws);
	close(sv[0]);
	close(sv[1]);
	loop_free(l);
}

/* A peer that never answers pings is given up on. */
static void
t_silent(void)
{
	struct loop *l = loop_new();
	struct srv s = { .loop = l };
	struct ws_conf quick = conf;
	uint64_t t0 = loop_now_ms();
	int sv[2];

	quick.ping_ms = 20;
	quick.idle_ms = 60;
	T_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	s.ws = ws_new(l, sv[0], NULL, 0, &quick, on_msg, on_end, &s);
	run(l);
	T_EQ_INT(s.nend, 1);
	T_EQ_INT(watchdog_fired, 0);
	T_OK(loop_now_ms() - t0 >= 60);
	ws_free(s.ws);
	close(sv[0]);
	close(sv[1]);
	loop_free(l);
}

/* The peer goes away: the end is reported once. */
static void
t_hangup(void)
{
	struct loop *l = loop_new();
	struct srv s = { .loop = l };
	int sv[2];

	T_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	s.ws = ws_new(l, sv[0], NULL, 0, &conf, on_msg, on_end, &s);
	close(sv[1]);
	run(l);
	T_EQ_INT(s.nend, 1);
	T_EQ_INT(s.nmsg, 0);
	T_EQ_INT(ws_send(s.ws, WS_TEXT, NULL, 0, "x", 1), -EPIPE);
	ws_free(s.ws);
	close(sv[0]);
	loop_free(l);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "Sec-WebSocket-Accept, RFC 6455's example and bad keys",
		    t_accept },
		{ "header token lists", t_header },
		{ "a message each way and the close handshake", t_talk },
		{ "bytes read before the upgrade", t_extra },
		{ "the send queue stops at its cap", t_cap },
		{ "a silent peer is given up on", t_silent },
		{ "the peer hangs up", t_hangup },
	};

	return T_RUN(cases);
}
