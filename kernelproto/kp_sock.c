/*
 * kp_sock.c -- ZeroMQ sockets for both ends of a kernel connection; see
 * kp_sock.h.  What a socket is for (connect or bind, its options) stays
 * with its end.
 */
#include <errno.h>
#include <stdio.h>

#include <zmq.h>

#include "kp_sock.h"
#include "kp_wire.h"

/* See kp_sock.h. */
int
kp_sock_new(void *zctx, int type, const struct kp_conn *conn,
    enum kp_chan_id c, void **out, char *ep, size_t eplen, char *err,
    size_t errlen)
{
	int zero = 0;
	void *s;

	if (kp_conn_endpoint(conn, c, ep, eplen) < 0) {
		snprintf(err, errlen, "%s endpoint too long", kp_chan_name(c));
		return -ENAMETOOLONG;
	}
	if ((s = zmq_socket(zctx, type)) == NULL)
		return kp_sock_fail(NULL, c, ep, err, errlen);
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	*out = s;
	return 0;
}

/* See kp_sock.h. */
int
kp_sock_fail(void *s, enum kp_chan_id c, const char *ep, char *err,
    size_t errlen)
{
	int e = errno;

	snprintf(err, errlen, "%s socket (%s): %s", kp_chan_name(c), ep,
	    zmq_strerror(e));
	if (s != NULL)
		zmq_close(s);
	return -e;
}

/* See kp_sock.h. */
int
kp_sock_send(void *s, const struct kp_conn *conn, const struct kp_msg *m)
{
	struct kp_frames fr;
	int rc = 0;

	if (kp_wire_encode(m, conn->key, conn->keylen, &fr) < 0)
		return -EIO;
	for (size_t i = 0; i < fr.n; i++) {
		/*
		 * A multipart message is queued whole or not at all once its
		 * first part went, so only the first send can see EAGAIN.
		 */
		if (zmq_send(s, fr.f[i].p, fr.f[i].n, ZMQ_DONTWAIT |
		    (i + 1 < fr.n ? ZMQ_SNDMORE : 0)) < 0) {
			rc = -errno;
			break;
		}
	}
	kp_wire_frames_free(&fr);
	return rc;
}

/* See kp_sock.h. */
void
kp_sock_drain(void *s)
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
