/*
 * tool_ctx.c -- the tools that look at, feed or stop what runs:
 * command_output (a background command's output file from a byte
 * offset), command_input (its stdin, job.h's), interrupt,
 * and the code contexts: list_contexts, create_context (answered once
 * the kernel is ready), delete_context.  Loop thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/xmalloc.h"
#include "../../domain/command.h"
#include "../../domain/context.h"
#include "../../process/job.h"
#include "mcp.h"

/* command_output: a background command's output from a byte offset. */
void
mcp_command_output(struct mcp_call *call, const json_t *args)
{
	const char *id = mcp_arg_str(args, "id", "");
	long long off = mcp_arg_int(args, "offset", 0);
	struct command *c = command_find(id);
	struct stat st;
	ssize_t n = 0;
	char *buf;
	int fd;

	if (c == NULL || c->log_path == NULL) {
		mcp_call_fail(call, c == NULL ? "command %s not found" :
		    "command %s is not a background command", id);
		return;
	}
	if ((fd = open(c->log_path, O_RDONLY | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		mcp_call_fail(call, "cannot read the output of %s", id);
		return;
	}
	if (off > st.st_size)
		off = st.st_size;
	/* at most MCP_TEXT_CAP a read: next_offset says where the rest is */
	buf = xmalloc(MCP_TEXT_CAP + 1);
	if (st.st_size > off && (n = pread(fd, buf, MCP_TEXT_CAP, off)) < 0)
		n = 0;
	close(fd);
	buf[n] = '\0';
	mcp_call_result(call, json_pack("{s:[{s:s, s:o}], s:{s:o, s:I, s:b, "
	    "s:o}}", "content", "type", "text", "text", n > 0 ?
	    json_stringn_nocheck(buf, (size_t)n) : json_string("(no new "
	    "output)"), "structuredContent", "output",
	    json_stringn_nocheck(buf, (size_t)n), "next_offset",
	    (json_int_t)(off + n), "running", c->running, "exit_code",
	    c->running ? json_null() : json_integer(c->exit_code)));
	free(buf);
}

/* command_input: text to a command's stdin, then maybe end of file. */
void
mcp_command_input(struct mcp_call *call, const json_t *args)
{
	const char *id = mcp_arg_str(args, "id", "");
	const json_t *t = json_object_get(args, "text");
	bool close_it = mcp_arg_bool(args, "close", false);
	struct command *c = command_find(id);
	size_t n = json_string_length(t);
	int rc = 0;
	char *s;

	if (c == NULL) {
		mcp_call_fail(call, "command %s not found", id);
		return;
	}
	if (!c->running || c->job == NULL) {
		mcp_call_fail(call, "command %s is not running", id);
		return;
	}
	if (n > 0)
		rc = job_stdin_write(c->job, json_string_value(t), n);
	if (rc == 0 && close_it)
		rc = job_stdin_close(c->job);
	switch (rc) {
	case 0:
		s = xasprintf("wrote %zu bytes to the stdin of %s%s", n, id,
		    close_it ? ", then closed it" : "");
		mcp_call_text(call, s, json_pack("{s:I, s:b}", "written",
		    (json_int_t)n, "closed", close_it));
		free(s);
		break;
	case -ENOTTY:
		mcp_call_fail(call, "command %s has no stdin to write to: "
		    "start it with run_command's stdin: true", id);
		break;
	case -EPIPE:
		mcp_call_fail(call, "the stdin of command %s is closed", id);
		break;
	case -EFBIG:
		mcp_call_fail(call, "at most %d bytes may be written to stdin "
		    "at once", JOB_STDIN_MAX);
		break;
	case -ENOBUFS:
		mcp_call_fail(call, "command %s has not read %zu bytes of its "
		    "stdin yet; try again later", id,
		    job_stdin_queued(c->job));
		break;
	default:
		mcp_call_fail(call, "cannot write to the stdin of %s: %s", id,
		    strerror(-rc));
	}
}

/* interrupt: a context's running code, or a background command. */
void
mcp_interrupt(struct mcp_call *call, const json_t *args)
{
	const char *id = mcp_arg_str(args, "id", "");
	struct context *ctx;
	struct command *c;
	int rc;

	if ((ctx = context_find(id)) != NULL) {
		rc = context_interrupt(ctx);
		if (rc == -ESRCH)
			mcp_call_fail(call, "nothing runs in context %s", id);
		else if (rc < 0)
			mcp_call_fail(call, "cannot interrupt context %s: %s",
			    id, strerror(-rc));
		else
			mcp_call_text(call, "interrupted", NULL);
		return;
	}
	if ((c = command_find(id)) == NULL) {
		mcp_call_fail(call, "no context or command %s", id);
		return;
	}
	if (!c->running || c->job == NULL || job_stop(c->job) < 0) {
		mcp_call_fail(call, "command %s is not running", id);
		return;
	}
	mcp_call_text(call, "stopped (SIGTERM, then SIGKILL after the grace "
	    "period)", NULL);
}

static void
each_ctx(struct context *c, void *arg)
{
	json_array_append_new(arg, json_pack("{s:s, s:s, s:b}", "id",
	    context_id(c), "language", context_language(c), "ready",
	    context_ready(c)));
}

/* list_contexts: every live context, newest first. */
void
mcp_list_contexts(struct mcp_call *call, const json_t *args)
{
	const char *lang = mcp_arg_str(args, "language", NULL);
	json_t *a = json_array(), *v;
	char *langs = context_languages(), *s;
	size_t i;
	struct buf b;

	context_each(lang, each_ctx, a);
	buf_init(&b);
	buf_addf(&b, "%zu context(s)\n", json_array_size(a));
	json_array_foreach(a, i, v)
		buf_addf(&b, "%s %s%s\n", json_string_value(json_object_get(v,
		    "id")), json_string_value(json_object_get(v, "language")),
		    json_is_true(json_object_get(v, "ready")) ? "" :
		    " (starting)");
	buf_addf(&b, "installed kernels: %s", langs);
	s = xstrndup(b.p, b.len);
	mcp_call_text(call, s, json_pack("{s:o}", "contexts", a));
	free(s);
	free(langs);
	buf_reset(&b);
}

struct ctx_wait {
	struct mcp_call	*call;
	struct context	*ctx;
};

static void
ctx_answer(struct mcp_call *call, struct context *c)
{
	char *s = xasprintf("context %s (%s) is ready", context_id(c),
	    context_language(c));

	mcp_call_text(call, s, json_pack("{s:s, s:s}", "id", context_id(c),
	    "language", context_language(c)));
	free(s);
}

static void
ctx_ready(struct context *c, const char *why, void *arg)
{
	struct ctx_wait *w = arg;

	if (why != NULL)
		mcp_call_fail(w->call, "the context could not start: %s", why);
	else
		ctx_answer(w->call, c);
	free(w);
}

/* The client left while the kernel started: it stays, unheard. */
static void
ctx_gone(void *arg)
{
	struct ctx_wait *w = arg;

	context_wait_cancel(w->ctx, w);
	free(w);
}

/* Make the context in dir (NULL: execd's), answer once it is ready. */
static void
ctx_go(struct mcp_call *call, const char *dir, void *arg)
{
	char *lang = arg, err[2048];
	struct context *c;
	struct ctx_wait *w;
	int rc;

	rc = context_create_light(lang, dir, false, NULL, &c, err,
	    sizeof(err));
	free(lang);
	if (rc < 0) {
		mcp_call_fail(call, "%s", err);
		return;
	}
	if (context_ready(c)) {
		ctx_answer(call, c);
		return;
	}
	w = xcalloc(1, sizeof(*w));
	w->call = call;
	w->ctx = c;
	mcp_call_on_cancel(call, NULL, ctx_gone, w);
	mcp_call_later(call, false);
	context_wait(c, ctx_ready, w);
}

/* create_context: a new kernel, its cwd checked first. */
void
mcp_create_context(struct mcp_call *call, const json_t *args)
{
	const char *lang = mcp_arg_str(args, "language", "python");

	if (context_is_command_language(lang)) {
		mcp_call_fail(call, "language '%s' is not a kernel", lang);
		return;
	}
	mcp_with_cwd(call, mcp_arg_str(args, "cwd", ""), ctx_go, free,
	    xstrdup(lang));
}

/* delete_context: shut its kernel down. */
void
mcp_delete_context(struct mcp_call *call, const json_t *args)
{
	const char *id = mcp_arg_str(args, "id", "");
	struct context *c = context_find(id);

	if (c == NULL) {
		mcp_call_fail(call, "context %s not found", id);
		return;
	}
	context_delete(c);
	mcp_call_text(call, "deleted", NULL);
}
