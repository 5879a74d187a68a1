/*
 * proxy.c -- one proxied request (see proxy.h): the backend connection,
 * the bytes pumped between it and the client, and the pure parsers of
 * a response head and a chunked body.
 *
 * A proxy lives from proxy_start() until nothing refers to it: the
 * request's body sink (until its end or abort runs), the deferred
 * request (until replied or cancelled), the response stream (until its
 * gone callback), or the upgrade (until its up callback, then the
 * tunnel).  put() frees it when the last of these lets go.
 *
 * The request goes out as the head we build (hop-by-hop headers
 * dropped, X-Forwarded-* set) and the body as it arrives, re-framed:
 * Content-Length as the client gave it, or chunked.  MHD takes a
 * response only once the request body is all read, so a head that comes
 * earlier waits (the backend is read meanwhile only up to IN_MAX).  The
 * response body is pulled by MHD's content reader as the client takes
 * it: the reader receives from the backend straight into MHD's buffer
 * (decoding chunked framing on the way), and when the backend has
 * nothing yet it puts the connection to sleep and watches the backend,
 * whose next bytes wake it.  A client that does not read is therefore
 * never read for, and nothing is queued for it but the socket buffers.
 * A body of known length is sent with that Content-Length; others are
 * sent chunked.  A body of SPLICE_MIN bytes or more skips both copies:
 * once the head is out, it is spliced from the backend through a pipe
 * straight into the client's socket, which http_reader_socket() lends
 * while MHD sleeps, and the connection is closed after it (the response
 * says "Connection: close").  A 101 answer to an upgrade request
 * turns the proxy into a tunnel: bytes both ways through two capped
 * queues, each side read only while the other's queue has room, until
 * either side ends and what it sent has been passed on.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../util/buf.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "cookie.h"
#include "dialect.h"
#include "http.h"
#include "proxy.h"

#define OUT_HIGH	(256u << 10)	/* request bytes queued: pause the client */
#define IN_MAX		(256u << 10)	/* response bytes read, not yet pushed */
#define TUNNEL_MAX	(256u << 10)	/* each way, in a tunnel */
#define READ_CHUNK	(64u << 10)
#define IO_TURNS	16		/* reads or writes per event */
#define E_GATEWAY	"BAD_GATEWAY"
#define CHUNK_LINE_MAX	1024
#define POOL_MAX	32		/* idle backend connections kept */
#define POOL_PER_PORT	8
#define POOL_IDLE_MS	30000		/* ... each for at most this long */
#define SPLICE_MIN	(1u << 20)	/* a body this long is spliced */
#define SPLICE_PIPE	(256u << 10)	/* ... through a pipe this large */

enum state {
	ST_CONNECT,	/* connect() under way */
	ST_HEAD,	/* sending the request, waiting for the head */
	ST_BODY,	/* streaming the response body */
	ST_TUNNEL,	/* upgraded: bytes both ways */
	ST_DONE		/* the backend is closed */
};

enum framing { FR_NONE, FR_LENGTH, FR_CHUNKED, FR_EOF };

enum chunk_state { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };

struct proxy {
	struct loop		*loop;
	struct http_req		*req;	/* until replied or gone */
	enum state		 state;
	int			 bfd;	/* the backend, or -1 */
	uint16_t		 port;
	unsigned		 timeout_ms;
	uint64_t		 timer;
	uint64_t		 last;	/* last backend activity, loop ms */
	struct buf		 out;	/* to the backend */
	struct buf		 in;	/* from the backend, not yet passed on */
	bool			 head_req;	/* method HEAD: no body back */
	bool			 upgrade_req;
	bool			 chunked_req;	/* re-framing the request body */
	bool			 sink;	/* body sink registered, not ended */
	bool			 ended;	/* the whole request body is in */
	bool			 deferred;
	bool			 paused;
	bool			 bwrite_eof;	/* backend refused more request */
	bool			 reused;	/* bfd came from the pool */
	char			*head;		/* the request head, to retry */
	size_t			 head_len;
	bool			 keep;		/* the response allows reuse */
	/* The response. */
	bool			 have_head;
	unsigned		 status;
	char			**hdrs;	/* name, value pairs for the reply */
	enum framing		 framing;
	uint64_t		 left;	/* FR_LENGTH: body bytes to come */
	uint64_t		 length;	/* the Content-Length, if has_length */
	bool			 has_length;
	struct proxy_chunk	 chunk;
	bool			 beof;	/* the backend closed its side */
	struct http_reader	*rd;	/* the response's, until resp_done */
	bool			 waiting;	/* rd asleep until the backend sends */
	bool			 broken;	/* the reader must abort */
	/* A spliced body (see splice_read()). */
	bool			 splice;	/* chosen for this response */
	bool			 spliced;	/* ... and all of it went */
	int			 sfd;		/* the client, lent meanwhile */
	int			 pipe[2];
	size_t			 piped;		/* bytes in the pipe */
	size_t			 pipe_cap;
	/* The tunnel. */
	bool			 up_pending;	/* 101 queued, socket not ours yet */
	struct http_upgrade	*u;
	int			 cfd;
	struct buf		 toc;	/* to the client */
	bool			 ceof;
};

