/*
 * toml.c -- the TOML subset of toml.h: a reader into jansson values and
 * the writer of the same subset.
 *
 * This is not a TOML library.  It reads exactly what execd's
 * configuration files need (the lifecycle hooks' saved configuration,
 * which upstream's go-toml writes and reads) and says "not supported",
 * with the line, for the rest of TOML, so that a file is never taken in
 * part.  The reader goes through the text once, a line at a time (an
 * array may go on over several); every table lives at the root, since
 * there are no dotted keys.  The whole text must be UTF-8, as TOML
 * requires, so every message quoting it is too.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../util/buf.h"
#include "../../util/hex.h"
#include "../../util/utf8.h"
#include "toml.h"
#include "xmalloc.h"

/* The reader's place in the text. */
struct rd {
	const char	*p, *end;
	unsigned	 line;
	char		*err;
	size_t		 errlen;
	bool		 booleans;	/* TOML_BOOLEANS */
};

static int	 fail(struct rd *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static void	 skip_blank(struct rd *);
static int	 end_of_line(struct rd *);
static int	 comment(struct rd *);
static int	 key(struct rd *, char **);
static int	 header(struct rd *, json_t *, json_t *, json_t **);
static int	 value(struct rd *, json_t **);
static int	 string(struct rd *, json_t **);
static int	 escape(struct rd *, struct buf *);
static int	 integer(struct rd *, json_t **);
static int	 array(struct rd *, json_t **);

/* "line N: ..." into err; -EINVAL. */
static int
fail(struct rd *r, const char *fmt, ...)
{
	va_list ap;
	int k;

	k = snprintf(r->err, r->errlen, "line %u: ", r->line);
	if (k >= 0 && (size_t)k < r->errlen) {
		va_start(ap, fmt);
		vsnprintf(r->err + k, r->errlen - (size_t)k, fmt, ap);
		va_end(ap);
	}
	utf8_scrub(r->err);	/* a cut may split a character */
	return -EINVAL;
}

/* Past spaces and tabs. */
static void
skip_blank(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t'))
		r->p++;
}

/* Whether a line ends at p: LF, CRLF, or the end of the text. */
static bool
at_eol(const struct rd *r)
{
	return r->p == r->end || *r->p == '\n' ||
	    (*r->p == '\r' && r->p + 1 < r->end && r->p[1] == '\n');
}

/* Past one line end (at_eol holds), counting it. */
static void
next_line(struct rd *r)
{
	if (r->p == r->end)
		return;
	r->p += *r->p == '\r' ? 2 : 1;
	r->line++;
}

/* A comment from its '#' to the line's end (not past it). */
static int
comment(struct rd *r)
{
	unsigned char c;

	for (r->p++; !at_eol(r); r->p++) {
		c = (unsigned char)*r->p;
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return fail(r, "control character U+%04X in a comment",
			    c);
	}
	return 0;
}

/* Blanks, a comment, and the line's end, which is passed. */
static int
end_of_line(struct rd *r)
{
	skip_blank(r);
	if (r->p < r->end && *r->p == '#' && comment(r) < 0)
		return -EINVAL;
	if (!at_eol(r)) {
		if (*r->p == '\r')
			return fail(r, "a carriage return must be followed by "
			    "a line feed");
		return fail(r, "expected the end of the line, found '%c'",
		    isprint((unsigned char)*r->p) ? *r->p : '?');
	}
	next_line(r);
	return 0;
}

/* A bare or quoted key, and the blanks after it, into *out. */
static int
key(struct rd *r, char **out)
{
	const char *k = r->p;
	json_t *s;

	if (r->p < r->end && (*r->p == '"' || *r->p == '\'')) {
		if (string(r, &s) < 0)
			return -EINVAL;
		if (strlen(json_string_value(s)) != json_string_length(s)) {
			json_decref(s);
			return fail(r, "a key must not contain NUL");
		}
		*out = xstrdup(json_string_value(s));
		json_decref(s);
	} else {
		while (r->p < r->end && (isalnum((unsigned char)*r->p) ||
		    *r->p == '_' || *r->p == '-'))
			r->p++;
		if (r->p == k)
			return fail(r, "expected a key");
		*out = xstrndup(k, (size_t)(r->p - k));
	}
	skip_blank(r);
	if (r->p < r->end && *r->p == '.') {
		free(*out);
		return fail(r, "dotted keys are not supported");
	}
	return 0;
}

/*
 * A [table] or [[array-of-tables]] header at p: the object that the
 * following keys go into, in *cur.  aot holds the names of the arrays of
 * tables.
 */
static int
header(struct rd *r, json_t *root, json_t *aot, json_t **cur)
{
	bool many = r->p + 1 < r->end && r->p[1] == '[';
	json_t *old, *t;
	char *name;

	r->p += many ? 2 : 1;
	skip_blank(r);
	if (key(r, &name) < 0)
		return -EINVAL;
	if (r->p >= r->end || *r->p != ']' || (many && (r->p + 1 >= r->end ||
	    r->p[1] != ']'))) {
		free(name);
		return fail(r, "expected '%s' to end the header",
		    many ? "]]" : "]");
	}
	r->p += many ? 2 : 1;
	old = json_object_get(root, name);
	if (old != NULL && !(many && json_object_get(aot, name) != NULL)) {
		fail(r, "\"%s\" is defined twice", name);
		free(name);
		return -EINVAL;
	}
	t = json_object();
	if (!many) {
		json_object_set_new(root, name, t);
	} else {
		if (old == NULL) {
			old = json_array();
			json_object_set_new(root, name, old);
			json_object_set_new(aot, name, json_true());
		}
		json_array_append_new(old, t);
	}
	free(name);
	*cur = t;
	return end_of_line(r);
}

/* \X at p (past the backslash) appended to b. */
static int
escape(struct rd *r, struct buf *b)
{
	static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
	const char *q;
	uint32_t cp = 0;
	unsigned char u[4];
	int k, d;

	if (r->p >= r->end)
		return fail(r, "unterminated string");
	if ((q = strchr(from, *r->p)) != NULL && *r->p != '\0') {
		buf_add(b, &to[q - from], 1);
		r->p++;
		return 0;
	}
	if (*r->p != 'u' && *r->p != 'U') {
		if (isprint((unsigned char)*r->p))
			return fail(r, "invalid escape \\%c", *r->p);
		return fail(r, "invalid escape");
	}
	k = *r->p == 'u' ? 4 : 8;
	r->p++;
	for (int i = 0; i < k; i++, r->p++) {
		if (r->p >= r->end || (d = hex_digit(*r->p)) < 0)
			return fail(r, "\\%c needs %d hexadecimal digits",
			    k == 4 ? 'u' : 'U', k);
		cp = cp << 4 | (uint32_t)d;
	}
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return fail(r, "\\%c%0*" PRIX32 " is not a Unicode scalar "
		    "value", k == 4 ? 'u' : 'U', k, cp);
	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		k = 1;
	} else if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | cp >> 6);
		u[1] = (unsigned char)(0x80 | (cp & 0x3f));
		k = 2;
	} else if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | cp >> 12);
		u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp & 0x3f));
		k = 3;
	} else {
		u[0] = (unsigned char)(0xf0 | cp >> 18);
		u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (unsigned char)(0x80 | (cp & 0x3f));
		k = 4;
	}
	buf_add(b, u, (size_t)k);
	return 0;
}

