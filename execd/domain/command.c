/*
 * command.c -- bookkeeping for shell commands (ids, status, retention).
 *
 * Running the process is job.c's; this file starts it, with its
 * environment and its output file or history, and gives readers its
 * events: a history's, or a background command's output file turned into
 * events as it is read (kept on a list, to be told when the command
 * ends).  HTTP requests are route_cmd.c's.
 * Finished commands are kept COMMAND_RETAIN_S seconds, so status and logs
 * stay available for a while, and no more of them, nor of their output,
 * than command_retain() says, so that neither the registry nor the files
 * grow without bound.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../kernelproto/kp_msg.h"
#include "../../sse/sse_fmt.h"
#include "../../util/rfc3339.h"
#include "../core/loop.h"
#include "../core/xmalloc.h"
#include "../process/envfile.h"
#include "../process/job.h"
#include "../process/ptree.h"
#include "cmdlog.h"
#include "command.h"
#include "lines.h"
#include "outstream.h"

#define SWEEP_MS	60000
#define TAIL_CHUNK	16384		/* background output read at once */
#define TAIL_POLL_MS	100		/* a running one's file, looked at */

static struct loop	*L;
static char		*outdir;
static unsigned		 grace;	/* a stopped job's SIGTERM to SIGKILL */
static struct command	*list;
static uint64_t		 t_sweep;
static uint64_t		 t_retain;	/* a retain() to come, or 0 */
static unsigned		 keep_max = 1024;	/* finished commands */
static uint64_t		 keep_bytes = (uint64_t)1 << 30; /* their output */

/*
 * A reader: of a foreground command's history (r), or of a background
 * command's output file (the rest; on the tails list).
 */
struct command_reader {
	command_notify_cb	*notify;
	void			*arg;
	struct cmdlog_reader	*r;
	char			 id[33];	/* looked up at each pull */
	int			 fd;
	off_t			 off;
	struct lines		 lines;
	uint64_t		 seq;		/* the last number given */
	uint64_t		 after;		/* give events above it */
	uint64_t		 t_poll;
	bool			 begun;
	struct buf		*out;		/* during a pull */
	struct command_reader	*prev, *next;
};

static struct command_reader	*tails;

static void	sweep(struct loop *, uint64_t, void *);
static void	retain(struct loop *, uint64_t, void *);
static void	measure(struct command *);
static bool	evictable(const struct command *);
static void	forget(struct command *);
static void	on_output(struct job *, int, const char *, size_t, void *);
static void	on_done(struct job *, int, bool, void *);
static void	history_notify(struct cmdlog_reader *, void *);
static int	tail_pull(struct command_reader *, struct buf *);
static void	tail_line(const char *, size_t, void *);
static void	tail_poll(struct loop *, uint64_t, void *);
static void	tails_kick(struct command *);
static int64_t	ms_of(const struct timespec *);

/* Remember where output files go; start the retention sweep. */
void
command_init(struct loop *loop, const char *out_dir, unsigned grace_ms)
{
	L = loop;
	outdir = xstrdup(out_dir);
	grace = grace_ms;
	t_sweep = loop_timer_add(L, SWEEP_MS, sweep, NULL);
}

/* The bounds of what finished commands keep; see command.h. */
void
command_retain(unsigned max, uint64_t bytes)
{
	keep_max = max;
	keep_bytes = bytes;
}

/* Kill every running job and forget everything. */
void
command_shutdown(void)
{
	struct command *c;

	if (t_sweep != 0)
		loop_timer_cancel(L, t_sweep);
	t_sweep = 0;
	if (t_retain != 0)
		loop_timer_cancel(L, t_retain);
	t_retain = 0;
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

/* Register the command, make its output file or history, start its job. */
int
command_start(const struct command_opts *co, command_end_cb *ended,
    void *arg, struct command **out, char *err, size_t errlen)
{
	struct job_opts o = { .cmd = co->command, .argv = co->argv,
	    .cwd = co->cwd, .set_ids = co->set_ids, .uid = co->uid,
	    .gid = co->gid, .groups = co->groups, .ngroups = co->ngroups,
	    .timeout_ms = co->timeout_ms, .grace_ms = grace,
	    .out_fd = -1, .stdin_pipe = co->stdin_pipe,
	    .limits = co->limits };
	struct command *c;
	char **env = envfile_env(co->envs, co->cwd), *prefix;
	struct buf content;
	int rc;

	if (co->argv != NULL) {
		/* The list as Go's encoder writes it: ["ls","-l"]. */
		buf_init(&content);
		buf_add(&content, "[", 1);
		for (size_t i = 0; co->argv[i] != NULL; i++) {
			if (i > 0)
				buf_add(&content, ",", 1);
			sse_fmt_string(&content, co->argv[i],
			    strlen(co->argv[i]));
		}
		buf_add(&content, "]", 1);
		c = command_new(content.p, co->background);
		buf_reset(&content);
	} else {
		c = command_new(co->command, co->background);
	}

	o.envp = env;
	c->ended = ended;
	c->ended_arg = arg;
	if (co->background) {
		c->log_path = command_log_path(c);
		o.out_fd = open(c->log_path, O_WRONLY | O_CREAT | O_TRUNC |
		    O_CLOEXEC, 0600);
		if (o.out_fd < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot create %s: %s",
			    c->log_path, strerror(-rc));
			goto fail;
		}
	} else {
		prefix = command_history_prefix(c);
		rc = cmdlog_new(prefix, CMDLOG_CAP, CMDLOG_LAG, &c->history);
		if (rc < 0)
			snprintf(err, errlen, "cannot create %s.0.events: %s",
			    prefix, strerror(-rc));
		free(prefix);
		if (rc < 0)
			goto fail;
		c->out = xcalloc(1, sizeof(*c->out));
		outstream_start_log(c->out, L, c->history, c->id);
	}
	rc = job_start(L, &o, on_output, on_done, c, &c->job, err, errlen);
	if (o.out_fd >= 0)
		close(o.out_fd);
	if (rc < 0)
		goto fail;
	envfile_env_free(env);
	*out = c;
	return 0;
fail:
	envfile_env_free(env);
	command_drop(c);
	return rc;
}

