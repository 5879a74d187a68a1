/*
 * t_policy.c -- unit tests for policy.c, the YAML policy file.
 *
 * Covered: a file setting options of every sort (numbers, sizes, names,
 * YAML booleans for yes/no options, '-' or '_' in keys) and limits per
 * kind and per language; empty files, comment-only files and a bare
 * "---"; every error kind with the exact message and its line and
 * column (unknown key, a list or mapping where one value is due, a
 * value out of range, a key given twice, an alias, a file that is not a
 * mapping, two documents, broken YAML, no value, a NUL in a value, a
 * file that names another, every wrong shape under limits); the
 * precedence flag > environment > file > default through conf_parse,
 * the file named by --config or EXECD_CONFIG; conf_reload keeping the
 * token and reading the file again; and --print-config's output read
 * back and printed again to the same text, with no token in it;
 * mcp_servers read (command, env, cwd, url) and each of its errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../execd/config/conf.h"
#include "../../execd/config/policy.h"
#include "../t.h"
#include "../t_tmp.h"

static char	 err[512];
static char	*dir;
static char	 arena[1 << 14];	/* argv strings: conf keeps argv */
static size_t	 arena_used;

/* A writable copy of s that lives as long as the test binary. */
static char *
keep(const char *s)
{
	size_t n = strlen(s) + 1;

	if (arena_used + n > sizeof(arena))
		exit(1);
	memcpy(arena + arena_used, s, n);
	arena_used += n;
	return arena + arena_used - n;
}

/* Defaults only: no variable, no argument. */
static void
defaults(struct conf *c)
{
	char *argv[] = { keep("execd"), NULL };

	unsetenv("EXECD_CONFIG");
	unsetenv("EXECD_PORT");
	unsetenv("EXECD_SECCOMP");
	unsetenv("EXECD_LIMITS");
	unsetenv("EXECD_ACCESS_TOKEN");
	unsetenv("EXECD_ACCESS_TOKEN_FILE");
	if (conf_parse(c, 1, argv, err, sizeof(err)) != 0) {
		fprintf(stderr, "conf_parse: %s\n", err);
		exit(1);
	}
}

/* policy_parse over the defaults, as "f.yaml". */
static int
load(struct conf *c, const char *text)
{
	defaults(c);
	err[0] = '\0';
	return policy_parse(c, "f.yaml", text, strlen(text), err,
	    sizeof(err));
}

/* A file in dir with text; its path (a static buffer of t_path). */
static const char *
file(const char *name, const char *text)
{
	const char *p = t_path(dir, name);

	t_spit(p, text, strlen(text), 0600);
	return p;
}

static void
test_options(void)
{
	struct conf c;

	T_EQ_INT(load(&c, "# a comment\nport: 8080\nmax_body_size: 2MiB\n"
	    "seccomp: strict\nno_new_privs: false\nkernel-transport: tcp\n"
	    "pool: \"python=1\"\nuser: \"\"\n"), 0);
	T_EQ_STR(err, "");
	T_EQ_INT(c.port, 8080);
	T_EQ_INT(c.max_body, 2 << 20);
	T_EQ_INT(c.sandbox.profile, SANDBOX_STRICT);
	T_OK(!c.sandbox.no_new_privs);
	T_EQ_INT(c.kernel_transport, KERNEL_TCP);
	T_EQ_STR(c.pool, "python=1");
	conf_reset(&c);
	/* YAML's other booleans, and yes|no written as strings. */
	T_EQ_INT(load(&c, "no_new_privs: On\n"), 0);
	T_OK(c.sandbox.no_new_privs);
	conf_reset(&c);
	T_EQ_INT(load(&c, "no_new_privs: 'no'\n"), 0);
	T_OK(!c.sandbox.no_new_privs);
	conf_reset(&c);
	/* A quoted "true" is text, which the option refuses. */
	T_EQ_INT(load(&c, "no_new_privs: \"true\"\n"), -EINVAL);
	T_EQ_STR(err, "f.yaml:1:15: no_new_privs: invalid value for "
	    "--no-new-privs: 'true'");
	conf_reset(&c);
}

