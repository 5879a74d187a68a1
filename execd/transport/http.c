/*
 * http.c -- libmicrohttpd on our loop: listening, routing, access control,
 * JSON bodies, replies, streams, and the one errno-to-status map.
 *
 * MHD runs in external-epoll mode with suspend/resume and no thread of its
 * own: the loop polls MHD's epoll fd and calls MHD_run() after every poll.
 * A request's life: the URI log callback allocates its context; the first
 * access-handler call finds the route, whose dialect (dialect.h) says how
 * the token may come and how errors are worded, then checks the token
 * (answering 401, 404, 405 or 413 at once); body calls collect a JSON body
 * under a cap; the last call parses it and runs the handler, which replies
 * before returning.
 * The completion callback logs the request line with its status and frees
 * the context.  This file knows no endpoint; the route_*.c files do.
 *
 * Slow clients: every connection has a phase (waiting for a request,
 * receiving one, or busy with one dispatched) and the time it entered it.
 * A once-a-second sweep cuts off headers slower than --header-timeout and
 * bodies slower than --body-timeout plus --body-min-rate; connections that
 * wait for a request are counted, and past --max-half-open (or at the
 * connection limit) the one waiting longest is closed to make room, so
 * held-open connections cannot lock others out.  Streams, deferred
 * requests and upgrades are busy and never counted or cut.  A reply sent
 * before the body was read lingers: the socket is kept, its write side
 * shut, and what the client still sends is read and dropped for a bounded
 * time, so that a client writing the whole body first still reads the
 * answer; lingering sockets count as half-open, and the first to be closed
 * for room.  Buffered bodies share --body-memory; large JSON bodies are
 * parsed on the worker pool while their connection is suspended.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/tcp.h>

#include <microhttpd.h>

#include "../../sse/sse_fmt.h"
#include "../../util/hex.h"
#include "../../util/utf8.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/work.h"
#include "../core/xmalloc.h"
#include "http.h"

#define MAX_PARAMS	4
#define URI_LOG_MAX	256
#define TOKEN_HEADER	"X-EXECD-ACCESS-TOKEN"
#define TOKEN_QUERY	"token"
#define JSON_TYPE	"application/json; charset=utf-8"
/*
 * MHD takes a response only before the body is read or after all of it,
 * so a streamed body refused midway is read on and dropped, up to this
 * much more; past it the connection is closed without an answer.
 */
#define DISCARD_MAX	(16u << 20)
#define HTTP_WAKE_MS	1000	/* longest sleep with connections open */
#define EOF_CHECK_MS	200	/* look for clients gone mid-body this often */
#define SWEEP_MS	1000	/* check phase deadlines this often */
/*
 * A socket kept after an early reply is read while bytes keep coming (a
 * pause of LINGER_IDLE_MS ends it) for at most LINGER_MS and LINGER_MAX
 * bytes: enough for a body several times --max-body-size to be written
 * whole by a client that reads only afterwards.
 */
#define LINGER_IDLE_MS	5000
#define LINGER_MS	30000
#define LINGER_MAX	(256u << 20)
#define PARSE_ASYNC_MIN	(256u << 10)	/* JSON bodies parsed off the loop */
#define BUSY_RETRY	"1"	/* Retry-After of a 503 SERVER_BUSY */
#define RX_UNKNOWN	UINT64_MAX
#define READER_BLOCK	65536	/* a streamed body's largest read */

/* Where a connection is in its request; all but PH_BUSY are half-open. */
enum phase {
	PH_HEAD,	/* new, or sending a request line and headers */
	PH_IDLE,	/* kept alive after a request, nothing sent yet */
	PH_BODY,	/* sending a body */
	PH_BUSY		/* request dispatched: handler, stream, reply */
};

/* One connection, from MHD's NOTIFY_CONNECTION start to close. */
struct conn {
	struct http_server	*srv;
	struct MHD_Connection	*mc;
	int			 fd;
	enum phase		 phase;
	uint64_t		 since;		/* entered phase, loop ms */
	uint64_t		 rx_mark;	/* bytes in when it went idle */
	uint64_t		 nbody;		/* body bytes so far */
	bool			 cut;		/* shut down by us */
	bool			 linger;	/* replied before the body */
	bool			 upgraded;
	int			 file_fd;	/* a file being sent, or -1 */
	uint64_t		 file_end;	/* ... up to this offset */
	struct conn		*prev, *next;
};

/* A socket kept after an early reply, read and dropped until it ends. */
struct lingerer {
	struct http_server	*srv;
	int			 fd;
	uint64_t		 timer;
	uint64_t		 since;		/* started, loop ms */
	uint64_t		 last;		/* last byte read, loop ms */
	size_t			 nread;
	struct lingerer		*prev, *next;
};

/* A streamed body's job on a worker (http_req_body_work). */
struct body_work {
	struct http_req		*req;		/* NULL once the request ended */
	struct http_server	*srv;
	struct work_job		*job;
	uint64_t		 timer;		/* the deadline, or 0 */
	unsigned		 timeout;	/* its seconds */
	atomic_int		*cancel;
	http_work_fn		*fn;
	http_work_reply_cb	*done;
	void			*arg;
};

/* A large JSON body parsed on a worker; owns the body meanwhile. */
struct parse_job {
	struct http_server	*srv;
	struct http_req		*req;	/* NULL once the request is gone */
	struct buf		 body;
	size_t			 charged;
	json_t			*json;
	json_error_t		 e;
};

struct http_resp {
	struct MHD_Response	*r;
	struct http_reader		*rd;		/* from http_resp_reader */
	int			 file_fd;	/* from http_resp_fd, or -1 */
	uint64_t		 file_end;
};

/* A content reader of ours, behind MHD's callback signature. */
struct http_reader {
	http_read_cb		*read;
	http_read_done_cb	*done;
	void			*arg;
	struct MHD_Connection	*conn;	/* once queued */
	struct http_server	*srv;
	bool			 suspended;	/* by HTTP_READ_WAIT ... */
	bool			 cut;		/* ... and woken at shutdown */
	struct http_reader	*prev, *next;	/* on srv->sleepers */
};

/* An upgraded connection (http.h); on the server's list once upgraded. */
struct http_upgrade {
	struct http_server		*srv;
	struct http_req			*req;	/* until the 101 is out */
	struct MHD_UpgradeResponseHandle *urh;
	http_upgrade_cb			*up;
	http_upgrade_shutdown_cb	*shutdown;
	void				*arg;
	struct http_upgrade		*prev, *next;
};

struct live_stream {
	struct sse_stream	*s;
	http_stream_shutdown_cb	*shutdown;
	sse_stream_gone_cb	*gone;
	void			*arg;
	struct http_server	*srv;
	struct live_stream	*prev, *next;
};

struct http_server {
	struct loop		*loop;
	struct MHD_Daemon	*mhd;
	int			 lfd;
	int			 epfd;
	uint16_t		 port;
	struct http_conf	 conf;
	unsigned char		 token_md[DIALECT_MD_LEN];
	bool			 has_token;
	unsigned char		 bound_md[DIALECT_MD_LEN];	/* http_bind_token */
	bool			 has_bound;
	bool			 held;		/* http_hold: not yet open */
	const struct http_route	*routes;
	size_t			 nroutes;
	void			*app;
	struct live_stream	*streams;
	size_t			 nstreams;
	struct http_reader	*sleepers;	/* readers waiting (HTTP_READ_WAIT) */
	struct http_upgrade	*upgrades;
	size_t			 nupgrades;
	bool			 kick;		/* MHD has work: run it now */
	struct http_req		*reading;	/* body not all in yet */
	uint64_t		 next_eof_check;
	struct http_req		*deferred;
	bool			 quiesced;
	struct conn		*conns;		/* every open connection */
	size_t			 nconns;
	size_t			 nwaiting;	/* half-open: not PH_BUSY */
	size_t			 ncut;		/* cut, not yet closed */
	uint64_t		 next_sweep;
	size_t			 buffered;	/* bytes all bodies hold */
	struct lingerer		*lingers;
	size_t			 nlingers;
};

/* Why a request is refused before its handler runs. */
enum reject {
	REJ_NONE, REJ_TOKEN, REJ_NO_ROUTE, REJ_METHOD, REJ_TOO_BIG, REJ_NUL,
	REJ_BUSY, REJ_HELD
};

struct http_req {
	struct http_server	*srv;
	struct MHD_Connection	*conn;
	struct conn		*c;
	char			 uri[URI_LOG_MAX];
	const char		*method;
	const char		*path;
	char			*target;	/* the raw request-target */
	bool			 paused;	/* body reading stopped */
	const struct http_route	*route;
	const struct dialect	*dialect;	/* never NULL */
	const char		*pnames[MAX_PARAMS];
	char			*pvals[MAX_PARAMS];
	size_t			 nparams;
	struct buf		 body;
	json_t			*json;
	bool			 started;
	bool			 in_handler;
	bool			 deferred;	/* suspended, awaiting reply */
	struct MHD_Response	*held;		/* reply made while suspended */
	unsigned		 held_status;
	http_defer_cancel_cb	*cancel;
	void			*cancel_arg;
	struct http_req		*dprev, *dnext;
	bool			 reading;	/* on srv->reading */
	struct http_req		*rprev, *rnext;
	enum reject		 reject;
	bool			 too_big;
	bool			 busy;		/* over --body-memory */
	size_t			 charged;	/* of srv->buffered */
	struct parse_job	*pjob;		/* JSON parse under way */
	struct body_work	*bwork;		/* a sink's job under way */
	bool			 parsed;	/* ... and done: json, perr */
	json_error_t		 perr;
	struct http_upgrade	*upgrade;	/* 101 queued, not yet out */
	http_body_cb		*sink_data;	/* streamed body, or NULL */
	http_body_end_cb	*sink_end;
	http_body_abort_cb	*sink_abort;
	void			*sink_arg;
	http_tap_cb		*tap;		/* told of the answer, once */
	void			*tap_arg;
	bool			 sink_done;	/* end or abort has run */
	uint64_t		 nread;		/* streamed bytes so far */
	uint64_t		 ndropped;	/* ... read after a reply */
	const char		*nul_key;	/* a query key with a NUL */
	bool			 replied;
	unsigned		 status;
	uint64_t		 t0;
};

static enum MHD_Result	 access_cb(void *, struct MHD_Connection *,
			    const char *, const char *, const char *,
			    const char *, size_t *, void **);
static void		*uri_cb(void *, const char *, struct MHD_Connection *);
static enum MHD_Result	 accept_cb(void *, const struct sockaddr *, socklen_t);
static void		 completed_cb(void *, struct MHD_Connection *, void **,
			    enum MHD_RequestTerminationCode);
static void		 mhd_log(void *, const char *, va_list)
			    __attribute__((format(printf, 2, 0)));
static void		 mhd_ready(struct loop *, int, void *, int, void *);
static long		 mhd_timeout(struct loop *, void *);
static void		 mhd_run(struct loop *, void *);
static int		 listen_on(const struct http_conf *, uint16_t *,
			    char *, size_t);
