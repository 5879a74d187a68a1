/*
 * command.h -- the registry of shell commands: ids, status, output files.
 *
 * A command is registered when it starts and stays queryable after it
 * ends, until the retention period (COMMAND_RETAIN_S) has passed and no
 * stream reads it any more; then it is forgotten and its files removed.
 * A foreground command's events are kept in its history (cmdlog.h),
 * produced by its outstream whether or not a client listens, and read by
 * every stream of it (command_read), each at its own client's pace.  Loop
 * thread only.
 */
#ifndef EXECD_COMMAND_H
#define EXECD_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#define COMMAND_RETAIN_S	3600

struct loop;
struct http_req;
struct job;
struct cmdlog;
struct outstream;
struct limits;

struct command;
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
	unsigned	 tails;		/* background: streams reading it */
	command_end_cb	*ended;		/* see command_start() */
	void		*ended_arg;
	struct command	*next;
};

/* What a command runs as; borrowed for the call. */
struct command_opts {
	const char	*command;
	const char	*cwd;		/* NULL: execd's */
	bool		 background;	/* output to a file, not a history */
	unsigned	 timeout_ms;	/* 0: none */
	bool		 set_ids;	/* run as uid, gid and groups */
	uid_t		 uid;
	gid_t		 gid;
	const gid_t	*groups;
	size_t		 ngroups;
	json_t		*envs;		/* over execd's and EXECD_ENVS's */
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
 * Register a command and start its job (ended, if not NULL, is called
 * when it ends).  0 with *out set, or -errno with a message in err and
 * nothing registered.
 */
int		 command_start(const struct command_opts *, command_end_cb *ended,
		    void *arg, struct command **out, char *err, size_t errlen);
/*
 * Answer req with a stream of foreground command c's events numbered
 * above after, read from its history at the client's pace.  0, or -1 if
 * no stream could be made (req got 500).
 */
int		 command_read(struct http_req *, struct command *,
		    uint64_t after);
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
