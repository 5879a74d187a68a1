/*
 * route_cmd.c -- commands, a shell string or an argv list run without a
 * shell: POST /command (a stream), GET /command/status/{id}, GET
 * /command/{id}/logs, GET /command/{id}/stream, POST /command/{id}/stdin,
 * and the interrupt shared by DELETE /command and DELETE /code.
 *
 * A foreground command streams its output one event per line, with its
 * terminator for clients of upstream 1.1.1's framing, or stripped ("\n",
 * "\r" or "\r\n"; a blank line as "\n") for the others, as cmdstream.h
 * chooses per client; it ends with execution_complete on exit 0, or with an
 * error event CommandExecError whose evalue is the exit code ("-1" for a
 * signal).  Its events, numbered (seq), go into its history (cmdlog.h)
 * whether or not anyone listens, and every stream of it -- the one POST
 * /command answers and any reattached later -- reads that history at its
 * own client's pace (cmdstream.h).  A background command answers init and
 * execution_complete at once; its output goes to a file that GET
 * /command/{id}/logs reads, and that a reattached stream turns into
 * numbered stdout events, one per line, as it reads it.  The body of POST
 * /command is checked by cmdreq.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../../sse/sse_fmt.h"
#include "../../../util/id.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../../domain/command.h"
#include "../../domain/context.h"
#include "../../domain/session.h"
#include "../../process/job.h"
#include "../../transport/evstream.h"
#include "../../transport/http.h"
#include "../../transport/tape.h"
#include "../execd.h"
#include "../idem.h"
#include "../runhold.h"
#include "cmdreq.h"
#include "cmdstream.h"
#include "route.h"

#define LOG_READ_MAX	(16 << 20)	/* bytes one logs request returns */


struct lookup;
static void	 lookup_run(void *);
static void	 lookup_done(struct http_req *, void *);
static void	 lookup_free(struct lookup *);
static void	 start(struct http_req *, struct cmd_req *);
static void	 start_failed(struct http_req *, const char *);
static int64_t	 ms_of(const struct timespec *);

/* A command's user and cwd, looked up on a worker. */
struct lookup {
	struct cmd_req	 r;
	int		 rc;
	char		 err[PATH_MAX + 256];
};

/* POST /command */
void
route_command_run(struct http_req *req)
{
	struct lookup *l;
	bool keep;

	if (runhold(req, route_command_run))
		return;	/* a restore runs: after it */
	if (idem_front(req))
		return;
	l = xmalloc(sizeof(*l));

	/* line_endings is the stream's (cmdstream.h), checked here first. */
	if (cmdreq_check(req, http_req_json(req), &l->r) < 0 ||
	    cmdstream_line_endings(req, &keep) < 0) {
		lookup_free(l);
		return;
	}
	if (!l->r.set_ids && !l->r.has_cwd) {
		start(req, &l->r);
		lookup_free(l);
		return;
	}
	/* A user database or a mount that hangs costs this request only. */
	http_req_work(req, 0, NULL, lookup_run, lookup_done, l);
}

static void
lookup_run(void *arg)
{
	struct lookup *l = arg;

	l->rc = cmdreq_resolve(&l->r, l->err, sizeof(l->err));
}

static void
lookup_done(struct http_req *req, void *arg)
{
	struct lookup *l = arg;

	if (req != NULL && l->rc < 0)
		http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s",
		    l->err);
	else if (req != NULL)
		start(req, &l->r);
	lookup_free(l);
}

static void
lookup_free(struct lookup *l)
{
	json_decref(l->r.overlay);
	free(l);
}

