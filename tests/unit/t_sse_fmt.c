/*
 * t_sse_fmt.c -- unit tests for sse_fmt.c.
 *
 * The expected bytes are those of the upstream daemon's encoder (Go's
 * encoding/json), written out by hand: string escapes (quote, backslash,
 * HTML characters, control characters, NUL, U+2028/U+2029), invalid UTF-8
 * replaced byte by byte with U+FFFD, shortest round-trip floats in plain
 * or exponent notation, sorted object keys, and the event framing with its
 * field order and omitted fields.  Nothing here does I/O.
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../sse/sse_fmt.h"
#include "../t.h"

/* One sse_fmt_string() vector: input bytes and the exact JSON text. */
struct str_vec {
	const char	*in;
	size_t		 len;
	const char	*want;
};
#define SV(in, want)	{ in, sizeof(in) - 1, want }

/* One sse_fmt_double() vector. */
struct dbl_vec {
	double		 d;
	const char	*want;
};

static void	 check_strings(const struct str_vec *, size_t);
static void	 check_doubles(const struct dbl_vec *, size_t);
static void	 check_json(const char *, const char *);
static int	 is_json_number(const char *);
static uint64_t	 rnd(uint64_t *);

/* Encode each vector on its own and compare the bytes. */
static void
check_strings(const struct str_vec *v, size_t n)
{
	struct buf b;

	for (size_t i = 0; i < n; i++) {
		buf_init(&b);
		sse_fmt_string(&b, v[i].in, v[i].len);
		T_EQ_STR(b.p, v[i].want);
		T_EQ_INT(b.len, strlen(v[i].want));
		buf_reset(&b);
	}
}

/* Format each double on its own and compare the text. */
static void
check_doubles(const struct dbl_vec *v, size_t n)
{
	struct buf b;

	for (size_t i = 0; i < n; i++) {
		buf_init(&b);
		sse_fmt_double(&b, v[i].d);
		T_EQ_STR(b.p, v[i].want);
		buf_reset(&b);
	}
}

/* Parse text with jansson, write it back with sse_fmt_json, compare. */
static void
check_json(const char *text, const char *want)
{
	struct buf b;
	json_error_t e;
	json_t *v;

	v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	T_OK(v != NULL);
	if (v == NULL) {
		fprintf(stderr, "  json_loads: %s\n", e.text);
		return;
	}
	buf_init(&b);
	T_EQ_INT(sse_fmt_json(&b, v), 0);
	T_EQ_STR(b.p, want);
	buf_reset(&b);
	json_decref(v);
}

/* True when s matches the JSON number grammar (RFC 8259, section 6). */
static int
is_json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return 0;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

/* A fixed-seed xorshift generator, so failures reproduce. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ASCII: quote and backslash escaped, HTML characters as \u00XX. */
static void
test_string_ascii(void)
{
	static const struct str_vec v[] = {
		SV("", "\"\""),
		SV("hello, world", "\"hello, world\""),
		SV("say \"hi\"", "\"say \\\"hi\\\"\""),
		SV("a\\b", "\"a\\\\b\""),
		SV("/slash/", "\"/slash/\""),
		SV("<script>&amp;</script>",
		    "\"\\u003cscript\\u003e\\u0026amp;\\u003c/script\\u003e\""),
		SV("'single' `back`", "\"'single' `back`\""),
		SV("~\x7f", "\"~\x7f\""),
	};

	check_strings(v, sizeof(v) / sizeof(v[0]));
}

