/*
 * command.h -- the registry of shell commands: ids, status, output files.
 *
 * A command is registered when it starts and stays queryable after it
 * ends, until the retention period (COMMAND_RETAIN_S) has passed and no
 * stream reads it any more; then it is forgotten and its files removed.
 * A foreground command's events are kept in its history (cmdlog.h),
 * produced by its outstream whether or not a client listens.  Loop thread
 * only.
 */
#ifndef EXECD_COMMAND_H
#define EXECD_COMMAND_H

#include <stdbool.h>
#include <time.h>

#include <jansson.h>

#define COMMAND_RETAIN_S	3600

struct loop;
struct job;
struct cmdlog;
struct outstream;

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
	unsigned	 tails;		/* background: streams reading it */
	struct command	*next;
};

/* Start the registry; out_dir holds background output files. */
void		 command_init(struct loop *, const char *out_dir);
void		 command_shutdown(void);	/* stop every job, forget all */
/* A new registered command (running, started now). */
struct command	*command_new(const char *content, bool background);
struct command	*command_find(const char *id);
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