static bool		 token_ok(struct http_req *);
static void		 redact_token(char *);
static bool		 is_token_key(const char *, size_t);
static int		 route_find(struct http_req *, bool *);
static bool		 match(const char *, const char *, struct http_req *);
static void		 queue(struct http_req *, unsigned,
			    struct MHD_Response *);
static void		 reply_raw(struct http_req *, unsigned, const char *,
			    size_t, const char *);
static void		 stream_gone(struct sse_stream *, void *);
static int		 parse_body(struct http_req *);
static int		 fields_body(struct http_req *);
static enum reject	 check(struct http_req *);
static bool		 has_body(struct MHD_Connection *);
static void		 reject(struct http_req *);
static void		 unlink_deferred(struct http_req *);
static void		 unlink_reading(struct http_req *);
static void		 check_eof(struct http_server *);
static bool		 client_left(struct http_req *);
static void		 run_handler(struct http_req *, http_handler *);
static void		 sink_feed(struct http_req *, const char *, size_t);
static ssize_t		 reader_read(void *, uint64_t, char *, size_t);
static void		 upgraded(void *, struct MHD_Connection *, void *,
			    const char *, size_t, MHD_socket,
			    struct MHD_UpgradeResponseHandle *);
static void		 close_upgrades(struct http_server *);
static void		 wake_sleepers(struct http_server *);
static void		 reader_free(void *);
static void		 notify_cb(void *, struct MHD_Connection *, void **,
			    enum MHD_ConnectionNotificationCode);
static void		 conn_phase(struct conn *, enum phase);
static void		 conn_cut(struct conn *, const char *);
static bool		 cut_oldest(struct http_server *);
static void		 sweep(struct http_server *);
static void		 check_file(struct conn *);
static uint64_t		 rx_bytes(int);
static void		 linger_start(struct http_server *, int);
static void		 linger_read(struct loop *, int, void *, int, void *);
static void		 linger_timeout(struct loop *, uint64_t, void *);
static void		 linger_end(struct lingerer *);
static void		 body_charge(struct http_req *);
static void		 body_reserve(struct http_req *);
static void		 body_release(struct http_req *);
static void		 reply_busy(struct http_req *);
static void		 tap_fire(struct http_req *, unsigned, const char *,
			    const void *, size_t);
static void		 parse_start(struct http_req *);
static void		 parse_run(void *);
static void		 parse_done(void *);
static void		 parse_cancel(struct http_req *, void *);
static void		 defer_link(struct http_req *, http_defer_cancel_cb *,
			    void *);
static void		 hw_cancel(struct http_req *, void *);
static void		 hw_run(void *);
static void		 hw_done(void *);
static void		 reply_timeout(struct http_req *, unsigned);
static void		 bw_timeout(struct loop *, uint64_t, void *);
static void		 bw_run(void *);
static void		 bw_done(void *);

/* Bind, start MHD without threads and put its epoll fd on the loop. */
int
http_new(struct loop *loop, const struct http_conf *conf,
    const struct http_route *routes, size_t nroutes, void *app,
    struct http_server **out, char *err, size_t errlen)
{
	struct http_server *srv;
	const union MHD_DaemonInfo *info;
	int rc;

	srv = xcalloc(1, sizeof(*srv));
	srv->loop = loop;
	srv->conf = *conf;
	srv->routes = routes;
	srv->nroutes = nroutes;
	srv->app = app;
	srv->lfd = -1;
	if (conf->token != NULL && conf->token[0] != '\0') {
		/*
		 * Keep only a digest: comparing digests with CRYPTO_memcmp
		 * takes the same time whatever the token's length and
		 * whatever the client sends.
		 */
		if (dialect_token_hash(conf->token, srv->token_md) < 0) {
			snprintf(err, errlen, "cannot hash the access token");
			rc = -EINVAL;
			goto fail;
		}
		srv->has_token = true;
	}
	srv->conf.token = NULL;		/* not kept past this point */
	if ((rc = listen_on(conf, &srv->port, err, errlen)) < 0)
		goto fail;
	srv->lfd = rc;
	srv->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
	    MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG |
	    (strchr(conf->addr, ':') ? MHD_USE_IPv6 : 0),
	    0, accept_cb, srv, access_cb, srv,
	    MHD_OPTION_LISTEN_SOCKET, srv->lfd,
	    MHD_OPTION_CONNECTION_LIMIT, conf->max_conns + 64,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, conf->max_conns_per_ip,
	    MHD_OPTION_CONNECTION_TIMEOUT, conf->conn_timeout,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
	    MHD_OPTION_URI_LOG_CALLBACK, uri_cb, srv,
	    MHD_OPTION_NOTIFY_COMPLETED, completed_cb, srv,
	    MHD_OPTION_NOTIFY_CONNECTION, notify_cb, srv,
	    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, srv,
	    MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1,
	    MHD_OPTION_END);
	if (srv->mhd == NULL) {
		snprintf(err, errlen, "cannot start the HTTP server");
		rc = -EIO;
		goto fail;
	}
	info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (info == NULL) {
		snprintf(err, errlen, "the HTTP server has no epoll fd");
		rc = -EIO;
		goto fail;
	}
	srv->epfd = info->epoll_fd;
	loop_add_fd(loop, srv->epfd, LOOP_READ, mhd_ready, srv);
	loop_on_timeout(loop, mhd_timeout, srv);
	loop_on_after_poll(loop, mhd_run, srv);
	*out = srv;
	return 0;
fail:
	if (srv->mhd != NULL)
		MHD_stop_daemon(srv->mhd);
	if (srv->lfd >= 0)
		close(srv->lfd);
	free(srv);
	return rc;
}

/*
 * A listening socket of our own, so that we choose the address family,
 * learn the port when asked for any (0), and can close it to quiesce.
 */
static int
listen_on(const struct http_conf *conf, uint16_t *port, char *err,
    size_t errlen)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd, on = 1, saved;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, conf->addr, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(conf->port);
		len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, conf->addr, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(conf->port);
		len = sizeof(*sin6);
	} else {
		snprintf(err, errlen, "not a numeric address: %s", conf->addr);
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (fd < 0)
		goto fail;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 1024) < 0)
		goto fail;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		goto fail;
	*port = ntohs(ss.ss_family == AF_INET ? sin->sin_port :
	    sin6->sin6_port);
	return fd;
fail:
	saved = errno;
	snprintf(err, errlen, "cannot listen on %s port %u: %s", conf->addr,
	    conf->port, strerror(saved));
	if (fd >= 0)
		close(fd);
	return -saved;
}

/*
 * The total connection limit is ours, not MHD's: at its own limit MHD
 * leaves new connections in the backlog, and in epoll mode it may not
 * look at the listening socket again until yet another client arrives.
 * Refusing here closes the connection at once instead.  Before refusing,
 * make room by closing the connection that has waited longest for its
 * request, and do the same past the half-open budget: a client that
 * holds connections open then only ever pushes out its own.
 */
static enum MHD_Result
accept_cb(void *cls, const struct sockaddr *sa, socklen_t len)
{
	struct http_server *srv = cls;

	if (srv->conf.max_half_open > 0 &&
	    srv->nwaiting + srv->nlingers >= srv->conf.max_half_open)
		cut_oldest(srv);
	if (srv->nconns - srv->ncut + srv->nlingers >= srv->conf.max_conns &&
	    !cut_oldest(srv)) {
		log_debug("connection refused: %zu connections open",
		    srv->nconns);
		return MHD_NO;
	}
	return MHD_YES;
}

/* MHD's connection start and end: our per-connection state. */
static void
notify_cb(void *cls, struct MHD_Connection *mc, void **socket_ctx,
    enum MHD_ConnectionNotificationCode code)
{
	struct http_server *srv = cls;
	const union MHD_ConnectionInfo *ci;
	struct conn *c;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		c = xcalloc(1, sizeof(*c));
		c->srv = srv;
		c->mc = mc;
		ci = MHD_get_connection_info(mc,
		    MHD_CONNECTION_INFO_CONNECTION_FD);
		c->fd = ci != NULL ? ci->connect_fd : -1;
		c->phase = PH_HEAD;
		c->since = loop_now_ms();
		c->rx_mark = RX_UNKNOWN;
		c->file_fd = -1;
		c->next = srv->conns;
		if (srv->conns != NULL)
			srv->conns->prev = c;
		srv->conns = c;
		srv->nconns++;
		srv->nwaiting++;
		*socket_ctx = c;
		return;
	}
	if ((c = *socket_ctx) == NULL)
		return;
	*socket_ctx = NULL;
	/* MHD closes its descriptor right after this; a lingerer keeps a dup. */
	if (c->linger && !c->cut && c->fd >= 0)
		linger_start(srv, c->fd);
	if (c->cut)
		srv->ncut--;
	else if (c->phase != PH_BUSY)
		srv->nwaiting--;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	srv->nconns--;
	free(c);
}

/* Move a connection to phase ph, keeping the half-open count. */
static void
conn_phase(struct conn *c, enum phase ph)
{
	if (c == NULL || c->upgraded || c->phase == ph)
		return;
	if (!c->cut) {
		if (c->phase == PH_BUSY)
			c->srv->nwaiting++;
		else if (ph == PH_BUSY)
			c->srv->nwaiting--;
	}
	c->phase = ph;
	c->since = loop_now_ms();
	if (ph == PH_BODY)
		c->nbody = 0;
	if (ph == PH_IDLE)
		c->rx_mark = RX_UNKNOWN;
}

/*
 * Close a connection from outside MHD: shut the socket down, which MHD
 * sees on its next run as the client leaving.
 */
static void
conn_cut(struct conn *c, const char *why)
{
	struct http_server *srv = c->srv;

	if (c->cut)
		return;
	log_debug("closing a connection: %s", why);
	if (c->phase != PH_BUSY)
		srv->nwaiting--;
	c->cut = true;
	srv->ncut++;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	srv->kick = true;
}

/*
 * Cut the half-open connection that has waited longest: first a
 * lingering socket (its request has had its answer), then one that has
 * not yet sent a whole header (a body under way has shown more of a
 * client's good faith).  False if none is half-open.
 */
static bool
cut_oldest(struct http_server *srv)
{
	struct conn *best = NULL;
	struct lingerer *lg;

	if ((lg = srv->lingers) != NULL) {	/* the newest is first */
		while (lg->next != NULL)
			lg = lg->next;
		log_debug("closing a lingering socket: too many half-open "
		    "connections");
		linger_end(lg);
		return true;
	}
	for (struct conn *c = srv->conns; c != NULL; c = c->next) {
		if (c->cut || c->phase == PH_BUSY)
			continue;
		if (best == NULL ||
		    (best->phase == PH_BODY && c->phase != PH_BODY) ||
		    ((best->phase == PH_BODY) == (c->phase == PH_BODY) &&
		    c->since < best->since))
			best = c;
	}
	if (best == NULL)
		return false;
	conn_cut(best, best->phase == PH_BODY ? "too many half-open "
	    "connections (oldest body)" : "too many half-open connections");
	return true;
}

/* Bytes the kernel has received on a TCP socket, or RX_UNKNOWN. */
static uint64_t
rx_bytes(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) +
	    sizeof(ti.tcpi_bytes_received))
		return RX_UNKNOWN;
	return ti.tcpi_bytes_received;
}

