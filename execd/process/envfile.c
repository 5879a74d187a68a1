/*
 * envfile.c -- reading the EXECD_ENVS file of KEY=VALUE lines.
 *
 * The format is the upstream daemon's: no quoting rules, no "export", one
 * assignment per line, split at the first '='.  Only $NAME and ${NAME}
 * are expanded in values, from execd's own environment.  Everything here
 * is bounded: the file is read up to ENVFILE_MAX bytes.
 */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../fs/fs_path.h"
#include "../../util/buf.h"
#include "../core/xmalloc.h"
#include "envfile.h"

static bool	 name_ok(const char *, size_t);
static void	 expand(struct buf *, const char *, size_t);
static void	 parse_line(json_t *, const char *, size_t);

/* A shell variable name: [A-Za-z_][A-Za-z0-9_]*. */
static bool
name_ok(const char *p, size_t n)
{
	if (n == 0 || isdigit((unsigned char)p[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '_')
			return false;
	return true;
}

/* Append v[0..n) to b with $NAME and ${NAME} replaced by their values. */
static void
expand(struct buf *b, const char *v, size_t n)
{
	size_t i = 0, j, k;
	const char *val;
	char name[256];
	bool braced;

	while (i < n) {
		if (v[i] != '$' || i + 1 == n) {
			buf_add(b, v + i++, 1);
			continue;
		}
		braced = v[i + 1] == '{';
		j = i + 1 + braced;
		for (k = j; k < n && (isalnum((unsigned char)v[k]) ||
		    v[k] == '_'); k++)
			;
		if (!name_ok(v + j, k - j) || k - j >= sizeof(name) ||
		    (braced && (k == n || v[k] != '}'))) {
			buf_add(b, v + i++, 1);	/* not a reference */
			continue;
		}
		memcpy(name, v + j, k - j);
		name[k - j] = '\0';
		if ((val = getenv(name)) != NULL)
			buf_adds(b, val);
		i = k + braced;
	}
}

/* One line (no newline): add its variable to vars, or skip it. */
static void
parse_line(json_t *vars, const char *p, size_t n)
{
	const char *eq;
	struct buf b;
	char *key;

	while (n > 0 && (p[n - 1] == '\r'))
		n--;
	if (n == 0 || p[0] == '#' || (eq = memchr(p, '=', n)) == NULL ||
	    !name_ok(p, (size_t)(eq - p)))
		return;
	buf_init(&b);
	expand(&b, eq + 1, n - (size_t)(eq - p) - 1);
	key = xstrndup(p, (size_t)(eq - p));
	/* Values that are not UTF-8 cannot be JSON strings: skip them. */
	json_object_set_new(vars, key, json_stringn(b.p != NULL ? b.p : "",
	    b.len));
	free(key);
	buf_reset(&b);
}

/* The file's variables; see envfile.h. */
json_t *
envfile_read(const char *path)
{
	json_t *vars = json_object();
	char resolved[PATH_MAX], *buf;
	const char *p, *nl, *end;
	ssize_t got;
	size_t len = 0;
	int fd;

	if (path == NULL || path[0] == '\0' ||
	    fs_path_resolve(path, strlen(path), NULL, resolved,
	    sizeof(resolved)) < 0)
		return vars;
	if ((fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return vars;
	buf = xmalloc(ENVFILE_MAX);
	while (len < ENVFILE_MAX &&
	    (got = read(fd, buf + len, ENVFILE_MAX - len)) > 0)
		len += (size_t)got;
	close(fd);
	for (p = buf, end = buf + len; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		parse_line(vars, p, (size_t)(nl - p));
	}
	free(buf);
	return vars;
}
