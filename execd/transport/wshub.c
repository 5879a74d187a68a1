/*
 * wshub.c -- a hub of WebSocket clients of one source (see wshub.h).
 *
 * A client is in one of three states: pending (joined from a request, its
 * 101 not yet out: no socket), open (a ws.h socket), dead (left, on the
 * hub's dead list).  Every way out goes through bury(): the owner hears
 * leave at once, so that what it holds for the client (a writer's slot)
 * is free for the next request, and the client itself is freed by sweep()
 * from a 0 ms timer of the hub's, armed by the first of the dead, so that
 * no client is freed inside one of its own callbacks (Redis
 * freeClientAsync).  The hub counts every client it has allocated; once
 * the owner freed it, the last one to go frees it.  What the messages
 * mean, and who may write, is the owner's: this file holds no protocol.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../core/log.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "http.h"
#include "ws.h"
#include "wshub.h"

struct wshub_client {
	struct wshub		*hub;
	void			*arg;
	struct http_upgrade	*u;		/* joined from a request */
	int			 fd;		/* joined from a socket, or -1 */
	struct ws		*ws;		/* NULL while pending */
	size_t			 max_queue;
	bool			 listening;
	bool			 left;		/* off the list, leave told */
	bool			 dead;		/* on the dead list */
	uint16_t		 close_code;	/* asked while pending, or 0 */
	char			 close_reason[123];
	struct wshub_client	*prev, *next;	/* in hub->clients */
	struct wshub_client	*dnext;		/* in hub->dead */
};

struct wshub {
	struct loop		*loop;
	struct wshub_conf	 conf;
	char			 slow_reason[123];
	char			 name[64];	/* for log lines */
	wshub_open_cb		*open;
	wshub_msg_cb		*msg;
	wshub_leave_cb		*leave;
	struct wshub_client	*clients;	/* joined, not left */
	size_t			 nclients;
	struct wshub_client	*dead;
	size_t			 nalloc;	/* clients not yet freed */
	uint64_t		 t_sweep;
	bool			 freed;		/* the owner let go */
};

static struct wshub_client *client_new(struct wshub *, size_t, void *);
static void	client_free(struct wshub_client *);
static void	start(struct wshub_client *, int, const char *, size_t);
static void	leave(struct wshub_client *);
static void	bury(struct wshub_client *);
static void	sweep(struct loop *, uint64_t, void *);
static void	maybe_free(struct wshub *);
static void	on_upgraded(struct http_upgrade *, int, const char *, size_t,
		    void *);
static void	on_http_shutdown(struct http_upgrade *, void *);
static void	on_msg(struct ws *, int, const char *, size_t, void *);
static void	on_end(struct ws *, void *);

/* A hub with no clients. */
struct wshub *
wshub_new(struct loop *loop, const struct wshub_conf *conf, const char *name,
    wshub_open_cb *open, wshub_msg_cb *msg, wshub_leave_cb *leave_cb)
{
	struct wshub *h = xcalloc(1, sizeof(*h));

	h->loop = loop;
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->conf = *conf;
	snprintf(h->slow_reason, sizeof(h->slow_reason), "%s",
	    conf->slow_reason != NULL ? conf->slow_reason : "");
	h->conf.slow_reason = h->slow_reason;
	h->open = open;
	h->msg = msg;
	h->leave = leave_cb;
	return h;
}

/* Let go: close every client; the last one to go frees the hub. */
void
wshub_free(struct wshub *h)
{
	struct wshub_client *c;

	if (h == NULL || h->freed)
		return;
	h->freed = true;
	/* 1. Off the list without a leave: the owner is gone. */
	while ((c = h->clients) != NULL) {
		h->clients = c->next;
		c->prev = c->next = NULL;
		c->left = true;
		c->listening = false;
		/* 2. Open ones close; pending ones do when their 101 is out. */
		if (c->ws != NULL)
			ws_close(c->ws, WS_CLOSE_GOING_AWAY, NULL);
		else if (c->close_code == 0)
			c->close_code = WS_CLOSE_GOING_AWAY;
	}
	h->nclients = 0;
	maybe_free(h);
}

/* Free the hub once the owner let go and no client is left in memory. */
static void
maybe_free(struct wshub *h)
{
	if (!h->freed || h->nalloc > 0)
		return;
	loop_timer_cancel(h->loop, h->t_sweep);
	free(h);
}

/* A client on the hub's list, pending. */
static struct wshub_client *
client_new(struct wshub *h, size_t max_queue, void *arg)
{
	struct wshub_client *c = xcalloc(1, sizeof(*c));

	c->hub = h;
	c->arg = arg;
	c->fd = -1;
	c->max_queue = max_queue;
	c->next = h->clients;
	if (h->clients != NULL)
		h->clients->prev = c;
	h->clients = c;
	h->nclients++;
	h->nalloc++;
	return c;
}

/* Join from a request: answer the 101; the rest is on_upgraded's. */
int
wshub_join_req(struct wshub *h, struct http_req *req, size_t max_queue,
    void *arg, struct wshub_client **out)
{
	return wshub_join_req_protocol(h, req, NULL, max_queue, arg, out);
}

/* The same, with a subprotocol in the 101 (NULL: none). */
int
wshub_join_req_protocol(struct wshub *h, struct http_req *req,
    const char *protocol, size_t max_queue, void *arg,
    struct wshub_client **out)
{
	struct wshub_client *c;
	const char *why;

	if (ws_handshake(req, &why) < 0)
		return -EINVAL;
	c = client_new(h, max_queue, arg);
	if (ws_upgrade_protocol(req, protocol, on_upgraded, on_http_shutdown,
	    c) < 0)
		fatalx("a checked handshake failed");
	*out = c;
	return 0;
}

