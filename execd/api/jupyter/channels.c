/*
 * channels.c -- /api/kernels/{kernel_id}/channels: Jupyter clients of a
 * kernel over WebSocket, in the v1.kernel.websocket.jupyter.org
 * subprotocol when the client offers it (as Jupyter Server prefers), else
 * in the form without one (a JSON text frame per message with "channel",
 * or the binary form with offsets for one with buffers); wsmsg.c.
 *
 * Every kernel with clients has one hub (wshub.h) and one subscription
 * (kernel.h): each iopub message is formatted once per form and goes to
 * every client, and the hub closes a client that does not read (4002) while
 * the others go on.  A client's requests go to the kernel with
 * kernel_send(), each with a note of whose it is, so its replies and the
 * input requests of an execution that allowed stdin come back to that
 * client alone.  What a client sends while the kernel starts or restarts
 * waits for it, within a bound.  State changes are told as Jupyter
 * Server tells them: a status "restarting" when the kernel restarts,
 * "dead" when it is gone, after which the clients are closed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../core/log.h"
#include "../../core/xmalloc.h"
#include "../../domain/context.h"
#include "../../domain/kernel.h"
#include "../../domain/rungate.h"
#include "../../transport/ws.h"
#include "../../transport/wshub.h"
#include "../execd.h"
#include "jupyter.h"
#include "wsmsg.h"

#define MAX_QUEUE	(16 * 1024 * 1024)	/* a client's unsent bytes */
#define MAX_IN_MSG	(16 * 1024 * 1024)	/* a client's message */
#define MAX_HELD	64	/* messages waiting for a kernel to start */
#define CLOSE_BAD	1007	/* a message that is not a Jupyter message */
#define CLOSE_POLICY	1008	/* one the kernel cannot take from it */
#define CLOSE_GONE	1001	/* the kernel is gone */

/* The clients of one kernel. */
struct jkernel {
	char			 id[64];	/* the context's */
	struct kernel		*k;		/* NULL once dead */
	struct kernel_sub	*sub;
	struct wshub		*hub;
	unsigned		 nclients;
	struct jkernel		*next;
};

/* A client's request awaiting its reply. */
struct jreq {
	struct jclient		*cl;
	enum kp_chan_id		 chan;
	char			 id[257];
	struct jreq		*next;
};

/* A message sent before the kernel was ready. */
struct held {
	enum kp_chan_id		 chan;
	struct kp_msg		*m;
};

struct jclient {
	struct jkernel		*jk;
	bool			 v1;	/* v1.kernel.websocket.jupyter.org */
	struct wshub_client	*m;
	struct jreq		*reqs;
	struct held		 held[MAX_HELD];
	unsigned		 nheld;
};

static struct jkernel	*kernels;
static struct rungate_wait *gate_wait;	/* a held execute_request's */

static const struct wshub_conf hub_conf = {
	.ws = { .max_msg = MAX_IN_MSG, .ping_ms = 30000, .idle_ms = 60000,
	    .linger_ms = 3000 },
	.slow_code = WS_CLOSE_TOO_SLOW, .slow_reason = "SLOW_CLIENT",
};

static void	on_open(struct wshub_client *, void *);
static void	on_msg(struct wshub_client *, int, const char *, size_t,
		    void *);
static void	on_leave(struct wshub_client *, void *);
static int	on_iopub(struct kernel *, const struct kp_msg *, void *);
static void	on_state(struct kernel *, enum kernel_state, void *);
static void	on_reply(struct kernel *, const struct kp_msg *, const char *,
		    void *);
static void	on_input(struct kernel *, const struct kp_msg *, void *);
static void	flush_held(struct jkernel *);

static const struct kernel_sub_cb sub_cb = { on_iopub, on_state, NULL };
static const struct kernel_req_cb req_cb = { on_reply, on_input };

static struct jkernel *
find(const char *id)
{
	for (struct jkernel *jk = kernels; jk != NULL; jk = jk->next)
		if (strcmp(jk->id, id) == 0)
			return jk;
	return NULL;
}