/* Control characters: the five short escapes, else \u00XX; NUL too. */
static void
test_string_control(void)
{
	static const struct str_vec v[] = {
		SV("a\nb", "\"a\\nb\""),
		SV("\r\n", "\"\\r\\n\""),
		SV("\t", "\"\\t\""),
		SV("\b\f", "\"\\b\\f\""),
		SV("\0", "\"\\u0000\""),
		SV("x\0y", "\"x\\u0000y\""),
		SV("\x01\x07\x0b\x0e\x1b\x1f",
		    "\"\\u0001\\u0007\\u000b\\u000e\\u001b\\u001f\""),
		SV(" ", "\" \""),
	};
	struct buf b;
	char c;

	check_strings(v, sizeof(v) / sizeof(v[0]));

	/* Every byte below 0x20 comes out escaped, never raw. */
	buf_init(&b);
	for (c = 0; c < 0x20; c++)
		sse_fmt_string(&b, &c, 1);
	for (size_t i = 0; i < b.len; i++)
		T_OK((unsigned char)b.p[i] >= 0x20);
	buf_reset(&b);
}

/* Valid UTF-8 passes through, except U+2028 and U+2029. */
static void
test_string_utf8(void)
{
	static const struct str_vec v[] = {
		SV("caf\xc3\xa9", "\"caf\xc3\xa9\""),		/* U+00E9 */
		SV("\xc2\x80", "\"\xc2\x80\""),			/* U+0080 */
		SV("\xdf\xbf", "\"\xdf\xbf\""),			/* U+07FF */
		SV("\xe0\xa0\x80", "\"\xe0\xa0\x80\""),		/* U+0800 */
		SV("\xe2\x82\xac", "\"\xe2\x82\xac\""),		/* euro */
		SV("\xed\x9f\xbf", "\"\xed\x9f\xbf\""),		/* U+D7FF */
		SV("\xee\x80\x80", "\"\xee\x80\x80\""),		/* U+E000 */
		SV("\xef\xbf\xbd", "\"\xef\xbf\xbd\""),		/* U+FFFD */
		SV("\xef\xbf\xbf", "\"\xef\xbf\xbf\""),		/* U+FFFF */
		SV("\xf0\x90\x80\x80", "\"\xf0\x90\x80\x80\""),	/* U+10000 */
		SV("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""),	/* emoji */
		SV("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\""),	/* U+10FFFF */
		SV("\xe2\x80\xa8", "\"\\u2028\""),
		SV("\xe2\x80\xa9", "\"\\u2029\""),
		SV("a\xe2\x80\xa8" "b\xe2\x80\xa9" "c",
		    "\"a\\u2028b\\u2029c\""),
		SV("\xe2\x80\xa7\xe2\x80\xaa", "\"\xe2\x80\xa7\xe2\x80\xaa\""),
	};

	check_strings(v, sizeof(v) / sizeof(v[0]));
}

/* Invalid UTF-8: each offending byte becomes one U+FFFD, as in Go. */
static void
test_string_invalid_utf8(void)
{
	static const struct str_vec v[] = {
		SV("\x80", "\"\\ufffd\""),			/* lone cont. */
		SV("\xbf" "a", "\"\\ufffda\""),
		SV("\xc3", "\"\\ufffd\""),			/* cut short */
		SV("a\xc3", "\"a\\ufffd\""),
		SV("\xc3" "a", "\"\\ufffda\""),
		SV("\xe2\x82", "\"\\ufffd\\ufffd\""),
		SV("\xe2\x82" "x", "\"\\ufffd\\ufffdx\""),
		SV("\xf0\x9f\x98", "\"\\ufffd\\ufffd\\ufffd\""),
		SV("\xc0\x80", "\"\\ufffd\\ufffd\""),		/* overlong */
		SV("\xc1\xbf", "\"\\ufffd\\ufffd\""),
		SV("\xe0\x80\x80", "\"\\ufffd\\ufffd\\ufffd\""),
		SV("\xe0\x9f\xbf", "\"\\ufffd\\ufffd\\ufffd\""),
		SV("\xf0\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""),
		SV("\xf0\x8f\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""),
		/* Surrogates D800 and DFFF. */
		SV("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""),
		SV("\xed\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\""),
		SV("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""),
		SV("\xf5\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""),
		SV("\xf8\x88\x80\x80\x80",
		    "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\""),
		SV("\xfe\xff", "\"\\ufffd\\ufffd\""),
		SV("\xff", "\"\\ufffd\""),
		SV("a\xff<\xc3\xa9\xe2\x80", "\"a\\ufffd\\u003c\xc3\xa9"
		    "\\ufffd\\ufffd\""),
	};

	check_strings(v, sizeof(v) / sizeof(v[0]));
}

/* Shortest round-trip floats, plain from 1e-6 up to 1e21. */
static void
test_double_vectors(void)
{
	static const struct dbl_vec v[] = {
		{ 0.0, "0" },
		{ -0.0, "-0" },
		{ 4, "4" },
		{ -4, "-4" },
		{ 12.5, "12.5" },
		{ -12.5, "-12.5" },
		{ 0.1, "0.1" },
		{ 0.3, "0.3" },
		{ 0.1 + 0.2, "0.30000000000000004" },
		{ 1.0 / 3, "0.3333333333333333" },
		{ 2.0 / 3, "0.6666666666666666" },
		{ 100, "100" },
		{ 123456789, "123456789" },
		{ 1e15, "1000000000000000" },
		{ 1e16, "10000000000000000" },
		{ 9007199254740993.0, "9007199254740992" },
		{ 1.2345678901234568e17, "123456789012345680" },
		{ 1e20, "100000000000000000000" },
		{ 1e21, "1e+21" },
		{ -1e21, "-1e+21" },
		{ 1.5e300, "1.5e+300" },
		{ DBL_MAX, "1.7976931348623157e+308" },
		{ 1e-6, "0.000001" },
		{ 1.234e-6, "0.000001234" },
		{ 9.999e-7, "9.999e-7" },
		{ 1e-7, "1e-7" },
		{ -1e-7, "-1e-7" },
		{ 2.5e-10, "2.5e-10" },
		{ 1e-100, "1e-100" },
		{ DBL_MIN, "2.2250738585072014e-308" },
		{ 5e-324, "5e-324" },
	};

	check_doubles(v, sizeof(v) / sizeof(v[0]));
}

/*
 * Integral doubles between 2^53 and 1e21 hold more digits than the
 * shortest form: Go prints the shortest digits padded with zeros
 * (strconv 'f', precision -1), not the exact binary value.
 */
static void
test_double_large_integral(void)
{
	static const struct dbl_vec v[] = {
		/* 2^60, 2^63 */
		{ 1152921504606846976.0, "1152921504606847000" },
		{ 9223372036854775808.0, "9223372036854776000" },
		{ 1.2345678901234567e20, "123456789012345670000" },
		{ 9.999999999999999e20, "999999999999999900000" },
		{ -1152921504606846976.0, "-1152921504606847000" },
	};

	check_doubles(v, sizeof(v) / sizeof(v[0]));
}

/* Infinities and NaN have no JSON form and come out as null. */
static void
test_double_nonfinite(void)
{
	static const struct dbl_vec v[] = {
		{ INFINITY, "null" },
		{ -INFINITY, "null" },
		{ NAN, "null" },
	};

	check_doubles(v, sizeof(v) / sizeof(v[0]));
}

/* Random bit patterns: valid JSON numbers that read back exactly. */
static void
test_double_roundtrip(void)
{
	struct buf b;
	uint64_t seed = 0x9e3779b97f4a7c15ULL, bits;
	double d, back;
	int bad = 0, checked = 0;

	buf_init(&b);
	for (int i = 0; i < 20000; i++) {
		bits = rnd(&seed);
		memcpy(&d, &bits, sizeof(d));
		if (!isfinite(d))
			continue;
		checked++;
		b.len = 0;
		sse_fmt_double(&b, d);
		back = strtod(b.p, NULL);
		if (!is_json_number(b.p) || memcmp(&back, &d, sizeof(d)) != 0 ||
		    (strchr(b.p, 'e') != NULL) != (fabs(d) < 1e-6 ||
		    fabs(d) >= 1e21)) {
			if (bad++ < 5)
				fprintf(stderr, "  %a -> %s\n", d, b.p);
		}
	}
	T_OK(checked > 19000);
	T_EQ_INT(bad, 0);
	buf_reset(&b);
}

/* Scalars, arrays and sorted objects, compact. */
static void
test_json_values(void)
{
	check_json("null", "null");
	check_json("true", "true");
	check_json("false", "false");
	check_json("0", "0");
	check_json("-17", "-17");
	check_json("9223372036854775807", "9223372036854775807");
	check_json("-9223372036854775808", "-9223372036854775808");
	check_json("1.0", "1");
	check_json("2.50", "2.5");
	check_json("-0.0", "-0");
	check_json("1e-7", "1e-7");
	check_json("\"x<y\"", "\"x\\u003cy\"");
	check_json("[]", "[]");
	check_json("{}", "{}");
	check_json(" [ 1 , [ 2 , [ ] ] , { } ] ", "[1,[2,[]],{}]");
	check_json("{\"b\":1,\"a\":[true,false,null,\"x<y\"],"
	    "\"B\":{\"z\":1.5,\"y\":-2},\"\\u00e9\":0,\"aa\":\"\","
	    "\"a b\":{}}",
	    "{\"B\":{\"y\":-2,\"z\":1.5},\"a\":[true,false,null,"
	    "\"x\\u003cy\"],\"a b\":{},\"aa\":\"\",\"b\":1,\"\xc3\xa9\":0}");
	check_json("{\"<k>\":\"\\u2028\",\"k&\":\"\\u0000\"}",
	    "{\"\\u003ck\\u003e\":\"\\u2028\",\"k\\u0026\":\"\\u0000\"}");
}

/* Keys sort by bytes, whatever the insertion order; values borrowed. */
static void
test_json_sorted_keys(void)
{
	static const char *const keys[] = {
		"zeta", "alpha", "Zeta", "_", "alpha2", "alph", "1", "~",
		"\xc3\xa9", "a", "",
	};
	struct buf b;
	json_t *o = json_object(), *arr = json_array();
	size_t n = sizeof(keys) / sizeof(keys[0]);

	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, keys[i], json_integer((json_int_t)i));
	json_object_set(o, "arr", arr);
	json_array_append_new(arr, json_stringn("a\0b", 3));
	json_array_append_new(arr, json_real(0.5));
	buf_init(&b);
	T_EQ_INT(sse_fmt_json(&b, o), 0);
	T_EQ_STR(b.p, "{\"\":10,\"1\":6,\"Zeta\":2,\"_\":3,\"a\":9,\"alph\":5,"
	    "\"alpha\":1,\"alpha2\":4,\"arr\":[\"a\\u0000b\",0.5],"
	    "\"zeta\":0,\"~\":7,\"\xc3\xa9\":8}");
	/* Only borrowed: reference counts are unchanged. */
	T_EQ_INT(o->refcount, 1);
	T_EQ_INT(arr->refcount, 2);
	json_decref(arr);
	json_decref(o);
	buf_reset(&b);
}

/* Deep nesting, objects in arrays in objects, is written in full. */
static void
test_json_deep(void)
{
	struct buf b;
	json_t *v = json_array(), *in = v, *x, *back;
	const int depth = 1000;

	for (int i = 1; i < depth; i++) {
		x = i % 2 == 0 ? json_array() : json_object();
		if (json_is_array(in))
			json_array_append_new(in, x);
		else
			json_object_set_new(in, "k", x);
		in = x;
	}
	buf_init(&b);
	T_EQ_INT(sse_fmt_json(&b, v), 0);
	T_EQ_INT(b.len, 2 * depth + 4 * (depth / 2 - 1));	/* "k": */
	T_OK(strncmp(b.p, "[{\"k\":[{\"k\":[", 13) == 0);
	back = json_loadb(b.p, b.len, 0, NULL);
	T_OK(back != NULL && json_equal(back, v));
	json_decref(back);
	json_decref(v);
	buf_reset(&b);
}

/* The example event from the header, byte for byte. */
static void
test_event_init(void)
{
	struct sse_event ev = { .type = "init", .text = "abc",
	    .timestamp = 1767225600000 };
	struct buf b;

	buf_init(&b);
	sse_fmt_event(&b, &ev);
	T_EQ_STR(b.p, "{\"type\":\"init\",\"text\":\"abc\","
	    "\"timestamp\":1767225600000}\n\n");
	buf_reset(&b);
}

/* Every field set: they come in the documented order. */
static void
test_event_all_fields(void)
{
	json_t *res = json_pack("{s:s,s:s}", "text/plain", "4",
	    "text/html", "<b>4</b>");
	json_t *err = json_pack("{s:s,s:s,s:[s,s]}", "evalue", "bad",
	    "ename", "ValueError", "traceback", "a", "b");
	struct sse_event ev = { .type = "execute_result", .text = "t",
	    .execution_count = 3, .execution_time = 12, .timestamp = 5,
	    .results = res, .error = err, .seq = 7 };
	struct buf b;

	buf_init(&b);
	sse_fmt_event(&b, &ev);
	T_EQ_STR(b.p, "{\"type\":\"execute_result\",\"text\":\"t\","
	    "\"execution_count\":3,\"execution_time\":12,\"timestamp\":5,"
	    "\"results\":{\"text/html\":\"\\u003cb\\u003e4\\u003c/b\\u003e\","
	    "\"text/plain\":\"4\"},\"error\":{\"ename\":\"ValueError\","
	    "\"evalue\":\"bad\",\"traceback\":[\"a\",\"b\"]},\"seq\":7}\n\n");
	buf_reset(&b);
	ev.seq = UINT64_MAX;
	ev.execution_count = -1;
	ev.timestamp = INT64_MAX;
	ev.results = ev.error = NULL;
	ev.text = NULL;
	sse_fmt_event(&b, &ev);
	T_EQ_STR(b.p, "{\"type\":\"execute_result\",\"execution_count\":-1,"
	    "\"execution_time\":12,\"timestamp\":9223372036854775807,"
	    "\"seq\":18446744073709551615}\n\n");
	buf_reset(&b);
	json_decref(res);
	json_decref(err);
}

/* Zero and empty fields are left out; type and timestamp never are. */
static void
test_event_omitted(void)
{
	struct sse_event ev = { .type = "ping" };
	json_t *empty = json_object();
	struct buf b;

	buf_init(&b);
	sse_fmt_event(&b, &ev);
	T_EQ_STR(b.p, "{\"type\":\"ping\",\"timestamp\":0}\n\n");
	buf_reset(&b);
	ev.text = "";
	sse_fmt_event(&b, &ev);
	T_EQ_STR(b.p, "{\"type\":\"ping\",\"timestamp\":0}\n\n");
	buf_reset(&b);
	ev.type = "";
	ev.results = empty;	/* present, even if empty */
	sse_fmt_event(&b, &ev);
	T_EQ_STR(b.p, "{\"type\":\"\",\"timestamp\":0,\"results\":{}}\n\n");
	buf_reset(&b);
	json_decref(empty);
}

/* text_len: NUL and newlines inside text, escaped on one line. */
static void
test_event_text_bytes(void)
{
	struct sse_event ev = { .type = "stdout", .text = "a\0b\n\r\n<>",
	    .text_len = 8, .timestamp = 1 };
	struct buf b;
	char *nl;

	buf_init(&b);
	buf_adds(&b, "prefix|");
	sse_fmt_event(&b, &ev);
	T_EQ_STR(b.p, "prefix|{\"type\":\"stdout\",\"text\":\"a\\u0000b\\n\\r"
	    "\\n\\u003c\\u003e\",\"timestamp\":1}\n\n");
	nl = strchr(b.p, '\n');
	T_OK(nl != NULL && nl == b.p + b.len - 2);
	buf_reset(&b);

	/* text_len 0 means strlen(text). */
	ev.text = "x\ny";
	ev.text_len = 0;
	sse_fmt_event(&b, &ev);
	T_EQ_STR(b.p, "{\"type\":\"stdout\",\"text\":\"x\\ny\","
	    "\"timestamp\":1}\n\n");
	buf_reset(&b);

	/* A text of one NUL byte is not empty. */
	ev.text = "";
	ev.text_len = 1;
	sse_fmt_event(&b, &ev);
	T_EQ_STR(b.p, "{\"type\":\"stdout\",\"text\":\"\\u0000\","
	    "\"timestamp\":1}\n\n");
	buf_reset(&b);

	/* Kernel output need not be UTF-8. */
	ev.text = "ok\xff\xfe";
	ev.text_len = 0;
	ev.type = "stderr";
	sse_fmt_event(&b, &ev);
	T_EQ_STR(b.p, "{\"type\":\"stderr\",\"text\":\"ok\\ufffd\\ufffd\","
	    "\"timestamp\":1}\n\n");
	buf_reset(&b);
}

/* Events append: two in one buffer are two frames. */
static void
test_event_append(void)
{
	struct sse_event a = { .type = "a", .timestamp = 1, .seq = 1 };
	struct sse_event c = { .type = "c", .timestamp = 2, .seq = 2 };
	struct buf b;

	buf_init(&b);
	sse_fmt_event(&b, &a);
	sse_fmt_event(&b, &c);
	T_EQ_STR(b.p, "{\"type\":\"a\",\"timestamp\":1,\"seq\":1}\n\n"
	    "{\"type\":\"c\",\"timestamp\":2,\"seq\":2}\n\n");
	buf_drain(&b, strlen("{\"type\":\"a\",\"timestamp\":1,"
	    "\"seq\":1}\n\n"));
	T_EQ_STR(b.p, "{\"type\":\"c\",\"timestamp\":2,\"seq\":2}\n\n");
	buf_reset(&b);
}

/* Standard SSE: id from seq, event from type, the object as data. */
static void
test_framing_standard(void)
{
	struct sse_event a = { .type = "stdout", .text = "hi\n",
	    .timestamp = 1, .seq = 7 };
	struct sse_event c = { .type = "ping", .timestamp = 2 };
	struct buf b;

	buf_init(&b);
	T_EQ_INT(sse_fmt_event_framed(&b, &sse_framing_standard, &a), 0);
	T_EQ_INT(sse_fmt_event_framed(&b, &sse_framing_standard, &c), 0);
	T_EQ_STR(b.p, "id: 7\nevent: stdout\ndata: {\"type\":\"stdout\","
	    "\"text\":\"hi\\n\",\"timestamp\":1,\"seq\":7}\n\n"
	    "event: ping\ndata: {\"type\":\"ping\",\"timestamp\":2}\n\n");
	buf_reset(&b);
	/* OpenSandbox's framing is sse_fmt_event's, byte for byte. */
	T_EQ_INT(sse_fmt_event_framed(&b, &sse_framing_opensandbox, &a), 0);
	T_EQ_STR(b.p, "{\"type\":\"stdout\",\"text\":\"hi\\n\","
	    "\"timestamp\":1,\"seq\":7}\n\n");
	buf_reset(&b);
	T_OK(sse_framing_opensandbox.keepalive == NULL);
	T_EQ_STR(sse_framing_standard.keepalive, ": ping\n\n");
}

/* A JSON object as an event: its "type" names it. */
static void
test_framing_json_event(void)
{
	json_t *v = json_pack("{s:s, s:i}", "type", "create", "n", 1);
	struct buf b;

	buf_init(&b);
	T_EQ_INT(sse_fmt_json_event(&b, NULL, v), 0);
	T_EQ_STR(b.p, "{\"n\":1,\"type\":\"create\"}\n\n");
	buf_reset(&b);
	T_EQ_INT(sse_fmt_json_event(&b, &sse_framing_standard, v), 0);
	T_EQ_STR(b.p, "event: create\ndata: {\"n\":1,\"type\":\"create\"}\n\n");
	buf_reset(&b);
	json_decref(v);
}

/* Stored OpenSandbox events put in another framing, number and type kept. */
static void
test_framing_reframe(void)
{
	static const char in[] =
	    "{\"type\":\"init\",\"text\":\"x\",\"timestamp\":1,\"seq\":1}\n\n"
	    "{\"type\":\"ping\",\"text\":\"pong\",\"timestamp\":2}\n\n"
	    "{\"type\":\"std\\\"out\",\"timestamp\":3,\"seq\":12}\n\n";
	struct buf b;

	buf_init(&b);
	T_EQ_INT(sse_fmt_reframe(&b, &sse_framing_standard, in,
	    sizeof(in) - 1), 0);
	T_EQ_STR(b.p, "id: 1\nevent: init\ndata: {\"type\":\"init\","
	    "\"text\":\"x\",\"timestamp\":1,\"seq\":1}\n\n"
	    "event: ping\ndata: {\"type\":\"ping\",\"text\":\"pong\","
	    "\"timestamp\":2}\n\n"
	    "id: 12\ndata: {\"type\":\"std\\\"out\",\"timestamp\":3,"
	    "\"seq\":12}\n\n");
	buf_reset(&b);
	/* Into OpenSandbox's: the same bytes. */
	T_EQ_INT(sse_fmt_reframe(&b, NULL, in, sizeof(in) - 1), 0);
	T_EQ_STR(b.p, in);
	buf_reset(&b);
}

/* An event that does not fit is refused whole, and says so. */
static void
test_event_refused_whole(void)
{
	struct sse_event big = { .type = "stdout", .timestamp = 1 };
	struct sse_event small = { .type = "a", .timestamp = 1 };
	char text[200];
	struct buf b;

	memset(text, 'x', sizeof(text));
	big.text = text;
	big.text_len = sizeof(text);
	buf_init_max(&b, 100);
	T_EQ_INT(sse_fmt_event(&b, &small), 0);
	T_EQ_INT(sse_fmt_event(&b, &big), -ENOBUFS);
	/* Nothing of it stays, and a later event is not spliced on. */
	T_EQ_STR(b.p, "{\"type\":\"a\",\"timestamp\":1}\n\n");
	T_OK(b.full);
	T_EQ_INT(sse_fmt_event(&b, &small), 0);
	T_EQ_STR(b.p, "{\"type\":\"a\",\"timestamp\":1}\n\n"
	    "{\"type\":\"a\",\"timestamp\":1}\n\n");
	T_EQ_INT(sse_fmt_event_framed(&b, &sse_framing_standard, &big),
	    -ENOBUFS);
	T_EQ_INT(sse_fmt_reframe(&b, &sse_framing_standard, text,
	    sizeof(text)), -ENOBUFS);
	T_EQ_INT(b.len, 2 * strlen("{\"type\":\"a\",\"timestamp\":1}\n\n"));
	buf_reset(&b);
}

static const struct t_case cases[] = {
	{ "string ascii", test_string_ascii },
	{ "string control", test_string_control },
	{ "string utf8", test_string_utf8 },
	{ "string invalid utf8", test_string_invalid_utf8 },
	{ "double vectors", test_double_vectors },
	{ "double large integral", test_double_large_integral },
	{ "double nonfinite", test_double_nonfinite },
	{ "double roundtrip", test_double_roundtrip },
	{ "json values", test_json_values },
	{ "json sorted keys", test_json_sorted_keys },
	{ "json deep", test_json_deep },
	{ "event init", test_event_init },
	{ "event all fields", test_event_all_fields },
	{ "event omitted", test_event_omitted },
	{ "event text bytes", test_event_text_bytes },
	{ "event append", test_event_append },
	{ "framing standard", test_framing_standard },
	{ "framing json event", test_framing_json_event },
	{ "framing reframe", test_framing_reframe },
	{ "event refused whole", test_event_refused_whole },
};

int
main(void)
{
	return T_RUN(cases);
}
