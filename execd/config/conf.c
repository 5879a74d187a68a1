/*
 * conf.c -- option table, parsing and usage text, and the reading of the
 * policy file.
 *
 * Options are written --name VALUE, --name=VALUE, or with one dash as the
 * upstream daemon's flag package accepts them.  Every option has an
 * EXECD_* environment equivalent and a key of the YAML policy file
 * (--config), which this file reads too: every source of options is read
 * here, through the one table.  A few upstream options that concern a
 * Jupyter Server we do not use are accepted and ignored, so existing
 * entrypoints keep working.  Printing the options as a policy file is
 * policy.c's, over this file's table.
 */
#include <errno.h>
#include <ctype.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <yaml.h>

#include "../core/log.h"
#include "../core/xmalloc.h"
#include "../process/limits.h"
#include "conf.h"

enum opt_id {
	O_LISTEN = 256, O_PORT, O_TOKEN, O_TOKEN_FILE, O_LOG_LEVEL, O_MAX_BODY, O_TIMEOUT,
	O_MAX_CONNS, O_MAX_CONNS_IP, O_STREAM_BUF, O_GRACE, O_RUNTIME_DIR,
	O_KERNEL_TRANSPORT, O_KERNEL_READY, O_MAX_OUTPUT, O_POOL, O_IDLE,
	O_ROUTES, O_KERNELS, O_MAX_UPLOAD, O_PTY_REPLAY, O_HEADER_TIMEOUT,
	O_BODY_TIMEOUT, O_BODY_MIN_RATE, O_MAX_HALF_OPEN, O_BODY_MEMORY,
	O_SECCOMP, O_SECCOMP_MODE, O_NNP, O_CAPS, O_LIMIT, O_USER, O_CGROUPS,
	O_PROXY_TIMEOUT, O_BUSY_POLL, O_RUNTIME_INIT, O_FS_TIMEOUT,
	O_KEEP_COMMANDS, O_KEEP_COMMANDS_SIZE, O_LINE_ENDINGS,
	O_LIFECYCLE_STATUS, O_JUPYTER_LISTEN, O_ALLOW_ORIGIN,
	O_BATCH_CONC, O_IDEM_WINDOW, O_IDEM_KEYS, O_CKPT_DIR, O_ISO_UPPER,
	O_ISO_UPPER_MAX, O_ISO_CONFIG,
	O_KERNEL_FORK, O_DISPLAY,
	O_CONFIG, O_PRINT_CONFIG, O_HELP, O_VERSION
};

struct opt {
	const char	*name;
	enum opt_id	 id;
	const char	*env;
	const char	*arg;		/* NULL: takes no value */
	const char	*def;		/* default, as text */
	const char	*help;
};

