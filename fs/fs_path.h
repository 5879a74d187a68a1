/*
 * fs_path.h -- turning a client's path into one the daemon uses.
 *
 * Accepted: absolute paths, "~" and "~/rest" (home of the user execd runs
 * as).  Rejected: empty or relative paths and paths with a NUL byte.  A
 * '$' is an ordinary character: variables are never expanded, so every
 * file name can be addressed.  POSIX only; pure apart from the home look-up;
 * any thread.
 */
#ifndef FS_PATH_H
#define FS_PATH_H

#include <stddef.h>

/*
 * Resolve in (len bytes; it may contain a NUL, which is refused) into out.
 * home may be NULL to use $HOME, then the password database.  0, or
 * -EINVAL (empty, relative, NUL), -ENAMETOOLONG, -ENOENT (no home known).
 */
int	fs_path_resolve(const char *in, size_t len, const char *home,
	    char *out, size_t outlen);

#endif
