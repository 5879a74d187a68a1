/*
 * t_toml.c -- the TOML subset reader and writer (execd/core/toml.c):
 * every construct it reads, as the JSON it gives, every refusal with its
 * line, and documents written and read back equal.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/core/toml.h"
#include "../t.h"

/* s read as TOML, as compact JSON, or "ERR " and the message. */
static const char *
rdf(const char *s, unsigned flags)
{
	static char out[1024];
	char err[256] = "";
	json_t *v = NULL;
	char *j;

	if (toml_parse_flags(s, strlen(s), flags, &v, err, sizeof(err)) < 0) {
		snprintf(out, sizeof(out), "ERR %s", err);
		return out;
	}
	j = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER |
	    JSON_ENCODE_ANY);
	snprintf(out, sizeof(out), "%s", j);
	free(j);
	json_decref(v);
	return out;
}

static const char *
rd(const char *s)
{
	return rdf(s, 0);
}

/* With booleans. */
static const char *
rdb(const char *s)
{
	return rdf(s, TOML_BOOLEANS);
}

static void
t_constructs(void)
{
	T_EQ_STR(rd(""), "{}");
	T_EQ_STR(rd("# only a comment\n\n  \t\n"), "{}");
	T_EQ_STR(rd("a = 1"), "{\"a\":1}");
	T_EQ_STR(rd("a=1\r\nb = -2 # two\n"), "{\"a\":1,\"b\":-2}");
	T_EQ_STR(rd("bare_key-1 = 'x'\n\"quoted key\" = 'y'\n'lit' = 'z'"),
	    "{\"bare_key-1\":\"x\",\"quoted key\":\"y\",\"lit\":\"z\"}");
	/* basic strings and every escape */
	T_EQ_STR(rd("s = \"a\\b\\t\\n\\f\\r\\\"\\\\z\""),
	    "{\"s\":\"a\\b\\t\\n\\f\\r\\\"\\\\z\"}");
	T_EQ_STR(rd("s = \"\\u00e9\\U0001F600\\u0041\""),
	    "{\"s\":\"\xc3\xa9\xf0\x9f\x98\x80" "A\"}");
	T_EQ_STR(rd("s = \"\\u0000\""), "{\"s\":\"\\u0000\"}");
	T_EQ_STR(rd("s = \"tab\there # not a comment\""),
	    "{\"s\":\"tab\\there # not a comment\"}");
	T_EQ_STR(rd("s = \"caf\xc3\xa9\""), "{\"s\":\"caf\xc3\xa9\"}");
	/* literal strings: no escapes */
	T_EQ_STR(rd("s = 'C:\\path\\n \"q\"'"),
	    "{\"s\":\"C:\\\\path\\\\n \\\"q\\\"\"}");
	T_EQ_STR(rd("s = ''"), "{\"s\":\"\"}");
	/* integers */
	T_EQ_STR(rd("a = +99\nb = 0\nc = -0\nd = 1_000\ne = 0xdead_BEEF\n"
	    "f = 0o755\ng = 0b1101"),
	    "{\"a\":99,\"b\":0,\"c\":0,\"d\":1000,\"e\":3735928559,"
	    "\"f\":493,\"g\":13}");
	T_EQ_STR(rd("a = 9223372036854775807\nb = -9223372036854775808"),
	    "{\"a\":9223372036854775807,\"b\":-9223372036854775808}");
	/* arrays of strings, over lines, with comments and a last comma */
	T_EQ_STR(rd("a = []\nb = [ 'x' ]\nc = [\"x\", 'y',]"),
	    "{\"a\":[],\"b\":[\"x\"],\"c\":[\"x\",\"y\"]}");
	T_EQ_STR(rd("a = [ # first\n  'x', # one\n\n  \"y\"\n  # end\n]\n"
	    "b = 1"), "{\"a\":[\"x\",\"y\"],\"b\":1}");
	/* tables and arrays of tables */
	T_EQ_STR(rd("v = 1\n[t]\nk = 'x'\n[ u ]\n"),
	    "{\"v\":1,\"t\":{\"k\":\"x\"},\"u\":{}}");
	T_EQ_STR(rd("[[p]]\nn = 'a'\n[[ p ]] # two\nn = 'b'\n[t]\nk = 1\n"
	    "[[p]]\n"),
	    "{\"p\":[{\"n\":\"a\"},{\"n\":\"b\"},{}],\"t\":{\"k\":1}}");
	T_EQ_STR(rd("[\"quoted table\"]\nk = 1"),
	    "{\"quoted table\":{\"k\":1}}");
}

