/*
 * t_limits.c -- unit tests for limits.c and the --limit and --user
 * options of conf.c.
 *
 * Covered: every key from text, sizes with each binary unit and bare
 * bytes, "unlimited", the smallest values, refusals (unknown key, unit on
 * a count, junk, overflow, 0 where it would keep a job from starting)
 * with the key named in the message, the request's JSON object (numbers,
 * strings, wrong types, negative numbers), limits_for over defaults,
 * limits_over, the text a limit is reported with, and --limit per kind,
 * for all kinds and per language, and --user by name and by number.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/config/conf.h"
#include "../../execd/process/limits.h"
#include "../t.h"

static void
test_set_text(void)
{
	struct limits l = { 0 };
	char err[256];

	T_EQ_INT(limits_set(&l, "memory", "256MiB", err, sizeof(err)), 0);
	T_OK(l.memory == 256ULL << 20);
	T_EQ_INT(limits_set(&l, "memory", "1GiB", err, sizeof(err)), 0);
	T_OK(l.memory == 1ULL << 30);
	T_EQ_INT(limits_set(&l, "memory", "1048576", err, sizeof(err)), 0);
	T_OK(l.memory == 1048576);
	T_EQ_INT(limits_set(&l, "memory", "2g", err, sizeof(err)), 0);
	T_OK(l.memory == 2ULL << 30);
	T_EQ_INT(limits_set(&l, "file_size", "64K", err, sizeof(err)), 0);
	T_OK(l.file_size == 65536);
	T_EQ_INT(limits_set(&l, "file_size", "1 TiB", err, sizeof(err)), 0);
	T_OK(l.file_size == 1ULL << 40);
	T_EQ_INT(limits_set(&l, "file_size", "0", err, sizeof(err)), 0);
	T_OK(l.file_size == 0);
	T_EQ_INT(limits_set(&l, "processes", "64", err, sizeof(err)), 0);
	T_OK(l.processes == 64);
	T_EQ_INT(limits_set(&l, "cpu_seconds", "30", err, sizeof(err)), 0);
	T_OK(l.cpu_seconds == 30);
	T_EQ_INT(limits_set(&l, "open_files", "1024", err, sizeof(err)), 0);
	T_OK(l.open_files == 1024);
	T_EQ_INT(limits_set(&l, "core", "0", err, sizeof(err)), 0);
	T_OK(l.core == 0);
	T_EQ_INT(limits_set(&l, "core", "unlimited", err, sizeof(err)), 0);
	T_OK(l.core == UINT64_MAX);
	T_EQ_INT(l.set, LIMITS_F_MEMORY | LIMITS_F_FILE_SIZE |
	    LIMITS_F_PROCESSES | LIMITS_F_CPU | LIMITS_F_OPEN_FILES |
	    LIMITS_F_CORE);
}

static void
test_set_bad(void)
{
	static const struct {
		const char *key, *text;
	} bad[] = {
		{ "memory", "" }, { "memory", "abc" }, { "memory", "-1" },
		{ "memory", "12XB" }, { "memory", "1MiBs" }, { "memory", "0" },
		{ "memory", "1000" },		/* under 1 MiB */
		{ "memory", "99999999999999999999" },
		{ "memory", "9999999T" }, { "processes", "64K" },
		{ "processes", "0" }, { "cpu_seconds", "1.5" },
		{ "cpu_seconds", "0" }, { "open_files", "2" },
		{ "file_size", " 5" }, { "core", "5 " },
	};
	struct limits l = { 0 };
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		T_EQ_INT(limits_set(&l, bad[i].key, bad[i].text, err,
		    sizeof(err)), -EINVAL);
		T_OK(strstr(err, bad[i].key) != NULL);
	}
	T_EQ_INT(l.set, 0);
	T_EQ_INT(limits_set(&l, "mem", "1", err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "unknown limit 'mem'") != NULL);
}

static int
from(const char *text, struct limits *l, char *err, size_t errlen)
{
	json_t *o = json_loads(text, 0, NULL);
	int rc;

	T_OK(o != NULL);
	memset(l, 0, sizeof(*l));
	rc = limits_from_json(l, o, err, errlen);
	json_decref(o);
	return rc;
}

