/*
 * proxy.h -- the reverse proxy behind /proxy/{port}/{path}: one request
 * forwarded to a backend on 127.0.0.1, its response streamed back, or a
 * WebSocket upgrade tunnelled both ways.
 *
 * Everything is non-blocking on the loop.  The request body is forwarded
 * as it arrives and paused while the backend does not take it; the
 * response is pushed to the client as the backend produces it, and the
 * backend is not read while the client's queue (--stream-buffer) is full.
 * Backend failures before the response head are answered 502 (504 when
 * the backend is silent for the timeout); after it, the response is cut
 * short.  Connections a response left clean are kept, a few per port,
 * for the next request without a body.  Also here, pure: the parser of a response head and the decoder
 * of a chunked body.  Loop thread only.
 */
#ifndef EXECD_PROXY_H
#define EXECD_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_req;

#define PROXY_HEAD_MAX		(64u << 10)	/* a response head */
#define PROXY_HEADERS_MAX	128		/* ... its header lines */

struct proxy_opts {
	uint16_t	 port;		/* on 127.0.0.1 */
	const char	*target;	/* "/path?query", sent as is */
	unsigned	 timeout_ms;	/* backend silence tolerated; 0: none */
};

/*
 * From a route handler of an HTTP_R_STREAM route: connect to the backend
 * and take over req, which is answered from here (502 at once when the
 * backend cannot be reached).
 */
void	proxy_start(struct http_req *, const struct proxy_opts *);

/* A parsed response head: names and values point into the input. */
struct proxy_head {
	unsigned	 minor;		/* HTTP/1.minor */
	unsigned	 status;
	size_t		 len;		/* bytes of the head, blank line too */
	size_t		 nhdr;
	struct {
		const char	*name, *value;
		size_t		 nlen, vlen;
	}		 hdr[PROXY_HEADERS_MAX];
};

/*
 * Parse a response head at the start of p: its length (> 0) with h
 * filled, 0 when more bytes are needed, -EPROTO when it is malformed or
 * longer than PROXY_HEAD_MAX or PROXY_HEADERS_MAX lines.  Pure.
 */
int	proxy_head_parse(const char *p, size_t n, struct proxy_head *h);

/* The decoder of a chunked body; zero it to start. */
struct proxy_chunk {
	int		 state;
	uint64_t	 left;		/* payload bytes left in this chunk */
};

/*
 * One step over chunked framing in p: *used bytes consumed, of which
 * *dlen bytes of payload start at p + *doff (0 if none).  1 when the
 * body (trailers too) has ended, 0 otherwise (*used 0: more bytes are
 * needed), -EPROTO on a malformed body.  Pure.
 */
int	proxy_chunk_step(struct proxy_chunk *, const char *p, size_t n,
	    size_t *used, size_t *doff, size_t *dlen);

#endif