/* A basic or literal string on one line, at its quote. */
static int
string(struct rd *r, json_t **out)
{
	char q = *r->p;
	struct buf b;
	unsigned char c;

	if (r->end - r->p >= 3 && r->p[1] == q && r->p[2] == q)
		return fail(r, "multi-line strings are not supported");
	buf_init(&b);
	for (r->p++;; r->p++) {
		if (r->p >= r->end || *r->p == '\n' || *r->p == '\r') {
			buf_reset(&b);
			return fail(r, "unterminated string");
		}
		c = (unsigned char)*r->p;
		if (c == (unsigned char)q)
			break;
		if (c == '\\' && q == '"') {
			r->p++;
			if (escape(r, &b) < 0) {
				buf_reset(&b);
				return -EINVAL;
			}
			r->p--;
			continue;
		}
		if ((c < 0x20 && c != '\t') || c == 0x7f) {
			buf_reset(&b);
			return fail(r, "control character U+%04X in a string",
			    c);
		}
		buf_add(&b, r->p, 1);
	}
	r->p++;
	*out = json_stringn(b.p != NULL ? b.p : "", b.len);
	buf_reset(&b);
	if (*out == NULL)
		return fail(r, "a string is not valid UTF-8");
	return 0;
}

/*
 * An integer: decimal with an optional sign, or 0x, 0o, 0b without one;
 * '_' only between two digits; no leading zero; within int64.
 */
