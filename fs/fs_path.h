/*
 * fs_path.h -- turning a client's path into one the daemon uses.
 *
 * Accepted: absolute paths, "~" and "~/rest" (home of the user execd runs
 * as).  Rejected: empty or relative paths and paths with a NUL byte.  A
 * '$' is an ordinary character: variables are never expanded, so every
 * file name can be addressed.  Also: a free temporary name beside a path.
 * POSIX only (Linux getrandom for the name); pure apart from the home
 * look-up and the random bytes; any thread.
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

/*
 * File names are bytes; JSON strings are UTF-8.  A name travels as text
 * with each byte that is not part of valid UTF-8 written "\xHH" (two
 * lowercase hex digits, HH 80 to ff), and a backslash that would read as
 * such an escape (one followed by "x" and the hex of 5c or 80 to ff, in
 * either case) written "\x5c"; every other name, valid UTF-8 without such
 * a sequence, is its own text.  fs_path_unescape undoes it exactly.
 */
/* Whether raw is its own text (nothing to escape). */
int	fs_path_is_plain(const char *raw);
/* The text of raw, malloc'd (NULL and errno set if out of memory). */
char	*fs_path_escape(const char *raw);
/* The name of a text, in place (it only shrinks). */
void	fs_path_unescape(char *s);

/*
 * A temporary name for a file to be built beside path and renamed over
 * it: path's directory (up to its last '/'; the current directory when
 * there is none), then "/<prefix>" and 12 random lowercase hex digits,
 * e.g. "/d/.execd-commit-0f3a..." for "/d/f" and ".execd-commit-".  The
 * name is only likely free: create it with O_EXCL (or the like).  0, or
 * -ENAMETOOLONG when it does not fit len bytes.
 */
int	fs_path_tmp_beside(const char *path, const char *prefix, char *buf,
	    size_t len);

#endif
