/*
 * ws.c -- libwslay's event API on a socket of the loop (see ws.h).
 *
 * wslay pulls bytes through recv_cb and pushes them through send_cb; both
 * are non-blocking and report EAGAIN as WSLAY_ERR_WOULDBLOCK, so one
 * wslay_event_recv() reads all there is and one wslay_event_send() writes
 * all the socket takes.  The socket is watched for reading while wslay
 * wants to read, and for writing only while it has something queued.
 * The end is always reported from a loop callback of its own (a 0 ms
 * timer when it is noticed inside a call from the owner), so an owner
 * never sees its end callback run inside its own ws_send() or ws_close().
 * This file knows nothing of terminals or HTTP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <wslay/wslay.h>

#include "log.h"
#include "loop.h"
#include "ws.h"
#include "xmalloc.h"

#define WS_GUID		"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define STACK_MSG	(33 * 1024)

struct ws {
	struct loop		*loop;
	int			 fd;
	wslay_event_context_ptr	 ctx;
	struct ws_conf		 conf;
	char			*extra;		/* read before we had it */
	size_t			 nextra, offextra;
	ws_msg_cb		*msg;
	ws_end_cb		*end;
	void			*arg;
	int			 watched;	/* LOOP_* now on the loop */
	bool			 in_recv;	/* inside wslay_event_recv */
	bool			 closing;
	bool			 close_pending;	/* after what is queued */
	uint16_t		 close_code;
	char			 close_reason[123];
	bool			 ending;	/* the end is scheduled */
	bool			 ended;
	uint64_t		 last_rx;
	uint64_t		 t_ping, t_linger, t_end, t_extra;
};

static ssize_t	recv_cb(wslay_event_context_ptr, uint8_t *, size_t, int,
		    void *);
static ssize_t	send_cb(wslay_event_context_ptr, const uint8_t *, size_t,
		    int, void *);
static void	msg_cb(wslay_event_context_ptr,
		    const struct wslay_event_on_msg_recv_arg *, void *);
static void	on_io(struct loop *, int, void *, int, void *);
static void	on_ping(struct loop *, uint64_t, void *);
static void	on_linger(struct loop *, uint64_t, void *);
static void	on_end(struct loop *, uint64_t, void *);
static void	on_extra(struct loop *, uint64_t, void *);
static void	pump(struct ws *, int);
static void	end_later(struct ws *);
static void	unwatch(struct ws *);

/* Take over fd for a server-side WebSocket. */
struct ws *
ws_new(struct loop *loop, int fd, const char *extra, size_t n,
    const struct ws_conf *conf, ws_msg_cb *msg, ws_end_cb *end, void *arg)
{
	static const struct wslay_event_callbacks cbs = {
		.recv_callback = recv_cb,
		.send_callback = send_cb,
		.on_msg_recv_callback = msg_cb,
	};
	struct ws *w = xcalloc(1, sizeof(*w));
	int on = 1;

	/* Keystrokes and their echo are small writes: send them now. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	w->loop = loop;
	w->fd = fd;
	w->conf = *conf;
	w->msg = msg;
	w->end = end;
	w->arg = arg;
	w->last_rx = loop_now_ms();
	if (wslay_event_context_server_init(&w->ctx, &cbs, w) != 0)
		fatalx("out of memory");
	if (conf->max_msg > 0)
		wslay_event_config_set_max_recv_msg_length(w->ctx,
		    conf->max_msg);
	if (n > 0) {
		/* Bytes no poll will announce: read them on the next turn. */
		w->extra = xmalloc(n);
		memcpy(w->extra, extra, n);
		w->nextra = n;
		w->t_extra = loop_timer_add(loop, 0, on_extra, w);
	}
	w->watched = LOOP_READ;
	loop_add_fd(loop, fd, LOOP_READ, on_io, w);
	if (conf->ping_ms > 0)
		w->t_ping = loop_timer_add(loop, conf->ping_ms, on_ping, w);
	return w;
}

/* Free; the socket is left open for its owner. */
void
ws_free(struct ws *w)
{
	if (w == NULL)
		return;
	unwatch(w);
	loop_timer_cancel(w->loop, w->t_ping);
	loop_timer_cancel(w->loop, w->t_linger);
	loop_timer_cancel(w->loop, w->t_end);
	loop_timer_cancel(w->loop, w->t_extra);
	wslay_event_context_free(w->ctx);
	free(w->extra);
	free(w);
}

/* Take the socket off the loop. */
static void
unwatch(struct ws *w)
{
	if (w->watched != 0)
		loop_del(w->loop, w->fd, NULL);
	w->watched = 0;
}

