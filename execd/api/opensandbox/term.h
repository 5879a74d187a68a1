/*
 * term.h -- the clients of a terminal session (pty.h): one writer, whose
 * input reaches the shell, and any number of viewers, over WebSocket.
 *
 * A terminal is made for a pty and found by the pty's id; it watches the
 * pty (the only watcher), fans its output out to its clients through a
 * wshub.h hub, and outlives the pty until its last client has left.  On
 * connect a client gets the retained output from since as one replay
 * frame (0x03, 8-byte big-endian offset, bytes), then {"type":
 * "connected"}, then live output as 0x01 (terminal or stdout) and 0x02
 * (stderr in pipe mode) frames.  A writer's first connect starts the
 * shell; a second writer is refused unless it takes over, which closes
 * the old one with 4001; a viewer that comes before the shell started
 * waits for a writer.  When the shell exits every client gets
 * {"type":"exit","exit_code":N} and a close.  A client that lets more
 * than the replay size plus 4 MiB pile up is closed with 4002.  Also
 * here, pure and fuzzed: what a client sends (term_opts_parse,
 * term_msg_parse).  Loop thread only.
 */
#ifndef EXECD_TERM_H
#define EXECD_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../../../util/buf.h"

struct http_req;
struct loop;
struct pty;
struct term;

/* What a client asks for when it connects (the query of its request). */
struct term_opts {
	uint64_t	 since;		/* replay from this offset */
	bool		 viewer;	/* its input is ignored */
	bool		 takeover;	/* a writer that closes the one there */
	bool		 pipe;		/* the shell, if it starts, on pipes */
};

/* What a client's message asks the shell for. */
enum term_msg_op {
	TERM_MSG_NONE,		/* nothing (but see reply) */
	TERM_MSG_STDIN,		/* write p, n */
	TERM_MSG_SIGNAL,	/* send sig */
	TERM_MSG_BADSIG,	/* a signal we do not send: p names it, or NULL */
	TERM_MSG_RESIZE		/* cols x rows, each 1..65535 */
};

struct term_msg {
	enum term_msg_op op;
	const char	*p;		/* borrowed from the input or json */
	size_t		 n;
	int		 sig;
	unsigned	 cols, rows;
	struct buf	 reply;		/* a text frame to answer with, or empty */
	json_t		*json;		/* private: what p may point into */
};

/*
 * Terminal clients for p, on loop, keeping replay bytes of output (as
 * p's ring does): becomes p's watcher.  Freed by itself once p is gone
 * and its last client left.  Never NULL.
 */
struct term	*term_new(struct loop *loop, struct pty *p, size_t replay);
/* The terminal of the pty with this id, or NULL. */
struct term	*term_find(const char *id);
/* Whether a writer is attached, or on its way (its 101 not yet out). */
bool		 term_busy(const struct term *);
/*
 * Connect the client of req, a valid WebSocket handshake (ws_handshake),
 * as o says: 101, then the rest once it is out.  0, or -EINVAL if req is
 * no handshake.
 */
int		 term_connect(struct term *, struct http_req *req,
		    const struct term_opts *o);

/*
 * Read the query values of a connect (each NULL when absent): since, the
 * decimal offset (anything else is 0, as upstream); viewer and takeover
 * set only by exactly "1"; pipe only by pty exactly "0".
 */
void		 term_opts_parse(struct term_opts *o, const char *since,
		    const char *viewer, const char *takeover, const char *pty);
/*
 * Parse a client's message of type WS_TEXT (a JSON control frame: stdin,
 * signal, resize, ping) or WS_BINARY (0x00 then bytes for stdin) into m,
 * for a viewer (whose input goes nowhere) or the writer.  Input that does
 * not parse is ignored, as upstream; a ping's pong and an unknown type's
 * error go in m->reply.  Always fills m; term_msg_reset() it after.
 */
void		 term_msg_parse(struct term_msg *m, bool viewer, int type,
		    const char *p, size_t n);
/* Free what m holds. */
void		 term_msg_reset(struct term_msg *m);

#endif
