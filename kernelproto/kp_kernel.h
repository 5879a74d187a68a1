/*
 * kp_kernel.h -- the kernel's side of the five ZeroMQ sockets.
 *
 * kp_chan.h is the client's side; this is its mirror, for a kernel
 * written on kernelproto (execd-repl-kernel): shell, control and stdin
 * are ROUTER sockets (a reply goes back to the identities of its
 * request), iopub is PUB, hb is REP and echoes what it gets.  The
 * sockets bind to the endpoints of a connection file.  Like kp_chan.c,
 * this file and kp_chan.c are the only ones in kernelproto that use
 * libzmq.  Sends and receives never block; callers poll the sockets
 * themselves (kp_kernel_socket).  One thread at a time.
 */
#ifndef KP_KERNEL_H
#define KP_KERNEL_H

#include <stddef.h>

#include <jansson.h>

#include "kp_connfile.h"
#include "kp_msg.h"

struct kp_kernel;

/*
 * Bind the five sockets of conn.  max_frame caps each received frame.
 * 0 with *out set, or -errno with a message in err.
 */
int	kp_kernel_open(void *zctx, const struct kp_conn *conn,
	    size_t max_frame, struct kp_kernel **out, char *err,
	    size_t errlen);
void	kp_kernel_close(struct kp_kernel *);	/* NULL ok */

/* The socket of channel c (for polling), borrowed. */
void	*kp_kernel_socket(struct kp_kernel *, enum kp_chan_id c);
/* The kernel's own session id, for the headers it sends. */
const char *kp_kernel_session(const struct kp_kernel *);

/*
 * One request from c (shell, control or stdin) without blocking: 0 with
 * *out set (its idents are the sender's); -EAGAIN when none waits;
 * -EBADMSG when one was dropped (unsigned, malformed, too large: call
 * again for the next).
 */
int	kp_kernel_recv(struct kp_kernel *, enum kp_chan_id c,
	    struct kp_msg **out);
/* Echo every heartbeat waiting on hb.  0 or -errno. */
int	kp_kernel_hb(struct kp_kernel *);

/*
 * Send msg_type with content (stolen; NULL: {}) on c to the sender of
 * req, req's header as the parent.  0 or -errno.
 */
int	kp_kernel_reply(struct kp_kernel *, enum kp_chan_id c,
	    const struct kp_msg *req, const char *msg_type, json_t *content);
/*
 * Publish msg_type with content (stolen) on iopub, parent's header (NULL:
 * none) as the parent and the topic "kernel.<session>.<msg_type>".
 */
int	kp_kernel_publish(struct kp_kernel *, const struct kp_msg *parent,
	    const char *msg_type, json_t *content);

#endif
