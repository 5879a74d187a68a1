/*
 * t_lifecycle.c -- lifecycle hooks' configuration: cron schedules parsed
 * and their next times (robfig's rules: ranges, steps, names, * in a day
 * field, descriptors, @every), upstream's messages for bad ones, and a
 * configuration read back from its own JSON.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "../../execd/domain/lifecycle.h"
#include "../t.h"

/* 2026-01-01T00:00:00Z, a Thursday. */
#define T0	1767225600LL

/* The next time of spec (forced to UTC) after t, or -2 if it is refused. */
static long long
next(const char *spec, long long t)
{
	struct lifecycle_cron c;
	char err[256];

	if (lifecycle_cron_parse(spec, &c, err, sizeof(err)) < 0)
		return -2;
	c.utc = true;
	return lifecycle_cron_next(&c, t);
}

/* The message of refusing spec ("" when it is accepted). */
static const char *
cron_err(const char *spec)
{
	static char err[256];
	struct lifecycle_cron c;

	err[0] = '\0';
	(void)lifecycle_cron_parse(spec, &c, err, sizeof(err));
	return err;
}

static void
t_next(void)
{
	T_EQ_INT(next("*/15 * * * *", T0), T0 + 15 * 60);
	T_EQ_INT(next("* * * * *", T0 + 30), T0 + 60);
	T_EQ_INT(next("0 9 * * mon-fri", T0), T0 + 9 * 3600);
	/* Saturday the 3rd and Sunday the 4th are skipped */
	T_EQ_INT(next("0 9 * * MON-FRI", T0 + 2 * 86400 + 10 * 3600),
	    T0 + 4 * 86400 + 9 * 3600);
	/* both day fields given: either matches (Friday the 2nd first) */
	T_EQ_INT(next("0 0 13 * 5", T0), T0 + 86400);
	/* one of them *: the other decides alone, so the 13th */
	T_EQ_INT(next("0 0 13 * *", T0), T0 + 12 * 86400);
	T_EQ_INT(next("0 0 1 jan *", T0), T0 + 365 * 86400LL);
	T_EQ_INT(next("@hourly", T0 + 1), T0 + 3600);
	T_EQ_INT(next("TZ=UTC @daily", T0), T0 + 86400);
	T_EQ_INT(next("CRON_TZ=Etc/UTC 30 1 * * *", T0), T0 + 5400);
	T_EQ_INT(next("@every 90s", T0), T0 + 90);
	T_EQ_INT(next("@every 1m30s", T0), T0 + 90);
	T_EQ_INT(next("5/20 * * * *", T0), T0 + 5 * 60);
	T_EQ_INT(next("5/20 * * * *", T0 + 5 * 60), T0 + 25 * 60);
	T_EQ_INT(next("1,2,58-59 * * * *", T0 + 2 * 60), T0 + 58 * 60);
	T_EQ_INT(next("0 0 31 2 *", T0), -1);	/* never */
}

static void
t_bad(void)
{
	T_EQ_STR(cron_err("*/15 * * * *"), "");
	T_EQ_STR(cron_err("* * * *"),
	    "expected exactly 5 fields, found 4: * * * *");
	T_EQ_STR(cron_err("0 0 * * * *"),
	    "expected exactly 5 fields, found 6: 0 0 * * * *");
	T_EQ_STR(cron_err("60 * * * *"),
	    "end of range (60) above maximum (59): 60");
	T_EQ_STR(cron_err("* * 0 * *"),
	    "beginning of range (0) below minimum (1): 0");
	T_EQ_STR(cron_err("5-1 * * * *"),
	    "beginning of range (5) beyond end of range (1): 5-1");
	T_EQ_STR(cron_err("*/0 * * * *"),
	    "step of range should be a positive number: */0");
	T_EQ_STR(cron_err("1/2/3 * * * *"), "too many slashes: 1/2/3");
	T_EQ_STR(cron_err("1-2-3 * * * *"), "too many hyphens: 1-2-3");
	T_EQ_STR(cron_err("x * * * *"), "failed to parse int from x");
	T_EQ_STR(cron_err("* * * * 7"),
	    "end of range (7) above maximum (6): 7");
	T_EQ_STR(cron_err("@fortnightly"),
	    "unrecognized descriptor: @fortnightly");
	T_EQ_STR(cron_err("@every soon"),
	    "failed to parse duration @every soon");
	T_EQ_STR(cron_err("TZ=Europe/Paris @daily"), "unsupported time zone "
	    "Europe/Paris (execd knows UTC and Local)");
}

