/*
 * kp_sock.h -- the ZeroMQ work both ends of a kernel connection share:
 * execd's side (kp_chan.c, which connects) and a kernel's (kp_kernel.c,
 * which binds).  Making a channel's socket, giving up on it with a
 * message, sending a message whole and throwing away the rest of one.
 * Private to kernelproto; any thread, one thread per socket (ZeroMQ's
 * rule).
 */
#ifndef KP_SOCK_H
#define KP_SOCK_H

#include <stddef.h>

#include "kp_connfile.h"
#include "kp_msg.h"

/*
 * A ZeroMQ socket of type for channel c of conn, with a linger of 0
 * (pending messages are dropped at close), into *out; its endpoint into
 * ep.  0, or -ENAMETOOLONG (endpoint over eplen) or -errno from ZeroMQ,
 * with a message in err.
 */
int	kp_sock_new(void *zctx, int type, const struct kp_conn *conn,
	    enum kp_chan_id c, void **out, char *ep, size_t eplen, char *err,
	    size_t errlen);
/*
 * A ZeroMQ call on s (channel c, at ep) failed: errno's message into err,
 * s closed; returns -errno.
 */
int	kp_sock_fail(void *s, enum kp_chan_id c, const char *ep, char *err,
	    size_t errlen);
/*
 * Encode m, sign it with conn's key and send every frame without
 * blocking.  0, -EIO (it cannot be encoded) or -errno of the send
 * (-EAGAIN: nothing was queued).
 */
int	kp_sock_send(void *s, const struct kp_conn *conn,
	    const struct kp_msg *m);
/* Read the rest of a multipart message from s and throw it away. */
void	kp_sock_drain(void *s);

#endif