/* Start the command and answer with its stream. */
static void
start(struct http_req *req, struct cmd_req *r)
{
	struct command_opts o = { .command = r->command, .cwd = r->has_cwd ?
	    r->cwd : NULL, .background = r->background,
	    .timeout_ms = (unsigned)r->timeout_ms, .set_ids = r->set_ids,
	    .uid = r->uid, .gid = r->gid, .groups = r->groups,
	    .ngroups = (size_t)r->ngroups, .envs = r->overlay,
	    .stdin_pipe = r->stdin_pipe, .limits = &r->limits };
	struct evstream_opts so = { .shape = EVSTREAM_TYPED,
	    .flags = EVSTREAM_F_NO_PING };
	struct evstream *s;
	struct command *c;
	char err[512], **argv = NULL;
	size_t i;
	json_t *v;
	int rc;

	if (r->argv != NULL) {
		argv = xcalloc(json_array_size(r->argv) + 1, sizeof(*argv));
		json_array_foreach(r->argv, i, v)
			argv[i] = (char *)(uintptr_t)json_string_value(v);
		o.argv = argv;
	}
	rc = command_start(&o, NULL, NULL, &c, err, sizeof(err));
	free(argv);
	if (rc < 0 && r->argv != NULL && rc != -ENOMEM && rc != -EMFILE &&
	    rc != -ENFILE && rc != -EAGAIN) {
		/* The program was not found or would not run. */
		start_failed(req, err);
		return;
	}
	if (rc < 0) {
		http_reply_errno(req, rc, "error running commands %s", err);
		return;
	}
	if (r->background) {
		/*
		 * Background: init, complete, end; the job runs on.  init
		 * is the first event of the command (seq 1), the same as a
		 * reattached stream has; the execution_complete only says
		 * it started, so it is not one of its events: no number.
		 */
		struct tape *rec;
		struct buf b;
		struct sse_event ev = { .type = "init", .text = c->id,
		    .timestamp = ms_of(&c->started), .seq = 1 };

		rec = idem_stream_record(req);
		if ((s = evstream_open(req, &so)) == NULL) {
			tape_end(rec, false);
			return;
		}
		buf_init(&b);
		sse_fmt_event(&b, &ev);
		ev = (struct sse_event){ .type = "execution_complete",
		    .timestamp = loop_wall_ms() };
		sse_fmt_event(&b, &ev);
		tape_add(rec, b.p, b.len);
		tape_end(rec, true);
		evstream_end(s, b.p, b.len);
		buf_reset(&b);
		return;
	}
	/* Foreground: the first reader of its history, from the start. */
	if (cmdstream_reply(req, c, 0) == 0)
		idem_stream_replay(req, cmdstream_replay, c->id);
}

/*
 * An argv command that did not start, as upstream says so: init (with an
 * id that names nothing: no command was registered), then an error event
 * CommandExecError whose evalue and traceback say why.
 */
static void
start_failed(struct http_req *req, const char *why)
{
	struct evstream_opts so = { .shape = EVSTREAM_TYPED,
	    .flags = EVSTREAM_F_NO_PING };
	struct sse_event ev = { .type = "init", .timestamp = loop_wall_ms() };
	struct evstream *s;
	char id[ID_HEX_LEN + 1];
	json_t *e;
	struct buf b;

	if ((s = evstream_open(req, &so)) == NULL)
		return;
	id_hex(id);
	ev.text = id;
	buf_init(&b);
	sse_fmt_event(&b, &ev);
	e = json_pack("{s:s, s:s, s:[s]}", "ename", "CommandExecError",
	    "evalue", why, "traceback", why);
	ev = (struct sse_event){ .type = "error", .error = e,
	    .timestamp = loop_wall_ms() };
	sse_fmt_event(&b, &ev);
	json_decref(e);
	evstream_end(s, b.p, b.len);
	buf_reset(&b);
}

/* A time as Unix milliseconds. */
static int64_t
ms_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

/* GET /command/{id}/stream?after=N: reattach to a command's events. */
void
route_command_stream(struct http_req *req)
{
	const char *id = http_req_param(req, "id");
	const char *a = http_req_query(req, "after");
	struct command *c = command_find(id);
	uint64_t after = 0;
	bool keep;
	int rc;

	if (c == NULL) {
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "command not found: %s", id);
		return;
	}
	if (http_req_query_uint(req, "after", UINT64_MAX, &after) < 0) {
		http_reply_error(req, 400, HTTP_E_QUERY, "invalid after '%s': "
		    "a sequence number, 0 or more", a);
		return;
	}
	if (cmdstream_line_endings(req, &keep) < 0)
		return;		/* answered 400 */
	if ((rc = cmdstream_reply(req, c, after)) < 0)
		http_reply_errno(req, rc == -ENOENT ? -EIO : rc, "cannot read "
		    "the output of %s", id);
}

/*
 * POST /command/{id}/stdin[?close=true]: the body goes to the command's
 * stdin (a command started with "stdin": true); close=true closes it after.
 */