static void	 put(struct proxy *);
static void	 fail(struct proxy *, unsigned, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static void	 close_backend(struct proxy *);
static void	 done_backend(struct proxy *);
static int	 retry(struct proxy *);
static int	 pool_get(struct loop *, uint16_t);
static void	 pool_put(struct loop *, uint16_t, int);
static void	 watch(struct proxy *);
static void	 on_backend(struct loop *, int, void *, int, void *);
static void	 on_client(struct loop *, int, void *, int, void *);
static void	 on_timer(struct loop *, uint64_t, void *);
static void	 on_ready(struct loop *, int, void *, int, void *);
static void	 on_splice(struct loop *, int, void *, int, void *);
static ssize_t	 splice_read(struct proxy *, char *, size_t);
static void	 splice_stop(struct proxy *);
static ssize_t	 resp_read(void *, char *, size_t);
static void	 resp_done(void *);
static int	 body_data(struct http_req *, const char *, size_t, void *);
static void	 body_end(struct http_req *, void *);
static void	 body_abort(void *);
static void	 req_cancel(struct http_req *, void *);
static void	 tunnel_up(struct http_upgrade *, int, const char *, size_t,
		    void *);
static void	 tunnel_shutdown(struct http_upgrade *, void *);
static void	 tunnel_end(struct proxy *);
/* These return -1 when p may have been freed, else 0. */
static int	 backend_write(struct proxy *);
static int	 backend_read(struct proxy *);
static int	 take_head(struct proxy *);
static int	 maybe_reply(struct proxy *);

/* Hop-by-hop headers (RFC 9110 7.6.1), never forwarded either way. */
static bool
hop_by_hop(const char *name, size_t n, const char *conn_tokens)
{
	static const char *const hop[] = {
		"Connection", "Keep-Alive", "TE", "Trailer",
		"Transfer-Encoding", "Upgrade", "Content-Length", NULL
	};
	const char *t;
	size_t tn;

	for (size_t i = 0; hop[i] != NULL; i++)
		if (strlen(hop[i]) == n && strncasecmp(name, hop[i], n) == 0)
			return true;
	if (n >= 6 && strncasecmp(name, "Proxy-", 6) == 0)
		return true;
	/* And every header the Connection header names. */
	for (t = conn_tokens; t != NULL && *t != '\0'; t += tn) {
		t += strspn(t, " \t,");
		tn = strcspn(t, " \t,");
		if (tn == n && tn > 0 && strncasecmp(t, name, n) == 0)
			return true;
	}
	return false;
}

/* Whether the comma-separated list v holds token tok. */
static bool
has_token(const char *v, const char *tok)
{
	size_t n = strlen(tok), tn;

	for (; v != NULL && *v != '\0'; v += tn) {
		v += strspn(v, " \t,");
		tn = strcspn(v, " \t,;");
		if (tn == n && strncasecmp(v, tok, n) == 0)
			return true;
		tn += strcspn(v + tn, ",");
	}
	return false;
}

/* The request head we send, built from the client's. */
struct head_build {
	struct buf	*b;
	const char	*conn;		/* the client's Connection header */
	const char	*xff;		/* its X-Forwarded-For */
};

static int
add_header(const char *name, const char *value, void *arg)
{
	struct head_build *hb = arg;
	size_t n = strlen(name);

	if (hop_by_hop(name, n, hb->conn) ||
	    strcasecmp(name, "X-Forwarded-For") == 0 ||
	    strcasecmp(name, "X-Forwarded-Host") == 0 ||
	    strcasecmp(name, "X-Forwarded-Proto") == 0)
		return 0;
	/*
	 * The proxy's own cookie (dialect.h) opens execd, not the backend:
	 * it is dropped, the other cookies kept.
	 */
	if (strcasecmp(name, "Cookie") == 0 &&
	    strstr(value, DIALECT_COOKIE) != NULL) {
		struct buf kept;

		buf_init(&kept);
		cookie_strip(value, DIALECT_COOKIE, &kept);
		if (kept.len > 0)
			buf_addf(hb->b, "%s: %s\r\n", name, kept.p);
		buf_reset(&kept);
		return 0;
	}
	/* MHD gives values as sent; a CR or LF cannot be in one. */
	buf_addf(hb->b, "%s: %s\r\n", name, value);
	return 0;
}

/* Connect to 127.0.0.1:port without blocking: 0 or -errno, *fd set. */
static int
dial(uint16_t port, int *fd)
{
	struct sockaddr_in sin;
	int s, one = 1;

	s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (struct sockaddr *)&sin, sizeof(sin)) < 0 &&
	    errno != EINPROGRESS) {
		int e = errno;

		close(s);
		return -e;
	}
	*fd = s;
	return 0;
}

/*
 * Idle backend connections, newest last: kept from a response that left
 * its connection clean, taken by the next request to the same port that
 * has no body (which can be sent again on a fresh connection if the kept
 * one turns out closed).  The loop watches each; any byte or the end of
 * the stream drops it.
 */
struct idle {
	struct loop	*loop;
	int		 fd;
	uint16_t	 port;
	uint64_t	 since;
};
static struct idle	pool[POOL_MAX];
static size_t		npool;

static void
pool_drop(size_t i)
{
	loop_del(pool[i].loop, pool[i].fd, NULL);
	close(pool[i].fd);
	memmove(&pool[i], &pool[i + 1], (npool - i - 1) * sizeof(pool[0]));
	npool--;
}

static void
on_idle(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	(void)l; (void)zs; (void)rev; (void)arg;
	for (size_t i = 0; i < npool; i++)
		if (pool[i].fd == fd) {
			pool_drop(i);
			return;
		}
}

/* Keep fd for the next request to port; the oldest goes when full. */
static void
pool_put(struct loop *loop, uint16_t port, int fd)
{
	size_t same = 0, oldest = POOL_MAX;

	for (size_t i = 0; i < npool; i++)
		if (pool[i].port == port && same++ == 0)
			oldest = i;
	if (same >= POOL_PER_PORT)
		pool_drop(oldest);
	else if (npool == POOL_MAX)
		pool_drop(0);
	pool[npool].loop = loop;
	pool[npool].fd = fd;
	pool[npool].port = port;
	pool[npool].since = loop_now_ms();
	npool++;
	loop_add_fd(loop, fd, LOOP_READ, on_idle, NULL);
}

/* A kept connection to port that is still open, or -1. */
static int
pool_get(struct loop *loop, uint16_t port)
{
	uint64_t now = loop_now_ms();
	ssize_t n;
	char c;
	int fd;

	(void)loop;
	for (size_t i = npool; i-- > 0; ) {
		if (now - pool[i].since > POOL_IDLE_MS) {
			pool_drop(i);
			continue;
		}
		if (pool[i].port != port)
			continue;
		fd = pool[i].fd;
		loop_del(pool[i].loop, fd, NULL);
		memmove(&pool[i], &pool[i + 1],
		    (npool - i - 1) * sizeof(pool[0]));
		npool--;
		n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return fd;
		close(fd);	/* closed, or it sent what nobody asked */
	}
	return -1;
}

