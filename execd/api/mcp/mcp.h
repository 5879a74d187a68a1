/*
 * mcp.h -- the Model Context Protocol front end: /mcp over the Streamable
 * HTTP transport, JSON-RPC 2.0 messages, sessions, and tools that call
 * execd's domain (code runs, commands, contexts, file operations).
 *
 * Files: jsonrpc.c parses and words JSON-RPC messages (pure, fuzzed);
 * transport.c answers POST, GET and DELETE /mcp; session.c keeps the
 * sessions; call.c is one tools/call in flight (its answer as JSON or as
 * an event stream, its progress and log messages, its cancellation) and
 * stream.c a streamed call's events, numbered and held for a resume;
 * tools.c lists the tools, checks arguments against their schemas and
 * dispatches; args.c is what the tools share; tool_run.c (run_code, and
 * exec.h, a run being read), tool_cmd.c (run_command), tool_ctx.c
 * (command_output, command_input, interrupt, the contexts), tool_file.c
 * and tool_fs.c (the file tools, fsjob.h) and tool_computer.c (the
 * screen, mouse and keyboard) are the tools themselves;
 * resource.c serves files as resources, notify.c follows those
 * subscribed to and keeps the server stream; gateway.c and gwcall.c
 * (gateway.h) relay to the
 * policy file's MCP servers (SERVER__tool), gwhttp.c (gwhttp.h) posting
 * to those on loopback HTTP.  Every route speaks
 * dialect_mcp.
 * Loop thread only, except the worker halves of the file tools and of
 * the cwd check.
 */
#ifndef EXECD_MCP_H
#define EXECD_MCP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../../transport/http.h"

/* Protocol versions served, newest first; the newest is the default. */
#define MCP_PROTO_LATEST	"2025-06-18"
#define MCP_PROTO_OLDER		"2025-03-26"

/* Text a tool result carries at most per stream (the rest is cut). */
#define MCP_TEXT_CAP		(256 << 10)
/* Sessions kept at once; past it the longest idle without calls goes. */
#define MCP_SESSIONS_MAX	256
/* Notifications a streamed call holds for a resume (its response too). */
#define MCP_REPLAY_BYTES	(256 << 10)
/* Answered streamed calls kept for a resume once their stream is gone. */
#define MCP_REPLAY_CALLS	32

extern const struct http_route	mcp_routes[];
extern const size_t		mcp_route_count;

/* End every session (at exit, after the listeners are freed). */
void	mcp_shutdown(void);

/* jsonrpc.c: one JSON-RPC 2.0 message; pure, any thread. */
#define JSONRPC_PARSE_ERROR	(-32700)
#define JSONRPC_INVALID_REQUEST	(-32600)
#define JSONRPC_NO_METHOD	(-32601)
#define JSONRPC_INVALID_PARAMS	(-32602)
#define JSONRPC_INTERNAL	(-32603)

enum jsonrpc_kind {
	JSONRPC_REQUEST,	/* method, id, params */
	JSONRPC_NOTIFICATION,	/* method, params */
	JSONRPC_RESPONSE	/* id, result or error */
};

struct jsonrpc_msg {
	enum jsonrpc_kind kind;
	json_t		*root;		/* the message; the owner's */
	const json_t	*id;		/* borrowed from root, or NULL */
	const char	*method;	/* borrowed, or NULL */
	json_t		*params;	/* borrowed: an object, or NULL */
};

/*
 * Parse n bytes as one JSON-RPC 2.0 message into *m: 0, or
 * JSONRPC_PARSE_ERROR (not JSON) or JSONRPC_INVALID_REQUEST (a batch,
 * "jsonrpc" not "2.0", a bad id, method or params) with why in err.  On
 * JSONRPC_INVALID_REQUEST m->id is the message's id when it had a valid
 * one (for the error's id) and m->root must be freed with
 * jsonrpc_msg_clear(); on 0 likewise.
 */
int	 jsonrpc_parse(const char *p, size_t n, struct jsonrpc_msg *m,
	    char *err, size_t errlen);
