/*
 * kp_chan.c -- the ZeroMQ side of a kernel connection.
 *
 * This file moves frames between sockets and kp_wire; it decides nothing
 * about what messages mean.  Received messages that fail kp_wire_decode
 * (no delimiter, bad signature, oversized frame, bad JSON) are counted and
 * dropped here, so callers only ever see well-formed, signed messages.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "kp_chan.h"
#include "kp_wire.h"

#define MAX_FRAMES	64	/* identities + 6 + buffers, generously */

struct kp_chan {
	void			*zctx;
	void			*sock[KP_NCHAN];
	struct kp_conn		 conn;
	char			*session;
	size_t			 max_frame;
	bool			 hb_waiting;
	struct kp_chan_stats	 stats;
};

static int	open_socket(struct kp_chan *, enum kp_chan_id, char *, size_t);

static void *
xalloc(size_t n)
{
	void *p = calloc(1, n);

	if (p == NULL)
		abort();
	return p;
}

static int
open_socket(struct kp_chan *ch, enum kp_chan_id c, char *err, size_t errlen)
{
	static const int types[KP_NCHAN] = {
		[KP_SHELL] = ZMQ_DEALER, [KP_IOPUB] = ZMQ_SUB,
		[KP_STDIN] = ZMQ_DEALER, [KP_CONTROL] = ZMQ_DEALER,
		[KP_HB] = ZMQ_REQ,
	};
	char ep[512];
	void *s;
	int zero = 0, ivl = 10, e;

	if (kp_conn_endpoint(&ch->conn, c, ep, sizeof(ep)) < 0) {
		snprintf(err, errlen, "%s endpoint too long", kp_chan_name(c));
		return -ENAMETOOLONG;
	}
	if ((s = zmq_socket(ch->zctx, types[c])) == NULL)
		goto fail;
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	/*
	 * We connect before the kernel has bound: retry every 10 ms rather
	 * than libzmq's 100 ms, which would add up to a tenth of a second
	 * to every kernel start.
	 */
	zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &ivl, sizeof(ivl));
	if (c == KP_IOPUB && zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0) < 0)
		goto fail;
	/* The kernel answers input requests to the shell's routing id. */
	if ((c == KP_SHELL || c == KP_STDIN) && zmq_setsockopt(s,
	    ZMQ_ROUTING_ID, ch->session, strlen(ch->session)) < 0)
		goto fail;
	if (zmq_connect(s, ep) < 0)
		goto fail;
	ch->sock[c] = s;
	return 0;
fail:
	e = errno;
	snprintf(err, errlen, "%s socket (%s): %s", kp_chan_name(c), ep,
	    zmq_strerror(e));
	if (s != NULL)
		zmq_close(s);
	return -e;
}

/* Connect all five channels. */
int
kp_chan_open(void *zctx, const struct kp_conn *conn, const char *session,
    size_t max_frame, struct kp_chan **out, char *err, size_t errlen)
{
	struct kp_chan *ch = xalloc(sizeof(*ch));
	int rc;

	ch->zctx = zctx;
	ch->conn = *conn;
	ch->max_frame = max_frame;
	if ((ch->session = strdup(session)) == NULL)
		abort();
	for (int c = 0; c < KP_NCHAN; c++) {
		if ((rc = open_socket(ch, (enum kp_chan_id)c, err,
		    errlen)) < 0) {
			kp_chan_close(ch);
			return rc;
		}
	}
	*out = ch;
	return 0;
}

/* Close every socket (pending messages are dropped: linger is 0). */
void
kp_chan_close(struct kp_chan *ch)
{
	if (ch == NULL)
		return;
	for (int c = 0; c < KP_NCHAN; c++)
		if (ch->sock[c] != NULL)
			zmq_close(ch->sock[c]);
	explicit_bzero(ch->conn.key, sizeof(ch->conn.key));
	free(ch->session);
	free(ch);
}

void *
kp_chan_socket(struct kp_chan *ch, enum kp_chan_id c)
{
	return ch->sock[c];
}

const struct kp_chan_stats *
kp_chan_stats(const struct kp_chan *ch)
{
	return &ch->stats;
}