static const struct opt opts[] = {
	{ "config", O_CONFIG, "EXECD_CONFIG", "FILE", NULL,
	    "read options from this YAML policy file (keys: these options' "
	    "names with _ for -, and limits); command line and environment "
	    "go over it; SIGHUP reads its limits and isolation again for "
	    "jobs started afterwards" },
	{ "listen", O_LISTEN, "EXECD_LISTEN", "ADDR:PORT", NULL,
	    "address and port to listen on, e.g. 0.0.0.0:44772 or [::1]:44772;"
	    " default: 0.0.0.0 with an access token, 127.0.0.1 without" },
	{ "port", O_PORT, "EXECD_PORT", "PORT", "44772",
	    "port to listen on (0: any free port) when --listen is not given" },
	{ "access-token", O_TOKEN, "EXECD_ACCESS_TOKEN", "TOKEN", NULL,
	    "require this value in the X-EXECD-ACCESS-TOKEN header of every "
	    "request; execd wipes it from its command line and environment "
	    "at start, but a process may read them before that: prefer "
	    "--access-token-file; --print-config never prints it" },
	{ "access-token-file", O_TOKEN_FILE, "EXECD_ACCESS_TOKEN_FILE",
	    "FILE", NULL,
	    "read the access token from the first line of FILE, so it is "
	    "never in execd's command line or environment" },
	{ "log-level", O_LOG_LEVEL, "EXECD_LOG_LEVEL", "LEVEL", "info",
	    "error, warn, info or debug (or upstream's 0-7)" },
	{ "max-body-size", O_MAX_BODY, "EXECD_MAX_BODY_SIZE", "BYTES", "16M",
	    "largest JSON request body; larger ones get 413 (K, M, G suffixes)"
	},
	{ "max-upload-size", O_MAX_UPLOAD, "EXECD_MAX_UPLOAD_SIZE", "BYTES",
	    "0", "largest body of POST /files/upload; larger ones get 413 "
	    "and write nothing (0: no limit)" },
	{ "connection-timeout", O_TIMEOUT, "EXECD_CONNECTION_TIMEOUT",
	    "SECONDS", "120",
	    "close a connection idle this long (0: never); an open stream "
	    "waiting for output is not idle" },
	{ "header-timeout", O_HEADER_TIMEOUT, "EXECD_HEADER_TIMEOUT",
	    "SECONDS", "10",
	    "a request's line and headers must all arrive within this, from "
	    "the connection's start or the first byte after the previous "
	    "request (0: no limit)" },
	{ "body-timeout", O_BODY_TIMEOUT, "EXECD_BODY_TIMEOUT", "SECONDS",
	    "10", "a request body may take this long plus a second per "
	    "--body-min-rate bytes received; slower ones are cut off "
	    "(0: no limit)" },
	{ "body-min-rate", O_BODY_MIN_RATE, "EXECD_BODY_MIN_RATE", "BYTES",
	    "8K", "the rate, per second, a body must average past "
	    "--body-timeout" },
	{ "max-half-open", O_MAX_HALF_OPEN, "EXECD_MAX_HALF_OPEN", "N", "256",
	    "connections waiting for a whole request (new, idle, or still "
	    "sending one); past it, the one waiting longest is closed "
	    "(0: no limit); streams and running requests do not count" },
	{ "body-memory", O_BODY_MEMORY, "EXECD_BODY_MEMORY", "BYTES", "64M",
	    "memory all buffered request bodies may hold at once; a body "
	    "that would pass it gets 503 SERVER_BUSY (uploads to files do "
	    "not count)" },
	{ "max-connections", O_MAX_CONNS, "EXECD_MAX_CONNECTIONS", "N", "4096",
	    "connections served at once; more are refused" },
	{ "max-connections-per-ip", O_MAX_CONNS_IP,
	    "EXECD_MAX_CONNECTIONS_PER_IP", "N", "2048",
	    "connections from one address at once (0: no limit)" },
	{ "fs-timeout", O_FS_TIMEOUT, "EXECD_FS_TIMEOUT", "SECONDS", "60",
	    "a file request whose file system has not answered within this "
	    "(a hung network or FUSE mount) gets 504 TIMEOUT; the worker "
	    "left waiting is replaced (0: wait for ever)" },
	{ "proxy-timeout", O_PROXY_TIMEOUT, "EXECD_PROXY_TIMEOUT", "SECONDS",
	    "60", "a /proxy backend silent this long gets 504 before its "
	    "response head, or its response cut short after it (0: never; "
	    "WebSocket tunnels are never timed)" },
	{ "jupyter-listen", O_JUPYTER_LISTEN, "EXECD_JUPYTER_LISTEN",
	    "ADDR:PORT", "auto",
	    "a second listener serving only the Jupyter Server API "
	    "(docs/jupyter.md), with the same access token; auto: "
	    "127.0.0.1:44771 (where the code-interpreter SDKs look for a "
	    "Jupyter server) when a kernelspec is installed, skipped with a "
	    "warning if that port is taken; off: none" },
	{ "allow-origin", O_ALLOW_ORIGIN, "EXECD_ALLOW_ORIGIN", "ORIGIN", NULL,
	    "a web page's origin (scheme://host[:port], or * for any) whose "
	    "WebSocket handshakes to the Jupyter Server API and calls to "
	    "/mcp are accepted; otherwise only pages of execd's own host "
	    "(Jupyter Server's rule) or of loopback (MCP's) are" },
	{ "display", O_DISPLAY, "EXECD_DISPLAY", "DISPLAY", NULL,
	    "the X display the /computer routes and the MCP computer tools "
	    "drive (e.g. :0); default: $DISPLAY" },
	{ "busy-poll", O_BUSY_POLL, "EXECD_BUSY_POLL", "USEC", "64",
	    "before sleeping, keep polling up to this long while requests "
	    "and answers have been coming that soon (the window adapts, and "
	    "a quiet execd never spins): a quick exchange such as a /proxy "
	    "request to a local backend then skips the cross-CPU wakeups, "
	    "for at most this much CPU time per wait; 0: off, and off "
	    "anyway when execd may use one CPU only" },
	{ "stream-buffer", O_STREAM_BUF, "EXECD_STREAM_BUFFER", "BYTES", "4M",
	    "output a stream may queue for a slow client before it is ended" },
	{ "grace-period", O_GRACE, "EXECD_GRACE_PERIOD", "MS", "2000",
	    "on shutdown, wait this long after SIGTERM before SIGKILL" },
	{ "runtime-dir", O_RUNTIME_DIR, "EXECD_RUNTIME_DIR", "DIR", NULL,
	    "where kernel connection files go (mode 0600); default: Jupyter's "
	    "runtime directory ($JUPYTER_RUNTIME_DIR, or "
	    "~/.local/share/jupyter/runtime), so that `jupyter console "
	    "--existing` finds them" },
	{ "checkpoint-dir", O_CKPT_DIR, "EXECD_CHECKPOINT_DIR", "DIR", NULL,
	    "where workspace checkpoints keep their copies (the packs of "
	    "an earlier run are removed at start); default: checkpoints in "
	    "execd's private directory ($TMPDIR/execd-PID). On the "
	    "workspace's filesystem, copies are reflinks where it makes "
	    "them" },
	{ "isolation-upper-root", O_ISO_UPPER, "EXECD_ISOLATION_UPPER_ROOT",
	    "DIR", NULL,
	    "where isolated sessions (/v1/isolated) keep their overlays' "
	    "upper directories, one directory per session, removed with it; "
	    "what an execd no longer running left there is removed at start; "
	    "default: /var/lib/execd/isolation" },
	{ "isolation-upper-max", O_ISO_UPPER_MAX, "EXECD_ISOLATION_UPPER_MAX",
	    "SIZE", "0",
	    "the most each overlay of an isolated session may write (its "
	    "upper directory, on a tmpfs of that size: a write past it fails "
	    "with ENOSPC in the session); 0: no cap, and persistent uppers "
	    "on the upper root's disk" },
	{ "isolation-config", O_ISO_CONFIG, "EXECD_ISOLATION_CONFIG", "FILE",
	    NULL,
	    "upstream's isolation configuration (TOML): upper_root, "
	    "upper_max_bytes, diff_max_bytes, allowed_writable, "
	    "[hardening] keep_capabilities; the options above, the "
	    "command line and EXECD_* go over it; a bad file, or one asking "
	    "for what execd does not do ([seccomp] deny, Landlock, eBPF), "
	    "stops execd at start with its line (docs/isolation.md)" },
	{ "kernel-transport", O_KERNEL_TRANSPORT, "EXECD_KERNEL_TRANSPORT",
	    "auto|ipc|tcp", "auto",
	    "how kernels listen: Unix sockets beside the connection file, or "
	    "TCP on 127.0.0.1; auto uses ipc for ipykernel and tcp for other "
	    "kernels, many of which cannot speak ipc" },
	{ "kernel-fork", O_KERNEL_FORK, "EXECD_KERNEL_FORK", "on|kernels|off",
	    "on", "start ipykernel contexts by forking a Python process that "
	    "has imported ipykernel already (one fork server per kernelspec): "
	    "as light contexts, batch items and ephemeral runs as runs once, "
	    "without a kernel until one is wanted; kernels: a forked kernel "
	    "for every context; off: every kernel is launched from its "
	    "kernelspec's argv" },
	{ "kernel-ready-timeout", O_KERNEL_READY,
	    "EXECD_KERNEL_READY_TIMEOUT", "SECONDS", "60",
	    "a kernel that has not answered kernel_info after a third of "
	    "this is started again, once; the second process is killed "
	    "when silent this long" },
	{ "max-output", O_MAX_OUTPUT, "EXECD_MAX_OUTPUT", "BYTES", "16M",
	    "stdout and stderr one run may stream; past it output is dropped "
	    "and the run says how much" },
	{ "pool", O_POOL, "EXECD_POOL", "LANG=N,...", NULL,
	    "keep N ready kernels per language (e.g. python=1), so that "
	    "creating a context takes milliseconds; refilled in the "
	    "background" },
	{ "pty-replay", O_PTY_REPLAY, "EXECD_PTY_REPLAY", "BYTES", "1M",
	    "terminal output kept per /pty session for clients that "
	    "reconnect (?since=), 4K to 1G; a client is closed (4002) when "
	    "more than this plus 4 MiB waits to be sent to it" },
	{ "batch-concurrency", O_BATCH_CONC, "EXECD_BATCH_CONCURRENCY", "N",
	    "0", "items of one POST /code/batch run at once, at most (a "
	    "request may ask fewer); 0: the number of CPUs" },
	{ "idempotency-window", O_IDEM_WINDOW, "EXECD_IDEMPOTENCY_WINDOW",
	    "SECONDS", "600", "how long a request's Idempotency-Key is "
	    "remembered: a repeat within it gets the first outcome" },
	{ "idempotency-keys", O_IDEM_KEYS, "EXECD_IDEMPOTENCY_KEYS", "N",
	    "4096", "Idempotency-Keys remembered at most; past it the oldest "
	    "is forgotten" },
	{ "keep-commands", O_KEEP_COMMANDS, "EXECD_KEEP_COMMANDS", "N", "1024",
	    "finished commands whose status and output stay queryable "
	    "(up to 24 hours after they end, as upstream); past it the "
	    "oldest are forgotten and their files removed" },
	{ "keep-commands-size", O_KEEP_COMMANDS_SIZE,
	    "EXECD_KEEP_COMMANDS_SIZE", "BYTES", "1G",
	    "output (background output files and event histories) of "
	    "finished commands kept at most; past it the oldest finished "
	    "commands are forgotten" },
	{ "line-endings", O_LINE_ENDINGS, "EXECD_LINE_ENDINGS",
	    "auto|strip|keep", "auto",
	    "stdout and stderr texts of a foreground command's events: "
	    "strip, lines without their terminators (upstream 1.0, what the "
	    "TypeScript SDK 0.1 and 1.0 clients parse), or keep them, so "
	    "that the texts put together are the output (upstream 1.1.1); "
	    "auto keeps them for OpenSandbox SDKs 1.1.1 and later (by their "
	    "User-Agent) and strips them for other clients; a request's "
	    "\"line_endings\" goes over this" },
	{ "context-idle-timeout", O_IDLE, "EXECD_CONTEXT_IDLE_TIMEOUT",
	    "SECONDS", "0",
	    "delete contexts that ran nothing for this long (0: never)" },
	{ "seccomp", O_SECCOMP, "EXECD_SECCOMP", "default|strict|off",
	    "default",
	    "the system calls every child (command, shell, kernel, terminal) "
	    "is refused: default is the container runtimes' list (modules, "
	    "mounts, namespaces, bpf, keyrings, clock ...), strict also "
	    "refuses tracing other processes; in every profile, off "
	    "included, no child can signal, trace or read execd" },
	{ "seccomp-mode", O_SECCOMP_MODE, "EXECD_SECCOMP_MODE",
	    "enforce|log", "enforce",
	    "log: the profile's calls are allowed and logged by the kernel "
	    "(audit), to see what enforcing would refuse" },
	{ "no-new-privs", O_NNP, "EXECD_NO_NEW_PRIVS", "yes|no", "yes",
	    "children cannot gain privileges through exec (setuid files, "
	    "file capabilities); sudo needs no" },
	{ "capabilities", O_CAPS, "EXECD_CAPABILITIES", "LIST", "default",
	    "the capability bounding set of children: default (the "
	    "container runtimes' set, without mknod), all, none, or names "
	    "such as chown,net_raw,sys_ptrace" },
	{ "limit", O_LIMIT, "EXECD_LIMITS", "KIND.KEY=VALUE,...", "core=0",
	    "default resource limits of jobs; KIND is command, session, "
	    "context, pty or context.LANG (one language's contexts), or "
	    "left out for all; KEY is memory, processes, cpu_seconds, "
	    "file_size, open_files or core; sizes take K, M, G (binary), "
	    "and unlimited lifts a limit; e.g. command.memory=512MiB,"
	    "processes=256; may be given more than once, later entries win;"
	    " a request's \"limits\" object goes over these" },
	{ "cgroups", O_CGROUPS, "EXECD_CGROUPS", "auto|off", "auto",
	    "enforce memory and process limits with a cgroup per job where "
	    "execd may make one (v2 delegated, or v1 memory and pids); off: "
	    "rlimits only (RLIMIT_DATA, and RLIMIT_NPROC, which counts per "
	    "user and never limits root)" },
	{ "user", O_USER, "EXECD_USER", "NAME|UID", NULL,
	    "run children as this user, with its groups, HOME, USER and "
	    "LOGNAME, when a request gives no uid (default: execd's own "
	    "identity)" },
	{ "runtime-init", O_RUNTIME_INIT, "EXECD_RUNTIME_INIT", "BOOL",
	    "false",
	    "wait for POST /internal/init: until it succeeds every route but "
	    "/ping, /ready and /internal/init answers 503; written alone, "
	    "--runtime-init means true (true|false, yes|no, 1|0)" },
	{ "lifecycle-startup-status-file", O_LIFECYCLE_STATUS,
	    "EXECD_LIFECYCLE_STARTUP_STATUS_FILE", "FILE", NULL,
	    "append how preStart goes to FILE, which must exist (it is never "
	    "created): \"running SECONDS\" before preStart (with its "
	    "timeout), then \"done 0\" or \"done 1\"; at start a line that "
	    "cannot be written stops execd with status 1" },
	{ "routes", O_ROUTES, NULL, NULL, NULL,
	    "print the served endpoints and exit" },
	{ "kernels", O_KERNELS, NULL, NULL, NULL,
	    "print the installed Jupyter kernels (name, language, directory), "
	    "found as Jupyter finds them ($JUPYTER_PATH, the user's data "
	    "directories, each Python's sys.prefix, the system's), and exit; "
	    "a kernel installed later is found when its language is asked "
	    "for" },
	{ "print-config", O_PRINT_CONFIG, NULL, NULL, NULL,
	    "print the options in force as a YAML file that --config "
	    "accepts, without the access token, and exit" },
	{ "help", O_HELP, NULL, NULL, NULL, "print this help and exit" },
	{ "version", O_VERSION, NULL, NULL, NULL,
	    "print the version and exit" },
};

/* Upstream options for its Jupyter Server client; accepted and ignored. */
static const char *const ignored[] = {
	"jupyter-host", "jupyter-token", "graceful-shutdown-timeout",
	"jupyter-idle-poll-interval",
};

/*
 * The options that are one number in a field of struct conf: a size
 * (K, M, G suffixes) in a size_t, or a plain count in an unsigned, each
 * within [lo, hi].
 */
static const struct num {
	enum opt_id	 id;
	bool		 size;		/* a size_t; else an unsigned */
	size_t		 off;		/* of the field in struct conf */
	unsigned long	 lo, hi;
} nums[] = {
#define SZ(o, f, l, h)	{ o, true, offsetof(struct conf, f), l, h }
#define UN(o, f, l, h)	{ o, false, offsetof(struct conf, f), l, h }
	SZ(O_MAX_BODY, max_body, 1, SIZE_MAX),
	SZ(O_MAX_UPLOAD, max_upload, 0, SIZE_MAX),
	SZ(O_STREAM_BUF, stream_cap, 4096, SIZE_MAX),
	SZ(O_BODY_MIN_RATE, body_min_rate, 1, SIZE_MAX),
	SZ(O_BODY_MEMORY, body_memory, 1, SIZE_MAX),
	SZ(O_MAX_OUTPUT, max_output, 1, SIZE_MAX),
	SZ(O_PTY_REPLAY, pty_replay, 4096, 1UL << 30),
	UN(O_TIMEOUT, conn_timeout, 0, 86400),
	UN(O_HEADER_TIMEOUT, header_timeout, 0, 86400),
	UN(O_BODY_TIMEOUT, body_timeout, 0, 86400),
	UN(O_MAX_HALF_OPEN, max_half_open, 0, 1000000),
	UN(O_MAX_CONNS, max_conns, 1, 1000000),
	UN(O_MAX_CONNS_IP, max_conns_per_ip, 0, 1000000),
	UN(O_KERNEL_READY, kernel_ready_s, 1, 3600),
	UN(O_PROXY_TIMEOUT, proxy_timeout, 0, 86400),
	UN(O_FS_TIMEOUT, fs_timeout, 0, 86400),
	UN(O_BUSY_POLL, busy_poll_us, 0, 10000),
	UN(O_IDLE, idle_s, 0, 30 * 86400),
	UN(O_KEEP_COMMANDS, keep_commands, 0, 1000000),
	UN(O_BATCH_CONC, batch_conc, 0, 4096),
	UN(O_IDEM_WINDOW, idem_window_s, 1, 30 * 86400),
	UN(O_IDEM_KEYS, idem_keys, 1, 1000000),
	SZ(O_KEEP_COMMANDS_SIZE, keep_commands_size, 0, SIZE_MAX),
	UN(O_GRACE, grace_ms, 0, 3600000),
#undef SZ
#undef UN
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))
#define NIGNORED (sizeof(ignored) / sizeof(ignored[0]))
#define NNUMS (sizeof(nums) / sizeof(nums[0]))
_Static_assert(NOPTS <= CONF_MAX_OPTS, "CONF_MAX_OPTS is too small");

