/*
 * kp_kernel.c -- the ZeroMQ side of a kernel of ours.
 *
 * It moves frames between the bound sockets and kp_wire, as kp_chan.c
 * does for the client; what requests mean is kp_serve.c's business.
 * Requests that fail kp_wire_decode are dropped here, so callers see only
 * well-formed, signed messages.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "kp_kernel.h"
#include "kp_sock.h"
#include "kp_wire.h"

#define MAX_FRAMES	64	/* identities + 6 + buffers, generously */

struct kp_kernel {
	void		*sock[KP_NCHAN];
	struct kp_conn	 conn;
	char		 session[33];
	size_t		 max_frame;
};

static int	bind_one(struct kp_kernel *, void *, enum kp_chan_id, char *,
		    size_t);

/* Create and bind the socket of channel c. */
static int
bind_one(struct kp_kernel *k, void *zctx, enum kp_chan_id c, char *err,
    size_t errlen)
{
	static const int types[KP_NCHAN] = {
		[KP_SHELL] = ZMQ_ROUTER, [KP_IOPUB] = ZMQ_PUB,
		[KP_STDIN] = ZMQ_ROUTER, [KP_CONTROL] = ZMQ_ROUTER,
		[KP_HB] = ZMQ_REP,
	};
	char ep[512];
	void *s;
	int zero = 0, rc;

	if ((rc = kp_sock_new(zctx, types[c], &k->conn, c, &s, ep,
	    sizeof(ep), err, errlen)) < 0)
		return rc;
	/*
	 * A PUB socket drops what passes its high-water mark (1000
	 * messages by default) while a subscriber lags: the end of a large
	 * output would be lost when execd falls behind.  No mark: what a
	 * subscriber has not read yet waits here, bounded by the run's
	 * output and the kernel's memory limit.
	 */
	if (c == KP_IOPUB && zmq_setsockopt(s, ZMQ_SNDHWM, &zero,
	    sizeof(zero)) < 0)
		goto fail;
	if (zmq_bind(s, ep) < 0)
		goto fail;
	k->sock[c] = s;
	return 0;
fail:
	return kp_sock_fail(s, c, ep, err, errlen);
}

/* Bind all five channels. */
int
kp_kernel_open(void *zctx, const struct kp_conn *conn, size_t max_frame,
    struct kp_kernel **out, char *err, size_t errlen)
{
	struct kp_kernel *k;
	int rc;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		abort();
	k->conn = *conn;
	k->max_frame = max_frame;
	kp_msg_new_id(k->session);
	for (int c = 0; c < KP_NCHAN; c++) {
		if ((rc = bind_one(k, zctx, (enum kp_chan_id)c, err,
		    errlen)) < 0) {
			kp_kernel_close(k);
			return rc;
		}
	}
	*out = k;
	return 0;
}

/* Close every socket and wipe the key. */
void
kp_kernel_close(struct kp_kernel *k)
{
	if (k == NULL)
		return;
	for (int c = 0; c < KP_NCHAN; c++)
		if (k->sock[c] != NULL)
			zmq_close(k->sock[c]);
	explicit_bzero(k->conn.key, sizeof(k->conn.key));
	free(k);
}

void *
kp_kernel_socket(struct kp_kernel *k, enum kp_chan_id c)
{
	return k->sock[c];
}

const char *
kp_kernel_session(const struct kp_kernel *k)
{
	return k->session;
}

/* One whole request from c, decoded and checked. */
int
kp_kernel_recv(struct kp_kernel *k, enum kp_chan_id c, struct kp_msg **out)
{
	zmq_msg_t parts[MAX_FRAMES];
	struct kp_part frames[MAX_FRAMES] = { { NULL, 0 } };
	size_t n = 0, len = sizeof(int);
	int more = 1, rc;
	char err[128];

	if (c == KP_HB || c == KP_IOPUB)
		return -EINVAL;
	while (more) {
		if (n == MAX_FRAMES) {
			kp_sock_drain(k->sock[c]);
			rc = -EBADMSG;
			goto out;
		}
		zmq_msg_init(&parts[n]);
		if (zmq_msg_recv(&parts[n], k->sock[c], ZMQ_DONTWAIT) < 0) {
			rc = -errno;
			zmq_msg_close(&parts[n]);
			if (n > 0 && rc == -EAGAIN)
				rc = -EBADMSG;	/* cannot happen: atomic */
			goto out;
		}
		frames[n].p = zmq_msg_data(&parts[n]);
		frames[n].n = zmq_msg_size(&parts[n]);
		n++;
		zmq_getsockopt(k->sock[c], ZMQ_RCVMORE, &more, &len);
	}
	rc = kp_wire_decode(frames, n, k->conn.key, k->conn.keylen,
	    k->max_frame, out, err, sizeof(err));
	if (rc < 0)
		rc = -EBADMSG;
out:
	for (size_t i = 0; i < n; i++)
		zmq_msg_close(&parts[i]);
	return rc;
}

/* Echo each waiting ping, frame by frame (REP keeps the envelope). */
int
kp_kernel_hb(struct kp_kernel *k)
{
	zmq_msg_t m;
	int more;
	size_t len = sizeof(more);

	for (;;) {
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, k->sock[KP_HB], ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&m);
			return errno == EAGAIN ? 0 : -errno;
		}
		more = 0;
		zmq_getsockopt(k->sock[KP_HB], ZMQ_RCVMORE, &more, &len);
		if (zmq_msg_send(&m, k->sock[KP_HB], ZMQ_DONTWAIT |
		    (more ? ZMQ_SNDMORE : 0)) < 0) {
			zmq_msg_close(&m);
			return -errno;
		}
	}
}

/* A reply to req's sender on c. */
int
kp_kernel_reply(struct kp_kernel *k, enum kp_chan_id c,
    const struct kp_msg *req, const char *msg_type, json_t *content)
{
	struct kp_msg *m;
	int rc;

	if ((m = kp_msg_new(msg_type, k->session, "kernel", content,
	    req->header)) == NULL)
		return -errno;
	/* Borrowed: the request outlives the send. */
	m->idents = req->idents;
	m->nidents = req->nidents;
	rc = kp_sock_send(k->sock[c], &k->conn, m);
	m->idents = NULL;
	m->nidents = 0;
	kp_msg_free(m);
	return rc;
}

/* A message on iopub, under the topic Jupyter's kernels use. */
int
kp_kernel_publish(struct kp_kernel *k, const struct kp_msg *parent,
    const char *msg_type, json_t *content)
{
	struct kp_msg *m;
	struct kp_blob topic;
	char buf[128];
	int rc, n;

	if ((m = kp_msg_new(msg_type, k->session, "kernel", content,
	    parent != NULL ? parent->header : NULL)) == NULL)
		return -errno;
	n = snprintf(buf, sizeof(buf), "kernel.%s.%s", k->session, msg_type);
	topic.p = buf;
	topic.n = n > 0 && (size_t)n < sizeof(buf) ? (size_t)n :
	    strlen(buf);
	m->idents = &topic;
	m->nidents = 1;
	rc = kp_sock_send(k->sock[KP_IOPUB], &k->conn, m);
	m->idents = NULL;
	m->nidents = 0;
	kp_msg_free(m);
	return rc;
}
