/*
 * http.h -- the HTTP server: libmicrohttpd in external-epoll mode on the
 * loop, a route table, request context, replies and the error model.
 *
 * Every handler runs on the loop thread and replies exactly once before it
 * returns, with one of the http_reply_* calls or by opening a stream.  This
 * module is the only place that maps errno values to HTTP statuses and that
 * writes error bodies, so every non-2xx answer of a route has the shape of
 * the route's dialect (dialect.h): OpenSandbox's {"code":"...","message":
 * "..."} unless the route names another.
 */
#ifndef EXECD_HTTP_H
#define EXECD_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "../../sse/sse_stream.h"
#include "body.h"
#include "dialect.h"

struct loop;
struct http_server;
struct http_req;

/* Error codes on the wire (upstream's, plus ours for HTTP-level errors). */
#define HTTP_E_BODY		"INVALID_REQUEST_BODY"
#define HTTP_E_QUERY		"MISSING_QUERY"
#define HTTP_E_RUNTIME		"RUNTIME_ERROR"
#define HTTP_E_FILE_NOT_FOUND	"FILE_NOT_FOUND"
#define HTTP_E_CONTEXT_NOT_FOUND "CONTEXT_NOT_FOUND"
#define HTTP_E_NOT_FOUND	"NOT_FOUND"
#define HTTP_E_METHOD		"METHOD_NOT_ALLOWED"
#define HTTP_E_TOO_LARGE	"REQUEST_TOO_LARGE"
#define HTTP_E_FORBIDDEN	"PERMISSION_DENIED"
#define HTTP_E_EXISTS		"ALREADY_EXISTS"
#define HTTP_E_TIMEOUT		"TIMEOUT"
#define HTTP_E_UNAVAILABLE	"UNAVAILABLE"
#define HTTP_E_BUSY		"SERVER_BUSY"
#define HTTP_E_IDENTITY		"FILESYSTEM_IDENTITY_UNAVAILABLE"
#define HTTP_E_ALREADY_INIT	"ALREADY_INITIALIZED"

struct http_conf {
	const char	*addr;		/* numeric IPv4 or IPv6 address */
	uint16_t	 port;		/* 0: any free port */
	const char	*token;		/* NULL: no access control */
	size_t		 max_body;	/* cap on a JSON request body */
	unsigned	 conn_timeout;	/* idle seconds; 0: none */
	unsigned	 max_conns;
	unsigned	 max_conns_per_ip;	/* 0: no limit */
	size_t		 stream_cap;	/* bytes a stream may queue */
	uint64_t	 max_upload;	/* cap on a streamed body; 0: none */
	unsigned	 header_timeout;	/* seconds for headers; 0: none */
	unsigned	 body_timeout;	/* seconds for a body, plus ... */
	size_t		 body_min_rate;	/* ... one per this many bytes */
	unsigned	 max_half_open;	/* 0: no limit */
	size_t		 body_memory;	/* cap on all buffered bodies; 0: none */
	unsigned	 work_timeout;	/* seconds for http_req_work; 0: none */
};

/*
 * Handlers reply exactly once: before returning, or later after calling
 * http_req_defer() (the connection waits, suspended, meanwhile).
 */
typedef void http_handler(struct http_req *);

#define HTTP_R_BODY	0x01	/* the handler takes a JSON body */
#define HTTP_R_BODY_OPT	0x02	/* ... which may be empty (json NULL) */
#define HTTP_R_RAW	0x08	/* the handler takes the body as bytes,
				   capped like a JSON one (http_req_body) */
#define HTTP_R_STREAM	0x04	/* the handler runs on the headers and
				   takes the body as it arrives */
#define HTTP_R_PARSE_LEAD 0x10	/* a bad field: "error parsing request: " */
#define HTTP_R_PREFIX	0x20	/* the path matches every path that starts
				   with the pattern's text before its first
				   '{' (no parameters are filled) */
#define HTTP_R_OPEN	0x40	/* no token is asked for, and the route is
				   served while others are held
				   (http_hold): health probes and runtime
				   initialisation */