/* Take over req; see proxy.h. */
void
proxy_start(struct http_req *req, const struct proxy_opts *o)
{
	struct proxy *p = xcalloc(1, sizeof(*p));
	struct head_build hb;
	const char *method = http_req_method(req), *cl, *te, *up;
	char peer[INET6_ADDRSTRLEN];
	int rc;

	p->loop = http_req_loop(req);
	p->req = req;
	p->port = o->port;
	p->timeout_ms = o->timeout_ms;
	p->bfd = p->cfd = p->sfd = -1;
	p->pipe[0] = p->pipe[1] = -1;
	p->last = loop_now_ms();
	buf_init_max(&p->out, OUT_HIGH + READ_CHUNK + PROXY_HEAD_MAX +
	    (16u << 20));	/* a client's head is capped by MHD */
	buf_init_max(&p->in, IN_MAX + READ_CHUNK);
	buf_init_max(&p->toc, TUNNEL_MAX + READ_CHUNK);
	p->head_req = strcmp(method, "HEAD") == 0;
	hb.b = &p->out;
	hb.conn = http_req_header(req, "Connection");
	hb.xff = http_req_header(req, "X-Forwarded-For");
	up = http_req_header(req, "Upgrade");
	p->upgrade_req = up != NULL && has_token(hb.conn, "upgrade");

	buf_addf(&p->out, "%s %s HTTP/1.1\r\n", method, o->target);
	http_req_headers(req, add_header, &hb);
	if (http_req_peer(req, peer, sizeof(peer)) < 0)
		snprintf(peer, sizeof(peer), "unknown");
	if (hb.xff != NULL)
		buf_addf(&p->out, "X-Forwarded-For: %s, %s\r\n", hb.xff, peer);
	else
		buf_addf(&p->out, "X-Forwarded-For: %s\r\n", peer);
	buf_adds(&p->out, "X-Forwarded-Proto: http\r\n");
	cl = http_req_header(req, "Content-Length");
	te = http_req_header(req, "Transfer-Encoding");
	if (te != NULL) {
		p->chunked_req = true;
		buf_adds(&p->out, "Transfer-Encoding: chunked\r\n");
	} else if (cl != NULL)
		buf_addf(&p->out, "Content-Length: %s\r\n", cl);
	if (p->upgrade_req)
		buf_addf(&p->out, "Connection: Upgrade\r\nUpgrade: %s\r\n", up);
	buf_adds(&p->out, "\r\n");

	/* A request without a body can be sent again: try a kept one. */
	if (!p->upgrade_req && te == NULL && (cl == NULL ||
	    strcmp(cl, "0") == 0) &&
	    (p->bfd = pool_get(p->loop, o->port)) >= 0) {
		p->reused = true;
		p->head = xstrdup(p->out.p);
		p->head_len = p->out.len;
		p->state = ST_HEAD;
	} else if ((rc = dial(o->port, &p->bfd)) < 0) {
		http_reply_error(req, 502, E_GATEWAY,
		    "cannot connect to 127.0.0.1:%u: %s", o->port,
		    strerror(-rc));
		free(p->out.base);
		free(p->in.base);
		free(p->toc.base);
		free(p);
		return;
	} else
		p->state = ST_CONNECT;
	p->sink = true;
	http_req_sink(req, body_data, body_end, body_abort, p);
	if (p->timeout_ms > 0)
		p->timer = loop_timer_add(p->loop, p->timeout_ms, on_timer, p);
	/* A kept connection takes the head now, without a turn of the loop. */
	if (p->state == ST_HEAD && backend_write(p) < 0)
		return;
	watch(p);
}

/* Free p once nothing refers to it. */
static void
put(struct proxy *p)
{
	if (p->sink || p->deferred || p->rd != NULL || p->up_pending ||
	    p->u != NULL)
		return;
	close_backend(p);
	if (p->hdrs != NULL) {
		for (size_t i = 0; p->hdrs[i] != NULL; i++)
			free(p->hdrs[i]);
		free(p->hdrs);
	}
	buf_reset(&p->out);
	buf_reset(&p->in);
	buf_reset(&p->toc);
	free(p->head);
	free(p);
}

/*
 * The response is complete: keep the connection when it is clean (the
 * whole request sent, nothing more read, the backend allows it), then
 * let go of it like close_backend().
 */
static void
done_backend(struct proxy *p)
{
	bool whole = p->framing == FR_NONE || (p->framing == FR_LENGTH &&
	    p->left == 0) || (p->framing == FR_CHUNKED &&
	    p->chunk.state == CH_DONE);

	if (p->bfd >= 0 && whole && p->keep && p->state == ST_BODY &&
	    p->ended &&
	    p->out.len == 0 && !p->bwrite_eof && !p->beof && p->in.len == 0) {
		loop_del(p->loop, p->bfd, NULL);
		pool_put(p->loop, p->port, p->bfd);
		p->bfd = -1;
	}
	close_backend(p);
}

/*
 * A kept connection was closed under us before any answer: send the
 * request again on a new one.  0, or -1 after failing (p may be gone).
 */
static int
retry(struct proxy *p)
{
	int rc;

	loop_del(p->loop, p->bfd, NULL);
	close(p->bfd);
	p->bfd = -1;
	p->reused = false;
	p->beof = p->bwrite_eof = false;
	buf_drain(&p->out, p->out.len);
	buf_add(&p->out, p->head, p->head_len);
	if ((rc = dial(p->port, &p->bfd)) < 0) {
		p->bfd = -1;
		fail(p, 502, "cannot connect: %s", strerror(-rc));
		return -1;
	}
	p->state = ST_CONNECT;
	watch(p);
	return 0;
}