/* Encode, sign, send every frame without blocking. */
int
kp_chan_send(struct kp_chan *ch, enum kp_chan_id c, const struct kp_msg *m)
{
	struct kp_frames fr;
	int rc = 0;

	if (c == KP_HB || c == KP_IOPUB)
		return -EINVAL;
	if (kp_wire_encode(m, ch->conn.key, ch->conn.keylen, &fr) < 0)
		return -EIO;
	for (size_t i = 0; i < fr.n; i++) {
		/*
		 * A multipart message is queued whole or not at all once its
		 * first part went, so only the first send can see EAGAIN.
		 */
		if (zmq_send(ch->sock[c], fr.f[i].p, fr.f[i].n, ZMQ_DONTWAIT |
		    (i + 1 < fr.n ? ZMQ_SNDMORE : 0)) < 0) {
			rc = -errno;
			break;
		}
	}
	kp_wire_frames_free(&fr);
	return rc;
}

/* Read the rest of a multipart message and throw it away. */
static void
drain(void *s)
{
	zmq_msg_t part;
	int more;
	size_t len = sizeof(more);

	zmq_msg_init(&part);
	do {
		if (zmq_msg_recv(&part, s, ZMQ_DONTWAIT) < 0)
			break;
		more = 0;
		zmq_getsockopt(s, ZMQ_RCVMORE, &more, &len);
	} while (more);
	zmq_msg_close(&part);
}

/* One whole message from c, decoded and checked. */
int
kp_chan_recv(struct kp_chan *ch, enum kp_chan_id c, struct kp_msg **out)
{
	zmq_msg_t parts[MAX_FRAMES];
	struct kp_part frames[MAX_FRAMES] = { { NULL, 0 } };
	size_t n = 0, len = sizeof(int);
	int more = 1, rc;
	char err[128];

	if (c == KP_HB)
		return -EINVAL;
	while (more) {
		if (n == MAX_FRAMES) {
			drain(ch->sock[c]);
			ch->stats.dropped[0]++;
			rc = -EBADMSG;
			goto out;
		}
		zmq_msg_init(&parts[n]);
		if (zmq_msg_recv(&parts[n], ch->sock[c], ZMQ_DONTWAIT) < 0) {
			rc = -errno;
			zmq_msg_close(&parts[n]);
			if (n > 0 && rc == -EAGAIN)
				rc = -EBADMSG;	/* cannot happen: atomic */
			goto out;
		}
		frames[n].p = zmq_msg_data(&parts[n]);
		frames[n].n = zmq_msg_size(&parts[n]);
		n++;
		zmq_getsockopt(ch->sock[c], ZMQ_RCVMORE, &more, &len);
	}
	rc = kp_wire_decode(frames, n, ch->conn.key, ch->conn.keylen,
	    ch->max_frame, out, err, sizeof(err));
	if (rc < 0) {
		if (-rc < 6)
			ch->stats.dropped[-rc]++;
		rc = -EBADMSG;
	}
out:
	for (size_t i = 0; i < n; i++)
		zmq_msg_close(&parts[i]);
	return rc;
}

/* Send a heartbeat ping if none is outstanding. */
int
kp_chan_hb_ping(struct kp_chan *ch)
{
	if (ch->hb_waiting)
		return -EAGAIN;
	if (zmq_send(ch->sock[KP_HB], "ping", 4, ZMQ_DONTWAIT) < 0)
		return -errno;
	ch->hb_waiting = true;
	return 0;
}

/* Collect the pong, if it came. */
int
kp_chan_hb_pong(struct kp_chan *ch)
{
	char buf[64];

	if (!ch->hb_waiting)
		return 0;
	if (zmq_recv(ch->sock[KP_HB], buf, sizeof(buf), ZMQ_DONTWAIT) < 0)
		return -errno;
	ch->hb_waiting = false;
	return 0;
}

/* A fresh REQ socket after a missed pong. */
int
kp_chan_hb_reset(struct kp_chan *ch)
{
	char err[128];

	zmq_close(ch->sock[KP_HB]);
	ch->sock[KP_HB] = NULL;
	ch->hb_waiting = false;
	return open_socket(ch, KP_HB, err, sizeof(err));
}