static void
test_limits(void)
{
	struct limits l;
	struct conf c;

	T_EQ_INT(load(&c, "limits:\n"
	    "  command: {memory: 256MiB, processes: 64}\n"
	    "  context: {memory: 1GiB}\n"
	    "  pty:\n    open_files: 100\n"
	    "  languages: {python: {cpu_seconds: 600}, r: {core: unlimited}}\n"
	    "user: root\n"), 0);
	T_EQ_STR(err, "");
	T_EQ_INT(c.limits[LIMITS_COMMAND].memory, 256 << 20);
	T_EQ_INT(c.limits[LIMITS_COMMAND].processes, 64);
	T_OK(c.limits[LIMITS_COMMAND].set & LIMITS_F_CORE);	/* default */
	T_EQ_INT(c.limits[LIMITS_CONTEXT].memory, 1 << 30);
	T_EQ_INT(c.limits[LIMITS_PTY].open_files, 100);
	T_OK(!(c.limits[LIMITS_SESSION].set & LIMITS_F_MEMORY));
	conf_limits(&c, LIMITS_CONTEXT, "python", &l);
	T_EQ_INT(l.memory, 1 << 30);
	T_EQ_INT(l.cpu_seconds, 600);
	conf_limits(&c, LIMITS_CONTEXT, "r", &l);
	T_OK(l.core == UINT64_MAX);
	T_OK(c.user.set);
	T_EQ_INT(c.user.uid, 0);
	conf_reset(&c);
}

static void
test_empty(void)
{
	static const char *const texts[] = { "", "# nothing\n", "---\n",
	    "---\n...\n", "{}\n", "~\n" };
	struct conf c;

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		T_EQ_INT(load(&c, texts[i]), 0);
		T_EQ_INT(c.port, EXECD_PORT);
		conf_reset(&c);
	}
}