/* Join a socket that speaks WebSocket already. */
struct wshub_client *
wshub_join_fd(struct wshub *h, int fd, const char *extra, size_t n,
    size_t max_queue, void *arg)
{
	struct wshub_client *c = client_new(h, max_queue, arg);

	c->fd = fd;
	start(c, fd, extra, n);
	return c;
}

/* Speak WebSocket on fd, under the client's own cap. */
static void
start(struct wshub_client *c, int fd, const char *extra, size_t n)
{
	struct ws_conf wc = c->hub->conf.ws;

	wc.max_queue = c->max_queue;
	c->ws = ws_new(c->hub->loop, fd, extra, n, &wc, on_msg, on_end, c);
}

/*
 * The 101 is out (or never will be: u NULL): start the socket, then close
 * it if that was asked meanwhile, or tell the owner it is open.
 */
static void
on_upgraded(struct http_upgrade *u, int fd, const char *extra, size_t n,
    void *arg)
{
	struct wshub_client *c = arg;
	struct wshub *h = c->hub;

	if (u == NULL) {
		bury(c);
		return;
	}
	c->u = u;
	start(c, fd, extra, n);
	if (c->close_code != 0) {
		ws_close(c->ws, c->close_code, c->close_reason);
		return;
	}
	if (h->open != NULL)
		h->open(c, c->arg);
}

/* execd stops: close at once, give the socket back, bury. */
static void
on_http_shutdown(struct http_upgrade *u, void *arg)
{
	struct wshub_client *c = arg;

	if (c->ws != NULL) {
		ws_close(c->ws, WS_CLOSE_GOING_AWAY, "execd is shutting down");
		ws_free(c->ws);
		c->ws = NULL;
	}
	http_upgrade_close(u);
	c->u = NULL;
	bury(c);
}

/* A message: the owner's, unless the client left. */
static void
on_msg(struct ws *ws, int type, const char *p, size_t n, void *arg)
{
	struct wshub_client *c = arg;

	if (!c->left && c->hub->msg != NULL)
		c->hub->msg(c, type, p, n, c->arg);
}

/* The socket is done: the client leaves and is freed later. */
static void
on_end(struct ws *ws, void *arg)
{
	bury(arg);
}

/* Take c off the list and tell the owner, once. */
static void
leave(struct wshub_client *c)
{
	struct wshub *h = c->hub;

	if (c->left)
		return;
	c->left = true;
	c->listening = false;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		h->clients = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	h->nclients--;
	if (!h->freed && h->leave != NULL)
		h->leave(c, c->arg);
}

/* c leaves now and is freed on the next turn of the loop. */
static void
bury(struct wshub_client *c)
{
	struct wshub *h = c->hub;

	leave(c);
	if (c->dead)
		return;
	c->dead = true;
	c->dnext = h->dead;
	h->dead = c;
	if (h->t_sweep == 0)
		h->t_sweep = loop_timer_add(h->loop, 0, sweep, h);
}

/* Free the clients that ended; the hub too if it was let go of. */
static void
sweep(struct loop *l, uint64_t id, void *arg)
{
	struct wshub *h = arg;
	struct wshub_client *c;

	h->t_sweep = 0;
	while ((c = h->dead) != NULL) {
		h->dead = c->dnext;
		client_free(c);
	}
	maybe_free(h);
}

/* Free c's socket and c; the hub's count goes down. */
static void
client_free(struct wshub_client *c)
{
	ws_free(c->ws);
	if (c->u != NULL)
		http_upgrade_close(c->u);
	if (c->fd != -1)
		close(c->fd);
	c->hub->nalloc--;
	free(c);
}

/* Queue a message for c; over its cap, close it with the slow code. */
int
wshub_send(struct wshub_client *c, int type, const void *hdr, size_t hn,
    const void *p, size_t n)
{
	struct wshub *h = c->hub;
	int rc;

	if (c->ws == NULL)
		return c->left ? -EPIPE : -ENOTCONN;
	rc = ws_send(c->ws, type, hdr, hn, p, n);
	if (rc == -ENOBUFS) {
		log_info("%s: a client reads too slowly, closing it",
		    h->name);
		c->listening = false;
		ws_close(c->ws, h->conf.slow_code, h->conf.slow_reason);
	}
	return rc;
}

/* Send to every listening client. */
size_t
wshub_broadcast(struct wshub *h, int type, const void *hdr, size_t hn,
    const void *p, size_t n)
{
	size_t sent = 0;

	for (struct wshub_client *c = h->clients; c != NULL; c = c->next)
		if (c->listening && wshub_send(c, type, hdr, hn, p, n) == 0)
			sent++;
	return sent;
}

/* Whether c gets broadcasts. */
void
wshub_listen(struct wshub_client *c, bool on)
{
	c->listening = on && !c->left;
}

/* Whether c gets broadcasts. */
bool
wshub_listening(const struct wshub_client *c)
{
	return c->listening;
}

/* Close c now, or as soon as its 101 is out. */
void
wshub_close(struct wshub_client *c, uint16_t code, const char *reason)
{
	c->listening = false;
	if (c->ws != NULL) {
		ws_close(c->ws, code, reason);
		return;
	}
	if (c->close_code != 0)
		return;
	c->close_code = code;
	snprintf(c->close_reason, sizeof(c->close_reason), "%s",
	    reason != NULL ? reason : "");
}

/* The next client not yet left. */
struct wshub_client *
wshub_next(struct wshub *h, struct wshub_client *c)
{
	return c == NULL ? h->clients : c->next;
}

/* Clients joined and not yet left. */
size_t
wshub_count(const struct wshub *h)
{
	return h->nclients;
}

/* The arg c joined with. */
void *
wshub_arg(const struct wshub_client *c)
{
	return c->arg;
}