/*
 * A route names the fields its JSON body may hold (body.h, ended by
 * BODY_END), as a command table names its arguments: http.c checks the
 * body against them before the handler runs, and otherwise answers 400
 * INVALID_REQUEST_BODY "invalid request, <why>" (HTTP_R_PARSE_LEAD:
 * "error parsing request: <why>", upstream's words for terminals), so
 * handlers read fields without checking their types again.
 *
 * A route names its dialect (dialect.h): the token forms it accepts and
 * the shape of every error it is answered with, by http.c or by its
 * handler; NULL is OpenSandbox's.  The token is checked once the route
 * is known.  A row without a handler (fn NULL) is a group, never a route:
 * a request whose path it matches (HTTP_R_PREFIX: a subtree) and that no
 * route answers is refused (401, 404, 405) in the group's dialect rather
 * than the default one.  A path no route and no group matches is
 * OpenSandbox's; one whose routes all refuse the method takes the
 * dialect of the first of them.
 */
struct http_route {
	const char	*method;	/* "*": any method */
	const char	*path;	/* "/a/{name}/b": {name} is one segment */
	unsigned	 flags;
	http_handler	*fn;		/* NULL: a group */
	const char	*summary;	/* one line, for --routes */
	const struct body_field *fields;	/* NULL: none checked */
	const struct dialect *dialect;	/* NULL: dialect_opensandbox */
};

/*
 * The check http.c makes of a route's body before its handler: 0 (also
 * when the route lists no fields or an optional body is empty, v NULL),
 * or -EINVAL with the whole message in err.  Pure; any thread.
 */
int	 http_route_check(const struct http_route *, const json_t *v,
	    char *err, size_t errlen);

/*
 * Bind and listen, then watch the daemon on the loop.  routes must outlive
 * the server.  0 or -errno with a message in err; *out set on success.
 */
int	 http_new(struct loop *, const struct http_conf *,
	    const struct http_route *, size_t nroutes, void *app,
	    struct http_server **out, char *err, size_t errlen);
uint16_t http_port(const struct http_server *);	/* the bound port */

/* Stop accepting and end every open stream with its final event. */
void	 http_shutdown(struct http_server *);
/* Open streams that have not yet gone. */
size_t	 http_streams(const struct http_server *);
void	 http_free(struct http_server *);	/* NULL ok */

/*
 * Runtime initialisation (see domain/runtime.h).  http_hold(srv, true)
 * answers every request whose route is not HTTP_R_OPEN with 503 and the
 * dialect's body for it (dialect_hold), token or not, until it is called
 * with false.  http_bind_token() makes the token whose SHA-256 digest is
 * md the only one accepted, in place of the configured one; NULL drops it
 * (the configured one, if any, is accepted again).  Loop thread.
 */
void	 http_hold(struct http_server *, bool held);
void	 http_bind_token(struct http_server *, const unsigned char *md);
/* Whether a token is in force (configured or bound). */
bool	 http_has_token(const struct http_server *);
/*
 * Whether req carries the token in force, in the forms of its dialect
 * (true when none is); for an HTTP_R_OPEN route that still wants it.
 */
bool	 http_req_token_ok(struct http_req *);
/* Answer req as a request without the token is answered (401). */
void	 http_reply_deny(struct http_req *);
/*
 * Whether the request's ?token= is the token in force (false when none
 * is), compared in constant time: the proxy trades it for a cookie.
 */
bool	 http_req_query_token_ok(struct http_req *);
/*
 * The value of the cookie (dialect.h's DIALECT_COOKIE) that opens the
 * routes under scope, a path prefix of dialect_cookie_scope(), with the
 * token in force: 0, or -ENOENT when no token is.
 */
int	 http_scope_cookie(const struct http_req *, const char *scope,
	    char out[DIALECT_COOKIE_LEN + 1]);

/* Request accessors; strings are borrowed for the handler's duration. */
const char	*http_req_method(const struct http_req *);
const char	*http_req_path(const struct http_req *);
const char	*http_req_param(const struct http_req *, const char *);
const char	*http_req_query(const struct http_req *, const char *);
/* Every value of a repeated query key, in order; returns the count. */
size_t		 http_req_query_all(const struct http_req *, const char *,
		    const char **vals, size_t max);