static void
close_backend(struct proxy *p)
{
	splice_stop(p);
	if (p->timer != 0) {
		loop_timer_cancel(p->loop, p->timer);
		p->timer = 0;
	}
	if (p->bfd >= 0) {
		loop_del(p->loop, p->bfd, NULL);
		close(p->bfd);
		p->bfd = -1;
	}
	p->state = ST_DONE;
	if (p->paused && p->req != NULL) {
		p->paused = false;
		http_req_resume(p->req);
	}
}

/*
 * The backend failed.  Before any answer: answer status with our error
 * body.  While streaming: cut the response short.  Either way the
 * backend is closed.
 */
static void
fail(struct proxy *p, unsigned status, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_debug("proxy to port %u: %s", p->port, msg);
	close_backend(p);
	if (p->rd != NULL) {	/* the reader aborts the response */
		p->broken = true;
		p->waiting = false;
		http_reader_wake(p->rd);
		return;
	}
	if (p->req != NULL && !p->up_pending && p->u == NULL) {
		http_reply_error(p->req, status,
		    status == 504 ? HTTP_E_TIMEOUT : E_GATEWAY,
		    "backend 127.0.0.1:%u: %s", p->port, msg);
		p->req = NULL;
		p->deferred = false;
	}
	put(p);
}

/* Watch the backend for what the proxy can do now. */
static void
watch(struct proxy *p)
{
	int ev = 0;

	if (p->bfd < 0 || p->rd != NULL)
		return;		/* a response's reader watches for itself */
	if (p->state == ST_CONNECT)
		ev = LOOP_WRITE;
	else {
		if (p->out.len > 0 && !p->bwrite_eof)
			ev |= LOOP_WRITE;
		if (!p->beof && p->in.len < IN_MAX &&
		    (p->state != ST_TUNNEL || p->toc.len < TUNNEL_MAX))
			ev |= LOOP_READ;
	}
	if (ev == 0)
		loop_del(p->loop, p->bfd, NULL);
	else
		loop_add_fd(p->loop, p->bfd, ev, on_backend, p);
	if (p->state == ST_TUNNEL && p->cfd >= 0) {
		ev = 0;
		if (p->toc.len > 0)
			ev |= LOOP_WRITE;
		if (!p->ceof && p->out.len < TUNNEL_MAX)
			ev |= LOOP_READ;
		if (ev == 0)
			loop_del(p->loop, p->cfd, NULL);
		else
			loop_add_fd(p->loop, p->cfd, ev, on_client, p);
	}
}

static void
on_backend(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct proxy *p = arg;
	int err = 0;
	socklen_t len = sizeof(err);

	(void)l; (void)zs;
	if (p->state == ST_CONNECT) {
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err != 0) {
			fail(p, 502, "cannot connect: %s", strerror(err));
			return;
		}
		p->state = ST_HEAD;
		p->last = loop_now_ms();
	}
	if ((rev & LOOP_WRITE) && backend_write(p) < 0)
		return;
	if ((rev & LOOP_READ) && backend_read(p) < 0)
		return;
	watch(p);
}

/* Send what is queued for the backend. */
static int
backend_write(struct proxy *p)
{
	ssize_t n;

	for (int turn = 0; turn < IO_TURNS && p->out.len > 0; turn++) {
		n = send(p->bfd, p->out.p, p->out.len, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n < 0 && p->reused && !p->have_head && p->in.len == 0)
			return retry(p) < 0 ? -1 : 0;
		if (n < 0) {
			/*
			 * The backend will take no more; if it answered
			 * (or still may), the rest of the body is dropped.
			 */
			p->bwrite_eof = true;
			buf_drain(&p->out, p->out.len);
			if (p->state == ST_TUNNEL) {
				tunnel_end(p);
				return -1;
			}
			break;
		}
		buf_drain(&p->out, (size_t)n);
	}
	if (p->paused && p->req != NULL && p->out.len < OUT_HIGH / 2) {
		p->paused = false;
		http_req_resume(p->req);
	}
	return 0;
}

/* Read what the backend sent and pass it on. */
static int
backend_read(struct proxy *p)
{
	struct buf *q = p->state == ST_TUNNEL ? &p->toc : &p->in;
	size_t cap = p->state == ST_TUNNEL ? TUNNEL_MAX : IN_MAX;
	ssize_t n;

	for (int turn = 0; turn < IO_TURNS && q->len < cap; turn++) {
		if (buf_reserve(q, READ_CHUNK) < 0)
			break;
		n = recv(p->bfd, q->p + q->len, READ_CHUNK, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0 && p->reused && !p->have_head && q->len == 0)
			return retry(p);
		if (n < 0 && p->state != ST_TUNNEL) {
			fail(p, 502, "read: %s", strerror(errno));
			return -1;
		}
		if (n <= 0) {
			p->beof = true;
			break;
		}
		q->len += (size_t)n;
		q->p[q->len] = '\0';
		p->last = loop_now_ms();
		if ((size_t)n < READ_CHUNK)
			break;	/* drained, most likely: the poll says if not */
	}
	if (p->state == ST_TUNNEL) {
		if (p->beof && p->toc.len == 0) {
			tunnel_end(p);
			return -1;
		}
		return 0;
	}
	if (!p->have_head) {
		if (take_head(p) < 0)
			return -1;
		if (!p->have_head) {
			if (p->beof) {
				fail(p, 502, "the connection ended before "
				    "a response");
				return -1;
			}
			return 0;
		}
		return maybe_reply(p);
	}
	return 0;	/* held for the reply, which waits for the body */
}

/* Copy n bytes as a NUL-terminated string. */
static char *
dupn(const char *s, size_t n)
{
	return xstrndup(s, n);
}

/*
 * Parse the head in p->in once it is whole: 0 (have_head set when it
 * was), or -1 after failing.  1xx heads other than 101 are skipped.
 */