/* Every error: its exact message, file, line and column. */
static void
test_errors(void)
{
	static const struct {
		const char	*text, *want;
	} cases[] = {
		{ "port: 1\nprot: 2\n", "f.yaml:2:1: unknown key 'prot'" },
		{ "config: other.yaml\n", "f.yaml:1:1: unknown key 'config' "
		    "(a file cannot name another)" },
		{ "help: yes\n", "f.yaml:1:1: unknown key 'help'" },
		{ "port: [1, 2]\n",
		    "f.yaml:1:7: port wants a single value, not a list" },
		{ "port:\n  a: 1\n",
		    "f.yaml:2:3: port wants a single value, not a mapping" },
		{ "port: 70000\n", "f.yaml:1:7: port: invalid value for "
		    "--port: '70000'" },
		{ "max_connections: 0\n", "f.yaml:1:18: max_connections: "
		    "invalid value for --max-connections: '0'" },
		{ "seccomp: loose\n", "f.yaml:1:10: seccomp: invalid value "
		    "for --seccomp: 'loose'" },
		{ "port: 1\nport: 2\n",
		    "f.yaml:2:1: 'port' given twice (first at line 1)" },
		{ "max_body_size: 1M\nmax-body-size: 2M\n",
		    "f.yaml:2:1: 'max-body-size' given twice (first at line 1)" },
		{ "port: &p 1\nmax_connections: *p\n",
		    "f.yaml:2:18: aliases (*name) are not allowed" },
		{ "- port\n", "f.yaml:1:1: the file must be a mapping of "
		    "options (key: value), not a list" },
		{ "port\n", "f.yaml:1:1: the file must be a mapping of "
		    "options (key: value), not a single value" },
		{ "port: 1\n---\nport: 2\n", "f.yaml:2:1: one document only" },
		{ "port: \"1\n", "f.yaml:2:1: found unexpected end of stream "
		    "while scanning a quoted scalar" },
		{ "port:\n\t1\n", "f.yaml:2:1: found character that cannot "
		    "start any token while scanning for the next token" },
		{ "port:\n", "f.yaml:1:6: port has no value" },
		{ "port: ~\n", "f.yaml:1:7: port has no value" },
		{ "runtime_dir: \"/a\\0b\"\n",
		    "f.yaml:1:14: runtime_dir: a NUL character in the value" },
		{ "[1]: 2\n", "f.yaml:1:1: a key must be a name, not a list" },
		{ "limits: 1\n", "f.yaml:1:9: limits wants a mapping of "
		    "command, session, context, pty and languages, not a "
		    "single value" },
		{ "limits:\n  kernel: {}\n", "f.yaml:2:3: unknown key "
		    "'limits.kernel' (command, session, context, pty, "
		    "languages)" },
		{ "limits:\n  command: {}\n  command: {}\n",
		    "f.yaml:3:3: 'limits.command' given twice" },
		{ "limits: {command: 1}\n", "f.yaml:1:19: limits.command wants "
		    "a mapping of limits (memory, processes, cpu_seconds, "
		    "file_size, open_files, core), not a single value" },
		{ "limits: {command: {ram: 1}}\n", "f.yaml:1:20: unknown limit "
		    "'ram' (memory, processes, cpu_seconds, file_size, "
		    "open_files, core)" },
		{ "limits: {command: {memory: lots}}\n", "f.yaml:1:28: "
		    "limits.command.memory: limit 'memory': bad value 'lots' "
		    "(bytes, or a number with K, M, G or T (binary: KiB ...), "
		    "not 0)" },
		{ "limits: {pty: {processes: 0}}\n", "f.yaml:1:27: "
		    "limits.pty.processes: limit 'processes': bad value '0' "
		    "(a whole number, not 0)" },
		{ "limits: {pty: {processes: 1,2}}\n", "f.yaml:1:29: unknown "
		    "limit '2' (memory, processes, cpu_seconds, file_size, "
		    "open_files, core)" },
		{ "limits: {pty: {processes: \"1,2\"}}\n", "f.yaml:1:27: "
		    "limits.pty.processes: limit 'processes': bad value '1,2' "
		    "(a whole number, not 0)" },
		{ "limits: {pty: {core: 0, core: 1}}\n",
		    "f.yaml:1:25: 'limits.pty.core' given twice" },
		{ "limits: {session: {memory: [1]}}\n", "f.yaml:1:28: "
		    "limits.session.memory wants a single value, not a list" },
		{ "limits: {languages: [python]}\n", "f.yaml:1:21: "
		    "limits.languages wants a mapping of language names, not "
		    "a list" },
		{ "limits: {languages: {\"py thon\": {}}}\n", "f.yaml:1:22: a "
		    "language must be a name (letters, digits, _ + -), not "
		    "this" },
		{ "limits: {languages: {python: {core: 0}, python: {core: 1}}}"
		    "\n", "f.yaml:1:41: 'limits.languages.python' given "
		    "twice" },
		{ "limits: {languages: {python: {cpu_seconds: x}}}\n",
		    "f.yaml:1:44: limits.languages.python.cpu_seconds: limit "
		    "'cpu_seconds': bad value 'x' (a whole number, not 0)" },
		{ "limits: {}\nlimits: {}\n",
		    "f.yaml:2:1: 'limits' given twice (first at line 1)" },
	};
	struct conf c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		T_EQ_INT(load(&c, cases[i].text), -EINVAL);
		T_EQ_STR(err, cases[i].want);
		conf_reset(&c);
	}
}