static void
t_refusals(void)
{
	/* syntax */
	T_EQ_STR(rd("a"), "ERR line 1: expected '=' after a key");
	T_EQ_STR(rd("= 1"), "ERR line 1: expected a key");
	T_EQ_STR(rd("a ="), "ERR line 1: a key must have a value");
	T_EQ_STR(rd("\na = 1 2"),
	    "ERR line 2: expected the end of the line, found '2'");
	T_EQ_STR(rd("a = 1\rb = 2"), "ERR line 1: a carriage return must be "
	    "followed by a line feed");
	T_EQ_STR(rd("\r"), "ERR line 1: a carriage return must be followed "
	    "by a line feed");
	T_EQ_STR(rd("# a\x01 comment"),
	    "ERR line 1: control character U+0001 in a comment");
	T_EQ_STR(rd("a = 1\nb = '\xff'"), "ERR line 2: invalid UTF-8");
	/* keys and tables */
	T_EQ_STR(rd("a = 1\na = 2"),
	    "ERR line 2: key \"a\" is defined twice");
	T_EQ_STR(rd("a.b = 1"), "ERR line 1: dotted keys are not supported");
	T_EQ_STR(rd("[a.b]"), "ERR line 1: dotted keys are not supported");
	T_EQ_STR(rd("\"k\\u0000\" = 1"),
	    "ERR line 1: a key must not contain NUL");
	T_EQ_STR(rd("[t]\n[t]"), "ERR line 2: \"t\" is defined twice");
	T_EQ_STR(rd("t = 1\n[t]"), "ERR line 2: \"t\" is defined twice");
	T_EQ_STR(rd("[t]\n[[t]]"), "ERR line 2: \"t\" is defined twice");
	T_EQ_STR(rd("p = []\n[[p]]"), "ERR line 2: \"p\" is defined twice");
	T_EQ_STR(rd("[[p]]\n[p]"), "ERR line 2: \"p\" is defined twice");
	T_EQ_STR(rd("[t"), "ERR line 1: expected ']' to end the header");
	T_EQ_STR(rd("[[t]"), "ERR line 1: expected ']]' to end the header");
	T_EQ_STR(rd("[]"), "ERR line 1: expected a key");
	T_EQ_STR(rd("[t] x"),
	    "ERR line 1: expected the end of the line, found 'x'");
	/* strings */
	T_EQ_STR(rd("s = \"abc"), "ERR line 1: unterminated string");
	T_EQ_STR(rd("s = 'abc\n'"), "ERR line 1: unterminated string");
	T_EQ_STR(rd("s = \"\"\"x\"\"\""),
	    "ERR line 1: multi-line strings are not supported");
	T_EQ_STR(rd("s = '''x'''"),
	    "ERR line 1: multi-line strings are not supported");
	T_EQ_STR(rd("s = \"\\q\""), "ERR line 1: invalid escape \\q");
	T_EQ_STR(rd("s = \"\\e\""), "ERR line 1: invalid escape \\e");
	T_EQ_STR(rd("s = \"\\u12\""),
	    "ERR line 1: \\u needs 4 hexadecimal digits");
	T_EQ_STR(rd("s = \"\\UD800\""),
	    "ERR line 1: \\U needs 8 hexadecimal digits");
	T_EQ_STR(rd("s = \"\\uD800\""),
	    "ERR line 1: \\uD800 is not a Unicode scalar value");
	T_EQ_STR(rd("s = \"\\U00110000\""),
	    "ERR line 1: \\U00110000 is not a Unicode scalar value");
	T_EQ_STR(rd("s = \"a\x01\""),
	    "ERR line 1: control character U+0001 in a string");
	T_EQ_STR(rd("s = 'a\x7f'"),
	    "ERR line 1: control character U+007F in a string");
	/* integers */
	T_EQ_STR(rd("a = 9223372036854775808"),
	    "ERR line 1: integer out of range: 9223372036854775808");
	T_EQ_STR(rd("a = -9223372036854775809"),
	    "ERR line 1: integer out of range: -9223372036854775809");
	T_EQ_STR(rd("a = 012"), "ERR line 1: invalid integer: 012");
	T_EQ_STR(rd("a = 1__0"), "ERR line 1: invalid integer: 1__0");
	T_EQ_STR(rd("a = _1"), "ERR line 1: a value must be a string, an "
	    "integer or an array of strings");
	T_EQ_STR(rd("a = 1_"), "ERR line 1: invalid integer: 1_");
	T_EQ_STR(rd("a = -0x1"), "ERR line 1: invalid integer: -0x1");
	T_EQ_STR(rd("a = 0x"), "ERR line 1: invalid integer: 0x");
	T_EQ_STR(rd("a = 0b102"), "ERR line 1: invalid integer: 0b102");
	T_EQ_STR(rd("a = +"), "ERR line 1: invalid integer: +");
	T_EQ_STR(rd("a = 12abc"), "ERR line 1: invalid integer: 12abc");
	/* what the subset leaves out */
	T_EQ_STR(rd("a = 1.5"),
	    "ERR line 1: floats and dates are not supported: 1.5");
	T_EQ_STR(rd("a = 1e3"),
	    "ERR line 1: floats and dates are not supported: 1e3");
	T_EQ_STR(rd("a = -inf"),
	    "ERR line 1: floats and dates are not supported: -inf");
	T_EQ_STR(rd("a = nan"),
	    "ERR line 1: floats and dates are not supported: nan");
	T_EQ_STR(rd("a = 1979-05-27"),
	    "ERR line 1: floats and dates are not supported: 1979-05-27");
	T_EQ_STR(rd("a = 07:32:00"),
	    "ERR line 1: floats and dates are not supported: 07:32:00");
	T_EQ_STR(rd("a = true"), "ERR line 1: booleans are not supported");
	T_EQ_STR(rd("a = false"), "ERR line 1: booleans are not supported");
	T_EQ_STR(rdb("a = true\nb = false # c\n[t]\nc=true"),
	    "{\"a\":true,\"b\":false,\"t\":{\"c\":true}}");
	T_EQ_STR(rdb("a = truex"),
	    "ERR line 1: expected the end of the line, found 'x'");
	T_EQ_STR(rdb("a = [true]"),
	    "ERR line 1: an array may hold only strings");
	T_EQ_STR(rd("a = { b = 1 }"),
	    "ERR line 1: inline tables are not supported");
	T_EQ_STR(rd("a = bare"), "ERR line 1: a value must be a string, an "
	    "integer or an array of strings");
	/* arrays */
	T_EQ_STR(rd("a = [1]"), "ERR line 1: an array may hold only strings");
	T_EQ_STR(rd("a = [['x']]"),
	    "ERR line 1: nested arrays are not supported");
	T_EQ_STR(rd("a = ['x' 'y']"),
	    "ERR line 1: expected ',' or ']' in an array");
	T_EQ_STR(rd("a = ['x',,]"),
	    "ERR line 1: an array may hold only strings");
	T_EQ_STR(rd("a = [\n'x',\n"), "ERR line 3: unterminated array");
	T_EQ_STR(rd("a = [\n 'x', # c\x02\n]"),
	    "ERR line 2: control character U+0002 in a comment");
}