/* WebSocket clients of the kernel of this id now (the model's
   connections). */
unsigned
jupyter_connections(const char *id)
{
	struct jkernel *jk = find(id);

	return jk != NULL ? jk->nclients : 0;
}

/* The clients of c's kernel, made with its subscription if need be. */
static struct jkernel *
jkernel_of(struct loop *loop, struct context *c)
{
	struct jkernel *jk = find(context_id(c));
	char name[80];

	if (jk != NULL && jk->k != NULL)
		return jk;
	jk = xcalloc(1, sizeof(*jk));
	snprintf(jk->id, sizeof(jk->id), "%s", context_id(c));
	snprintf(name, sizeof(name), "kernel=%s", jk->id);
	jk->k = context_kernel(c);
	jk->hub = wshub_new(loop, &hub_conf, name, on_open,
	    on_msg, on_leave);
	jk->sub = kernel_subscribe(jk->k, &sub_cb, jk);
	jk->next = kernels;
	kernels = jk;
	return jk;
}

/* The last client left: let go of the kernel and the hub. */
static void
jkernel_free(struct jkernel *jk)
{
	for (struct jkernel **pp = &kernels; *pp != NULL; pp = &(*pp)->next)
		if (*pp == jk) {
			*pp = jk->next;
			break;
		}
	if (jk->k != NULL)
		kernel_unsubscribe(jk->k, jk->sub);
	wshub_free(jk->hub);
	free(jk);
}

/* Whether a WebSocket from this Origin may open (Jupyter Server's rule:
   none, the same host as the request's, or the one --allow-origin names,
   any with "*"). */
static bool
origin_ok(struct http_req *req)
{
	const char *origin = http_req_header(req, "Origin");
	const char *host = http_req_header(req, "Host");
	const char *allow = ((struct execd *)http_req_app(req))->conf->
	    allow_origin;
	const char *p;

	if (origin == NULL || (allow != NULL && (strcmp(allow, "*") == 0 ||
	    strcmp(allow, origin) == 0)))
		return true;
	if ((p = strstr(origin, "://")) == NULL || host == NULL)
		return false;
	return strcasecmp(p + 3, host) == 0;
}

/* GET /api/kernels/{kernel_id}/channels */
void
jupyter_channels(struct http_req *req)
{
	const char *id = http_req_param(req, "kernel_id");
	const char *why = "it is not valid", *proto;
	struct context *c = jupyter_kernel_find(id);
	struct jclient *cl;
	struct jkernel *jk;

	if (c == NULL) {
		http_reply_error(req, 404, HTTP_E_NOT_FOUND,
		    "Kernel does not exist: %s", id);
		return;
	}
	if (!origin_ok(req)) {
		http_reply_error(req, 403, HTTP_E_FORBIDDEN, "Cross origin "
		    "websockets not allowed");
		return;
	}
	if (ws_handshake(req, &why) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "not a WebSocket "
		    "handshake: %s", why);
		return;
	}
	jk = jkernel_of(http_req_loop(req), c);
	cl = xcalloc(1, sizeof(*cl));
	cl->jk = jk;
	/* The subprotocol if offered, as Jupyter Server prefers it. */
	proto = http_req_header(req, "Sec-WebSocket-Protocol");
	cl->v1 = proto != NULL && ws_header_has(proto, WSMSG_V1);
	if (wshub_join_req_protocol(jk->hub, req, cl->v1 ? WSMSG_V1 : NULL,
	    MAX_QUEUE, cl, &cl->m) < 0) {
		free(cl);
		if (jk->nclients == 0)
			jkernel_free(jk);
		http_reply_error(req, 400, HTTP_E_BODY, "not a WebSocket "
		    "handshake");
		return;
	}
	jk->nclients++;
}

static void
on_open(struct wshub_client *m, void *arg)
{
	struct jclient *cl = arg;

	if (cl->jk->k == NULL)
		wshub_close(m, CLOSE_GONE, "kernel is gone");
	else
		wshub_listen(m, true);
}