/* Output as it is read: into the history, one event per line. */
static void
on_output(struct job *j, int which, const char *p, size_t n, void *arg)
{
	struct command *c = arg;

	if (c->out != NULL)	/* else background: the child writes a file */
		outstream_output(c->out, which, p, n);
}

/* The job is complete: record it, end its history, tell the starter. */
static void
on_done(struct job *j, int st, bool timed_out, void *arg)
{
	struct command *c = arg;
	const char *tb;

	command_finish(c, st, timed_out);
	if (job_why(j)[0] != '\0') {
		/* A limit ended it: say which, not just the signal. */
		free(c->error);
		c->error = xstrdup(job_why(j));
	}
	job_free(j);
	c->job = NULL;
	if (c->out != NULL) {
		tb = c->error != NULL ? c->error : "";
		outstream_end(c->out, c->exit_code, &tb, 1);
		outstream_gone(c->out);
		free(c->out);
		c->out = NULL;
	}
	tails_kick(c);
	measure(c);
	/* Soon, not now: whoever is told of the end may still use c. */
	if (t_retain == 0)
		t_retain = loop_timer_add(L, 0, retain, NULL);
	if (c->ended != NULL)
		c->ended(c, c->ended_arg);
}

/* A reader of c's events numbered above after; see command.h. */
int
command_reader_new(struct command *c, uint64_t after,
    command_notify_cb *notify, void *arg, struct command_reader **out)
{
	struct command_reader *rd = xcalloc(1, sizeof(*rd));

	rd->notify = notify;
	rd->arg = arg;
	rd->fd = -1;
	if (c->history != NULL) {
		rd->r = cmdlog_reader_new(c->history, after, history_notify,
		    rd);
		*out = rd;
		return 0;
	}
	if ((rd->fd = open(c->log_path, O_RDONLY | O_CLOEXEC)) < 0) {
		free(rd);
		return -errno;
	}
	snprintf(rd->id, sizeof(rd->id), "%s", c->id);
	rd->after = after;
	lines_init(&rd->lines);
	rd->next = tails;
	if (tails != NULL)
		tails->prev = rd;
	tails = rd;
	c->tails++;
	*out = rd;
	return 0;
}

/* The next events: of the history, or of the output file. */
int
command_reader_pull(struct command_reader *rd, struct buf *out, size_t max)
{
	_Static_assert(CMDLOG_MORE == COMMAND_MORE &&
	    CMDLOG_WAIT == COMMAND_WAIT && CMDLOG_END == COMMAND_END,
	    "a history's pull is a reader's");
	if (rd->r != NULL)
		return cmdlog_reader_pull(rd->r, out, max);
	return tail_pull(rd, out);
}

void
command_reader_free(struct command_reader *rd)
{
	struct command *c;

	if (rd == NULL)
		return;
	if (rd->r != NULL) {
		cmdlog_reader_free(rd->r);
		free(rd);
		return;
	}
	if ((c = command_find(rd->id)) != NULL && c->tails > 0)
		c->tails--;
	if (rd->t_poll != 0)
		loop_timer_cancel(L, rd->t_poll);
	if (rd->prev != NULL)
		rd->prev->next = rd->next;
	else
		tails = rd->next;
	if (rd->next != NULL)
		rd->next->prev = rd->prev;
	close(rd->fd);
	lines_reset(&rd->lines);
	free(rd);
}

/* The history has more. */
static void
history_notify(struct cmdlog_reader *r, void *arg)
{
	struct command_reader *rd = arg;

	rd->notify(rd->arg);
}

/* A time as Unix milliseconds. */
static int64_t
ms_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

/*
 * The next events from a background command's output file: init first,
 * then a stdout event per line as the file grows, and once the command
 * has ended, the rest and the final event.
 */