static int
integer(struct rd *r, json_t **out)
{
	const char *t = r->p, *s;
	size_t n;
	unsigned base = 10, d;
	uint64_t v = 0, lim;
	bool neg = false, digit = false, prefixed;

	while (r->p < r->end && (isalnum((unsigned char)*r->p) ||
	    strchr("_+-.:", *r->p) != NULL))
		r->p++;
	n = (size_t)(r->p - t);
	s = t;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	prefixed = s + 1 < t + n && s[0] == '0' && strchr("xob", s[1]) != NULL;
	if (memchr(t, '.', n) || memchr(t, ':', n) || (t + n - s == 3 &&
	    (memcmp(s, "inf", 3) == 0 || memcmp(s, "nan", 3) == 0)) ||
	    (!prefixed && (memchr(t, 'e', n) || memchr(t, 'E', n))) ||
	    (n > 1 && memchr(t + 1, '-', n - 1)))
		return fail(r, "floats and dates are not supported: %.*s",
		    (int)(n > 40 ? 40 : n), t);
	if (prefixed) {
		base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
		if (s != t)
			goto bad;
		s += 2;
	} else if (s + 1 < t + n && s[0] == '0') {
		goto bad;	/* a leading zero */
	}
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; s < t + n; s++) {
		if (*s == '_') {
			if (!digit || s + 1 == t + n ||
			    !isxdigit((unsigned char)s[1]))
				goto bad;
			digit = false;
			continue;
		}
		if (hex_digit(*s) < 0 || (d = (unsigned)hex_digit(*s)) >= base)
			goto bad;
		if (v > (lim - d) / base)
			return fail(r, "integer out of range: %.*s",
			    (int)(n > 40 ? 40 : n), t);
		v = v * base + d;
		digit = true;
	}
	if (!digit)
		goto bad;
	*out = json_integer(neg ? (json_int_t)(0 - v) : (json_int_t)v);
	return 0;
bad:
	return fail(r, "invalid integer: %.*s", (int)(n > 40 ? 40 : n), t);
}

/* Blanks, line ends and comments inside an array. */
static int
array_space(struct rd *r)
{
	for (;;) {
		skip_blank(r);
		if (r->p < r->end && *r->p == '#' && comment(r) < 0)
			return -EINVAL;
		if (r->p == r->end || !at_eol(r))
			return 0;
		next_line(r);
	}
}

