/*
 * t_body.c -- unit tests for body.c.
 *
 * Bodies are written as JSON text and parsed with the flags the server
 * uses, then checked against small field tables.  Covered: non-object
 * bodies, each type accepted and refused with the exact message a client
 * sees, null counted as absent, required and non-empty fields, the field
 * path prefix, table order deciding which error is reported, short error
 * buffers, tables ended by BODY_END with nested "obj.name" fields, and
 * body_str()/body_int() defaults.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/transport/body.h"
#include "../t.h"

#define NF(a)	(sizeof(a) / sizeof((a)[0]))

static json_t	*parse(const char *);
static int	 check(const char *, const char *, const struct body_field *,
		    size_t, char *, size_t);
static int	 check_table(const char *, const struct body_field *, char *,
		    size_t);

/* One field of each type, none required. */
static const struct body_field all_types[] = {
	{ "s", BODY_STRING, 0 },
	{ "i", BODY_INT, 0 },
	{ "b", BODY_BOOL, 0 },
	{ "n", BODY_NUMBER, 0 },
	{ "o", BODY_OBJECT, 0 },
	{ "a", BODY_ARRAY, 0 },
};

/* Parse text as the server does; abort the test run on bad fixtures. */
static json_t *
parse(const char *text)
{
	json_error_t e;
	json_t *v;

	v = json_loadb(text, strlen(text), JSON_DISABLE_EOF_CHECK |
	    JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);
	if (v == NULL) {
		fprintf(stderr, "  bad fixture %s: %s\n", text, e.text);
		T_OK(v != NULL);
	}
	return v;
}

/* body_check() on parsed text; the message goes to err. */
static int
check(const char *text, const char *where, const struct body_field *f,
    size_t n, char *err, size_t errlen)
{
	json_t *v = parse(text);
	int rc;

	if (v == NULL)
		return 1;
	err[0] = '\0';
	rc = body_check(v, where, f, n, err, errlen);
	json_decref(v);
	return rc;
}

/* A body that is not an object is refused, naming what it is. */
static void
test_not_object(void)
{
	static const struct {
		const char	*text;
		const char	*what;
	} v[] = {
		{ "[]", "an array" },
		{ "\"x\"", "a string" },
		{ "1", "an integer" },
		{ "1.5", "a number with a fraction" },
		{ "true", "a boolean" },
		{ "false", "a boolean" },
		{ "null", "null" },
	};
	char err[128], want[128];

	for (size_t i = 0; i < NF(v); i++) {
		T_EQ_INT(check(v[i].text, "", all_types, NF(all_types), err,
		    sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want), "request body must be a JSON "
		    "object, not %s", v[i].what);
		T_EQ_STR(err, want);
		T_EQ_INT(check(v[i].text, "/tmp/dir", all_types,
		    NF(all_types), err, sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want), "/tmp/dir must be a JSON "
		    "object, not %s", v[i].what);
		T_EQ_STR(err, want);
	}
	/* Even with no fields listed. */
	T_EQ_INT(check("[1]", "", NULL, 0, err, sizeof(err)), -EINVAL);
}

/* Every field of its own type passes; extra fields are ignored. */
static void
test_types_accepted(void)
{
	char err[128];

	T_EQ_INT(check("{}", "", all_types, NF(all_types), err,
	    sizeof(err)), 0);
	T_EQ_INT(check("{\"s\":\"x\",\"i\":-3,\"b\":true,\"n\":1.5,"
	    "\"o\":{},\"a\":[],\"extra\":[1,{}]}", "", all_types,
	    NF(all_types), err, sizeof(err)), 0);
	T_EQ_STR(err, "");
	T_EQ_INT(check("{\"s\":\"\",\"i\":9223372036854775807,\"b\":false,"
	    "\"n\":7,\"o\":{\"k\":null},\"a\":[null]}", "", all_types,
	    NF(all_types), err, sizeof(err)), 0);
	T_EQ_INT(check("{\"n\":-0.0}", "", all_types, NF(all_types), err,
	    sizeof(err)), 0);
	T_EQ_INT(check("{\"s\":\"a\\u0000b\"}", "", all_types,
	    NF(all_types), err, sizeof(err)), 0);
}

