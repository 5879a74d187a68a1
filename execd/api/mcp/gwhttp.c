/*
 * gwhttp.c -- one POST of a JSON-RPC message to an MCP server over
 * loopback HTTP (MCP's Streamable HTTP transport, client side), for the
 * gateway (gateway.c).
 *
 * A new connection per message, "Connection: close": connect without
 * blocking, write the request, read the answer's head (proxy.h's
 * parser), then its body by length, chunks or to the end; an answer of
 * application/json is one message, one of text/event-stream a message
 * per event (its data lines), each handed on as it is whole.  A message
 * over GWHTTP_MSG_MAX ends the exchange as flooding.  Everything is on
 * the loop.  Loop thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../../util/buf.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../../transport/proxy.h"
#include "gwhttp.h"

enum framing { FR_EOF, FR_LENGTH, FR_CHUNKED };

struct gwhttp {
	struct loop		*loop;
	int			 fd;
	bool			 connected;
	bool			 head_done;
	bool			 sse;
	enum framing		 framing;
	uint64_t		 left;		/* FR_LENGTH */
	struct proxy_chunk	 chunk;
	int			 status;
	char			 session[256];
	struct buf		 out;		/* the request, not yet written */
	struct buf		 in;		/* read, not yet decoded */
	struct buf		 body;		/* decoded, not yet messages */
	struct buf		 data;		/* an event's data so far */
	char			 fail[128];	/* why it could not start */
	uint64_t		 t_fail;	/* reports fail on the loop */
	bool			 busy;		/* inside msg */
	bool			 aborted;	/* gwhttp_abort while busy */
	gwhttp_msg_fn		*msg;
	gwhttp_end_fn		*end;
	void			*arg;
};

static void	on_io(struct loop *, int, void *, int, void *);
static void	on_late(struct loop *, uint64_t, void *);
static void	finish(struct gwhttp *, const char *);

/* "http://HOST:PORT/path" into an address and the path; 0 or -EINVAL. */
static int
parse_url(const char *url, struct sockaddr_storage *ss, socklen_t *sl,
    const char **path)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	const char *p = url + strlen("http://");
	unsigned long port;
	char *end;

	memset(ss, 0, sizeof(*ss));
	if (strncmp(url, "http://", 7) != 0)
		return -EINVAL;
	if (strncmp(p, "[::1]:", 6) == 0) {
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		*sl = sizeof(*in6);
		p += 6;
	} else if (strncmp(p, "127.0.0.1:", 10) == 0 ||
	    strncmp(p, "localhost:", 10) == 0) {
		in4->sin_family = AF_INET;
		in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*sl = sizeof(*in4);
		p += 10;
	} else
		return -EINVAL;
	port = strtoul(p, &end, 10);
	if (end == p || port == 0 || port > 65535 ||
	    (*end != '\0' && *end != '/'))
		return -EINVAL;
	if (ss->ss_family == AF_INET6)
		in6->sin6_port = htons((uint16_t)port);
	else
		in4->sin_port = htons((uint16_t)port);
	*path = *end == '\0' ? "/" : end;
	return 0;
}

/* Start a POST; see gwhttp.h. */
struct gwhttp *
gwhttp_post(struct loop *loop, const char *url, const char *session,
    const char *proto, const char *body, size_t n, gwhttp_msg_fn *msg,
    gwhttp_end_fn *end, void *arg)
{
	struct gwhttp *h = xcalloc(1, sizeof(*h));
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	const char *path;

	h->loop = loop;
	h->fd = -1;
	h->msg = msg;
	h->end = end;
	h->arg = arg;
	buf_init(&h->out);
	buf_init(&h->in);
	buf_init(&h->body);
	buf_init(&h->data);
	if (parse_url(url, &ss, &sl, &path) < 0) {
		snprintf(h->fail, sizeof(h->fail), "not a loopback http:// "
		    "URL");
		goto fail;
	}
	buf_addf(&h->out, "POST %s HTTP/1.1\r\nHost: %s\r\n"
	    "Content-Type: application/json\r\n"
	    "Accept: application/json, text/event-stream\r\n"
	    "MCP-Protocol-Version: %s\r\nConnection: close\r\n"
	    "Content-Length: %zu\r\n", path, ss.ss_family == AF_INET6 ?
	    "[::1]" : "127.0.0.1", proto, n);
	if (session != NULL)
		buf_addf(&h->out, "Mcp-Session-Id: %s\r\n", session);
	buf_add(&h->out, "\r\n", 2);
	buf_add(&h->out, body, n);
	h->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (h->fd < 0 || (connect(h->fd, (struct sockaddr *)&ss, sl) < 0 &&
	    errno != EINPROGRESS)) {
		snprintf(h->fail, sizeof(h->fail), "connect: %s",
		    strerror(errno));
		goto fail;
	}
	loop_add_fd(loop, h->fd, LOOP_WRITE, on_io, h);
	return h;
fail:
	/* Reported from the loop, never from inside the caller. */
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	h->t_fail = loop_timer_add(loop, 0, on_late, h);
	return h;
}

