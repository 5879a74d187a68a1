/*
 * policy.c -- read and print the YAML policy file (see policy.h).
 *
 * The reader walks libyaml's events, not a document tree: a file is one
 * mapping of keys to single values, and "limits" nests two levels more,
 * so each level is one function that expects exactly its shape and stops
 * at the first event it did not expect, with that event's line and
 * column.  Aliases are refused (nothing here needs them, and they are how
 * a small file expands into a large one).  Which keys exist and what each
 * accepts is conf.c's table, read through conf_key_get and conf_key_set:
 * this file holds no list of options.  Limits go to conf_limits_parse,
 * after limits_set has checked each one on its own.
 *
 * The printer writes the same shapes back with every option's help as a
 * comment, values quoted only when YAML would read them otherwise.
 */
#include <errno.h>
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <yaml.h>

#include "conf.h"
#include "limits.h"
#include "log.h"
#include "policy.h"
#include "xmalloc.h"

#define MSG	256	/* one message from conf.c or limits.c */
#define LANG_RULE	"a language must be a name (letters, digits, _ + -)"

struct rd {
	yaml_parser_t	 p;
	const char	*name;		/* the file, for messages */
	struct conf	*c;
	char		*err;
	size_t		 errlen;
};

static int	fail(struct rd *, const yaml_mark_t *, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static int	next(struct rd *, yaml_event_t *);
static int	map_start(struct rd *, const char *);
static int	map_key(struct rd *, yaml_event_t *, const char *);
static int	read_top(struct rd *);
static int	read_option(struct rd *, const yaml_event_t *);
static int	read_limits(struct rd *);
static int	read_languages(struct rd *);
static int	read_kind(struct rd *, const char *, const char *);
static int	scalar_value(struct rd *, const char *, yaml_event_t *);
static const char *shape(const yaml_event_t *);
static bool	is_null(const yaml_event_t *);
static bool	null_text(const char *);
static void	put_value(FILE *, const char *);
static void	put_comment(FILE *, const char *);
static void	put_limits(FILE *, const struct limits *);

/* "NAME:LINE:COL: message" into err; -EINVAL. */
static int
fail(struct rd *r, const yaml_mark_t *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(r->err, r->errlen, "%s:%zu:%zu: ", r->name, m->line + 1,
	    m->column + 1);
	if (n < 0 || (size_t)n >= r->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The next event into ev (the caller deletes it); 0 or -EINVAL. */
static int
next(struct rd *r, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&r->p, ev)) {
		if (r->p.context != NULL)
			return fail(r, &r->p.problem_mark, "%s %s",
			    r->p.problem, r->p.context);
		return fail(r, &r->p.problem_mark, "%s", r->p.problem != NULL ?
		    r->p.problem : "not YAML");
	}
	if (ev->type == YAML_ALIAS_EVENT) {
		fail(r, &ev->start_mark, "aliases (*name) are not allowed");
		yaml_event_delete(ev);
		return -EINVAL;
	}
	return 0;
}

/*
 * The start of a mapping, or "WANTS, not <what came>" at what came
 * instead (want says what the mapping is for).
 */
static int
map_start(struct rd *r, const char *want)
{
	yaml_event_t ev;
	int rc;

	if ((rc = next(r, &ev)) < 0)
		return rc;
	if (ev.type != YAML_MAPPING_START_EVENT)
		rc = fail(r, &ev.start_mark, "%s, not %s", want, shape(&ev));
	yaml_event_delete(&ev);
	return rc;
}

/*
 * The next key of a mapping into key, a scalar the caller deletes: 1; 0
 * at the mapping's end; or "RULE, not <what came>" for a key that is not
 * a name.
 */
static int
map_key(struct rd *r, yaml_event_t *key, const char *rule)
{
	int rc;

	if ((rc = next(r, key)) < 0)
		return rc;
	if (key->type == YAML_MAPPING_END_EVENT) {
		yaml_event_delete(key);
		return 0;
	}
	if (key->type != YAML_SCALAR_EVENT) {
		rc = fail(r, &key->start_mark, "%s, not %s", rule, shape(key));
		yaml_event_delete(key);
		return rc;
	}
	return 1;
}

/* What an event holds, for messages. */
static const char *
shape(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_SEQUENCE_START_EVENT:
		return "a list";
	case YAML_SCALAR_EVENT:
		return "a single value";
	default:
		return "the end";
	}
}

