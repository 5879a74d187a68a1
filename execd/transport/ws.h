/*
 * ws.h -- one server-side WebSocket on a raw, non-blocking socket.
 *
 * The framing is wsframe.h's (pure); this module only moves bytes between
 * the socket and the codec on the loop, answers pings and closes, watches
 * for write readiness only while something is queued, caps what may wait
 * to be sent, pings an idle peer and gives up on a silent one.  It never
 * closes the socket: when the conversation is over it says so, and the
 * owner hands the socket back to whoever gave it (http_upgrade_close).
 * Also here: the opening handshake, checked and answered with its 101 over
 * an HTTP request (ws_handshake, ws_upgrade), so that no route computes
 * Sec-WebSocket-Accept or builds the 101 itself; the accept value alone is
 * pure.  Loop thread only.
 */
#ifndef EXECD_WS_H
#define EXECD_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

struct loop;
struct ws;

#define WS_TEXT		1
#define WS_BINARY	2

/* Close codes we send. */
#define WS_CLOSE_NORMAL		1000
#define WS_CLOSE_GOING_AWAY	1001
#define WS_CLOSE_TOO_SLOW	4002	/* the client did not read */
#define WS_CLOSE_TAKEN_OVER	4001

/* Length of an accept value with its NUL (base64 of a SHA-1). */
#define WS_ACCEPT_LEN	29

/* A whole message from the peer (WS_TEXT or WS_BINARY), borrowed. */
typedef void ws_msg_cb(struct ws *, int type, const char *p, size_t n,
    void *arg);
/*
 * The conversation is over (close handshake done, the peer went away or
 * fell silent, an I/O or protocol error).  Called once; nothing is sent
 * or delivered after it.  The owner must not ws_free() from inside it.
 */
typedef void ws_end_cb(struct ws *, void *arg);

struct ws_conf {
	size_t		 max_queue;	/* bytes that may wait to be sent */
	size_t		 max_msg;	/* largest message from the peer */
	unsigned	 ping_ms;	/* ping this often; 0: never */
	unsigned	 idle_ms;	/* end if unheard this long; 0: never */
	unsigned	 linger_ms;	/* how long to await the peer's close */
};

/*
 * Speak WebSocket (server side) on fd, which must be non-blocking;
 * extra (n bytes, copied) were read from it already.  Never NULL.
 */
struct ws	*ws_new(struct loop *loop, int fd, const char *extra, size_t n,
		    const struct ws_conf *conf, ws_msg_cb *msg, ws_end_cb *end,
		    void *arg);
/* Stop watching and free; the socket stays open.  NULL ok. */
void		 ws_free(struct ws *);

/*
 * Queue one message of type made of hdr (hn bytes, may be 0) then p (n
 * bytes), and send what the socket takes now.  0; -ENOBUFS if it would
 * take the queue past max_queue (nothing is queued); -EPIPE once closing
 * or over.
 */
int		 ws_send(struct ws *, int type, const void *hdr, size_t hn,
		    const void *p, size_t n);
/*
 * Start the close handshake with code and reason (under 123 bytes): what
 * is queued goes first, then the close frame; the end comes when the
 * peer answers, or after linger_ms.  Messages from the peer are dropped
 * from now on.  Later calls do nothing.
 */
void		 ws_close(struct ws *, uint16_t code, const char *reason);
/* Bytes queued and not yet sent. */
size_t		 ws_queued(const struct ws *);
/* True once ws_close() was called or the conversation ended. */
bool		 ws_closing(const struct ws *);

/*
 * The Sec-WebSocket-Accept value for a client's Sec-WebSocket-Key (which
 * must be the base64 of 16 bytes) into out.  0 or -EINVAL.
 */
int		 ws_accept_key(const char *key, char out[WS_ACCEPT_LEN]);
/* Whether a comma-separated header value lists token (any case). */
bool		 ws_header_has(const char *value, const char *token);

/*
 * Whether req opens a WebSocket (RFC 6455 4.2.1: Upgrade: websocket,
 * Connection: upgrade, version 13, a valid key).  0, or -EINVAL with *why
 * (a static string) saying what is missing.
 */
int		 ws_handshake(struct http_req *req, const char **why);
/*
 * Answer req's opening handshake: 101 with Upgrade: websocket and its
 * Sec-WebSocket-Accept, then up and shutdown as http_reply_upgrade() says
 * (up gets the socket once the 101 is out, for ws_new()).  0; -EINVAL if
 * req is no handshake (ws_handshake), and then nothing is answered and no
 * callback fires.
 */
int		 ws_upgrade(struct http_req *req, http_upgrade_cb *up,
		    http_upgrade_shutdown_cb *shutdown, void *arg);
/*
 * ws_upgrade() answering with Sec-WebSocket-Protocol: protocol (NULL:
 * none), one of those the client offered (ws_header_has() on its
 * Sec-WebSocket-Protocol), chosen by the caller.
 */
int		 ws_upgrade_protocol(struct http_req *req,
		    const char *protocol, http_upgrade_cb *up,
		    http_upgrade_shutdown_cb *shutdown, void *arg);

#endif