/* The run gate opened: what clients sent meanwhile goes on, in order. */
static void
gate_opened(void *arg)
{
	struct jkernel *jk, *next;

	(void)arg;
	gate_wait = NULL;
	for (jk = kernels; jk != NULL; jk = next) {
		next = jk->next;
		if (jk->k != NULL)
			flush_held(jk);
	}
}

/*
 * Send m on chan for cl; a client that cannot be served is closed.  An
 * execute_request waits while the run gate is closed.
 */
static void
to_kernel(struct jclient *cl, enum kp_chan_id chan, struct kp_msg *m)
{
	struct jkernel *jk = cl->jk;
	struct jreq *r = NULL;
	enum kernel_state st;
	int rc;

	if (jk->k == NULL) {
		kp_msg_free(m);
		return;
	}
	if (chan == KP_SHELL && rungate_closed() &&
	    strcmp(kp_msg_type(m), "execute_request") == 0) {
		/* A restore runs: the run starts after it (rungate.h). */
		if (cl->nheld == MAX_HELD) {
			kp_msg_free(m);
			wshub_close(cl->m, CLOSE_POLICY, "too many messages "
			    "wait for a restore");
			return;
		}
		cl->held[cl->nheld++] = (struct held){ chan, m };
		if (gate_wait == NULL)
			gate_wait = rungate_wait(gate_opened, NULL);
		return;
	}
	if (chan != KP_STDIN) {
		r = xcalloc(1, sizeof(*r));
		r->cl = cl;
		r->chan = chan;
		snprintf(r->id, sizeof(r->id), "%s", kp_msg_id(m));
	}
	rc = kernel_send(jk->k, chan, m, r != NULL ? &req_cb : NULL, r);
	st = kernel_state(jk->k);
	if ((rc == -EAGAIN || rc == -EPIPE) && (st == KERNEL_S_STARTING ||
	    st == KERNEL_S_RESTARTING) && cl->nheld < MAX_HELD) {
		free(r);
		cl->held[cl->nheld++] = (struct held){ chan, m };
		return;
	}
	if (rc < 0) {
		free(r);
		log_info("kernel=%s: a client's %s %s refused: %s", jk->id,
		    wsmsg_channel_name(chan), kp_msg_type(m), strerror(-rc));
		wshub_close(cl->m, CLOSE_POLICY, rc == -EEXIST ?
		    "msg_id already in use" : rc == -ENOBUFS ?
		    "too many requests await replies" : rc == -EAGAIN ||
		    rc == -EPIPE ? "kernel is not ready" : "refused");
	} else if (r != NULL) {
		r->next = cl->reqs;
		cl->reqs = r;
	}
	kp_msg_free(m);
}

/* A message from a client: to the kernel, or a close with the reason. */
static void
on_msg(struct wshub_client *m, int type, const char *p, size_t n,
    void *arg)
{
	struct jclient *cl = arg;
	enum kp_chan_id chan;
	struct kp_msg *msg;
	char err[160];

	if ((cl->v1 ? type != WS_BINARY || wsmsg_parse_v1(p, n, &msg, &chan,
	    err, sizeof(err)) < 0 : wsmsg_parse(p, n, type == WS_BINARY, &msg,
	    &chan, err, sizeof(err)) < 0)) {
		if (cl->v1 && type != WS_BINARY)
			snprintf(err, sizeof(err), "v1 messages are binary");
		log_info("kernel=%s: a client's message is malformed (%s): "
		    "closing it", cl->jk->id, err);
		wshub_close(m, CLOSE_BAD, err);
		return;
	}
	if (cl->nheld > 0 && cl->nheld < MAX_HELD) {
		cl->held[cl->nheld++] = (struct held){ chan, msg };
		return;
	}
	to_kernel(cl, chan, msg);
}

/* Send m to one client, formatted for channel chan. */
static void
to_client(struct jclient *cl, const struct kp_msg *m, enum kp_chan_id chan)
{
	struct buf b;
	int type;

	buf_init(&b);
	type = wsmsg_form(&b, cl->v1, m, chan);
	wshub_send(cl->m, type, NULL, 0, b.p, b.len);
	buf_reset(&b);
}

