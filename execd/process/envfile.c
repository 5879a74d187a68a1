/*
 * envfile.c -- the EXECD_ENVS dotenv file, environment overlays, and the
 * expansion of variables in paths.
 *
 * The parser walks the text entry by entry, as upstream's does: an entry
 * is one physical line, or more when a quoted value spans lines.  Blanks
 * are trimmed as Go's strings.TrimSpace trims them (Unicode white space,
 * so that a value ends where upstream's ends), and expansion is Go's
 * os.Expand, byte for byte.  Everything is bounded: the file is read up
 * to ENVFILE_MAX bytes, and what is made from it grows with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../fs/fs_path.h"
#include "../../util/buf.h"
#include "../core/log.h"
#include "../core/xmalloc.h"
#include "envfile.h"

extern char **environ;

/* Where expand() looks a name up: NULL for undefined. */
typedef const char *lookup_fn(const char *name, size_t n, size_t *vlen,
    const void *arg);

/* The text being parsed, where parsing goes on, what it found. */
struct parser {
	const char	*p;
	size_t		 n;
	size_t		 pos;
	json_t		*vars;
};

/* A Unicode white-space code point, as Go's unicode.IsSpace. */
static bool
is_space_rune(uint32_t r)
{
	switch (r) {
	case '\t': case '\n': case '\v': case '\f': case '\r': case ' ':
	case 0x85: case 0xa0: case 0x1680: case 0x2028: case 0x2029:
	case 0x202f: case 0x205f: case 0x3000:
		return true;
	}
	return r >= 0x2000 && r <= 0x200a;
}

/*
 * The white-space character of 2 or 3 bytes at p (n bytes there), its
 * length, or 0.  Only well-formed encodings count: an invalid byte is
 * U+FFFD to Go, which is not a space.
 */
