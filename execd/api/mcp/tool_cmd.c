/*
 * tool_cmd.c -- run_command: its cwd checked on a worker, then started
 * through the command registry (command.h), in the background (its id
 * answered at once) or read to its end from its history as an exec
 * (exec.h), output sent on as progress while it runs.  Loop thread.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../config/conf.h"
#include "../../core/xmalloc.h"
#include "../../domain/command.h"
#include "../../process/envfile.h"
#include "../../process/limits.h"
#include "../execd.h"
#include "exec.h"

/* The command's events pulled and parsed; true once it is over. */
bool
exec_cmd_pull(struct exec *x)
{
	const char *type, *txt;
	char *end;
	json_t *ev;
	size_t n;
	int rc, rounds = 0;

	do {
		rc = command_reader_pull(x->rd, &x->raw, 64 << 10);
		while ((end = memmem(x->raw.p, x->raw.len, "\n\n", 2)) !=
		    NULL) {
			n = (size_t)(end - x->raw.p);
			if ((ev = json_loadb(x->raw.p, n, JSON_ALLOW_NUL,
			    NULL)) != NULL) {
				type = json_string_value(json_object_get(ev,
				    "type"));
				txt = json_string_value(json_object_get(ev,
				    "text"));
				if (type != NULL && txt != NULL &&
				    (strcmp(type, "stdout") == 0 ||
				    strcmp(type, "stderr") == 0))
					exec_text(x, type, txt,
					    json_string_length(json_object_get(
					    ev, "text")));
				json_decref(ev);
			}
			buf_drain(&x->raw, n + 2);
		}
	} while (rc == COMMAND_MORE && ++rounds < 64);
	if (rc == COMMAND_MORE)
		exec_kick(x);	/* the rest on a later turn of the loop */
	return rc == COMMAND_END;
}

/* What run_command starts, kept while its cwd is checked. */
struct cmd_start {
	char		*command;
	json_t		*env;
	unsigned	 timeout_ms;
	bool		 background;
	bool		 stdin_pipe;
};

static void
cmd_start_free(void *arg)
{
	struct cmd_start *p = arg;

	free(p->command);
	json_decref(p->env);
	free(p);
}

/* Start it in dir (NULL: execd's) and read it, or say it started. */
static void
cmd_go(struct mcp_call *call, const char *dir, void *arg)
{
	struct cmd_start *p = arg;
	struct execd *app = mcp_call_app(call);
	struct command_opts o = { .command = p->command, .cwd = dir,
	    .background = p->background, .timeout_ms = p->timeout_ms,
	    .stdin_pipe = p->stdin_pipe,
	    .limits = &app->conf->limits[LIMITS_COMMAND] };
	char err[512];
	struct command *c;
	struct exec *x;
	int rc;

	o.envs = envfile_overlay(p->env);
	rc = command_start(&o, NULL, NULL, &c, err, sizeof(err));
	json_decref(o.envs);
	cmd_start_free(p);
	if (rc < 0) {
		mcp_call_fail(call, "cannot run the command: %s", err);
		return;
	}
	if (o.background) {
		mcp_call_result(call, json_pack("{s:[{s:s, s:o}], s:{s:s, "
		    "s:b}}", "content", "type", "text", "text",
		    json_sprintf("started in the background: id %s (read its "
		    "output with command_output)", c->id),
		    "structuredContent", "id", c->id, "background", 1));
		return;
	}
	x = exec_new(call);
	memcpy(x->cmd_id, c->id, sizeof(x->cmd_id));
	if ((rc = command_reader_new(c, 0, exec_kick, x, &x->rd)) < 0) {
		exec_done(x, "its output cannot be read");
		return;
	}
	mcp_call_later(call, true);
	mcp_call_log(call, MCP_LOG_INFO, "command %s started (command_input "
	    "writes to its stdin if it has one, interrupt stops it)", c->id);
	exec_kick(x);
}

/* run_command: in the foreground (read to its end) or the background. */
void
mcp_run_command(struct mcp_call *call, const json_t *args)
{
	struct cmd_start *p = xcalloc(1, sizeof(*p));
	long long t = mcp_arg_int(args, "timeout_ms", 0);

	p->command = xstrdup(mcp_arg_str(args, "command", ""));
	p->env = json_deep_copy(json_object_get(args, "env"));
	p->timeout_ms = t > UINT32_MAX ? UINT32_MAX : (unsigned)t;
	p->background = mcp_arg_bool(args, "background", false);
	p->stdin_pipe = mcp_arg_bool(args, "stdin", false);
	mcp_with_cwd(call, mcp_arg_str(args, "cwd", ""), cmd_go,
	    cmd_start_free, p);
}