/* The failure of a POST that could not start, reported on the loop. */
static void
on_late(struct loop *l, uint64_t id, void *arg)
{
	struct gwhttp *h = arg;

	(void)l;
	(void)id;
	h->t_fail = 0;
	finish(h, h->fail);
}

static void
destroy(struct gwhttp *h)
{
	if (h->t_fail != 0)
		loop_timer_cancel(h->loop, h->t_fail);
	if (h->fd >= 0) {
		loop_del(h->loop, h->fd, NULL);
		close(h->fd);
	}
	buf_reset(&h->out);
	buf_reset(&h->in);
	buf_reset(&h->body);
	buf_reset(&h->data);
	free(h);
}

/* Abandon it: no callback runs again. */
void
gwhttp_abort(struct gwhttp *h)
{
	if (h == NULL)
		return;
	if (h->busy)
		h->aborted = true;	/* on_io frees it after msg */
	else
		destroy(h);
}

/* The exchange is over: end(arg, status, why) once, then h is freed. */
static void
finish(struct gwhttp *h, const char *why)
{
	h->end(h->arg, h->status, why);
	destroy(h);
}

/* One message to msg; false when it aborted the exchange. */
static bool
hand_on(struct gwhttp *h, const char *p, size_t n)
{
	h->busy = true;
	h->msg(h->arg, h->session[0] != '\0' ? h->session : NULL, p, n);
	h->busy = false;
	return !h->aborted;
}

/* The head: status, framing, content type, session. */
static int
take_head(struct gwhttp *h)
{
	struct proxy_head ph;
	int n = proxy_head_parse(h->in.p, h->in.len, &ph);

	if (n <= 0)
		return n;
	h->status = (int)ph.status;
	h->framing = FR_EOF;
	for (size_t i = 0; i < ph.nhdr; i++) {
#define IS(s)	(ph.hdr[i].nlen == strlen(s) && \
	    strncasecmp(ph.hdr[i].name, s, ph.hdr[i].nlen) == 0)
		if (IS("content-length")) {
			h->framing = FR_LENGTH;
			h->left = strtoull(ph.hdr[i].value, NULL, 10);
		} else if (IS("transfer-encoding") && ph.hdr[i].vlen >= 7 &&
		    strncasecmp(ph.hdr[i].value + ph.hdr[i].vlen - 7,
		    "chunked", 7) == 0) {
			h->framing = FR_CHUNKED;
		} else if (IS("content-type")) {
			h->sse = ph.hdr[i].vlen >= 17 && strncasecmp(
			    ph.hdr[i].value, "text/event-stream", 17) == 0;
		} else if (IS("mcp-session-id") && ph.hdr[i].vlen <
		    sizeof(h->session)) {
			memcpy(h->session, ph.hdr[i].value, ph.hdr[i].vlen);
			h->session[ph.hdr[i].vlen] = '\0';
		}
#undef IS
	}
	buf_drain(&h->in, (size_t)n);
	h->head_done = true;
	if (h->status == 202 || h->status == 204)
		h->framing = h->framing == FR_EOF ? FR_LENGTH : h->framing;
	return n;
}

