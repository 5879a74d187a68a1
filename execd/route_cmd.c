/*
 * route_cmd.c -- shell commands: POST /command (a stream), GET
 * /command/status/{id}, GET /command/{id}/logs, and the interrupt shared
 * by DELETE /command and DELETE /code.
 *
 * A foreground command streams its output one event per line, the line
 * terminator stripped ("\n", "\r" or "\r\n"), a blank line as "\n", as
 * upstream does; it ends with execution_complete on exit 0, or with an
 * error event CommandExecError whose evalue is the exit code ("-1" for a
 * signal).  A background command answers init and execution_complete at
 * once; its output goes to a file that GET /command/{id}/logs reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../fs/fs_path.h"
#include "../sse/sse_fmt.h"
#include "body.h"
#include "command.h"
#include "context.h"
#include "execd.h"
#include "http.h"
#include "job.h"
#include "outstream.h"
#include "loop.h"
#include "route.h"
#include "session.h"
#include "xmalloc.h"

#define MAX_GROUPS	256
#define LOG_READ_MAX	(16 << 20)	/* bytes one logs request returns */

/* A request, checked. */
struct cmd_req {
	const char	*command;
	char		 cwd[PATH_MAX];
	bool		 has_cwd;
	bool		 background;
	long long	 timeout_ms;
	bool		 set_ids;
	uid_t		 uid;
	gid_t		 gid;
	gid_t		 groups[MAX_GROUPS];
	int		 ngroups;
	json_t		*envs;		/* borrowed */
};

/* A foreground stream reporting a command. */
struct watch {
	struct execd		*app;
	struct command		*cmd;
	struct outstream	 out;
};

