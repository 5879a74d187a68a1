/*
 * fuzz_body.c -- fuzz target for request bodies: jansson's parse as the
 * server calls it, body.c's checks, and sse_fmt_json() on the result.
 *
 * body_check() runs with a fixed field table on the body and, as the
 * directory endpoint does, with another table on each member.  Its verdict
 * must match a model written here from body.h alone, and its message must
 * name the first field that fails.  Then the value is written with
 * sse_fmt_json() and read back with jansson: equal (numbers by value, as a
 * real written "1" reads back as an integer), keys in byte order, output
 * valid UTF-8 with no raw control or HTML characters, and written again
 * byte for byte the same.  A broken invariant aborts.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/transport/body.h"
#include "../../sse/sse_fmt.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)
#define NF(a)	(sizeof(a) / sizeof((a)[0]))

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A command body: every type, required and non-empty flags. */
static const struct body_field top_fields[] = {
	{ "cmd", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
	{ "cwd", BODY_STRING, 0 },
	{ "timeout", BODY_INT, 0 },
	{ "background", BODY_BOOL, 0 },
	{ "ratio", BODY_NUMBER, 0 },
	{ "envs", BODY_OBJECT, 0 },
	{ "args", BODY_ARRAY, 0 },
	{ "name", BODY_STRING, BODY_NONEMPTY },
	{ "ctx", BODY_OBJECT, BODY_REQUIRED },
};

/* The directory endpoint's table, applied to each member. */
static const struct body_field member_fields[] = {
	{ "mode", BODY_INT, 0 },
	{ "owner", BODY_STRING, 0 },
	{ "group", BODY_STRING, BODY_NONEMPTY },
};

enum fail { F_NONE, F_NOT_OBJECT, F_REQUIRED, F_TYPE, F_EMPTY };

static int	 has_type(const json_t *, enum body_type);
static enum fail model(const json_t *, const struct body_field *, size_t,
		    size_t *);
static void	 check_fields(const json_t *, const char *,
		    const struct body_field *, size_t);
static int	 num_equal(const json_t *, const json_t *);
static int	 equal(const json_t *, const json_t *);
static void	 scan(const json_t *, int *, int *);
static void	 keys_sorted(const json_t *);
static void	 check_output(const char *, size_t);
static void	 check_json(const json_t *);

/* The type test of body.h, from the header's words. */
static int
has_type(const json_t *v, enum body_type t)
{
	switch (t) {
	case BODY_STRING:
		return json_typeof(v) == JSON_STRING;
	case BODY_INT:
		return json_typeof(v) == JSON_INTEGER;
	case BODY_BOOL:
		return json_typeof(v) == JSON_TRUE ||
		    json_typeof(v) == JSON_FALSE;
	case BODY_NUMBER:
		return json_typeof(v) == JSON_INTEGER ||
		    json_typeof(v) == JSON_REAL;
	case BODY_OBJECT:
		return json_typeof(v) == JSON_OBJECT;
	case BODY_ARRAY:
		return json_typeof(v) == JSON_ARRAY;
	}
	return 0;
}

/* What body_check() must decide, and which field fails first. */
static enum fail
model(const json_t *v, const struct body_field *f, size_t n, size_t *which)
{
	const json_t *x;

	if (json_typeof(v) != JSON_OBJECT)
		return F_NOT_OBJECT;
	for (size_t i = 0; i < n; i++) {
		*which = i;
		x = json_object_get(v, f[i].name);
		if (x == NULL || json_typeof(x) == JSON_NULL) {
			if (f[i].flags & BODY_REQUIRED)
				return F_REQUIRED;
			continue;
		}
		if (!has_type(x, f[i].type))
			return F_TYPE;
		if ((f[i].flags & BODY_NONEMPTY) && f[i].type == BODY_STRING &&
		    json_string_length(x) == 0)
			return F_EMPTY;
	}
	return F_NONE;
}

/* body_check() agrees with the model; its message says why. */
static void
check_fields(const json_t *v, const char *where,
    const struct body_field *f, size_t n)
{
	static char err[16384], name[16384];
	char small[8];
	size_t which = 0;
	enum fail want = model(v, f, n, &which);
	int rc;

	err[0] = '\0';
	rc = body_check(v, where, f, n, err, sizeof(err));
	CHECK(rc == (want == F_NONE ? 0 : -EINVAL));
	if (rc == 0) {
		/* The getters then return the values checked. */
		for (size_t i = 0; i < n; i++) {
			const json_t *x = json_object_get(v, f[i].name);

			if (f[i].type == BODY_STRING)
				CHECK(body_str(v, f[i].name, NULL) ==
				    (json_is_string(x) ?
				    json_string_value(x) : NULL));
			if (f[i].type == BODY_INT)
				CHECK(body_int(v, f[i].name, LLONG_MIN) ==
				    (json_is_integer(x) ?
				    json_integer_value(x) : LLONG_MIN));
		}
		return;
	}
	CHECK(strlen(err) > 0 && strlen(err) < sizeof(err));
	if (strlen(err) < sizeof(err) - 1) {
		if (want == F_NOT_OBJECT) {
			CHECK(strstr(err, "must be a JSON object") != NULL);
		} else {
			snprintf(name, sizeof(name), "field '%s%s%s'", where,
			    where[0] != '\0' ? "." : "", f[which].name);
			CHECK(strncmp(err, name, strlen(name)) == 0);
			CHECK(strstr(err, want == F_REQUIRED ? "is required" :
			    want == F_EMPTY ? "must not be empty" :
			    "must be ") != NULL);
		}
	}
	/* A short buffer: same verdict, truncated, never overrun. */
	for (size_t len = 1; len <= sizeof(small); len++) {
		memset(small, 'x', sizeof(small));
		CHECK(body_check(v, where, f, n, small, len) == rc);
		CHECK(memchr(small, '\0', len) != NULL);
		if (len < sizeof(small))
			CHECK(small[len] == 'x');
	}
}

/* Numbers are equal by value, whichever of integer or real they are. */
static int
num_equal(const json_t *a, const json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	return json_number_value(a) == json_number_value(b);
}

/* Deep equality, numbers compared by value. */
static int
equal(const json_t *a, const json_t *b)
{
	const char *k;
	json_t *x;

	if (json_is_number(a) && json_is_number(b))
		return num_equal(a, b);
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)(uintptr_t)a, k, x)
			if (json_object_get(b, k) == NULL ||
			    !equal(x, json_object_get(b, k)))
				return 0;
		return 1;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!equal(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		    memcmp(json_string_value(a), json_string_value(b),
		    json_string_length(a)) == 0;
	default:
		return 1;
	}
}

