/*
 * fuzz_routebody.c -- every route's body check, through the real route
 * table, as http.c makes it before a handler runs.
 *
 * The input is a body, parsed as the server parses it; each route then
 * checks it with http_route_check(), and no handler runs.  Invariants:
 * a route without fields, or an empty optional body, passes; otherwise
 * the verdict is a model's, written here from body.h and http.h alone
 * (plain names first, then "obj.name" inside obj when obj is there), and
 * a refusal starts with the route's lead and names the first field that
 * fails, as 'where.name'; a short buffer gets the same verdict, cut,
 * never overrun.  The tables themselves are checked once: each ends, a
 * dotted name follows every plain one and names an object field of the
 * same table, and only routes that take a JSON body have fields.
 */
#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/api/opensandbox/route.h"
#include "../../execd/transport/body.h"
#include "../../execd/transport/http.h"
#include "fz.h"

#define MAX_FIELDS	64	/* more in one table is a mistake */

#define J(t)	(1u << (t))

/* The JSON kinds each body type takes, from body.h's words. */
static const unsigned takes[] = {
	[BODY_STRING] = J(JSON_STRING),
	[BODY_INT] = J(JSON_INTEGER),
	[BODY_BOOL] = J(JSON_TRUE) | J(JSON_FALSE),
	[BODY_NUMBER] = J(JSON_INTEGER) | J(JSON_REAL),
	[BODY_OBJECT] = J(JSON_OBJECT),
	[BODY_ARRAY] = J(JSON_ARRAY),
};

static bool
has_type(const json_t *v, enum body_type t)
{
	return (takes[t] & J(json_typeof(v))) != 0;
}

/* Whether field f of object v fails; its words into why. */
static bool
field_fails(const json_t *v, const struct body_field *f, const char *name,
    const char **why)
{
	const json_t *x = json_object_get(v, name);

	if (x == NULL || json_typeof(x) == JSON_NULL) {
		*why = "is required";
		return (f->flags & BODY_REQUIRED) != 0;
	}
	if (!has_type(x, f->type)) {
		*why = "must be ";
		return true;
	}
	*why = "must not be empty";
	return (f->flags & BODY_NONEMPTY) && f->type == BODY_STRING &&
	    json_string_length(x) == 0;
}

/*
 * The model's verdict on v for table f: true if it passes; else the
 * failing field's full name into name ("" when v is not an object).
 */
static bool
model(const json_t *v, const struct body_field *f, char *name, size_t len,
    const char **why)
{
	const char *dot;
	const json_t *obj;
	char head[128];
	size_t i;

	name[0] = '\0';
	if (json_typeof(v) != JSON_OBJECT)
		return false;
	for (i = 0; f[i].name != NULL && strchr(f[i].name, '.') == NULL;
	    i++) {
		if (field_fails(v, &f[i], f[i].name, why)) {
			snprintf(name, len, "%s", f[i].name);
			return false;
		}
	}
	for (; f[i].name != NULL; i++) {
		dot = strchr(f[i].name, '.');
		snprintf(head, sizeof(head), "%.*s", (int)(dot - f[i].name),
		    f[i].name);
		obj = json_object_get(v, head);
		if (obj == NULL || json_typeof(obj) == JSON_NULL)
			continue;
		if (field_fails(obj, &f[i], dot + 1, why)) {
			snprintf(name, len, "%s", f[i].name);
			return false;
		}
	}
	return true;
}

/* The tables are well formed (once). */
static void
check_tables(void)
{
	const struct body_field *f;
	const char *dot;
	bool dotted, found;
	size_t n;

	for (size_t r = 0; r < route_count; r++) {
		if ((f = route_table[r].fields) == NULL)
			continue;
		CHECK(route_table[r].flags & HTTP_R_BODY);
		dotted = false;
		for (n = 0; f[n].name != NULL; n++) {
			CHECK(n < MAX_FIELDS);
			if ((dot = strchr(f[n].name, '.')) == NULL) {
				CHECK(!dotted);
				continue;
			}
			dotted = true;
			CHECK(strchr(dot + 1, '.') == NULL);
			found = false;
			for (size_t k = 0; k < n; k++)
				if (strncmp(f[k].name, f[n].name,
				    (size_t)(dot - f[n].name)) == 0 &&
				    f[k].name[dot - f[n].name] == '\0' &&
				    f[k].type == BODY_OBJECT)
					found = true;
			CHECK(found);
		}
	}
}

/* One route's check of v agrees with the model. */
static void
check_route(const struct http_route *r, const json_t *v)
{
	static char err[16384];
	char name[256], want[300], small[8];
	const char *lead = r->flags & HTTP_R_PARSE_LEAD ?
	    "error parsing request: " : "invalid request, ", *why = "";
	bool pass;
	int rc;

	err[0] = '\0';
	rc = http_route_check(r, v, err, sizeof(err));
	if (r->fields == NULL || v == NULL) {
		CHECK(rc == 0);
		return;
	}
	pass = model(v, r->fields, name, sizeof(name), &why);
	CHECK(rc == (pass ? 0 : -EINVAL));
	if (pass)
		return;
	CHECK(strncmp(err, lead, strlen(lead)) == 0);
	if (name[0] == '\0') {
		CHECK(strstr(err, "must be a JSON object") != NULL);
	} else if (strlen(err) < sizeof(err) - 1) {
		snprintf(want, sizeof(want), "%sfield '%s' %s", lead, name,
		    why);
		CHECK(strncmp(err, want, strlen(want)) == 0);
	}
	for (size_t len = 1; len <= sizeof(small); len++) {
		memset(small, 'x', sizeof(small));
		CHECK(http_route_check(r, v, small, len) == rc);
		CHECK(memchr(small, '\0', len) != NULL);
		if (len < sizeof(small))
			CHECK(small[len] == 'x');
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool tables;
	json_error_t e;
	json_t *v;

	if (!tables) {
		check_tables();
		tables = true;
	}
	/* As http.c parses a body; an empty one is an optional body left out. */
	v = size == 0 ? NULL : json_loadb((const char *)data, size,
	    JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL, &e);
	if (size > 0 && v == NULL)
		return 0;
	for (size_t r = 0; r < route_count; r++)
		check_route(&route_table[r], v);
	json_decref(v);
	return 0;
}