static void
t_config(void)
{
	const char *text = " {\"preStart\":{\"command\":[\"a\",\"b c\"]},"
	    "\"periodic\":[{\"name\":\" n \",\"schedule\":\" @every 2s \","
	    "\"command\":[\"x\"],\"timeoutSeconds\":5}],\"other\":1} ";
	struct lifecycle *l, *again;
	char err[256];
	json_t *v;

	T_EQ_INT(lifecycle_parse_text(text, strlen(text), &l, err,
	    sizeof(err)), 0);
	T_EQ_STR(l->pre_start->argv[1], "b c");
	T_OK(l->pre_start->argv[2] == NULL);
	T_EQ_INT((long long)l->pre_start->timeout_s, LIFECYCLE_TIMEOUT_S);
	T_EQ_INT((long long)l->nperiodic, 1);
	T_EQ_STR(l->periodic[0].name, "n");
	T_EQ_STR(l->periodic[0].schedule, "@every 2s");
	T_EQ_INT((long long)l->periodic[0].cron.every_s, 2);
	T_EQ_INT((long long)l->periodic[0].timeout_s, 5);
	v = lifecycle_json(l);
	T_EQ_INT(lifecycle_parse(v, &again, err, sizeof(err)), 0);
	T_EQ_STR(again->periodic[0].argv[0], "x");
	T_EQ_INT((long long)again->pre_start->timeout_s, LIFECYCLE_TIMEOUT_S);
	json_decref(v);
	lifecycle_free(again);
	lifecycle_free(l);

	T_EQ_INT(lifecycle_parse_text("version = 2", 11, &l, err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "unsupported lifecycle config version 2");
	T_EQ_INT(lifecycle_parse_text("  ", 2, &l, err, sizeof(err)),
	    -EINVAL);
	T_EQ_STR(err, "empty lifecycle config");
	text = "{\"version\":0,\"preStart\":null,\"periodic\":null}";
	T_EQ_INT(lifecycle_parse_text(text, strlen(text), &l, err,
	    sizeof(err)), 0);
	T_OK(l->pre_start == NULL && l->nperiodic == 0);
	lifecycle_free(l);
}

/* The TOML form: read, its messages, and written back the same. */
static void
t_toml(void)
{
	const char *text = "\n # saved\nversion = 1\n[preStart]\n"
	    "command = ['a', \"b c\"]\ntimeout_seconds = 9\n"
	    "timeoutSeconds = 99 # not a key of the TOML form\n"
	    "[[periodic]]\nname = ' n '\nschedule = '@every 2s'\n"
	    "command = [\"x\\ty\"]\nother = 'ignored'\n"
	    "[[periodic]]\nname = 'm'\nschedule = '0 * * * *'\n"
	    "command = ['z']\n";
	struct lifecycle *l, *again;
	json_t *a, *b;
	char err[256], *s;

	T_EQ_INT(lifecycle_parse_text(text, strlen(text), &l, err,
	    sizeof(err)), 0);
	T_EQ_STR(l->pre_start->argv[1], "b c");
	T_EQ_INT((long long)l->pre_start->timeout_s, 9);
	T_EQ_INT((long long)l->nperiodic, 2);
	T_EQ_STR(l->periodic[0].name, "n");
	T_EQ_STR(l->periodic[0].argv[0], "x\ty");
	T_EQ_INT((long long)l->periodic[0].timeout_s, LIFECYCLE_TIMEOUT_S);
	s = lifecycle_toml(l);
	T_OK(strstr(s, "version = 1\n\n[preStart]\ncommand = [\"a\", "
	    "\"b c\"]\ntimeout_seconds = 9\n\n[[periodic]]\nname = \"n\"\n"
	    "schedule = \"@every 2s\"\ncommand = [\"x\\ty\"]\n"
	    "timeout_seconds = 60\n") == s);
	T_EQ_INT(lifecycle_parse_text(s, strlen(s), &again, err,
	    sizeof(err)), 0);
	a = lifecycle_json(l);
	b = lifecycle_json(again);
	T_OK(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	free(s);
	lifecycle_free(again);
	lifecycle_free(l);
	/* no hooks at all: version alone */
	T_EQ_INT(lifecycle_parse_text("version = 1", 11, &l, err,
	    sizeof(err)), 0);
	s = lifecycle_toml(l);
	T_EQ_STR(s, "version = 1\n");
	free(s);
	lifecycle_free(l);
	/* the reader's refusals name the line; then the JSON form's rules */
	text = "version = 1\n\n[preStart]\ncommand = 'sh'\n";
	T_EQ_INT(lifecycle_parse_text(text, strlen(text), &l, err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "preStart command must be an array of strings");
	text = "[preStart]\ncommand = ['a']\ntimeout_seconds = true\n";
	T_EQ_INT(lifecycle_parse_text(text, strlen(text), &l, err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "line 3: booleans are not supported");
	text = "[preStart]\ncommand = ['a']\ntimeout_seconds = -1\n";
	T_EQ_INT(lifecycle_parse_text(text, strlen(text), &l, err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "preStart timeoutSeconds must not be negative");
	text = "periodic = ['a']";
	T_EQ_INT(lifecycle_parse_text(text, strlen(text), &l, err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "periodic hooks must be objects with a string name and "
	    "schedule");
	text = "[periodic]\nname = 'a'";
	T_EQ_INT(lifecycle_parse_text(text, strlen(text), &l, err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "periodic must be an array");
	text = "[preStart]\ncommand = [\"\\u0000\"]";
	T_EQ_INT(lifecycle_parse_text(text, strlen(text), &l, err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "preStart command must not be empty");
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "cron: next times", t_next },
		{ "cron: robfig's messages for bad specs", t_bad },
		{ "configuration: parsed, defaults, read back", t_config },
		{ "configuration in TOML: read, refused, written", t_toml },
	};

	return T_RUN(cases);
}
