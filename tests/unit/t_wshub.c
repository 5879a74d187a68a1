/*
 * t_wshub.c -- unit tests for wshub.c with no HTTP: clients joined from
 * one end of socketpairs (wshub_join_fd), each talked to by a client made
 * of the codec (wsframe.h, client side) on the other end, on a real loop.
 * Two clients get the same broadcast; a client that does not read is
 * closed with the owner's code once over its cap while the other keeps
 * getting frames; a client that leaves during a broadcast is told about
 * from a callback of its own after the broadcast, and freed after that;
 * the owner frees the hub from a leave callback; the hub freed with
 * clients closes them with 1001 and tells no one.  Every wait is bounded;
 * under ASan a client freed too early, or never, fails the run.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../execd/core/loop.h"
#include "../../execd/transport/ws.h"
#include "../../execd/transport/wsframe.h"
#include "../../execd/transport/wshub.h"
#include "../t.h"

#define WAIT_MS		5000
#define CODE_SLOW	4002

/* The peer of one client: the codec's client half. */
struct peer {
	int			 fd;
	struct wsframe_dec	 dec;
	int			 nbin;		/* binary messages */
	size_t			 nbytes;	/* their bytes */
	char			 last[64];	/* the last one, cut */
	size_t			 nlast;
	int			 nclose;
	uint16_t		 close_code;
};

/* What the owner heard. */
static struct {
	struct wshub		*hub;
	int			 nmsg, nleave, nopen;
	bool			 in_send;	/* inside a broadcast of ours */
	bool			 in_cb;		/* inside a callback of ours */
	bool			 left_inside;	/* a leave came inside either */
	bool			 free_on_leave;	/* wshub_free() from leave */
	size_t			 count_at_leave;
	void			*left_arg;
} o;

static void
on_open(struct wshub_client *c, void *arg)
{
	o.nopen++;
}

/* A message from a client: broadcast "go" to all, as an owner might. */
static void
on_msg(struct wshub_client *c, int type, const char *p, size_t n,
    void *arg)
{
	o.nmsg++;
	o.in_cb = true;
	o.in_send = true;
	wshub_broadcast(o.hub, WS_BINARY, "\x01", 1, "go", 2);
	o.in_send = false;
	o.in_cb = false;
}

static void
on_leave(struct wshub_client *c, void *arg)
{
	o.nleave++;
	if (o.in_send || o.in_cb)
		o.left_inside = true;
	/* c is still valid here: the hub frees it later. */
	o.left_arg = wshub_arg(c);
	o.count_at_leave = wshub_count(o.hub);
	if (o.free_on_leave)
		wshub_free(o.hub);
}

static const struct wshub_conf conf = {
	.ws = { .max_msg = 1 << 16, .linger_ms = 200 },
	.slow_code = CODE_SLOW, .slow_reason = "SLOW_CLIENT",
};

static void
stop(struct loop *l, uint64_t id, void *arg)
{
	loop_stop(l);
}

/* Run the loop for about ms. */
static void
spin(struct loop *l, unsigned ms)
{
	uint64_t t = loop_timer_add(l, ms, stop, NULL);

	loop_run(l);
	loop_timer_cancel(l, t);
}

/* A socketpair: the server end to the hub, the other to the peer. */
static struct wshub_client *
pair(struct wshub *h, struct peer *p, size_t cap, void *arg)
{
	int sv[2];

	memset(p, 0, sizeof(*p));
	T_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	p->fd = sv[1];
	wsframe_dec_init(&p->dec, false, 0, 0);
	return wshub_join_fd(h, sv[0], NULL, 0, cap, arg);
}

static void
peer_free(struct peer *p)
{
	wsframe_dec_reset(&p->dec);
	if (p->fd != -1)
		close(p->fd);
	p->fd = -1;
}