/*
 * Once a second: cut headers and bodies past their deadlines, and start
 * the header clock of an idle connection once bytes arrive on it (MHD's
 * buffer hides them from us, the kernel's byte count does not).
 */
static void
sweep(struct http_server *srv)
{
	const struct http_conf *cf = &srv->conf;
	uint64_t now = loop_now_ms(), rx, allowed;
	struct conn *c, *next;

	if (now < srv->next_sweep)
		return;
	srv->next_sweep = now + SWEEP_MS;
	for (c = srv->conns; c != NULL; c = next) {
		next = c->next;
		if (!c->cut && c->file_fd >= 0)
			check_file(c);
		if (c->cut || c->phase == PH_BUSY)
			continue;
		switch (c->phase) {
		case PH_HEAD:
			if (cf->header_timeout > 0 && now - c->since >=
			    (uint64_t)cf->header_timeout * 1000)
				conn_cut(c, "request headers too slow");
			break;
		case PH_BODY:
			if (cf->body_timeout == 0)
				break;
			allowed = (uint64_t)cf->body_timeout * 1000;
			if (cf->body_min_rate > 0)
				allowed += c->nbody * 1000 / cf->body_min_rate;
			if (now - c->since > allowed)
				conn_cut(c, "request body too slow");
			break;
		case PH_IDLE:
			rx = rx_bytes(c->fd);
			if (c->rx_mark == RX_UNKNOWN)
				c->rx_mark = rx;
			else if (rx != RX_UNKNOWN && rx > c->rx_mark)
				conn_phase(c, PH_HEAD);
			break;
		case PH_BUSY:
			break;
		}
	}
}

/*
 * A file sent with a promised length that has become shorter than that
 * (truncated while it is sent) can never end its response: MHD would
 * wait for bytes that will not come until the idle timeout.  Close the
 * connection, which is how HTTP says the body was cut short.
 */
static void
check_file(struct conn *c)
{
	struct stat st;

	if (fstat(c->file_fd, &st) < 0 || (uint64_t)st.st_size >= c->file_end)
		return;
	log_warnx("a file was truncated while it was sent (%llu bytes of "
	    "%llu left): closing the connection",
	    (unsigned long long)st.st_size, (unsigned long long)c->file_end);
	c->file_fd = -1;
	conn_cut(c, "file truncated");
}

/* Keep fd (MHD is about to close it) and drop what the client sends. */
static void
linger_start(struct http_server *srv, int fd)
{
	struct lingerer *lg;
	int dfd;

	if (srv->quiesced || (dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return;
	/*
	 * The connection leaving MHD has left the half-open count (it was
	 * busy); the lingerer enters it, making room as a new one would.
	 */
	if (srv->conf.max_half_open > 0 &&
	    srv->nwaiting + srv->nlingers >= srv->conf.max_half_open)
		cut_oldest(srv);
	shutdown(dfd, SHUT_WR);
	lg = xcalloc(1, sizeof(*lg));
	lg->srv = srv;
	lg->fd = dfd;
	if (loop_add_fd(srv->loop, dfd, LOOP_READ, linger_read, lg) < 0) {
		close(dfd);
		free(lg);
		return;
	}
	lg->since = lg->last = loop_now_ms();
	lg->timer = loop_timer_add(srv->loop, LINGER_IDLE_MS, linger_timeout,
	    lg);
	lg->next = srv->lingers;
	if (srv->lingers != NULL)
		srv->lingers->prev = lg;
	srv->lingers = lg;
	srv->nlingers++;
}

/* Read and drop; end at the client's close, an error or the cap. */
static void
linger_read(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	struct lingerer *lg = arg;
	static char sink[65536];
	ssize_t n;

	for (int i = 0; i < 4; i++) {
		n = recv(lg->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
		    errno == EINTR))
			return;
		if (n <= 0 || (lg->nread += (size_t)n) > LINGER_MAX) {
			linger_end(lg);
			return;
		}
		lg->last = loop_now_ms();
	}
}

/* Every LINGER_IDLE_MS or less: end after a pause or at the time cap. */
static void
linger_timeout(struct loop *l, uint64_t id, void *arg)
{
	struct lingerer *lg = arg;
	uint64_t now = loop_now_ms(), left, idle_left;

	lg->timer = 0;
	if (now - lg->last >= LINGER_IDLE_MS || now - lg->since >= LINGER_MS) {
		linger_end(lg);
		return;
	}
	left = LINGER_MS - (now - lg->since);
	idle_left = LINGER_IDLE_MS - (now - lg->last);
	lg->timer = loop_timer_add(l, left < idle_left ? left : idle_left,
	    linger_timeout, lg);
}

/* Close a lingering socket and free it. */
static void
linger_end(struct lingerer *lg)
{
	struct http_server *srv = lg->srv;

	loop_del(srv->loop, lg->fd, NULL);
	if (lg->timer != 0)
		loop_timer_cancel(srv->loop, lg->timer);
	close(lg->fd);
	if (lg->prev != NULL)
		lg->prev->next = lg->next;
	else
		srv->lingers = lg->next;
	if (lg->next != NULL)
		lg->next->prev = lg->prev;
	srv->nlingers--;
	free(lg);
}

/* The port actually bound. */
uint16_t
http_port(const struct http_server *srv)
{
	return srv->port;
}

static void
mhd_ready(struct loop *l, int fd, void *zs, int rev, void *arg)
{
	/* Work happens in mhd_run, which follows every poll. */
}

static long
mhd_timeout(struct loop *l, void *arg)
{
	struct http_server *srv = arg;
	MHD_UNSIGNED_LONG_LONG t;

	if (srv->kick)
		return 0;
	if (MHD_get_timeout(srv->mhd, &t) != MHD_YES)
		t = ULLONG_MAX;
	if (srv->reading != NULL && t > EOF_CHECK_MS)
		return EOF_CHECK_MS;
	if (t == ULLONG_MAX)
		return -1;
	/*
	 * With connections open, wake at least once a second: MHD_run() on
	 * a quiet daemon costs next to nothing, and it bounds the wait on
	 * an event MHD missed (check_eof handles the one case known).
	 */
	return t > HTTP_WAKE_MS ? HTTP_WAKE_MS : (long)t;
}

static void
mhd_run(struct loop *l, void *arg)
{
	struct http_server *srv = arg;

	srv->kick = false;
	MHD_run(srv->mhd);
	check_eof(srv);
	sweep(srv);
}

static void
mhd_log(void *arg, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
		msg[--n] = '\0';
	log_debug("%s", msg);
}

/*
 * First sight of a request: allocate its context, keeping the raw URI for
 * the access log (capped; a query string is logged, a body never).
 */
static void *
uri_cb(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct http_req *req = xcalloc(1, sizeof(*req));
	const union MHD_ConnectionInfo *ci;

	req->srv = cls;
	req->conn = conn;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	req->c = ci != NULL ? ci->socket_context : NULL;
	if (req->c != NULL && req->c->phase == PH_IDLE)
		conn_phase(req->c, PH_HEAD);
	req->dialect = &dialect_opensandbox;
	req->t0 = loop_now_ms();
	snprintf(req->uri, sizeof(req->uri), "%s", uri);
	req->target = xstrdup(uri);
	buf_init_max(&req->body, req->srv->conf.max_body);
	req->reading = true;
	req->rnext = req->srv->reading;
	if (req->rnext != NULL)
		req->rnext->rprev = req;
	req->srv->reading = req;
	return req;
}

/*
 * Constant-time check of the access token, in the forms the request's
 * dialect accepts (dialect_token_ok compares digests).
 */
/* The digest of the token in force: a bound one replaces the other. */
static const unsigned char *
token_md(const struct http_server *srv)
{
	return srv->has_bound ? srv->bound_md : srv->token_md;
}

/* The Cookie headers of a request, a few at most. */
struct jar {
	const char	*v[9];
	size_t		 n;
};

static enum MHD_Result
cookie_hdr(void *arg, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct jar *j = arg;

	(void)kind;
	if (strcasecmp(k, MHD_HTTP_HEADER_COOKIE) == 0 && v != NULL &&
	    j->n < sizeof(j->v) / sizeof(j->v[0]) - 1)
		j->v[j->n++] = v;
	return MHD_YES;
}

static bool
token_ok(struct http_req *req)
{
	struct dialect_creds c = { NULL, NULL, NULL, NULL, NULL };
	struct jar jar = { { NULL }, 0 };
	char scope[64];
	unsigned forms = req->dialect->tokens;

	if (forms & DIALECT_T_QUERY)
		redact_token(req->uri);
	if (!req->srv->has_token && !req->srv->has_bound)
		return true;
	if (forms & DIALECT_T_HEADER)
		c.header = MHD_lookup_connection_value(req->conn,
		    MHD_HEADER_KIND, TOKEN_HEADER);
	if (forms & (DIALECT_T_TOKEN | DIALECT_T_BEARER))
		c.authorization = MHD_lookup_connection_value(req->conn,
		    MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (forms & DIALECT_T_QUERY)
		c.query = MHD_lookup_connection_value(req->conn,
		    MHD_GET_ARGUMENT_KIND, TOKEN_QUERY);
	if ((forms & DIALECT_T_COOKIE) && dialect_cookie_scope(req->path,
	    scope, sizeof(scope)) == 0) {
		MHD_get_connection_values(req->conn, MHD_HEADER_KIND,
		    cookie_hdr, &jar);
		c.cookies = jar.v;
		c.scope = scope;
	}
	/* A bound token replaces the configured one; see http_bind_token. */
	return dialect_token_ok(req->dialect, &c, token_md(req->srv));
}

/* Whether the request's ?token= is the token in force; see http.h. */
bool
http_req_query_token_ok(struct http_req *req)
{
	static const struct dialect query_only = {
		.tokens = DIALECT_T_QUERY
	};
	struct dialect_creds c = { NULL, NULL, NULL, NULL, NULL };

	if (!http_has_token(req->srv))
		return false;
	c.query = MHD_lookup_connection_value(req->conn,
	    MHD_GET_ARGUMENT_KIND, TOKEN_QUERY);
	return c.query != NULL &&
	    dialect_token_ok(&query_only, &c, token_md(req->srv));
}

/* The cookie that opens scope; see http.h. */
int
http_scope_cookie(const struct http_req *req, const char *scope,
    char out[DIALECT_COOKIE_LEN + 1])
{
	if (!http_has_token(req->srv))
		return -ENOENT;
	return dialect_cookie_value(token_md(req->srv), scope, out);
}

/* Whether req carries the token in force; see http.h. */
bool
http_req_token_ok(struct http_req *req)
{
	return token_ok(req);
}

/* Whether any token is in force; see http.h. */
bool
http_has_token(const struct http_server *srv)
{
	return srv->has_token || srv->has_bound;
}

/* Replace (or, md NULL, drop) the bound token; see http.h. */
void
http_bind_token(struct http_server *srv, const unsigned char *md)
{
	srv->has_bound = md != NULL;
	if (md != NULL)
		memcpy(srv->bound_md, md, DIALECT_MD_LEN);
	else
		explicit_bzero(srv->bound_md, DIALECT_MD_LEN);
}

/* Hold every route but the open ones at 503, or stop; see http.h. */
void
http_hold(struct http_server *srv, bool held)
{
	srv->held = held;
}

/* Whether the n bytes at k, %-decoded, are TOKEN_QUERY. */
static bool
is_token_key(const char *k, size_t n)
{
	const char *want = TOKEN_QUERY;
	char ch;

	for (size_t i = 0; i < n; i++) {
		ch = k[i];
		if (ch == '%' && i + 2 < n && hex_digit(k[i + 1]) >= 0 &&
		    hex_digit(k[i + 2]) >= 0) {
			ch = (char)(hex_digit(k[i + 1]) << 4 | hex_digit(k[i + 2]));
			i += 2;
		}
		if (*want == '\0' || ch != *want++)
			return false;
	}
	return *want == '\0';
}

/*
 * In the logged URI, hide the value of every token= of the query, for a
 * dialect that takes the token there: the access log never holds it.
 */
static void
redact_token(char *uri)
{
	char out[URI_LOG_MAX];
	const char *p, *amp, *eq;
	size_t o, klen;
	int n;

	if ((p = strchr(uri, '?')) == NULL)
		return;
	p++;
	o = (size_t)(p - uri);
	memcpy(out, uri, o);
	while (*p != '\0' && o < sizeof(out) - 1) {
		amp = p + strcspn(p, "&");
		eq = memchr(p, '=', (size_t)(amp - p));
		klen = eq != NULL ? (size_t)(eq - p) : (size_t)(amp - p);
		if (eq != NULL && is_token_key(p, klen))
			n = snprintf(out + o, sizeof(out) - o,
			    "%.*s=[hidden]%s", (int)klen, p,
			    *amp == '&' ? "&" : "");
		else
			n = snprintf(out + o, sizeof(out) - o, "%.*s",
			    (int)(amp - p) + (*amp == '&'), p);
		if (n < 0 || (size_t)n >= sizeof(out) - o) {
			o = sizeof(out) - 1;
			break;
		}
		o += (size_t)n;
		p = *amp == '&' ? amp + 1 : amp;
	}
	out[o] = '\0';
	memcpy(uri, out, o + 1);
}

/*
 * Match the path against a route pattern, filling path parameters.  A
 * trailing slash on the request path is ignored.
 */
static bool
match(const char *pat, const char *path, struct http_req *req)
{
	const char *p = pat, *s = path, *end;
	size_t n;

	req->nparams = 0;
	while (*p != '\0') {
		if (*p == '{') {
			end = strchr(p, '}');
			n = strcspn(s, "/");
			if (end == NULL || n == 0 || req->nparams == MAX_PARAMS)
				return false;
			req->pnames[req->nparams] = p + 1;
			req->pvals[req->nparams++] = xstrndup(s, n);
			p = end + 1;
			s += n;
			continue;
		}
		if (*p++ != *s++)
			return false;
	}
	return *s == '\0' || (s[0] == '/' && s[1] == '\0');
}

/* A route's path matches: by segments, or by prefix (HTTP_R_PREFIX). */
static bool
route_match(const struct http_route *r, const char *path,
    struct http_req *req)
{
	if (r->flags & HTTP_R_PREFIX) {
		req->nparams = 0;
		return strncmp(path, r->path, strcspn(r->path, "{")) == 0;
	}
	return match(r->path, path, req);
}

/* The dialect a row names. */
static const struct dialect *
dialect_of(const struct http_route *r)
{
	return r->dialect != NULL ? r->dialect : &dialect_opensandbox;
}

/*
 * 0 with req->route set; -ENOENT no path matched; -EPERM wrong method.
 * Either way req->dialect is set: the route's; else the first route's
 * whose path matched; else the first group's; else the default.
 */
static int
route_find(struct http_req *req, bool *path_known)
{
	const struct http_route *r;
	const struct dialect *path_d = NULL, *group_d = NULL;

	*path_known = false;
	for (size_t i = 0; i < req->srv->nroutes; i++) {
		r = &req->srv->routes[i];
		for (size_t j = 0; j < req->nparams; j++)
			free(req->pvals[j]);
		req->nparams = 0;
		if (!route_match(r, req->path, req))
			continue;
		if (r->fn == NULL) {	/* a group: never a route */
			if (group_d == NULL)
				group_d = dialect_of(r);
			continue;
		}
		*path_known = true;
		if (path_d == NULL)
			path_d = dialect_of(r);
		if (strcmp(r->method, "*") == 0 ||
		    strcmp(r->method, req->method) == 0) {
			req->route = r;
			req->dialect = dialect_of(r);
			return 0;
		}
	}
	for (size_t j = 0; j < req->nparams; j++)
		free(req->pvals[j]);
	req->nparams = 0;
	req->dialect = path_d != NULL ? path_d : group_d != NULL ? group_d :
	    &dialect_opensandbox;
	return *path_known ? -EPERM : -ENOENT;
}

static void
allow_header(struct http_req *req, struct MHD_Response *resp)
{
	struct buf b;
	const struct http_route *r;
	struct http_req tmp = { .srv = req->srv };

	buf_init(&b);
	for (size_t i = 0; i < req->srv->nroutes; i++) {
		r = &req->srv->routes[i];
		if (r->fn != NULL && route_match(r, req->path, &tmp))
			buf_addf(&b, "%s%s", b.len ? ", " : "", r->method);
		for (size_t j = 0; j < tmp.nparams; j++)
			free(tmp.pvals[j]);
		tmp.nparams = 0;
	}
	if (b.len > 0)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, b.p);
	buf_reset(&b);
}

/* Stop at a query key or value with a NUL byte (sent as %00). */
static enum MHD_Result
arg_nul(void *cls, enum MHD_ValueKind kind, const char *k, size_t klen,
    const char *v, size_t vlen)
{
	const char **bad = cls;

	if (strlen(k) != klen || (v != NULL && strlen(v) != vlen)) {
		*bad = k;
		return MHD_NO;
	}
	return MHD_YES;
}

/*
 * Decide, from the headers alone, whether the request is refused.  The
 * route comes first, since its dialect says where the token may be; the
 * token is still checked before anything else is said, so that a client
 * without it learns nothing of which paths and methods exist.
 */
static enum reject
check(struct http_req *req)
{
	const char *cl;
	bool known;
	int rc;

	rc = route_find(req, &known);
	/*
	 * Open routes (probes, runtime initialisation) need no token and
	 * are never held; every other request is held while execd waits
	 * for its initialisation, whatever credentials it carries.
	 */
	if (rc < 0 || !(req->route->flags & HTTP_R_OPEN)) {
		if (req->srv->held) {
			req->route = NULL;
			return REJ_HELD;
		}
		if (!token_ok(req)) {
			req->route = NULL;	/* nothing of it runs */
			return REJ_TOKEN;
		}
	}
	if (rc < 0)
		return rc == -ENOENT ? REJ_NO_ROUTE : REJ_METHOD;
	/*
	 * MHD decodes %00 and hands out C strings, which would cut such a
	 * value short: "/a%00/b" would name "/a".  Refuse it instead.
	 */
	req->nul_key = NULL;
	MHD_get_connection_values_n(req->conn, MHD_GET_ARGUMENT_KIND, arg_nul,
	    &req->nul_key);
	if (req->nul_key != NULL)
		return REJ_NUL;
	cl = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_LENGTH);
	if ((req->route->flags & (HTTP_R_BODY | HTTP_R_RAW)) && cl != NULL &&
	    strtoull(cl, NULL, 10) > req->srv->conf.max_body)
		return REJ_TOO_BIG;
	/* A body that cannot fit beside those held now: say so at once. */
	if ((req->route->flags & (HTTP_R_BODY | HTTP_R_RAW)) && cl != NULL &&
	    req->srv->conf.body_memory > 0 &&
	    req->srv->buffered + strtoull(cl, NULL, 10) >
	    req->srv->conf.body_memory)
		return REJ_BUSY;
	if ((req->route->flags & HTTP_R_STREAM) && cl != NULL &&
	    req->srv->conf.max_upload > 0 &&
	    strtoull(cl, NULL, 10) > req->srv->conf.max_upload)
		return REJ_TOO_BIG;
	return REJ_NONE;
}