/*
 * A query value as a number: 0 when absent or empty (*out untouched), 1
 * with *out set, -EINVAL when it is not http_parse_uint()'s form.
 */
int		 http_req_query_uint(const struct http_req *, const char *,
		    uint64_t max, uint64_t *out);
/*
 * The one form of every number in a query: decimal digits only (no
 * sign, space, suffix or base prefix), at most max.  0 with *out set, or
 * -EINVAL.  Pure: any thread.
 */
int		 http_parse_uint(const char *, uint64_t max, uint64_t *out);
const char	*http_req_header(const struct http_req *, const char *);
/* The request-target exactly as the client sent it (path and query). */
const char	*http_req_target(const struct http_req *);
/* Call fn for every request header, in order; stop when it returns < 0. */
typedef int	http_header_cb(const char *name, const char *value, void *arg);
void		 http_req_headers(const struct http_req *, http_header_cb *fn,
		    void *arg);
/* The client's address, numeric, into buf; 0 or -errno. */
int		 http_req_peer(const struct http_req *, char *buf, size_t len);
json_t		*http_req_json(const struct http_req *);	/* borrowed */
/* HTTP_R_RAW routes: the body (borrowed), its length in *len. */
const void	*http_req_body(const struct http_req *, size_t *len);
void		*http_req_app(const struct http_req *);
/*
 * The dialect req is answered in: its route's, or for a request no
 * route takes, as struct http_route says.  Never NULL.
 */
const struct dialect *http_req_dialect(const struct http_req *);
struct loop	*http_req_loop(const struct http_req *);
/* The bytes a stream of req may queue (the server's stream cap). */
size_t		 http_req_stream_cap(const struct http_req *);

/*
 * Streamed bodies (routes with HTTP_R_STREAM).  The handler runs as soon
 * as the headers are in; it either replies (refusing the body, which is
 * then never read) or calls http_req_sink() and returns.  data gets the
 * body as it arrives (chunked transfer decoded); it returns 0, or a
 * negative errno after replying; the answer then waits until the rest
 * of the body has been read and dropped (MHD answers only before a body
 * or after it), and a client that sends more than 16 MiB after that loses
 * the connection instead.  end runs when the whole body has been delivered and
 * replies like a handler (it may defer).  abort runs instead of end when
 * the request ends first: the client went away, data or the upload cap
 * refused the body, or execd shut down; the request is gone by then.  A
 * body over http_conf.max_upload is answered 413 by http.c.
 */
typedef int	http_body_cb(struct http_req *, const char *p, size_t n,
		    void *arg);
typedef void	http_body_end_cb(struct http_req *, void *arg);
typedef void	http_body_abort_cb(void *arg);
void	http_req_sink(struct http_req *, http_body_cb *data,
	    http_body_end_cb *end, http_body_abort_cb *abort_, void *arg);
/*
 * Stop reading a streamed body (from data, or later) until
 * http_req_resume(): the connection sleeps, and what the client sends
 * waits in the socket.  A paused body is not timed by --body-timeout.
 * False when the body cannot be paused: execd is shutting down (and
 * reads every body on), or the body has ended or been answered.
 */
bool	http_req_pause(struct http_req *);
void	http_req_resume(struct http_req *);

/*
 * Called when the server shuts down, or the client goes away, while a
 * deferred request waits: the owner drops its reference and stops what
 * it can (it may reply itself; if it does not, the client gets 503).
 */
typedef void http_defer_cancel_cb(struct http_req *, void *arg);

/*
 * From inside a handler: the reply comes later, from a loop callback,
 * through any http_reply_* call or http_reply_stream().  The request stays
 * valid until then.  Also from a loop callback on a request deferred
 * before and not answered (a work reply, below): the wait goes on, and
 * cancel is now the one that runs if the request goes first.
 */
void	http_req_defer(struct http_req *req, http_defer_cancel_cb *cancel,
	    void *arg);

