/*
 * fs_atomic.h -- writing a file so that it is never seen half-written.
 *
 * Uploads and POST /files/replace write a temporary file beside the target
 * and rename it over the target only when everything is written and
 * synced: a reader sees the old file or the new one, and a failure leaves
 * the old one untouched.  The price: the target gets a new inode, so hard
 * links to it keep the old content.  POSIX only, no logging; any thread,
 * one thread per struct fs_atomic.
 *
 * A writer that dies (SIGKILL, a crash) leaves its temporary behind.  With
 * a journal (fs_atomic_journal()), every temporary is recorded while it
 * exists, by a small file in the journal directory that its writer keeps
 * locked (flock), and the next fs_atomic_journal() removes the temporaries
 * of records that nobody holds any more.
 */
#ifndef FS_ATOMIC_H
#define FS_ATOMIC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct fs_atomic {		/* caller storage; fields private */
	int	 fd;		/* the temporary file, open for writing */
	int	 dirfd;
	char	 tmp[NAME_MAX + 1];	/* its name in the target's directory */
	char	 path[PATH_MAX];	/* the target */
	char	 name[NAME_MAX + 1];	/* the target's name in dirfd */
	mode_t	 mode;		/* decided at open */
	uid_t	 uid;		/* owner to keep, or -1 */
	gid_t	 gid;
	off_t	 written;	/* bytes written */
	off_t	 flushed;	/* ... whose writeback has been started */
	int	 jfd;		/* its journal record, locked; -1 none */
	char	 jname[32];	/* the record's name in the journal */
};

#define FS_ATOMIC_JOURNAL	"execd-uploads"	/* under the runtime dir */

/*
 * Open a temporary file beside path (same directory, name
 * ".<base>.execd-XXXXXX", base cut so the name fits NAME_MAX; mode 0600
 * until commit), creating path's parent directories first (mkdir -p with
 * 0777 less the umask).  If path exists and is a regular file, its mode
 * and owner will be kept at commit; if it is a symlink, the temporary goes
 * beside the symlink's final target and the commit replaces that target
 * (the link stays a link; a dangling link gets its target created, but
 * not the target's directory); a directory at path is -EISDIR, and so is
 * a path ending in '/'; any other kind of file (fifo, device, socket) is
 * -EINVAL.  New files get newmode (the route passes 0777 & ~umask, as
 * upstream).  0 or -errno, message in err; on failure the struct holds no
 * resources.
 */
int	fs_atomic_open(struct fs_atomic *, const char *path, mode_t newmode,
	    char *err, size_t errlen);

/*
 * Write all n bytes (retrying short writes and EINTR). 0 or -errno
 * (ENOSPC, EFBIG...); -EBADF when the struct is not open.
 */
int	fs_atomic_write(struct fs_atomic *, const void *p, size_t n);

/*
 * fsync the file, apply owner (-1: keep) then mode (0: keep the mode
 * decided at open), rename over the target, fsync the directory (best
 * effort: the file is in place by then).  After
 * commit or abort the struct holds no resources.  0 or -errno, message in
 * err; on failure the temporary is removed and the target untouched.  An
 * owner asked for that we may not give is -EPERM; the owner of an
 * existing file is kept where we may and otherwise silently not.
 */
int	fs_atomic_commit(struct fs_atomic *, mode_t mode, uid_t uid, gid_t gid,
	    char *err, size_t errlen);

/*
 * Close and unlink the temporary; the target is untouched.  Safe after a
 * failed open (no-op) and idempotent (the struct must have been through
 * fs_atomic_open once).
 */
void	fs_atomic_abort(struct fs_atomic *);

/*
 * Use <dir>/FS_ATOMIC_JOURNAL (made 0700, with dir, if missing) as the
 * journal from now on, after removing what dead writers left there: each
 * record that no process holds locked is deleted, and with it the
 * temporary it names if that is still the very file recorded (a regular
 * file, a name of our pattern, the same device and inode).  Records held
 * by live writers (this or another execd sharing the directory) are left
 * alone.  *removed (NULL ok) gets the number of temporaries removed.  dir
 * NULL stops recording.  Only temporaries of absolute paths are recorded;
 * a record that cannot be written does not fail the write (the temporary
 * is then only removed by its writer).  Call before other threads use
 * fs_atomic.  0 or -errno, message in err; on failure nothing is recorded.
 */
int	fs_atomic_journal(const char *dir, unsigned *removed, char *err,
	    size_t errlen);

/*
 * POST /files/replace: replace every non-overlapping occurrence of old
 * (oldlen >= 1, else -EINVAL) with new in the file at path (links
 * followed), streaming (memory does not grow with the file: read in 64 KiB
 * chunks and carry at most oldlen-1 bytes), written through fs_atomic so
 * the file is replaced whole or not at all, with mode and owner kept.
 * Missing file -ENOENT; a directory -EISDIR; another non-regular file
 * -EINVAL (all checked before oldlen, as upstream).  When nothing
 * matches, the file is left untouched (no temporary is even made).
 * *count gets the number of replacements.  Message in err.
 */
int	fs_replace(const char *path, const char *old, size_t oldlen,
	    const char *new_, size_t newlen, unsigned long long *count,
	    char *err, size_t errlen);

#endif