/* Whether the request announces a body. */
static bool
has_body(struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_LENGTH);

	if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL)
		return true;
	return cl != NULL && strtoull(cl, NULL, 10) > 0;
}

/* The dialect's answer to a request without the token; see http.h. */
void
http_reply_deny(struct http_req *req)
{
	struct buf b;
	unsigned status;

	buf_init(&b);
	status = dialect_deny(req->dialect, &b);
	http_reply_text(req, status, req->dialect->type, b.p, b.len,
	    req->dialect->deny_hname, req->dialect->deny_hval);
	buf_reset(&b);
}

/* Answer a refused request. */
static void
reject(struct http_req *req)
{
	struct buf b;
	unsigned status;

	switch (req->reject) {
	case REJ_TOKEN:
		buf_init(&b);
		status = dialect_deny(req->dialect, &b);
		http_reply_text(req, status, req->dialect->type, b.p, b.len,
		    req->dialect->deny_hname, req->dialect->deny_hval);
		buf_reset(&b);
		break;
	case REJ_NO_ROUTE:
		http_reply_error(req, MHD_HTTP_NOT_FOUND, HTTP_E_NOT_FOUND,
		    "no such endpoint: %s", req->path);
		break;
	case REJ_METHOD:
		http_reply_error(req, MHD_HTTP_METHOD_NOT_ALLOWED,
		    HTTP_E_METHOD, "method %s is not allowed on %s",
		    req->method, req->path);
		break;
	case REJ_TOO_BIG:
		if (req->route->flags & HTTP_R_STREAM)
			http_reply_error(req, MHD_HTTP_CONTENT_TOO_LARGE,
			    HTTP_E_TOO_LARGE, "upload is larger than %llu "
			    "bytes", (unsigned long long)
			    req->srv->conf.max_upload);
		else
			http_reply_error(req, MHD_HTTP_CONTENT_TOO_LARGE,
			    HTTP_E_TOO_LARGE, "request body is larger than "
			    "%zu bytes", req->srv->conf.max_body);
		break;
	case REJ_NUL:
		http_reply_error(req, MHD_HTTP_BAD_REQUEST, HTTP_E_BODY,
		    "invalid query parameter '%.64s': it contains a NUL byte",
		    req->nul_key);
		break;
	case REJ_BUSY:
		reply_busy(req);
		break;
	case REJ_HELD:
		buf_init(&b);
		dialect_hold(req->dialect, &b);
		http_reply_text(req, MHD_HTTP_SERVICE_UNAVAILABLE,
		    req->dialect->type, b.p, b.len, NULL, NULL);
		buf_reset(&b);
		break;
	case REJ_NONE:
		fatalx("nothing to reject");
	}
}