void	 jsonrpc_msg_clear(struct jsonrpc_msg *);
/*
 * The next line of a newline-delimited stream of messages (the stdio
 * transport) in the n bytes at p: 1 with its length, without the newline
 * and a CR before it, in *len and the bytes it takes, newline included,
 * in *used; 0 when no newline has come yet (n at most max); -1 when none
 * is within max + 1 bytes (a line longer than max).
 */
int	 jsonrpc_line(const char *p, size_t n, size_t max, size_t *len,
	    size_t *used);
/* A response to id (NULL: null) with result (taken). */
json_t	*jsonrpc_result(const json_t *id, json_t *result);
/* An error response to id (NULL: null). */
json_t	*jsonrpc_error(const json_t *id, int code, const char *msg);
/* A notification of method with params (taken; NULL: none). */
json_t	*jsonrpc_notification(const char *method, json_t *params);

/*
 * Log levels of logging/setLevel and notifications/message, least severe
 * first: their index from a name of n bytes (-1: none), and back.
 */
#define MCP_LOG_NLEVELS	8
#define MCP_LOG_DEBUG	0
#define MCP_LOG_INFO	1
#define MCP_LOG_NOTICE	2
#define MCP_LOG_WARNING	3
#define MCP_LOG_ERROR	4
int		 mcp_log_level(const char *name, size_t n);
const char	*mcp_log_level_name(int level);
/*
 * An event id of a streamed call, "S-N": the stream's number in its
 * session (1 or more) and the event's in the stream, decimal without
 * sign or leading zero.  0 with both set, or -1.
 */
int		 mcp_event_id_parse(const char *s, unsigned *stream,
		    uint64_t *n);

/* session.c: sessions. */
struct mcp_session;
struct mcp_call;
/* Whether execd serves protocol version v. */
bool		 mcp_proto_ok(const char *v);
/*
 * A new session speaking want if served, else MCP_PROTO_LATEST; NULL
 * when MCP_SESSIONS_MAX are open and each has a call in flight.
 */
struct mcp_session *mcp_session_new(const char *want);
/* End a session: its calls go on, answering only their own requests. */
void		 mcp_session_end(struct mcp_session *);
/*
 * The session a request names (Mcp-Session-Id), its MCP-Protocol-Version
 * header checked; NULL after answering 400 or 404.
 */
struct mcp_session *mcp_session_of(struct http_req *);
const char	*mcp_session_id(const struct mcp_session *);
const char	*mcp_session_proto(const struct mcp_session *);
/* The unanswered call of session s whose request id is id, or NULL. */
struct mcp_call	*mcp_session_call(struct mcp_session *, const json_t *id);
void		 mcp_session_attach(struct mcp_session *, struct mcp_call *);
/* Unlink c from s (the call's own business: mcp_call_orphan is not run). */
void		 mcp_session_detach(struct mcp_session *, struct mcp_call *);
/* The least severe level logging/setLevel asked for (MCP_LOG_INFO). */
int		 mcp_session_log_level(const struct mcp_session *);
void		 mcp_session_set_log_level(struct mcp_session *, int);
/* The call whose stream is number no (mcp_call_stream_no), or NULL. */
struct mcp_call	*mcp_session_stream(struct mcp_session *, unsigned no);

/*
 * call.c: one tools/call in flight.  A tool answers it exactly once with
 * mcp_call_result() (or one of the helpers built on it), at once or
 * later; the call is freed then.  A client that left, or a session that
 * ended, only makes the answer go nowhere.
 */
typedef void	mcp_cancel_fn(void *arg);

struct mcp_call	*mcp_call_new(struct http_req *, struct mcp_session *,
		    const json_t *id, const json_t *progress_token,
		    bool sse_ok);
/*
 * The tool will answer later: the request is deferred (answered as JSON)
 * or, when the client sent a progress token and accepts an event stream
 * and stream is true, answered now with an event stream that carries
 * progress notifications and then the response.
 */
void	 mcp_call_later(struct mcp_call *, bool stream);
/* notifications/progress with msg, when the call streams with a token. */
void	 mcp_call_progress(struct mcp_call *, const char *msg, size_t n);
/*
 * notifications/message at level (MCP_LOG_*), logger "execd", when the
 * call streams and its session's level is at most level.
 */