static size_t
space_mb(const unsigned char *p, size_t n)
{
	uint32_t r;

	if (n >= 2 && p[0] == 0xc2 && (p[1] == 0x85 || p[1] == 0xa0))
		return 2;
	if (n < 3 || (p[0] != 0xe1 && p[0] != 0xe2 && p[0] != 0xe3) ||
	    (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
		return 0;
	r = ((uint32_t)(p[0] & 0x0f) << 12) | ((uint32_t)(p[1] & 0x3f) << 6) |
	    (p[2] & 0x3f);
	return is_space_rune(r) ? 3 : 0;
}

/* p[0..*n) with white space cut from both ends, as strings.TrimSpace. */
static const char *
trim(const char *p, size_t *n)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t a = 0, b = *n, k;

	while (a < b) {
		if (u[a] < 0x80 && is_space_rune(u[a]))
			a++;
		else if ((k = space_mb(u + a, b - a)) > 0)
			a += k;
		else
			break;
	}
	while (b > a) {
		if (u[b - 1] < 0x80) {
			if (!is_space_rune(u[b - 1]))
				break;
			b--;
			continue;
		}
		/* The last character starts 2 or 3 bytes back, or is none. */
		if (b - a >= 2 && space_mb(u + b - 2, 2) == 2)
			b -= 2;
		else if (b - a >= 3 && space_mb(u + b - 3, 3) == 3)
			b -= 3;
		else
			break;
	}
	*n = b - a;
	return p + a;
}

/* A shell variable name: [A-Za-z_][A-Za-z0-9_]*. */
static bool
name_ok(const char *p, size_t n)
{
	if (n == 0 || (p[0] >= '0' && p[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(p[i] == '_' || (p[i] >= '0' && p[i] <= '9') ||
		    (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' &&
		    p[i] <= 'Z')))
			return false;
	return true;
}

static bool
alnum(char c)
{
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z');
}

static bool
special(char c)
{
	return c != '\0' && strchr("*#$@!?-0123456789", c) != NULL;
}

/* A name in execd's environment (the first entry for it), or NULL. */
static const char *
environ_get(const char *name, size_t n, size_t *vlen, const void *arg)
{
	(void)arg;
	if (memchr(name, '=', n) != NULL || memchr(name, '\0', n) != NULL)
		return NULL;
	for (char **e = environ; *e != NULL; e++) {
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') {
			*vlen = strlen(*e + n + 1);
			return *e + n + 1;
		}
	}
	return NULL;
}

/* A name in the overlay arg (an object, or NULL), else in execd's. */
static const char *
overlay_get(const char *name, size_t n, size_t *vlen, const void *arg)
{
	const json_t *v = NULL;
	char *key;

	if (arg != NULL && memchr(name, '\0', n) == NULL) {
		key = xstrndup(name, n);
		v = json_object_get(arg, key);
		free(key);
	}
	if (v != NULL && json_is_string(v)) {
		*vlen = json_string_length(v);
		return json_string_value(v);
	}
	return environ_get(name, n, vlen, NULL);
}

/*
 * The name after a '$' at s[0..n) (n >= 1), as Go's getShellName: its
 * start and length in *name, *nlen (0: none), and how many bytes the
 * reference takes after the '$'.
 */
static size_t
shell_name(const char *s, size_t n, const char **name, size_t *nlen)
{
	size_t i;

	*name = s;
	*nlen = 0;
	if (s[0] == '{') {
		if (n > 2 && special(s[1]) && s[2] == '}') {
			*name = s + 1;
			*nlen = 1;
			return 3;
		}
		for (i = 1; i < n; i++) {
			if (s[i] != '}')
				continue;
			if (i == 1)
				return 2;	/* "${}": eaten */
			*name = s + 1;
			*nlen = i - 1;
			return i + 1;
		}
		return 1;			/* "${" unclosed: eaten */
	}
	if (special(s[0])) {
		*nlen = 1;
		return 1;
	}
	for (i = 0; i < n && alnum(s[i]); i++)
		;
	*nlen = i;
	return i;
}

/* s[0..n) onto b with references replaced, as Go's os.Expand. */
static void
expand(struct buf *b, const char *s, size_t n, lookup_fn *get,
    const void *arg)
{
	const char *name, *val;
	size_t i = 0, j, w, nl, vl;

	for (j = 0; j < n; j++) {
		if (s[j] != '$' || j + 1 == n)
			continue;
		buf_add(b, s + i, j - i);
		w = shell_name(s + j + 1, n - j - 1, &name, &nl);
		if (nl > 0) {
			if ((val = get(name, nl, &vl, arg)) != NULL)
				buf_add(b, val, vl);
		} else if (w == 0) {
			buf_add(b, "$", 1);	/* no name: the '$' stays */
		}
		j += w;
		i = j + 1;
	}
	if (i < n)
		buf_add(b, s + i, n - i);
}

/* The end of the physical line at pos: its '\n', or the end. */
static size_t
line_end(const struct parser *ps, size_t pos)
{
	const char *nl = memchr(ps->p + pos, '\n', ps->n - pos);

	return nl != NULL ? (size_t)(nl - ps->p) : ps->n;
}

/* Go on after the physical line at pos. */
static void
skip_line(struct parser *ps, size_t pos)
{
	size_t e = line_end(ps, pos);

	ps->pos = e < ps->n ? e + 1 : ps->n;
}

/* A value, taken: name's variable is v[0..n), unless the name is bad. */
static void
set(struct parser *ps, const char *k, size_t kn, const char *v, size_t n)
{
	char *key;

	/* "export NAME" is NAME, as a shell that sources the file sees it. */
	if (kn > 7 && strncmp(k, "export", 6) == 0 &&
	    (k[6] == ' ' || k[6] == '\t')) {
		k += 7;
		kn -= 7;
		while (kn > 0 && (k[0] == ' ' || k[0] == '\t')) {
			k++;
			kn--;
		}
	}
	if (!name_ok(k, kn))
		return;
	key = xstrndup(k, kn);
	json_object_set_new_nocheck(ps->vars, key,
	    json_stringn_nocheck(v != NULL ? v : "", n));
	free(key);
}

/* \n \r \t \\ \" decoded, any other pair kept; onto b. */
static void
unescape(struct buf *b, const char *s, size_t n)
{
	char c;

	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\' || i + 1 == n) {
			buf_add(b, s + i, 1);
			continue;
		}
		switch (s[i + 1]) {
		case 'n': c = '\n'; break;
		case 'r': c = '\r'; break;
		case 't': c = '\t'; break;
		case '\\': c = '\\'; break;
		case '"': c = '"'; break;
		default:
			buf_add(b, s + i, 1);
			continue;
		}
		buf_add(b, &c, 1);
		i++;
	}
}