static const struct body_field cmd_fields[] = {
	{ "command", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
	{ "cwd", BODY_STRING, 0 },
	{ "background", BODY_BOOL, 0 },
	{ "timeout", BODY_INT, 0 },
	{ "uid", BODY_INT, 0 },
	{ "gid", BODY_INT, 0 },
	{ "envs", BODY_OBJECT, 0 },
};

static void	 start(struct http_req *, struct cmd_req *);
static void	 on_output(struct job *, int, const char *, size_t, void *);
static void	 on_done(struct job *, int, bool, void *);
static void	 watch_gone(struct sse_stream *, void *);
static void	 watch_shutdown(struct sse_stream *, void *);

/* Check the body into r; on failure reply 400 and return -1. */
static int
check(struct http_req *req, json_t *body, struct cmd_req *r)
{
	char err[512];
	const char *cwd, *k;
	struct passwd *pw;
	struct stat st;
	long long uid, gid;
	json_t *v;

	memset(r, 0, sizeof(*r));
	if (body_check(body, "", cmd_fields, 7, err, sizeof(err)) < 0)
		goto bad;
	r->command = body_str(body, "command", "");
	r->background = json_is_true(json_object_get(body, "background"));
	r->timeout_ms = body_int(body, "timeout", 0);
	if (r->timeout_ms < 0) {
		snprintf(err, sizeof(err), "field 'timeout' must not be "
		    "negative");
		goto bad;
	}
	r->envs = json_object_get(body, "envs");
	json_object_foreach(r->envs, k, v) {
		if (!json_is_string(v) || k[0] == '\0' ||
		    strchr(k, '=') != NULL) {
			snprintf(err, sizeof(err), "field 'envs.%s' must be a "
			    "string under a name without '='", k);
			goto bad;
		}
	}
	uid = body_int(body, "uid", -1);
	gid = body_int(body, "gid", -1);
	if (json_object_get(body, "gid") != NULL && !json_is_null(
	    json_object_get(body, "gid")) && uid < 0 &&
	    json_object_get(body, "uid") == NULL) {
		snprintf(err, sizeof(err), "uid is required when gid is "
		    "provided");
		goto bad;
	}
	if ((json_is_integer(json_object_get(body, "uid")) && (uid < 0 ||
	    uid >= UINT32_MAX)) || (json_is_integer(json_object_get(body,
	    "gid")) && (gid < 0 || gid >= UINT32_MAX))) {
		snprintf(err, sizeof(err), "uid and gid must be between 0 and "
		    "4294967294");
		goto bad;
	}
	if (uid >= 0) {
		if ((pw = getpwuid((uid_t)uid)) == NULL) {
			snprintf(err, sizeof(err), "unknown uid %lld: no such "
			    "user in the user database", uid);
			goto bad;
		}
		r->set_ids = true;
		r->uid = (uid_t)uid;
		r->gid = gid >= 0 ? (gid_t)gid : pw->pw_gid;
		r->ngroups = MAX_GROUPS;
		if (getgrouplist(pw->pw_name, r->gid, r->groups,
		    &r->ngroups) < 0)
			r->ngroups = 0;
	}
	cwd = body_str(body, "cwd", "");
	if (cwd[0] != '\0') {
		if (fs_path_resolve(cwd, strlen(cwd), NULL, r->cwd,
		    sizeof(r->cwd)) < 0) {
			snprintf(err, sizeof(err), "invalid working directory "
			    "'%s': it must be absolute or start with ~", cwd);
			goto bad;
		}
		if (stat(r->cwd, &st) < 0) {
			snprintf(err, sizeof(err), "working directory does not "
			    "exist: %s", cwd);
			goto bad;
		}
		if (!S_ISDIR(st.st_mode)) {
			snprintf(err, sizeof(err), "working directory path is "
			    "not a directory: %s", cwd);
			goto bad;
		}
		r->has_cwd = true;
	}
	return 0;
bad:
	http_reply_error(req, 400, HTTP_E_BODY, "invalid request, %s", err);
	return -1;
}

/* POST /command */
void
route_command_run(struct http_req *req)
{
	struct cmd_req r;

	if (check(req, http_req_json(req), &r) == 0)
		start(req, &r);
}

/* POST /code without a language: the code runs as a shell command. */
void
route_command_code(struct http_req *req, const char *code)
{
	struct cmd_req r;

	memset(&r, 0, sizeof(r));
	r.command = code;
	start(req, &r);
}

/* execd's environment with the request's envs over it. */
static char **
make_env(json_t *envs)
{
	extern char **environ;
	size_t n = 0, i = 0, m;
	const char *k;
	json_t *v;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = xcalloc(n + json_object_size(envs) + 1, sizeof(*env));
	for (size_t j = 0; j < n; j++) {
		m = strcspn(environ[j], "=");
		json_object_foreach(envs, k, v)
			if (strlen(k) == m && strncmp(k, environ[j], m) == 0)
				goto next;
		env[i++] = xstrdup(environ[j]);
next:		;
	}
	json_object_foreach(envs, k, v)
		env[i++] = xasprintf("%s=%s", k, json_string_value(v));
	return env;
}

static void
free_env(char **env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

/* Start the command and answer with its stream. */
static void
start(struct http_req *req, struct cmd_req *r)
{
	struct execd *app = http_req_app(req);
	struct job_opts o = { .cmd = r->command, .cwd = r->has_cwd ? r->cwd :
	    NULL, .set_ids = r->set_ids, .uid = r->uid, .gid = r->gid,
	    .groups = r->groups, .ngroups = (size_t)r->ngroups,
	    .timeout_ms = (unsigned)r->timeout_ms,
	    .grace_ms = app->conf->grace_ms, .out_fd = -1 };
	struct command *c = command_new(r->command, r->background);
	struct sse_stream *s;
	struct watch *w = NULL;
	char err[512], **env = make_env(r->envs);
	int rc;

	o.envp = env;
	if (r->background) {
		c->log_path = command_log_path(c);
		o.out_fd = open(c->log_path, O_WRONLY | O_CREAT | O_TRUNC |
		    O_CLOEXEC, 0600);
		if (o.out_fd < 0) {
			rc = -errno;
			snprintf(err, sizeof(err), "cannot create %s: %s",
			    c->log_path, strerror(-rc));
			goto fail;
		}
	} else {
		w = xcalloc(1, sizeof(*w));
		w->app = app;
		w->cmd = c;
		c->watcher = w;
	}
	rc = job_start(app->loop, &o, on_output, on_done, c, &c->job, err,
	    sizeof(err));
	if (o.out_fd >= 0)
		close(o.out_fd);
	if (rc < 0)
		goto fail;
	free_env(env);
	if (w == NULL) {
		/* Background: init, complete, end; the job runs on. */
		struct sse_buf b;
		struct sse_event ev = { .type = "init", .text = c->id,
		    .timestamp = loop_wall_ms() };

		if ((s = http_reply_stream(req, watch_shutdown, NULL,
		    NULL)) == NULL)
			return;
		sse_buf_init(&b);
		sse_fmt_event(&b, &ev);
		ev = (struct sse_event){ .type = "execution_complete",
		    .timestamp = loop_wall_ms() };
		sse_fmt_event(&b, &ev);
		sse_stream_finish(s, b.p, b.len);
		sse_buf_reset(&b);
		return;
	}
	s = http_reply_stream(req, watch_shutdown, watch_gone, w);
	if (s == NULL) {
		c->watcher = NULL;
		free(w);
		return;
	}
	outstream_start(&w->out, app->loop, s, c->id);
	return;
fail:
	free_env(env);
	c->watcher = NULL;
	free(w);
	command_drop(c);
	http_reply_errno(req, rc, "error running commands %s", err);
}

/* Output as it is read, one event per line. */
static void
on_output(struct job *j, int which, const char *p, size_t n, void *arg)
{
	struct command *c = arg;
	struct watch *w = c->watcher;

	if (w != NULL)		/* else nobody is listening any more */
		outstream_output(&w->out, which, p, n);
}

/* The job is complete: record it, and end the stream if one listens. */
static void
on_done(struct job *j, int st, bool timed_out, void *arg)
{
	struct command *c = arg;
	struct watch *w = c->watcher;
	const char *tb;

	command_finish(c, st, timed_out);
	job_free(j);
	c->job = NULL;
	if (w == NULL)
		return;
	tb = c->error != NULL ? c->error : "";
	outstream_end(&w->out, c->exit_code, &tb, 1);
}

/* The client left: the command runs on, unreported. */
static void
watch_gone(struct sse_stream *s, void *arg)
{
	struct watch *w = arg;

	outstream_gone(&w->out);
	if (w->cmd->watcher == w)
		w->cmd->watcher = NULL;
	free(w);
}

/* Shutdown: a final event; the job itself is stopped with the rest. */
static void
watch_shutdown(struct sse_stream *s, void *arg)
{
	sse_stream_finish(s, outstream_bye, strlen(outstream_bye));
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
	char *end, hdr[32], *buf;
	long long off = 0;
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
	if (cur != NULL && cur[0] != '\0') {
		off = strtoll(cur, &end, 10);
		if (*end != '\0' || off < 0) {
			http_reply_error(req, 400, HTTP_E_BODY, "invalid "
			    "cursor '%s': a byte offset, 0 or more", cur);
			return;
		}
	}
	if ((fd = open(c->log_path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		http_reply_errno(req, -EIO, "cannot read the output of %s", id);
		return;
	}
	/* Only what is there, and at most LOG_READ_MAX of it. */
	want = off < st.st_size ? (size_t)(st.st_size - off) : 0;
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
	struct execd *app = http_req_app(req);
	const char *id = http_req_query(req, "id");
	struct context *ctx;
	struct command *c;
	int rc;

	if (id == NULL || id[0] == '\0') {
		http_reply_error(req, 400, HTTP_E_QUERY,
		    "missing query parameter 'id'");
		return;
	}
	if ((ctx = context_find(app->contexts, id)) != NULL) {
		if (context_shell(ctx) != NULL)
			rc = session_interrupt(context_shell(ctx));
		else
			rc = kernel_interrupt(context_kernel(ctx));
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
		if (route_session_kill(id) == 0)
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
