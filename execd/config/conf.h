/*
 * conf.h -- execd's options: command line, environment, the policy file
 * (--config, YAML), defaults.
 *
 * One table drives parsing, the environment fallbacks, --help and the keys
 * of the policy file, so an option cannot exist without being documented.
 * Precedence: command line, then environment, then the file of --config,
 * then default.  policy.h prints the options back as a file, over this
 * table; nothing here depends on it.  Main thread.
 */
#ifndef EXECD_CONF_H
#define EXECD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sys/types.h>

#include "../core/log.h"
#include "../domain/kernel.h"
#include "../process/limits.h"
#include "../process/sandbox.h"
#include "isoconf.h"

#define EXECD_VERSION	"0.1.0"
#define EXECD_PORT	44772
#define CONF_MAX_OPTS	64	/* rows of the option table, at most */
#define CONF_LANG_LIMITS 16	/* languages with limits of their own */
#define CONF_NGROUPS	64	/* supplementary groups of the user */
#define CONF_FILE_MAX	(1 << 20)	/* largest policy file read, in bytes */
#define CONF_MCP_SERVERS 16	/* mcp_servers of the policy file, at most */
#define CONF_MCP_ARGS	256	/* words of one's command, env entries */
#define CONF_SERVICES	16	/* services of the policy file, at most */

/* Who children run as when a request names no uid. */
struct conf_user {
	bool		 set;		/* false: execd's own identity */
	char		 name[64];
	uid_t		 uid;
	gid_t		 gid;
	gid_t		 groups[CONF_NGROUPS];	/* supplementary, with gid */
	size_t		 ngroups;
	char		 home[256];
};

/*
 * One MCP server of the policy file's mcp_servers, which /mcp relays to
 * (the gateway): a command run on stdio, or a loopback HTTP URL.
 */
struct conf_mcp_server {
	char		 name[32];	/* [a-z0-9_-], no "__" */
	char		**argv;		/* the command, NULL-ended; or NULL */
	char		**env;		/* "NAME=VALUE", NULL-ended; or NULL */
	char		*cwd;		/* or NULL */
	char		*url;		/* or NULL (then argv is set) */
};

/*
 * One service of the policy file's services, which execd starts in the
 * file's order and restarts when it ends (service.h).
 */
enum conf_restart {
	CONF_RESTART_ALWAYS,	/* whatever the status */
	CONF_RESTART_ON_FAILURE,	/* not after exit status 0 */
	CONF_RESTART_NEVER
};

struct conf_service {
	char		 name[32];	/* [a-z0-9_-] */
	char		**argv;		/* the command, NULL-ended */
	char		**env;		/* "NAME=VALUE", NULL-ended; or NULL */
	char		*cwd;		/* or NULL */
	char		 after[32];	/* an earlier service's name, or "" */
	char		*ready;		/* a path there once it is ready, or
					   NULL: ready once started */
	enum conf_restart restart;
};

/* --line-endings: what foreground command output texts end with. */
enum conf_endings {
	CONF_ENDINGS_AUTO,	/* keep for SDKs >= 1.1.1, else strip */
	CONF_ENDINGS_STRIP,	/* lines without terminators (upstream 1.0) */
	CONF_ENDINGS_KEEP	/* with them (upstream 1.1.1) */
};