/* The one access handler; see the file comment for the call sequence. */
static enum MHD_Result
access_cb(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *data,
    size_t *data_size, void **con_cls)
{
	struct http_req *req = *con_cls;

	if (req == NULL)	/* cannot happen: uri_cb always runs first */
		fatalx("request without context");
	if (req->started && *data_size > 0 && req->c != NULL)
		req->c->nbody += *data_size;
	if (req->started && *data_size == 0) {
		unlink_reading(req);	/* the whole body is in */
		conn_phase(req->c, PH_BUSY);
	}
	if (req->replied) {
		if (*data_size > 0 && req->held != NULL) {
			/* Refused midway: drop the rest, then answer. */
			req->ndropped += *data_size;
			*data_size = 0;
			return req->ndropped > DISCARD_MAX ? MHD_NO : MHD_YES;
		}
		if (req->held != NULL) {
			/* Resumed to deliver a deferred reply: queue it now. */
			if (MHD_queue_response(conn, req->held_status,
			    req->held) != MHD_YES)
				log_warnx("cannot queue the response to %s %s",
				    req->method, req->uri);
			MHD_destroy_response(req->held);
			req->held = NULL;
		}
		*data_size = 0;	/* answered early: discard the body */
		return MHD_YES;
	}
	if (!req->started) {
		req->started = true;
		req->method = method;
		req->path = url;
		req->reject = check(req);
		if (req->reject == REJ_NONE)
			body_reserve(req);
		if (has_body(conn))
			conn_phase(req->c, PH_BODY);
		/*
		 * Refuse at once when a body is coming, so it need not be
		 * read (MHD then closes the connection); without a body,
		 * answer on the last call and keep the connection alive.
		 */
		if (req->reject != REJ_NONE && has_body(conn))
			reject(req);
		else if (req->reject == REJ_NONE &&
		    (req->route->flags & HTTP_R_STREAM))
			run_handler(req, req->route->fn);
		return MHD_YES;
	}
	if (req->sink_data != NULL) {
		if (*data_size > 0) {
			sink_feed(req, data, *data_size);
			*data_size = 0;
			return MHD_YES;
		}
		req->sink_done = true;
		run_handler(req, NULL);
		return MHD_YES;
	}
	if (*data_size > 0) {
		/* Bodies of routes that take none are read and dropped. */
		if (req->route != NULL && (req->route->flags & (HTTP_R_BODY |
		    HTTP_R_RAW)) && !req->too_big && !req->busy) {
			if (req->body.len + *data_size >
			    req->srv->conf.max_body) {
				req->too_big = true;
				body_release(req);
			} else if (req->srv->conf.body_memory > 0 &&
			    req->srv->buffered - req->charged +
			    req->body.len + *data_size >
			    req->srv->conf.body_memory) {
				req->busy = true;
				body_release(req);
			} else {
				buf_add(&req->body, data, *data_size);
				body_charge(req);
			}
		}
		*data_size = 0;
		return MHD_YES;
	}
	if (req->too_big)
		req->reject = REJ_TOO_BIG;
	else if (req->busy)
		req->reject = REJ_BUSY;
	if (req->reject != REJ_NONE) {
		reject(req);
		return MHD_YES;
	}
	if (req->route->flags & HTTP_R_BODY) {
		if (!req->parsed && req->body.len >= PARSE_ASYNC_MIN) {
			parse_start(req);
			return MHD_YES;
		}
		if (parse_body(req) < 0 || fields_body(req) < 0)
			return MHD_YES;
	}
	run_handler(req, req->route->fn);
	return MHD_YES;
}

/* Count what req's body buffer holds against --body-memory. */
static void
body_charge(struct http_req *req)
{
	req->srv->buffered += buf_cost(&req->body) - req->charged;
	req->charged = buf_cost(&req->body);
}

/*
 * Hold the memory of a declared body at once, as check() counted it: what
 * --body-memory counts is then what is allocated, in whatever order the
 * bodies of several requests arrive.
 */
static void
body_reserve(struct http_req *req)
{
	const char *cl;
	unsigned long long n;

	if (!(req->route->flags & (HTTP_R_BODY | HTTP_R_RAW)) ||
	    (cl = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_LENGTH)) == NULL ||
	    (n = strtoull(cl, NULL, 10)) == 0 || n > req->srv->conf.max_body)
		return;
	(void)buf_reserve(&req->body, (size_t)n);
	body_charge(req);
}

/* Free req's body buffer and its share of --body-memory. */
static void
body_release(struct http_req *req)
{
	req->srv->buffered -= req->charged;
	req->charged = 0;
	buf_reset(&req->body);
}

/* 503 SERVER_BUSY with Retry-After, in the dialect's error shape. */
static void
reply_busy(struct http_req *req)
{
	struct buf b;

	buf_init(&b);
	dialect_error(req->dialect, &b, MHD_HTTP_SERVICE_UNAVAILABLE,
	    HTTP_E_BUSY, "too many request bodies are being received; "
	    "retry shortly");
	http_reply_text(req, MHD_HTTP_SERVICE_UNAVAILABLE,
	    req->dialect->type, b.p, b.len, MHD_HTTP_HEADER_RETRY_AFTER,
	    BUSY_RETRY);
	buf_reset(&b);
}

/*
 * Parse a large JSON body on a worker: the job takes the body (and its
 * charge), the connection waits suspended like a deferred request, and
 * parse_done resumes it, whereupon MHD calls the access handler again
 * and the handler runs with req->parsed set.
 */
static void
parse_start(struct http_req *req)
{
	struct http_server *srv = req->srv;
	struct parse_job *job = xcalloc(1, sizeof(*job));

	job->srv = srv;
	job->req = req;
	job->body = req->body;
	job->charged = req->charged;
	buf_init(&req->body);
	req->charged = 0;
	req->pjob = job;
	defer_link(req, parse_cancel, job);
	MHD_suspend_connection(req->conn);
	work_submit(parse_run, parse_done, job);
}

/* Worker thread: touches the job only. */
static void
parse_run(void *arg)
{
	struct parse_job *job = arg;

	job->json = json_loadb(job->body.p, job->body.len,
	    JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL, &job->e);
}

/* Loop thread: hand the result to the request, if it is still there. */
static void
parse_done(void *arg)
{
	struct parse_job *job = arg;
	struct http_req *req = job->req;

	job->srv->buffered -= job->charged;
	buf_reset(&job->body);
	if (req == NULL) {
		json_decref(job->json);
		free(job);
		return;
	}
	req->pjob = NULL;
	req->json = job->json;
	req->perr = job->e;
	req->parsed = true;
	free(job);
	unlink_deferred(req);
	MHD_resume_connection(req->conn);
	req->srv->kick = true;
}

/* Shutdown while a parse is under way: forget the request. */
static void
parse_cancel(struct http_req *req, void *arg)
{
	struct parse_job *job = arg;

	job->req = NULL;
	req->pjob = NULL;
}

/*
 * Run a handler (fn), or a streamed body's end callback (fn NULL), which
 * must reply, defer, or (a streaming handler) install a sink.
 */
static void
run_handler(struct http_req *req, http_handler *fn)
{
	req->in_handler = true;
	if (fn != NULL)
		fn(req);
	else
		req->sink_end(req, req->sink_arg);
	req->in_handler = false;
	if (req->replied)
		return;
	if (fn != NULL && (req->route->flags & HTTP_R_STREAM) &&
	    req->sink_data != NULL)
		return;		/* the body comes next */
	if (!req->deferred)	/* a handler bug, not a client's */
		fatalx("%s %s: handler did not reply", req->method, req->uri);
	MHD_suspend_connection(req->conn);
}

/* Hand body bytes to the sink, under the upload cap. */
static void
sink_feed(struct http_req *req, const char *p, size_t n)
{
	uint64_t cap = req->srv->conf.max_upload;

	req->nread += n;
	if (cap > 0 && req->nread > cap) {
		req->reject = REJ_TOO_BIG;
		reject(req);
		return;
	}
	if (req->sink_data(req, p, n, req->sink_arg) < 0 && !req->replied)
		fatalx("%s %s: body sink failed without a reply",
		    req->method, req->uri);
}

/* Take the body as it arrives; see http.h. */
void
http_req_sink(struct http_req *req, http_body_cb *data, http_body_end_cb *end,
    http_body_abort_cb *abort_, void *arg)
{
	if (!req->in_handler || req->replied || req->sink_data != NULL ||
	    !(req->route->flags & HTTP_R_STREAM))
		fatalx("%s %s: bad body sink", req->method, req->uri);
	req->sink_data = data;
	req->sink_end = end;
	req->sink_abort = abort_;
	req->sink_arg = arg;
}

/* Stop reading the streamed body for now; see http.h. */
bool
http_req_pause(struct http_req *req)
{
	if (req->paused)
		return true;
	if (req->sink_done || req->replied || req->srv->quiesced)
		return false;
	req->paused = true;
	conn_phase(req->c, PH_BUSY);	/* waiting on us, not the client */
	MHD_suspend_connection(req->conn);
	return true;
}

/* Read the streamed body again. */
void
http_req_resume(struct http_req *req)
{
	if (!req->paused)
		return;
	req->paused = false;
	MHD_resume_connection(req->conn);
	req->srv->kick = true;
}

/* Check a route's body; see http.h. */
int
http_route_check(const struct http_route *r, const json_t *v, char *err,
    size_t errlen)
{
	char why[512];

	if (r->fields == NULL || v == NULL)
		return 0;
	if (body_check_table(v, "", r->fields, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s%s", r->flags & HTTP_R_PARSE_LEAD ?
		    "error parsing request: " : "invalid request, ", why);
		return -EINVAL;
	}
	return 0;
}

/* Check the parsed body against the route's fields; else reply 400, -1. */
static int
fields_body(struct http_req *req)
{
	char err[640];

	if (http_route_check(req->route, req->json, err, sizeof(err)) == 0)
		return 0;
	http_reply_error(req, MHD_HTTP_BAD_REQUEST, HTTP_E_BODY, "%s", err);
	return -1;
}

/* Parse the collected body as JSON; on failure reply 400 and return -1. */
static int
parse_body(struct http_req *req)
{
	json_error_t e;

	if (req->parsed) {
		e = req->perr;
		goto parsed;
	}
	if (req->body.len == 0 && (req->route->flags & HTTP_R_BODY_OPT))
		return 0;
	if (req->body.len == 0) {
		http_reply_error(req, MHD_HTTP_BAD_REQUEST, HTTP_E_BODY,
		    "error parsing request, MAYBE invalid body format. "
		    "empty body, a JSON value was expected");
		return -1;
	}
	req->json = json_loadb(req->body.p, req->body.len,
	    JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL, &e);
	body_release(req);	/* the JSON is what the handler reads */
parsed:
	if (req->json == NULL) {
		http_reply_error(req, MHD_HTTP_BAD_REQUEST, HTTP_E_BODY,
		    "error parsing request, MAYBE invalid body format. "
		    "line %d, column %d: %s", e.line, e.column, e.text);
		return -1;
	}
	return 0;
}