static int
take_head(struct proxy *p)
{
	static struct proxy_head h;	/* large: not on the stack */
	const char *conn = NULL, *te = NULL, *cl = NULL;
	size_t k = 0, vl;
	int rc;

	for (;;) {
		rc = proxy_head_parse(p->in.p, p->in.len, &h);
		if (rc < 0 && p->reused) {
			/* Left over from an earlier answer: start afresh. */
			buf_drain(&p->in, p->in.len);
			return retry(p) < 0 ? -1 : 0;
		}
		if (rc < 0) {
			fail(p, 502, "malformed response head");
			return -1;
		}
		if (rc == 0)
			return 0;
		if (h.status >= 100 && h.status < 200 && h.status != 101) {
			buf_drain(&p->in, h.len);
			continue;
		}
		break;
	}
	for (size_t i = 0; i < h.nhdr; i++) {
		if (h.hdr[i].nlen == 10 &&
		    strncasecmp(h.hdr[i].name, "Connection", 10) == 0)
			conn = h.hdr[i].value;
		else if (h.hdr[i].nlen == 17 &&
		    strncasecmp(h.hdr[i].name, "Transfer-Encoding", 17) == 0)
			te = h.hdr[i].value;
		else if (h.hdr[i].nlen == 14 &&
		    strncasecmp(h.hdr[i].name, "Content-Length", 14) == 0) {
			if (cl != NULL && (h.hdr[i].vlen != strcspn(cl,
			    "\r\n") || strncmp(cl, h.hdr[i].value,
			    h.hdr[i].vlen) != 0)) {
				fail(p, 502, "conflicting Content-Length");
				return -1;
			}
			cl = h.hdr[i].value;
		}
	}
	if (h.status == 101 && !p->upgrade_req) {
		fail(p, 502, "101 to a request that asked no upgrade");
		return -1;
	}
	p->status = h.status;
	p->keep = h.minor == 1;
	if (conn != NULL) {
		char *c = dupn(conn, strcspn(conn, "\r\n"));

		if (has_token(c, "close"))
			p->keep = false;
		free(c);
	}
	/* Terminated copies: hop-by-hop ones dropped; Upgrade kept on 101. */
	p->hdrs = xcalloc(2 * h.nhdr + 3, sizeof(char *));
	for (size_t i = 0; i < h.nhdr; i++) {
		vl = h.hdr[i].vlen;
		if (h.status == 101 && h.hdr[i].nlen == 7 &&
		    strncasecmp(h.hdr[i].name, "Upgrade", 7) == 0)
			;
		else if (hop_by_hop(h.hdr[i].name, h.hdr[i].nlen, NULL))
			continue;
		else if (conn != NULL) {
			/* The Connection header's tokens, bounded by its line. */
			char *c = dupn(conn, strcspn(conn, "\r\n"));
			bool hop = hop_by_hop(h.hdr[i].name, h.hdr[i].nlen, c);

			free(c);
			if (hop)
				continue;
		}
		p->hdrs[k++] = dupn(h.hdr[i].name, h.hdr[i].nlen);
		p->hdrs[k++] = dupn(h.hdr[i].value, vl);
	}
	p->hdrs[k] = NULL;
	if (cl != NULL) {
		char *v = dupn(cl, strcspn(cl, "\r\n"));

		rc = http_parse_uint(v, UINT64_MAX - 1, &p->length);
		free(v);
		if (rc < 0) {
			fail(p, 502, "bad Content-Length");
			return -1;
		}
		p->has_length = true;
	}
	if (p->head_req || h.status == 101 || h.status == 204 ||
	    h.status == 304)
		p->framing = FR_NONE;
	else if (te != NULL) {
		char *t = dupn(te, strcspn(te, "\r\n"));
		bool chunked = has_token(t, "chunked");

		free(t);
		if (!chunked) {
			fail(p, 502, "unsupported Transfer-Encoding");
			return -1;
		}
		p->framing = FR_CHUNKED;
	} else if (p->has_length) {
		p->framing = FR_LENGTH;
		p->left = p->length;
	} else
		p->framing = FR_EOF;
	buf_drain(&p->in, h.len);
	p->have_head = true;
	p->state = h.status == 101 ? ST_TUNNEL : ST_BODY;
	return 0;
}

/* Answer the client once both the head and the whole request are in. */
static int
maybe_reply(struct proxy *p)
{
	struct http_req *req = p->req;

	struct http_resp *hr;

	if (!p->have_head || !p->ended || req == NULL ||
	    p->rd != NULL || p->up_pending || p->u != NULL)
		return 0;
	p->deferred = false;
	if (p->status == 101) {
		p->up_pending = true;
		p->req = NULL;
		loop_del(p->loop, p->bfd, NULL);	/* until the socket is ours */
		http_reply_upgrade(req, (const char *const *)p->hdrs,
		    tunnel_up, tunnel_shutdown, p);
		return 0;
	}
	/*
	 * The length is the backend's, also where no body follows (HEAD,
	 * 304: that of the body it stands for); MHD sends none then.
	 */
	if (p->framing == FR_LENGTH)
		hr = http_resp_reader_len(p->left, resp_read, resp_done, p);
	else if (p->framing == FR_NONE)
		hr = http_resp_reader_len(p->has_length && p->status != 204 ?
		    p->length : 0, resp_read, resp_done, p);
	else
		hr = http_resp_reader(resp_read, resp_done, p);
	if (p->framing == FR_LENGTH && p->left >= SPLICE_MIN) {
		p->splice = true;
		http_resp_header(hr, "Connection", "close");
	}
	for (size_t i = 0; p->hdrs[i] != NULL; i += 2)
		http_resp_header(hr, p->hdrs[i], p->hdrs[i + 1]);
	p->rd = http_resp_reader_of(hr);
	p->req = NULL;
	if (p->bfd >= 0)
		loop_del(p->loop, p->bfd, NULL);	/* the reader pulls now */
	http_reply_resp(req, p->status, hr);
	return 0;
}