/* Read and decode what the socket has now. */
static void
peer_read(struct peer *p)
{
	static uint8_t buf[64 * 1024];
	struct wsframe_ev ev;
	size_t off, used;
	ssize_t r;
	int rc;

	while ((r = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		for (off = 0; off < (size_t)r; off += used) {
			rc = wsframe_dec_feed(&p->dec, buf + off,
			    (size_t)r - off, &used, &ev);
			T_OK(rc >= 0);
			if (rc <= 0)
				break;
			if (ev.op == WSFRAME_BINARY) {
				p->nbin++;
				p->nbytes += ev.n;
				p->nlast = ev.n < sizeof(p->last) ? ev.n :
				    sizeof(p->last);
				memcpy(p->last, ev.p, p->nlast);
			} else if (ev.op == WSFRAME_CLOSE) {
				p->nclose++;
				p->close_code = ev.code;
			}
		}
	}
}

/* A masked frame from the peer. */
static void
peer_frame(struct peer *p, int op, const void *s, size_t n)
{
	static const uint8_t mask[4] = { 0x11, 0x22, 0x33, 0x44 };
	uint8_t buf[WSFRAME_HDR_MAX + 64];
	size_t h = wsframe_hdr_encode(buf, op, true, n, mask);

	memcpy(buf + h, s, n);
	wsframe_mask(buf + h, n, mask, 0);
	T_EQ_INT(send(p->fd, buf, h + n, MSG_NOSIGNAL), (long long)(h + n));
}

/* Spin until the peer saw a close frame, answer it, or give up. */
static void
await_close(struct loop *l, struct peer *p)
{
	uint64_t t0 = loop_now_ms();

	while (p->nclose == 0 && loop_now_ms() - t0 < WAIT_MS) {
		spin(l, 5);
		peer_read(p);
	}
	T_EQ_INT(p->nclose, 1);
	peer_frame(p, WSFRAME_CLOSE, "\x03\xe8", 2);
}

/* Spin until the owner heard n leaves, or give up. */
static void
await_leaves(struct loop *l, int n)
{
	uint64_t t0 = loop_now_ms();

	while (o.nleave < n && loop_now_ms() - t0 < WAIT_MS)
		spin(l, 5);
	T_EQ_INT(o.nleave, n);
}

static struct wshub *
hub_new(struct loop *l)
{
	memset(&o, 0, sizeof(o));
	o.hub = wshub_new(l, &conf, "test", on_open, on_msg, on_leave);
	return o.hub;
}

/* Two listening clients get the same broadcast; one not listening not. */
static void
t_broadcast(void)
{
	struct loop *l = loop_new();
	struct wshub *h = hub_new(l);
	struct peer a, b, c;
	struct wshub_client *ca = pair(h, &a, 1 << 20, &a);
	struct wshub_client *cb = pair(h, &b, 1 << 20, &b);
	struct wshub_client *cc = pair(h, &c, 1 << 20, &c);

	T_EQ_INT(wshub_count(h), 3);
	T_OK(!wshub_listening(ca));
	wshub_listen(ca, true);
	wshub_listen(cb, true);
	T_EQ_INT(wshub_broadcast(h, WS_BINARY, "\x01", 1, "hello", 5), 2);
	/* One client alone, listening or not. */
	T_EQ_INT(wshub_send(cc, WS_BINARY, NULL, 0, "only", 4), 0);
	spin(l, 10);
	peer_read(&a);
	peer_read(&b);
	peer_read(&c);
	T_EQ_INT(a.nbin, 1);
	T_EQ_INT(b.nbin, 1);
	T_EQ_INT(a.nlast, 6);
	T_OK(memcmp(a.last, "\x01hello", 6) == 0);
	T_OK(memcmp(b.last, "\x01hello", 6) == 0);
	T_EQ_INT(c.nbin, 1);
	T_OK(c.nlast == 4 && memcmp(c.last, "only", 4) == 0);
	/* Every client is on the list, with its arg. */
	T_OK(wshub_arg(wshub_next(h, NULL)) != NULL);
	T_EQ_INT(o.nopen, 0);
	/* Our close for all three, and their answers. */
	wshub_close(ca, 1000, "bye");
	wshub_close(cb, 1000, "bye");
	wshub_close(cc, 1000, "bye");
	T_EQ_INT(wshub_send(ca, WS_TEXT, NULL, 0, "late", 4), -EPIPE);
	await_close(l, &a);
	await_close(l, &b);
	await_close(l, &c);
	await_leaves(l, 3);
	T_EQ_INT(a.close_code, 1000);
	T_EQ_INT(wshub_count(h), 0);
	wshub_free(h);
	spin(l, 5);
	peer_free(&a);
	peer_free(&b);
	peer_free(&c);
	loop_free(l);
}

/*
 * A peer that does not read: once its socket is full and its queue would
 * pass the cap, it is closed with the owner's code; the other client
 * gets every frame, before and after.
 */
static void
t_slow(void)
{
	struct loop *l = loop_new();
	struct wshub *h = hub_new(l);
	static char chunk[4096];
	struct peer fast, slow;
	struct wshub_client *cf = pair(h, &fast, 64 * 1024, &fast);
	struct wshub_client *cs = pair(h, &slow, 64 * 1024, &slow);
	int i, sent = 0, small = 4096;
	uint64_t t0;

	/* A small socket buffer, so that the queue fills soon. */
	setsockopt(slow.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	wshub_listen(cf, true);
	wshub_listen(cs, true);
	for (i = 0; i < 10000 && wshub_listening(cs); i++) {
		sent++;
		T_OK(wshub_broadcast(h, WS_BINARY, "\x01", 1, chunk,
		    sizeof(chunk)) >= 1);
		peer_read(&fast);
		if (i % 16 == 0)
			spin(l, 0);
	}
	T_OK(!wshub_listening(cs));
	T_OK(wshub_listening(cf));
	T_OK(i < 10000);
	/* The fast one goes on alone. */
	T_EQ_INT(wshub_broadcast(h, WS_BINARY, "\x01", 1, "after", 5), 1);
	sent++;
	t0 = loop_now_ms();
	while (fast.nbin < sent && loop_now_ms() - t0 < WAIT_MS) {
		spin(l, 2);
		peer_read(&fast);
	}
	T_EQ_INT(fast.nbin, sent);
	T_OK(fast.nlast == 6 && memcmp(fast.last, "\x01" "after", 6) == 0);
	/* The slow one finds, after what was queued, the owner's close. */
	await_close(l, &slow);
	T_EQ_INT(slow.close_code, CODE_SLOW);
	T_OK(slow.nbin < sent);
	T_EQ_INT(fast.nclose, 0);
	await_leaves(l, 1);
	T_OK(o.left_arg == &slow);
	T_EQ_INT(wshub_count(h), 1);
	/* The owner lets go with one client still there. */
	wshub_free(h);
	await_close(l, &fast);
	T_EQ_INT(fast.close_code, WS_CLOSE_GOING_AWAY);
	spin(l, 20);
	T_EQ_INT(o.nleave, 1);
	peer_free(&fast);
	peer_free(&slow);
	loop_free(l);
}

/*
 * A client whose peer hung up leaves during a broadcast the owner makes
 * from inside another client's message: the owner hears it after, from a
 * callback of its own, with the client still valid; it is freed later.
 */
static void
t_leave_mid_broadcast(void)
{
	struct loop *l = loop_new();
	struct wshub *h = hub_new(l);
	struct peer a, b;
	struct wshub_client *ca = pair(h, &a, 1 << 20, &a);
	struct wshub_client *cb = pair(h, &b, 1 << 20, &b);
	uint64_t t0;

	wshub_listen(ca, true);
	wshub_listen(cb, true);
	peer_free(&b);			/* b's peer hangs up */
	peer_frame(&a, WSFRAME_TEXT, "hi", 2);
	t0 = loop_now_ms();
	while (o.nmsg == 0 && loop_now_ms() - t0 < WAIT_MS)
		spin(l, 5);
	T_EQ_INT(o.nmsg, 1);
	await_leaves(l, 1);
	T_OK(!o.left_inside);
	T_OK(o.left_arg == &b);
	T_EQ_INT(o.count_at_leave, 1);
	/* After its sweep, a broadcast reaches a alone. */
	spin(l, 5);
	T_EQ_INT(wshub_count(h), 1);
	T_OK(wshub_next(h, NULL) == ca);
	T_EQ_INT(wshub_broadcast(h, WS_BINARY, "\x01", 1, "two", 3), 1);
	spin(l, 5);
	peer_read(&a);
	T_EQ_INT(a.nbin, 2);
	/* a leaves too; the owner frees the hub from that leave. */
	o.free_on_leave = true;
	wshub_close(ca, 1000, "bye");
	await_close(l, &a);
	await_leaves(l, 2);
	spin(l, 20);
	peer_free(&a);
	loop_free(l);
}

/* Freed with clients: each gets 1001, no leave is told, all is freed. */
static void
t_free_with_clients(void)
{
	struct loop *l = loop_new();
	struct wshub *h = hub_new(l);
	struct peer a, b;
	struct wshub_client *ca = pair(h, &a, 1 << 20, &a);

	(void)pair(h, &b, 1 << 20, &b);
	wshub_listen(ca, true);
	T_EQ_INT(wshub_send(ca, WS_TEXT, NULL, 0, "{}", 2), 0);
	wshub_free(h);
	await_close(l, &a);
	T_EQ_INT(a.close_code, WS_CLOSE_GOING_AWAY);
	/* b never answers: its socket is given up on after the linger. */
	peer_read(&b);
	T_EQ_INT(b.nclose, 1);
	spin(l, conf.ws.linger_ms + 50);
	T_EQ_INT(o.nleave, 0);
	peer_free(&a);
	peer_free(&b);
	loop_free(l);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "two clients get the same broadcast", t_broadcast },
		{ "a client over its cap is closed with the owner's code, "
		    "the other goes on", t_slow },
		{ "a client leaving mid-broadcast is told after and freed "
		    "later", t_leave_mid_broadcast },
		{ "the hub freed with clients closes them with 1001",
		    t_free_with_clients },
	};

	return T_RUN(cases);
}