static void
test_json(void)
{
	struct limits l;
	char err[256];

	T_EQ_INT(from("{\"memory\": \"256MiB\", \"processes\": 64, "
	    "\"cpu_seconds\": 30, \"file_size\": \"1GiB\", "
	    "\"open_files\": 1024, \"core\": 0}", &l, err, sizeof(err)), 0);
	T_OK(l.memory == 256ULL << 20 && l.processes == 64 &&
	    l.cpu_seconds == 30 && l.file_size == 1ULL << 30 &&
	    l.open_files == 1024 && l.core == 0);
	T_EQ_INT(from("{}", &l, err, sizeof(err)), 0);
	T_EQ_INT(l.set, 0);
	T_EQ_INT(from("{\"memory\": 1073741824}", &l, err, sizeof(err)), 0);
	T_OK(l.memory == 1ULL << 30 && l.set == LIMITS_F_MEMORY);
	T_EQ_INT(from("{\"swap\": 1}", &l, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "'swap'") != NULL);
	T_EQ_INT(from("{\"processes\": -1}", &l, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "'processes'") != NULL);
	T_EQ_INT(from("{\"processes\": 1.5}", &l, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "'processes'") != NULL);
	T_EQ_INT(from("{\"memory\": true}", &l, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "'memory'") != NULL);
	T_EQ_INT(from("{\"memory\": \"lots\"}", &l, err, sizeof(err)),
	    -EINVAL);
	T_OK(strstr(err, "'memory'") != NULL);
	T_EQ_INT(from("[1]", &l, err, sizeof(err)), -EINVAL);
}

static void
test_over_format(void)
{
	struct limits a = { 0 }, b = { 0 };
	char err[128], buf[64];

	T_EQ_INT(limits_set(&a, "memory", "1GiB", err, sizeof(err)), 0);
	T_EQ_INT(limits_set(&a, "processes", "100", err, sizeof(err)), 0);
	T_EQ_INT(limits_set(&b, "memory", "256MiB", err, sizeof(err)), 0);
	T_EQ_INT(limits_set(&b, "cpu_seconds", "30", err, sizeof(err)), 0);
	limits_over(&a, &b);
	T_OK(a.memory == 256ULL << 20 && a.processes == 100 &&
	    a.cpu_seconds == 30);
	limits_format(&a, LIMITS_F_MEMORY, buf, sizeof(buf));
	T_EQ_STR(buf, "256 MiB");
	limits_format(&a, LIMITS_F_PROCESSES, buf, sizeof(buf));
	T_EQ_STR(buf, "100");
	limits_format(&a, LIMITS_F_CPU, buf, sizeof(buf));
	T_EQ_STR(buf, "30 s");
	limits_format(&a, LIMITS_F_CORE, buf, sizeof(buf));
	T_EQ_STR(buf, "none");
	T_EQ_INT(limits_set(&a, "file_size", "1000", err, sizeof(err)), 0);
	limits_format(&a, LIMITS_F_FILE_SIZE, buf, sizeof(buf));
	T_EQ_STR(buf, "1000 B");
	T_EQ_STR(limits_key_name(LIMITS_F_CPU), "cpu_seconds");
}

/* A request body's "limits" over defaults. */
static void
test_for(void)
{
	struct limits d = { 0 }, l;
	char err[256];
	json_t *b;

	T_EQ_INT(limits_set(&d, "core", "0", err, sizeof(err)), 0);
	T_EQ_INT(limits_set(&d, "memory", "1GiB", err, sizeof(err)), 0);
	b = json_loads("{\"command\": \"x\", \"limits\": {\"memory\": "
	    "\"64MiB\"}}", 0, NULL);
	T_EQ_INT(limits_for(&l, &d, b, err, sizeof(err)), 0);
	T_OK(l.memory == 64ULL << 20 && l.core == 0 &&
	    l.set == (LIMITS_F_MEMORY | LIMITS_F_CORE));
	json_decref(b);
	b = json_loads("{\"limits\": null}", 0, NULL);
	T_EQ_INT(limits_for(&l, &d, b, err, sizeof(err)), 0);
	T_OK(l.memory == 1ULL << 30);
	json_decref(b);
	b = json_loads("{}", 0, NULL);
	T_EQ_INT(limits_for(&l, NULL, b, err, sizeof(err)), 0);
	T_EQ_INT(l.set, 0);
	json_decref(b);
	b = json_loads("{\"limits\": {\"cpu\": 1}}", 0, NULL);
	T_EQ_INT(limits_for(&l, &d, b, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "'cpu'") != NULL);
	json_decref(b);
}