/* Response bytes for MHD: from what is held, then from the backend. */
static ssize_t
resp_read(void *arg, char *buf, size_t max)
{
	struct proxy *p = arg;
	size_t used, off, len;
	ssize_t n;
	int rc;

	if (p->splice)
		return splice_read(p, buf, max);
	if (p->broken)
		return -1;
	for (;;) {
		if (p->framing == FR_NONE || (p->framing == FR_LENGTH &&
		    p->left == 0) || (p->framing == FR_CHUNKED &&
		    p->chunk.state == CH_DONE)) {
			done_backend(p);
			return 0;
		}
		if (p->framing == FR_CHUNKED && p->in.len > 0) {
			rc = proxy_chunk_step(&p->chunk, p->in.p, p->in.len,
			    &used, &off, &len);
			if (rc < 0) {
				log_debug("proxy to port %u: malformed chunked "
				    "body", p->port);
				close_backend(p);
				return -1;
			}
			if (len > max) {
				/* Take what fits; the rest is read again. */
				p->chunk.left += len - max;
				p->chunk.state = CH_DATA;
				len = max;
				used = off + len;
			}
			memcpy(buf, p->in.p + off, len);
			buf_drain(&p->in, used);
			if (len > 0)
				return (ssize_t)len;
			if (used > 0 || rc == 1)
				continue;
		} else if (p->framing != FR_CHUNKED && p->in.len > 0) {
			len = p->in.len < max ? p->in.len : max;
			if (p->framing == FR_LENGTH && len > p->left)
				len = (size_t)p->left;
			memcpy(buf, p->in.p, len);
			buf_drain(&p->in, len);
			if (p->framing == FR_LENGTH)
				p->left -= len;
			if (p->framing == FR_LENGTH && p->left == 0)
				done_backend(p);	/* MHD asks no more */
			return (ssize_t)len;
		}
		/* Nothing held: receive. */
		if (p->bfd < 0 || p->beof) {
			if (p->framing == FR_EOF)
				return 0;
			log_debug("proxy to port %u: the response was cut "
			    "short", p->port);
			close_backend(p);
			return -1;
		}
		if (p->framing == FR_CHUNKED) {
			if (p->in.len >= IN_MAX ||
			    buf_reserve(&p->in, READ_CHUNK) < 0) {
				close_backend(p);
				return -1;
			}
			n = recv(p->bfd, p->in.p + p->in.len, READ_CHUNK, 0);
		} else {
			len = max;
			if (p->framing == FR_LENGTH && len > p->left)
				len = (size_t)p->left;
			n = recv(p->bfd, buf, len, 0);
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			p->waiting = true;
			loop_add_fd(p->loop, p->bfd, LOOP_READ, on_ready, p);
			return HTTP_READ_WAIT;
		}
		if (n < 0) {
			log_debug("proxy to port %u: read: %s", p->port,
			    strerror(errno));
			close_backend(p);
			return -1;
		}
		if (n == 0) {
			p->beof = true;
			continue;
		}
		p->last = loop_now_ms();
		if (p->framing == FR_CHUNKED) {
			p->in.len += (size_t)n;
			p->in.p[p->in.len] = '\0';
			continue;
		}
		if (p->framing == FR_LENGTH)
			p->left -= (uint64_t)n;
		if (p->framing == FR_LENGTH && p->left == 0)
			done_backend(p);
		return n;
	}
}

/*
 * The reader of a spliced body.  The first call borrows the client's
 * socket and starts the pump, or falls back to copying when it cannot;
 * later ones end the response once the pump has sent it all (0) or
 * failed (-1).
 */
static ssize_t
splice_read(struct proxy *p, char *buf, size_t max)
{
	int sz;

	if (p->broken) {
		splice_stop(p);
		return -1;
	}
	if (p->spliced)
		return 0;
	if (p->sfd >= 0)
		return HTTP_READ_WAIT;
	if (p->bfd < 0 || (p->sfd = http_reader_socket(p->rd)) < 0 ||
	    pipe2(p->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		p->sfd = -1;
		p->splice = false;
		return resp_read(p, buf, max);
	}
	(void)fcntl(p->pipe[1], F_SETPIPE_SZ, (int)SPLICE_PIPE);
	sz = fcntl(p->pipe[1], F_GETPIPE_SZ);
	p->pipe_cap = sz > 0 ? (size_t)sz : 65536;
	/* What came with the head goes first; bytes past the body are not. */
	if (p->in.len > p->left) {
		p->in.len = (size_t)p->left;
		p->keep = false;
	}
	p->left -= p->in.len;
	p->last = loop_now_ms();
	/* MHD puts the connection to sleep on return: pump from the loop. */
	loop_add_fd(p->loop, p->sfd, LOOP_WRITE, on_splice, p);
	return HTTP_READ_WAIT;
}

/* Backend to pipe, pipe (after what is held) to the client. */
static void
splice_pump(struct proxy *p)
{
	const unsigned fl = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
	size_t want;
	ssize_t n;
	bool moved = true;

	for (int turn = 0; turn < IO_TURNS && moved; turn++) {
		moved = false;
		if (p->left > 0 && p->piped < p->pipe_cap) {
			want = p->pipe_cap - p->piped;
			if (want > p->left)
				want = (size_t)p->left;
			n = splice(p->bfd, NULL, p->pipe[1], NULL, want, fl);
			if (n == 0) {
				fail(p, 502, "the response was cut short");
				return;
			}
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				fail(p, 502, "read: %s", strerror(errno));
				return;
			}
			if (n > 0) {
				p->left -= (uint64_t)n;
				p->piped += (size_t)n;
				p->last = loop_now_ms();
				moved = true;
			}
		}
		if (p->in.len > 0)
			n = send(p->sfd, p->in.p, p->in.len, MSG_NOSIGNAL);
		else if (p->piped > 0)
			n = splice(p->pipe[0], NULL, p->sfd, NULL, p->piped,
			    fl);
		else
			continue;
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			/* The client left: cut the response. */
			fail(p, 502, "the client left: %s", strerror(errno));
			return;
		}
		if (n > 0 && p->in.len > 0)
			buf_drain(&p->in, (size_t)n);
		else if (n > 0)
			p->piped -= (size_t)n;
		moved = moved || n > 0;
	}
	if (p->left == 0 && p->piped == 0 && p->in.len == 0) {
		p->spliced = true;
		done_backend(p);	/* stops the pump */
		p->waiting = false;
		http_reader_wake(p->rd);
		return;
	}
	/* Wait on the client while it has bytes to take, else the backend. */
	p->waiting = p->in.len == 0 && p->piped == 0;
	if (p->in.len > 0 || p->piped > 0)
		loop_add_fd(p->loop, p->sfd, LOOP_WRITE, on_splice, p);
	else
		loop_del(p->loop, p->sfd, NULL);
	if (p->left > 0 && p->piped < p->pipe_cap)
		loop_add_fd(p->loop, p->bfd, LOOP_READ, on_splice, p);
	else
		loop_del(p->loop, p->bfd, NULL);
}