static void
completed_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode how)
{
	struct http_req *req = *con_cls;

	if (req == NULL)
		return;
	if (req->method != NULL)
		log_info("%s %s %u %llums%s", req->method, req->uri,
		    req->status, (unsigned long long)(loop_now_ms() -
		    req->t0), how == MHD_REQUEST_TERMINATED_COMPLETED_OK ?
		    "" : " (not completed)");
	tap_fire(req, 0, NULL, NULL, 0);
	if (req->sink_data != NULL && !req->sink_done) {
		req->sink_done = true;
		req->sink_abort(req->sink_arg);
	}
	if (req->upgrade != NULL) {	/* the 101 never went out */
		req->upgrade->up(NULL, -1, NULL, 0, req->upgrade->arg);
		free(req->upgrade);
	}
	for (size_t j = 0; j < req->nparams; j++)
		free(req->pvals[j]);
	free(req->target);
	if (req->held != NULL)
		MHD_destroy_response(req->held);
	if (req->pjob != NULL)
		req->pjob->req = NULL;
	if (req->bwork != NULL) {
		req->bwork->req = NULL;
		if (req->bwork->cancel != NULL)
			atomic_store(req->bwork->cancel, 1);
	}
	unlink_deferred(req);
	unlink_reading(req);
	body_release(req);
	json_decref(req->json);
	/* Kept alive: it waits for the next request. */
	if (req->c != NULL)
		req->c->file_fd = -1;	/* MHD closes it now */
	conn_phase(req->c, PH_IDLE);
	free(req);
	*con_cls = NULL;
}

static void
unlink_reading(struct http_req *req)
{
	if (!req->reading)
		return;
	req->reading = false;
	if (req->rprev != NULL)
		req->rprev->rnext = req->rnext;
	else
		req->srv->reading = req->rnext;
	if (req->rnext != NULL)
		req->rnext->rprev = req->rprev;
	req->rprev = req->rnext = NULL;
}

/*
 * A client that sends part of a body and closes at once can leave MHD
 * waiting for the rest forever: in epoll mode it reads the data in turns,
 * takes a short read for a drained socket, and the end of the stream,
 * which arrived with the data, brings no new event.  So look at the
 * sockets of requests whose body is still coming; at the end of the
 * stream, shut the socket down, which MHD does see.
 */
static void
check_eof(struct http_server *srv)
{
	struct http_req *req, *next;
	uint64_t now = loop_now_ms();

	if ((srv->reading == NULL && srv->deferred == NULL) ||
	    now < srv->next_eof_check)
		return;
	srv->next_eof_check = now + EOF_CHECK_MS;
	for (req = srv->reading; req != NULL; req = req->rnext) {
		if (req->deferred)	/* suspended: MHD reads nothing */
			continue;
		if (client_left(req)) {
			log_debug("%s %s: the client left mid-body",
			    req->method != NULL ? req->method : "-", req->uri);
			srv->kick = true;
		}
	}
	/*
	 * A deferred request is suspended, so MHD cannot see its client
	 * go: its owner lets go of it (a grep stops, a queued run is
	 * dropped), and the reply resumes it into the closed socket.
	 */
	for (req = srv->deferred; req != NULL; req = next) {
		next = req->dnext;
		if (!client_left(req))
			continue;
		log_debug("%s %s: the client left while it waited",
		    req->method != NULL ? req->method : "-", req->uri);
		tap_fire(req, 0, NULL, NULL, 0);
		if (req->cancel != NULL)
			req->cancel(req, req->cancel_arg);
		if (!req->replied)
			http_reply_error(req, MHD_HTTP_SERVICE_UNAVAILABLE,
			    HTTP_E_UNAVAILABLE, "the client went away");
		srv->kick = true;
	}
}

/*
 * True when the client of req has closed its end (a peek reads the end
 * of the stream) or the connection failed; the socket is then shut down
 * so that MHD, which may wait for more, sees it too.
 */
static bool
client_left(struct http_req *req)
{
	const union MHD_ConnectionInfo *ci;
	ssize_t n;
	char c;

	ci = MHD_get_connection_info(req->conn,
	    MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci == NULL)
		return false;
	n = recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR)))
		return false;
	shutdown(ci->connect_fd, SHUT_RDWR);
	return true;
}

static void
unlink_deferred(struct http_req *req)
{
	struct http_server *srv = req->srv;

	if (!req->deferred)
		return;
	req->deferred = false;
	if (req->dprev != NULL)
		req->dprev->dnext = req->dnext;
	else
		srv->deferred = req->dnext;
	if (req->dnext != NULL)
		req->dnext->dprev = req->dprev;
	req->dprev = req->dnext = NULL;
}

/*
 * Hand a response to MHD.  A deferred request's connection is suspended:
 * keep the response, resume, and queue it in the access handler that MHD
 * calls next (MHD takes responses only there).
 */
static void
queue(struct http_req *req, unsigned status, struct MHD_Response *resp)
{
	bool suspended = req->deferred && !req->in_handler;
	bool mid_body = req->sink_data != NULL && !req->sink_done;

	if (req->replied)
		fatalx("second reply to %s %s", req->method, req->uri);
	req->replied = true;
	req->status = status;
	unlink_deferred(req);
	if (req->paused) {	/* read the rest of the body, and drop it */
		req->paused = false;
		MHD_resume_connection(req->conn);
		req->srv->kick = true;
	}
	if (mid_body) {
		/* Sent once the rest of the body has been read (above). */
		req->held = resp;
		req->held_status = status;
		return;
	}
	if (suspended) {
		req->held = resp;
		req->held_status = status;
		MHD_resume_connection(req->conn);
		return;
	}
	if (req->reading && req->c != NULL && has_body(req->conn)) {
		/* Answered before the body: linger when MHD closes. */
		req->c->linger = true;
		conn_phase(req->c, PH_BUSY);
	}
	if (MHD_queue_response(req->conn, status, resp) != MHD_YES)
		log_warnx("cannot queue the response to %s %s", req->method,
		    req->uri);
	MHD_destroy_response(resp);
}

void
http_req_tap(struct http_req *req, http_tap_cb *fn, void *arg)
{
	req->tap = fn;
	req->tap_arg = arg;
}

/* Tell the tap, if any, what req was answered with (0: no whole body). */
static void
tap_fire(struct http_req *req, unsigned status, const char *type,
    const void *body, size_t n)
{
	http_tap_cb *fn = req->tap;

	if (fn == NULL)
		return;
	req->tap = NULL;
	fn(req, status, type, body, n, req->tap_arg);
}

static void
reply_raw(struct http_req *req, unsigned status, const char *body, size_t n,
    const char *type)
{
	struct MHD_Response *resp;

	tap_fire(req, status, type, body, n);
	resp = MHD_create_response_from_buffer(n, (void *)(uintptr_t)body,
	    MHD_RESPMEM_MUST_COPY);
	if (resp == NULL)
		fatalx("cannot make a response");
	if (type != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
		    type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		allow_header(req, resp);
	queue(req, status, resp);
}

/* A body of any type, with one optional extra header. */
void
http_reply_text(struct http_req *req, unsigned status, const char *type,
    const void *body, size_t n, const char *hname, const char *hval)
{
	struct MHD_Response *resp;

	tap_fire(req, status, type, body, n);
	resp = MHD_create_response_from_buffer(n, (void *)(uintptr_t)body,
	    MHD_RESPMEM_MUST_COPY);
	if (resp == NULL)
		fatalx("cannot make a response");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (hname != NULL)
		MHD_add_response_header(resp, hname, hval);
	queue(req, status, resp);
}

/* 200, no body. */
void
http_reply_empty(struct http_req *req)
{
	reply_raw(req, MHD_HTTP_OK, "", 0, NULL);
}

/* A JSON reply; v is consumed. */
void
http_reply_json(struct http_req *req, unsigned status, json_t *v)
{
	struct buf b;

	buf_init(&b);
	if (sse_fmt_json(&b, v) < 0)
		fatalx("unencodable JSON reply");
	json_decref(v);
	reply_raw(req, status, b.p, b.len, JSON_TYPE);
	buf_reset(&b);
}

static void utf8_text(const char *, size_t, char *, size_t);
static void verror(struct http_req *, unsigned, const char *, const char *,
    va_list) __attribute__((format(printf, 4, 0)));

static void
verror(struct http_req *req, unsigned status, const char *code,
    const char *fmt, va_list ap)
{
	char msg[1024], text[sizeof(msg) * 4];
	struct buf b;
	int n;

	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		n = 0;
	utf8_text(msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1,
	    text, sizeof(text));
	buf_init(&b);
	dialect_error(req->dialect, &b, status, code, text);
	reply_raw(req, status, b.p, b.len, req->dialect->type);
	buf_reset(&b);
}

/*
 * Copy the n bytes of s into out (of size cap, NUL-terminated) as valid
 * UTF-8: a byte that starts no valid sequence (a name that is not UTF-8,
 * a character the message buffer cut) becomes the text "\xNN", so that
 * a client's bytes always reach it, readably, in a JSON string.
 */
static void
utf8_text(const char *s, size_t n, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0, k;

	while (i < n && o + 5 <= cap) {
		if ((k = utf8_len(p + i, n - i)) == 0) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[p[i] >> 4];
			out[o++] = hex[p[i] & 15];
			i++;
			continue;
		}
		if (o + k + 1 > cap)
			break;
		memcpy(out + o, p + i, k);
		o += k;
		i += k;
	}
	out[o] = '\0';
}

/* An error reply in the shape of the request's dialect. */
void
http_reply_error(struct http_req *req, unsigned status, const char *code,
    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(req, status, code, fmt, ap);
	va_end(ap);
}

/* The only errno-to-status map in execd. */
void
http_reply_errno(struct http_req *req, int neg, const char *fmt, ...)
{
	unsigned status;
	const char *code;
	va_list ap;

	switch (-neg) {
	case ENOENT:
	case ENOTDIR:
		status = MHD_HTTP_NOT_FOUND;
		code = HTTP_E_FILE_NOT_FOUND;
		break;
	case EACCES:
	case EPERM:
	case EROFS:
		status = MHD_HTTP_FORBIDDEN;
		code = HTTP_E_FORBIDDEN;
		break;
	case EEXIST:
		status = MHD_HTTP_CONFLICT;
		code = HTTP_E_EXISTS;
		break;
	case EINVAL:
	case ENAMETOOLONG:
	case ELOOP:
		status = MHD_HTTP_BAD_REQUEST;
		code = HTTP_E_BODY;
		break;
	case EFBIG:
		status = MHD_HTTP_CONTENT_TOO_LARGE;
		code = HTTP_E_TOO_LARGE;
		break;
	case ETIMEDOUT:
		status = MHD_HTTP_GATEWAY_TIMEOUT;
		code = HTTP_E_TIMEOUT;
		break;
	default:
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		code = HTTP_E_RUNTIME;
		break;
	}
	va_start(ap, fmt);
	verror(req, status, code, fmt, ap);
	va_end(ap);
}

/* A response that sends part of a file; see http.h. */
struct http_resp *
http_resp_fd(int fd, uint64_t off, uint64_t len)
{
	struct http_resp *hr = xcalloc(1, sizeof(*hr));

	hr->r = MHD_create_response_from_fd_at_offset64(len, fd, off);
	if (hr->r == NULL)
		fatalx("cannot make a file response");
	hr->file_fd = fd;
	hr->file_end = off + len;
	return hr;
}