/* Decoded body bytes into h->body; 1 once the body has ended, -1 bad. */
static int
decode(struct gwhttp *h, bool eof)
{
	size_t used, off, len, take;
	int rc;

	while (h->in.len > 0) {
		if (h->framing == FR_CHUNKED) {
			rc = proxy_chunk_step(&h->chunk, h->in.p, h->in.len,
			    &used, &off, &len);
			if (rc < 0)
				return -1;
			buf_add(&h->body, h->in.p + off, len);
			buf_drain(&h->in, used);
			if (rc == 1)
				return 1;
			if (used == 0)
				break;
		} else {
			take = h->in.len;
			if (h->framing == FR_LENGTH && take > h->left)
				take = (size_t)h->left;
			buf_add(&h->body, h->in.p, take);
			buf_drain(&h->in, h->in.len);	/* past length: junk */
			if (h->framing == FR_LENGTH)
				h->left -= take;
		}
	}
	if (h->framing == FR_LENGTH && h->left == 0)
		return 1;
	return eof ? 1 : 0;
}

/*
 * Messages out of h->body; -1 when one is over GWHTTP_MSG_MAX, -2 when
 * msg aborted the exchange.
 */
static int
messages(struct gwhttp *h, bool done)
{
	size_t used;
	int rc;

	if (!h->sse) {
		if (h->body.len > GWHTTP_MSG_MAX)
			return -1;
		if (done && h->body.len > 0 && h->status / 100 == 2 &&
		    !hand_on(h, h->body.p, h->body.len))
			return -2;
		return 0;
	}
	while ((rc = gwhttp_sse_line(h->body.p, h->body.len, &h->data,
	    &used)) >= 0) {
		buf_drain(&h->body, used);
		if (rc == 1) {
			if (!hand_on(h, h->data.p, h->data.len))
				return -2;
			buf_truncate(&h->data, 0);
		}
		if (h->data.len > GWHTTP_MSG_MAX)
			return -1;
	}
	return h->body.len > GWHTTP_MSG_MAX ? -1 : 0;
}

/* One line of an event stream; see gwhttp.h. */
int
gwhttp_sse_line(const char *p, size_t n, struct buf *data, size_t *used)
{
	const char *nl;
	size_t len, skip;

	*used = 0;
	/* An empty body's pointer is NULL, which memchr may not take. */
	if (n == 0 || (nl = memchr(p, '\n', n)) == NULL)
		return -1;
	*used = (size_t)(nl - p) + 1;
	len = (size_t)(nl - p);
	if (len > 0 && p[len - 1] == '\r')
		len--;
	if (len == 0)
		return data->len > 0 ? 1 : 0;
	if (len >= 5 && memcmp(p, "data:", 5) == 0) {
		skip = len > 5 && p[5] == ' ' ? 6 : 5;
		if (data->len > 0)
			buf_add(data, "\n", 1);
		buf_add(data, p + skip, len - skip);
	}
	return 0;
}

static void
on_io(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct gwhttp *h = arg;
	char buf[65536];
	ssize_t n;
	int err = 0, rc, mr;
	socklen_t el = sizeof(err);

	(void)l;
	(void)zs;
	(void)rev;
	if (!h->connected) {
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
			err = errno;
		if (err != 0) {
			snprintf(buf, sizeof(buf), "connect: %s",
			    strerror(err));
			finish(h, buf);
			return;
		}
		h->connected = true;
	}
	if (h->out.len > 0) {
		n = write(fd, h->out.p, h->out.len);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			snprintf(buf, sizeof(buf), "write: %s",
			    strerror(errno));
			finish(h, buf);
			return;
		}
		if (n > 0)
			buf_drain(&h->out, (size_t)n);
		if (h->out.len == 0)
			loop_add_fd(h->loop, fd, LOOP_READ, on_io, h);
		return;
	}
	n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0)
		buf_add(&h->in, buf, (size_t)n);
	if (!h->head_done) {
		if ((rc = take_head(h)) < 0 || (rc == 0 && n <= 0)) {
			finish(h, rc < 0 ? "a malformed answer" : "the "
			    "connection closed before an answer");
			return;
		}
		if (rc == 0)
			return;
	}
	rc = decode(h, n <= 0);
	mr = rc < 0 ? 0 : messages(h, rc == 1);
	if (mr == -2) {
		destroy(h);
		return;
	}
	if (rc < 0 || mr < 0) {
		finish(h, rc < 0 ? "a malformed chunked body" : "it flooded: "
		    "a message over 8 MiB");
		return;
	}
	if (rc == 1)
		finish(h, NULL);
}