static void
on_splice(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	(void)l; (void)fd; (void)zs; (void)rev;
	splice_pump(arg);
}

/* Give the client's socket back and drop the pipe; idempotent. */
static void
splice_stop(struct proxy *p)
{
	if (p->sfd >= 0) {
		loop_del(p->loop, p->sfd, NULL);
		p->sfd = -1;
	}
	if (p->pipe[0] >= 0) {
		close(p->pipe[0]);
		close(p->pipe[1]);
		p->pipe[0] = p->pipe[1] = -1;
	}
}

/* The backend sent more: wake the sleeping reader. */
static void
on_ready(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct proxy *p = arg;

	(void)zs; (void)rev;
	loop_del(l, fd, NULL);
	p->waiting = false;
	http_reader_wake(p->rd);
}

/* MHD is done with the response (sent, or the client left). */
static void
resp_done(void *arg)
{
	struct proxy *p = arg;

	p->rd = NULL;
	done_backend(p);
	put(p);
}

/* The backend was silent for the timeout. */
static void
on_timer(struct loop *l, uint64_t id, void *arg)
{
	struct proxy *p = arg;
	uint64_t now = loop_now_ms(), idle = now - p->last;

	(void)l; (void)id;
	p->timer = 0;
	if (p->state == ST_DONE || p->state == ST_TUNNEL)
		return;
	if (p->have_head && !p->waiting)
		idle = 0;	/* waiting on the client, not the backend */
	if (idle < p->timeout_ms) {
		p->timer = loop_timer_add(p->loop, p->timeout_ms - idle,
		    on_timer, p);
		return;
	}
	if (p->have_head)
		fail(p, 504, "no data for %u ms", p->timeout_ms);
	else
		fail(p, 504, "no response within %u ms", p->timeout_ms);
}

/* Request body bytes: queue them for the backend, pausing when full. */
static int
body_data(struct http_req *req, const char *d, size_t n, void *arg)
{
	struct proxy *p = arg;

	if (p->state == ST_DONE || p->bwrite_eof)
		return 0;		/* dropped: the backend is gone */
	/* Paused past OUT_HIGH, so only at shutdown can this fill up. */
	if (p->out.len + n + 32 > p->out.max) {
		fail(p, 502, "the backend does not take the request body");
		return -ENOBUFS;
	}
	if (p->chunked_req) {
		buf_addf(&p->out, "%zx\r\n", n);
		buf_add(&p->out, d, n);
		buf_adds(&p->out, "\r\n");
	} else
		buf_add(&p->out, d, n);
	if (p->out.len >= OUT_HIGH && !p->paused) {
		p->paused = true;
		http_req_pause(req);
	}
	watch(p);
	return 0;
}

/* The whole request is in: answer now, or when the head comes. */
static void
body_end(struct http_req *req, void *arg)
{
	struct proxy *p = arg;

	p->sink = false;
	p->ended = true;
	if (p->chunked_req && !p->bwrite_eof && p->state != ST_DONE)
		buf_adds(&p->out, "0\r\n\r\n");
	if (p->state == ST_DONE && !p->have_head) {
		/* Failed, and answered, mid-body: nothing to do. */
		put(p);
		return;
	}
	if (!p->have_head) {
		p->deferred = true;
		http_req_defer(req, req_cancel, p);
		watch(p);
		return;
	}
	(void)maybe_reply(p);
}

/* The request ended before its body did (or failed mid-body). */
static void
body_abort(void *arg)
{
	struct proxy *p = arg;

	p->sink = false;
	p->req = NULL;
	p->paused = false;
	close_backend(p);
	put(p);
}

/* The client left, or execd shuts down, while the head was awaited. */
static void
req_cancel(struct http_req *req, void *arg)
{
	struct proxy *p = arg;

	(void)req;
	p->deferred = false;
	p->req = NULL;
	close_backend(p);
	put(p);
}

/* The 101 is out: the client's socket is ours, tunnel both ways. */
static void
tunnel_up(struct http_upgrade *u, int fd, const char *extra, size_t n,
    void *arg)
{
	struct proxy *p = arg;

	p->up_pending = false;
	if (u == NULL || p->bfd < 0) {
		if (u != NULL)
			http_upgrade_close(u);
		close_backend(p);
		put(p);
		return;
	}
	p->u = u;
	p->cfd = fd;
	/* What the backend sent after its head goes to the client first. */
	buf_add(&p->toc, p->in.p != NULL ? p->in.p : "", p->in.len);
	buf_drain(&p->in, p->in.len);
	buf_add(&p->out, extra, n);
	if (p->beof && p->toc.len == 0) {
		tunnel_end(p);
		return;
	}
	watch(p);
}