void
route_command_stdin(struct http_req *req)
{
	const char *id = http_req_param(req, "id");
	const char *cl = http_req_query(req, "close");
	struct command *c;
	const void *body;
	size_t n;

	if (idem_front(req))
		return;
	c = command_find(id);
	bool close_it = false;
	int rc = 0;

	if (c == NULL) {
		http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
		    "command not found: %s", id);
		return;
	}
	if (cl != NULL && (strcmp(cl, "true") == 0 || strcmp(cl, "1") == 0))
		close_it = true;
	else if (cl != NULL && cl[0] != '\0' && strcmp(cl, "false") != 0 &&
	    strcmp(cl, "0") != 0) {
		http_reply_error(req, 400, HTTP_E_QUERY, "invalid close '%s': "
		    "true or false", cl);
		return;
	}
	if (!c->running || c->job == NULL) {
		http_reply_error(req, 409, HTTP_E_RUNTIME, "command %s is not "
		    "running", id);
		return;
	}
	body = http_req_body(req, &n);
	if (n > 0)
		rc = job_stdin_write(c->job, body, n);
	if (rc == 0 && close_it)
		rc = job_stdin_close(c->job);
	switch (rc) {
	case 0:
		http_reply_empty(req);
		break;
	case -ENOTTY:
		http_reply_error(req, 409, HTTP_E_RUNTIME, "command %s has no "
		    "stdin to write to: start it with \"stdin\": true", id);
		break;
	case -EPIPE:
		http_reply_error(req, 409, HTTP_E_RUNTIME, "the stdin of "
		    "command %s is closed", id);
		break;
	case -EFBIG:
		http_reply_error(req, 413, HTTP_E_TOO_LARGE, "at most %d bytes "
		    "may be written to stdin at once", JOB_STDIN_MAX);
		break;
	case -ENOBUFS:
		http_reply_error(req, 503, HTTP_E_UNAVAILABLE, "command %s has "
		    "not read %zu bytes of its stdin yet; try again later",
		    id, job_stdin_queued(c->job));
		break;
	default:
		http_reply_errno(req, rc, "cannot write to the stdin of %s",
		    id);
	}
}

/* GET /command/status/{id} */
void
route_command_status(struct http_req *req)
{
	const char *id = http_req_param(req, "id");
	struct command *c = command_find(id);

	if (c == NULL) {
		http_reply_error(req, 404, HTTP_E_BODY, "command not found: %s",
		    id);
		return;
	}
	http_reply_json(req, 200, command_json(c));
}

/* GET /command/{id}/logs?cursor=N: background output from byte N. */
void
route_command_logs(struct http_req *req)
{
	const char *id = http_req_param(req, "id");
	const char *cur = http_req_query(req, "cursor");
	struct command *c = command_find(id);
	char hdr[32], *buf;
	uint64_t cursor = 0;
	long long off;
	size_t want;
	struct stat st;
	ssize_t n = 0;
	int fd;

	if (c == NULL) {
		http_reply_error(req, 404, HTTP_E_BODY, "command not found: %s",
		    id);
		return;
	}
	if (c->log_path == NULL) {
		http_reply_error(req, 400, HTTP_E_BODY, "command %s is not "
		    "running in background", id);
		return;
	}
	if (http_req_query_uint(req, "cursor", INT64_MAX, &cursor) < 0) {
		http_reply_error(req, 400, HTTP_E_BODY, "invalid cursor '%s': "
		    "a byte offset, 0 or more", cur);
		return;
	}
	off = (long long)cursor;
	if ((fd = open(c->log_path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		http_reply_errno(req, -EIO, "cannot read the output of %s", id);
		return;
	}
	/* As upstream 1.1: a cursor past the end is the end. */
	if (off > st.st_size)
		off = st.st_size;
	/* Only what is there, and at most LOG_READ_MAX of it. */
	want = (size_t)(st.st_size - off);
	if (want > LOG_READ_MAX)
		want = LOG_READ_MAX;
	buf = xmalloc(want);
	if (want > 0 && (n = pread(fd, buf, want, off)) < 0)
		n = 0;
	close(fd);
	snprintf(hdr, sizeof(hdr), "%lld", off + n);
	http_reply_text(req, 200, "text/plain; charset=utf-8", buf, (size_t)n,
	    "EXECD-COMMANDS-TAIL-CURSOR", hdr);
	free(buf);
}

/*
 * DELETE /command?id= and DELETE /code?id=: interrupt a code context's
 * kernel, or stop a command (SIGTERM to its group, SIGKILL after the
 * grace period).
 */
void
route_interrupt(struct http_req *req)
{
	const char *id = http_req_query(req, "id");
	struct context *ctx;
	struct command *c;
	int rc;

	if (idem_front(req))
		return;

	if (id == NULL || id[0] == '\0') {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "missing query parameter 'id'");
		return;
	}
	if ((ctx = context_find(id)) != NULL) {
		rc = context_interrupt(ctx);
		if (rc == -ESRCH)
			http_reply_error(req, 409, HTTP_E_RUNTIME, "nothing "
			    "runs in context %s", id);
		else if (rc < 0)
			http_reply_errno(req, rc, "error interrupting context "
			    "%s", id);
		else
			http_reply_empty(req);
		return;
	}
	if ((c = command_find(id)) == NULL) {
		/* As upstream: a session id deletes the session. */
		if (session_close(id) == 0)
			http_reply_empty(req);
		else
			http_reply_error(req, 404, HTTP_E_CONTEXT_NOT_FOUND,
			    "no context, command or session %s", id);
		return;
	}
	if (!c->running || c->job == NULL || job_stop(c->job) < 0) {
		http_reply_error(req, 409, HTTP_E_RUNTIME, "command %s is not "
		    "running", id);
		return;
	}
	http_reply_empty(req);
}
