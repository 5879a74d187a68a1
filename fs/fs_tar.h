/*
 * fs_tar.h -- a pull-based tar writer, so the HTTP layer can pull archive
 * bytes as the client reads them (GET /files/archive).
 *
 * POSIX ustar with pax extended headers (typeflag 'x') where ustar falls
 * short: names and link targets over its limits, sizes of 8 GiB or more,
 * uids and gids over 2097151, mtimes before 1970 or past 2242, user and
 * group names over 31 bytes.  Directories get a trailing '/', symlinks are
 * stored as links (typeflag '2', never followed), regular files as '0';
 * FIFOs, sockets and devices are skipped.  Hard links are stored as
 * separate files.  Mode, uid, gid, mtime, uname and gname are filled.
 *
 * The list of entries is collected up front by fs_walk() (memory
 * O(entries), at most FS_TAR_MAX_ENTRIES); file contents are read lazily,
 * one file open at a time, with O_NOFOLLOW.  A file that shrank since its
 * header was written is padded with zeros to the header's size, one that
 * grew is cut at it, one that vanished (or cannot be opened any more, or
 * is no longer a regular file) is sent as zeros: the archive stays valid.
 * A directory below path that cannot be opened is archived empty.
 *
 * POSIX only, no logging.  Reads the disk synchronously: any thread, one
 * thread at a time per object.
 */
#ifndef FS_TAR_H
#define FS_TAR_H

#include <stddef.h>
#include <sys/types.h>

#define FS_TAR_MAX_ENTRIES	1000000	/* more: fs_tar_new fails, EFBIG */

struct fs_tar;

/*
 * Prepare to archive path (a directory, or a single file/symlink, which
 * is not followed).  Member names are relative to path's parent:
 * archiving /a/proj gives "proj/", "proj/src/", "proj/src/x.c" ...
 * (archiving "/" gives "./", "./bin/" ...).  NULL with errno (ENOENT,
 * ENOTDIR, EACCES when path cannot be read, EINVAL for a FIFO, socket or
 * device, EFBIG past FS_TAR_MAX_ENTRIES, ENAMETOOLONG, ELOOP, ENOMEM) and
 * a message in err.
 */
struct fs_tar	*fs_tar_new(const char *path, char *err, size_t errlen);

/*
 * Fill up to len bytes of the archive into buf.  Returns the number of
 * bytes (> 0), 0 at the end of the archive (after the two zero blocks), or
 * -errno (message from fs_tar_error()): -EIO and the like when a file
 * cannot be read after it was opened, -ENOMEM, -EINVAL for len 0.  An
 * error is final: every later call returns it again.
 */
ssize_t		 fs_tar_read(struct fs_tar *, void *buf, size_t len);

/* The message for the last error of fs_tar_read, "" if none. */
const char	*fs_tar_error(const struct fs_tar *);

/* Close the open file, if any, and free everything.  NULL ok. */
void		 fs_tar_free(struct fs_tar *);

#endif
