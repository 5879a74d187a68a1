/*
 * fs_grep.h -- lines matching a regular expression, in a file or a tree.
 *
 * Backs GET /files/grep.  Extended regular expressions as fs_regex.h
 * takes them (linear time, no backreferences), one line at a time, over a file or every regular file under a directory
 * in fs_walk() order (pre-order, names sorted by byte order).  Memory is
 * bounded whatever the files hold.  POSIX only, no logging.  It reads
 * files synchronously: any thread, but a long search blocks the caller,
 * so the daemon's loop should hand it to a worker.
 */
#ifndef FS_GREP_H
#define FS_GREP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define FS_GREP_ICASE	0x01		/* ignore case (ASCII letters) */
#define FS_GREP_LINE_MAX (64 * 1024)	/* bytes of a line that are matched */
#define FS_GREP_BINARY	8192		/* a NUL in these first bytes: binary */

/*
 * A match: path of the file, 1-based line number, the line without its
 * terminator ("\n", or "\r\n": the CR is dropped too), len bytes at text
 * (also NUL-terminated; at most FS_GREP_LINE_MAX).  Called on fs_grep's
 * thread; text and path are valid during the call only.  Return 0 to go
 * on, or a negative errno to stop (fs_grep returns it).
 */
typedef int fs_grep_cb(const char *path, unsigned long line, const char *text,
    size_t len, void *arg);

/*
 * What may end a search early: cancel becoming non-zero (from any
 * thread; -ECANCELED) or budget_ms of wall time passing (-ETIMEDOUT).
 * Both are looked at before each line and every FS_REGEX_CHECK bytes of
 * one.  NULL pointer, 0: no limit.
 */
struct fs_grep_limits {
	const atomic_int	*cancel;
	unsigned		 budget_ms;
};

/*
 * Find lines matching the extended regular expression pattern in
 * path (a file) or in every regular file under it (fs_walk, symlinks not
 * followed; hidden files included).  path itself is followed if it is a
 * link.  Binary files (a NUL byte in their first FS_GREP_BINARY bytes) are
 * skipped; lines longer than FS_GREP_LINE_MAX are matched on their first
 * FS_GREP_LINE_MAX bytes only (memory stays bounded); a NUL byte later in
 * a line ends what is matched of it.  Files that cannot be opened or read,
 * and directories that cannot be opened, are skipped silently.  At most
 * max_matches matches are reported (0 = no limit); if there are more, it
 * stops at the first one not reported and returns 0 with *truncated =
 * true (else false).  A bad or refused pattern is -EINVAL with
 * fs_regex's message in err; past a limit of lim (which may be NULL),
 * -ECANCELED or -ETIMEDOUT with a message, the matches so far having been
 * reported; path missing is -ENOENT, neither a file nor a directory -EINVAL, a
 * tree too deep or with paths too long -ELOOP or -ENAMETOOLONG (messages in
 * err).  0 (then *truncated is set) or -errno.
 */
int	fs_grep(const char *path, const char *pattern, unsigned flags,
	    size_t max_matches, const struct fs_grep_limits *lim,
	    fs_grep_cb *cb, void *arg, bool *truncated, char *err,
	    size_t errlen);

#endif