static void
test_unreadable(void)
{
	struct conf c;
	const char *p = t_path(dir, "none.yaml");
	char want[600];

	defaults(&c);
	T_EQ_INT(policy_load(&c, p, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: No such file or directory", p);
	T_EQ_STR(err, want);
	conf_reset(&c);
}

/* flag > environment > file > default, through conf_parse. */
static void
test_precedence(void)
{
	const char *p = file("prec.yaml", "port: 1111\nseccomp: off\n"
	    "grace_period: 7\nlimits: {command: {memory: 2MiB, "
	    "processes: 9}}\n");
	char *argv[] = { keep("execd"), keep("--config"), keep(p),
	    keep("--port"), keep("3333"), keep("--limit"),
	    keep("command.processes=11"), NULL };
	char *argv_env[] = { keep("execd"), NULL };
	struct conf c;

	defaults(&c);
	conf_reset(&c);
	setenv("EXECD_PORT", "2222", 1);
	setenv("EXECD_SECCOMP", "strict", 1);
	T_EQ_INT(conf_parse(&c, 7, argv, err, sizeof(err)), 0);
	T_EQ_INT(c.port, 3333);				/* flag */
	T_EQ_INT(c.sandbox.profile, SANDBOX_STRICT);	/* environment */
	T_EQ_INT(c.grace_ms, 7);			/* file */
	T_EQ_INT(c.max_conns, 4096);			/* default */
	T_EQ_INT(c.limits[LIMITS_COMMAND].memory, 2 << 20);
	T_EQ_INT(c.limits[LIMITS_COMMAND].processes, 11);
	T_EQ_STR(c.config, p);
	conf_reset(&c);
	/* The file named by EXECD_CONFIG, under the environment. */
	setenv("EXECD_CONFIG", p, 1);
	T_EQ_INT(conf_parse(&c, 1, argv_env, err, sizeof(err)), 0);
	T_EQ_INT(c.port, 2222);
	T_EQ_INT(c.grace_ms, 7);
	T_EQ_INT(c.sandbox.profile, SANDBOX_STRICT);
	conf_reset(&c);
	unsetenv("EXECD_PORT");
	unsetenv("EXECD_SECCOMP");
	T_EQ_INT(conf_parse(&c, 1, argv_env, err, sizeof(err)), 0);
	T_EQ_INT(c.port, 1111);
	T_EQ_INT(c.sandbox.profile, SANDBOX_OFF);
	conf_reset(&c);
	/* A bad file stops conf_parse with its line and column. */
	p = file("bad.yaml", "port: 1\nnope: 2\n");
	setenv("EXECD_CONFIG", p, 1);
	T_EQ_INT(conf_parse(&c, 1, argv_env, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "bad.yaml:2:1: unknown key 'nope'") != NULL);
	conf_reset(&c);
	unsetenv("EXECD_CONFIG");
}

/* SIGHUP's read: the file again, the token as it was. */
static void
test_reload(void)
{
	const char *p = file("reload.yaml", "seccomp: off\n");
	const char *tok = file("token", "s3cret\n");
	char *argv[] = { keep("execd"), keep("--config"), keep(p),
	    keep("--access-token-file"), keep(tok), NULL };
	struct conf c, fresh;

	defaults(&c);
	conf_reset(&c);
	T_EQ_INT(conf_parse(&c, 5, argv, err, sizeof(err)), 0);
	T_EQ_STR(c.token, "s3cret");
	T_EQ_INT(c.sandbox.profile, SANDBOX_OFF);
	file("reload.yaml", "seccomp: strict\nlimits: {pty: {memory: 8M}}\n");
	unlink(tok);	/* entrypoints may remove it once read */
	T_EQ_INT(conf_reload(&c, &fresh, err, sizeof(err)), 0);
	T_EQ_INT(fresh.sandbox.profile, SANDBOX_STRICT);
	T_EQ_INT(fresh.limits[LIMITS_PTY].memory, 8 << 20);
	T_OK(fresh.token == NULL);
	conf_reset(&fresh);
	file("reload.yaml", "seccomp: strict\nlimits: {pty: {memory: 0}}\n");
	T_EQ_INT(conf_reload(&c, &fresh, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "reload.yaml:2:24: limits.pty.memory") != NULL);
	conf_reset(&fresh);
	conf_reset(&c);
}

/* --print-config's text, for c. */
static char *
print(const struct conf *c)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	if (f == NULL)
		exit(1);
	policy_print(c, f);
	fclose(f);
	return out;
}

static void
test_print_round_trip(void)
{
	const char *p = file("rt.yaml", "listen: \"[::1]:0\"\n"
	    "pool: python=1,javascript=2\nruntime_dir: \"/tmp/a b#c\"\n"
	    "capabilities: chown,net_raw\nseccomp_mode: log\n"
	    "limits: {command: {memory: 256MiB, file_size: unlimited}, "
	    "languages: {python: {cpu_seconds: 600}}}\n");
	char *argv[] = { keep("execd"), keep("--config"), keep(p),
	    keep("--access-token"), keep("tok3n"), keep("--limit"),
	    keep("session.processes=5"), NULL };
	char *one, *two;
	struct conf c;

	defaults(&c);
	conf_reset(&c);
	T_EQ_INT(conf_parse(&c, 7, argv, err, sizeof(err)), 0);
	one = print(&c);
	T_OK(strstr(one, "tok3n") == NULL);
	T_OK(strstr(one, "# access_token: never printed\n") != NULL);
	T_OK(strstr(one, "\nlisten: \"[::1]:0\"\n") != NULL);
	T_OK(strstr(one, "\nruntime_dir: \"/tmp/a b#c\"\n") != NULL);
	T_OK(strstr(one, "\n  command: {memory: 268435456, file_size: "
	    "unlimited, core: 0}\n") != NULL);
	T_OK(strstr(one, "\n  session: {processes: 5, core: 0}\n") != NULL);
	T_OK(strstr(one, "\n    python: {cpu_seconds: 600}\n") != NULL);
	conf_reset(&c);
	/* Read back (no flags now): the same text again. */
	p = file("rt2.yaml", one);
	T_EQ_INT(load(&c, one), 0);
	T_EQ_STR(err, "");
	two = print(&c);
	T_EQ_STR(two, one);
	T_EQ_INT(c.port, 0);
	T_EQ_INT(c.limits[LIMITS_SESSION].processes, 5);
	T_OK(c.sandbox.log_only);
	conf_reset(&c);
	free(one);
	free(two);
	/* The defaults, likewise. */
	defaults(&c);
	one = print(&c);
	conf_reset(&c);
	T_EQ_INT(load(&c, one), 0);
	two = print(&c);
	T_EQ_STR(two, one);
	conf_reset(&c);
	free(one);
	free(two);
}

/* mcp_servers: read, checked, printed back. */
static void
test_mcp_servers(void)
{
	static const struct {
		const char	*text, *want;
	} bad[] = {
		{ "mcp_servers: {a__b: {command: [x]}}\n", "f.yaml:1:15: an "
		    "MCP server's name is 1 to 31 of a-z, 0-9, _ and - without "
		    "\"__\", not 'a__b'" },
		{ "mcp_servers: {a: {url: \"http://10.0.0.1:80/\"}}\n",
		    "f.yaml:1:24: mcp_servers.a.url: an MCP server's url must "
		    "name a loopback host with a port (127.0.0.1:PORT, "
		    "localhost:PORT or [::1]:PORT)" },
		{ "mcp_servers: {a: {url: \"http://127.0.0.1:0/\"}}\n",
		    "f.yaml:1:24: mcp_servers.a.url: an MCP server's url needs "
		    "a port from 1 to 65535, then a path or nothing" },
		{ "mcp_servers: {a: {}}\n", "f.yaml:1:15: mcp_servers.a needs "
		    "either a command or a url (not both)" },
		{ "mcp_servers: {a: {command: []}}\n", "f.yaml:1:29: "
		    "mcp_servers.a.command: an empty list (it needs the "
		    "program at least)" },
		{ "mcp_servers: {a: {command: [x], cwd: rel}}\n",
		    "f.yaml:1:38: mcp_servers.a.cwd: an absolute path" },
		{ "mcp_servers: {a: {command: [x]}, a: {command: [y]}}\n",
		    "f.yaml:1:34: 'mcp_servers.a' given twice" },
		{ "mcp_servers: {a: {url: \"http://[::1]:9\", env: {}}}\n",
		    "f.yaml:1:15: mcp_servers.a: env and cwd are for a "
		    "command, not a url" },
	};
	struct conf c;

	T_EQ_INT(load(&c, "mcp_servers:\n  t-1:\n    command: [node, "
	    "s.mjs]\n    env: {A: b, E: }\n    cwd: /tmp\n  w:\n    url: "
	    "http://localhost:8080/mcp\n"), 0);
	T_EQ_INT(c.nmcp_servers, 2);
	T_EQ_STR(c.mcp_servers[0].name, "t-1");
	T_EQ_STR(c.mcp_servers[0].argv[1], "s.mjs");
	T_OK(c.mcp_servers[0].argv[2] == NULL);
	T_EQ_STR(c.mcp_servers[0].env[0], "A=b");
	T_EQ_STR(c.mcp_servers[0].env[1], "E=");
	T_EQ_STR(c.mcp_servers[0].cwd, "/tmp");
	T_EQ_STR(c.mcp_servers[1].url, "http://localhost:8080/mcp");
	conf_reset(&c);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		T_EQ_INT(load(&c, bad[i].text), -EINVAL);
		T_EQ_STR(err, bad[i].want);
		conf_reset(&c);
	}
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "options", test_options },
		{ "limits", test_limits },
		{ "empty", test_empty },
		{ "errors", test_errors },
		{ "unreadable", test_unreadable },
		{ "precedence", test_precedence },
		{ "reload", test_reload },
		{ "print_round_trip", test_print_round_trip },
		{ "mcp_servers", test_mcp_servers },
	};
	int rc;

	dir = t_tmpdir();
	rc = T_RUN(cases);
	t_tmpdir_free(dir);
	return rc;
}
