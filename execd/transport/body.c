/*
 * body.c -- field type checks for JSON request bodies.
 *
 * Parsing itself is jansson's (in http.c); this file only answers "is
 * each field what the handler expects", in words a client can act on.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "body.h"

static const char *const type_names[] = {
	[BODY_STRING] = "a string", [BODY_INT] = "an integer",
	[BODY_BOOL] = "a boolean", [BODY_NUMBER] = "a number",
	[BODY_OBJECT] = "an object", [BODY_ARRAY] = "an array",
};

static const char *
json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "unknown";
}

static int
has_type(const json_t *v, enum body_type t)
{
	switch (t) {
	case BODY_STRING: return json_is_string(v);
	case BODY_INT: return json_is_integer(v);
	case BODY_BOOL: return json_is_boolean(v);
	case BODY_NUMBER: return json_is_number(v);
	case BODY_OBJECT: return json_is_object(v);
	case BODY_ARRAY: return json_is_array(v);
	}
	return 0;
}

/* Check v's listed fields; see body.h. */
int
body_check(const json_t *v, const char *where, const struct body_field *f,
    size_t n, char *err, size_t errlen)
{
	const json_t *x;
	const char *sep = where[0] != '\0' ? "." : "";

	if (!json_is_object(v)) {
		snprintf(err, errlen, "%s%smust be a JSON object, not %s",
		    where, where[0] != '\0' ? " " : "request body ",
		    json_type_name(v));
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		x = json_object_get(v, f[i].name);
		if (x == NULL || json_is_null(x)) {
			if (f[i].flags & BODY_REQUIRED) {
				snprintf(err, errlen, "field '%s%s%s' is "
				    "required", where, sep, f[i].name);
				return -EINVAL;
			}
			continue;
		}
		if (!has_type(x, f[i].type)) {
			snprintf(err, errlen, "field '%s%s%s' must be %s, not "
			    "%s", where, sep, f[i].name, type_names[f[i].type],
			    json_type_name(x));
			return -EINVAL;
		}
		if ((f[i].flags & BODY_NONEMPTY) && f[i].type == BODY_STRING &&
		    json_string_length(x) == 0) {
			snprintf(err, errlen, "field '%s%s%s' must not be "
			    "empty", where, sep, f[i].name);
			return -EINVAL;
		}
	}
	return 0;
}

/* Check v against a table ended by BODY_END; see body.h. */
int
body_check_table(const json_t *v, const char *where,
    const struct body_field *f, char *err, size_t errlen)
{
	struct body_field one[1];
	char obj[128], name[256];
	const char *dot;
	const json_t *x;
	size_t n = 0;
	int rc;

	/* The plain names come first in a table, the dotted ones after. */
	while (f[n].name != NULL && strchr(f[n].name, '.') == NULL)
		n++;
	if ((rc = body_check(v, where, f, n, err, errlen)) < 0)
		return rc;
	for (; f[n].name != NULL; n++) {
		dot = strchr(f[n].name, '.');
		if (dot == NULL || (size_t)(dot - f[n].name) >= sizeof(obj)) {
			snprintf(err, errlen, "field table: '%s' is out of "
			    "place", f[n].name);
			return -EINVAL;
		}
		memcpy(obj, f[n].name, (size_t)(dot - f[n].name));
		obj[dot - f[n].name] = '\0';
		if ((x = json_object_get(v, obj)) == NULL || json_is_null(x))
			continue;
		snprintf(name, sizeof(name), "%s%s%s", where, where[0] != '\0' ?
		    "." : "", obj);
		one[0] = f[n];
		one[0].name = dot + 1;
		if ((rc = body_check(x, name, one, 1, err, errlen)) < 0)
			return rc;
	}
	return 0;
}

/* A checked string field, or def. */
const char *
body_str(const json_t *v, const char *name, const char *def)
{
	const json_t *x = json_object_get(v, name);

	return json_is_string(x) ? json_string_value(x) : def;
}

/* A checked integer field, or def. */
long long
body_int(const json_t *v, const char *name, long long def)
{
	const json_t *x = json_object_get(v, name);

	return json_is_integer(x) ? json_integer_value(x) : def;
}
