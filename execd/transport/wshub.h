/*
 * wshub.h -- a hub of WebSocket clients of one source: a terminal's
 * writer and viewers today, a kernel's channels or a screen's viewers
 * tomorrow.
 *
 * The hub holds any number of clients, each a ws.h socket joined either
 * from an HTTP request (the hub answers the 101 through ws_upgrade) or
 * from a socket already speaking WebSocket.  It sends a message to one
 * client or to every listening one; each client has a cap on what may
 * wait to be sent to it, given at join, and a client a send would take
 * past it is closed with the close code and reason its owner chose, the
 * others going on.  Clients are freed in one place, the hub's sweep on
 * the next turn of the loop, never inside a callback of their own.  It
 * knows nothing of what the messages mean.  Loop thread only.
 */
#ifndef EXECD_WSHUB_H
#define EXECD_WSHUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ws.h"

struct http_req;
struct loop;
struct wshub;
struct wshub_client;

struct wshub_conf {
	struct ws_conf	 ws;		/* every client's; max_queue: see join */
	uint16_t	 slow_code;	/* the close of a client over its cap */
	const char	*slow_reason;	/* copied, under 123 bytes */
};

/*
 * The callbacks, each with the arg its client joined with; they run from
 * the loop, never inside a wshub_send(), wshub_broadcast() or
 * wshub_close() of the owner's, and may call any function here, free
 * included.
 *
 * open: the 101 of a client joined from a request is out; it may be sent
 * to.  Once at most; never for wshub_join_fd().
 */
typedef void	wshub_open_cb(struct wshub_client *, void *arg);
/* A whole message from the client (WS_TEXT or WS_BINARY), borrowed. */
typedef void	wshub_msg_cb(struct wshub_client *, int type, const char *p,
		    size_t n, void *arg);
/*
 * The client left: its socket ended, its 101 never went out, or execd is
 * shutting down.  Called once (never after wshub_free()); nothing is
 * delivered after it, the client must not be used again, and the hub
 * frees it later.
 */
typedef void	wshub_leave_cb(struct wshub_client *, void *arg);

/*
 * A hub whose clients run on loop under conf (copied), named in log lines
 * by name (such as "pty=ID"; copied).  Never NULL.
 */
struct wshub	*wshub_new(struct loop *loop, const struct wshub_conf *conf,
		    const char *name, wshub_open_cb *open, wshub_msg_cb *msg,
		    wshub_leave_cb *leave);
/*
 * The owner lets go: no callback fires again, every client still there is
 * closed (1001), and the hub goes once the last one is done.  Safe from
 * inside a callback.  NULL ok.
 */
void		 wshub_free(struct wshub *);

/*
 * Answer req's WebSocket handshake (ws_upgrade) and join the client once
 * its 101 is out, with max_queue bytes that may wait to be sent to it:
 * open then fires, or leave if the 101 never goes out.  0 with *out set;
 * -EINVAL if req is no handshake (nothing answered, no callback).
 */
int		 wshub_join_req(struct wshub *, struct http_req *req,
		    size_t max_queue, void *arg, struct wshub_client **out);
/* wshub_join_req() with a subprotocol named in the 101 (NULL: none). */
int		 wshub_join_req_protocol(struct wshub *, struct http_req *req,
		    const char *protocol, size_t max_queue, void *arg,
		    struct wshub_client **out);
/*
 * Join a socket that speaks WebSocket already (server side; fd
 * non-blocking, extra: n bytes read from it before, copied); the hub
 * takes fd and closes it when the client is freed.  Never NULL.
 */
struct wshub_client *wshub_join_fd(struct wshub *, int fd, const char *extra,
		    size_t n, size_t max_queue, void *arg);

/*
 * Queue one message, hdr (hn bytes, may be 0) then p (n bytes), for one
 * client.  0; -ENOTCONN before its 101 is out; -EPIPE once it is
 * closing; -ENOBUFS if it would pass the client's cap, which then closes
 * the client with the hub's slow code (no callback runs meanwhile).
 */
int		 wshub_send(struct wshub_client *, int type, const void *hdr,
		    size_t hn, const void *p, size_t n);
/* wshub_send() to every listening client; how many took it. */
size_t		 wshub_broadcast(struct wshub *, int type, const void *hdr,
		    size_t hn, const void *p, size_t n);
/* Whether the client gets broadcasts (not at first; off once closing). */
void		 wshub_listen(struct wshub_client *, bool on);
bool		 wshub_listening(const struct wshub_client *);
/*
 * Close the client with code and reason (ws_close): what is queued goes
 * first; leave follows when the socket is done.  Before its 101 is out,
 * the close is sent as soon as it is, and open does not fire.
 */
void		 wshub_close(struct wshub_client *, uint16_t code,
		    const char *reason);

/* The client after c (NULL: the first) among those not yet left. */
struct wshub_client *wshub_next(struct wshub *, struct wshub_client *c);
/* How many clients have joined and not yet left. */
size_t		 wshub_count(const struct wshub *);
/* The arg the client joined with. */
void		*wshub_arg(const struct wshub_client *);

#endif
