/*
 * tool_run.c -- run_code (a code run, run.h), and what it shares with a
 * foreground run_command (exec.h).
 *
 * A code run or a foreground command is read as it goes: its text is
 * gathered for the result (capped, the cut marked) and, when the call
 * streams, sent on as progress notifications.  Runs and readers say
 * there is more from their notify callbacks, where they may not be
 * freed, so the reading is done from a timer of 0 ms on the loop.
 * notifications/cancelled interrupts the code or stops the command; the
 * call is then answered with what it gave.  Loop thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../config/conf.h"
#include "../../core/loop.h"
#include "../../core/xmalloc.h"
#include "../../domain/command.h"
#include "../../domain/context.h"
#include "../../domain/run.h"
#include "../../process/job.h"
#include "../execd.h"
#include "exec.h"

#define OVERFLOW	"[execd: results came faster than they were read; " \
	"the rest was dropped]\n"

static void	 exec_free(struct exec *);
static void	 exec_drain(struct loop *, uint64_t, void *);
static void	 exec_result(struct exec *, const json_t *);
static void	 exec_error(struct exec *, const json_t *);
static void	 plain_line(struct mcp_text *, const char *, size_t);
static void	 exec_cancel(void *);
static void	 exec_gone(void *);
static void	 code_ready(struct context *, const char *, void *);
static void	 code_start(struct exec *);
static bool	 code_pull(struct exec *);

struct exec *
exec_new(struct mcp_call *call)
{
	struct exec *x = xcalloc(1, sizeof(*x));
	struct execd *app = mcp_call_app(call);

	x->call = call;
	x->loop = app->loop;
	x->images = json_array();
	buf_init(&x->raw);
	mcp_call_on_cancel(call, exec_cancel, exec_gone, x);
	return x;
}

static void
exec_free(struct exec *x)
{
	if (x->timer != 0)
		loop_timer_cancel(x->loop, x->timer);
	if (x->ctx != NULL && x->run == NULL)
		context_wait_cancel(x->ctx, x);
	run_free(x->run);
	command_reader_free(x->rd);
	buf_reset(&x->raw);
	mcp_text_free(&x->out);
	mcp_text_free(&x->err);
	mcp_text_free(&x->res);
	json_decref(x->images);
	free(x->code);
	free(x);
}

/* Answer with everything gathered; note (NULL: none) ends the text. */
void
exec_done(struct exec *x, const char *note)
{
	struct command *cmd = x->cmd_id[0] != '\0' ?
	    command_find(x->cmd_id) : NULL;
	size_t on, en, rn;
	char *o = mcp_text_take(&x->out, "stdout", &on);
	char *e = mcp_text_take(&x->err, "stderr", &en);
	char *r = mcp_text_take(&x->res, "results", &rn);
	json_t *content = json_array(), *res, *st = NULL;
	struct buf b;
	size_t i;
	json_t *img;

	buf_init(&b);
	if (cmd != NULL) {
		if (cmd->running)
			buf_adds(&b, "[still running]\n");
		else
			buf_addf(&b, "[exit code %d%s%s]\n", cmd->exit_code,
			    cmd->error != NULL ? ": " : "",
			    cmd->error != NULL ? cmd->error : "");
		st = json_pack("{s:s, s:b, s:o, s:o, s:o}", "id", x->cmd_id,
		    "background", 0, "exit_code", cmd->running ? json_null() :
		    json_integer(cmd->exit_code), "stdout",
		    json_stringn_nocheck(o, on), "stderr",
		    json_stringn_nocheck(e, en));
		x->failed = !cmd->running && cmd->exit_code != 0;
	}
	if (on > 0) {
		buf_adds(&b, cmd != NULL ? "stdout:\n" : "");
		buf_add(&b, o, on);
	}
	if (en > 0) {
		buf_adds(&b, b.len > 0 ? "\nstderr:\n" : "stderr:\n");
		buf_add(&b, e, en);
	}
	if (rn > 0) {
		buf_adds(&b, b.len > 0 ? "\n" : "");
		buf_add(&b, r, rn);
	}
	if (note != NULL)
		buf_addf(&b, "%s[%s]\n", b.len > 0 ? "\n" : "", note);
	if (b.len == 0)
		buf_adds(&b, "(no output)");
	json_array_append_new(content, json_pack("{s:s, s:o}", "type", "text",
	    "text", json_stringn_nocheck(b.p, b.len)));
	json_array_foreach(x->images, i, img)
		json_array_append(content, img);
	res = json_pack("{s:o}", "content", content);
	if (st != NULL)
		json_object_set_new(res, "structuredContent", st);
	if (x->failed)
		json_object_set_new(res, "isError", json_true());
	buf_reset(&b);
	free(o);
	free(e);
	free(r);
	mcp_call_result(x->call, res);
	exec_free(x);
}