static int	set(struct conf *, enum opt_id, const char *, char *, size_t);
static int	apply(struct conf *, const struct opt *, const char *, char *,
		    size_t);
static const char *config_path(int, char **);
static void	keep_text(struct conf *, size_t, char *, bool);
static int	parse_size(const char *, size_t *);
static int	parse_uint(const char *, unsigned long, unsigned long *);
static int	parse_listen(struct conf *, const char *, char *, size_t);
static int	parse_jupyter_listen(struct conf *, const char *, char *,
		    size_t);
static int	parse_addr(const char *, char *, size_t, uint16_t *);
static int	read_token(struct conf *, const char *, char *, size_t);
static void	wipe(char *);

/* Print text indented, wrapped before 80 columns. */
static void
wrap(FILE *f, const char *text)
{
	const char *p = text, *brk;
	size_t n;

	while (*p != '\0') {
		n = strlen(p);
		if (n > 68) {
			for (brk = p + 68; brk > p && *brk != ' '; brk--)
				;
			n = brk > p ? (size_t)(brk - p) : 68;
		}
		fprintf(f, "      %.*s\n", (int)n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
}

/* Print every option with its environment variable and default. */
void
conf_usage(FILE *f)
{
	char line[256];

	fprintf(f, "usage: execd [options]\n\n"
	    "The OpenSandbox execution daemon: code contexts on Jupyter "
	    "kernels, shell\ncommands, files and metrics over HTTP.\n\n"
	    "Options (one dash or two; --name VALUE or --name=VALUE):\n");
	for (size_t i = 0; i < NOPTS; i++) {
		fprintf(f, "  --%s%s%s\n", opts[i].name, opts[i].arg ? " " :
		    "", opts[i].arg ? opts[i].arg : "");
		wrap(f, opts[i].help);
		if (opts[i].env != NULL || opts[i].def != NULL) {
			snprintf(line, sizeof(line), "%s%s%s%s%s",
			    opts[i].env ? "environment: " : "",
			    opts[i].env ? opts[i].env : "",
			    opts[i].env && opts[i].def ? "; " : "",
			    opts[i].def ? "default: " : "",
			    opts[i].def ? opts[i].def : "");
			wrap(f, line);
		}
	}
	line[0] = '\0';
	for (size_t i = 0; i < NIGNORED; i++)
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
		    "%s--%s", i ? " " : "", ignored[i]);
	fprintf(f, "\nAccepted and ignored, for upstream compatibility:\n");
	wrap(f, line);
}

/* "16M", "512K", "1G", "1GiB", "2KB" or plain bytes. */
static int
parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (shift > 0 && *end == 'i')	/* "16MiB", as limits are written */
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0' || v > (SIZE_MAX >> shift))
		return -EINVAL;
	*out = (size_t)v << shift;
	return 0;
}

static int
parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end != '\0' || errno != 0 || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* ADDR:PORT, with IPv6 addresses in brackets, for --listen. */
static int
parse_listen(struct conf *c, const char *s, char *err, size_t errlen)
{
	if (parse_addr(s, c->addr, sizeof(c->addr), &c->port) < 0) {
		snprintf(err, errlen, "--listen wants ADDR:PORT (IPv6 as "
		    "[ADDR]:PORT), not '%s'", s);
		return -EINVAL;
	}
	c->addr_given = true;
	return 0;
}

/* --jupyter-listen: off, auto, or ADDR:PORT. */
static int
parse_jupyter_listen(struct conf *c, const char *s, char *err,
    size_t errlen)
{
	c->jupyter = strcmp(s, "off") == 0 ? CONF_JUPYTER_OFF :
	    strcmp(s, "auto") == 0 ? CONF_JUPYTER_AUTO : CONF_JUPYTER_ON;
	if (c->jupyter != CONF_JUPYTER_ON) {
		snprintf(c->jupyter_addr, sizeof(c->jupyter_addr),
		    "127.0.0.1");
		c->jupyter_port = 44771;
		return 0;
	}
	if (parse_addr(s, c->jupyter_addr, sizeof(c->jupyter_addr),
	    &c->jupyter_port) < 0) {
		snprintf(err, errlen, "--jupyter-listen wants ADDR:PORT (IPv6 "
		    "as [ADDR]:PORT), auto or off, not '%s'", s);
		return -EINVAL;
	}
	return 0;
}

/* ADDR:PORT into addr (numeric, no brackets) and port; 0 or -EINVAL. */
static int
parse_addr(const char *s, char *addr, size_t addrlen, uint16_t *portp)
{
	const char *colon, *host = s;
	unsigned long port;
	size_t n;

	colon = strrchr(s, ':');
	if (colon == NULL)
		goto bad;
	n = (size_t)(colon - s);
	if (s[0] == '[') {
		if (n < 2 || s[n - 1] != ']')
			goto bad;
		host = s + 1;
		n -= 2;
	} else if (memchr(s, ':', n) != NULL) {
		goto bad;	/* a bare IPv6 address needs brackets */
	}
	if (n == 0 || n >= addrlen ||
	    parse_uint(colon + 1, 65535, &port) < 0)
		goto bad;
	memcpy(addr, host, n);
	addr[n] = '\0';
	*portp = (uint16_t)port;
	return 0;
bad:
	return -EINVAL;
}

static int
set(struct conf *c, enum opt_id id, const char *v, char *err, size_t errlen)
{
	unsigned long u;
	const char *name = "?";

	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].id == id)
			name = opts[i].name;
	for (const struct num *n = nums; n < nums + NNUMS; n++) {
		size_t z = 0;

		if (n->id != id)
			continue;
		if (n->size && parse_size(v, &z) < 0)
			goto bad;
		if (!n->size && parse_uint(v, n->hi, &u) < 0)
			goto bad;
		if (!n->size)
			z = u;
		if (z < n->lo || z > n->hi)
			goto bad;
		if (n->size)
			*(size_t *)(void *)((char *)c + n->off) = z;
		else
			*(unsigned *)(void *)((char *)c + n->off) = (unsigned)z;
		return 0;
	}
	switch (id) {
	case O_LISTEN:
		return parse_listen(c, v, err, errlen);
	case O_JUPYTER_LISTEN:
		return parse_jupyter_listen(c, v, err, errlen);
	case O_CONFIG:
		free(c->config);
		c->config = xstrdup(v);
		return 0;
	case O_PORT:
		if (parse_uint(v, 65535, &u) < 0)
			goto bad;
		c->port = (uint16_t)u;
		return 0;
	case O_TOKEN:
		conf_forget_token(c);
		c->token = v[0] != '\0' ? xstrdup(v) : NULL;
		return 0;
	case O_TOKEN_FILE:
		return read_token(c, v, err, errlen);
	case O_LOG_LEVEL:
		if (log_level_parse(v, &c->log_level) < 0)
			goto bad;
		return 0;
	case O_RUNTIME_DIR:
		if (v[0] != '/')
			goto bad;
		free(c->runtime_dir);
		c->runtime_dir = xstrdup(v);
		return 0;
	case O_CKPT_DIR:
		if (v[0] != '/')
			goto bad;
		free(c->checkpoint_dir);
		c->checkpoint_dir = xstrdup(v);
		return 0;
	case O_ISO_UPPER:
		if (v[0] != '/')
			goto bad;
		free(c->iso_upper_root);
		c->iso_upper_root = xstrdup(v);
		c->iso_given |= CONF_GIVEN_UPPER_ROOT;
		return 0;
	case O_ISO_UPPER_MAX:
		if (parse_size(v, &c->iso_upper_max) < 0 ||
		    (c->iso_upper_max > 0 && c->iso_upper_max < 4096))
			goto bad;
		c->iso_given |= CONF_GIVEN_UPPER_MAX;
		return 0;
	case O_ISO_CONFIG:
		free(c->iso_config);
		c->iso_config = v[0] != '\0' ? xstrdup(v) : NULL;
		return 0;
	case O_KERNEL_TRANSPORT:
		if (strcmp(v, "auto") == 0)
			c->kernel_transport = KERNEL_AUTO;
		else if (strcmp(v, "ipc") == 0)
			c->kernel_transport = KERNEL_IPC;
		else if (strcmp(v, "tcp") == 0)
			c->kernel_transport = KERNEL_TCP;
		else
			goto bad;
		return 0;
	case O_DISPLAY:
		free(c->display);
		c->display = v[0] != '\0' ? xstrdup(v) : NULL;
		return 0;
	case O_ALLOW_ORIGIN:
		free(c->allow_origin);
		c->allow_origin = v[0] != '\0' ? xstrdup(v) : NULL;
		return 0;
	case O_POOL:
		if (conf_pool_parse(v, NULL, 0) < 0)
			goto bad;
		free(c->pool);
		c->pool = xstrdup(v);
		return 0;
	case O_LINE_ENDINGS:
		if (strcmp(v, "auto") == 0)
			c->line_endings = CONF_ENDINGS_AUTO;
		else if (strcmp(v, "strip") == 0)
			c->line_endings = CONF_ENDINGS_STRIP;
		else if (strcmp(v, "keep") == 0)
			c->line_endings = CONF_ENDINGS_KEEP;
		else
			goto bad;
		return 0;
	case O_SECCOMP:
		if (sandbox_profile_parse(v, &c->sandbox.profile) < 0)
			goto bad;
		return 0;
	case O_SECCOMP_MODE:
		if (strcmp(v, "enforce") != 0 && strcmp(v, "log") != 0)
			goto bad;
		c->sandbox.log_only = strcmp(v, "log") == 0;
		return 0;
	case O_NNP:
		if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
			goto bad;
		c->sandbox.no_new_privs = strcmp(v, "yes") == 0;
		return 0;
	case O_CAPS:
		c->iso_given |= CONF_GIVEN_CAPS;
		if (strcmp(v, "default") == 0) {
			c->sandbox.caps = sandbox_default_caps;
			return 0;
		}
		if (sandbox_caps_parse(v, &c->sandbox.caps, err, errlen) < 0) {
			snprintf(err + strlen(err), errlen - strlen(err),
			    " in --capabilities");
			return -EINVAL;
		}
		return 0;
	case O_LIMIT:
		return conf_limits_parse(c, v, err, errlen);
	case O_USER:
		return conf_user_set(&c->user, v, err, errlen);
	case O_RUNTIME_INIT:
		if (conf_bool_parse(v, &c->runtime_init) < 0)
			goto bad;
		return 0;
	case O_LIFECYCLE_STATUS:
		free(c->lifecycle_status);
		c->lifecycle_status = v[0] != '\0' ? xstrdup(v) : NULL;
		return 0;
	case O_KERNEL_FORK:
		if (strcmp(v, "on") != 0 && strcmp(v, "kernels") != 0 &&
		    strcmp(v, "off") != 0)
			goto bad;
		c->kernel_fork_off = strcmp(v, "off") == 0;
		c->kernel_fork_kernels = strcmp(v, "kernels") == 0;
		return 0;
	case O_CGROUPS:
		if (strcmp(v, "auto") != 0 && strcmp(v, "off") != 0)
			goto bad;
		c->cgroups_off = strcmp(v, "off") == 0;
		return 0;
	default:
		return 0;
	}