void	 mcp_call_log(struct mcp_call *, int level, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/*
 * GET with Last-Event-ID S-N: answer req with a new stream for the call
 * whose stream is S, the events it holds after N first (the one it
 * replaces, if still open, ends).  Its stream number (0: not streamed)
 * and whether it is answered.
 */
void	 mcp_call_resume(struct mcp_call *, struct http_req *, uint64_t n);
unsigned mcp_call_stream_no(const struct mcp_call *);
bool	 mcp_call_answered(const struct mcp_call *);
/*
 * cancel(arg) interrupts what the call runs (notifications/cancelled);
 * gone(arg) lets go of the tool's state when the client left before the
 * answer (the call is then freed, and the tool must not answer it).
 */
void	 mcp_call_on_cancel(struct mcp_call *, mcp_cancel_fn *cancel,
	    mcp_cancel_fn *gone, void *arg);
/* notifications/cancelled for this call: its cancel function runs. */
void	 mcp_call_cancel(struct mcp_call *);
/*
 * The session ended (c is unlinked): the call keeps running, answering
 * nowhere but its own request; a streamed one whose stream is gone goes
 * (its tool's gone function runs).
 */
void	 mcp_call_orphan(struct mcp_call *);
/*
 * A notifications/progress relayed: params (taken) with its
 * progressToken replaced by the call's, when the call streams with one.
 */
void	 mcp_call_progress_relay(struct mcp_call *, json_t *params);
/* The response: result is a CallToolResult (taken). */
void	 mcp_call_result(struct mcp_call *, json_t *result);
/* A JSON-RPC error in place of a result (bad params, unknown tool). */
void	 mcp_call_rpc_error(struct mcp_call *, int code, const char *msg);
/* A tool error: {"content":[text],"isError":true}. */
void	 mcp_call_fail(struct mcp_call *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* A plain success: {"content":[text]} and, if not NULL, structured (taken). */
void	 mcp_call_text(struct mcp_call *, const char *text, json_t *structured);
/*
 * Run fn(arg) on a worker (http_req_work), then done(call, arg) on the
 * loop thread, which answers the call and frees arg.  Only before
 * mcp_call_later().
 */
typedef void	mcp_work_fn(void *arg);
typedef void	mcp_work_done_fn(struct mcp_call *, void *arg);
void	 mcp_call_work(struct mcp_call *, mcp_work_fn *fn,
	    mcp_work_done_fn *done, void *arg);
/* Whether the client still waits for the answer. */
bool	 mcp_call_waited(const struct mcp_call *);
/* The flag a worker half checks to stop early (fileops_grep's cancel). */
const atomic_int *mcp_call_flag(const struct mcp_call *);
/* The call's request id, and its link in its session's list. */
const json_t	 *mcp_call_id(const struct mcp_call *);
struct mcp_call **mcp_call_nextp(struct mcp_call *);
/* The request's app (struct execd). */
void	*mcp_call_app(const struct mcp_call *);
/* The call's session, or NULL once it ended. */
struct mcp_session *mcp_call_session(const struct mcp_call *);

/*
 * stream.c: a streamed call's events, numbered "S-N" and held for a
 * resume (the last MCP_REPLAY_BYTES of notifications, and the response).
 * gone(arg) runs when the event stream hearing it is gone (not when a
 * resumed one replaces it).
 */
struct mcp_stream;
struct mcp_stream *mcp_stream_new(mcp_cancel_fn *gone, void *arg);
void		 mcp_stream_free(struct mcp_stream *);	/* NULL ok */
unsigned	 mcp_stream_no(const struct mcp_stream *);
/* Whether an event stream hears it. */
bool		 mcp_stream_heard(const struct mcp_stream *);
/*
 * Answer req with an event stream that hears it from now on (one that
 * heard it before ends), after the held events numbered above after.
 * If none can be made, req got 500 and nothing changed.
 */
void		 mcp_stream_attach(struct mcp_stream *, struct http_req *,
		    uint64_t after);
/* msg (taken) as the next event; last: the response, and the end. */
void		 mcp_stream_emit(struct mcp_stream *, json_t *msg, bool last);

/* tools.c */
/* The tools/list result. */
json_t	*mcp_tools_list(void);
/* tools/call with params: answers call (an error, or the tool's result). */
void	 mcp_tools_call(struct mcp_call *, const json_t *params);
/* Whether tools/call params name a tool that starts a run (rungate.h). */
bool	 mcp_tools_runs(const json_t *params);
/* Append text to a capped string (MCP_TEXT_CAP); counts what is cut. */
struct mcp_text {
	char	*p;
	size_t	 len;
	size_t	 cut;
};
void	 mcp_text_add(struct mcp_text *, const char *p, size_t n);
/*
 * The text with a marker naming what was cut, NUL-terminated, its length
 * in *len (it may hold NULs); the caller frees it.  t is emptied.
 */
char	*mcp_text_take(struct mcp_text *, const char *what, size_t *len);
void	 mcp_text_free(struct mcp_text *);
/* A JSON string or "" (arguments are checked, so types are right). */
const char *mcp_arg_str(const json_t *args, const char *key,
	    const char *def);
long long mcp_arg_int(const json_t *args, const char *key, long long def);
bool	 mcp_arg_bool(const json_t *args, const char *key, bool def);
/* A path argument resolved (fs_path): 0, or -1 with the call answered. */
int	 mcp_arg_path(struct mcp_call *, const char *in, char *out,
	    size_t outlen);

/*
 * A client's working directory (cwd, "" for none), resolved and checked
 * on a worker, where a hung mount costs only this call: then(call, dir,
 * arg) with the directory (NULL when none was asked, then at once), or
 * the call answered with why and drop(arg).  then may go on to
 * mcp_call_later().
 */
typedef void	mcp_cwd_cb(struct mcp_call *, const char *dir, void *arg);
void	 mcp_with_cwd(struct mcp_call *, const char *cwd, mcp_cwd_cb *then,
	    mcp_cancel_fn *drop, void *arg);

/*
 * gateway.c, gwcall.c: the policy file's MCP servers (mcp_servers),
 * whose tools /mcp offers as SERVER__tool.  tools/list: the tools of
 * execd and of every server (those not started yet are, first); a
 * tools/call of a name that is not execd's: true when it is the
 * gateway's (then it is answered), false when unknown.
 */
void	 mcp_gateway_list(struct mcp_call *);
bool	 mcp_gateway_call(struct mcp_call *, const char *name,
	    const json_t *params);
/* Stop every server (at exit). */
void	 mcp_gateway_shutdown(void);

/* resource.c: files as resources (file:///{path}). */
json_t	*mcp_resource_templates(void);
void	 mcp_resources_read(struct mcp_call *, const json_t *params);
/* The path of a file:// URI, percent-decoded and resolved: 0, -EINVAL. */
int	 mcp_resource_path(const char *uri, char *out, size_t outlen);

/*
 * notify.c: a session's server stream (GET /mcp without Last-Event-ID;
 * a new one ends the one before) and its resource subscriptions, whose
 * changes go on it as notifications/resources/updated.
 */
void	 mcp_notify_open(struct mcp_session *, struct http_req *);
/* The session ends: its server stream ends, its subscriptions go. */
void	 mcp_notify_end(struct mcp_session *);
void	 mcp_resources_subscribe(struct mcp_call *, struct mcp_session *,
	    const json_t *params);
void	 mcp_resources_unsubscribe(struct mcp_call *, struct mcp_session *,
	    const json_t *params);

/* tool_run.c and tool_fs.c: the tools, args already checked. */
typedef void	mcp_tool_fn(struct mcp_call *, const json_t *args);
mcp_tool_fn	mcp_run_code, mcp_run_command, mcp_command_output,
		mcp_command_input, mcp_interrupt, mcp_list_contexts,
		mcp_create_context, mcp_delete_context;
mcp_tool_fn	mcp_read_file, mcp_write_file, mcp_edit_file,
		mcp_list_directory, mcp_search_files, mcp_grep, mcp_move,
		mcp_delete;
/* tool_computer.c: the X display (computer.h). */
mcp_tool_fn	mcp_screenshot, mcp_click, mcp_type, mcp_key, mcp_scroll;

#endif