/*
 * A request answered from the worker pool, the shape of every route whose
 * work blocks: defer req, run fn(arg) on a worker (work.h; heavy with
 * HTTP_WORK_HEAVY), then reply(req, arg) on the loop thread, which answers
 * req and frees arg.  If the client leaves or execd shuts down first, the
 * request is answered 503 without the owner, *cancel (when not NULL) is
 * set so that fn may stop early, and reply runs with req NULL, only to
 * free arg.  When fn has not returned within the server's work_timeout,
 * the request is answered 504 TIMEOUT, *cancel is set, and reply runs
 * with req NULL once fn returns, as for a client that left.  This sits in
 * the HTTP layer because HTTP already stands on the workers (large bodies
 * are parsed there); work.h knows no requests.
 */
#define HTTP_WORK_HEAVY	0x01	/* the client chooses the cost (a grep) */
#define HTTP_WORK_DISPLAY 0x02	/* an X call: the 504 names the display */
typedef void http_work_fn(void *arg);
typedef void http_work_reply_cb(struct http_req *, void *arg);
void	http_req_work(struct http_req *, unsigned flags, atomic_int *cancel,
	    http_work_fn *fn, http_work_reply_cb *reply, void *arg);
/*
 * http_req_work() may also be called, from a loop callback, on a request
 * that its owner deferred earlier (a streamed body's end that had to wait
 * for http_req_body_work() first) and that has not been answered: the
 * cancel given to http_req_defer() is then replaced by http_req_work's,
 * and everything else is as above.
 */

/*
 * Work for a streamed body (HTTP_R_STREAM) that must not run on the loop
 * thread, from data or end or a later loop callback, before req has been
 * answered: fn(arg) runs on a worker (work.h, with the identity the
 * calling thread has), then done(req, arg) on the loop thread.  One such
 * job per request at a time.  The body is still the owner's: it may
 * pause and resume it meanwhile, defer from end, and must keep what fn
 * uses until done runs.  When fn has not returned within work_timeout,
 * req is answered 504 TIMEOUT as http_req_work's is (a body still
 * arriving is then read and dropped as after any reply from data) and
 * the job is abandoned.  *cancel (when not NULL) is set then, and when
 * the request ends, so that fn may give up what it was for.  done gets
 * req NULL when the request has been
 * answered meanwhile (the deadline, the client leaving a deferred
 * request, execd shutting down) or has ended; then only arg is the
 * owner's business, and abort still runs if the body had not ended.  If
 * execd began shutting down while fn ran, req is answered 503 before
 * done.
 */
void	http_req_body_work(struct http_req *, atomic_int *cancel,
	    http_work_fn *fn, http_work_reply_cb *done, void *arg);

/*
 * Be told of req's answer, once: its status, content type and body when
 * it is a whole body (from any http_reply_* but a stream, an upgrade or
 * a resp), or status 0 and no body when req ends otherwise (a stream, or
 * the client left first).  For front ends that remember answers (an
 * Idempotency-Key's); one tap per request, set again replaces it.
 */
typedef void	http_tap_cb(struct http_req *, unsigned status,
		    const char *type, const void *body, size_t n, void *arg);
void	http_req_tap(struct http_req *, http_tap_cb *fn, void *arg);

/* 200 with an empty body and Content-Length: 0. */
void	http_reply_empty(struct http_req *);
/* status with a body of type, and one extra header (hname NULL: none). */
void	http_reply_text(struct http_req *, unsigned status, const char *type,
	    const void *body, size_t n, const char *hname, const char *hval);
/* status with v as JSON (takes ownership of v). */
void	http_reply_json(struct http_req *, unsigned status, json_t *v);
/*
 * status with an error body in the request's dialect, from code and the
 * message: {"code":code,"message":...} for OpenSandbox's.
 */