/* Text that YAML reads as null when it is written plain. */
static bool
null_text(const char *v)
{
	return v[0] == '\0' || strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0;
}

/* A plain empty, "~" or "null" scalar: YAML's null. */
static bool
is_null(const yaml_event_t *ev)
{
	return ev->type == YAML_SCALAR_EVENT &&
	    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    null_text((const char *)ev->data.scalar.value);
}

/*
 * The next event, which must be one value for key (what): 0 with ev
 * set (the caller deletes it), or -EINVAL.
 */
static int
scalar_value(struct rd *r, const char *what, yaml_event_t *ev)
{
	int rc;

	if ((rc = next(r, ev)) < 0)
		return rc;
	if (ev->type != YAML_SCALAR_EVENT)
		rc = fail(r, &ev->start_mark, "%s wants a single value, not "
		    "%s", what, shape(ev));
	else if (is_null(ev))
		rc = fail(r, &ev->start_mark, "%s has no value", what);
	else if (strlen((const char *)ev->data.scalar.value) !=
	    ev->data.scalar.length)
		rc = fail(r, &ev->start_mark, "%s: a NUL character in the "
		    "value", what);
	if (rc < 0)
		yaml_event_delete(ev);
	return rc;
}

/* The whole stream: one document, one mapping (or nothing). */
int
policy_parse(struct conf *c, const char *name, const char *text, size_t len,
    char *err, size_t errlen)
{
	struct rd r = { .name = name, .c = c, .err = err, .errlen = errlen };
	yaml_event_t ev;
	int rc, docs = 0;

	if (!yaml_parser_initialize(&r.p))
		fatalx("yaml_parser_initialize: out of memory");
	yaml_parser_set_input_string(&r.p, (const unsigned char *)text, len);
	for (;;) {
		if ((rc = next(&r, &ev)) < 0)
			break;
		if (ev.type == YAML_STREAM_END_EVENT)
			break;
		if (ev.type == YAML_DOCUMENT_START_EVENT && docs++ > 0) {
			rc = fail(&r, &ev.start_mark, "one document only");
			break;
		}
		if (ev.type == YAML_MAPPING_START_EVENT) {
			yaml_event_delete(&ev);
			if ((rc = read_top(&r)) < 0)
				goto out;
			continue;
		}
		if ((ev.type == YAML_SCALAR_EVENT && !is_null(&ev)) ||
		    ev.type == YAML_SEQUENCE_START_EVENT) {
			rc = fail(&r, &ev.start_mark, "the file must be a "
			    "mapping of options (key: value), not %s",
			    shape(&ev));
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_event_delete(&ev);
out:
	yaml_parser_delete(&r.p);
	return rc;
}

/* The top mapping's keys, after its start, up to its end. */
static int
read_top(struct rd *r)
{
	yaml_event_t key;
	yaml_mark_t seen[CONF_MAX_OPTS + 1];	/* the last: limits */
	bool have[CONF_MAX_OPTS + 1] = { false };
	struct conf_key k;
	const char *s;
	char name[64];
	size_t i;
	int rc;

	while ((rc = map_key(r, &key, "a key must be a name")) > 0) {
		s = (const char *)key.data.scalar.value;
		snprintf(name, sizeof(name), "%s", s);
		for (char *p = name; *p != '\0'; p++)
			if (*p == '-')
				*p = '_';
		if (strcmp(name, "limits") == 0)
			i = CONF_MAX_OPTS;
		else
			for (i = 0; conf_key_get(i, &k) == 0; i++)
				if (strlen(s) < sizeof(name) &&
				    strcmp(k.key, name) == 0)
					break;
		if (i < CONF_MAX_OPTS && conf_key_get(i, &k) < 0) {
			rc = fail(r, &key.start_mark, "unknown key '%.64s'%s",
			    s, strcmp(name, "config") == 0 ? " (a file "
			    "cannot name another)" : "");
			goto out;
		}
		if (have[i]) {
			rc = fail(r, &key.start_mark, "'%s' given twice (first "
			    "at line %zu)", s, seen[i].line + 1);
			goto out;
		}
		have[i] = true;
		seen[i] = key.start_mark;
		rc = i == CONF_MAX_OPTS ? read_limits(r) : read_option(r, &key);
		if (rc < 0)
			goto out;
		yaml_event_delete(&key);
	}
	return rc;
out:
	yaml_event_delete(&key);
	return rc;
}

/* The value of one option of conf.c's table, named by key. */
static int
read_option(struct rd *r, const yaml_event_t *key)
{
	static const char *const yes[] = { "true", "on", "yes", "y" };
	static const char *const no[] = { "false", "off", "no", "n" };
	const char *s = (const char *)key->data.scalar.value, *v;
	struct conf_key k;
	yaml_event_t ev;
	char msg[MSG], name[64];
	size_t i;
	int rc;

	snprintf(name, sizeof(name), "%s", s);
	for (char *p = name; *p != '\0'; p++)
		if (*p == '-')
			*p = '_';
	for (i = 0; conf_key_get(i, &k) == 0; i++)
		if (strcmp(k.key, name) == 0)
			break;
	if ((rc = scalar_value(r, s, &ev)) < 0)
		return rc;
	v = (const char *)ev.data.scalar.value;
	/* YAML's booleans, for options that take yes or no. */
	if (strcmp(k.metavar, "yes|no") == 0 &&
	    ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		for (size_t j = 0; j < sizeof(yes) / sizeof(yes[0]); j++) {
			if (strcasecmp(v, yes[j]) == 0)
				v = "yes";
			else if (strcasecmp(v, no[j]) == 0)
				v = "no";
		}
	msg[0] = '\0';
	if (conf_key_set(r->c, i, v, msg, sizeof(msg)) < 0)
		rc = fail(r, &ev.start_mark, "%s: %s", s, msg);
	yaml_event_delete(&ev);
	return rc;
}

/* limits: a mapping of kinds and "languages", each a mapping. */
static int
read_limits(struct rd *r)
{
	yaml_event_t ev;
	enum limits_kind kind;
	unsigned seen = 0, bit;
	char kname[16];
	const char *s;
	int rc;

	if ((rc = map_start(r, "limits wants a mapping of command, session, "
	    "context, pty and languages")) < 0)
		return rc;
	while ((rc = map_key(r, &ev, "a key of limits must be a name")) > 0) {
		s = (const char *)ev.data.scalar.value;
		if (strcmp(s, "languages") == 0)
			bit = 1u << LIMITS_NKINDS;
		else if (limits_kind_parse(s, &kind) == 0)
			bit = 1u << kind;
		else {
			rc = fail(r, &ev.start_mark, "unknown key 'limits.%.64s'"
			    " (command, session, context, pty, languages)", s);
			goto out;
		}
		if (seen & bit) {
			rc = fail(r, &ev.start_mark, "'limits.%s' given twice",
			    s);
			goto out;
		}
		seen |= bit;
		snprintf(kname, sizeof(kname), "%s", s);
		if (bit == 1u << LIMITS_NKINDS)
			rc = read_languages(r);
		else
			rc = read_kind(r, kname, kname);
		if (rc < 0)
			goto out;
		yaml_event_delete(&ev);
	}
	return rc;
out:
	yaml_event_delete(&ev);
	return rc;
}

/* limits.languages: language names to mappings of limits. */
static int
read_languages(struct rd *r)
{
	yaml_event_t ev;
	char where[128], prefix[80];
	const char *s;
	int rc;

	if ((rc = map_start(r, "limits.languages wants a mapping of "
	    "language names")) < 0)
		return rc;
	while ((rc = map_key(r, &ev, LANG_RULE)) > 0) {
		s = (const char *)ev.data.scalar.value;
		if (s[0] == '\0' || strlen(s) >= 64 ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-") != strlen(s)) {
			rc = fail(r, &ev.start_mark, "%s, not this",
			    LANG_RULE);
			goto out;
		}
		snprintf(where, sizeof(where), "languages.%s", s);
		snprintf(prefix, sizeof(prefix), "context.%s", s);
		for (size_t i = 0; i < r->c->nlang_limits; i++)
			if (strcmp(r->c->lang_limits[i].lang, s) == 0 &&
			    r->c->lang_limits[i].l.set != 0) {
				rc = fail(r, &ev.start_mark, "'limits.%s' "
				    "given twice", where);
				goto out;
			}
		if ((rc = read_kind(r, where, prefix)) < 0)
			goto out;
		yaml_event_delete(&ev);
	}
	return rc;
out:
	yaml_event_delete(&ev);
	return rc;
}

/*
 * One mapping of limits (memory: 256MiB ...), for limits.WHERE, set
 * through --limit's syntax as PREFIX.KEY=VALUE.
 */
static int
read_kind(struct rd *r, const char *where, const char *prefix)
{
	struct limits one;
	yaml_event_t key, val;
	char msg[MSG], what[192], text[256], want[256];
	unsigned seen = 0;
	const char *k, *v;
	int rc;

	snprintf(want, sizeof(want), "limits.%s wants a mapping of limits "
	    "(memory, processes, cpu_seconds, file_size, open_files, core)",
	    where);
	if ((rc = map_start(r, want)) < 0)
		return rc;
	while ((rc = map_key(r, &key, "a limit must be a name")) > 0) {
		k = (const char *)key.data.scalar.value;
		snprintf(what, sizeof(what), "limits.%s.%.32s", where, k);
		memset(&one, 0, sizeof(one));
		msg[0] = '\0';
		/* The key alone first: "unknown limit" at the key. */
		if (limits_set(&one, k, "unlimited", msg, sizeof(msg)) < 0) {
			rc = fail(r, &key.start_mark, "%s", msg);
			goto out;
		}
		if (seen & one.set) {
			rc = fail(r, &key.start_mark, "'%s' given twice", what);
			goto out;
		}
		seen |= one.set;
		if ((rc = scalar_value(r, what, &val)) < 0)
			goto out;
		v = (const char *)val.data.scalar.value;
		/* Checked alone for its message, then set as --limit is. */
		if (limits_set(&one, k, v, msg, sizeof(msg)) < 0)
			rc = fail(r, &val.start_mark, "%s: %s", what, msg);
		else if (snprintf(text, sizeof(text), "%s.%s=%s", prefix, k,
		    v) >= (int)sizeof(text))
			rc = fail(r, &val.start_mark, "%s: too long", what);
		else if (conf_limits_parse(r->c, text, msg, sizeof(msg)) < 0)
			rc = fail(r, &val.start_mark, "%s: %s", what, msg);
		yaml_event_delete(&val);
		if (rc < 0)
			goto out;
		yaml_event_delete(&key);
	}
	return rc;
out:
	yaml_event_delete(&key);
	return rc;
}

/* Read the file at path, at most POLICY_MAX bytes; see policy.h. */
int
policy_load(struct conf *c, const char *path, char *err, size_t errlen)
{
	char *buf;
	ssize_t n;
	size_t len = 0;
	int fd, e = 0, rc;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -EINVAL;
	}
	buf = xmalloc(POLICY_MAX + 1);
	while (len <= POLICY_MAX) {
		n = read(fd, buf + len, POLICY_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			e = errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (e != 0 || len > POLICY_MAX) {
		snprintf(err, errlen, "%s: %s", path, e != 0 ? strerror(e) :
		    "larger than 1 MiB");
		free(buf);
		return -EINVAL;
	}
	rc = policy_parse(c, path, buf, len, err, errlen);
	free(buf);
	return rc;
}

/* --- printing ------------------------------------------------------------ */

/* A value, plain when YAML reads it back as the same text, else quoted. */
static void
put_value(FILE *f, const char *s)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/,=+@%:";
	size_t n = strlen(s);

	if (n > 0 && (isalnum((unsigned char)s[0]) || s[0] == '/' ||
	    s[0] == '.') && strspn(s, safe) == n && s[n - 1] != ':' &&
	    !null_text(s)) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s != '\0'; s++) {
		/* YAML folds its line breaks NEL, LS and PS: escaped. */
		if (strncmp(s, "\xc2\x85", 2) == 0) {
			fputs("\\N", f);
			s++;
		} else if (strncmp(s, "\xe2\x80\xa8", 3) == 0 ||
		    strncmp(s, "\xe2\x80\xa9", 3) == 0) {
			fputs(s[2] == '\xa8' ? "\\L" : "\\P", f);
			s += 2;
		} else if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			fprintf(f, "\\x%02x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* text as "# " lines, wrapped before 78 columns. */
static void
put_comment(FILE *f, const char *text)
{
	const char *p = text, *brk;
	size_t n;

	while (*p != '\0') {
		n = strlen(p);
		if (n > 74) {
			for (brk = p + 74; brk > p && *brk != ' '; brk--)
				;
			n = brk > p ? (size_t)(brk - p) : 74;
		}
		fprintf(f, "# %.*s\n", (int)n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
}

/* One mapping of limits, in flow style: {memory: 268435456, core: 0}. */
static void
put_limits(FILE *f, const struct limits *l)
{
	json_t *o = limits_json(l), *v;
	const char *k;
	bool first = true;

	fputc('{', f);
	json_object_foreach(o, k, v) {
		fprintf(f, "%s%s: ", first ? "" : ", ", k);
		if (json_is_integer(v))
			fprintf(f, "%" JSON_INTEGER_FORMAT,
			    json_integer_value(v));
		else
			put_value(f, json_string_value(v));
		first = false;
	}
	fputs("}\n", f);
	json_decref(o);
}

/* The options in force as a policy file; see policy.h. */
void
policy_print(const struct conf *c, FILE *f)
{
	struct conf_key k;
	const char *v;

	fputs("# execd policy: the options in force, as execd --config FILE "
	    "reads them.\n# The command line and EXECD_* variables go over "
	    "the file.  The access\n# token is never printed.\n", f);
	for (size_t i = 0; conf_key_get(i, &k) == 0; i++) {
		if (strcmp(k.key, "limit") == 0)
			continue;	/* in force below, as limits */
		fputc('\n', f);
		put_comment(f, k.help);
		if (k.secret) {
			fprintf(f, "# %s: never printed\n", k.key);
			continue;
		}
		if ((v = conf_key_value(c, i)) == NULL) {
			fprintf(f, "# %s:\n", k.key);
			continue;
		}
		fprintf(f, "%s: ", k.key);
		put_value(f, v);
		fputc('\n', f);
	}
	fputc('\n', f);
	put_comment(f, "Resource limits of new jobs by kind, and of contexts "
	    "by language (over context): memory, processes, cpu_seconds, "
	    "file_size, open_files, core; sizes in bytes or with K, M, G, T "
	    "(binary, e.g. 256MiB); unlimited lifts one.  A request's "
	    "\"limits\" object goes over these.");
	fputs("limits:\n", f);
	for (int i = 0; i < LIMITS_NKINDS; i++) {
		fprintf(f, "  %s: ", limits_kind_name((enum limits_kind)i));
		put_limits(f, &c->limits[i]);
	}
	fputs("  languages:", f);
	if (c->nlang_limits == 0)
		fputs(" {}", f);
	fputc('\n', f);
	for (size_t i = 0; i < c->nlang_limits; i++) {
		fprintf(f, "    %s: ", c->lang_limits[i].lang);
		put_limits(f, &c->lang_limits[i].l);
	}
}