/* An array of strings at its '['. */
static int
array(struct rd *r, json_t **out)
{
	json_t *a = json_array(), *s;
	bool need_comma = false;

	r->p++;
	for (;;) {
		if (array_space(r) < 0)
			goto fail;
		if (r->p == r->end) {
			fail(r, "unterminated array");
			goto fail;
		}
		if (*r->p == ']') {
			r->p++;
			*out = a;
			return 0;
		}
		if (need_comma) {
			if (*r->p != ',') {
				fail(r, "expected ',' or ']' in an array");
				goto fail;
			}
			r->p++;
			need_comma = false;
			continue;
		}
		if (*r->p == '[') {
			fail(r, "nested arrays are not supported");
			goto fail;
		}
		if (*r->p != '"' && *r->p != '\'') {
			fail(r, "an array may hold only strings");
			goto fail;
		}
		if (string(r, &s) < 0)
			goto fail;
		json_array_append_new(a, s);
		need_comma = true;
	}
fail:
	json_decref(a);
	return -EINVAL;
}

/* The value after '='. */
static int
value(struct rd *r, json_t **out)
{
	char c;

	if (r->p == r->end || at_eol(r))
		return fail(r, "a key must have a value");
	c = *r->p;
	if (c == '"' || c == '\'')
		return string(r, out);
	if (c == '[')
		return array(r, out);
	if (c == '{')
		return fail(r, "inline tables are not supported");
	if ((r->end - r->p >= 4 && memcmp(r->p, "true", 4) == 0) ||
	    (r->end - r->p >= 5 && memcmp(r->p, "false", 5) == 0)) {
		size_t n = *r->p == 't' ? 4 : 5;

		if (!r->booleans)
			return fail(r, "booleans are not supported");
		/* The word whole: end_of_line refuses "truex" after it. */
		*out = n == 4 ? json_true() : json_false();
		r->p += n;
		return 0;
	}
	if (isdigit((unsigned char)c) || c == '+' || c == '-' ||
	    (r->end - r->p >= 3 && (memcmp(r->p, "inf", 3) == 0 ||
	    memcmp(r->p, "nan", 3) == 0)))
		return integer(r, out);
	return fail(r, "a value must be a string, an integer or an array of "
	    "strings");
}

/* See toml.h. */
int
toml_parse(const char *s, size_t n, json_t **out, char *err, size_t errlen)
{
	return toml_parse_flags(s, n, 0, out, err, errlen);
}

/* See toml.h. */
int
toml_parse_flags(const char *s, size_t n, unsigned flags, json_t **out,
    char *err, size_t errlen)
{
	struct rd r = { s, s + n, 1, err, errlen,
	    (flags & TOML_BOOLEANS) != 0 };
	json_t *root = json_object(), *aot = json_object(), *cur = root, *v;
	const unsigned char *u = (const unsigned char *)s;
	char *k;
	size_t len;

	/* 1. All UTF-8, or the line of the first byte that is not. */
	for (size_t i = 0; i < n; i += len) {
		if ((len = utf8_len(u + i, n - i)) == 0) {
			r.p = s + i;
			for (size_t j = 0; j < i; j++)
				r.line += s[j] == '\n';
			fail(&r, "invalid UTF-8");
			goto fail;
		}
	}
	/* 2. A line at a time. */
	while (r.p < r.end) {
		skip_blank(&r);
		if (at_eol(&r) || *r.p == '#' || *r.p == '\r') {
			if (end_of_line(&r) < 0)
				goto fail;
			continue;
		}
		if (*r.p == '[') {
			if (header(&r, root, aot, &cur) < 0)
				goto fail;
			continue;
		}
		if (key(&r, &k) < 0)
			goto fail;
		if (r.p >= r.end || *r.p != '=') {
			free(k);
			fail(&r, "expected '=' after a key");
			goto fail;
		}
		r.p++;
		skip_blank(&r);
		if (json_object_get(cur, k) != NULL) {
			fail(&r, "key \"%s\" is defined twice", k);
			free(k);
			goto fail;
		}
		if (value(&r, &v) < 0) {
			free(k);
			goto fail;
		}
		json_object_set_new(cur, k, v);
		free(k);
		if (end_of_line(&r) < 0)
			goto fail;
	}
	json_decref(aot);
	*out = root;
	return 0;
fail:
	json_decref(aot);
	json_decref(root);
	return -EINVAL;
}

