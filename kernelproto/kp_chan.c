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
#include "kp_sock.h"
#include "kp_wire.h"

#define MAX_FRAMES	64	/* identities + 6 + buffers, generously */
#define PIECE		(1 << 20)	/* text of a large stream message */
#define BIG		(16 << 10)	/* a frame this large skips the parser */

struct kp_chan {
	void			*zctx;
	void			*sock[KP_NCHAN];
	struct kp_conn		 conn;
	char			*session;
	size_t			 max_frame;
	bool			 hb_waiting;
	struct kp_chan_stats	 stats;
	/* A large stream message, handed out in pieces of its text. */
	struct kp_msg		*big;
	enum kp_chan_id		 big_c;
	zmq_msg_t		 big_frame;	/* its content frame */
	size_t			 big_off, big_end;
};

static int	open_socket(struct kp_chan *, enum kp_chan_id, char *, size_t);
static int	next_piece(struct kp_chan *, struct kp_msg **);
static void	big_release(struct kp_chan *);

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
	int ivl = 10, rc;

	if ((rc = kp_sock_new(ch->zctx, types[c], &ch->conn, c, &s, ep,
	    sizeof(ep), err, errlen)) < 0)
		return rc;
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
	return kp_sock_fail(s, c, ep, err, errlen);
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
	big_release(ch);
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
	if (c == KP_HB || c == KP_IOPUB)
		return -EINVAL;
	return kp_sock_send(ch->sock[c], &ch->conn, m);
}

/* Let go of the large message being handed out, if any. */
static void
big_release(struct kp_chan *ch)
{
	if (ch->big == NULL)
		return;
	kp_msg_free(ch->big);
	ch->big = NULL;
	zmq_msg_close(&ch->big_frame);
}

/*
 * The next piece of the large stream message: a message of its own with
 * the same header and parent, and about PIECE bytes of the text.
 */
static int
next_piece(struct kp_chan *ch, struct kp_msg **out)
{
	struct kp_msg *m;
	json_t *t;

	t = kp_wire_text_piece(zmq_msg_data(&ch->big_frame), &ch->big_off,
	    ch->big_end, PIECE);
	if (t == NULL) {
		big_release(ch);
		return -EAGAIN;
	}
	m = xalloc(sizeof(*m));
	m->header = json_incref(ch->big->header);
	m->parent = json_incref(ch->big->parent);
	m->metadata = json_incref(ch->big->metadata);
	m->content = json_copy(ch->big->content);
	json_object_set_new(m->content, "text", t);
	if (ch->big_off >= ch->big_end)
		big_release(ch);
	*out = m;
	return 0;
}

/*
 * One whole message from c, decoded and checked.  A message with a frame
 * over PIECE is decoded by kp_wire_decode_big: the text of a stream
 * message then comes out in pieces (the frame is kept until the last),
 * so no single string of it is ever as large as the frame, and content
 * over max_frame arrives as a message that counts what was left out
 * rather than not at all.
 */
int
kp_chan_recv(struct kp_chan *ch, enum kp_chan_id c, struct kp_msg **out)
{
	zmq_msg_t parts[MAX_FRAMES];
	struct kp_part frames[MAX_FRAMES] = { { NULL, 0 } };
	size_t n = 0, len = sizeof(int), toff = 0, tend = 0, d;
	int more = 1, rc;
	bool big = false;
	char err[128];

	if (c == KP_HB)
		return -EINVAL;
	if (ch->big != NULL && ch->big_c == c &&
	    (rc = next_piece(ch, out)) != -EAGAIN)
		return rc;
	while (more) {
		if (n == MAX_FRAMES) {
			kp_sock_drain(ch->sock[c]);
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
		if (frames[n].n > BIG)
			big = true;
		n++;
		zmq_getsockopt(ch->sock[c], ZMQ_RCVMORE, &more, &len);
	}
	if (big)
		rc = kp_wire_decode_big(frames, n, ch->conn.key,
		    ch->conn.keylen, ch->max_frame, out, &toff, &tend, err,
		    sizeof(err));
	else
		rc = kp_wire_decode(frames, n, ch->conn.key, ch->conn.keylen,
		    ch->max_frame, out, err, sizeof(err));
	if (rc < 0) {
		if (-rc < 6)
			ch->stats.dropped[-rc]++;
		rc = -EBADMSG;
		goto out;
	}
	if (tend > toff) {
		/* Keep the content frame (after <IDS|MSG>, sig, 3 parts). */
		for (d = 0; d < n; d++)
			if (frames[d].n == sizeof(KP_DELIM) - 1 &&
			    memcmp(frames[d].p, KP_DELIM, frames[d].n) == 0)
				break;
		big_release(ch);
		ch->big = *out;
		ch->big_c = c;
		ch->big_off = toff;
		ch->big_end = tend;
		zmq_msg_init(&ch->big_frame);
		zmq_msg_move(&ch->big_frame, &parts[d + 5]);
		rc = next_piece(ch, out);
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