static void
on_client(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct proxy *p = arg;
	ssize_t n;

	(void)l; (void)zs;
	if (rev & LOOP_WRITE) {
		for (int t = 0; t < IO_TURNS && p->toc.len > 0; t++) {
			n = send(fd, p->toc.p, p->toc.len, MSG_NOSIGNAL);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n < 0) {
				tunnel_end(p);
				return;
			}
			buf_drain(&p->toc, (size_t)n);
		}
		if (p->beof && p->toc.len == 0) {
			tunnel_end(p);
			return;
		}
	}
	if (rev & LOOP_READ) {
		for (int t = 0; t < IO_TURNS && p->out.len < TUNNEL_MAX; t++) {
			if (buf_reserve(&p->out, READ_CHUNK) < 0)
				break;
			n = recv(fd, p->out.p + p->out.len, READ_CHUNK, 0);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n <= 0) {
				p->ceof = true;
				break;
			}
			p->out.len += (size_t)n;
		}
		if (p->out.len > 0 && backend_write(p) < 0)
			return;
		if (p->ceof && p->out.len == 0) {
			tunnel_end(p);
			return;
		}
	}
	watch(p);
}

/* One side of the tunnel ended: close both. */
static void
tunnel_end(struct proxy *p)
{
	struct http_upgrade *u = p->u;

	if (u == NULL)
		return;
	loop_del(p->loop, p->cfd, NULL);
	p->cfd = -1;
	p->u = NULL;
	close_backend(p);
	http_upgrade_close(u);
	put(p);
}

static void
tunnel_shutdown(struct http_upgrade *u, void *arg)
{
	(void)u;
	tunnel_end(arg);
}

/* A token character of RFC 9110. */
static bool
tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("!#$%&'*+-.^_`|~",
	    c) != NULL);
}

/* Parse a response head; see proxy.h. */
int
proxy_head_parse(const char *p, size_t n, struct proxy_head *h)
{
	const char *line = p, *end = p + n, *nl, *e, *colon, *v;
	size_t ll;

	h->nhdr = 0;
	/* Whole only when an empty line is in. */
	for (;;) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (nl == NULL)
			return n > PROXY_HEAD_MAX ? -EPROTO : 0;
		if ((size_t)(nl + 1 - p) > PROXY_HEAD_MAX)
			return -EPROTO;
		e = nl > line && nl[-1] == '\r' ? nl - 1 : nl;
		ll = (size_t)(e - line);
		if (line == p) {
			/* HTTP/1.x SSS[ reason] */
			if (ll < 12 || strncmp(line, "HTTP/1.", 7) != 0 ||
			    (line[7] != '0' && line[7] != '1') ||
			    line[8] != ' ' || line[9] < '1' || line[9] > '5' ||
			    line[10] < '0' || line[10] > '9' ||
			    line[11] < '0' || line[11] > '9' ||
			    (ll > 12 && line[12] != ' '))
				return -EPROTO;
			h->minor = (unsigned)(line[7] - '0');
			h->status = (unsigned)((line[9] - '0') * 100 +
			    (line[10] - '0') * 10 + (line[11] - '0'));
		} else if (ll == 0) {
			h->len = (size_t)(nl + 1 - p);
			return (int)h->len;
		} else {
			if (h->nhdr == PROXY_HEADERS_MAX)
				return -EPROTO;
			colon = memchr(line, ':', ll);
			if (colon == NULL || colon == line)
				return -EPROTO;
			for (const char *c = line; c < colon; c++)
				if (!tchar((unsigned char)*c))
					return -EPROTO;
			for (const char *c = colon + 1; c < e; c++)
				if (*c == '\0' || *c == '\r')
					return -EPROTO;
			v = colon + 1;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			h->hdr[h->nhdr].name = line;
			h->hdr[h->nhdr].nlen = (size_t)(colon - line);
			h->hdr[h->nhdr].value = v;
			h->hdr[h->nhdr].vlen = (size_t)(e - v);
			h->nhdr++;
		}
		line = nl + 1;
	}
}

/* One step of the chunked decoder; see proxy.h. */
int
proxy_chunk_step(struct proxy_chunk *c, const char *p, size_t n,
    size_t *used, size_t *doff, size_t *dlen)
{
	const char *nl;
	size_t i;
	uint64_t v;
	int d;

	*used = *doff = *dlen = 0;
	switch (c->state) {
	case CH_SIZE:
	case CH_TRAILER:
	case CH_DATA_END:
		nl = memchr(p, '\n', n);
		if (nl == NULL)
			return n > CHUNK_LINE_MAX ? -EPROTO : 0;
		*used = (size_t)(nl + 1 - p);
		if (*used > CHUNK_LINE_MAX)
			return -EPROTO;
		if (c->state == CH_DATA_END) {
			if (!(*used == 1 || (*used == 2 && p[0] == '\r')))
				return -EPROTO;
			c->state = CH_SIZE;
			return 0;
		}
		if (c->state == CH_TRAILER) {
			if (*used == 1 || (*used == 2 && p[0] == '\r')) {
				c->state = CH_DONE;
				return 1;
			}
			return 0;	/* a trailer field: dropped */
		}
		for (i = 0, v = 0; i < *used; i++) {
			if (p[i] >= '0' && p[i] <= '9')
				d = p[i] - '0';
			else if (p[i] >= 'a' && p[i] <= 'f')
				d = p[i] - 'a' + 10;
			else if (p[i] >= 'A' && p[i] <= 'F')
				d = p[i] - 'A' + 10;
			else
				break;
			if (v >> 60)
				return -EPROTO;
			v = v * 16 + (uint64_t)d;
		}
		if (i == 0 || (p[i] != '\r' && p[i] != '\n' && p[i] != ';' &&
		    p[i] != ' ' && p[i] != '\t'))
			return -EPROTO;
		c->left = v;
		c->state = v == 0 ? CH_TRAILER : CH_DATA;
		return 0;
	case CH_DATA:
		if (n == 0)
			return 0;
		*dlen = n < c->left ? n : (size_t)c->left;
		*used = *dlen;
		c->left -= *dlen;
		if (c->left == 0)
			c->state = CH_DATA_END;
		return 0;
	case CH_DONE:
		return 1;
	}
	return -EPROTO;
}
