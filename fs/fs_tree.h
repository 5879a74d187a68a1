/*
 * fs_tree.h -- deleting, moving and changing permissions.
 *
 * The operations behind DELETE /files, DELETE /directories, POST /files/mv
 * and POST /files/permissions.  Paths are already resolved (fs_path.h).
 * Functions return 0 or -errno and, where there is an err buffer, a
 * message naming the path that failed.  POSIX only, no logging; any
 * thread.
 */
#ifndef FS_TREE_H
#define FS_TREE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * DELETE /files: unlink one non-directory.  Missing (lstat ENOENT) is
 * success.  A directory -EISDIR.  A symlink is removed itself (never its
 * target) -- this differs from upstream, which follows it.
 */
int	fs_file_remove(const char *path);

/*
 * DELETE /directories: rm -rf.  Missing is success; a file or symlink is
 * simply unlinked; a directory is emptied depth-first with openat/unlinkat
 * and O_NOFOLLOW so no symlink inside is ever followed out of the tree,
 * then removed.  Stops at the first failure: -errno, message in err naming
 * the path that failed.  A path whose last component is "." or ".." is
 * -EINVAL.  "/" is -EBUSY (refuse to delete the root).  Trailing slashes
 * are dropped first, so "link/" removes the link, not what it points to.
 * The empty string is a no-op (0), as upstream.  Entries that vanish
 * meanwhile are not errors.  Paths deeper than PATH_MAX bytes inside the
 * tree are removed all the same (messages then show a cut path).
 */
int	fs_tree_remove(const char *path, char *err, size_t errlen);

/*
 * POST /files/mv: rename src to dst.  src missing (lstat) -ENOENT.  dst's
 * parent is created (mkdir -p, 0755).  dst existing -EEXIST (never
 * overwritten; renameat2 RENAME_NOREPLACE, or where the filesystem does
 * not support it a lstat check + rename).  Cross-device -EXDEV (no copy).
 * Message in err.
 */
int	fs_move(const char *src, const char *dst, char *err, size_t errlen);

/*
 * POST /files/permissions: chmod if mode != 0, then chown if uid or gid
 * != -1 (follows symlinks, as upstream).  Nothing to do: 0 without any
 * system call (even on a missing file).  Message in err.
 */
int	fs_perms_set(const char *path, mode_t mode, uid_t uid, gid_t gid,
	    char *err, size_t errlen);

#endif