/* More to read: read it from the loop, outside the notify callback. */
void
exec_kick(void *arg)
{
	struct exec *x = arg;

	if (x->timer == 0)
		x->timer = loop_timer_add(x->loop, 0, exec_drain, x);
}

static void
exec_drain(struct loop *l, uint64_t id, void *arg)
{
	struct exec *x = arg;
	bool over;

	(void)l;
	(void)id;
	x->timer = 0;
	over = x->run != NULL ? code_pull(x) : exec_cmd_pull(x);
	if (over)
		exec_done(x, NULL);
}

void
exec_text(struct exec *x, const char *type, const char *p, size_t n)
{
	struct mcp_text *t = strcmp(type, "stdout") == 0 ? &x->out : &x->err;
	bool was_cut = t->cut > 0;

	mcp_text_add(t, p, n);
	mcp_call_progress(x->call, p, n);
	if (!was_cut && t->cut > 0)
		mcp_call_log(x->call, MCP_LOG_WARNING, "%s passed %d KiB: the "
		    "result keeps its first %d KiB and says how much was cut; "
		    "progress still carries all of it", type,
		    MCP_TEXT_CAP >> 10, MCP_TEXT_CAP >> 10);
}

/* A result or display: PNG as image content, text as text. */
static void
exec_result(struct exec *x, const json_t *r)
{
	const char *png = json_string_value(json_object_get(r, "image/png"));
	const char *txt = json_string_value(json_object_get(r, "text"));

	char *b64, *w;

	if (png != NULL) {
		/* kernels may wrap base64 in lines; MCP wants it bare */
		b64 = w = xstrdup(png);
		for (const char *q = png; *q != '\0'; q++)
			if (*q != '\n' && *q != '\r' && *q != ' ')
				*w++ = *q;
		*w = '\0';
		json_array_append_new(x->images, json_pack("{s:s, s:s, s:s}",
		    "type", "image", "data", b64, "mimeType", "image/png"));
		free(b64);
	}
	else if (txt != NULL) {
		mcp_text_add(&x->res, txt, strlen(txt));
		mcp_text_add(&x->res, "\n", 1);
	}
}

/* A traceback line without its terminal colours (ESC [ ... letter). */
static void
plain_line(struct mcp_text *t, const char *p, size_t n)
{
	size_t i = 0, j;

	while (i < n) {
		for (j = i; j < n && p[j] != '\033'; j++)
			;
		mcp_text_add(t, p + i, j - i);
		if (j + 1 < n && p[j + 1] == '[') {
			for (j += 2; j < n && !((p[j] >= 'A' && p[j] <= 'Z') ||
			    (p[j] >= 'a' && p[j] <= 'z')); j++)
				;
		}
		i = j + 1;
	}
	mcp_text_add(t, "\n", 1);
}

static void
exec_error(struct exec *x, const json_t *e)
{
	const char *en = json_string_value(json_object_get(e, "ename"));
	const char *ev = json_string_value(json_object_get(e, "evalue"));
	char *s = xasprintf("%s: %s\n", en != NULL ? en : "Error",
	    ev != NULL ? ev : "");
	const json_t *tb = json_object_get(e, "traceback");
	size_t i;
	json_t *line;

	x->failed = true;
	mcp_text_add(&x->res, s, strlen(s));
	free(s);
	if (en != NULL && strcmp(en, "KernelError") == 0)
		mcp_call_log(x->call, MCP_LOG_ERROR, "the kernel of context %s "
		    "stopped during the run: %s", x->ctx != NULL ?
		    context_id(x->ctx) : "?",
		    ev != NULL ? ev : "");
	json_array_foreach(tb, i, line)
		if (json_is_string(line))
			plain_line(&x->res, json_string_value(line),
			    json_string_length(line));
}