static void
unlink_req(struct jreq *r)
{
	for (struct jreq **pp = &r->cl->reqs; *pp != NULL;
	    pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
}

/* A request's reply goes to its client alone; the note goes. */
static void
on_reply(struct kernel *k, const struct kp_msg *reply, const char *why,
    void *arg)
{
	struct jreq *r = arg;

	unlink_req(r);
	if (reply != NULL)
		to_client(r->cl, reply, r->chan);
	free(r);
}

/* An input request goes to the client whose execution allowed stdin. */
static void
on_input(struct kernel *k, const struct kp_msg *m, void *arg)
{
	struct jreq *r = arg;

	to_client(r->cl, m, KP_STDIN);
}

/* Every iopub message to every client, formatted once per form. */
static int
on_iopub(struct kernel *k, const struct kp_msg *m, void *arg)
{
	struct jkernel *jk = arg;
	struct wshub_client *w;
	struct jclient *cl;
	struct buf b[2];
	int type;

	buf_init(&b[0]);
	buf_init(&b[1]);
	for (w = wshub_next(jk->hub, NULL); w != NULL;
	    w = wshub_next(jk->hub, w)) {
		cl = wshub_arg(w);
		if (!wshub_listening(w))
			continue;
		type = wsmsg_form(&b[cl->v1], cl->v1, m, KP_IOPUB);
		wshub_send(w, type, NULL, 0, b[cl->v1].p, b[cl->v1].len);
	}
	buf_reset(&b[0]);
	buf_reset(&b[1]);
	return 0;
}

/* A status message of ours, as Jupyter Server sends on restarts. */
static void
status(struct jkernel *jk, const char *state)
{
	struct kp_msg *m = kp_msg_new("status", jk->id, "execd",
	    json_pack("{s:s}", "execution_state", state), NULL);

	if (m != NULL)
		on_iopub(jk->k, m, jk);
	kp_msg_free(m);
}

/* Send what clients sent while the kernel was not ready, in order. */
static void
flush_held(struct jkernel *jk)
{
	struct wshub_client *m;
	struct jclient *cl;
	struct held h[MAX_HELD];
	unsigned n;

	for (m = wshub_next(jk->hub, NULL); m != NULL;
	    m = wshub_next(jk->hub, m)) {
		cl = wshub_arg(m);
		n = cl->nheld;
		memcpy(h, cl->held, n * sizeof(h[0]));
		cl->nheld = 0;
		for (unsigned i = 0; i < n; i++) {
			if (cl->nheld > 0)	/* held again: the rest too */
				cl->held[cl->nheld++] = h[i];
			else
				to_kernel(cl, h[i].chan, h[i].m);
		}
	}
}

static void
on_state(struct kernel *k, enum kernel_state st, void *arg)
{
	struct jkernel *jk = arg;
	struct wshub_client *m;

	switch (st) {
	case KERNEL_S_RESTARTING:
		status(jk, "restarting");
		break;
	case KERNEL_S_IDLE:
	case KERNEL_S_BUSY:
		flush_held(jk);
		break;
	case KERNEL_S_DEAD:
		status(jk, "dead");
		jk->k = NULL;	/* the subscription goes with it */
		jk->sub = NULL;
		for (m = wshub_next(jk->hub, NULL); m != NULL;
		    m = wshub_next(jk->hub, m))
			wshub_close(m, CLOSE_GONE, "kernel is gone");
		break;
	default:
		break;
	}
}

/* A client left: its requests are forgotten, its held messages freed. */
static void
on_leave(struct wshub_client *m, void *arg)
{
	struct jclient *cl = arg;
	struct jkernel *jk = cl->jk;
	struct jreq *r;

	while ((r = cl->reqs) != NULL) {
		cl->reqs = r->next;
		if (jk->k != NULL)
			kernel_send_forget(jk->k, r->id);
		free(r);
	}
	for (unsigned i = 0; i < cl->nheld; i++)
		kp_msg_free(cl->held[i].m);
	free(cl);
	if (--jk->nclients == 0)
		jkernel_free(jk);
}