/* --- the writer --- */

/* s[0..n) as a basic string, control characters escaped. */
static void
dump_string(struct buf *b, const char *s, size_t n)
{
	unsigned char c;

	buf_add(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			buf_addf(b, "\\%c", c);
		else if (c == '\n')
			buf_adds(b, "\\n");
		else if (c == '\t')
			buf_adds(b, "\\t");
		else if (c < 0x20 || c == 0x7f)
			buf_addf(b, "\\u%04X", c);
		else
			buf_add(b, &s[i], 1);
	}
	buf_add(b, "\"", 1);
}

/* k bare where it may be, else quoted. */
static void
dump_key(struct buf *b, const char *k)
{
	size_t i;

	for (i = 0; k[i] != '\0'; i++)
		if (!isalnum((unsigned char)k[i]) && k[i] != '_' && k[i] != '-')
			break;
	if (i > 0 && k[i] == '\0')
		buf_adds(b, k);
	else
		dump_string(b, k, strlen(k));
}

/* key = value for a string, an integer or an array of strings. */
static int
dump_pair(struct buf *b, const char *k, const json_t *v)
{
	const json_t *e;
	size_t i;

	dump_key(b, k);
	buf_adds(b, " = ");
	if (json_is_string(v)) {
		dump_string(b, json_string_value(v), json_string_length(v));
	} else if (json_is_integer(v)) {
		buf_addi(b, (long long)json_integer_value(v));
	} else if (json_is_boolean(v)) {
		buf_adds(b, json_is_true(v) ? "true" : "false");
	} else if (json_is_array(v)) {
		buf_adds(b, "[");
		json_array_foreach(v, i, e) {
			if (!json_is_string(e))
				return -EINVAL;
			if (i > 0)
				buf_adds(b, ", ");
			dump_string(b, json_string_value(e),
			    json_string_length(e));
		}
		buf_adds(b, "]");
	} else {
		return -EINVAL;
	}
	buf_adds(b, "\n");
	return 0;
}

/* Whether v is a non-empty array of objects: an array of tables. */
static bool
is_aot(const json_t *v)
{
	const json_t *e;
	size_t i;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return false;
	json_array_foreach(v, i, e)
		if (!json_is_object(e))
			return false;
	return true;
}

/* One table's pairs under its header. */
static int
dump_table(struct buf *b, const char *k, const json_t *t, bool many)
{
	const char *tk;
	const json_t *tv;

	buf_adds(b, many ? "\n[[" : "\n[");
	dump_key(b, k);
	buf_adds(b, many ? "]]\n" : "]\n");
	json_object_foreach((json_t *)(uintptr_t)t, tk, tv)
		if (dump_pair(b, tk, tv) < 0)
			return -EINVAL;
	return 0;
}

/* See toml.h. */
char *
toml_dump(const json_t *v)
{
	struct buf b;
	const char *k;
	const json_t *e, *x;
	size_t i;
	char *s;

	if (!json_is_object(v))
		goto bad;
	buf_init(&b);
	json_object_foreach((json_t *)(uintptr_t)v, k, e)
		if (!json_is_object(e) && !is_aot(e) && dump_pair(&b, k, e) < 0)
			goto bad_buf;
	json_object_foreach((json_t *)(uintptr_t)v, k, e) {
		if (json_is_object(e) && dump_table(&b, k, e, false) < 0)
			goto bad_buf;
		if (!is_aot(e))
			continue;
		json_array_foreach(e, i, x)
			if (dump_table(&b, k, x, true) < 0)
				goto bad_buf;
	}
	s = xstrndup(b.p != NULL ? b.p : "", b.len);
	buf_reset(&b);
	return s;
bad_buf:
	buf_reset(&b);
bad:
	errno = EINVAL;
	return NULL;
}
