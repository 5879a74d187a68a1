/*
 * fs_walk.h -- walking a directory tree without following symbolic links.
 *
 * One walker for every endpoint that lists a tree (directory listing,
 * search, archives): entries come in pre-order, sorted by name in byte
 * order within each directory, and a symbolic link is reported but never
 * entered.  Directories are opened relative to their parent's descriptor
 * with O_NOFOLLOW, so a directory swapped for a link mid-walk cannot lead
 * the walk out of the tree.  POSIX only, no logging; any thread (nothing
 * is shared between calls).
 */
#ifndef FS_WALK_H
#define FS_WALK_H

#include <stddef.h>
#include <sys/stat.h>

#define FS_WALK_ALL	(-1)	/* no depth limit */
#define FS_WALK_MAXDEPTH 256	/* deeper than this: -ELOOP */

/*
 * Called for each entry, in pre-order; names within a directory sorted by
 * strcmp (byte order).  path: full path (root + "/" + relative; no doubled
 * slash when root is "/"), rel: path relative to root (no leading '/'),
 * st: lstat of the entry, depth: 1 for root's children.  Return 0 to go
 * on, 1 (or any positive value) to not descend into this directory
 * (ignored for non-directories), or a negative errno to stop: fs_walk()
 * then returns it.  path, rel and st are valid during the call only.
 */
typedef int fs_walk_cb(const char *path, const char *rel,
    const struct stat *st, int depth, void *arg);

/*
 * Walk the tree under root (root itself not reported), never following
 * symlinks (a symlink is reported, never entered), descending into real
 * directories while depth < maxdepth (maxdepth FS_WALK_ALL: no limit; 0:
 * nothing reported and root not even opened).  root itself is opened with
 * open(2) and so followed if it is a link: a caller that must refuse a
 * linked root lstat()s it first.  Trailing slashes of root are dropped.
 * Entries that vanish between readdir and lstat are skipped, as is a
 * directory that vanishes or stops being a directory before it is opened.
 * A directory that cannot be opened or read fails the walk with -errno
 * and a message "<path>: <strerror>" in err; so does an entry that cannot
 * be lstat'ed for another reason.  A path longer than PATH_MAX fails with
 * -ENAMETOOLONG, a tree deeper than FS_WALK_MAXDEPTH with -ELOOP (both
 * with a message).  When the callback stops the walk, err is left alone.
 * Memory is O(depth * entries of one directory), with one descriptor per
 * level.  A negative maxdepth other than FS_WALK_ALL is -EINVAL.
 * 0 or -errno.
 */
int	fs_walk(const char *root, int maxdepth, fs_walk_cb *cb, void *arg,
	    char *err, size_t errlen);

#endif
