/*
 * fuzz_toml.c -- fuzz target for the TOML subset reader and writer
 * (execd/core/toml.c).
 *
 * Invariants, with booleans read (TOML_BOOLEANS) and without, any break
 * aborts: a refusal says "line N: why" in UTF-8, with N no more than the
 * input's lines; an accepted document is an object whose values are
 * strings, integers, booleans (when read), arrays of strings, tables
 * of those or non-empty arrays of such tables; it is written back
 * (toml_dump) and read again equal; and the text written is itself
 * accepted and written the same.  The same text read as the isolation
 * configuration (execd/config/isoconf.c) is refused with its line or
 * taken within the bounds isoconf.h gives.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/config/isoconf.h"
#include "../../execd/core/toml.h"
#include "fz.h"

static bool
scalar(const json_t *v, unsigned flags)
{
	const json_t *e;
	size_t i;

	if (json_is_string(v) || json_is_integer(v))
		return true;
	if (json_is_boolean(v))
		return (flags & TOML_BOOLEANS) != 0;
	if (!json_is_array(v))
		return false;
	json_array_foreach(v, i, e)
		if (!json_is_string(e))
			return false;
	return true;
}

static bool
table(const json_t *t, unsigned flags)
{
	const char *k;
	json_t *v;

	if (!json_is_object(t))
		return false;
	json_object_foreach((json_t *)(uintptr_t)t, k, v)
		if (!scalar(v, flags))
			return false;
	return true;
}

/* The invariants, with the reader's flags. */
static void
one(const uint8_t *data, size_t size, unsigned flags)
{
	char err[256] = "", *s, *s2;
	json_t *v = NULL, *back = NULL, *e, *x;
	const char *k;
	size_t i, lines = 1;
	unsigned long n;

	if (toml_parse_flags((const char *)data, size, flags, &v, err,
	    sizeof(err)) < 0) {
		CHECK(fz_utf8(err, strlen(err)));
		CHECK(strncmp(err, "line ", 5) == 0);
		n = strtoul(err + 5, NULL, 10);
		for (i = 0; i < size; i++)
			lines += data[i] == '\n';
		CHECK(n >= 1 && n <= lines);
		return;
	}
	CHECK(json_is_object(v));
	json_object_foreach(v, k, e) {
		if (scalar(e, flags) || table(e, flags))
			continue;
		CHECK(json_is_array(e) && json_array_size(e) > 0);
		json_array_foreach(e, i, x)
			CHECK(table(x, flags));
	}
	s = toml_dump(v);
	CHECK(s != NULL);
	CHECK(toml_parse_flags(s, strlen(s), flags, &back, err,
	    sizeof(err)) == 0);
	CHECK(json_equal(v, back));
	s2 = toml_dump(back);
	CHECK(s2 != NULL && strcmp(s, s2) == 0);
	free(s2);
	free(s);
	json_decref(back);
	json_decref(v);
}

/*
 * The isolation configuration read from it: refused with "f:N: why",
 * N within the input's lines, or taken with what isoconf.h promises.
 */
static void
isolation(const uint8_t *data, size_t size)
{
	struct isoconf c;
	char err[512] = "";
	size_t lines = 1;
	unsigned long n;

	if (isoconf_parse("f", (const char *)data, size, &c, err,
	    sizeof(err)) < 0) {
		CHECK(strncmp(err, "f:", 2) == 0);
		n = strtoul(err + 2, NULL, 10);
		for (size_t i = 0; i < size; i++)
			lines += data[i] == '\n';
		CHECK(n >= 1 && n <= lines);
		CHECK(c.upper_root == NULL && c.allowed == NULL &&
		    c.caps == NULL);
		return;
	}
	CHECK(c.upper_root == NULL || c.upper_root[0] == '/');
	CHECK(!c.has_upper_max || c.upper_max == 0 || c.upper_max >= 4096);
	for (size_t i = 0; i < c.nallowed; i++)
		CHECK(c.allowed[i][0] == '/');
	CHECK(c.nwarn <= ISOCONF_WARNINGS);
	isoconf_free(&c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size, 0);
	one(data, size, TOML_BOOLEANS);
	isolation(data, size);
	return 0;
}
