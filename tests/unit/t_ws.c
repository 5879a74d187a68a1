/*
 * t_ws.c -- unit tests for ws.c: the handshake's accept value (RFC 6455's
 * own example), header token lists, and a server ws on one end of a
 * socketpair driven by the loop, talking to a client made of the codec
 * (wsframe.h, client side) on the other end: a message each way and the
 * close handshake, bytes handed over as already read, the cap on what
 * may wait to be sent, a silent peer given up on, pings answered,
 * a close from the peer echoed, fragments reassembled, and a broken rule
 * answered with its close code.  Every loop run has a watchdog timer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../execd/core/loop.h"
#include "../../execd/transport/ws.h"
#include "../../execd/transport/wsframe.h"
#include "../t.h"

#define WATCHDOG_MS	5000

/* What the server side saw. */
struct srv {
	struct ws	*ws;
	int		 nmsg;
	int		 type;
	char		 msg[64];
	size_t		 len;
	int		 nend;
	int		 reply;		/* answer "hello" and close */
	struct loop	*loop;
};

/* The client side: the codec's client half on the other socket. */
struct cli {
	int			 fd;
	struct wsframe_dec	 dec;
	int			 nmsg;		/* events of any kind */
	int			 opcode;
	char			 msg[64];
	size_t			 len;
	int			 npong;
	int			 first_op;	/* of the first event */
	char			 first[64];
	size_t			 nfirst;
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
	s->len = n;
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

static void
cli_init(struct cli *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	wsframe_dec_init(&c->dec, false, 0, 0);
}

static void
cli_free(struct cli *c)
{
	wsframe_dec_reset(&c->dec);
}

/* Send raw bytes (or capture them). */
static void
cli_raw(struct cli *c, const void *p, size_t n)
{
	if (c->out != NULL) {
		memcpy(c->out + c->nout, p, n);
		c->nout += n;
		return;
	}
	T_EQ_INT(send(c->fd, p, n, MSG_NOSIGNAL), (long long)n);
}

/* One frame, masked as a client must (or not, if masked is false). */
static void
cli_frame(struct cli *c, int op, bool fin, bool masked, const void *p,
    size_t n)
{
	static const uint8_t mask[4] = { 0x5a, 0x17, 0xc3, 0x81 };
	uint8_t buf[WSFRAME_HDR_MAX + 256];
	size_t h;

	T_OK(n <= 256);
	h = wsframe_hdr_encode(buf, op, fin, n, masked ? mask : NULL);
	if (n > 0)
		memcpy(buf + h, p, n);
	if (masked)
		wsframe_mask(buf + h, n, mask, 0);
	cli_raw(c, buf, h + n);
}

static void
cli_text(struct cli *c, const char *s)
{
	cli_frame(c, WSFRAME_TEXT, true, true, s, strlen(s));
}

/* Read and decode all the socket has now; 0, or -EPROTO. */
static int
cli_read(struct cli *c)
{
	uint8_t buf[4096];
	struct wsframe_ev ev;
	size_t off, used;
	ssize_t r;
	int rc;

	while ((r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		for (off = 0; off < (size_t)r; off += used) {
			rc = wsframe_dec_feed(&c->dec, buf + off,
			    (size_t)r - off, &used, &ev);
			if (rc < 0)
				return rc;
			if (rc == 0)
				continue;
			c->nmsg++;
			c->opcode = ev.op;
			if (ev.op == WSFRAME_PONG)
				c->npong++;
			if (ev.op == WSFRAME_CLOSE)
				c->close_code = ev.code;
			c->len = ev.n < sizeof(c->msg) ? ev.n : sizeof(c->msg);
			memcpy(c->msg, ev.p, c->len);
			if (c->nmsg == 1) {
				c->first_op = ev.op;
				c->nfirst = c->len;
				memcpy(c->first, ev.p, c->len);
			}
		}
	}
	return 0;
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
	T_EQ_INT(cli_read(&c), 0);
	T_EQ_INT(c.nmsg, 2);
	T_EQ_INT(c.first_op, WSFRAME_BINARY);
	T_EQ_INT(c.nfirst, 6);
	T_OK(memcmp(c.first, "\x01world", 6) == 0);
	T_EQ_INT(c.opcode, WSFRAME_CLOSE);
	T_EQ_INT(c.close_code, WS_CLOSE_NORMAL);
	T_EQ_INT(c.len, 3);
	T_OK(memcmp(c.msg, "bye", 3) == 0);
	cli_frame(&c, WSFRAME_CLOSE, true, true, "\x03\xe8", 2);
	T_EQ_INT(s.nend, 0);
	run(l);
	T_EQ_INT(s.nend, 1);
	T_EQ_INT(watchdog_fired, 0);
	T_EQ_INT(ws_queued(s.ws), 0);
	ws_free(s.ws);
	cli_free(&c);
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
	cli_free(&c);
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


/* A server ws and a client on a fresh socketpair. */
static void
pair(struct loop *l, struct srv *s, struct cli *c, int sv[2],
    const struct ws_conf *cf)
{
	T_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	cli_init(c, sv[1]);
	s->loop = l;
	s->ws = ws_new(l, sv[0], NULL, 0, cf, on_msg, on_end, s);
}

static void
unpair(struct loop *l, struct srv *s, struct cli *c, int sv[2])
{
	ws_free(s->ws);
	cli_free(c);
	close(sv[0]);
	close(sv[1]);
	loop_free(l);
}

/* A ping is answered with a pong of the same payload, not delivered. */
static void
t_ping(void)
{
	struct loop *l = loop_new();
	struct srv s = { 0 };
	struct cli c;
	int sv[2];

	pair(l, &s, &c, sv, &conf);
	cli_frame(&c, WSFRAME_PING, true, true, "abc", 3);
	cli_text(&c, "after");
	run(l);
	T_EQ_INT(s.nmsg, 1);
	T_EQ_STR(s.msg, "after");
	T_EQ_INT(cli_read(&c), 0);
	T_EQ_INT(c.npong, 1);
	T_EQ_INT(c.first_op, WSFRAME_PONG);
	T_EQ_INT(c.nfirst, 3);
	T_OK(memcmp(c.first, "abc", 3) == 0);
	T_EQ_INT(s.nend, 0);
	T_EQ_INT(watchdog_fired, 0);
	unpair(l, &s, &c, sv);
}

/* The peer closes first: its code is echoed, then the end. */
static void
t_peer_close(void)
{
	struct loop *l = loop_new();
	struct srv s = { 0 };
	struct cli c;
	int sv[2];

	pair(l, &s, &c, sv, &conf);
	T_EQ_INT(ws_send(s.ws, WS_TEXT, NULL, 0, "queued", 6), 0);
	cli_frame(&c, WSFRAME_CLOSE, true, true, "\x0f\xa1" "done", 6);
	run(l);
	T_EQ_INT(s.nend, 1);
	T_EQ_INT(s.nmsg, 0);
	T_EQ_INT(cli_read(&c), 0);
	T_EQ_INT(c.opcode, WSFRAME_CLOSE);
	T_EQ_INT(c.close_code, 4001);
	T_EQ_INT(ws_send(s.ws, WS_TEXT, NULL, 0, "x", 1), -EPIPE);
	T_EQ_INT(watchdog_fired, 0);
	unpair(l, &s, &c, sv);
}

/*
 * A text message in three fragments, split inside a character, with a
 * ping between them, arrives whole.
 */
static void
t_fragments(void)
{
	struct loop *l = loop_new();
	struct srv s = { 0 };
	struct cli c;
	int sv[2];

	pair(l, &s, &c, sv, &conf);
	cli_frame(&c, WSFRAME_TEXT, false, true, "caf\xc3", 4);
	cli_frame(&c, WSFRAME_PING, true, true, NULL, 0);
	cli_frame(&c, WSFRAME_CONT, false, true, "\xa9 \xe2\x82", 4);
	cli_frame(&c, WSFRAME_CONT, true, true, "\xac!", 2);
	run(l);
	T_EQ_INT(s.nmsg, 1);
	T_EQ_INT(s.type, WS_TEXT);
	T_EQ_STR(s.msg, "caf\xc3\xa9 \xe2\x82\xac!");
	T_EQ_INT(cli_read(&c), 0);
	T_EQ_INT(c.npong, 1);
	T_EQ_INT(watchdog_fired, 0);
	unpair(l, &s, &c, sv);
}

/* Send raw frame bytes; the server answers with close code and ends. */
static void
expect_fail(const struct ws_conf *cf, void (*send_bad)(struct cli *),
    uint16_t code)
{
	struct loop *l = loop_new();
	struct srv s = { 0 };
	struct cli c;
	int sv[2];

	pair(l, &s, &c, sv, cf);
	send_bad(&c);
	run(l);
	T_EQ_INT(s.nend, 1);
	T_EQ_INT(s.nmsg, 0);
	T_EQ_INT(cli_read(&c), 0);
	T_EQ_INT(c.nmsg, 1);
	T_EQ_INT(c.opcode, WSFRAME_CLOSE);
	T_EQ_INT(c.close_code, code);
	T_EQ_INT(watchdog_fired, 0);
	unpair(l, &s, &c, sv);
}

static void
bad_unmasked(struct cli *c)
{
	cli_frame(c, WSFRAME_TEXT, true, false, "hi", 2);
}

static void
bad_utf8(struct cli *c)
{
	cli_frame(c, WSFRAME_TEXT, true, true, "\xc3(", 2);
}

static void
bad_big(struct cli *c)
{
	static char big[200];

	memset(big, 'x', sizeof(big));
	cli_frame(c, WSFRAME_BINARY, false, true, big, sizeof(big));
	cli_frame(c, WSFRAME_CONT, true, true, big, sizeof(big));
}

static void
bad_opcode(struct cli *c)
{
	cli_frame(c, 0x3, true, true, "x", 1);
}

/* Broken rules: 1002, 1007 and 1009 come back, nothing is delivered. */
static void
t_errors(void)
{
	struct ws_conf small = conf;

	small.max_msg = 300;
	expect_fail(&conf, bad_unmasked, 1002);
	expect_fail(&conf, bad_opcode, 1002);
	expect_fail(&conf, bad_utf8, 1007);
	expect_fail(&small, bad_big, 1009);
}

/*
 * A peer that pings and never reads: the pongs cannot go out, and the
 * server still reads on (one pong slot, no backpressure on reading).
 */
static void
t_ping_flood(void)
{
	struct loop *l = loop_new();
	struct srv s = { 0 };
	struct cli c;
	char buf[4096];
	size_t i;
	int sv[2], sz = 4096;

	T_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	T_EQ_INT(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)),
	    0);
	cli_init(&c, sv[1]);
	s.loop = l;
	s.ws = ws_new(l, sv[0], NULL, 0, &conf, on_msg, on_end, &s);
	/* 20000 pings of 100 bytes, then a message, captured then sent. */
	c.out = malloc(20001 * (WSFRAME_HDR_MAX + 100));
	T_OK(c.out != NULL);
	memset(buf, 'p', 100);
	for (i = 0; i < 20000; i++)
		cli_frame(&c, WSFRAME_PING, true, true, buf, 100);
	cli_text(&c, "end");
	for (i = 0; i < c.nout; ) {
		ssize_t r = send(sv[1], c.out + i, c.nout - i, MSG_NOSIGNAL);

		if (r > 0) {
			i += (size_t)r;
			continue;
		}
		/* The server's socket is full of pongs: let it read on. */
		loop_timer_add(l, 1, watchdog, NULL);
		loop_run(l);
		watchdog_fired = 0;
		if (s.nend > 0)
			break;
	}
	while (s.nmsg == 0 && s.nend == 0 && !watchdog_fired)
		run(l);
	T_EQ_INT(s.nmsg, 1);
	T_EQ_STR(s.msg, "end");
	T_EQ_INT(s.nend, 0);
	T_EQ_INT(ws_queued(s.ws), 0);
	free(c.out);
	c.out = NULL;
	unpair(l, &s, &c, sv);
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
		{ "a ping is answered with its pong", t_ping },
		{ "the peer's close is echoed", t_peer_close },
		{ "fragments, split UTF-8 and a ping between", t_fragments },
		{ "1002, 1007 and 1009 for broken rules", t_errors },
		{ "a peer that pings and never reads is still heard",
		    t_ping_flood },
	};

	return T_RUN(cases);
}
