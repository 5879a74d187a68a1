/*
 * command.c -- bookkeeping for shell commands (ids, status, retention).
 *
 * Running the process is job.c's; streaming and HTTP are route_cmd.c's.
 * Finished commands are kept COMMAND_RETAIN_S seconds, so status and logs
 * stay available for a while without the registry growing forever.
 */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kernelproto/kp_msg.h"
#include "cmdlog.h"
#include "command.h"
#include "job.h"
#include "loop.h"
#include "outstream.h"
#include "ptree.h"
#include "xmalloc.h"

#define SWEEP_MS	60000

static struct loop	*L;
static char		*outdir;
static struct command	*list;
static uint64_t		 t_sweep;

static void	sweep(struct loop *, uint64_t, void *);
static void	forget(struct command *);

/* Remember where output files go; start the retention sweep. */
void
command_init(struct loop *loop, const char *out_dir)
{
	L = loop;
	outdir = xstrdup(out_dir);
	t_sweep = loop_timer_add(L, SWEEP_MS, sweep, NULL);
}

/* Kill every running job and forget everything. */
void
command_shutdown(void)
{
	struct command *c;

	if (t_sweep != 0)
		loop_timer_cancel(L, t_sweep);
	t_sweep = 0;
	while ((c = list) != NULL) {
		list = c->next;
		forget(c);
	}
	/* Trees still in their grace period are not left behind. */
	ptree_shutdown();
	free(outdir);
	outdir = NULL;
}

/* Register a command that starts now. */
struct command *
command_new(const char *content, bool background)
{
	struct command *c = xcalloc(1, sizeof(*c));

	kp_msg_new_id(c->id);
	c->content = xstrdup(content);
	c->background = background;
	c->running = true;
	clock_gettime(CLOCK_REALTIME, &c->started);
	c->next = list;
	list = c;
	return c;
}

/* A registered command by id. */
struct command *
command_find(const char *id)
{
	for (struct command *c = list; c != NULL; c = c->next)
		if (strcmp(c->id, id) == 0)
			return c;
	return NULL;
}

/* Record how the job ended. */
void
command_finish(struct command *c, int st, bool timed_out)
{
	c->running = false;
	clock_gettime(CLOCK_REALTIME, &c->finished);
	free(c->error);
	c->error = NULL;
	if (WIFEXITED(st)) {
		c->exit_code = WEXITSTATUS(st);
		if (c->exit_code != 0)
			c->error = xasprintf("exit status %d", c->exit_code);
	} else {
		c->exit_code = -1;
		c->error = xasprintf("signal: %s%s", WIFSIGNALED(st) ?
		    strsignal(WTERMSIG(st)) : "unknown", timed_out ?
		    " (timeout)" : "");
		/* strsignal says "Killed"; Go, and so clients, "killed". */
		c->error[8] = (char)tolower((unsigned char)c->error[8]);
	}
}

/* Drop the command now: free it and remove its output file. */
void
command_drop(struct command *c)
{
	for (struct command **pp = &list; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	forget(c);
}

static void
forget(struct command *c)
{
	job_free(c->job);
	if (c->out != NULL)
		outstream_gone(c->out);
	free(c->out);
	cmdlog_free(c->history);
	if (c->log_path != NULL)
		unlink(c->log_path);
	free(c->log_path);
	free(c->content);
	free(c->error);
	free(c);
}

/* Forget commands finished longer ago than the retention period. */
static void
sweep(struct loop *l, uint64_t id, void *arg)
{
	struct timespec now;
	struct command *c, **pp;

	clock_gettime(CLOCK_REALTIME, &now);
	for (pp = &list; (c = *pp) != NULL;) {
		if (!c->running && c->tails == 0 && (c->history == NULL ||
		    cmdlog_readers(c->history) == 0) &&
		    now.tv_sec - c->finished.tv_sec > COMMAND_RETAIN_S) {
			*pp = c->next;
			forget(c);
		} else {
			pp = &c->next;
		}
	}
	t_sweep = loop_timer_add(l, SWEEP_MS, sweep, NULL);
}

/* RFC 3339 in UTC with nanoseconds, trailing zeros trimmed. */
static json_t *
rfc3339(const struct timespec *ts)
{
	char buf[64], frac[16];
	struct tm tm;
	size_t n;

	gmtime_r(&ts->tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(frac, sizeof(frac), ".%09ld", ts->tv_nsec);
	for (n = strlen(frac); n > 1 && frac[n - 1] == '0'; n--)
		frac[n - 1] = '\0';
	if (n > 1)
		strncat(buf, frac, sizeof(buf) - strlen(buf) - 1);
	strncat(buf, "Z", sizeof(buf) - strlen(buf) - 1);
	return json_string(buf);
}

/* {id, content, running, exit_code?, error?, started_at, finished_at?} */
json_t *
command_json(const struct command *c)
{
	json_t *o = json_pack("{s:s, s:s, s:b}", "id", c->id, "content",
	    c->content, "running", c->running);

	json_object_set_new(o, "started_at", rfc3339(&c->started));
	if (!c->running) {
		json_object_set_new(o, "exit_code",
		    json_integer(c->exit_code));
		json_object_set_new(o, "finished_at", rfc3339(&c->finished));
	}
	if (c->error != NULL)
		json_object_set_new(o, "error", json_string(c->error));
	return o;
}

/* <out_dir>/<id>.output */
char *
command_log_path(const struct command *c)
{
	return xasprintf("%s/%s.output", outdir, c->id);
}

/* <out_dir>/<id> */
char *
command_history_prefix(const struct command *c)
{
	return xasprintf("%s/%s", outdir, c->id);
}