/*
 * A quoted value whose text starts at ps->p[from], for the entry that
 * starts at start: taken, and parsing goes on after its closing line; or
 * skipped, and parsing goes on after the entry's first line.
 */
static void
quoted(struct parser *ps, size_t start, const char *k, size_t kn,
    char q, size_t from)
{
	const char *p = ps->p, *close;
	struct buf b, d;
	size_t i, e, tn;

	/*
	 * The search stops at the opening quote of the next entry quoted
	 * alike, if not before: no text is searched twice for one kind.
	 */
	if (q == '\'') {
		close = memchr(p + from, '\'', ps->n - from);
		i = close != NULL ? (size_t)(close - p) : ps->n;
	} else {
		for (i = from; i < ps->n && p[i] != '"'; i++)
			if (p[i] == '\\' && i + 1 < ps->n)
				i++;
	}
	if (i >= ps->n) {
		skip_line(ps, start);
		return;
	}
	/* Only blanks may follow the closing quote on its line. */
	e = line_end(ps, i + 1);
	tn = e - i - 1;
	(void)trim(p + i + 1, &tn);
	if (tn > 0) {
		skip_line(ps, start);
		return;
	}
	ps->pos = e < ps->n ? e + 1 : ps->n;
	if (q == '\'') {
		set(ps, k, kn, p + from, i - from);
		return;
	}
	buf_init_max(&d, ENVFILE_MAX);
	buf_init(&b);
	unescape(&d, p + from, i - from);
	expand(&b, d.p != NULL ? d.p : "", d.len, environ_get, NULL);
	set(ps, k, kn, b.p, b.len);
	buf_reset(&d);
	buf_reset(&b);
}

/* The entry at ps->pos. */
static void
entry(struct parser *ps)
{
	const char *p = ps->p + ps->pos, *eq, *k, *v;
	size_t start = ps->pos, e = line_end(ps, ps->pos), n = e - start;
	size_t tn = n, kn, vn, qs;
	struct buf b;

	k = trim(p, &tn);
	if (tn == 0 || k[0] == '#' || (eq = memchr(p, '=', n)) == NULL) {
		skip_line(ps, start);
		return;
	}
	kn = (size_t)(eq - p);
	k = trim(p, &kn);
	if (kn == 0) {
		skip_line(ps, start);
		return;
	}
	v = eq + 1;
	vn = (size_t)(p + n - v);
	for (qs = 0; qs < vn && strchr(" \t\r\v\f", v[qs]) != NULL &&
	    v[qs] != '\0'; qs++)
		;
	if (qs < vn && (v[qs] == '\'' || v[qs] == '"')) {
		quoted(ps, start, k, kn, v[qs],
		    (size_t)(v + qs + 1 - ps->p));
		return;
	}
	v = trim(v, &vn);
	buf_init(&b);
	expand(&b, v, vn, environ_get, NULL);
	set(ps, k, kn, b.p, b.len);
	buf_reset(&b);
	skip_line(ps, start);
}

/* A file's text, parsed; see envfile.h. */
json_t *
envfile_parse(const char *p, size_t n)
{
	struct parser ps = { .p = p, .n = n, .vars = json_object() };

	while (ps.pos < ps.n)
		entry(&ps);
	return ps.vars;
}

/* The file's variables; see envfile.h. */
json_t *
envfile_read(const char *path)
{
	char resolved[PATH_MAX], err[256], *buf;
	struct buf exp;
	const char *file;
	ssize_t got;
	size_t len = 0;
	json_t *vars;
	int fd;

	if (path == NULL || path[0] == '\0')
		return json_object();
	buf_init_max(&exp, PATH_MAX);
	if (envfile_expand_path(path, NULL, &exp, err, sizeof(err)) < 0 ||
	    exp.full) {
		log_debug("EXECD_ENVS %s: %s", path, exp.full ? "too long" :
		    err);
		buf_reset(&exp);
		return json_object();
	}
	file = exp.p;
	/* A leading ~ is the home directory; a relative path is execd's. */
	if (file[0] == '~' && fs_path_resolve(file, exp.len, NULL, resolved,
	    sizeof(resolved)) == 0)
		file = resolved;
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		log_debug("EXECD_ENVS %s: %s", file, strerror(errno));
	buf_reset(&exp);
	if (fd < 0)
		return json_object();
	buf = xmalloc(ENVFILE_MAX);
	while (len < ENVFILE_MAX &&
	    (got = read(fd, buf + len, ENVFILE_MAX - len)) > 0)
		len += (size_t)got;
	close(fd);
	vars = envfile_parse(buf, len);
	free(buf);
	return vars;
}

