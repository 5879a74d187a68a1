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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
