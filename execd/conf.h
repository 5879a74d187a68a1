/*
 * conf.h -- execd's options: command line, environment, defaults.
 *
 * One table drives parsing, the environment fallbacks and --help, so an
 * option cannot exist without being documented.  Precedence: command line,
 * then environment, then default.  Main thread, before the loop starts.
 */
#ifndef EXECD_CONF_H
#define EXECD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernel.h"
#include "log.h"
#include "sandbox.h"

#define EXECD_VERSION	"0.1.0"
#define EXECD_PORT	44772

struct conf {
	char		 addr[64];	/* numeric, no brackets */
	uint16_t	 port;
	bool		 addr_given;	/* --listen said where */
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
	enum kernel_transport kernel_transport;
	unsigned	 kernel_ready_s;
	size_t		 max_output;
	size_t		 pty_replay;	/* terminal output kept */
	char		*pool;		/* "python=1,javascript=2" */
	unsigned	 idle_s;	/* cull contexts idle this long */
	struct sandbox_conf sandbox;	/* what children run under */
	bool		 print_routes;
	bool		 print_kernels;
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
/* Parse --pool into out (up to max); the entry count, or -EINVAL. */
int	conf_pool_parse(const char *, struct conf_pool *out, size_t max);
void	conf_forget_token(struct conf *);	/* wipe and free it */
void	conf_reset(struct conf *);		/* free all, token wiped */

#endif
