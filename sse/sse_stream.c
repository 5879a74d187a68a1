/*
 * sse_stream.c -- the bridge between pushed events and libmicrohttpd.
 *
 * The rule that keeps this simple (Taler's "suspended" flag): only the
 * content reader suspends, and only a push or finish resumes, and only
 * when the connection is suspended.  MHD calls the reader from its run
 * step on the loop thread, and producers push from the same thread, so no
 * locking is needed.  This file does not format events; see sse_fmt.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "sse_fmt.h"
#include "sse_stream.h"

struct sse_stream {
	struct MHD_Connection	*conn;
	struct MHD_Response	*resp;
	struct buf		 q;		/* capped at the stream's cap */
	bool			 suspended;
	bool			 ended;
	sse_stream_gone_cb	*gone;
	void			*arg;
	size_t			 low;		/* the drain mark */
	sse_stream_drain_cb	*drain;
	void			*drain_arg;
};

static ssize_t	 reader(void *, uint64_t, char *, size_t);
static void	 destroyed(void *);
static void	 wake(struct sse_stream *);

/* A new stream with an empty queue. */
struct sse_stream *
sse_stream_new(struct MHD_Connection *conn, size_t cap,
    sse_stream_gone_cb *gone, void *arg)
{
	struct sse_stream *s = calloc(1, sizeof(*s));

	if (s == NULL)
		abort();
	s->conn = conn;
	s->gone = gone;
	s->arg = arg;
	buf_init_max(&s->q, cap);
	s->resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384,
	    reader, s, destroyed);
	if (s->resp == NULL) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

/* The MHD response behind the stream. */
struct MHD_Response *
sse_stream_response(struct sse_stream *s)
{
	return s->resp;
}

static void
wake(struct sse_stream *s)
{
	if (s->suspended) {
		s->suspended = false;
		MHD_resume_connection(s->conn);
	}
}

/* Queue bytes under the cap and wake the connection. */
int
sse_stream_push(struct sse_stream *s, const void *p, size_t n)
{
	if (s->ended)
		return -EPIPE;
	if (buf_add(&s->q, p, n) < 0)
		return -ENOBUFS;
	wake(s);
	return 0;
}

/* Queue the last bytes and end the stream once they are out. */
void
sse_stream_finish(struct sse_stream *s, const void *p, size_t n)
{
	if (s->ended)
		return;
	if (n > s->q.max - s->q.len)
		s->q.max = s->q.len + n;	/* the last bytes always go */
	if (n > 0)
		buf_add(&s->q, p, n);
	s->ended = true;
	wake(s);
}

/* True once finish was called. */
int
sse_stream_ended(const struct sse_stream *s)
{
	return s->ended;
}

/* Bytes queued and not yet handed to MHD. */
size_t
sse_stream_queued(const struct sse_stream *s)
{
	return s->q.len;
}

/* What a push may still add under the cap. */
size_t
sse_stream_room(const struct sse_stream *s)
{
	return s->q.len < s->q.max ? s->q.max - s->q.len : 0;
}

/* Hear when the queue drains below low. */
void
sse_stream_on_drain(struct sse_stream *s, size_t low,
    sse_stream_drain_cb *drain, void *arg)
{
	s->low = low;
	s->drain = drain;
	s->drain_arg = arg;
}

/*
 * MHD wants body bytes.  Hand over what is queued; with nothing queued,
 * end the body if the stream is finished, or else suspend until a push.
 */
static ssize_t
reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sse_stream *s = cls;
	size_t n;

	if (s->q.len > 0) {
		n = s->q.len < max ? s->q.len : max;
		memcpy(buf, s->q.p, n);
		buf_drain(&s->q, n);
		if (s->drain != NULL && s->q.len < s->low &&
		    s->q.len + n >= s->low)
			s->drain(s, s->drain_arg);
		if (s->q.len == 0 && buf_cost(&s->q) > 65536)
			buf_reset(&s->q);	/* give a burst back */
		return (ssize_t)n;
	}
	if (s->ended)
		return MHD_CONTENT_READER_END_OF_STREAM;
	s->suspended = true;
	MHD_suspend_connection(s->conn);
	return 0;
}

/* MHD is done with the response: tell the owner, then free. */
static void
destroyed(void *cls)
{
	struct sse_stream *s = cls;

	s->ended = true;
	if (s->gone != NULL)
		s->gone(s, s->arg);
	buf_reset(&s->q);
	free(s);
}
