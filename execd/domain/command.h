/*
 * command.h -- the registry of shell commands: ids, status, output files.
 *
 * A command is registered when it starts and stays queryable after it
 * ends, until the retention period (COMMAND_RETAIN_S) has passed and no
 * stream reads it any more; then it is forgotten and its files removed.
 * Sooner when finished commands are more than command_retain() allows,
 * in number or in bytes of output: the oldest finished go first.
 * A foreground command's events are kept in its history (cmdlog.h),
 * produced by its outstream whether or not a client listens, and read by
 * every reader of it (command_reader), each at its own pace; a background
 * command's output file is turned into the same events as it is read.
 * Loop thread only.
 */
#ifndef EXECD_COMMAND_H
#define EXECD_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#define COMMAND_RETAIN_S	(24 * 3600)	/* upstream 1.1's 24 hours */

struct buf;
struct loop;
struct job;
struct cmdlog;
struct outstream;
struct limits;

struct command;
struct command_reader;
/* The command ended (its status recorded, its history ended); once. */
typedef void command_end_cb(struct command *, void *arg);

struct command {
	char		 id[33];
	char		*content;
	bool		 background;
	bool		 running;
	int		 exit_code;	/* valid once !running */
	char		*error;		/* "exit status 3", "signal: killed" */
	struct timespec	 started, finished;
	char		*log_path;	/* background: combined output */
	struct job	*job;		/* while running */
	struct cmdlog	*history;	/* foreground: its events */
	struct outstream *out;		/* foreground, while running: the
					   producer of its events */
	unsigned	 tails;		/* background: readers (command.c) */
	uint64_t	 kept;		/* finished: bytes of its output kept,
					   as last measured (command.c) */
	command_end_cb	*ended;		/* see command_start() */
	void		*ended_arg;
	struct command	*next;
};

/* What a command runs as; borrowed for the call. */
struct command_opts {
	const char	*command;	/* run by the shell, unless argv */
	char *const	*argv;		/* not NULL: run without a shell (see
					   job.h); its status content is the
					   list as JSON, as upstream's */
	const char	*cwd;		/* NULL: execd's */
	bool		 background;	/* output to a file, not a history */
	unsigned	 timeout_ms;	/* 0: none */
	bool		 set_ids;	/* run as uid, gid and groups */
	uid_t		 uid;
	gid_t		 gid;
	const gid_t	*groups;
	size_t		 ngroups;
	json_t		*envs;		/* over execd's environment: the
					   overlay of envfile_overlay(), the
					   request's over EXECD_ENVS's */
	bool		 stdin_pipe;	/* stdin a pipe for POST .../stdin */
	const struct limits *limits;	/* NULL: none */
};

/*
 * Start the registry: out_dir holds background output files and
 * histories; a stopped job gets grace_ms from SIGTERM to SIGKILL.
 */
void		 command_init(struct loop *, const char *out_dir,
		    unsigned grace_ms);
void		 command_shutdown(void);	/* stop every job, forget all */
/*
 * Keep at most max finished commands, and at most bytes of their output
 * (output files and histories, on disk or in memory); over either, the
 * oldest finished that no stream reads are forgotten.  Default: 1024, 1 GiB.
 */
void		 command_retain(unsigned max, uint64_t bytes);
/*
 * Register a command and start its job (ended, if not NULL, is called
 * when it ends).  0 with *out set, or -errno with a message in err and
 * nothing registered.
 */
int		 command_start(const struct command_opts *, command_end_cb *ended,
		    void *arg, struct command **out, char *err, size_t errlen);
/* What a reader's pull says (the values of feed.h's). */
#define COMMAND_MORE	0	/* more can be pulled at once */
#define COMMAND_WAIT	1	/* nothing more until notify */
#define COMMAND_END	2	/* out holds the last events */

/* A reader has more to pull (or has ended).  Never from inside a pull. */
typedef void command_notify_cb(void *arg);

/*
 * A reader of c's events numbered above after, in OpenSandbox's framing,
 * "seq" last (sse_fmt_reframe puts them in another): a foreground
 * command's history replayed and followed, or a background command's
 * output file turned into init (seq 1), one stdout event per line and the
 * final event, as it is read.  notify says when there is more.  0 with
 * *out set, or -errno (the output file cannot be opened).
 */
int		 command_reader_new(struct command *c, uint64_t after,
		    command_notify_cb *notify, void *arg,
		    struct command_reader **out);
/* Whole events into out, about max bytes: COMMAND_MORE, _WAIT or _END. */
int		 command_reader_pull(struct command_reader *, struct buf *out,
		    size_t max);
void		 command_reader_free(struct command_reader *);	/* NULL ok */
/* A new registered command (running, started now). */
struct command	*command_new(const char *content, bool background);
struct command	*command_find(const char *id);
/* Stop every running command (job_stop); their records stay. */
void		 command_stop_all(void);
/* The job ended with waitpid status st; records code, error, time. */
void		 command_finish(struct command *, int st, bool timed_out);
/* Forget a command at once (a start failure). */
void		 command_drop(struct command *);
/* The status object clients read. */
json_t		*command_json(const struct command *);
/* Where background output goes: <out_dir>/<id>.output */
char		*command_log_path(const struct command *);
/* The prefix of its history's files: <out_dir>/<id> */
char		*command_history_prefix(const struct command *);

#endif