struct conf {
	char		 addr[64];	/* numeric, no brackets */
	uint16_t	 port;
	bool		 addr_given;	/* --listen said where */
	enum conf_jupyter {	/* --jupyter-listen */
		CONF_JUPYTER_OFF,
		CONF_JUPYTER_AUTO,	/* on when kernels are installed */
		CONF_JUPYTER_ON,
	}		 jupyter;
	char		 jupyter_addr[64];
	uint16_t	 jupyter_port;
	char		*allow_origin;	/* --allow-origin, or NULL */
	char		*display;	/* --display, or NULL: $DISPLAY */
	char		*token;		/* NULL: none; wiped at exit */
	enum log_level	 log_level;
	size_t		 max_body;
	size_t		 max_upload;	/* 0: no limit */
	unsigned	 conn_timeout;
	unsigned	 header_timeout;	/* seconds for request headers */
	unsigned	 body_timeout;	/* seconds for a body, before ... */
	size_t		 body_min_rate;	/* ... it must average this (B/s) */
	unsigned	 max_half_open;	/* connections awaiting a request */
	size_t		 body_memory;	/* all buffered bodies at once */
	unsigned	 max_conns;
	unsigned	 max_conns_per_ip;
	size_t		 stream_cap;
	unsigned	 grace_ms;
	char		*runtime_dir;	/* kernel connection files */
	char		*checkpoint_dir;	/* --checkpoint-dir, or NULL */
	char		*iso_upper_root; /* isolated sessions' uppers;
					    NULL: ISOLATED_UPPER_ROOT */
	size_t		 iso_upper_max;	/* bytes per upper; 0: no cap */
	char		*iso_config;	/* --isolation-config, or NULL */
	struct isoconf	 iso;		/* what it says (isoconf.h) */
	unsigned	 iso_given;	/* CONF_GIVEN_*: set over the file */
#define CONF_GIVEN_UPPER_ROOT	0x1
#define CONF_GIVEN_UPPER_MAX	0x2
#define CONF_GIVEN_CAPS		0x4
	enum kernel_transport kernel_transport;
	bool		 kernel_fork_off;	/* --kernel-fork off */
	bool		 kernel_fork_kernels;	/* ... kernels */
	unsigned	 kernel_ready_s;
	size_t		 max_output;
	size_t		 pty_replay;	/* terminal output kept */
	unsigned	 keep_commands;	/* finished commands kept, at most */
	size_t		 keep_commands_size; /* ... and bytes of their output */
	unsigned	 batch_conc;	/* /code/batch items at once, 0: CPUs */
	unsigned	 idem_window_s;	/* Idempotency-Key kept this long */
	unsigned	 idem_keys;	/* ... and this many at most */
	enum conf_endings line_endings;	/* of command output texts */
	unsigned	 proxy_timeout;	/* seconds a /proxy backend may be silent */
	unsigned	 fs_timeout;	/* seconds a file request's worker may take */
	unsigned	 busy_poll_us;	/* loop_busy_poll() cap, 0: off */
	char		*pool;		/* "python=1,javascript=2" */
	unsigned	 idle_s;	/* cull contexts idle this long */
	struct sandbox_conf sandbox;	/* what children run under */
	struct limits	 limits[LIMITS_NKINDS];	/* defaults per kind of job */
	struct limits_lang lang_limits[CONF_LANG_LIMITS];  /* contexts, over
					   limits[LIMITS_CONTEXT] */
	size_t		 nlang_limits;
	struct conf_mcp_server mcp_servers[CONF_MCP_SERVERS];
	size_t		 nmcp_servers;
	struct conf_service services[CONF_SERVICES];
	size_t		 nservices;
	struct conf_user user;		/* default identity of children */
	bool		 cgroups_off;	/* limits by rlimits only */
	bool		 runtime_init;	/* held until POST /internal/init */
	char		*lifecycle_status;	/* startup status file, or NULL */
	bool		 print_routes;
	bool		 print_kernels;
	bool		 print_config;
	int		 ignored_from;	/* argv index of the first argument
					   after the options, 0: none */
	char		*config;	/* --config FILE, or NULL */
	/* Private: each option's text in force (--print-config), a copy
	 * where its bit in texts_owned is set (from a file), else the
	 * default's, argv's or the environment's own; and the command line
	 * read again by conf_reload. */
	char		*texts[CONF_MAX_OPTS];
	uint64_t	 texts_owned;
	char		 port_text[8];	/* the port --listen gave */
	int		 argc;
	char		**argv;
};

/*
 * Fill c from argv and the environment.  Returns 0 to run, 1 when the
 * request was informational and has been answered (--help, --version),
 * or -EINVAL with a message in err.  An access token given in argv or
 * EXECD_ACCESS_TOKEN is wiped there in place (what /proc/PID/cmdline and
 * /proc/PID/environ show), and the variable is removed, so no child
 * inherits it.
 */
int	conf_parse(struct conf *, int argc, char **argv, char *err,
	    size_t errlen);
