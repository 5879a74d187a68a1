/*
 * t_conf.c -- unit tests for conf.c.
 *
 * Each test clears every EXECD_* variable, sets the ones it needs with
 * setenv() and calls conf_parse() on a made-up command line.  Covered:
 * defaults, the three spellings of an option, --listen with IPv4 and
 * bracketed IPv6 and its refusals, the default address with and without a
 * token, environment fallbacks and their precedence, every numeric option
 * at and past its limits, sizes with suffixes, log levels, unknown options
 * and stray arguments, upstream options accepted and ignored, --help and
 * --version (their output captured), conf_usage() naming every option and
 * variable within 80 columns, and conf_reset().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../execd/config/conf.h"
#include "../t.h"

#define MAXARGS	16

static const char *const env_vars[] = {
	"EXECD_LISTEN", "EXECD_PORT", "EXECD_ACCESS_TOKEN", "EXECD_LOG_LEVEL",
	"EXECD_MAX_BODY_SIZE", "EXECD_CONNECTION_TIMEOUT",
	"EXECD_MAX_CONNECTIONS", "EXECD_MAX_CONNECTIONS_PER_IP",
	"EXECD_STREAM_BUFFER", "EXECD_GRACE_PERIOD", "EXECD_ACCESS_TOKEN_FILE",
	"EXECD_KERNEL_FORK",
};

/* Every option conf_usage() must list, with its variable (or NULL). */
static const struct {
	const char	*name;
	const char	*env;
} all_opts[] = {
	{ "listen", "EXECD_LISTEN" },
	{ "port", "EXECD_PORT" },
	{ "access-token", "EXECD_ACCESS_TOKEN" },
	{ "access-token-file", "EXECD_ACCESS_TOKEN_FILE" },
	{ "seccomp", "EXECD_SECCOMP" },
	{ "seccomp-mode", "EXECD_SECCOMP_MODE" },
	{ "no-new-privs", "EXECD_NO_NEW_PRIVS" },
	{ "capabilities", "EXECD_CAPABILITIES" },
	{ "log-level", "EXECD_LOG_LEVEL" },
	{ "max-body-size", "EXECD_MAX_BODY_SIZE" },
	{ "connection-timeout", "EXECD_CONNECTION_TIMEOUT" },
	{ "max-connections", "EXECD_MAX_CONNECTIONS" },
	{ "max-connections-per-ip", "EXECD_MAX_CONNECTIONS_PER_IP" },
	{ "stream-buffer", "EXECD_STREAM_BUFFER" },
	{ "grace-period", "EXECD_GRACE_PERIOD" },
	{ "routes", NULL },
	{ "help", NULL },
	{ "version", NULL },
	{ "jupyter-host", NULL },
	{ "jupyter-token", NULL },
	{ "graceful-shutdown-timeout", NULL },
	{ "jupyter-idle-poll-interval", NULL },
};

static char	 err[256];

static void	 clear_env(void);
static int	 parse(struct conf *, ...);
static int	 parse_quiet(struct conf *, char **, size_t *, ...);
static int	 vparse(struct conf *, const char *const *);
static char	*keep(const char *);

/* Unset every variable conf_parse() reads. */
static void
clear_env(void)
{
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
}

/*
 * Writable copies of the arguments.  They are never reused: conf_parse()
 * may keep pointing into an earlier argv (see test_reparse_after_error),
 * and that must not disturb the other tests.
 */
static char	 arena[1 << 16];
static size_t	 arena_used;

/* A copy of s in the arena. */
static char *
keep(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p;

	if (arena_used + n > sizeof(arena)) {
		fprintf(stderr, "t_conf: arena full\n");
		exit(1);
	}
	p = memcpy(arena + arena_used, s, n);
	arena_used += n;
	return p;
}