/* notifications/cancelled: interrupt, and answer with what came. */
static void
exec_cancel(void *arg)
{
	struct exec *x = arg;
	struct command *c;

	if (x->run != NULL)
		(void)run_interrupt(x->run);
	else if (x->cmd_id[0] != '\0') {
		if ((c = command_find(x->cmd_id)) != NULL && c->running &&
		    c->job != NULL)
			(void)job_stop(c->job);
	} else
		exec_done(x, "cancelled before it started");
}

static void
exec_gone(void *arg)
{
	exec_free(arg);
}

/* run_code: find or make the context, then run once it is ready. */
void
mcp_run_code(struct mcp_call *call, const json_t *args)
{
	struct execd *app = mcp_call_app(call);
	const char *id = mcp_arg_str(args, "context_id", "");
	const char *lang = mcp_arg_str(args, "language", "python");
	struct context *c;
	struct exec *x;
	char err[2048];
	int rc;

	if (id[0] != '\0') {
		if ((c = context_find(id)) == NULL) {
			mcp_call_fail(call, "context %s not found "
			    "(list_contexts shows those there are)", id);
			return;
		}
	} else if (context_is_command_language(lang)) {
		mcp_call_fail(call, "language '%s' is not a kernel: use "
		    "run_command", lang);
		return;
	} else if ((c = context_default(lang)) == NULL &&
	    (rc = context_create_light(lang, NULL, true, NULL, &c, err,
	    sizeof(err))) < 0) {
		mcp_call_fail(call, "%s", err);
		return;
	}
	x = exec_new(call);
	x->ctx = c;
	x->code = xstrdup(mcp_arg_str(args, "code", ""));
	x->o = (struct run_opts){ .code = x->code,
	    .timeout_ms = mcp_arg_int(args, "timeout_ms", 0),
	    .max_output = app->conf->max_output,
	    .max_queue = app->conf->stream_cap };
	mcp_call_later(call, true);
	if (context_ready(c))
		code_start(x);
	else {
		mcp_call_log(call, MCP_LOG_INFO, "waiting for the kernel of "
		    "context %s to start", context_id(c));
		context_wait(c, code_ready, x);
	}
}

static void
code_ready(struct context *c, const char *why, void *arg)
{
	struct exec *x = arg;

	(void)c;
	if (why != NULL) {
		x->ctx = NULL;
		mcp_text_add(&x->err, why, strlen(why));
		x->failed = true;
		exec_done(x, "the context could not start");
		return;
	}
	code_start(x);
}

static void
code_start(struct exec *x)
{
	x->run = run_new(x->ctx, &x->o, exec_kick, x);
	mcp_call_log(x->call, MCP_LOG_DEBUG, "running in context %s",
	    context_id(x->ctx));
	exec_kick(x);
}

/* Take the run's events; true once it is over. */
static bool
code_pull(struct exec *x)
{
	struct sse_event ev;
	int rc;

	while ((rc = run_next(x->run, &ev)) == RUN_EVENT) {
		if ((strcmp(ev.type, "stdout") == 0 ||
		    strcmp(ev.type, "stderr") == 0) && ev.text != NULL)
			exec_text(x, ev.type, ev.text, ev.text_len != 0 ?
			    ev.text_len : strlen(ev.text));
		else if (strcmp(ev.type, "result") == 0 && ev.results != NULL)
			exec_result(x, ev.results);
		else if (strcmp(ev.type, "error") == 0 && ev.error != NULL)
			exec_error(x, ev.error);
	}
	if (rc == RUN_OVERFLOW) {
		exec_text(x, "stderr", OVERFLOW, strlen(OVERFLOW));
		mcp_call_log(x->call, MCP_LOG_WARNING, "%s", OVERFLOW);
	}
	return rc != RUN_WAIT;
}