static envfile_wrap_fn	*wrap;

/* The last step of every overlay; see envfile.h. */
void
envfile_set_wrap(envfile_wrap_fn *fn)
{
	wrap = fn;
}

/* EXECD_ENVS's variables under over's; see envfile.h. */
json_t *
envfile_overlay(const json_t *over)
{
	json_t *vars = envfile_read(getenv("EXECD_ENVS"));
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)(uintptr_t)over, k, v)
		if (json_is_string(v))
			json_object_set_nocheck(vars, k, v);
	return wrap != NULL ? wrap(vars) : vars;
}

/* Whether environment entry e is for a name over has (or PWD). */
static bool
replaced(const char *e, const json_t *over, bool pwd)
{
	size_t m = strcspn(e, "=");
	const char *k;
	json_t *v;

	if (pwd && m == 3 && strncmp(e, "PWD", 3) == 0)
		return true;
	json_object_foreach((json_t *)(uintptr_t)over, k, v)
		if (strlen(k) == m && strncmp(k, e, m) == 0)
			return true;
	return false;
}

/* execd's environment with over on top; see envfile.h. */
char **
envfile_env(const json_t *over, const char *pwd)
{
	size_t n = 0, i = 0;
	const char *k;
	json_t *v;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = xcalloc(n + json_object_size(over) + 2, sizeof(*env));
	for (size_t j = 0; j < n; j++)
		if (!replaced(environ[j], over, pwd != NULL))
			env[i++] = xstrdup(environ[j]);
	if (pwd != NULL && !replaced("PWD=", over, false))
		env[i++] = xasprintf("PWD=%s", pwd);
	json_object_foreach((json_t *)(uintptr_t)over, k, v)
		if (json_is_string(v))
			env[i++] = xasprintf("%s=%s", k, json_string_value(v));
	return env;
}

void
envfile_env_free(char **env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The names path refers to that nobody defines, as upstream finds them
 * (${NAME} or $NAME with NAME a shell name, left to right), sorted and
 * each once, joined by ',' into b; how many.
 */
static size_t
undefined(const char *s, const json_t *over, struct buf *b)
{
	char **names = NULL;
	size_t n = 0, len = strlen(s), i, k, vl;
	bool br;

	for (i = 0; i < len; i++) {
		if (s[i] != '$')
			continue;
		br = s[i + 1] == '{';
		for (k = i + 1 + br; k < len && alnum(s[k]); k++)
			;
		if (!name_ok(s + i + 1 + br, k - i - 1 - br) ||
		    (br && s[k] != '}'))
			continue;
		if (overlay_get(s + i + 1 + br, k - i - 1 - br, &vl,
		    over) == NULL) {
			names = xreallocarray(names, n + 1, sizeof(*names));
			names[n++] = xstrndup(s + i + 1 + br,
			    k - i - 1 - br);
		}
		i = k - !br;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0, k = 0; i < n; i++) {
		if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
			continue;
		if (k++ > 0)
			buf_add(b, ",", 1);
		buf_adds(b, names[i]);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return k;
}

/* A working directory's variables expanded; see envfile.h. */
int
envfile_expand_path(const char *path, const json_t *over, struct buf *out,
    char *err, size_t errlen)
{
	struct buf miss;

	buf_init_max(&miss, 4096);
	if (undefined(path, over, &miss) > 0) {
		snprintf(err, errlen, "path references undefined environment "
		    "variables: %s", miss.p != NULL ? miss.p : "");
		buf_reset(&miss);
		return -ENOENT;
	}
	buf_reset(&miss);
	expand(out, path, strlen(path), overlay_get, over);
	buf_add(out, "", 0);	/* NUL-ended even when empty */
	return 0;
}
