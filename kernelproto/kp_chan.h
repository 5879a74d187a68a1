/*
 * kp_chan.h -- one kernel's five ZeroMQ sockets, the only place in
 * kernelproto that uses libzmq.
 *
 * shell, control and stdin are DEALER sockets (shell and stdin share a
 * routing id, the session, so the kernel can ask for input); iopub is a
 * SUB socket subscribed to everything; hb is a REQ socket, re-created
 * after a missed beat because REQ is strictly send-then-receive.  Every
 * socket has ZMQ_LINGER 0.  Sends and receives never block.  Callers poll
 * the sockets themselves (kp_chan_socket).  One thread at a time.
 */
#ifndef KP_CHAN_H
#define KP_CHAN_H

#include <stddef.h>

#include "kp_connfile.h"
#include "kp_msg.h"

struct kp_chan;

/* Messages dropped on receipt, by reason (KP_WIRE_E*; 0: too many frames). */
struct kp_chan_stats {
	unsigned long	dropped[6];
};

/*
 * Connect to the kernel described by conn.  max_frame caps every received
 * frame.  0 with *out set, or -errno with a message in err.
 */
int	kp_chan_open(void *zctx, const struct kp_conn *conn,
	    const char *session, size_t max_frame, struct kp_chan **out,
	    char *err, size_t errlen);
void	kp_chan_close(struct kp_chan *);	/* NULL ok */

/* The socket of channel c (for polling), borrowed. */
void	*kp_chan_socket(struct kp_chan *, enum kp_chan_id c);

/* Sign and send m on c (not hb).  0, -EAGAIN, or -errno. */
int	kp_chan_send(struct kp_chan *, enum kp_chan_id c,
	    const struct kp_msg *m);
/*
 * Receive one message from c (not hb) without blocking.  0 with *out set;
 * -EAGAIN when nothing is waiting; -EBADMSG when a message was dropped
 * (counted in the stats; call again for the next).  A stream message over
 * 1 MiB comes out as several with the same header, each holding about
 * 1 MiB of its text, in order; a message whose content or buffers pass
 * max_frame comes without them, counted in m->dropped (kp_wire.h).
 */
int	kp_chan_recv(struct kp_chan *, enum kp_chan_id c, struct kp_msg **out);

/* Heartbeat: send a ping (0, or -EAGAIN if one is outstanding). */
int	kp_chan_hb_ping(struct kp_chan *);
/* 0 if the pong arrived (and one may ping again), -EAGAIN if not yet. */
int	kp_chan_hb_pong(struct kp_chan *);
/* After a missed pong: drop the REQ socket and connect a new one. */
int	kp_chan_hb_reset(struct kp_chan *);

const struct kp_chan_stats *kp_chan_stats(const struct kp_chan *);

#endif