bad:
	snprintf(err, errlen, "invalid value for --%s: '%s'", name, v);
	return -EINVAL;
}

/* The token is the first line of the file at path, without its end. */
static int
read_token(struct conf *c, const char *path, char *err, size_t errlen)
{
	char buf[4097];
	size_t n;
	FILE *f;
	int e;

	if ((f = fopen(path, "re")) == NULL) {
		e = errno;
		snprintf(err, errlen, "--access-token-file %s: %s", path,
		    strerror(e));
		return -EINVAL;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	e = ferror(f) ? errno : 0;
	fclose(f);
	buf[n] = '\0';
	n = strcspn(buf, "\r\n");
	buf[n] = '\0';
	if (e == 0 && n == 0)
		snprintf(err, errlen, "--access-token-file %s: the first "
		    "line is empty", path);
	else if (e != 0)
		snprintf(err, errlen, "--access-token-file %s: %s", path,
		    strerror(e));
	if (e == 0 && n > 0) {
		conf_forget_token(c);
		c->token = xstrdup(buf);
	}
	explicit_bzero(buf, sizeof(buf));
	return e == 0 && n > 0 ? 0 : -EINVAL;
}

/*
 * Wipe an access token given as v where every process can read it: v
 * points into argv (/proc/PID/cmdline) or into the environment block
 * (/proc/PID/environ), which unsetenv() would leave as it was.
 */
static void
wipe(char *v)
{
	explicit_bzero(v, strlen(v));
}

/* The option named exactly name (no abbreviations), or NULL. */
static const struct opt *
find(const char *name, size_t n)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (strlen(opts[i].name) == n &&
		    strncmp(opts[i].name, name, n) == 0)
			return &opts[i];
	return NULL;
}

static bool
is_ignored(const char *name, size_t n)
{
	for (size_t i = 0; i < NIGNORED; i++)
		if (strlen(ignored[i]) == n &&
		    strncmp(ignored[i], name, n) == 0)
			return true;
	return false;
}

/*
 * Defaults, then the environment, then argv, each over the one before.
 * argv options are "-name", "--name", with "=VALUE" or the next argument
 * as the value; names must be spelled in full.
 */
/* Apply v to option id as a file's text would be (copied). */
static int
apply_copy(struct conf *c, enum opt_id id, const char *v, char *err,
    size_t errlen)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].id == id) {
			if (apply(c, &opts[i], v, err, errlen) < 0)
				return -EINVAL;
			keep_text(c, i, xstrdup(v), true);
			return 0;
		}
	return -EINVAL;
}

/*
 * The isolation configuration file: under every other source, so what
 * they gave stays; diff_max_bytes and allowed_writable stay in c->iso.
 */
static int
iso_config_load(struct conf *c, char *err, size_t errlen)
{
	char num[32], e[256];
	int rc;

	if ((rc = isoconf_load(c->iso_config, &c->iso, err, errlen)) < 0)
		return rc;
	if (c->iso.upper_root != NULL &&
	    !(c->iso_given & CONF_GIVEN_UPPER_ROOT) &&
	    apply_copy(c, O_ISO_UPPER, c->iso.upper_root, e, sizeof(e)) < 0)
		goto bad;
	snprintf(num, sizeof(num), "%llu", c->iso.upper_max);
	if (c->iso.has_upper_max && !(c->iso_given & CONF_GIVEN_UPPER_MAX) &&
	    apply_copy(c, O_ISO_UPPER_MAX, num, e, sizeof(e)) < 0)
		goto bad;
	if (c->iso.caps != NULL && !(c->iso_given & CONF_GIVEN_CAPS) &&
	    apply_copy(c, O_CAPS, c->iso.caps, e, sizeof(e)) < 0)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "%s: %s", c->iso_config, e);
	return -EINVAL;
}

int
conf_parse(struct conf *c, int argc, char **argv, char *err, size_t errlen)
{
	const struct opt *o;
	const char *path;
	char *a, *name, *eq, *v;
	size_t n;
	int rc;

	memset(c, 0, sizeof(*c));
	c->log_level = LOG_L_INFO;
	c->argc = argc;
	c->argv = argv;
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].def != NULL &&
		    (rc = apply(c, &opts[i], opts[i].def, err, errlen)) < 0)
			return rc;
	c->iso_given = 0;	/* defaults are not given */
	/* The file goes over the defaults, under what follows. */
	if ((path = config_path(argc, argv)) != NULL &&
	    (rc = conf_file_load(c, path, err, errlen)) < 0)
		return rc;
	for (size_t i = 0; i < NOPTS; i++) {
		if (opts[i].env == NULL || (v = getenv(opts[i].env)) == NULL)
			continue;
		if (apply(c, &opts[i], v, err, errlen) < 0) {
			/* A token file's error says what was wrong with it. */
			if (opts[i].id != O_TOKEN_FILE)
				snprintf(err, errlen, "invalid value in %s: "
				    "'%s'", opts[i].env, v);
			return -EINVAL;
		}
		if (opts[i].id == O_TOKEN) {
			wipe(v);
			unsetenv(opts[i].env);
		}
	}
	for (int i = 1; i < argc; i++) {
		a = argv[i];
		/*
		 * Upstream's flag parsing stops at the first argument that
		 * is not an option (or after "--"), and the platform starts
		 * the image as `execd tail -f /dev/null`: the rest is kept
		 * for main() to warn about, and otherwise ignored.
		 */
		if (strcmp(a, "--") == 0 && i + 1 < argc) {
			c->ignored_from = i + 1;
			break;
		}
		if (strcmp(a, "--") == 0)
			break;
		if (a[0] != '-' || a[1] == '\0') {
			c->ignored_from = i;
			break;
		}
		name = a + (a[1] == '-' ? 2 : 1);
		eq = strchr(name, '=');
		n = eq != NULL ? (size_t)(eq - name) : strlen(name);
		o = find(name, n);
		if (o == NULL && !is_ignored(name, n)) {
			snprintf(err, errlen, "unknown option: %s (see --help)",
			    a);
			return -EINVAL;
		}
		if (o != NULL && o->arg == NULL) {
			if (eq != NULL) {
				snprintf(err, errlen, "--%s takes no value",
				    o->name);
				return -EINVAL;
			}
			switch (o->id) {
			case O_HELP:
				conf_usage(stdout);
				return 1;
			case O_VERSION:
				printf("execd %s\n", EXECD_VERSION);
				return 1;
			case O_KERNELS:
				c->print_kernels = true;
				continue;
			case O_PRINT_CONFIG:
				c->print_config = true;
				continue;
			default:	/* O_ROUTES */
				c->print_routes = true;
				continue;
			}
		}
		if (eq != NULL) {
			v = eq + 1;
		} else if (o != NULL && o->id == O_RUNTIME_INIT) {
			static char flag_on[] = "true";

			v = flag_on;	/* a boolean flag, as upstream's */
		} else if (i + 1 < argc) {
			v = argv[++i];
		} else {
			snprintf(err, errlen, "%s needs a value (see --help)",
			    a);
			return -EINVAL;
		}
		if (o != NULL && (rc = apply(c, o, v, err, errlen)) < 0)
			return rc;
		if (o != NULL && o->id == O_TOKEN)
			wipe(v);
	}
	if (c->iso_config != NULL &&
	    (rc = iso_config_load(c, err, errlen)) < 0)
		return rc;
	if (!c->addr_given)
		snprintf(c->addr, sizeof(c->addr), "%s",
		    c->token != NULL ? "0.0.0.0" : "127.0.0.1");
	return 0;
}

/*
 * A boolean as upstream's flag package and Go's strconv.ParseBool read
 * it (1, t, true, 0, f, false in their cases), and yes/no as our other
 * switches are written.  0 with *out set, or -EINVAL.
 */
int
conf_bool_parse(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "t", "T", "true", "TRUE",
	    "True", "yes" };
	static const char *const no[] = { "0", "f", "F", "false", "FALSE",
	    "False", "no" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * "python=1,javascript=2" into up to max entries of out (NULL: only
 * check).  Returns the number of entries, or -EINVAL.
 */
int
conf_pool_parse(const char *s, struct conf_pool *out, size_t max)
{
	const char *p = s, *eq, *end;
	unsigned long n;
	char num[16];
	int count = 0;

	while (*p != '\0') {
		end = p + strcspn(p, ",");
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq == NULL || eq == p || end - eq - 1 <= 0 ||
		    end - eq - 1 >= (long)sizeof(num) ||
		    (size_t)(eq - p) >= sizeof(out->lang))
			return -EINVAL;
		memcpy(num, eq + 1, (size_t)(end - eq - 1));
		num[end - eq - 1] = '\0';
		if (parse_uint(num, 64, &n) < 0)
			return -EINVAL;
		if (out != NULL && (size_t)count < max) {
			memcpy(out[count].lang, p, (size_t)(eq - p));
			out[count].lang[eq - p] = '\0';
			out[count].n = (unsigned)n;
		}
		count++;
		p = *end == ',' ? end + 1 : end;
	}
	return count;
}

