/*
 * fs_watch.h -- inotify watches on a file or a directory tree, for the
 * event loop.
 *
 * fs_watch_new() watches a directory's entries (and, when recursive,
 * every subdirectory, including those created or moved in later) or a
 * single file.  The descriptor from fs_watch_fd() is non-blocking; the
 * loop polls it for POLLIN and calls fs_watch_read(), which never blocks.
 * POSIX and Linux only, no logging.  One object belongs to one thread at a
 * time (the loop thread in execd); different objects are independent.
 *
 * What is reported, and what is not:
 * - create, delete, moved_from, moved_to, attrib for entries of watched
 *   directories; modify for each write to a file (IN_MODIFY: a burst of
 *   writes gives a burst of events).  IN_CLOSE_WRITE is not watched, so
 *   closing a file reports nothing.
 * - A watched file (the root given as a file) reports modify and attrib
 *   with its own path, and "gone" when it is deleted or renamed.
 * - Changes to the root directory itself (chmod) are attrib with the
 *   root's path.  Changes to a subdirectory itself come from its parent,
 *   once.
 * - Recursive watches: a directory created later is watched as soon as
 *   its create event is read, and it is then scanned; every entry found
 *   in it (to any depth) is reported as a create, because it may have been
 *   made before the watch was in place.  An entry made between the watch
 *   and the scan can therefore be reported twice.  A directory moved in
 *   from outside is watched (with its subdirectories) but its contents are
 *   not reported: the moved_to stands for the whole subtree.
 * - A watched subdirectory moved within the tree keeps correct paths (its
 *   watch and those below it are renamed when the moved_to pairing the
 *   moved_from by cookie is read).  One moved out of the tree stops being
 *   watched.
 * - Each moved_from/moved_to pair shares a non-zero cookie.  A move out
 *   of the tree is a lone moved_from, a move in a lone moved_to.
 * - Watches are capped at max_dirs directories: fs_watch_new() fails
 *   with -ENOSPC past it (or past the system's max_user_watches); later
 *   directories past it are silently not watched.
 * - "overflow" (path: the root) means the kernel dropped events; the
 *   client should rescan.  It is also reported when more than max_queue
 *   events wait for the callback.
 * - "gone" (path: the root) is reported once when the root is deleted or
 *   moved away, or its watch is removed (unmount); nothing follows it.
 */
#ifndef FS_WATCH_H
#define FS_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FS_WATCH_MAX_DIRS	8192	/* default max_dirs */
#define FS_WATCH_MAX_QUEUE	65536	/* default max_queue */

struct fs_watch;

/* How to watch; a zero cap takes its default. */
struct fs_watch_opts {
	bool	 recursive;	/* subdirectories too, and later ones */
	size_t	 max_dirs;	/* directories watched, at most */
	size_t	 max_queue;	/* events waiting for the callback */
};

enum fs_watch_kind {
	FS_W_CREATE,
	FS_W_MODIFY,
	FS_W_DELETE,
	FS_W_MOVED_FROM,
	FS_W_MOVED_TO,
	FS_W_ATTRIB,
	FS_W_OVERFLOW,
	FS_W_GONE
};

/* "create" "modify" "delete" "moved_from" "moved_to" "attrib" "overflow"
 * "gone"; "unknown" for any other value. */
const char	*fs_watch_kind_name(enum fs_watch_kind);

struct fs_watch_event {
	enum fs_watch_kind kind;
	const char	*path;		/* full path of the entry */
	bool		 dir;		/* the entry is a directory */
	uint32_t	 cookie;	/* pairs moved_from with moved_to;
					   0 otherwise */
};

/*
 * Called by fs_watch_read() for each event, on its thread.  The event and
 * its path are valid during the call only.  Return 0 to go on or a
 * negative errno to stop (fs_watch_read returns it).  It must not free the
 * watch.
 */
typedef int fs_watch_cb(const struct fs_watch_event *, void *arg);

/*
 * Watch path (a directory: its entries; a file: the file itself; a
 * symlink given as path is followed, symlinks below it never are);
 * opts->recursive adds every subdirectory, and directories created (or
 * moved in) later.  opts NULL: not recursive, default caps.  NULL with
 * errno (ENOENT, EACCES, ENOSPC past max_dirs or the system limit,
 * EMFILE...) and a message in err.
 */
struct fs_watch	*fs_watch_new(const char *path,
		    const struct fs_watch_opts *opts, char *err,
		    size_t errlen);

/* The inotify descriptor: non-blocking, CLOEXEC; poll it for POLLIN. */
int		 fs_watch_fd(const struct fs_watch *);

/* How many directories (or the one file) are watched now. */
size_t		 fs_watch_count(const struct fs_watch *);

/*
 * Read every pending event (never blocks), calling cb for each.  0 when
 * there is nothing more to read, or -errno from read(2) or from cb.  When
 * cb stopped it, the events not yet delivered are kept and the next call
 * delivers them first (call it again without waiting for POLLIN).  After
 * "gone" it reports nothing more and only drains the descriptor.
 */
int		 fs_watch_read(struct fs_watch *, fs_watch_cb *cb, void *arg);

/* Close the descriptor and free everything.  NULL ok. */
void		 fs_watch_free(struct fs_watch *);

#endif