static int
tail_pull(struct command_reader *rd, struct buf *out)
{
	struct command *c = command_find(rd->id);
	char buf[TAIL_CHUNK];
	const char *tb;
	ssize_t n;

	if (c == NULL)
		return COMMAND_END;	/* forgotten */
	if (!rd->begun) {
		struct sse_event ev = { .type = "init", .text = c->id,
		    .timestamp = ms_of(&c->started), .seq = 1 };

		rd->begun = true;
		rd->seq = 1;
		if (rd->after < 1)
			sse_fmt_event(out, &ev);
	}
	do
		n = pread(rd->fd, buf, sizeof(buf), rd->off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return COMMAND_END;
	rd->out = out;
	if (n > 0) {
		rd->off += n;
		lines_feed(&rd->lines, buf, (size_t)n, tail_line, rd);
		return COMMAND_MORE;
	}
	if (c->running) {
		if (rd->t_poll == 0)
			rd->t_poll = loop_timer_add(L, TAIL_POLL_MS,
			    tail_poll, rd);
		return COMMAND_WAIT;
	}
	lines_flush(&rd->lines, tail_line, rd);
	if (++rd->seq > rd->after) {
		tb = c->error != NULL ? c->error : "";
		outstream_fmt_end(out, c->exit_code, &tb, 1,
		    (long long)(ms_of(&c->finished) - ms_of(&c->started)),
		    rd->seq, ms_of(&c->finished));
	}
	return COMMAND_END;
}

/* One line of output: a stdout event. */
static void
tail_line(const char *p, size_t n, void *arg)
{
	struct command_reader *rd = arg;

	if (++rd->seq > rd->after)
		outstream_fmt_line(rd->out, 1, p, n, rd->seq, loop_wall_ms());
}

/* Look at the file of a running command again. */
static void
tail_poll(struct loop *l, uint64_t id, void *arg)
{
	struct command_reader *rd = arg;

	rd->t_poll = 0;
	rd->notify(rd->arg);
}

/* Command c ended: its output's readers read the rest and end. */
static void
tails_kick(struct command *c)
{
	for (struct command_reader *rd = tails; rd != NULL; rd = rd->next) {
		if (strcmp(rd->id, c->id) != 0)
			continue;
		if (rd->t_poll != 0)
			loop_timer_cancel(L, rd->t_poll);
		rd->t_poll = 0;
		rd->notify(rd->arg);
	}
}

/* Stop every running command's job (a runtime re-initialisation). */
void
command_stop_all(void)
{
	for (struct command *c = list; c != NULL; c = c->next)
		if (c->running && c->job != NULL)
			(void)job_stop(c->job);
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

/* Finished, and no stream reads it: it may be forgotten. */
static bool
evictable(const struct command *c)
{
	return !c->running && c->tails == 0 && (c->history == NULL ||
	    cmdlog_readers(c->history) == 0);
}

/*
 * How much of c's output is kept: its history, or its output file (which
 * what it left running may still write to).
 */
static void
measure(struct command *c)
{
	struct stat st;

	if (c->history != NULL)
		c->kept = cmdlog_size(c->history);
	else if (c->log_path != NULL && stat(c->log_path, &st) == 0)
		c->kept = (uint64_t)st.st_size;
	else
		c->kept = 0;
}

/*
 * Forget the oldest finished commands no stream reads while finished ones
 * are more than keep_max, or their output more than keep_bytes.
 */
static void
retain(struct loop *l, uint64_t id, void *arg)
{
	struct command *c, **pp, **oldest;
	uint64_t n = 0, bytes = 0;

	t_retain = 0;
	for (c = list; c != NULL; c = c->next) {
		if (!c->running) {
			n++;
			bytes += c->kept;
		}
	}
	while (n > keep_max || bytes > keep_bytes) {
		oldest = NULL;
		for (pp = &list; (c = *pp) != NULL; pp = &c->next)
			if (evictable(c) && (oldest == NULL ||
			    c->finished.tv_sec < (*oldest)->finished.tv_sec ||
			    (c->finished.tv_sec == (*oldest)->finished.tv_sec &&
			    c->finished.tv_nsec < (*oldest)->finished.tv_nsec)))
				oldest = pp;
		if (oldest == NULL)
			break;		/* the rest are being read */
		c = *oldest;
		*oldest = c->next;
		n--;
		bytes -= c->kept;
		forget(c);
	}
}

/*
 * Forget commands finished longer ago than the retention period, measure
 * what the others keep, and hold them to the bounds.
 */
static void
sweep(struct loop *l, uint64_t id, void *arg)
{
	struct timespec now;
	struct command *c, **pp;

	clock_gettime(CLOCK_REALTIME, &now);
	for (pp = &list; (c = *pp) != NULL;) {
		if (evictable(c) &&
		    now.tv_sec - c->finished.tv_sec > COMMAND_RETAIN_S) {
			*pp = c->next;
			forget(c);
		} else {
			if (!c->running)
				measure(c);
			pp = &c->next;
		}
	}
	if (t_retain != 0)
		loop_timer_cancel(l, t_retain);
	retain(l, 0, NULL);
	t_sweep = loop_timer_add(l, SWEEP_MS, sweep, NULL);
}

/* ts as a JSON string in RFC 3339 (rfc3339.h). */
static json_t *
rfc3339(const struct timespec *ts)
{
	char buf[RFC3339_LEN];

	rfc3339_ns(ts, buf);
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
