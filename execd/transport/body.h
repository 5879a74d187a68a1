/*
 * body.h -- typed checks on parsed JSON request bodies.
 *
 * A handler lists the fields it reads with their types; body_check()
 * rejects a body whose field has the wrong type with a message naming the
 * field, so handlers can then read values without re-checking.  A JSON
 * null counts as an absent field, as upstream treats it.  Pure; any thread.
 */
#ifndef EXECD_BODY_H
#define EXECD_BODY_H

#include <stddef.h>

#include <jansson.h>

enum body_type {
	BODY_STRING, BODY_INT, BODY_BOOL, BODY_NUMBER, BODY_OBJECT, BODY_ARRAY
};

#define BODY_REQUIRED	0x01	/* absent or null is an error */
#define BODY_NONEMPTY	0x02	/* a string that must not be "" */

struct body_field {
	const char	*name;
	enum body_type	 type;
	unsigned	 flags;
};

/* The end of a field table given without a count (body_check_table). */
#define BODY_END	{ NULL, BODY_STRING, 0 }

/*
 * Check that v is an object and that each listed field present has its
 * type.  where names v in messages ("" for the body itself, else e.g. a
 * path key).  0, or -EINVAL with the message in err.
 */
int	body_check(const json_t *v, const char *where,
	    const struct body_field *, size_t nfields, char *err,
	    size_t errlen);

/*
 * body_check() over a table ended by BODY_END.  A name "obj.name" is a
 * field of the object field obj, checked after every plain name, when
 * obj is there (so "context.id" reads as body_check(context, "context",
 * { "id" ... }) would).  0, or -EINVAL with the message in err.
 */
int	body_check_table(const json_t *v, const char *where,
	    const struct body_field *, char *err, size_t errlen);

/* The field as a string, or def when absent or null. */
const char	*body_str(const json_t *, const char *name, const char *def);
/* The field as an integer, or def when absent or null. */
long long	 body_int(const json_t *, const char *name, long long def);

#endif