/* Each wrong type gives the message naming field, wanted and got. */
static void
test_types_refused(void)
{
	static const struct {
		const char	*text;
		const char	*want;
	} v[] = {
		{ "{\"s\":1}", "field 's' must be a string, not an integer" },
		{ "{\"s\":[]}", "field 's' must be a string, not an array" },
		{ "{\"s\":false}",
		    "field 's' must be a string, not a boolean" },
		{ "{\"i\":\"1\"}",
		    "field 'i' must be an integer, not a string" },
		{ "{\"i\":1.0}", "field 'i' must be an integer, not a number "
		    "with a fraction" },
		{ "{\"i\":1e3}", "field 'i' must be an integer, not a number "
		    "with a fraction" },
		{ "{\"i\":true}",
		    "field 'i' must be an integer, not a boolean" },
		{ "{\"b\":0}", "field 'b' must be a boolean, not an integer" },
		{ "{\"b\":\"true\"}",
		    "field 'b' must be a boolean, not a string" },
		{ "{\"n\":\"1\"}", "field 'n' must be a number, not a string" },
		{ "{\"n\":{}}",
		    "field 'n' must be a number, not an object" },
		{ "{\"o\":[]}",
		    "field 'o' must be an object, not an array" },
		{ "{\"o\":\"{}\"}",
		    "field 'o' must be an object, not a string" },
		{ "{\"a\":{}}",
		    "field 'a' must be an array, not an object" },
		{ "{\"a\":1.5}", "field 'a' must be an array, not a number "
		    "with a fraction" },
	};
	char err[128];

	for (size_t i = 0; i < NF(v); i++) {
		T_EQ_INT(check(v[i].text, "", all_types, NF(all_types), err,
		    sizeof(err)), -EINVAL);
		T_EQ_STR(err, v[i].want);
	}
}

