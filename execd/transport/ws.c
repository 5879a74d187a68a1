/*
 * ws.c -- one server-side WebSocket on a socket of the loop (see ws.h),
 * over the pure codec in wsframe.c.
 *
 * Reading takes what the socket has (a bounded amount per turn; the poll
 * is level-triggered) and feeds it to the decoder; whole messages go to
 * the owner, pings are answered, a close is echoed, a broken rule is
 * answered with its close code.  Writing sends what the socket takes of
 * one frame at a time: a frame once begun is finished, then control
 * frames (a close that ends the conversation, the pong for the latest
 * ping, our ping) go ahead of queued messages, and our own close goes
 * after them.  Nothing is sent after a close.  The socket is watched for
 * reading until the peer's close or a broken rule, and for writing only
 * while something is queued.  Only messages count against max_queue; the
 * control frames have one slot each, so a peer that pings and never reads
 * cannot grow anything.  The end is always reported from a loop callback
 * of its own (a 0 ms timer), so an owner never sees its end callback run
 * inside its own ws_send() or ws_close().  The opening handshake is here
 * too, over http.h's upgrade: checked, and answered with its 101.  This
 * file knows nothing of terminals, nor of who holds several clients
 * (wshub.c).
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

#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "http.h"
#include "ws.h"
#include "wsframe.h"

#define WS_GUID		"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define READ_CHUNK	(16 * 1024)
#define READ_TURNS	16		/* chunks read per turn at most */

/* A message frame waiting to be sent: header and payload. */
struct frame {
	struct frame	*next;
	size_t		 len;		/* bytes in b */
	size_t		 payload;	/* what counts against max_queue */
	uint8_t		 b[];
};

struct ws {
	struct loop		*loop;
	int			 fd;
	struct wsframe_dec	 dec;
	struct ws_conf		 conf;
	char			*extra;		/* read before we had it */
	size_t			 nextra, offextra;
	ws_msg_cb		*msg;
	ws_end_cb		*end;
	void			*arg;
	int			 watched;	/* LOOP_* now on the loop */
	bool			 in_recv;	/* inside read_some() */
	bool			 closing;	/* ws_close() was called */
	bool			 close_pending;	/* ours, after what is queued */
	bool			 close_now;	/* an echo or error: first */
	bool			 close_sent;	/* a close frame was begun */
	bool			 close_rcvd;
	bool			 failed;	/* the peer broke a rule */
	uint16_t		 close_code;
	char			 close_reason[123];
	uint16_t		 now_code;	/* for close_now */
	const char		*now_reason;	/* close_reason or NULL */
	bool			 ping_pending, pong_pending;
	uint8_t			 pong[WSFRAME_CONTROL_MAX];
	size_t			 npong;
	/* The control frame being sent, if nctl > 0. */
	uint8_t			 ctl[2 + WSFRAME_CONTROL_MAX];
	size_t			 nctl, offctl;
	/* Queued messages; head is being sent if off > 0. */
	struct frame		*head, **tail;
	size_t			 off, queued;
	bool			 ending;	/* the end is scheduled */
	bool			 ended;
	uint64_t		 last_rx;
	uint64_t		 t_ping, t_linger, t_end, t_extra;
};

static int	read_some(struct ws *);
static void	feed(struct ws *, const uint8_t *, size_t);
static void	handle(struct ws *, const struct wsframe_ev *);
static int	flush(struct ws *);
static bool	next_frame(struct ws *);
static void	put_ctl(struct ws *, int, const uint8_t *, size_t);
static void	drop_queue(struct ws *);
static bool	want_read(const struct ws *);
static bool	want_write(const struct ws *);
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
	w->tail = &w->head;
	w->last_rx = loop_now_ms();
	/* A frame is never bigger than the message it is part of. */
	wsframe_dec_init(&w->dec, true, conf->max_msg, conf->max_msg);
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
	w->off = 0;
	drop_queue(w);
	wsframe_dec_reset(&w->dec);
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

/* Free the queued messages, but not one half sent (off > 0). */
static void
drop_queue(struct ws *w)
{
	struct frame *f, **pp = &w->head;

	if (w->off > 0 && w->head != NULL)
		pp = &w->head->next;
	while ((f = *pp) != NULL) {
		*pp = f->next;
		w->queued -= f->payload;
		free(f);
	}
	w->tail = pp;
}

/* Whether the peer may still send us something we would read. */
static bool
want_read(const struct ws *w)
{
	return !w->close_rcvd && !w->failed;
}

/* Whether there is a frame to send or one half sent. */
static bool
want_write(const struct ws *w)
{
	if (w->nctl > 0 || w->off > 0)
		return true;
	if (w->close_sent)
		return false;
	return w->close_now || w->pong_pending || w->ping_pending ||
	    w->head != NULL || w->close_pending;
}