/* v written and read back: equal. */
static void
t_dump(void)
{
	json_t *v, *back = NULL;
	char err[256] = "", *s;

	v = json_loads("{\"version\":1,\"e\":[],\"preStart\":{\"command\":"
	    "[\"sh\",\"-c\",\"echo \\\"a\\\\b\\\" \\u0001\\t\\n'x'\"],"
	    "\"timeout_seconds\":5},\"periodic\":[{\"name\":\"t\","
	    "\"k y\":\"\\u0000\"},{}],\"\":-3}", JSON_ALLOW_NUL, NULL);
	T_OK(v != NULL);
	s = toml_dump(v);
	T_OK(s != NULL);
	T_OK(s != NULL && toml_parse(s, strlen(s), &back, err,
	    sizeof(err)) == 0);
	T_EQ_STR(err, "");
	T_OK(back != NULL && json_equal(v, back));
	T_OK(s != NULL && strncmp(s, "version = 1\ne = []\n\"\" = -3\n\n"
	    "[preStart]\ncommand = [\"sh\", \"-c\", ", 52) == 0);
	free(s);
	json_decref(back);
	json_decref(v);
	/* what the subset cannot hold */
	v = json_loads("{\"a\":true,\"t\":{\"b\":false}}", 0, NULL);
	s = toml_dump(v);
	T_EQ_STR(s, "a = true\n\n[t]\nb = false\n");
	free(s);
	json_decref(v);
	v = json_loads("{\"a\":1.5}", 0, NULL);
	errno = 0;
	T_OK(toml_dump(v) == NULL && errno == EINVAL);
	json_decref(v);
	v = json_loads("{\"a\":{\"b\":{}}}", 0, NULL);
	T_OK(toml_dump(v) == NULL);
	json_decref(v);
	v = json_loads("{\"a\":[1]}", 0, NULL);
	T_OK(toml_dump(v) == NULL);
	json_decref(v);
	v = json_loads("[]", 0, NULL);
	T_OK(toml_dump(v) == NULL);
	json_decref(v);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "constructs", t_constructs },
		{ "refusals", t_refusals },
		{ "dump", t_dump },
	};

	return T_RUN(cases);
}