/* A response with a body copied from memory; see http.h. */
struct http_resp *
http_resp_buf(const void *body, size_t n)
{
	struct http_resp *hr = xcalloc(1, sizeof(*hr));

	hr->r = MHD_create_response_from_buffer(n, (void *)(uintptr_t)body,
	    MHD_RESPMEM_MUST_COPY);
	if (hr->r == NULL)
		fatalx("cannot make a response");
	hr->file_fd = -1;
	return hr;
}

/* A response whose body a reader produces; see http.h. */
struct http_resp *
http_resp_reader(http_read_cb *read, http_read_done_cb *done, void *arg)
{
	return http_resp_reader_len(UINT64_MAX, read, done, arg);
}

/* A streamed body of a promised length (UINT64_MAX: unknown). */
struct http_resp *
http_resp_reader_len(uint64_t len, http_read_cb *read,
    http_read_done_cb *done, void *arg)
{
	struct http_resp *hr = xcalloc(1, sizeof(*hr));
	struct http_reader *rd = xcalloc(1, sizeof(*rd));

	rd->read = read;
	rd->done = done;
	rd->arg = arg;
	hr->rd = rd;
	hr->file_fd = -1;
	/* MHD allocates and clears the block: no larger than the body. */
	hr->r = MHD_create_response_from_callback(len == UINT64_MAX ?
	    MHD_SIZE_UNKNOWN : len, len < READER_BLOCK ?
	    (len > 256 ? (size_t)len : 256) : READER_BLOCK, reader_read, rd,
	    reader_free);
	if (hr->r == NULL)
		fatalx("cannot make a streamed response");
	return hr;
}

static ssize_t
reader_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct http_reader *rd = cls;
	ssize_t n;

	if (rd->cut)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	n = rd->read(rd->arg, buf, max);

	if (n > 0)
		return n;
	if (n == HTTP_READ_WAIT && rd->conn != NULL && !rd->srv->quiesced) {
		/* Nothing yet: sleep until http_reader_wake(). */
		rd->suspended = true;
		rd->next = rd->srv->sleepers;
		if (rd->next != NULL)
			rd->next->prev = rd;
		rd->prev = NULL;
		rd->srv->sleepers = rd;
		MHD_suspend_connection(rd->conn);
		return 0;
	}
	if (n == HTTP_READ_WAIT)	/* shutting down: cut it short */
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM :
	    MHD_CONTENT_READER_END_WITH_ERROR;
}

static void
reader_free(void *cls)
{
	struct http_reader *rd = cls;

	if (rd->suspended) {	/* cannot happen: MHD frees it running */
		rd->cut = true;
		http_reader_wake(rd);
	}
	if (rd->done != NULL)
		rd->done(rd->arg);
	free(rd);
}

/* The reader behind hr; see http.h. */
struct http_reader *
http_resp_reader_of(struct http_resp *hr)
{
	return hr->rd;
}

/* More to read: wake the connection a HTTP_READ_WAIT put to sleep. */
void
http_reader_wake(struct http_reader *rd)
{
	if (!rd->suspended)
		return;
	rd->suspended = false;
	if (rd->prev != NULL)
		rd->prev->next = rd->next;
	else
		rd->srv->sleepers = rd->next;
	if (rd->next != NULL)
		rd->next->prev = rd->prev;
	rd->prev = rd->next = NULL;
	MHD_resume_connection(rd->conn);
	rd->srv->kick = true;
}

/* The client's socket, for a body its owner writes; see http.h. */
int
http_reader_socket(struct http_reader *rd)
{
	const union MHD_ConnectionInfo *ci;

	if (rd->conn == NULL || rd->srv->quiesced)
		return -1;
	ci = MHD_get_connection_info(rd->conn,
	    MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci != NULL ? ci->connect_fd : -1;
}

/*
 * Shutdown: wake every connection we put to sleep, since MHD cannot stop
 * with one suspended.  Sleeping readers are cut short; paused bodies are
 * read on (and http_req_pause() no longer pauses).
 */
static void
wake_sleepers(struct http_server *srv)
{
	struct http_req *req;

	while (srv->sleepers != NULL) {
		srv->sleepers->cut = true;
		http_reader_wake(srv->sleepers);
	}
	for (req = srv->reading; req != NULL; req = req->rnext)
		http_req_resume(req);
}

void
http_resp_header(struct http_resp *hr, const char *name, const char *value)
{
	MHD_add_response_header(hr->r, name, value);
}

/* Send a response made above; takes hr. */
void
http_reply_resp(struct http_req *req, unsigned status, struct http_resp *hr)
{
	struct MHD_Response *r = hr->r;

	if (hr->rd != NULL) {
		hr->rd->conn = req->conn;
		hr->rd->srv = req->srv;
	}
	/* A file's length is promised: sweep() watches that it stays. */
	if (hr->file_fd >= 0 && req->c != NULL) {
		req->c->file_fd = hr->file_fd;
		req->c->file_end = hr->file_end;
	}
	free(hr);
	queue(req, status, r);
}

/* Open a 200 event stream on the request. */
struct sse_stream *
http_reply_stream(struct http_req *req, http_stream_shutdown_cb *shutdown,
    sse_stream_gone_cb *gone, void *arg)
{
	struct http_server *srv = req->srv;
	struct live_stream *ls = xcalloc(1, sizeof(*ls));
	struct MHD_Response *resp;

	ls->s = sse_stream_new(req->conn, srv->conf.stream_cap, stream_gone,
	    ls);
	if (ls->s == NULL) {
		free(ls);
		http_reply_error(req, MHD_HTTP_INTERNAL_SERVER_ERROR,
		    HTTP_E_RUNTIME, "cannot open a stream");
		return NULL;
	}
	ls->shutdown = shutdown;
	ls->gone = gone;
	ls->arg = arg;
	ls->srv = srv;
	ls->next = srv->streams;
	if (srv->streams != NULL)
		srv->streams->prev = ls;
	srv->streams = ls;
	srv->nstreams++;
	resp = sse_stream_response(ls->s);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	    "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
	    "no-cache");
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	queue(req, MHD_HTTP_OK, resp);
	if (srv->quiesced)	/* shutting down: end it at once */
		shutdown(ls->s, arg);
	return ls->s;
}

static void
stream_gone(struct sse_stream *s, void *arg)
{
	struct live_stream *ls = arg;
	struct http_server *srv = ls->srv;

	if (ls->prev != NULL)
		ls->prev->next = ls->next;
	else
		srv->streams = ls->next;
	if (ls->next != NULL)
		ls->next->prev = ls->prev;
	srv->nstreams--;
	if (ls->gone != NULL)
		ls->gone(s, ls->arg);
	free(ls);
}

/* Answer 101 and hand the socket over once it is sent; see http.h. */
void
http_reply_upgrade(struct http_req *req, const char *const *headers,
    http_upgrade_cb *up, http_upgrade_shutdown_cb *shutdown, void *arg)
{
	struct http_upgrade *u = xcalloc(1, sizeof(*u));
	struct MHD_Response *resp;

	u->srv = req->srv;
	u->req = req;
	u->up = up;
	u->shutdown = shutdown;
	u->arg = arg;
	resp = MHD_create_response_for_upgrade(upgraded, u);
	if (resp == NULL)
		fatalx("cannot make an upgrade response");
	for (size_t i = 0; headers != NULL && headers[i] != NULL; i += 2)
		MHD_add_response_header(resp, headers[i], headers[i + 1]);
	req->upgrade = u;
	queue(req, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
}

/*
 * MHD sent the 101 and suspended the connection for good: the socket is
 * the owner's until http_upgrade_close().  MHD no longer watches it.
 */
static void
upgraded(void *cls, struct MHD_Connection *conn, void *con_cls,
    const char *extra, size_t n, MHD_socket sock,
    struct MHD_UpgradeResponseHandle *urh)
{
	struct http_upgrade *u = cls;
	struct http_server *srv = u->srv;
	const union MHD_ConnectionInfo *ci;
	struct conn *c;
	int fl;

	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci != NULL && (c = ci->socket_context) != NULL) {
		conn_phase(c, PH_BUSY);
		c->upgraded = true;	/* the socket is no longer HTTP */
	}

	if (u->req != NULL)
		u->req->upgrade = NULL;
	u->req = NULL;
	u->urh = urh;
	if (srv->quiesced || (fl = fcntl(sock, F_GETFL)) < 0 ||
	    fcntl(sock, F_SETFL, fl | O_NONBLOCK) < 0) {
		u->up(NULL, -1, NULL, 0, u->arg);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		free(u);
		return;
	}
	u->next = srv->upgrades;
	if (srv->upgrades != NULL)
		srv->upgrades->prev = u;
	srv->upgrades = u;
	srv->nupgrades++;
	u->up(u, sock, extra, n, u->arg);
}

/* Hand the socket back to MHD, which closes it; frees u. */
void
http_upgrade_close(struct http_upgrade *u)
{
	struct http_server *srv = u->srv;

	if (u->prev != NULL)
		u->prev->next = u->next;
	else
		srv->upgrades = u->next;
	if (u->next != NULL)
		u->next->prev = u->prev;
	srv->nupgrades--;
	MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
	srv->kick = true;	/* the close happens inside MHD_run() */
	free(u);
}

/* Shutdown: every owner closes its upgraded connection at once. */
static void
close_upgrades(struct http_server *srv)
{
	struct http_upgrade *u;

	while ((u = srv->upgrades) != NULL) {
		u->shutdown(u, u->arg);
		if (srv->upgrades == u)
			fatalx("an upgraded connection was not closed");
	}
}

/* Reply later; see http.h. */
void
http_req_defer(struct http_req *req, http_defer_cancel_cb *cancel,
    void *arg)
{
	if (req->replied || req->deferred == req->in_handler)
		fatalx("%s %s: bad deferral", req->method, req->uri);
	if (req->deferred) {
		/* A wait that goes on (a work reply's): a new cancel. */
		req->cancel = cancel;
		req->cancel_arg = arg;
		return;
	}
	defer_link(req, cancel, arg);
}

/* Mark req deferred, with its owner's cancel, on the server's list. */
static void
defer_link(struct http_req *req, http_defer_cancel_cb *cancel, void *arg)
{
	struct http_server *srv = req->srv;

	req->deferred = true;
	req->cancel = cancel;
	req->cancel_arg = arg;
	req->dnext = srv->deferred;
	if (srv->deferred != NULL)
		srv->deferred->dprev = req;
	srv->deferred = req;
}

/* A request waiting for a worker (http_req_work). */
struct http_work {
	struct http_req		*req;		/* NULL once the request is gone */
	struct loop		*loop;
	struct work_job		*job;
	uint64_t		 timer;		/* the deadline, or 0 */
	unsigned		 timeout;	/* its seconds */
	unsigned		 flags;		/* HTTP_WORK_* */
	atomic_int		*cancel;
	http_work_fn		*fn;
	http_work_reply_cb	*reply;
	void			*arg;
};