/*
 * Read what the socket has (after the bytes read before us), at most
 * READ_TURNS chunks, and feed the decoder.  0, or -errno when the peer
 * went away or the socket failed.
 */
static int
read_some(struct ws *w)
{
	uint8_t buf[READ_CHUNK];
	ssize_t r;
	int rc = 0;

	w->in_recv = true;
	if (w->offextra < w->nextra) {
		w->offextra = w->nextra;
		feed(w, (const uint8_t *)w->extra, w->nextra);
	}
	for (int turn = 0; turn < READ_TURNS && want_read(w); turn++) {
		do
			r = recv(w->fd, buf, sizeof(buf), 0);
		while (r < 0 && errno == EINTR);
		if (r > 0) {
			w->last_rx = loop_now_ms();
			feed(w, buf, (size_t)r);
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		rc = r == 0 ? -EPIPE : -errno;
		break;
	}
	w->in_recv = false;
	return rc;
}

/* Decode p (n bytes) while we still read, acting on each event. */
static void
feed(struct ws *w, const uint8_t *p, size_t n)
{
	struct wsframe_ev ev;
	size_t used;
	int rc;

	while (n > 0 && want_read(w)) {
		rc = wsframe_dec_feed(&w->dec, p, n, &used, &ev);
		p += used;
		n -= used;
		if (rc < 0) {
			log_debug("websocket fd=%d: peer broke the protocol, "
			    "closing with %d", w->fd,
			    wsframe_dec_error(&w->dec));
			w->failed = true;
			if (!w->close_sent) {
				w->close_now = true;
				w->now_code =
				    (uint16_t)wsframe_dec_error(&w->dec);
				w->now_reason = NULL;
			}
			return;
		}
		if (rc == 1)
			handle(w, &ev);
	}
}

/* One event from the peer. */
static void
handle(struct ws *w, const struct wsframe_ev *ev)
{
	switch (ev->op) {
	case WSFRAME_TEXT:
	case WSFRAME_BINARY:
		if (!w->closing && !w->ending && !w->close_now)
			w->msg(w, ev->op == WSFRAME_TEXT ? WS_TEXT : WS_BINARY,
			    (const char *)ev->p, ev->n, w->arg);
		break;
	case WSFRAME_PING:
		/* 5.5.3: answering the latest ping is enough. */
		if (!w->close_sent && !w->close_now) {
			w->pong_pending = true;
			memcpy(w->pong, ev->p, ev->n);
			w->npong = ev->n;
		}
		break;
	case WSFRAME_CLOSE:
		w->close_rcvd = true;
		if (!w->close_sent && !w->close_now) {
			/* Ours if we meant to close, else the peer's code. */
			w->close_now = true;
			w->now_code = w->close_pending ? w->close_code :
			    ev->code;
			w->now_reason = w->close_pending ? w->close_reason :
			    NULL;
		}
		break;
	default:		/* a pong: its bytes count as being heard */
		break;
	}
}

/* Make a control frame the one being sent. */
static void
put_ctl(struct ws *w, int op, const uint8_t *p, size_t n)
{
	size_t h = wsframe_hdr_encode(w->ctl, op, true, n, NULL);

	if (n > 0)
		memcpy(w->ctl + h, p, n);
	w->nctl = h + n;
	w->offctl = 0;
}

/*
 * Choose what to send next, with nothing being sent: a close that ends
 * the conversation (the queue is dropped), the pong, our ping, the next
 * message, our close once the queue is empty.  False if there is none.
 */
static bool
next_frame(struct ws *w)
{
	uint8_t pl[WSFRAME_CONTROL_MAX];
	size_t n;

	if (w->close_sent)
		return false;
	if (w->close_now || (w->close_pending && w->head == NULL)) {
		if (w->close_now) {
			n = wsframe_close_encode(pl, w->now_code,
			    w->now_reason);
			drop_queue(w);
		} else {
			n = wsframe_close_encode(pl, w->close_code,
			    w->close_reason);
		}
		put_ctl(w, WSFRAME_CLOSE, pl, n);
		w->close_sent = true;
		w->close_now = w->close_pending = false;
		w->pong_pending = w->ping_pending = false;
		return true;
	}
	if (w->pong_pending) {
		put_ctl(w, WSFRAME_PONG, w->pong, w->npong);
		w->pong_pending = false;
		return true;
	}
	if (w->ping_pending) {
		put_ctl(w, WSFRAME_PING, NULL, 0);
		w->ping_pending = false;
		return true;
	}
	return w->head != NULL;
}

/* Send frames until the socket takes no more; 0 or -errno. */
static int
flush(struct ws *w)
{
	const uint8_t *p;
	struct frame *f;
	size_t len;
	ssize_t r;

	for (;;) {
		if (w->nctl == 0 && w->off == 0 && !next_frame(w))
			return 0;
		if (w->nctl > 0) {
			p = w->ctl + w->offctl;
			len = w->nctl - w->offctl;
		} else {
			p = w->head->b + w->off;
			len = w->head->len - w->off;
		}
		do
			r = send(w->fd, p, len, MSG_NOSIGNAL);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 :
			    -errno;
		if (w->nctl > 0) {
			w->offctl += (size_t)r;
			if (w->offctl == w->nctl)
				w->nctl = w->offctl = 0;
			continue;
		}
		w->off += (size_t)r;
		if (w->off < w->head->len)
			continue;
		f = w->head;
		if ((w->head = f->next) == NULL)
			w->tail = &w->head;
		w->queued -= f->payload;
		w->off = 0;
		free(f);
	}
}

/*
 * Read (if rev says so) and send what is queued, then watch for what is
 * wanted next; when nothing more is, or I/O failed, end.
 */
static void
pump(struct ws *w, int rev)
{
	int rc = 0, want;

	/* Sending from inside a receive waits for the receive to end. */
	if (w->ending || w->in_recv)
		return;
	if ((rev & LOOP_READ) && want_read(w))
		rc = read_some(w);
	if (rc == 0 && !w->ending)
		rc = flush(w);
	if (w->ending)
		return;
	want = (want_read(w) ? LOOP_READ : 0) |
	    (want_write(w) ? LOOP_WRITE : 0);
	if (rc != 0 || want == 0) {
		log_debug("websocket fd=%d: over (rc %d, want %d, close "
		    "sent %d, received %d)", w->fd, rc, want, w->close_sent,
		    w->close_rcvd);
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

	w->t_ping = 0;
	if (w->conf.idle_ms > 0 &&
	    loop_now_ms() - w->last_rx >= w->conf.idle_ms) {
		log_debug("websocket fd=%d: peer silent for %u ms", w->fd,
		    w->conf.idle_ms);
		end_later(w);
		return;
	}
	if (!w->close_sent) {
		w->ping_pending = true;
		pump(w, 0);
	}
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
	uint8_t h[WSFRAME_HDR_MAX];
	struct frame *f;
	size_t hl;

	if (w->closing || w->ending || w->close_now || w->close_sent)
		return -EPIPE;
	if (hn + n > w->conf.max_queue - w->queued ||
	    w->queued > w->conf.max_queue)
		return -ENOBUFS;
	hl = wsframe_hdr_encode(h, type == WS_TEXT ? WSFRAME_TEXT :
	    WSFRAME_BINARY, true, hn + n, NULL);
	f = xmalloc(sizeof(*f) + hl + hn + n);
	f->next = NULL;
	f->len = hl + hn + n;
	f->payload = hn + n;
	memcpy(f->b, h, hl);
	if (hn > 0)
		memcpy(f->b + hl, hdr, hn);
	if (n > 0)
		memcpy(f->b + hl + hn, p, n);
	*w->tail = f;
	w->tail = &f->next;
	w->queued += f->payload;
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
	w->close_code = code;
	snprintf(w->close_reason, sizeof(w->close_reason), "%s",
	    reason != NULL ? reason : "");
	if (w->close_sent || w->close_now)
		return;		/* the peer closed first: ours is on its way */
	w->close_pending = true;
	pump(w, 0);
	if (!w->ending && w->conf.linger_ms > 0)
		w->t_linger = loop_timer_add(w->loop, w->conf.linger_ms,
		    on_linger, w);
}

/* Bytes of messages queued, not yet sent. */
size_t
ws_queued(const struct ws *w)
{
	return w->queued;
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

/* Check req's opening handshake; see ws.h. */
int
ws_handshake(struct http_req *req, const char **why)
{
	const char *up = http_req_header(req, "Upgrade");
	const char *conn = http_req_header(req, "Connection");
	const char *ver = http_req_header(req, "Sec-WebSocket-Version");
	char acc[WS_ACCEPT_LEN];

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
	return -EINVAL;
}

/* Answer 101 to a valid handshake; see ws.h. */
int
ws_upgrade(struct http_req *req, http_upgrade_cb *up,
    http_upgrade_shutdown_cb *shutdown, void *arg)
{
	return ws_upgrade_protocol(req, NULL, up, shutdown, arg);
}

/* The same, naming the subprotocol chosen (NULL: none). */
int
ws_upgrade_protocol(struct http_req *req, const char *protocol,
    http_upgrade_cb *up, http_upgrade_shutdown_cb *shutdown, void *arg)
{
	char acc[WS_ACCEPT_LEN];
	const char *hdrs[] = { "Upgrade", "websocket", "Sec-WebSocket-Accept",
	    acc, protocol != NULL ? "Sec-WebSocket-Protocol" : NULL,
	    protocol, NULL };
	const char *why;

	if (ws_handshake(req, &why) < 0 ||
	    ws_accept_key(http_req_header(req, "Sec-WebSocket-Key"), acc) < 0)
		return -EINVAL;
	http_reply_upgrade(req, hdrs, up, shutdown, arg);
	return 0;
}