/* wslay wants bytes: first those read before us, then the socket's. */
static ssize_t
recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
    void *user)
{
	struct ws *w = user;
	ssize_t r;

	if (w->offextra < w->nextra) {
		r = (ssize_t)(w->nextra - w->offextra < len ?
		    w->nextra - w->offextra : len);
		memcpy(buf, w->extra + w->offextra, (size_t)r);
		w->offextra += (size_t)r;
		return r;
	}
	do
		r = recv(w->fd, buf, len, 0);
	while (r < 0 && errno == EINTR);
	if (r > 0) {
		w->last_rx = loop_now_ms();
		return r;
	}
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	else
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

/* wslay has bytes for the peer: as many as the socket takes now. */
static ssize_t
send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len,
    int flags, void *user)
{
	struct ws *w = user;
	ssize_t r;
	int f = MSG_NOSIGNAL | ((flags & WSLAY_MSG_MORE) ? MSG_MORE : 0);

	do
		r = send(w->fd, data, len, f);
	while (r < 0 && errno == EINTR);
	if (r >= 0)
		return r;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	else
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

/* A whole message; wslay answers pings and close frames itself. */
static void
msg_cb(wslay_event_context_ptr ctx,
    const struct wslay_event_on_msg_recv_arg *a, void *user)
{
	struct ws *w = user;

	if (w->closing || w->ending)
		return;
	if (a->opcode == WSLAY_TEXT_FRAME)
		w->msg(w, WS_TEXT, (const char *)a->msg, a->msg_length,
		    w->arg);
	else if (a->opcode == WSLAY_BINARY_FRAME)
		w->msg(w, WS_BINARY, (const char *)a->msg, a->msg_length,
		    w->arg);
}

/*
 * Read (if rev says so) and send what is queued, then watch for what
 * wslay wants next; when it wants nothing more, or failed, end.
 */
static void
pump(struct ws *w, int rev)
{
	int rc = 0, want;

	/* Sending from inside a receive waits for the receive to end. */
	if (w->ending || w->in_recv)
		return;
	if ((rev & LOOP_READ) && wslay_event_want_read(w->ctx)) {
		w->in_recv = true;
		rc = wslay_event_recv(w->ctx);
		w->in_recv = false;
	}
	if (rc == 0 && !w->ending && wslay_event_want_write(w->ctx))
		rc = wslay_event_send(w->ctx);
	/*
	 * wslay sends control frames ahead of queued messages, and nothing
	 * after a close frame: queue ours only once the rest is out.
	 */
	if (rc == 0 && !w->ending && w->close_pending &&
	    !wslay_event_want_write(w->ctx)) {
		w->close_pending = false;
		wslay_event_queue_close(w->ctx, w->close_code,
		    (const uint8_t *)w->close_reason,
		    strlen(w->close_reason));
		rc = wslay_event_send(w->ctx);
	}
	if (w->ending)
		return;
	want = (wslay_event_want_read(w->ctx) ? LOOP_READ : 0) |
	    (wslay_event_want_write(w->ctx) ? LOOP_WRITE : 0);
	if (rc != 0 || want == 0) {
		log_debug("websocket fd=%d: over (rc %d, want %d, close "
		    "sent %d, received %d)", w->fd, rc, want,
		    wslay_event_get_close_sent(w->ctx),
		    wslay_event_get_close_received(w->ctx));
		end_later(w);
		return;
	}
	if (want != w->watched) {
		w->watched = want;
		loop_add_fd(w->loop, w->fd, want, on_io, w);
	}
}

/* The socket is readable or writable. */
static void
on_io(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	pump(arg, rev);
}

/* Deliver the bytes read before us, which no poll announces. */
static void
on_extra(struct loop *l, uint64_t id, void *arg)
{
	struct ws *w = arg;

	w->t_extra = 0;
	pump(w, LOOP_READ);
}

/* Stop all I/O now and report the end from a callback of its own. */
static void
end_later(struct ws *w)
{
	if (w->ending)
		return;
	w->ending = true;
	unwatch(w);
	w->t_end = loop_timer_add(w->loop, 0, on_end, w);
}

/* Report the end, once, from a callback of our own. */
static void
on_end(struct loop *l, uint64_t id, void *arg)
{
	struct ws *w = arg;

	w->t_end = 0;
	loop_timer_cancel(l, w->t_ping);
	loop_timer_cancel(l, w->t_linger);
	loop_timer_cancel(l, w->t_extra);
	w->t_ping = w->t_linger = w->t_extra = 0;
	w->ended = true;
	w->end(w, w->arg);
}

/* Keepalive: ping, or give up on a peer unheard for idle_ms. */
static void
on_ping(struct loop *l, uint64_t id, void *arg)
{
	struct ws *w = arg;
	struct wslay_event_msg m = { WSLAY_PING, NULL, 0 };

	w->t_ping = 0;
	if (w->conf.idle_ms > 0 &&
	    loop_now_ms() - w->last_rx >= w->conf.idle_ms) {
		log_debug("websocket fd=%d: peer silent for %u ms", w->fd,
		    w->conf.idle_ms);
		end_later(w);
		return;
	}
	if (wslay_event_queue_msg(w->ctx, &m) == 0)
		pump(w, 0);
	if (!w->ending)
		w->t_ping = loop_timer_add(l, w->conf.ping_ms, on_ping, w);
}

/* The peer never answered our close: give up on it. */
static void
on_linger(struct loop *l, uint64_t id, void *arg)
{
	struct ws *w = arg;

	w->t_linger = 0;
	end_later(w);
}

/* Queue a message made of two parts and send what goes now. */
int
ws_send(struct ws *w, int type, const void *hdr, size_t hn, const void *p,
    size_t n)
{
	char stack[STACK_MSG], *buf = stack;
	struct wslay_event_msg m;
	int rc;

	if (w->closing || w->ending)
		return -EPIPE;
	if (wslay_event_get_queued_msg_length(w->ctx) + hn + n >
	    w->conf.max_queue)
		return -ENOBUFS;
	if (hn + n > sizeof(stack))
		buf = xmalloc(hn + n);
	if (hn > 0)
		memcpy(buf, hdr, hn);
	if (n > 0)
		memcpy(buf + hn, p, n);
	m.opcode = type == WS_TEXT ? WSLAY_TEXT_FRAME : WSLAY_BINARY_FRAME;
	m.msg = (const uint8_t *)buf;
	m.msg_length = hn + n;
	rc = wslay_event_queue_msg(w->ctx, &m);	/* copies */
	if (buf != stack)
		free(buf);
	if (rc != 0)
		return rc == WSLAY_ERR_NOMEM ? -ENOMEM : -EPIPE;
	pump(w, 0);
	return 0;
}

/* Begin the close handshake. */
void
ws_close(struct ws *w, uint16_t code, const char *reason)
{
	if (w->closing || w->ending)
		return;
	w->closing = true;
	w->close_pending = true;
	w->close_code = code;
	snprintf(w->close_reason, sizeof(w->close_reason), "%s",
	    reason != NULL ? reason : "");
	pump(w, 0);
	if (!w->ending && w->conf.linger_ms > 0)
		w->t_linger = loop_timer_add(w->loop, w->conf.linger_ms,
		    on_linger, w);
}

/* Bytes queued in wslay, not yet sent. */
size_t
ws_queued(const struct ws *w)
{
	return wslay_event_get_queued_msg_length(w->ctx);
}

/* Whether ws_close() was called or the end has come. */
bool
ws_closing(const struct ws *w)
{
	return w->closing || w->ending;
}

/* RFC 6455 4.2.2: base64(SHA-1(key + GUID)), the key being 16 bytes. */
int
ws_accept_key(const char *key, char out[WS_ACCEPT_LEN])
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char md[SHA_DIGEST_LENGTH], raw[18];
	char buf[24 + sizeof(WS_GUID)];

	if (key == NULL || strlen(key) != 24 || strcmp(key + 22, "==") != 0)
		return -EINVAL;
	for (size_t i = 0; i < 22; i++)
		if (strchr(b64, key[i]) == NULL)
			return -EINVAL;
	/* 16 bytes leave 4 bits of the last digit unused: they must be 0. */
	if ((strchr(b64, key[21]) - b64) & 0x0f)
		return -EINVAL;
	if (EVP_DecodeBlock(raw, (const unsigned char *)key, 24) != 18)
		return -EINVAL;
	memcpy(buf, key, 24);
	memcpy(buf + 24, WS_GUID, sizeof(WS_GUID) - 1);
	SHA1((const unsigned char *)buf, 24 + sizeof(WS_GUID) - 1, md);
	if (EVP_EncodeBlock((unsigned char *)out, md, sizeof(md)) != 28)
		return -EINVAL;
	return 0;
}

/* Whether value, a comma-separated list, has token (any case). */
bool
ws_header_has(const char *value, const char *token)
{
	size_t tl = strlen(token), n;
	const char *p = value;

	while (p != NULL && *p != '\0') {
		p += strspn(p, " \t,");
		n = strcspn(p, ",");
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == tl && strncasecmp(p, token, tl) == 0)
			return true;
		p = strchr(p, ',');
	}
	return false;
}