/* One "[KIND.]KEY=VALUE" entry of --limit, n bytes at s, into c. */
static int
limit_one(struct conf *c, const char *s, size_t n, char *err, size_t errlen)
{
	char e[160], *key, *val, *dot, *lang = NULL;
	struct limits *l[LIMITS_NKINDS];
	enum limits_kind k;
	size_t nl = 0, i;
	int rc;

	if (n >= sizeof(e) || (val = memchr(s, '=', n)) == NULL)
		goto bad;
	memcpy(e, s, n);
	e[n] = '\0';
	val = strchr(e, '=');
	*val++ = '\0';
	if ((dot = strrchr(e, '.')) == NULL) {
		key = e;
		for (i = 0; i < LIMITS_NKINDS; i++)
			l[nl++] = &c->limits[i];
	} else {
		*dot = '\0';
		key = dot + 1;
		if (strncmp(e, "context.", 8) == 0) {
			lang = e + 8;
			if (*lang == '\0' || strlen(lang) >= 64)
				goto bad;
			for (i = 0; i < c->nlang_limits; i++)
				if (strcmp(c->lang_limits[i].lang, lang) == 0)
					break;
			if (i == c->nlang_limits) {
				if (i == CONF_LANG_LIMITS) {
					snprintf(err, errlen, "--limit: more "
					    "than %d languages",
					    CONF_LANG_LIMITS);
					return -EINVAL;
				}
				memset(&c->lang_limits[i], 0,
				    sizeof(c->lang_limits[i]));
				/* Shorter than lang[], checked above. */
				memcpy(c->lang_limits[i].lang, lang,
				    strlen(lang) + 1);
				c->nlang_limits++;
			}
			l[nl++] = &c->lang_limits[i].l;
		} else if (limits_kind_parse(e, &k) == 0)
			l[nl++] = &c->limits[k];
		else
			goto bad;
	}
	for (i = 0; i < nl; i++)
		if ((rc = limits_set(l[i], key, val, err, errlen)) < 0) {
			snprintf(err + strlen(err), errlen - strlen(err),
			    " in --limit");
			return rc;
		}
	return 0;
bad:
	snprintf(err, errlen, "--limit wants [KIND.]KEY=VALUE (KIND: command, "
	    "session, context, context.LANG, pty), not '%.*s'", (int)n, s);
	return -EINVAL;
}