/* The request went away: tell the owner's fn, and reply with no request. */
static void
hw_cancel(struct http_req *req, void *arg)
{
	struct http_work *w = arg;

	w->req = NULL;
	if (w->cancel != NULL)
		atomic_store(w->cancel, 1);
	if (w->timer != 0)
		loop_timer_cancel(w->loop, w->timer);
	w->timer = 0;
}

/*
 * The deadline passed with fn still running (or not started): what it
 * waits on -- a hung mount, most likely -- will not answer in time.  The
 * client hears so now; fn is told to stop, and the reply runs later with
 * no request, only to free arg.  The worker left waiting is the pool's
 * business (work.h).
 */
static void
hw_timeout(struct loop *l, uint64_t id, void *arg)
{
	struct http_work *w = arg;
	struct http_req *req = w->req;

	w->timer = 0;
	if (req == NULL)
		return;
	w->req = NULL;
	if (w->cancel != NULL)
		atomic_store(w->cancel, 1);
	work_abandon(w->job);
	if (w->flags & HTTP_WORK_DISPLAY) {
		log_warnx("%s %s: no answer from the X display within %u s",
		    req->method, req->uri, w->timeout);
		http_reply_error(req, 504, HTTP_E_TIMEOUT, "the X display did "
		    "not answer within %u s (a stuck X server?)", w->timeout);
	} else {
		reply_timeout(req, w->timeout);
	}
}

/* Answer req 504: its work on a worker did not end within secs. */
static void
reply_timeout(struct http_req *req, unsigned secs)
{
	log_warnx("%s %s: no answer from the file system within %u s",
	    req->method, req->uri, secs);
	http_reply_error(req, 504, HTTP_E_TIMEOUT, "the file system did not "
	    "answer within %u s (a hung network or FUSE mount?); the "
	    "operation may still complete later", secs);
}

/* Worker thread: the owner's part only. */
static void
hw_run(void *arg)
{
	struct http_work *w = arg;

	w->fn(w->arg);
}

/* Loop thread: the owner replies, if the request is still there. */
static void
hw_done(void *arg)
{
	struct http_work *w = arg;

	if (w->timer != 0)
		loop_timer_cancel(w->loop, w->timer);
	/* Ours no more: the owner answers, or defers again. */
	if (w->req != NULL && w->req->cancel_arg == w) {
		w->req->cancel = NULL;
		w->req->cancel_arg = NULL;
	}
	w->reply(w->req, w->arg);
	free(w);
}

/* Defer req for a worker's job; see http.h. */
void
http_req_work(struct http_req *req, unsigned flags, atomic_int *cancel,
    http_work_fn *fn, http_work_reply_cb *reply, void *arg)
{
	struct http_work *w = xcalloc(1, sizeof(*w));

	w->req = req;
	w->loop = req->srv->loop;
	w->flags = flags;
	w->cancel = cancel;
	w->fn = fn;
	w->reply = reply;
	w->arg = arg;
	if (req->deferred && !req->in_handler && !req->replied) {
		/* Deferred earlier by its owner: the wait is ours now. */
		req->cancel = hw_cancel;
		req->cancel_arg = w;
	} else {
		http_req_defer(req, hw_cancel, w);
	}
	if ((w->timeout = req->srv->conf.work_timeout) > 0)
		w->timer = loop_timer_add(w->loop, w->timeout * 1000ULL,
		    hw_timeout, w);
	w->job = flags & HTTP_WORK_HEAVY ? work_submit_heavy(hw_run, hw_done,
	    w) : work_submit(hw_run, hw_done, w);
}

/* The deadline passed with fn still running: as hw_timeout. */
static void
bw_timeout(struct loop *l, uint64_t id, void *arg)
{
	struct body_work *bw = arg;

	bw->timer = 0;
	if (bw->req == NULL || bw->req->replied)
		return;
	if (bw->cancel != NULL)
		atomic_store(bw->cancel, 1);
	work_abandon(bw->job);
	reply_timeout(bw->req, bw->timeout);
}

/* Worker thread: the owner's part only. */
static void
bw_run(void *arg)
{
	struct body_work *bw = arg;

	bw->fn(bw->arg);
}

/* Loop thread: hand the request back, if it is still unanswered. */
static void
bw_done(void *arg)
{
	struct body_work *bw = arg;
	struct http_req *req = bw->req;

	if (bw->timer != 0)
		loop_timer_cancel(bw->srv->loop, bw->timer);
	if (req != NULL) {
		req->bwork = NULL;
		if (!req->replied && bw->srv->quiesced)
			http_reply_error(req, MHD_HTTP_SERVICE_UNAVAILABLE,
			    HTTP_E_UNAVAILABLE, "execd is shutting down");
		if (req->replied)
			req = NULL;
	}
	bw->done(req, bw->arg);
	free(bw);
}

/* A streamed body's work on a worker; see http.h. */
void
http_req_body_work(struct http_req *req, atomic_int *cancel,
    http_work_fn *fn, http_work_reply_cb *done, void *arg)
{
	struct body_work *bw;

	if (req->replied || req->bwork != NULL || req->sink_data == NULL)
		fatalx("%s %s: bad body work", req->method, req->uri);
	bw = xcalloc(1, sizeof(*bw));
	bw->req = req;
	bw->srv = req->srv;
	bw->cancel = cancel;
	bw->fn = fn;
	bw->done = done;
	bw->arg = arg;
	req->bwork = bw;
	if ((bw->timeout = req->srv->conf.work_timeout) > 0)
		bw->timer = loop_timer_add(bw->srv->loop,
		    bw->timeout * 1000ULL, bw_timeout, bw);
	bw->job = work_submit(bw_run, bw_done, bw);
}

/*
 * Stop accepting; answer every deferred request 503 (its owner is told
 * first) and let every stream's owner end its stream.
 */
void
http_shutdown(struct http_server *srv)
{
	struct live_stream *ls, *next;
	struct http_req *req;
	int fd;

	if (srv->quiesced)
		return;
	srv->quiesced = true;
	fd = MHD_quiesce_daemon(srv->mhd);
	if (fd >= 0)
		close(fd);
	srv->lfd = -1;
	while ((req = srv->deferred) != NULL) {
		if (req->cancel != NULL)
			req->cancel(req, req->cancel_arg);
		if (!req->replied)
			http_reply_error(req, MHD_HTTP_SERVICE_UNAVAILABLE,
			    HTTP_E_UNAVAILABLE, "execd is shutting down");
	}
	for (ls = srv->streams; ls != NULL; ls = next) {
		next = ls->next;
		if (!sse_stream_ended(ls->s))
			ls->shutdown(ls->s, ls->arg);
	}
	close_upgrades(srv);
	wake_sleepers(srv);
}

/* Streams and upgraded connections still open. */
size_t
http_streams(const struct http_server *srv)
{
	return srv->nstreams + srv->nupgrades;
}

/* Stop MHD (closing every connection) and free the server. */
void
http_free(struct http_server *srv)
{
	if (srv == NULL)
		return;
	close_upgrades(srv);
	/* MHD cannot stop with connections suspended: resume ours first. */
	srv->quiesced = true;
	wake_sleepers(srv);
	MHD_run(srv->mhd);	/* where MHD takes resumed connections */
	loop_del(srv->loop, srv->epfd, NULL);
	MHD_stop_daemon(srv->mhd);
	while (srv->lingers != NULL)
		linger_end(srv->lingers);
	if (srv->lfd >= 0)
		close(srv->lfd);
	free(srv);
}

const char *
http_req_method(const struct http_req *req)
{
	return req->method;
}

const char *
http_req_path(const struct http_req *req)
{
	return req->path;
}

/* The value of path parameter name, or NULL. */
const char *
http_req_param(const struct http_req *req, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < req->nparams; i++)
		if (strncmp(req->pnames[i], name, n) == 0 &&
		    req->pnames[i][n] == '}')
			return req->pvals[i];
	return NULL;
}

/* The first value of a query key, or NULL. */
const char *
http_req_query(const struct http_req *req, const char *key)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND,
	    key);
}

struct query_iter {
	const char	 *key;
	const char	**vals;
	size_t		  n, max;
};

static enum MHD_Result
query_each(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct query_iter *it = cls;

	if (strcmp(k, it->key) == 0) {
		if (it->n < it->max)
			it->vals[it->n] = v != NULL ? v : "";
		it->n++;
	}
	return MHD_YES;
}

/* A query number; see http.h. */
int
http_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	unsigned d;

	if (*s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		d = (unsigned)(*s - '0');
		if (d > max || v > (max - d) / 10)
			return -EINVAL;		/* past max (or 2^64) */
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* The query value key as a number; see http.h. */
int
http_req_query_uint(const struct http_req *req, const char *key,
    uint64_t max, uint64_t *out)
{
	const char *s = http_req_query(req, key);

	if (s == NULL || *s == '\0')
		return 0;
	return http_parse_uint(s, max, out) < 0 ? -EINVAL : 1;
}

/* Every value of a repeated query key; returns how many there are. */
size_t
http_req_query_all(const struct http_req *req, const char *key,
    const char **vals, size_t max)
{
	struct query_iter it = { key, vals, 0, max };

	MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND,
	    query_each, &it);
	return it.n;
}

/* A request header (name matched without regard to case), or NULL. */
const char *
http_req_header(const struct http_req *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *
http_req_target(const struct http_req *req)
{
	return req->target;
}

struct header_walk {
	http_header_cb	*fn;
	void		*arg;
};

static enum MHD_Result
header_one(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct header_walk *w = cls;

	(void)kind;
	return w->fn(k, v != NULL ? v : "", w->arg) < 0 ? MHD_NO : MHD_YES;
}

/* Every request header, in the order sent. */
void
http_req_headers(const struct http_req *req, http_header_cb *fn, void *arg)
{
	struct header_walk w = { fn, arg };

	MHD_get_connection_values(req->conn, MHD_HEADER_KIND, header_one, &w);
}

/* The client's numeric address. */
int
http_req_peer(const struct http_req *req, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *ci;
	const struct sockaddr *sa;
	const void *a;

	ci = MHD_get_connection_info(req->conn,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci == NULL || (sa = ci->client_addr) == NULL)
		return -ENOTCONN;
	if (sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	else
		return -EAFNOSUPPORT;
	if (inet_ntop(sa->sa_family, a, buf, (socklen_t)len) == NULL)
		return -errno;
	return 0;
}

json_t *
http_req_json(const struct http_req *req)
{
	return req->json;
}

/* The body of an HTTP_R_RAW route, as sent ("" and 0 when empty). */
const void *
http_req_body(const struct http_req *req, size_t *len)
{
	*len = req->body.len;
	return req->body.p != NULL ? req->body.p : "";
}

void *
http_req_app(const struct http_req *req)
{
	return req->srv->app;
}

const struct dialect *
http_req_dialect(const struct http_req *req)
{
	return req->dialect;
}

struct loop *
http_req_loop(const struct http_req *req)
{
	return req->srv->loop;
}

size_t
http_req_stream_cap(const struct http_req *req)
{
	return req->srv->conf.stream_cap;
}