/*
 * Note reals that cannot come back as they went: integral values too big
 * for jansson's integers (written in plain digits, as Go writes them) and
 * negative zero (written "-0", read back as the integer 0).
 */
static void
scan(const json_t *v, int *big, int *negzero)
{
	const char *k;
	json_t *x;
	double d;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		json_object_foreach((json_t *)(uintptr_t)v, k, x)
			scan(x, big, negzero);
		break;
	case JSON_ARRAY:
		for (size_t i = 0; i < json_array_size(v); i++)
			scan(json_array_get(v, i), big, negzero);
		break;
	case JSON_REAL:
		d = json_real_value(v);
		if (fabs(d) >= 9223372036854775807.0 && fabs(d) < 1e21)
			*big = 1;
		if (d == 0 && signbit(d))
			*negzero = 1;
		break;
	default:
		break;
	}
}

/* Objects as read back keep the written order: it must be sorted. */
static void
keys_sorted(const json_t *v)
{
	const char *k, *prev;
	json_t *x;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		prev = NULL;
		json_object_foreach((json_t *)(uintptr_t)v, k, x) {
			CHECK(prev == NULL || strcmp(prev, k) < 0);
			prev = k;
			keys_sorted(x);
		}
		break;
	case JSON_ARRAY:
		for (size_t i = 0; i < json_array_size(v); i++)
			keys_sorted(json_array_get(v, i));
		break;
	default:
		break;
	}
}

/* Output bytes: no raw control or HTML character, no raw U+2028/9. */
static void
check_output(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;

	for (size_t i = 0; i < n; i++) {
		CHECK(u[i] >= 0x20 && u[i] != '<' && u[i] != '>' &&
		    u[i] != '&');
		CHECK(!(u[i] == 0xe2 && i + 2 < n && u[i + 1] == 0x80 &&
		    (u[i + 2] == 0xa8 || u[i + 2] == 0xa9)));
	}
	CHECK(p[n] == '\0');
}

/* sse_fmt_json() round trip. */
static void
check_json(const json_t *v)
{
	struct buf b, b2;
	json_error_t e;
	json_t *back;
	int big = 0, negzero = 0;

	buf_init(&b);
	CHECK(sse_fmt_json(&b, v) == 0);
	check_output(b.p, b.len);
	scan(v, &big, &negzero);
	back = json_loadb(b.p, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	if (back == NULL) {
		/* Only plain digits past jansson's integers may fail. */
		CHECK(big);
		CHECK(json_error_code(&e) == json_error_numeric_overflow);
		buf_reset(&b);
		return;
	}
	CHECK(equal(v, back));
	keys_sorted(back);
	if (!negzero) {
		buf_init(&b2);
		CHECK(sse_fmt_json(&b2, back) == 0);
		CHECK(b2.len == b.len && memcmp(b2.p, b.p, b.len) == 0);
		buf_reset(&b2);
	}
	json_decref(back);
	buf_reset(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t e;
	json_t *v, *x;
	const char *k;

	/* As http.c parses request bodies. */
	v = json_loadb((const char *)data, size, JSON_DISABLE_EOF_CHECK |
	    JSON_ALLOW_NUL, &e);
	if (v == NULL)
		return 0;
	check_fields(v, "", top_fields, NF(top_fields));
	check_fields(v, "", NULL, 0);
	json_object_foreach(v, k, x) {
		check_fields(x, k, member_fields, NF(member_fields));
		check_fields(x, "", top_fields, NF(top_fields));
	}
	check_json(v);
	json_decref(v);
	return 0;
}