/* conf_parse() on "execd" plus the arguments. */
static int
vparse(struct conf *c, const char *const *args)
{
	char *argv[MAXARGS + 2];
	int argc = 0;

	argv[argc++] = keep("execd");
	for (size_t i = 0; args[i] != NULL && i < MAXARGS; i++)
		argv[argc++] = keep(args[i]);
	argv[argc] = NULL;
	err[0] = '\0';
	return conf_parse(c, argc, argv, err, sizeof(err));
}

/* parse(c, "--opt", "value", ..., NULL). */
static int
parse(struct conf *c, ...)
{
	const char *args[MAXARGS + 1];
	size_t n = 0;
	va_list ap;

	va_start(ap, c);
	while (n < MAXARGS && (args[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	args[n] = NULL;
	return vparse(c, args);
}

/*
 * Like parse(), with stdout captured: *out gets what was printed (the
 * caller frees it), *outlen its length.
 */
static int
parse_quiet(struct conf *c, char **out, size_t *outlen, ...)
{
	const char *args[MAXARGS + 1];
	size_t n = 0;
	va_list ap;
	FILE *tmp = tmpfile();
	int saved, rc;
	long len;

	va_start(ap, outlen);
	while (n < MAXARGS && (args[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	args[n] = NULL;
	*out = NULL;
	*outlen = 0;
	if (tmp == NULL) {
		T_OK(tmp != NULL);
		return -1;
	}
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(fileno(tmp), STDOUT_FILENO);
	rc = vparse(c, args);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	/* stdout wrote through the shared offset: it is at the end. */
	len = (long)lseek(fileno(tmp), 0, SEEK_END);
	if (len < 0)
		len = 0;
	*out = calloc(1, (size_t)len + 1);
	if (*out != NULL && len > 0 && pread(fileno(tmp), *out, (size_t)len,
	    0) == len)
		*outlen = (size_t)len;
	fclose(tmp);
	return rc;
}

/* No arguments, no environment: the documented defaults. */
static void
test_defaults(void)
{
	struct conf c;

	clear_env();
	T_EQ_INT(parse(&c, NULL), 0);
	T_EQ_STR(c.addr, "127.0.0.1");
	T_EQ_INT(c.port, EXECD_PORT);
	T_EQ_INT(c.addr_given, 0);
	T_OK(c.token == NULL);
	T_EQ_INT(c.log_level, LOG_L_INFO);
	T_EQ_INT(c.max_body, 16 << 20);
	T_EQ_INT(c.conn_timeout, 120);
	T_EQ_INT(c.max_conns, 4096);
	T_EQ_INT(c.max_conns_per_ip, 2048);
	T_EQ_INT(c.stream_cap, 4 << 20);
	T_EQ_INT(c.grace_ms, 2000);
	T_EQ_INT(c.print_routes, 0);
	conf_reset(&c);
}

/* --name VALUE, --name=VALUE, -name VALUE and -name=VALUE. */
static void
test_spellings(void)
{
	struct conf c;

	clear_env();
	T_EQ_INT(parse(&c, "--port", "1001", NULL), 0);
	T_EQ_INT(c.port, 1001);
	T_EQ_INT(parse(&c, "--port=1002", NULL), 0);
	T_EQ_INT(c.port, 1002);
	T_EQ_INT(parse(&c, "-port", "1003", NULL), 0);
	T_EQ_INT(c.port, 1003);
	T_EQ_INT(parse(&c, "-port=1004", NULL), 0);
	T_EQ_INT(c.port, 1004);
	/* Several, and the last of a repeated option wins. */
	T_EQ_INT(parse(&c, "--port", "1", "-grace-period=5", "--port=2",
	    "-max-connections", "7", NULL), 0);
	T_EQ_INT(c.port, 2);
	T_EQ_INT(c.grace_ms, 5);
	T_EQ_INT(c.max_conns, 7);
	T_EQ_INT(c.max_conns_per_ip, 2048);
	/* A value that looks like an option is still the value. */
	T_EQ_INT(parse(&c, "--access-token", "--port", NULL), 0);
	T_EQ_STR(c.token, "--port");
	conf_reset(&c);
	/* Parsing twice in one process starts afresh. */
	T_EQ_INT(parse(&c, "--port", "9", NULL), 0);
	T_EQ_INT(c.port, 9);
	T_EQ_INT(parse(&c, NULL), 0);
	T_EQ_INT(c.port, EXECD_PORT);
}

/* --listen: IPv4, IPv6 in brackets, any port including 0. */
static void
test_listen(void)
{
	struct conf c;

	clear_env();
	T_EQ_INT(parse(&c, "--listen", "0.0.0.0:8080", NULL), 0);
	T_EQ_STR(c.addr, "0.0.0.0");
	T_EQ_INT(c.port, 8080);
	T_EQ_INT(c.addr_given, 1);
	T_EQ_INT(parse(&c, "--listen=[::1]:9000", NULL), 0);
	T_EQ_STR(c.addr, "::1");
	T_EQ_INT(c.port, 9000);
	T_EQ_INT(parse(&c, "-listen", "[::]:0", NULL), 0);
	T_EQ_STR(c.addr, "::");
	T_EQ_INT(c.port, 0);
	T_EQ_INT(parse(&c, "--listen", "[fe80::1:2:3]:65535", NULL), 0);
	T_EQ_STR(c.addr, "fe80::1:2:3");
	T_EQ_INT(c.port, 65535);
	T_EQ_INT(parse(&c, "--listen", "10.1.2.3:1", NULL), 0);
	T_EQ_STR(c.addr, "10.1.2.3");
	T_EQ_INT(c.port, 1);
}

/* --listen refusals, each with a message quoting the value. */
static void
test_listen_invalid(void)
{
	static const char *const bad[] = {
		"1.2.3.4", "1.2.3.4:", ":80", "::1:80", "[::1]", "[::1]80",
		"[]:80", "[::1:80", "1.2.3.4:65536", "1.2.3.4:-1",
		"1.2.3.4:http", "1.2.3.4:80x", "",
		"[0123456789012345678901234567890123456789012345678901234"
		"567890123]:1",
		"01234567890123456789012345678901234567890123456789012345678"
		"901234:1",
	};
	struct conf c;
	char want[256];

	clear_env();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		T_EQ_INT(parse(&c, "--listen", bad[i], NULL), -EINVAL);
		snprintf(want, sizeof(want), "'%s'", bad[i]);
		T_OK(strstr(err, want) != NULL);
		if (strstr(err, want) == NULL)
			fprintf(stderr, "  err for %s: %s\n", bad[i], err);
	}
	/* 63 characters still fit. */
	T_EQ_INT(parse(&c, "--listen", "01234567890123456789012345678901234"
	    "5678901234567890123456789012:1", NULL), 0);
	T_EQ_INT(strlen(c.addr), 63);
}

/* With a token the default address is 0.0.0.0; --listen still wins. */
static void
test_token_addr(void)
{
	struct conf c;

	clear_env();
	T_EQ_INT(parse(&c, "--access-token", "s3cret", NULL), 0);
	T_EQ_STR(c.token, "s3cret");
	T_EQ_STR(c.addr, "0.0.0.0");
	T_EQ_INT(c.addr_given, 0);
	conf_reset(&c);
	T_OK(c.token == NULL);
	conf_reset(&c);			/* twice is fine */
	T_EQ_INT(parse(&c, "--access-token=t", "--listen", "127.0.0.1:1",
	    NULL), 0);
	T_EQ_STR(c.addr, "127.0.0.1");
	conf_reset(&c);
	/* An empty token is no token. */
	T_EQ_INT(parse(&c, "--access-token=", NULL), 0);
	T_OK(c.token == NULL);
	T_EQ_STR(c.addr, "127.0.0.1");
	setenv("EXECD_ACCESS_TOKEN", "from-env", 1);
	T_EQ_INT(parse(&c, NULL), 0);
	T_EQ_STR(c.token, "from-env");
	T_EQ_STR(c.addr, "0.0.0.0");
	conf_reset(&c);
	/* The command line can take the environment's token away. */
	T_EQ_INT(parse(&c, "--access-token", "", NULL), 0);
	T_OK(c.token == NULL);
	T_EQ_STR(c.addr, "127.0.0.1");
	clear_env();
}

/* Environment fallbacks for every option; argv wins over them. */
static void
test_env(void)
{
	struct conf c;

	clear_env();
	setenv("EXECD_PORT", "1234", 1);
	setenv("EXECD_LOG_LEVEL", "debug", 1);
	setenv("EXECD_MAX_BODY_SIZE", "1K", 1);
	setenv("EXECD_CONNECTION_TIMEOUT", "0", 1);
	setenv("EXECD_MAX_CONNECTIONS", "10", 1);
	setenv("EXECD_MAX_CONNECTIONS_PER_IP", "0", 1);
	setenv("EXECD_STREAM_BUFFER", "8K", 1);
	setenv("EXECD_GRACE_PERIOD", "0", 1);
	T_EQ_INT(parse(&c, NULL), 0);
	T_EQ_INT(c.port, 1234);
	T_EQ_INT(c.log_level, LOG_L_DEBUG);
	T_EQ_INT(c.max_body, 1024);
	T_EQ_INT(c.conn_timeout, 0);
	T_EQ_INT(c.max_conns, 10);
	T_EQ_INT(c.max_conns_per_ip, 0);
	T_EQ_INT(c.stream_cap, 8192);
	T_EQ_INT(c.grace_ms, 0);
	T_EQ_INT(parse(&c, "--port", "4321", "--log-level", "error",
	    "--max-body-size=2K", NULL), 0);
	T_EQ_INT(c.port, 4321);
	T_EQ_INT(c.log_level, LOG_L_ERROR);
	T_EQ_INT(c.max_body, 2048);
	T_EQ_INT(c.max_conns, 10);		/* still from the environment */
	/* An invalid variable is an error that names it. */
	setenv("EXECD_MAX_CONNECTIONS", "many", 1);
	T_EQ_INT(parse(&c, NULL), -EINVAL);
	T_OK(strstr(err, "EXECD_MAX_CONNECTIONS") != NULL);
	T_OK(strstr(err, "many") != NULL);
	clear_env();
}

/* EXECD_LISTEN gives address and port, like --listen. */
static void
test_env_listen(void)
{
	struct conf c;

	clear_env();
	setenv("EXECD_LISTEN", "10.0.0.1:8080", 1);
	T_EQ_INT(parse(&c, NULL), 0);
	T_EQ_STR(c.addr, "10.0.0.1");
	T_EQ_INT(c.port, 8080);
	T_EQ_INT(c.addr_given, 1);
	/* --listen on the command line wins over it. */
	T_EQ_INT(parse(&c, "--listen", "[::1]:81", NULL), 0);
	T_EQ_STR(c.addr, "::1");
	T_EQ_INT(c.port, 81);
	setenv("EXECD_LISTEN", "nonsense", 1);
	T_EQ_INT(parse(&c, NULL), -EINVAL);
	T_OK(strstr(err, "EXECD_LISTEN") != NULL);
	clear_env();
}

/* Numeric options: the limits are accepted, one past them refused. */
static void
test_numbers(void)
{
	static const struct {
		const char	*opt;
		const char	*val;
		int		 ok;
	} v[] = {
		{ "--port", "0", 1 }, { "--port", "65535", 1 },
		{ "--port", "65536", 0 }, { "--port", "-1", 0 },
		{ "--port", "", 0 }, { "--port", "80 ", 0 },
		{ "--port", "0x50", 0 },
		{ "--port", "99999999999999999999", 0 },
		{ "--connection-timeout", "0", 1 },
		{ "--connection-timeout", "86400", 1 },
		{ "--connection-timeout", "86401", 0 },
		{ "--max-connections", "1", 1 },
		{ "--max-connections", "1000000", 1 },
		{ "--max-connections", "0", 0 },
		{ "--max-connections", "1000001", 0 },
		{ "--max-connections-per-ip", "0", 1 },
		{ "--max-connections-per-ip", "1000001", 0 },
		{ "--grace-period", "3600000", 1 },
		{ "--grace-period", "3600001", 0 },
		{ "--grace-period", "1.5", 0 },
		{ "--max-body-size", "1", 1 },
		{ "--max-body-size", "0", 0 },
		{ "--max-body-size", "-1", 0 },
		{ "--max-body-size", "16Q", 0 },
		{ "--max-body-size", "M", 0 },
		{ "--max-body-size", "18446744073709551616", 0 },
		{ "--max-body-size", "17179869184G", 0 },
		{ "--stream-buffer", "4096", 1 },
		{ "--stream-buffer", "4095", 0 },
		{ "--stream-buffer", "4k", 1 },
		{ "--log-level", "loud", 0 },
		{ "--log-level", "", 0 },
		{ "--log-level", "-1", 0 },
	};
	struct conf c;
	char want[128];
	int rc;

	clear_env();
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		rc = parse(&c, v[i].opt, v[i].val, NULL);
		if (rc != (v[i].ok ? 0 : -EINVAL))
			fprintf(stderr, "  %s '%s': %d %s\n", v[i].opt,
			    v[i].val, rc, err);
		T_EQ_INT(rc, v[i].ok ? 0 : -EINVAL);
		if (v[i].ok)
			continue;
		snprintf(want, sizeof(want), "invalid value for %s: '%s'",
		    v[i].opt, v[i].val);
		T_EQ_STR(err, want);
	}
}

/* A negative size hidden behind a blank is refused, not wrapped. */
static void
test_size_negative_blank(void)
{
	struct conf c;

	clear_env();
	T_EQ_INT(parse(&c, "--max-body-size", " -1", NULL), -EINVAL);
	T_EQ_INT(parse(&c, "--stream-buffer", " -4096", NULL), -EINVAL);
}

/* Sizes: plain bytes, K M G with or without B, any case. */
static void
test_sizes(void)
{
	static const struct {
		const char	*val;
		size_t		 want;
	} v[] = {
		{ "1", 1 }, { "1024", 1024 }, { "512K", 512 << 10 },
		{ "512k", 512 << 10 }, { "2KB", 2048 }, { "3kb", 3072 },
		{ "16M", 16 << 20 }, { "16m", 16 << 20 }, { "1MB", 1 << 20 },
		{ "1G", (size_t)1 << 30 }, { "4gb", (size_t)4 << 30 },
		{ "10B", 10 },
	};
	struct conf c;

	clear_env();
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		T_EQ_INT(parse(&c, "--max-body-size", v[i].val, NULL), 0);
		T_EQ_INT(c.max_body, v[i].want);
	}
}

/* Log levels by name, in any case, and upstream's numbers 0-7. */
static void
test_log_levels(void)
{
	static const struct {
		const char	*val;
		enum log_level	 want;
	} v[] = {
		{ "error", LOG_L_ERROR }, { "ERROR", LOG_L_ERROR },
		{ "warn", LOG_L_WARN }, { "warning", LOG_L_WARN },
		{ "info", LOG_L_INFO }, { "Info", LOG_L_INFO },
		{ "debug", LOG_L_DEBUG }, { "0", LOG_L_ERROR },
		{ "3", LOG_L_ERROR }, { "4", LOG_L_WARN }, { "5", LOG_L_INFO },
		{ "6", LOG_L_INFO }, { "7", LOG_L_DEBUG },
	};
	struct conf c;

	clear_env();
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		T_EQ_INT(parse(&c, "--log-level", v[i].val, NULL), 0);
		T_EQ_INT(c.log_level, v[i].want);
	}
}

/* Unknown options and missing values are errors. */
static void
test_bad_args(void)
{
	struct conf c;

	clear_env();
	T_EQ_INT(parse(&c, "--bogus", NULL), -EINVAL);
	T_OK(strstr(err, "--bogus") != NULL);
	T_EQ_INT(parse(&c, "--bogus=1", NULL), -EINVAL);
	T_EQ_INT(parse(&c, "-x", NULL), -EINVAL);
	T_EQ_INT(parse(&c, "--port", NULL), -EINVAL);
	T_OK(strstr(err, "--port") != NULL);
	T_EQ_INT(parse(&c, "--routes=yes", NULL), -EINVAL);
	/* "--max-conn" could be either of two options. */
	T_EQ_INT(parse(&c, "--max-conn", "5", NULL), -EINVAL);
	/* An exact name is not ambiguous with a longer one. */
	T_EQ_INT(parse(&c, "--max-connections", "5", NULL), 0);
	T_EQ_INT(c.max_conns, 5);
	T_EQ_INT(c.max_conns_per_ip, 2048);
}

/*
 * Words after the options are ignored, as upstream's daemon ignores them
 * (the platform starts "execd tail -f /dev/null"); what looks like an
 * option among them is theirs, not ours.
 */
static void
test_words_after_options(void)
{
	struct conf c;

	clear_env();
	T_EQ_INT(parse(&c, NULL), 0);
	T_EQ_INT(c.ignored_from, 0);
	T_EQ_INT(parse(&c, "serve", NULL), 0);
	T_EQ_INT(c.ignored_from, 1);
	T_EQ_INT(parse(&c, "--port", "1234", "tail", "-f", "/dev/null",
	    "--port", "1", NULL), 0);
	T_EQ_INT(c.ignored_from, 3);
	T_EQ_INT(c.port, 1234);
	T_EQ_INT(parse(&c, "--", "--port", "1", NULL), 0);
	T_EQ_INT(c.port, 44772);
}

/* Upstream's Jupyter options are accepted and change nothing. */
static void
test_ignored(void)
{
	struct conf c, d;

	clear_env();
	T_EQ_INT(parse(&d, NULL), 0);
	T_EQ_INT(parse(&c, "--jupyter-host", "http://127.0.0.1:8888",
	    "-jupyter-token=abc", "--graceful-shutdown-timeout", "5s",
	    "--jupyter-idle-poll-interval=1m", NULL), 0);
	/* Only the command line kept for conf_reload differs. */
	T_EQ_INT(c.argc, 7);
	c.argc = d.argc;
	c.argv = d.argv;
	T_OK(memcmp(&c, &d, sizeof(c)) == 0);
	/* They still need their value. */
	T_EQ_INT(parse(&c, "--jupyter-host", NULL), -EINVAL);
	T_EQ_INT(parse(&c, "--routes", NULL), 0);
	T_EQ_INT(c.print_routes, 1);
}

/* --help and --version answer, return 1, and print to stdout. */
static void
test_help_version(void)
{
	struct conf c;
	char *out;
	size_t len;

	clear_env();
	T_EQ_INT(parse_quiet(&c, &out, &len, "--version", NULL), 1);
	T_EQ_STR(out, "execd " EXECD_VERSION "\n");
	free(out);
	T_EQ_INT(parse_quiet(&c, &out, &len, "--help", NULL), 1);
	T_OK(out != NULL && strncmp(out, "usage: execd", 12) == 0);
	T_OK(out != NULL && strstr(out, "--max-connections-per-ip") != NULL);
	free(out);
	T_EQ_INT(parse_quiet(&c, &out, &len, "-help", NULL), 1);
	T_OK(len > 100);
	free(out);
	/* --help wins over what follows, even nonsense. */
	T_EQ_INT(parse_quiet(&c, &out, &len, "--port", "1", "--help",
	    "--port", "x", NULL), 1);
	free(out);
}

/* conf_usage(): every option and variable, within 80 columns. */
static void
test_usage(void)
{
	char *text = NULL, want[96], *line, *save = NULL;
	size_t len = 0, longest = 0;
	FILE *f = open_memstream(&text, &len);

	T_OK(f != NULL);
	if (f == NULL)
		return;
	conf_usage(f);
	fclose(f);
	for (size_t i = 0; i < sizeof(all_opts) / sizeof(all_opts[0]);
	    i++) {
		snprintf(want, sizeof(want), "--%s", all_opts[i].name);
		if (strstr(text, want) == NULL)
			fprintf(stderr, "  usage lacks %s\n", want);
		T_OK(strstr(text, want) != NULL);
		if (all_opts[i].env == NULL)
			continue;
		if (strstr(text, all_opts[i].env) == NULL)
			fprintf(stderr, "  usage lacks %s\n",
			    all_opts[i].env);
		T_OK(strstr(text, all_opts[i].env) != NULL);
	}
	T_OK(strstr(text, "default: 44772") != NULL);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		if (strlen(line) > longest)
			longest = strlen(line);
	T_OK(longest <= 80);
	if (longest > 80)
		fprintf(stderr, "  usage has a line of %zu columns\n", longest);
	T_EQ_INT(text[0], 'u');
	free(text);
}

/*
 * A parse that stopped early (an error, --help) must not leave getopt
 * state pointing into its argv: the caller may free or reuse that memory
 * before parsing again.  The buffers stand in for such reused memory.
 */
static void
test_reparse_after_error(void)
{
	char a0[] = "execd", a1[32] = "--max-conn", a2[] = "5";
	char b0[] = "execd", b1[32] = "-x";
	char *argv1[] = { a0, a1, a2, NULL };
	char *argv2[] = { b0, b1, NULL };
	char *argv3[] = { b0, NULL };
	struct conf c;

	clear_env();
	T_EQ_INT(conf_parse(&c, 3, argv1, err, sizeof(err)), -EINVAL);
	memset(a1, 'x', sizeof(a1) - 1);	/* argv1 reused for text */
	err[0] = '\0';
	T_EQ_INT(conf_parse(&c, 1, argv3, err, sizeof(err)), 0);
	if (*err != '\0')
		fprintf(stderr, "  second parse: %s\n", err);
	T_EQ_INT(conf_parse(&c, 2, argv2, err, sizeof(err)), -EINVAL);
	memset(b1, 'y', sizeof(b1) - 1);
	T_EQ_INT(conf_parse(&c, 1, argv3, err, sizeof(err)), 0);
}

/*
 * The token's bytes are wiped where the kernel shows them to every
 * process: argv (/proc/PID/cmdline) and the environment block
 * (/proc/PID/environ), which unsetenv() leaves as it was.
 */
static void
test_token_wiped_from_argv_and_environment(void)
{
	char a0[] = "execd", a1[] = "--access-token", a2[] = "s3cret-argv";
	char b1[] = "--access-token=s3cret-eq";
	char *argv1[] = { a0, a1, a2, NULL }, *argv2[] = { a0, b1, NULL };
	char envline[] = "EXECD_ACCESS_TOKEN=s3cret-env";
	struct conf c;

	clear_env();
	err[0] = '\0';
	T_EQ_INT(conf_parse(&c, 3, argv1, err, sizeof(err)), 0);
	T_EQ_STR(c.token, "s3cret-argv");
	T_EQ_STR(a1, "--access-token");
	for (size_t i = 0; i < sizeof(a2) - 1; i++)
		T_EQ_INT(a2[i], 0);
	conf_reset(&c);
	T_EQ_INT(conf_parse(&c, 2, argv2, err, sizeof(err)), 0);
	T_EQ_STR(c.token, "s3cret-eq");
	T_OK(strncmp(b1, "--access-token=", 15) == 0);
	T_EQ_INT(b1[15], 0);
	T_OK(memmem(b1, sizeof(b1), "s3cret", 6) == NULL);
	conf_reset(&c);
	/* putenv: the string itself is the environment's, as at start. */
	T_EQ_INT(putenv(envline), 0);
	T_EQ_INT(conf_parse(&c, 1, argv1, err, sizeof(err)), 0);
	T_EQ_STR(c.token, "s3cret-env");
	T_OK(memmem(envline, sizeof(envline), "s3cret", 6) == NULL);
	T_OK(getenv("EXECD_ACCESS_TOKEN") == NULL);
	conf_reset(&c);
	clear_env();
}

/* A token file: its first line, without the newline; errors name it. */
static void
test_token_file(void)
{
	char path[] = "/tmp/t_conf_token.XXXXXX", envv[64];
	struct conf c;
	int fd;

	clear_env();
	fd = mkstemp(path);
	T_OK(fd >= 0);
	T_OK(write(fd, "file-token\r\nsecond line\n", 25) == 25);
	close(fd);
	T_EQ_INT(parse(&c, "--access-token-file", path, NULL), 0);
	T_EQ_STR(c.token, "file-token");
	T_EQ_STR(c.addr, "0.0.0.0");
	conf_reset(&c);
	snprintf(envv, sizeof(envv), "%s", path);
	setenv("EXECD_ACCESS_TOKEN_FILE", envv, 1);
	T_EQ_INT(parse(&c, NULL), 0);
	T_EQ_STR(c.token, "file-token");
	conf_reset(&c);
	/* The flag is over the environment, whichever form each takes. */
	T_EQ_INT(parse(&c, "--access-token", "flag", NULL), 0);
	T_EQ_STR(c.token, "flag");
	conf_reset(&c);
	clear_env();
	fd = open(path, O_WRONLY | O_TRUNC);
	T_OK(write(fd, "\n", 1) == 1);
	close(fd);
	T_EQ_INT(parse(&c, "--access-token-file", path, NULL), -EINVAL);
	T_OK(strstr(err, path) != NULL && strstr(err, "empty") != NULL);
	unlink(path);
	T_EQ_INT(parse(&c, "--access-token-file", path, NULL), -EINVAL);
	T_OK(strstr(err, path) != NULL);
	T_OK(strstr(err, "No such file") != NULL);
}

/* --kernel-fork: on (the default), kernels, off; nothing else. */
static void
test_kernel_fork(void)
{
	struct conf c;

	clear_env();
	T_EQ_INT(parse(&c, NULL), 0);
	T_EQ_INT(c.kernel_fork_off, 0);
	T_EQ_INT(c.kernel_fork_kernels, 0);
	conf_reset(&c);
	T_EQ_INT(parse(&c, "--kernel-fork", "kernels", NULL), 0);
	T_EQ_INT(c.kernel_fork_off, 0);
	T_EQ_INT(c.kernel_fork_kernels, 1);
	conf_reset(&c);
	setenv("EXECD_KERNEL_FORK", "off", 1);
	T_EQ_INT(parse(&c, NULL), 0);
	T_EQ_INT(c.kernel_fork_off, 1);
	T_EQ_INT(c.kernel_fork_kernels, 0);
	conf_reset(&c);
	clear_env();
	T_EQ_INT(parse(&c, "--kernel-fork", "light", NULL), -EINVAL);
	T_OK(strstr(err, "kernel-fork") != NULL);
	conf_reset(&c);
}

static const struct t_case cases[] = {
	{ "defaults", test_defaults },
	{ "spellings", test_spellings },
	{ "listen", test_listen },
	{ "listen invalid", test_listen_invalid },
	{ "token and address", test_token_addr },
	{ "environment", test_env },
	{ "environment listen", test_env_listen },
	{ "numbers", test_numbers },
	{ "size negative behind blank", test_size_negative_blank },
	{ "sizes", test_sizes },
	{ "log levels", test_log_levels },
	{ "bad arguments", test_bad_args },
	{ "words after the options", test_words_after_options },
	{ "ignored options", test_ignored },
	{ "help and version", test_help_version },
	{ "usage", test_usage },
	{ "reparse after an error", test_reparse_after_error },
	{ "token wiped from argv and environment",
	    test_token_wiped_from_argv_and_environment },
	{ "token file", test_token_file },
	{ "kernel fork", test_kernel_fork },
};

int
main(void)
{
	return T_RUN(cases);
}