/* A --limit list; see conf.h. */
int
conf_limits_parse(struct conf *c, const char *s, char *err, size_t errlen)
{
	const char *p = s, *end;
	int rc;

	while (*p != '\0') {
		end = p + strcspn(p, ",");
		if (end > p && (rc = limit_one(c, p, (size_t)(end - p), err,
		    errlen)) < 0)
			return rc;
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

/* A new job's defaults; see conf.h. */
void
conf_limits(const struct conf *c, enum limits_kind k, const char *lang,
    struct limits *out)
{
	*out = c->limits[k];
	if (k != LIMITS_CONTEXT || lang == NULL)
		return;
	for (size_t i = 0; i < c->nlang_limits; i++)
		if (strcmp(c->lang_limits[i].lang, lang) == 0)
			limits_over(out, &c->lang_limits[i].l);
}

/* The default user from the user database; see conf.h. */
int
conf_user_set(struct conf_user *u, const char *s, char *err, size_t errlen)
{
	struct passwd *pw;
	unsigned long id;
	int n;

	memset(u, 0, sizeof(*u));
	if (s[0] == '\0')
		return 0;
	errno = 0;
	if (parse_uint(s, UINT32_MAX - 1, &id) == 0)
		pw = getpwuid((uid_t)id);
	else
		pw = getpwnam(s);
	if (pw == NULL) {
		snprintf(err, errlen, "--user %s: no such user in the user "
		    "database", s);
		return -EINVAL;
	}
	if (strlen(pw->pw_name) >= sizeof(u->name) ||
	    strlen(pw->pw_dir) >= sizeof(u->home)) {
		snprintf(err, errlen, "--user %s: name or home too long", s);
		return -EINVAL;
	}
	snprintf(u->name, sizeof(u->name), "%s", pw->pw_name);
	snprintf(u->home, sizeof(u->home), "%s", pw->pw_dir);
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	n = CONF_NGROUPS;
	if (getgrouplist(u->name, u->gid, u->groups, &n) < 0) {
		snprintf(err, errlen, "--user %s: more than %d groups", s,
		    CONF_NGROUPS);
		return -EINVAL;
	}
	u->ngroups = (size_t)n;
	u->set = true;
	return 0;
}

/* Free what parsing allocated, the token wiped first. */
void
conf_reset(struct conf *c)
{
	free(c->runtime_dir);
	c->runtime_dir = NULL;
	free(c->checkpoint_dir);
	c->checkpoint_dir = NULL;
	free(c->iso_upper_root);
	c->iso_upper_root = NULL;
	free(c->iso_config);
	c->iso_config = NULL;
	isoconf_free(&c->iso);
	free(c->lifecycle_status);
	c->lifecycle_status = NULL;
	free(c->pool);
	c->pool = NULL;
	free(c->allow_origin);
	c->allow_origin = NULL;
	free(c->display);
	c->display = NULL;
	free(c->config);
	c->config = NULL;
	for (size_t i = 0; i < CONF_MAX_OPTS; i++) {
		if (c->texts_owned & (1ULL << i))
			free(c->texts[i]);
		c->texts[i] = NULL;
	}
	c->texts_owned = 0;
	for (size_t i = 0; i < c->nmcp_servers; i++) {
		struct conf_mcp_server *m = &c->mcp_servers[i];

		for (size_t k = 0; m->argv != NULL && m->argv[k] != NULL; k++)
			free(m->argv[k]);
		for (size_t k = 0; m->env != NULL && m->env[k] != NULL; k++)
			free(m->env[k]);
		free(m->argv);
		free(m->env);
		free(m->cwd);
		free(m->url);
	}
	memset(c->mcp_servers, 0, sizeof(c->mcp_servers));
	c->nmcp_servers = 0;
	for (size_t i = 0; i < c->nservices; i++) {
		struct conf_service *v = &c->services[i];

		for (size_t k = 0; v->argv != NULL && v->argv[k] != NULL; k++)
			free(v->argv[k]);
		for (size_t k = 0; v->env != NULL && v->env[k] != NULL; k++)
			free(v->env[k]);
		free(v->argv);
		free(v->env);
		free(v->cwd);
		free(v->ready);
	}
	memset(c->services, 0, sizeof(c->services));
	c->nservices = 0;
	conf_forget_token(c);
}

/* Wipe the token from memory and free it. */
void
conf_forget_token(struct conf *c)
{
	if (c->token != NULL) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
		c->token = NULL;
	}
}

/* --- the views of the table that policy.c reads and writes ------------- */

static bool	 reloading;	/* conf_reload: the token is not read again */

/*
 * Set one option and keep the text it was set from, the one
 * --print-config prints (never the token's): a pointer to v, which must
 * outlive c (a default, argv, the environment) unless the caller copies
 * it.  0 or -EINVAL.
 */
static int
apply(struct conf *c, const struct opt *o, const char *v, char *err,
    size_t errlen)
{
	size_t i = (size_t)(o - opts);
	int rc;

	if (reloading && (o->id == O_TOKEN || o->id == O_TOKEN_FILE))
		return 0;
	if ((rc = set(c, o->id, v, err, errlen)) < 0)
		return rc;
	if (o->id != O_TOKEN)
		keep_text(c, i, (char *)(uintptr_t)v, false);
	/* --listen sets the port too: its text follows. */
	for (size_t k = 0; o->id == O_LISTEN && k < NOPTS; k++)
		if (opts[k].id == O_PORT) {
			snprintf(c->port_text, sizeof(c->port_text), "%u",
			    c->port);
			keep_text(c, k, c->port_text, false);
		}
	return 0;
}

/* Option i's text is now t, which c owns (frees) if owned. */
static void
keep_text(struct conf *c, size_t i, char *t, bool owned)
{
	if (c->texts_owned & (1ULL << i))
		free(c->texts[i]);
	c->texts[i] = t;
	if (owned)
		c->texts_owned |= 1ULL << i;
	else
		c->texts_owned &= ~(1ULL << i);
}

/*
 * The file --config names on the command line (read as conf_parse reads
 * it, up to the first argument that is not an option), else the one in
 * EXECD_CONFIG, else NULL.
 */
static const char *
config_path(int argc, char **argv)
{
	const char *path = getenv("EXECD_CONFIG"), *a, *name, *eq;
	const struct opt *o;
	size_t n;

	for (int i = 1; i < argc; i++) {
		a = argv[i];
		if (a[0] != '-' || a[1] == '\0' || strcmp(a, "--") == 0)
			break;
		name = a + (a[1] == '-' ? 2 : 1);
		eq = strchr(name, '=');
		n = eq != NULL ? (size_t)(eq - name) : strlen(name);
		o = find(name, n);
		if (o == NULL && !is_ignored(name, n))
			break;		/* conf_parse says so */
		if (o != NULL && (o->arg == NULL || o->id == O_RUNTIME_INIT))
			continue;
		if (eq == NULL && ++i == argc)
			break;
		if (o != NULL && o->id == O_CONFIG)
			path = eq != NULL ? eq + 1 : argv[i];
	}
	return path;
}

/* conf_parse again, over the same command line; see conf.h. */
int
conf_reload(const struct conf *old, struct conf *out, char *err,
    size_t errlen)
{
	int rc;

	reloading = true;
	rc = conf_parse(out, old->argc, old->argv, err, errlen);
	reloading = false;
	if (rc > 0)	/* --help and the like were answered at start */
		snprintf(err, errlen, "nothing to reload");
	if (rc != 0) {
		conf_reset(out);	/* what it read before the error */
		return -EINVAL;
	}
	return 0;
}

/* The table row of the i-th option a file may hold, or NULL. */
static const struct opt *
file_opt(size_t i)
{
	for (size_t k = 0; k < NOPTS; k++) {
		if (opts[k].arg == NULL || opts[k].id == O_CONFIG)
			continue;
		if (i-- == 0)
			return &opts[k];
	}
	return NULL;
}

/* The i-th file key; see conf.h. */
int
conf_key_get(size_t i, struct conf_key *out)
{
	static char keys[NOPTS][48];
	const struct opt *o;
	char *k;

	if ((o = file_opt(i)) == NULL)
		return -ENOENT;
	k = keys[o - opts];
	if (k[0] == '\0') {
		snprintf(k, sizeof(keys[0]), "%s", o->name);
		for (char *p = k; *p != '\0'; p++)
			if (*p == '-')
				*p = '_';
	}
	*out = (struct conf_key){ .key = k, .flag = o->name,
	    .metavar = o->arg, .help = o->help, .secret = o->id == O_TOKEN };
	return 0;
}

/* Set the i-th file key; see conf.h. */
int
conf_key_set(struct conf *c, size_t i, const char *v, char *err,
    size_t errlen)
{
	const struct opt *o;
	int rc;

	if ((o = file_opt(i)) == NULL) {
		snprintf(err, errlen, "no such option");
		return -EINVAL;
	}
	if ((rc = apply(c, o, v, err, errlen)) < 0)
		return rc;
	/* The file's text goes when it is read: a copy. */
	if (c->texts[o - opts] == v)
		keep_text(c, (size_t)(o - opts), xstrdup(v), true);
	return 0;
}

/* The i-th file key's text in force; see conf.h. */
const char *
conf_key_value(const struct conf *c, size_t i)
{
	const struct opt *o;

	if ((o = file_opt(i)) == NULL || o->id == O_TOKEN)
		return NULL;
	return c->texts[o - opts];
}

/*
 * --- the policy file (--config): YAML read through the table's keys -----
 *
 * The reader walks libyaml's events, not a document tree: a file is one
 * mapping of keys to single values, and "limits" nests two levels more,
 * so each level is one function that expects exactly its shape and stops
 * at the first event it did not expect, with that event's line and
 * column.  Aliases are refused (nothing here needs them, and they are how
 * a small file expands into a large one).  Which keys exist and what each
 * accepts is the table above, read through conf_key_get and conf_key_set.
 * Limits go to conf_limits_parse, after limits_set has checked each one
 * on its own.  Printing the file back is policy.c's (a view of the table,
 * as --help is).
 */

#define MSG	256	/* one message from the table or limits.c */
#define LANG_RULE	"a language must be a name (letters, digits, _ + -)"

struct rd {
	yaml_parser_t	 p;
	const char	*name;		/* the file, for messages */
	struct conf	*c;
	char		*err;
	size_t		 errlen;
};

static int	fail(struct rd *, const yaml_mark_t *, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static int	next(struct rd *, yaml_event_t *);
static int	map_start(struct rd *, const char *);
static int	map_key(struct rd *, yaml_event_t *, const char *);
static int	read_top(struct rd *);
static int	read_option(struct rd *, const yaml_event_t *);
static int	read_limits(struct rd *);
static int	read_languages(struct rd *);
static int	read_kind(struct rd *, const char *, const char *);
static int	read_mcp_servers(struct rd *);
static int	read_services(struct rd *);
static int	read_service(struct rd *, struct conf_service *,
		    const yaml_mark_t *);
static int	read_mcp_server(struct rd *, struct conf_mcp_server *,
		    const yaml_mark_t *);
static int	read_words(struct rd *, const char *, bool, char ***);
static int	scalar_value(struct rd *, const char *, yaml_event_t *);
static const char *shape(const yaml_event_t *);
static bool	is_null(const yaml_event_t *);
static bool	null_text(const char *);

/* "NAME:LINE:COL: message" into err; -EINVAL. */
static int
fail(struct rd *r, const yaml_mark_t *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(r->err, r->errlen, "%s:%zu:%zu: ", r->name, m->line + 1,
	    m->column + 1);
	if (n < 0 || (size_t)n >= r->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The next event into ev (the caller deletes it); 0 or -EINVAL. */
static int
next(struct rd *r, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&r->p, ev)) {
		if (r->p.context != NULL)
			return fail(r, &r->p.problem_mark, "%s %s",
			    r->p.problem, r->p.context);
		return fail(r, &r->p.problem_mark, "%s", r->p.problem != NULL ?
		    r->p.problem : "not YAML");
	}
	if (ev->type == YAML_ALIAS_EVENT) {
		fail(r, &ev->start_mark, "aliases (*name) are not allowed");
		yaml_event_delete(ev);
		return -EINVAL;
	}
	return 0;
}

/*
 * The start of a mapping, or "WANTS, not <what came>" at what came
 * instead (want says what the mapping is for).
 */
static int
map_start(struct rd *r, const char *want)
{
	yaml_event_t ev;
	int rc;

	if ((rc = next(r, &ev)) < 0)
		return rc;
	if (ev.type != YAML_MAPPING_START_EVENT)
		rc = fail(r, &ev.start_mark, "%s, not %s", want, shape(&ev));
	yaml_event_delete(&ev);
	return rc;
}

/*
 * The next key of a mapping into key, a scalar the caller deletes: 1; 0
 * at the mapping's end; or "RULE, not <what came>" for a key that is not
 * a name.
 */
static int
map_key(struct rd *r, yaml_event_t *key, const char *rule)
{
	int rc;

	if ((rc = next(r, key)) < 0)
		return rc;
	if (key->type == YAML_MAPPING_END_EVENT) {
		yaml_event_delete(key);
		return 0;
	}
	if (key->type != YAML_SCALAR_EVENT) {
		rc = fail(r, &key->start_mark, "%s, not %s", rule, shape(key));
		yaml_event_delete(key);
		return rc;
	}
	return 1;
}

/* What an event holds, for messages. */
static const char *
shape(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_SEQUENCE_START_EVENT:
		return "a list";
	case YAML_SCALAR_EVENT:
		return "a single value";
	default:
		return "the end";
	}
}

/* Text that YAML reads as null when it is written plain. */
static bool
null_text(const char *v)
{
	return v[0] == '\0' || strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0;
}

/* A plain empty, "~" or "null" scalar: YAML's null. */
static bool
is_null(const yaml_event_t *ev)
{
	return ev->type == YAML_SCALAR_EVENT &&
	    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    null_text((const char *)ev->data.scalar.value);
}

/*
 * The next event, which must be one value for key (what): 0 with ev
 * set (the caller deletes it), or -EINVAL.
 */
static int
scalar_value(struct rd *r, const char *what, yaml_event_t *ev)
{
	int rc;

	if ((rc = next(r, ev)) < 0)
		return rc;
	if (ev->type != YAML_SCALAR_EVENT)
		rc = fail(r, &ev->start_mark, "%s wants a single value, not "
		    "%s", what, shape(ev));
	else if (is_null(ev))
		rc = fail(r, &ev->start_mark, "%s has no value", what);
	else if (strlen((const char *)ev->data.scalar.value) !=
	    ev->data.scalar.length)
		rc = fail(r, &ev->start_mark, "%s: a NUL character in the "
		    "value", what);
	if (rc < 0)
		yaml_event_delete(ev);
	return rc;
}

/* The whole stream: one document, one mapping (or nothing). */
int
conf_file_parse(struct conf *c, const char *name, const char *text,
    size_t len, char *err, size_t errlen)
{
	struct rd r = { .name = name, .c = c, .err = err, .errlen = errlen };
	yaml_event_t ev;
	int rc, docs = 0;

	if (!yaml_parser_initialize(&r.p))
		fatalx("yaml_parser_initialize: out of memory");
	yaml_parser_set_input_string(&r.p, (const unsigned char *)text, len);
	for (;;) {
		if ((rc = next(&r, &ev)) < 0)
			break;
		if (ev.type == YAML_STREAM_END_EVENT)
			break;
		if (ev.type == YAML_DOCUMENT_START_EVENT && docs++ > 0) {
			rc = fail(&r, &ev.start_mark, "one document only");
			break;
		}
		if (ev.type == YAML_MAPPING_START_EVENT) {
			yaml_event_delete(&ev);
			if ((rc = read_top(&r)) < 0)
				goto out;
			continue;
		}
		if ((ev.type == YAML_SCALAR_EVENT && !is_null(&ev)) ||
		    ev.type == YAML_SEQUENCE_START_EVENT) {
			rc = fail(&r, &ev.start_mark, "the file must be a "
			    "mapping of options (key: value), not %s",
			    shape(&ev));
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_event_delete(&ev);
out:
	yaml_parser_delete(&r.p);
	return rc;
}

/* The top mapping's keys, after its start, up to its end. */
static int
read_top(struct rd *r)
{
	yaml_event_t key;
	/* the last three: limits, mcp_servers, services */
	yaml_mark_t seen[CONF_MAX_OPTS + 3];
	bool have[CONF_MAX_OPTS + 3] = { false };
	struct conf_key k;
	const char *s;
	char name[64];
	size_t i;
	int rc;

	while ((rc = map_key(r, &key, "a key must be a name")) > 0) {
		s = (const char *)key.data.scalar.value;
		snprintf(name, sizeof(name), "%s", s);
		for (char *p = name; *p != '\0'; p++)
			if (*p == '-')
				*p = '_';
		if (strcmp(name, "limits") == 0)
			i = CONF_MAX_OPTS;
		else if (strcmp(name, "mcp_servers") == 0)
			i = CONF_MAX_OPTS + 1;
		else if (strcmp(name, "services") == 0)
			i = CONF_MAX_OPTS + 2;
		else
			for (i = 0; conf_key_get(i, &k) == 0; i++)
				if (strlen(s) < sizeof(name) &&
				    strcmp(k.key, name) == 0)
					break;
		if (i < CONF_MAX_OPTS && conf_key_get(i, &k) < 0) {
			rc = fail(r, &key.start_mark, "unknown key '%.64s'%s",
			    s, strcmp(name, "config") == 0 ? " (a file "
			    "cannot name another)" : "");
			goto out;
		}
		if (have[i]) {
			rc = fail(r, &key.start_mark, "'%s' given twice (first "
			    "at line %zu)", s, seen[i].line + 1);
			goto out;
		}
		have[i] = true;
		seen[i] = key.start_mark;
		rc = i == CONF_MAX_OPTS ? read_limits(r) :
		    i == CONF_MAX_OPTS + 1 ? read_mcp_servers(r) :
		    i == CONF_MAX_OPTS + 2 ? read_services(r) :
		    read_option(r, &key);
		if (rc < 0)
			goto out;
		yaml_event_delete(&key);
	}
	return rc;
out:
	yaml_event_delete(&key);
	return rc;
}

/* The value of one option of the table, named by key. */
static int
read_option(struct rd *r, const yaml_event_t *key)
{
	static const char *const yes[] = { "true", "on", "yes", "y" };
	static const char *const no[] = { "false", "off", "no", "n" };
	const char *s = (const char *)key->data.scalar.value, *v;
	struct conf_key k;
	yaml_event_t ev;
	char msg[MSG], name[64];
	size_t i;
	int rc;

	snprintf(name, sizeof(name), "%s", s);
	for (char *p = name; *p != '\0'; p++)
		if (*p == '-')
			*p = '_';
	for (i = 0; conf_key_get(i, &k) == 0; i++)
		if (strcmp(k.key, name) == 0)
			break;
	if ((rc = scalar_value(r, s, &ev)) < 0)
		return rc;
	v = (const char *)ev.data.scalar.value;
	/* YAML's booleans, for options that take yes or no. */
	if (strcmp(k.metavar, "yes|no") == 0 &&
	    ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		for (size_t j = 0; j < sizeof(yes) / sizeof(yes[0]); j++) {
			if (strcasecmp(v, yes[j]) == 0)
				v = "yes";
			else if (strcasecmp(v, no[j]) == 0)
				v = "no";
		}
	msg[0] = '\0';
	if (conf_key_set(r->c, i, v, msg, sizeof(msg)) < 0)
		rc = fail(r, &ev.start_mark, "%s: %s", s, msg);
	yaml_event_delete(&ev);
	return rc;
}

/* limits: a mapping of kinds and "languages", each a mapping. */
static int
read_limits(struct rd *r)
{
	yaml_event_t ev;
	enum limits_kind kind;
	unsigned seen = 0, bit;
	char kname[16];
	const char *s;
	int rc;

	if ((rc = map_start(r, "limits wants a mapping of command, session, "
	    "context, pty and languages")) < 0)
		return rc;
	while ((rc = map_key(r, &ev, "a key of limits must be a name")) > 0) {
		s = (const char *)ev.data.scalar.value;
		if (strcmp(s, "languages") == 0)
			bit = 1u << LIMITS_NKINDS;
		else if (limits_kind_parse(s, &kind) == 0)
			bit = 1u << kind;
		else {
			rc = fail(r, &ev.start_mark, "unknown key 'limits.%.64s'"
			    " (command, session, context, pty, languages)", s);
			goto out;
		}
		if (seen & bit) {
			rc = fail(r, &ev.start_mark, "'limits.%s' given twice",
			    s);
			goto out;
		}
		seen |= bit;
		snprintf(kname, sizeof(kname), "%s", s);
		if (bit == 1u << LIMITS_NKINDS)
			rc = read_languages(r);
		else
			rc = read_kind(r, kname, kname);
		if (rc < 0)
			goto out;
		yaml_event_delete(&ev);
	}
	return rc;
out:
	yaml_event_delete(&ev);
	return rc;
}

/* limits.languages: language names to mappings of limits. */
static int
read_languages(struct rd *r)
{
	yaml_event_t ev;
	char where[128], prefix[80];
	const char *s;
	int rc;

	if ((rc = map_start(r, "limits.languages wants a mapping of "
	    "language names")) < 0)
		return rc;
	while ((rc = map_key(r, &ev, LANG_RULE)) > 0) {
		s = (const char *)ev.data.scalar.value;
		if (s[0] == '\0' || strlen(s) >= 64 ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-") != strlen(s)) {
			rc = fail(r, &ev.start_mark, "%s, not this",
			    LANG_RULE);
			goto out;
		}
		snprintf(where, sizeof(where), "languages.%s", s);
		snprintf(prefix, sizeof(prefix), "context.%s", s);
		for (size_t i = 0; i < r->c->nlang_limits; i++)
			if (strcmp(r->c->lang_limits[i].lang, s) == 0 &&
			    r->c->lang_limits[i].l.set != 0) {
				rc = fail(r, &ev.start_mark, "'limits.%s' "
				    "given twice", where);
				goto out;
			}
		if ((rc = read_kind(r, where, prefix)) < 0)
			goto out;
		yaml_event_delete(&ev);
	}
	return rc;
out:
	yaml_event_delete(&ev);
	return rc;
}

/*
 * One mapping of limits (memory: 256MiB ...), for limits.WHERE, set
 * through --limit's syntax as PREFIX.KEY=VALUE.
 */
static int
read_kind(struct rd *r, const char *where, const char *prefix)
{
	struct limits one;
	yaml_event_t key, val;
	char msg[MSG], what[192], text[256], want[256];
	unsigned seen = 0;
	const char *k, *v;
	int rc;

	snprintf(want, sizeof(want), "limits.%s wants a mapping of limits "
	    "(memory, processes, cpu_seconds, file_size, open_files, core)",
	    where);
	if ((rc = map_start(r, want)) < 0)
		return rc;
	while ((rc = map_key(r, &key, "a limit must be a name")) > 0) {
		k = (const char *)key.data.scalar.value;
		snprintf(what, sizeof(what), "limits.%s.%.32s", where, k);
		memset(&one, 0, sizeof(one));
		msg[0] = '\0';
		/* The key alone first: "unknown limit" at the key. */
		if (limits_set(&one, k, "unlimited", msg, sizeof(msg)) < 0) {
			rc = fail(r, &key.start_mark, "%s", msg);
			goto out;
		}
		if (seen & one.set) {
			rc = fail(r, &key.start_mark, "'%s' given twice", what);
			goto out;
		}
		seen |= one.set;
		if ((rc = scalar_value(r, what, &val)) < 0)
			goto out;
		v = (const char *)val.data.scalar.value;
		/* Checked alone for its message, then set as --limit is. */
		if (limits_set(&one, k, v, msg, sizeof(msg)) < 0)
			rc = fail(r, &val.start_mark, "%s: %s", what, msg);
		else if (snprintf(text, sizeof(text), "%s.%s=%s", prefix, k,
		    v) >= (int)sizeof(text))
			rc = fail(r, &val.start_mark, "%s: too long", what);
		else if (conf_limits_parse(r->c, text, msg, sizeof(msg)) < 0)
			rc = fail(r, &val.start_mark, "%s: %s", what, msg);
		yaml_event_delete(&val);
		if (rc < 0)
			goto out;
		yaml_event_delete(&key);
	}
	return rc;
out:
	yaml_event_delete(&key);
	return rc;
}

/*
 * mcp_servers: server names to what runs them.  A name is what prefixes
 * its tools on /mcp (NAME__tool), so it may not hold "__" itself.
 */
static int
read_mcp_servers(struct rd *r)
{
	struct conf_mcp_server *m;
	yaml_event_t ev;
	const char *s;
	size_t n;
	int rc;

	if ((rc = map_start(r, "mcp_servers wants a mapping of server "
	    "names")) < 0)
		return rc;
	while ((rc = map_key(r, &ev, "a server name must be a name")) > 0) {
		s = (const char *)ev.data.scalar.value;
		n = strlen(s);
		if (n == 0 || n >= sizeof(m->name) || n != ev.data.scalar.length
		    || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") !=
		    n || strstr(s, "__") != NULL) {
			rc = fail(r, &ev.start_mark, "an MCP server's name is "
			    "1 to 31 of a-z, 0-9, _ and - without \"__\", not "
			    "'%.64s'", s);
			goto out;
		}
		for (size_t i = 0; i < r->c->nmcp_servers; i++)
			if (strcmp(r->c->mcp_servers[i].name, s) == 0) {
				rc = fail(r, &ev.start_mark, "'mcp_servers.%s' "
				    "given twice", s);
				goto out;
			}
		if (r->c->nmcp_servers == CONF_MCP_SERVERS) {
			rc = fail(r, &ev.start_mark, "more than %d MCP servers",
			    CONF_MCP_SERVERS);
			goto out;
		}
		m = &r->c->mcp_servers[r->c->nmcp_servers++];
		memcpy(m->name, s, n + 1);
		if ((rc = read_mcp_server(r, m, &ev.start_mark)) < 0)
			goto out;
		yaml_event_delete(&ev);
	}
	return rc;
out:
	yaml_event_delete(&ev);
	return rc;
}

/* One server: command (a list), env (a mapping), cwd; or url. */
static int
read_mcp_server(struct rd *r, struct conf_mcp_server *m,
    const yaml_mark_t *at)
{
	yaml_event_t key, val;
	char what[96], msg[MSG];
	const char *k;
	int rc;

	snprintf(what, sizeof(what), "mcp_servers.%s wants a mapping of "
	    "command, env and cwd, or url", m->name);
	if ((rc = map_start(r, what)) < 0)
		return rc;
	while ((rc = map_key(r, &key, "a key must be a name")) > 0) {
		k = (const char *)key.data.scalar.value;
		snprintf(what, sizeof(what), "mcp_servers.%s.%.16s", m->name,
		    k);
		if ((strcmp(k, "command") == 0 && m->argv != NULL) ||
		    (strcmp(k, "env") == 0 && m->env != NULL) ||
		    (strcmp(k, "cwd") == 0 && m->cwd != NULL) ||
		    (strcmp(k, "url") == 0 && m->url != NULL)) {
			rc = fail(r, &key.start_mark, "'%s' given twice", what);
			goto out;
		}
		if (strcmp(k, "command") == 0 || strcmp(k, "env") == 0) {
			rc = read_words(r, what, k[0] == 'e', k[0] == 'e' ?
			    &m->env : &m->argv);
		} else if (strcmp(k, "cwd") == 0 || strcmp(k, "url") == 0) {
			if ((rc = scalar_value(r, what, &val)) < 0)
				goto out;
			msg[0] = '\0';
			if (k[0] == 'c' && val.data.scalar.value[0] != '/')
				rc = fail(r, &val.start_mark, "%s: an absolute "
				    "path", what);
			else if (k[0] == 'u' && conf_mcp_url_check((const char *)
			    val.data.scalar.value, msg, sizeof(msg)) < 0)
				rc = fail(r, &val.start_mark, "%s: %s", what,
				    msg);
			else
				*(k[0] == 'c' ? &m->cwd : &m->url) =
				    xstrdup((const char *)val.data.scalar.value);
			yaml_event_delete(&val);
		} else {
			rc = fail(r, &key.start_mark, "unknown key '%.64s' of "
			    "an MCP server (command, env, cwd, url)", k);
		}
		if (rc < 0)
			goto out;
		yaml_event_delete(&key);
	}
	if (rc < 0)
		return rc;
	if ((m->argv == NULL) == (m->url == NULL))
		return fail(r, at, "mcp_servers.%s needs either a command or "
		    "a url (not both)", m->name);
	if (m->url != NULL && (m->env != NULL || m->cwd != NULL))
		return fail(r, at, "mcp_servers.%s: env and cwd are for a "
		    "command, not a url", m->name);
	return 0;
out:
	yaml_event_delete(&key);
	return rc;
}

/*
 * services: names to what runs them, in the order they start.  The
 * checks a service's start would meet late are made here: a bad entry
 * stops execd at start with the file's line and column.
 */
static int
read_services(struct rd *r)
{
	struct conf_service *v;
	yaml_event_t ev;
	const char *s;
	size_t n;
	int rc;

	if ((rc = map_start(r, "services wants a mapping of service "
	    "names")) < 0)
		return rc;
	while ((rc = map_key(r, &ev, "a service name must be a name")) > 0) {
		s = (const char *)ev.data.scalar.value;
		n = strlen(s);
		if (n == 0 || n >= sizeof(v->name) || n != ev.data.scalar.length
		    || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") !=
		    n) {
			rc = fail(r, &ev.start_mark, "a service's name is 1 to "
			    "31 of a-z, 0-9, _ and -, not '%.64s'", s);
			goto out;
		}
		for (size_t i = 0; i < r->c->nservices; i++)
			if (strcmp(r->c->services[i].name, s) == 0) {
				rc = fail(r, &ev.start_mark, "'services.%s' "
				    "given twice", s);
				goto out;
			}
		if (r->c->nservices == CONF_SERVICES) {
			rc = fail(r, &ev.start_mark, "more than %d services",
			    CONF_SERVICES);
			goto out;
		}
		v = &r->c->services[r->c->nservices++];
		memcpy(v->name, s, n + 1);
		if ((rc = read_service(r, v, &ev.start_mark)) < 0)
			goto out;
		yaml_event_delete(&ev);
	}
	return rc;
out:
	yaml_event_delete(&ev);
	return rc;
}

/* One service: command, env, cwd, after, ready, restart. */
static int
read_service(struct rd *r, struct conf_service *v, const yaml_mark_t *at)
{
	yaml_event_t key, val;
	char what[96];
	const char *k, *x;
	bool have_after = false, have_restart = false;
	int rc;

	snprintf(what, sizeof(what), "services.%s wants a mapping of "
	    "command, env, cwd, after, ready and restart", v->name);
	if ((rc = map_start(r, what)) < 0)
		return rc;
	while ((rc = map_key(r, &key, "a key must be a name")) > 0) {
		k = (const char *)key.data.scalar.value;
		snprintf(what, sizeof(what), "services.%s.%.16s", v->name, k);
		if ((strcmp(k, "command") == 0 && v->argv != NULL) ||
		    (strcmp(k, "env") == 0 && v->env != NULL) ||
		    (strcmp(k, "cwd") == 0 && v->cwd != NULL) ||
		    (strcmp(k, "ready") == 0 && v->ready != NULL) ||
		    (strcmp(k, "after") == 0 && have_after) ||
		    (strcmp(k, "restart") == 0 && have_restart)) {
			rc = fail(r, &key.start_mark, "'%s' given twice", what);
			goto out;
		}
		if (strcmp(k, "command") == 0 || strcmp(k, "env") == 0) {
			rc = read_words(r, what, k[0] == 'e', k[0] == 'e' ?
			    &v->env : &v->argv);
		} else if (strcmp(k, "cwd") == 0 || strcmp(k, "ready") == 0 ||
		    strcmp(k, "after") == 0 || strcmp(k, "restart") == 0) {
			if ((rc = scalar_value(r, what, &val)) < 0)
				goto out;
			x = (const char *)val.data.scalar.value;
			if ((strcmp(k, "cwd") == 0 || strcmp(k, "ready") ==
			    0) && x[0] != '/') {
				rc = fail(r, &val.start_mark, "%s: an absolute "
				    "path", what);
			} else if (k[0] == 'c') {
				v->cwd = xstrdup(x);
			} else if (strcmp(k, "ready") == 0) {
				v->ready = xstrdup(x);
			} else if (k[0] == 'a') {
				size_t i;

				have_after = true;
				for (i = 0; i + 1 < r->c->nservices; i++)
					if (strcmp(r->c->services[i].name,
					    x) == 0)
						break;
				if (i + 1 < r->c->nservices)
					snprintf(v->after, sizeof(v->after),
					    "%s", x);
				else
					rc = fail(r, &val.start_mark, "%s: "
					    "'%.64s' is no service given "
					    "before this one", what, x);
			} else {
				have_restart = true;
				if (strcmp(x, "always") == 0)
					v->restart = CONF_RESTART_ALWAYS;
				else if (strcmp(x, "on-failure") == 0)
					v->restart = CONF_RESTART_ON_FAILURE;
				else if (strcmp(x, "never") == 0)
					v->restart = CONF_RESTART_NEVER;
				else
					rc = fail(r, &val.start_mark, "%s: "
					    "always, on-failure or never, not "
					    "'%.64s'", what, x);
			}
			yaml_event_delete(&val);
		} else {
			rc = fail(r, &key.start_mark, "unknown key '%.64s' of "
			    "a service (command, env, cwd, after, ready, "
			    "restart)", k);
		}
		if (rc < 0)
			goto out;
		yaml_event_delete(&key);
	}
	if (rc < 0)
		return rc;
	if (v->argv == NULL)
		return fail(r, at, "services.%s needs a command", v->name);
	return 0;
out:
	yaml_event_delete(&key);
	return rc;
}

/*
 * A list of words (a command: at least one, each a value) or, with env,
 * a mapping of variable names to values, as "NAME=VALUE"; into *out, a
 * NULL-ended array.
 */
static int
read_words(struct rd *r, const char *what, bool env, char ***out)
{
	yaml_event_t ev, val;
	yaml_mark_t end;
	char **v = xcalloc(CONF_MCP_ARGS + 1, sizeof(*v));
	const char *s;
	size_t n = 0;
	int rc;

	*out = v;
	if ((rc = next(r, &ev)) < 0)
		return rc;
	if (ev.type != (env ? YAML_MAPPING_START_EVENT :
	    YAML_SEQUENCE_START_EVENT)) {
		rc = fail(r, &ev.start_mark, "%s wants %s, not %s", what,
		    env ? "a mapping of variable names to values" :
		    "a list of words (the program, then its arguments)",
		    shape(&ev));
		yaml_event_delete(&ev);
		return rc;
	}
	yaml_event_delete(&ev);
	for (;;) {
		if ((rc = next(r, &ev)) < 0)
			return rc;
		if (ev.type == YAML_SEQUENCE_END_EVENT ||
		    ev.type == YAML_MAPPING_END_EVENT)
			break;
		if (ev.type != YAML_SCALAR_EVENT || is_null(&ev) ||
		    strlen((const char *)ev.data.scalar.value) !=
		    ev.data.scalar.length) {
			rc = fail(r, &ev.start_mark, "%s: each %s must be a "
			    "single value without NUL, not %s", what, env ?
			    "name" : "word", ev.type == YAML_SCALAR_EVENT ?
			    "this" : shape(&ev));
			yaml_event_delete(&ev);
			return rc;
		}
		s = (const char *)ev.data.scalar.value;
		if (n == CONF_MCP_ARGS) {
			rc = fail(r, &ev.start_mark, "%s: more than %d", what,
			    CONF_MCP_ARGS);
			yaml_event_delete(&ev);
			return rc;
		}
		if (!env) {
			v[n++] = xstrdup(s);
			yaml_event_delete(&ev);
			continue;
		}
		if (!(isalpha((unsigned char)s[0]) || s[0] == '_') ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789_") != strlen(s) || strlen(s) > 255) {
			rc = fail(r, &ev.start_mark, "%s: a variable name is "
			    "letters, digits and _, not '%.64s'", what, s);
			yaml_event_delete(&ev);
			return rc;
		}
		for (size_t i = 0; i < n; i++)
			if (strncmp(v[i], s, strlen(s)) == 0 &&
			    v[i][strlen(s)] == '=') {
				rc = fail(r, &ev.start_mark, "%s: '%s' given "
				    "twice", what, s);
				yaml_event_delete(&ev);
				return rc;
			}
		if ((rc = next(r, &val)) < 0) {
			yaml_event_delete(&ev);
			return rc;
		}
		if (val.type != YAML_SCALAR_EVENT ||
		    strlen((const char *)val.data.scalar.value) !=
		    val.data.scalar.length) {
			rc = fail(r, &val.start_mark, "%s.%s wants a single "
			    "value without NUL, not %s", what, s,
			    val.type == YAML_SCALAR_EVENT ? "this" :
			    shape(&val));
			yaml_event_delete(&val);
			yaml_event_delete(&ev);
			return rc;
		}
		/* A null is the empty string: a variable set, empty. */
		if (asprintf(&v[n], "%s=%s", s, is_null(&val) ? "" :
		    (const char *)val.data.scalar.value) < 0)
			fatalx("asprintf: out of memory");
		n++;
		yaml_event_delete(&val);
		yaml_event_delete(&ev);
	}
	end = ev.start_mark;
	yaml_event_delete(&ev);
	if (!env && n == 0)
		return fail(r, &end, "%s: an empty list (it needs the "
		    "program at least)", what);
	return 0;
}

/* http://127.0.0.1:PORT[/path], localhost or [::1]; see conf.h. */
int
conf_mcp_url_check(const char *url, char *err, size_t errlen)
{
	static const char *const hosts[] = { "127.0.0.1:", "localhost:",
	    "[::1]:" };
	const char *p = NULL;
	unsigned long port = 0;
	size_t d;

	if (strncmp(url, "http://", 7) != 0) {
		snprintf(err, errlen, "an MCP server's url must be http:// on "
		    "loopback (https and other schemes are not relayed)");
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		if (strncmp(url + 7, hosts[i], strlen(hosts[i])) == 0)
			p = url + 7 + strlen(hosts[i]);
	if (p == NULL) {
		snprintf(err, errlen, "an MCP server's url must name a "
		    "loopback host with a port (127.0.0.1:PORT, "
		    "localhost:PORT or [::1]:PORT)");
		return -EINVAL;
	}
	d = strspn(p, "0123456789");
	for (size_t i = 0; i < d && i < 6; i++)
		port = port * 10 + (unsigned long)(p[i] - '0');
	if (d == 0 || d > 5 || port == 0 || port > 65535 ||
	    (p[d] != '\0' && p[d] != '/')) {
		snprintf(err, errlen, "an MCP server's url needs a port from 1 "
		    "to 65535, then a path or nothing");
		return -EINVAL;
	}
	if (strpbrk(p + d, " \t\r\n#?") != NULL) {
		snprintf(err, errlen, "an MCP server's url path may not hold "
		    "spaces, a query or a fragment");
		return -EINVAL;
	}
	return 0;
}

/* Read the file at path, at most CONF_FILE_MAX bytes; see conf.h. */
int
conf_file_load(struct conf *c, const char *path, char *err, size_t errlen)
{
	char *buf;
	ssize_t n;
	size_t len = 0;
	int fd, e = 0, rc;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -EINVAL;
	}
	buf = xmalloc(CONF_FILE_MAX + 1);
	while (len <= CONF_FILE_MAX) {
		n = read(fd, buf + len, CONF_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			e = errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (e != 0 || len > CONF_FILE_MAX) {
		snprintf(err, errlen, "%s: %s", path, e != 0 ? strerror(e) :
		    "larger than 1 MiB");
		free(buf);
		return -EINVAL;
	}
	rc = conf_file_parse(c, path, buf, len, err, errlen);
	free(buf);
	return rc;
}
