/*
 * toml.h -- a reader and a writer for the small part of TOML that
 * execd's configuration files use, as jansson values.
 *
 * The subset: comments, blank lines, `key = value` lines with bare or
 * quoted keys, `[table]` and `[[array-of-tables]]` headers of one key,
 * and values that are basic strings (with TOML's escapes), literal
 * strings, integers (decimal with a sign and underscores, 0x, 0o, 0b)
 * and arrays of strings (over several lines, with comments and a comma
 * at the end).  Anything else (dotted keys, floats, booleans, dates,
 * inline tables, multi-line strings, nested arrays) is refused, with the
 * line it is on, rather than read in part.  Pure: any thread.
 */
#ifndef EXECD_TOML_H
#define EXECD_TOML_H

#include <stddef.h>

#include <jansson.h>

/*
 * The document s[0..n) as an object: a table is an object, an array of
 * tables an array of objects, a string a string (it may hold NUL, from
 * \u0000), an integer an integer, an array an array of strings; keys in
 * the order they come.  0 with *out (the caller's), or -EINVAL with
 * "line N: why" in err (valid UTF-8).
 */
int	 toml_parse(const char *s, size_t n, json_t **out, char *err,
	    size_t errlen);
/*
 * toml_parse, and with TOML_BOOLEANS in flags booleans too (true and
 * false, as JSON's), where toml_parse refuses them.
 */
#define TOML_BOOLEANS	0x1
int	 toml_parse_flags(const char *s, size_t n, unsigned flags,
	    json_t **out, char *err, size_t errlen);

/*
 * v (an object that toml_parse_flags could have returned: values that
 * are strings (NUL written \u0000), integers, booleans, arrays of
 * strings, objects of those, or non-empty arrays of such objects) as TOML text that
 * toml_parse reads back equal: root keys first, then a header per
 * table.  A new string,
 * or NULL with errno EINVAL when v holds anything else.
 */
char	*toml_dump(const json_t *v);

#endif