static int
parse(struct conf *c, const char *a1, const char *a2, char *err,
    size_t errlen)
{
	char b0[8] = "execd", b1[128] = "", b2[128] = "";
	char *argv[] = { b0, b1, b2, NULL };

	snprintf(b1, sizeof(b1), "%s", a1 ? a1 : "");
	snprintf(b2, sizeof(b2), "%s", a2 ? a2 : "");
	return conf_parse(c, a2 ? 3 : a1 ? 2 : 1, argv, err, errlen);
}

static void
test_conf_limit(void)
{
	struct conf c;
	struct limits l;
	char err[256];

	unsetenv("EXECD_LIMITS");
	unsetenv("EXECD_USER");
	T_EQ_INT(parse(&c, NULL, NULL, err, sizeof(err)), 0);
	for (int k = 0; k < LIMITS_NKINDS; k++)
		T_OK(c.limits[k].set == LIMITS_F_CORE && c.limits[k].core == 0);
	T_OK(!c.user.set);
	conf_reset(&c);
	T_EQ_INT(parse(&c, "--limit=command.memory=256MiB,processes=64",
	    "--limit=context.python.memory=1GiB", err, sizeof(err)), 0);
	T_OK(c.limits[LIMITS_COMMAND].memory == 256ULL << 20);
	T_OK(!(c.limits[LIMITS_SESSION].set & LIMITS_F_MEMORY));
	for (int k = 0; k < LIMITS_NKINDS; k++)
		T_OK(c.limits[k].processes == 64);
	T_EQ_INT(c.nlang_limits, 1);
	conf_limits(&c, LIMITS_CONTEXT, "python", &l);
	T_OK(l.memory == 1ULL << 30 && l.processes == 64 &&
	    (l.set & LIMITS_F_CORE));
	conf_limits(&c, LIMITS_CONTEXT, "r", &l);
	T_OK(!(l.set & LIMITS_F_MEMORY));
	conf_reset(&c);
	setenv("EXECD_LIMITS", "pty.open_files=100", 1);
	T_EQ_INT(parse(&c, "--limit", "pty.open_files=200", err,
	    sizeof(err)), 0);
	T_OK(c.limits[LIMITS_PTY].open_files == 200);
	conf_reset(&c);
	unsetenv("EXECD_LIMITS");
	T_EQ_INT(parse(&c, "--limit=job.memory=1G", NULL, err, sizeof(err)),
	    -EINVAL);
	T_OK(strstr(err, "job.memory") != NULL);
	T_EQ_INT(parse(&c, "--limit=command.swap=1G", NULL, err,
	    sizeof(err)), -EINVAL);
	T_OK(strstr(err, "swap") != NULL);
	T_EQ_INT(parse(&c, "--limit=memory", NULL, err, sizeof(err)),
	    -EINVAL);
}

static void
test_conf_user(void)
{
	struct conf c;
	char err[256];

	T_EQ_INT(parse(&c, "--user=root", NULL, err, sizeof(err)), 0);
	T_OK(c.user.set && c.user.uid == 0 && c.user.gid == 0);
	T_EQ_STR(c.user.name, "root");
	T_OK(c.user.ngroups >= 1 && c.user.groups[0] == 0);
	conf_reset(&c);
	T_EQ_INT(parse(&c, "--user=0", NULL, err, sizeof(err)), 0);
	T_EQ_STR(c.user.name, "root");
	conf_reset(&c);
	T_EQ_INT(parse(&c, "--user=no-such-user-here", NULL, err,
	    sizeof(err)), -EINVAL);
	T_OK(strstr(err, "no-such-user-here") != NULL);
}

static const struct t_case cases[] = {
	{ "keys from text", test_set_text },
	{ "bad values name the key", test_set_bad },
	{ "request object", test_json },
	{ "over and format", test_over_format },
	{ "defaults and a request", test_for },
	{ "--limit", test_conf_limit },
	{ "--user", test_conf_user },
};

int
main(void)
{
	return T_RUN(cases);
}
