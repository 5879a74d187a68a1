/*
 * isoconf.c -- the isolation configuration file (see isoconf.h).
 *
 * Upstream's file is TOML: upper_root, upper_max_bytes, diff_max_bytes,
 * allowed_writable at the root, and the tables [seccomp], [hardening],
 * [landlock], [ebpf].  Read with core/toml.c (booleans on); the reader
 * keeps no lines, so a key's line is found again in the text for the
 * messages.  A key execd cannot honour in a way that would leave the
 * sessions less confined than the file asks is refused; one it need not
 * honour (a setting that would loosen, or only observe) is warned about.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "../../util/buf.h"
#include "../core/toml.h"
#include "../core/xmalloc.h"
#include "isoconf.h"

#define ISOCONF_FILE_MAX	(1 << 20)

/* Where a file's keys are, for its messages. */
struct where {
	const char	*path;
	const char	*s;
	size_t		 n;
	char		*err;
	size_t		 errlen;
};

/* Past spaces and tabs from p, before end. */
static const char *
blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/*
 * Whether the text at q (before end) is name, bare or quoted, followed
 * by what is in stops (after blanks); *after is past it.
 */
static bool
names(const char *q, const char *end, const char *name, const char *stops)
{
	size_t l = strlen(name);
	char quote = 0;

	if (q < end && (*q == '"' || *q == '\''))
		quote = *q++;
	if ((size_t)(end - q) < l || memcmp(q, name, l) != 0)
		return false;
	q += l;
	if (quote != 0 && (q == end || *q++ != quote))
		return false;
	q = blanks(q, end);
	return q < end && strchr(stops, *q) != NULL;
}

/*
 * The line of key in table (NULL: the root), or of the table's header
 * when key is NULL; 1 when not found.
 */
static unsigned
line_of(const struct where *w, const char *table, const char *key)
{
	const char *p = w->s, *end = w->s + w->n, *e, *q;
	unsigned line = 1, header = 1;
	bool in = table == NULL;

	for (; p < end; p = e + 1, line++) {
		if ((e = memchr(p, '\n', (size_t)(end - p))) == NULL)
			e = end;
		q = blanks(p, e);
		if (q < e && *q == '[') {
			q = blanks(q + 1, e);
			in = table != NULL && names(q, e, table, "]");
			if (in)
				header = line;
			if (in && key == NULL)
				return line;
		} else if (in && key != NULL && names(q, e, key, "=")) {
			return line;
		}
	}
	return header;
}