void	conf_usage(FILE *);
/* One "lang=n" entry of --pool. */
struct conf_pool {
	char		lang[64];
	unsigned	n;
};
/* A boolean option's value (true|false, 1|0, yes|no ...): 0 or -EINVAL. */
int	conf_bool_parse(const char *, bool *out);
/* Parse --pool into out (up to max); the entry count, or -EINVAL. */
int	conf_pool_parse(const char *, struct conf_pool *out, size_t max);
/*
 * Default limits from "KIND.KEY=VALUE,...": KIND is command, session,
 * context, pty or context.LANG (a language's contexts), or is left out
 * for all four kinds ("core=0").  Over what c holds.  0, or -EINVAL with
 * a message naming the bad entry in err.
 */
int	conf_limits_parse(struct conf *, const char *, char *err,
	    size_t errlen);
/*
 * The defaults of a new job of kind k (for contexts, of language lang,
 * which may be NULL), into out.
 */
void	conf_limits(const struct conf *, enum limits_kind k, const char *lang,
	    struct limits *out);
/*
 * Look up the user named (or numbered) s in the user database and fill
 * u: uid, primary gid, supplementary groups (as initgroups() would set
 * them), home.  An empty s unsets u.  0, or -EINVAL with a message.
 */
int	conf_user_set(struct conf_user *u, const char *s, char *err,
	    size_t errlen);
/*
 * Read the options again into out, as conf_parse did at start (the same
 * command line and --config file, the environment as it is now), but for
 * the access token, which stays as it was read.  0, or -EINVAL with a
 * message in err (a file's says FILE:LINE:COL) and out reset.
 */
int	conf_reload(const struct conf *, struct conf *out, char *err,
	    size_t errlen);
/* One option a policy file may hold: its key (the flag's name with '_'). */
struct conf_key {
	const char	*key;
	const char	*flag;
	const char	*metavar;
	const char	*help;
	bool		 secret;	/* never printed */
};
/* The i-th option a file may hold (from 0); 0, or -ENOENT past the last. */
int	conf_key_get(size_t i, struct conf_key *out);
/* Set the i-th key from text; 0, or -EINVAL with a message in err. */
int	conf_key_set(struct conf *, size_t i, const char *v, char *err,
	    size_t errlen);
/* The i-th key's value in force as text, or NULL when none (or secret). */
const char *conf_key_value(const struct conf *, size_t i);
/*
 * The policy file: one mapping whose keys are the options' names with
 * '_' for '-' (max_body_size, seccomp, no_new_privs, user ...), each with
 * one value, checked as the option's flag is; and "limits", a mapping of
 * the kinds of job (command, session, context, pty) and "languages" (a
 * mapping of language names) to mappings of limits.h's keys; and
 * "mcp_servers", a mapping of server names to mappings of command (a
 * list), env (a mapping), cwd, or url (conf_mcp_url_check); and
 * "services", a mapping of service names (started in the file's order)
 * to mappings of command (a list), env, cwd, after (the name of a service
 * given before), ready (an absolute path) and restart (always,
 * on-failure or never).  An unknown
 * key, a value of the wrong shape (a list or mapping where one value is
 * due, or the reverse) or a value the option refuses is an error that
 * names the file, line and column; the first one stops the reading.
 *
 * Read the file at path (at most CONF_FILE_MAX bytes) over what c holds.
 * 0, or -EINVAL with "PATH:LINE:COL: what" in err (or "PATH: what" when
 * it cannot be read); c is then partly set.
 */
int	conf_file_load(struct conf *c, const char *path, char *err,
	    size_t errlen);
/* The same from len bytes at text, named name in messages. */
int	conf_file_parse(struct conf *c, const char *name, const char *text,
	    size_t len, char *err, size_t errlen);
/*
 * Whether url is one an MCP server of the file may have: http:// on a
 * loopback host (127.0.0.1, localhost, [::1]) with a port.  0, or
 * -EINVAL with why in err.
 */
int	conf_mcp_url_check(const char *url, char *err, size_t errlen);
void	conf_forget_token(struct conf *);	/* wipe and free it */
void	conf_reset(struct conf *);		/* free all, token wiped */

#endif