/* A nested object's fields are named with the path in front. */
static void
test_where_prefix(void)
{
	static const struct body_field perm[] = {
		{ "mode", BODY_INT, 0 },
		{ "owner", BODY_STRING, 0 },
	};
	char err[128];

	T_EQ_INT(check("{\"mode\":\"755\"}", "x", perm, NF(perm), err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'x.mode' must be an integer, not a string");
	T_EQ_INT(check("{\"owner\":7}", "/tmp/a b", perm, NF(perm), err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field '/tmp/a b.owner' must be a string, not an "
	    "integer");
	T_EQ_INT(check("{\"mode\":755,\"owner\":\"root\"}", "x", perm,
	    NF(perm), err, sizeof(err)), 0);
}

/* null is absent: fine when optional, an error when required. */
static void
test_null_and_required(void)
{
	static const struct body_field f[] = {
		{ "cmd", BODY_STRING, BODY_REQUIRED },
		{ "cwd", BODY_STRING, 0 },
		{ "timeout", BODY_INT, 0 },
		{ "env", BODY_OBJECT, BODY_REQUIRED },
	};
	char err[128];

	T_EQ_INT(check("{\"cmd\":\"ls\",\"cwd\":null,\"timeout\":null,"
	    "\"env\":{}}", "", f, NF(f), err, sizeof(err)), 0);
	T_EQ_INT(check("{\"env\":{}}", "", f, NF(f), err, sizeof(err)),
	    -EINVAL);
	T_EQ_STR(err, "field 'cmd' is required");
	T_EQ_INT(check("{\"cmd\":null,\"env\":{}}", "", f, NF(f), err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'cmd' is required");
	T_EQ_INT(check("{\"cmd\":\"ls\",\"env\":null}", "", f, NF(f), err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'env' is required");
	T_EQ_INT(check("{\"cmd\":\"ls\"}", "job", f, NF(f), err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'job.env' is required");
	/* A required field of the wrong type is a type error. */
	T_EQ_INT(check("{\"cmd\":[],\"env\":{}}", "", f, NF(f), err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'cmd' must be a string, not an array");
	/* An empty string is present (not BODY_NONEMPTY). */
	T_EQ_INT(check("{\"cmd\":\"\",\"env\":{}}", "", f, NF(f), err,
	    sizeof(err)), 0);
}

/* BODY_NONEMPTY refuses "" only. */
static void
test_nonempty(void)
{
	static const struct body_field f[] = {
		{ "code", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
		{ "lang", BODY_STRING, BODY_NONEMPTY },
		{ "n", BODY_INT, BODY_NONEMPTY },	/* no effect */
	};
	char err[128];

	T_EQ_INT(check("{\"code\":\"x\"}", "", f, NF(f), err, sizeof(err)),
	    0);
	T_EQ_INT(check("{\"code\":\"\"}", "", f, NF(f), err, sizeof(err)),
	    -EINVAL);
	T_EQ_STR(err, "field 'code' must not be empty");
	T_EQ_INT(check("{\"code\":\" \",\"lang\":\"\"}", "ctx", f, NF(f),
	    err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'ctx.lang' must not be empty");
	T_EQ_INT(check("{\"code\":\"x\",\"lang\":null,\"n\":0}", "", f,
	    NF(f), err, sizeof(err)), 0);
	/* A NUL byte is content. */
	T_EQ_INT(check("{\"code\":\"\\u0000\"}", "", f, NF(f), err,
	    sizeof(err)), 0);
}

/* Fields are checked in table order; the first failure is reported. */
static void
test_table_order(void)
{
	static const struct body_field f[] = {
		{ "b", BODY_INT, 0 },
		{ "a", BODY_INT, BODY_REQUIRED },
	};
	char err[128];

	T_EQ_INT(check("{\"a\":\"x\",\"b\":\"y\"}", "", f, NF(f), err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'b' must be an integer, not a string");
	T_EQ_INT(check("{\"b\":1}", "", f, NF(f), err, sizeof(err)),
	    -EINVAL);
	T_EQ_STR(err, "field 'a' is required");
	/* Only the first n entries count. */
	T_EQ_INT(check("{\"b\":1}", "", f, 1, err, sizeof(err)), 0);
}

/* A short error buffer gets a truncated, terminated message. */
static void
test_short_err(void)
{
	char err[16];

	memset(err, 'z', sizeof(err));
	T_EQ_INT(check("{\"i\":\"1\"}", "a.long.path", all_types,
	    NF(all_types), err, 12), -EINVAL);
	T_EQ_STR(err, "field 'a.lo");
	T_EQ_INT(err[12], 'z');
	T_EQ_INT(check("[]", "", all_types, NF(all_types), err, 1), -EINVAL);
	T_EQ_STR(err, "");
}

/* The same key text in several places: only the top level counts. */
static void
test_nested_not_searched(void)
{
	static const struct body_field f[] = {
		{ "x", BODY_INT, BODY_REQUIRED },
	};
	char err[128];

	T_EQ_INT(check("{\"o\":{\"x\":1}}", "", f, NF(f), err,
	    sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'x' is required");
	T_EQ_INT(check("{\"x\":1,\"o\":{\"x\":\"s\"}}", "", f, NF(f), err,
	    sizeof(err)), 0);
}

/* body_check_table() on parsed text, as http.c checks a route's body. */
static int
check_table(const char *text, const struct body_field *f, char *err,
    size_t errlen)
{
	json_t *v = parse(text);
	int rc;

	if (v == NULL)
		return 1;
	err[0] = '\0';
	rc = body_check_table(v, "", f, err, errlen);
	json_decref(v);
	return rc;
}

/*
 * A table ended by BODY_END: the plain names first, whatever the order
 * of the body, then "obj.name" inside obj when obj is there.
 */
static void
test_ended_table(void)
{
	static const struct body_field f[] = {
		{ "code", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
		{ "context", BODY_OBJECT, 0 },
		{ "timeout", BODY_INT, 0 },
		{ "context.id", BODY_STRING, 0 },
		{ "context.cwd", BODY_STRING, BODY_NONEMPTY },
		BODY_END
	};
	static const struct body_field bad[] = {
		{ "o.x", BODY_INT, 0 },
		{ "y", BODY_INT, 0 },
		BODY_END
	};
	char err[128];

	T_EQ_INT(check_table("{\"code\":\"x\",\"context\":{\"id\":\"a\"},"
	    "\"timeout\":1}", f, err, sizeof(err)), 0);
	T_EQ_INT(check_table("{\"code\":\"x\"}", f, err, sizeof(err)), 0);
	T_EQ_INT(check_table("{\"code\":\"x\",\"context\":null}", f, err,
	    sizeof(err)), 0);
	/* The whole top level before the nested fields. */
	T_EQ_INT(check_table("{\"code\":\"x\",\"context\":{\"id\":5},"
	    "\"timeout\":\"t\"}", f, err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'timeout' must be an integer, not a string");
	T_EQ_INT(check_table("{\"code\":\"x\",\"context\":{\"id\":5}}", f,
	    err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'context.id' must be a string, not an integer");
	T_EQ_INT(check_table("{\"code\":\"x\",\"context\":{\"cwd\":\"\"}}",
	    f, err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "field 'context.cwd' must not be empty");
	T_EQ_INT(check_table("{\"context\":[]}", f, err, sizeof(err)),
	    -EINVAL);
	T_EQ_STR(err, "field 'code' is required");
	T_EQ_INT(check_table("[1]", f, err, sizeof(err)), -EINVAL);
	T_EQ_STR(err, "request body must be a JSON object, not an array");
	/* A plain name after a dotted one is the table's mistake. */
	T_EQ_INT(check_table("{\"o\":{},\"y\":1}", bad, err, sizeof(err)),
	    -EINVAL);
	T_EQ_STR(err, "field table: 'y' is out of place");
}

/* body_str and body_int: the value, else the default. */
static void
test_getters(void)
{
	json_t *v = parse("{\"s\":\"str\",\"e\":\"\",\"i\":42,\"neg\":-7,"
	    "\"big\":9223372036854775807,\"r\":2.0,\"n\":null,\"b\":true,"
	    "\"o\":{\"s\":\"inner\"}}");
	json_t *arr = parse("[\"s\"]");

	if (v == NULL || arr == NULL)
		return;
	T_EQ_STR(body_str(v, "s", "d"), "str");
	T_EQ_STR(body_str(v, "e", "d"), "");
	T_EQ_STR(body_str(v, "missing", "d"), "d");
	T_EQ_STR(body_str(v, "n", "d"), "d");
	T_OK(body_str(v, "n", NULL) == NULL);
	T_EQ_STR(body_str(v, "i", "d"), "d");
	T_EQ_STR(body_str(v, "o", "d"), "d");
	T_EQ_INT(body_int(v, "i", -1), 42);
	T_EQ_INT(body_int(v, "neg", 0), -7);
	T_EQ_INT(body_int(v, "big", 0), INT64_MAX);
	T_EQ_INT(body_int(v, "missing", 5), 5);
	T_EQ_INT(body_int(v, "n", 6), 6);
	T_EQ_INT(body_int(v, "r", 7), 7);	/* a real is not an int */
	T_EQ_INT(body_int(v, "b", 8), 8);
	T_EQ_INT(body_int(v, "s", 9), 9);
	/* Not an object, or no value at all: the default. */
	T_EQ_STR(body_str(arr, "s", "d"), "d");
	T_EQ_INT(body_int(arr, "0", 3), 3);
	T_EQ_STR(body_str(NULL, "s", "d"), "d");
	T_EQ_INT(body_int(NULL, "i", 4), 4);
	json_decref(v);
	json_decref(arr);
}

static const struct t_case cases[] = {
	{ "not an object", test_not_object },
	{ "table ended by BODY_END", test_ended_table },
	{ "types accepted", test_types_accepted },
	{ "types refused", test_types_refused },
	{ "where prefix", test_where_prefix },
	{ "null and required", test_null_and_required },
	{ "nonempty", test_nonempty },
	{ "table order", test_table_order },
	{ "short err buffer", test_short_err },
	{ "nested not searched", test_nested_not_searched },
	{ "getters", test_getters },
};

int
main(void)
{
	return T_RUN(cases);
}