/* "PATH:LINE: why" into w->err; -EINVAL. */
static int __attribute__((format(printf, 4, 5)))
bad(const struct where *w, const char *table, const char *key,
    const char *fmt, ...)
{
	va_list ap;
	int k;

	k = snprintf(w->err, w->errlen, "%s:%u: ", w->path,
	    line_of(w, table, key));
	if (k >= 0 && (size_t)k < w->errlen) {
		va_start(ap, fmt);
		vsnprintf(w->err + k, w->errlen - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static void __attribute__((format(printf, 5, 6)))
warn(const struct where *w, struct isoconf *c, const char *table,
    const char *key, const char *fmt, ...)
{
	va_list ap;
	char *m;
	int k;

	if (c->nwarn == ISOCONF_WARNINGS)
		return;
	m = c->warn[c->nwarn++];
	k = snprintf(m, sizeof(c->warn[0]), "%s:%u: ", w->path,
	    line_of(w, table, key));
	if (k >= 0 && (size_t)k < sizeof(c->warn[0])) {
		va_start(ap, fmt);
		vsnprintf(m + k, sizeof(c->warn[0]) - (size_t)k, fmt, ap);
		va_end(ap);
	}
}

/* v as a string without NUL into *out (new), or -EINVAL. */
static int
str(const struct where *w, const char *table, const char *key,
    const json_t *v, bool absolute, char **out)
{
	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return bad(w, table, key, "%s must be a string", key);
	if (absolute && json_string_value(v)[0] != '/')
		return bad(w, table, key, "%s must be an absolute path, not "
		    "\"%s\"", key, json_string_value(v));
	*out = xstrdup(json_string_value(v));
	return 0;
}

/* v as bytes (an integer, 0 or more) into *out, or -EINVAL. */
static int
bytes(const struct where *w, const char *key, const json_t *v,
    unsigned long long *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return bad(w, NULL, key, "%s must be a number of bytes (an "
		    "integer, 0 or more)", key);
	*out = (unsigned long long)json_integer_value(v);
	return 0;
}

/* v as an array of strings (absolute when asked), or -EINVAL. */
static int
strings(const struct where *w, const char *table, const char *key,
    const json_t *v, bool absolute)
{
	const json_t *e;
	size_t i;

	if (!json_is_array(v))
		return bad(w, table, key, "%s must be an array of strings",
		    key);
	json_array_foreach(v, i, e) {
		if (!json_is_string(e) || strlen(json_string_value(e)) !=
		    json_string_length(e))
			return bad(w, table, key, "%s must be an array of "
			    "strings", key);
		if (absolute && json_string_value(e)[0] != '/')
			return bad(w, table, key, "%s[%zu] must be an "
			    "absolute path, not \"%s\"", key, i,
			    json_string_value(e));
	}
	return 0;
}

/* A table's "enabled": 0 false or absent, 1 true, -EINVAL. */
static int
enabled(const struct where *w, const char *table, const json_t *t)
{
	const json_t *v = json_object_get(t, "enabled");

	if (v == NULL)
		return 0;
	if (!json_is_boolean(v))
		return bad(w, table, "enabled", "enabled must be true or "
		    "false");
	return json_is_true(v) ? 1 : 0;
}

/* The root's keys. */
static int
root_key(const struct where *w, struct isoconf *c, const char *k,
    const json_t *v)
{
	const json_t *e;
	size_t i;

	if (strcmp(k, "upper_root") == 0) {
		free(c->upper_root);
		c->upper_root = NULL;
		return str(w, NULL, k, v, true, &c->upper_root);
	}
	if (strcmp(k, "upper_max_bytes") == 0) {
		if (bytes(w, k, v, &c->upper_max) < 0)
			return -EINVAL;
		if (c->upper_max > 0 && c->upper_max < 4096)
			return bad(w, NULL, k, "upper_max_bytes must be 0 (no "
			    "cap) or at least 4096");
		c->has_upper_max = true;
		return 0;
	}
	if (strcmp(k, "diff_max_bytes") == 0) {
		c->has_diff_max = true;
		return bytes(w, k, v, &c->diff_max);
	}
	if (strcmp(k, "allowed_writable") == 0) {
		if (strings(w, NULL, k, v, true) < 0)
			return -EINVAL;
		c->has_allowed = true;
		c->nallowed = json_array_size(v);
		c->allowed = xcalloc(c->nallowed + 1, sizeof(*c->allowed));
		json_array_foreach(v, i, e)
			c->allowed[i] = xstrdup(json_string_value(e));
		return 0;
	}
	return bad(w, NULL, k, "unknown key %s (the root's are upper_root, "
	    "upper_max_bytes, diff_max_bytes, allowed_writable)", k);
}

/* Every key of table t is one of those named (NULL-terminated). */
static int
only(const struct where *w, const char *table, const json_t *t,
    const char *const *known)
{
	const char *k;
	json_t *v;
	bool ok;

	json_object_foreach((json_t *)(uintptr_t)t, k, v) {
		ok = false;
		for (const char *const *n = known; *n != NULL; n++)
			ok = ok || strcmp(k, *n) == 0;
		if (!ok)
			return bad(w, table, k, "unknown key %s in [%s]", k,
			    table);
	}
	return 0;
}

static int
seccomp_table(const struct where *w, const json_t *t)
{
	static const char *const known[] = { "deny", NULL };

	if (only(w, "seccomp", t, known) < 0)
		return -EINVAL;
	if (json_object_get(t, "deny") != NULL)
		return bad(w, "seccomp", "deny", "[seccomp] deny is not "
		    "supported: the filter of every child, a session's shell "
		    "too, is execd's --seccomp profile (groups of calls, see "
		    "docs/isolation.md), not a list of calls");
	return 0;
}

static int
hardening_table(const struct where *w, struct isoconf *c, const json_t *t)
{
	static const char *const known[] = { "enabled", "keep_capabilities",
	    NULL };
	const json_t *caps = json_object_get(t, "keep_capabilities"), *e;
	struct buf b;
	size_t i;
	int on;

	if (only(w, "hardening", t, known) < 0 ||
	    (on = enabled(w, "hardening", t)) < 0)
		return -EINVAL;
	if (caps != NULL && strings(w, "hardening", "keep_capabilities", caps,
	    false) < 0)
		return -EINVAL;
	if (!on && json_object_get(t, "enabled") != NULL)
		warn(w, c, "hardening", "enabled", "[hardening] enabled = "
		    "false has no effect: execd drops capabilities, sets "
		    "no_new_privs and loads its seccomp filter in every child "
		    "(--capabilities, --no-new-privs, --seccomp say how)");
	if (caps == NULL)
		return 0;
	if (!on) {
		warn(w, c, "hardening", "keep_capabilities", "[hardening] "
		    "keep_capabilities is not applied: [hardening] enabled is "
		    "not true");
		return 0;
	}
	/* Children's bounding set: --capabilities's list. */
	buf_init(&b);
	json_array_foreach(caps, i, e) {
		if (i > 0)
			buf_adds(&b, ",");
		buf_adds(&b, json_string_value(e));
	}
	buf_add(&b, "", 1);
	free(c->caps);
	c->caps = xstrdup(json_array_size(caps) == 0 ? "none" : b.p);
	buf_reset(&b);
	return 0;
}

/* [landlock] and [ebpf]: not in execd; refused when enabled. */
static int
absent_table(const struct where *w, struct isoconf *c, const char *table,
    const json_t *t)
{
	static const char *const landlock[] = { "enabled", "extra_writable",
	    "extra_readable", NULL };
	static const char *const ebpf[] = { "enabled", "observe",
	    "audit_file", NULL };
	bool ll = strcmp(table, "landlock") == 0;
	const char *k;
	json_t *v;
	int on;

	if (only(w, table, t, ll ? landlock : ebpf) < 0 ||
	    (on = enabled(w, table, t)) < 0)
		return -EINVAL;
	if (on)
		return bad(w, table, "enabled", "[%s] enabled = true is not "
		    "supported: execd has no %s; sessions are confined by "
		    "their namespaces, the seccomp filter, capabilities and "
		    "limits (docs/isolation.md)", table, ll ?
		    "Landlock confinement" : "eBPF audit");
	json_object_foreach((json_t *)(uintptr_t)t, k, v)
		if (strcmp(k, "enabled") != 0)
			warn(w, c, table, k, "[%s] %s is not applied: execd "
			    "has no %s", table, k, ll ? "Landlock" : "eBPF");
	return 0;
}

int
isoconf_parse(const char *path, const char *s, size_t n, struct isoconf *c,
    char *err, size_t errlen)
{
	struct where w = { path, s, n, err, errlen };
	char e[256];
	json_t *root = NULL, *v;
	const char *k;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	if (toml_parse_flags(s, n, TOML_BOOLEANS, &root, e, sizeof(e)) < 0) {
		/* "line N: why" */
		snprintf(err, errlen, "%s:%s", path,
		    strncmp(e, "line ", 5) == 0 ? e + 5 : e);
		return -EINVAL;
	}
	json_object_foreach(root, k, v) {
		if (!json_is_object(v) && !(json_is_array(v) &&
		    json_array_size(v) > 0 &&
		    json_is_object(json_array_get(v, 0))))
			rc = root_key(&w, c, k, v);
		else if (!json_is_object(v))
			rc = bad(&w, k, NULL, "[[%s]] is not a table of the "
			    "isolation configuration", k);
		else if (strcmp(k, "seccomp") == 0)
			rc = seccomp_table(&w, v);
		else if (strcmp(k, "hardening") == 0)
			rc = hardening_table(&w, c, v);
		else if (strcmp(k, "landlock") == 0 || strcmp(k, "ebpf") == 0)
			rc = absent_table(&w, c, k, v);
		else
			rc = bad(&w, k, NULL, "unknown table [%s] (the tables "
			    "are [seccomp], [hardening], [landlock], [ebpf])",
			    k);
		if (rc < 0)
			break;
	}
	json_decref(root);
	if (rc < 0)
		isoconf_free(c);
	return rc;
}

int
isoconf_load(const char *path, struct isoconf *c, char *err, size_t errlen)
{
	struct buf b;
	char chunk[8192];
	ssize_t got;
	int fd, rc, e;

	memset(c, 0, sizeof(*c));
	buf_init(&b);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
		e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	while ((got = read(fd, chunk, sizeof(chunk))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 || b.len + (size_t)got > ISOCONF_FILE_MAX) {
			e = got < 0 ? errno : EFBIG;
			snprintf(err, errlen, "%s: %s", path, strerror(e));
			close(fd);
			buf_reset(&b);
			return -e;
		}
		buf_add(&b, chunk, (size_t)got);
	}
	close(fd);
	rc = isoconf_parse(path, b.len > 0 ? b.p : "", b.len, c, err,
	    errlen);
	buf_reset(&b);
	return rc;
}

void
isoconf_free(struct isoconf *c)
{
	free(c->upper_root);
	for (size_t i = 0; i < c->nallowed; i++)
		free(c->allowed[i]);
	free(c->allowed);
	free(c->caps);
	c->upper_root = NULL;
	c->allowed = NULL;
	c->nallowed = 0;
	c->caps = NULL;
}
