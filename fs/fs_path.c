/*
 * fs_path.c -- client path resolution.
 *
 * Deliberately small: no "$VAR" expansion (which would make names that
 * contain '$' unreachable), no relative paths (which would depend on
 * execd's own working directory), and no normalisation, so the kernel
 * sees what the client meant.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "../util/utf8.h"
#include "fs_path.h"

static const char *
default_home(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h != NULL && h[0] == '/')
		return h;
	pw = getpwuid(getuid());
	return pw != NULL && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

/* See fs_path.h. */
int
fs_path_resolve(const char *in, size_t len, const char *home, char *out,
    size_t outlen)
{
	size_t hl;

	if (len == 0 || memchr(in, '\0', len) != NULL)
		return -EINVAL;
	if (in[0] == '/') {
		if (len >= outlen)
			return -ENAMETOOLONG;
		memcpy(out, in, len);
		out[len] = '\0';
		return 0;
	}
	if (in[0] != '~' || (len > 1 && in[1] != '/'))
		return -EINVAL;
	if (home == NULL && (home = default_home()) == NULL)
		return -ENOENT;
	if (home[0] != '/')
		return -ENOENT;
	hl = strlen(home);
	if (hl + len - 1 >= outlen)
		return -ENAMETOOLONG;
	memcpy(out, home, hl);
	memcpy(out + hl, in + 1, len - 1);
	out[hl + len - 1] = '\0';
	return 0;
}

/* The value of "\xHH" at p if it is one the text encoding decodes, or -1. */
static int
escape_at(const char *p)
{
	int v = 0;

	if (p[0] != '\\' || p[1] != 'x')
		return -1;
	for (int i = 2; i < 4; i++) {
		char c = p[i];

		if (c >= '0' && c <= '9')
			v = v * 16 + (c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v = v * 16 + (c - 'A' + 10);
		else
			return -1;
	}
	return v >= 0x80 || v == 0x5c ? v : -1;
}

/* See fs_path.h. */
int
fs_path_is_plain(const char *raw)
{
	const unsigned char *s = (const unsigned char *)raw;
	size_t n = strlen(raw), k;

	for (size_t i = 0; i < n; i += k) {
		if ((k = utf8_len(s + i, n - i)) == 0 || escape_at(raw + i) >= 0)
			return 0;
	}
	return 1;
}

/* See fs_path.h. */
char *
fs_path_escape(const char *raw)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)raw;
	size_t n = strlen(raw), k, o = 0;
	char *out;

	/* At most four bytes of text for each byte of the name. */
	if ((out = malloc(4 * n + 1)) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i += k) {
		k = utf8_len(s + i, n - i);
		if (k == 0 || escape_at(raw + i) >= 0) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[s[i] >> 4];
			out[o++] = hex[s[i] & 15];
			k = 1;
		} else {
			memcpy(out + o, raw + i, k);
			o += k;
		}
	}
	out[o] = '\0';
	return out;
}

/* See fs_path.h. */
void
fs_path_unescape(char *s)
{
	char *w = s;
	int v;

	for (const char *r = s; *r != '\0';) {
		if ((v = escape_at(r)) >= 0) {
			*w++ = (char)v;
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

/* See fs_path.h. */
int
fs_path_tmp_beside(const char *path, const char *prefix, char *buf,
    size_t len)
{
	const char *slash = strrchr(path, '/');
	unsigned char r[6];
	int dl = slash != NULL ? (int)(slash - path) : 1, n;

	/* Uniqueness comes from O_EXCL at create; this only spreads names. */
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		memset(r, 0x5a, sizeof(r));
	n = snprintf(buf, len, "%.*s/%s%02x%02x%02x%02x%02x%02x", dl,
	    slash != NULL ? path : ".", prefix, r[0], r[1], r[2], r[3], r[4],
	    r[5]);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