void	http_reply_error(struct http_req *, unsigned status, const char *code,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/*
 * An error from a -errno value: ENOENT 404 FILE_NOT_FOUND, EACCES and
 * EPERM 403, EEXIST 409, EINVAL 400, EFBIG 413, ETIMEDOUT 504, else 500.
 */
void	http_reply_errno(struct http_req *, int neg_errno, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/*
 * Responses with headers of their own (files, archives): make one, add
 * headers, then hand it to http_reply_resp(), which takes it.
 */
struct http_resp;
/* n bytes of body, copied (a redirect's empty one, say). */
struct http_resp *http_resp_buf(const void *body, size_t n);
/* len bytes of fd from off, sent with sendfile where possible; takes fd. */
struct http_resp *http_resp_fd(int fd, uint64_t off, uint64_t len);
/*
 * A body of unknown length, sent chunked as the client reads it.  read
 * fills up to max bytes of buf and returns how many (> 0), 0 at the end,
 * or -1 to abort the connection; it runs on the loop thread, so it must
 * not block for long.  done runs once when the response is freed.
 */
typedef ssize_t	http_read_cb(void *arg, char *buf, size_t max);
typedef void	http_read_done_cb(void *arg);
struct http_resp *http_resp_reader(http_read_cb *read, http_read_done_cb *done,
	    void *arg);
/* The same with a promised length, sent as Content-Length. */
struct http_resp *http_resp_reader_len(uint64_t len, http_read_cb *read,
	    http_read_done_cb *done, void *arg);
/*
 * read may also return HTTP_READ_WAIT when it has nothing yet: the
 * connection then sleeps until the owner calls http_reader_wake() with
 * the response's reader (taken with http_resp_reader_of() before the
 * reply; valid until done runs).  A sleeping response is not idle in
 * the sense of --connection-timeout; its owner times it.
 */
#define HTTP_READ_WAIT	(-2)
struct http_reader;
struct http_reader	*http_resp_reader_of(struct http_resp *);
void		 http_reader_wake(struct http_reader *);
/*
 * From read, for a body too large to copy through MHD's buffer (the
 * proxy splices one): the client's socket, or -1 when there is none to
 * give.  The head has gone out and nothing is queued on the socket.  The
 * owner then writes the whole body itself while read returns
 * HTTP_READ_WAIT; woken, read returns 0 once all of it is written (MHD
 * then closes the connection, so the response must carry "Connection:
 * close") or -1.  The owner must not touch the socket after that.
 */
int			 http_reader_socket(struct http_reader *);
void	http_resp_header(struct http_resp *, const char *name,
	    const char *value);
void	http_reply_resp(struct http_req *, unsigned status, struct http_resp *);

/*
 * Called when the server shuts down while the stream is open; the owner
 * pushes its final event with sse_stream_finish().
 */
typedef void http_stream_shutdown_cb(struct sse_stream *, void *arg);

/*
 * Answer 200 with a streamed body (text/event-stream, no-cache, no proxy
 * buffering).  gone fires once when the stream dies (see sse_stream.h).
 * NULL only if the response could not be made; the request then got 500.
 */
struct sse_stream *http_reply_stream(struct http_req *req,
	    http_stream_shutdown_cb *shutdown, sse_stream_gone_cb *gone,
	    void *arg);

/*
 * Protocol upgrades (WebSockets).  http_reply_upgrade() answers 101 with
 * the headers given (name, value pairs ending with NULL; MHD adds
 * Connection: Upgrade).  Once that is sent, up runs with the raw socket,
 * made non-blocking, and the bytes already read past the request (extra,
 * n: borrowed for the call): the caller then owns the conversation, must
 * never close(fd), and ends it with http_upgrade_close().  If the
 * connection ends before the 101 is out, or execd is shutting down, up
 * runs instead with u NULL and fd -1, and the owner drops its state.  At
 * shutdown, shutdown runs for every open upgrade and must call
 * http_upgrade_close() before it returns.  Open upgrades count among
 * http_streams().  Loop thread; up and shutdown run once each at most.
 */
struct http_upgrade;
typedef void	http_upgrade_cb(struct http_upgrade *u, int fd,
		    const char *extra, size_t n, void *arg);
typedef void	http_upgrade_shutdown_cb(struct http_upgrade *, void *arg);
void	http_reply_upgrade(struct http_req *, const char *const *headers,
	    http_upgrade_cb *up, http_upgrade_shutdown_cb *shutdown,
	    void *arg);
/* Close the socket of an upgrade (MHD does, on its next run); frees u. */
void	http_upgrade_close(struct http_upgrade *);

#endif
