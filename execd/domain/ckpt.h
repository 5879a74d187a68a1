/*
 * ckpt.h -- workspace checkpoints: a directory tree's state recorded in
 * a store, and the tree put back to it later.
 *
 * A checkpoint is a manifest in memory (every entry's path, type, mode,
 * owner, times, link target, and the inode and ctime it had) and one
 * pack file in the store directory holding every regular file's bytes,
 * each from a block boundary (a reflink, FICLONERANGE, where the
 * filesystem makes one, else a copy): one file made, however many the
 * tree holds.  A restore walks the
 * live tree: an entry the manifest does not name, or names with another
 * type, is removed; a non-directory whose inode and ctime are the ones
 * recorded is unchanged (any write, chmod, chown or rename of an inode
 * moves its ctime), and every other one is rebuilt from the store in a
 * temporary file beside it and renamed over it; directories get their
 * modes, owners and times back.  Entries whose ctime was within
 * CKPT_RECENT_MS of the recording are always rebuilt: a write in the
 * same clock tick would not move their ctime.  Sockets are neither
 * recorded nor removed; extended attributes and ACLs are not kept.
 *
 * These calls block (they walk and copy trees): run them on a worker
 * (work.h), never on the loop.  Any thread; one call at a time holds the
 * store (a mutex).  Messages fit in CKPT_ERRLEN bytes.
 */
#ifndef EXECD_CKPT_H
#define EXECD_CKPT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define CKPT_ERRLEN	(PATH_MAX + 256)
#define CKPT_ID_LEN	16		/* hex digits of an id */
#define CKPT_MAX	64		/* checkpoints kept at once */
#define CKPT_MAX_ENTRIES 1000000	/* entries of one tree */
#define CKPT_RECENT_MS	100

struct ckpt_info {
	char		 id[CKPT_ID_LEN + 1];
	char		 path[PATH_MAX];	/* the tree's root */
	uint64_t	 files;		/* non-directories */
	uint64_t	 dirs;		/* directories under the root */
	uint64_t	 bytes;		/* of regular files */
	int64_t		 created;	/* Unix seconds */
};

struct ckpt_counts {
	uint64_t	 removed;	/* entries removed (a tree counts 1) */
	uint64_t	 written;	/* non-directories put back */
	uint64_t	 dirs;		/* directories made or given their
					   mode or owner back */
	uint64_t	 unchanged;	/* non-directories left alone */
};

/*
 * Use dir (made 0700 if missing; the packs an earlier run left in it,
 * files named by an id, are removed, nothing else) as the store.  Loop thread, before any other call.  0 or -errno with why.
 */
int	ckpt_init(const char *dir, char *err, size_t errlen);
/* Drop every checkpoint and empty the store. */
void	ckpt_shutdown(void);

/*
 * Record the tree at path (absolute, resolved; a directory, not a link):
 * *out describes it.  -ENOENT missing, -ENOTDIR not a directory,
 * -ENOSPC the store has CKPT_MAX checkpoints or its filesystem is full,
 * -EFBIG more than CKPT_MAX_ENTRIES entries; nothing is kept then.
 */
int	ckpt_take(const char *path, struct ckpt_info *out, char *err,
	    size_t errlen);
/*
 * Put the tree of checkpoint id back (a missing root is made, with its
 * parents); *out counts what changed.  -ENOENT unknown id (only); another
 * -errno stops the restore where it failed (-EIO for a file that
 * vanished under it).
 */
int	ckpt_restore(const char *id, struct ckpt_info *info,
	    struct ckpt_counts *out, char *err, size_t errlen);
/* Forget checkpoint id and remove its copies.  -ENOENT unknown id. */
int	ckpt_drop(const char *id, char *err, size_t errlen);
/* Every checkpoint, oldest first: *out (free it) and *n. */
void	ckpt_list(struct ckpt_info **out, size_t *n);

/*
 * The tree walk of a checkpoint, for others that record a tree (an
 * isolated session's baseline): every entry under the directory abs
 * (rel is its path under the tree's root, "" for the root; both are
 * buffers of alen and rlen bytes, extended and restored here), lstat'ed,
 * given to fn in pre-order, each directory's children in name order.
 * fn returns 0 to go on (into a directory), 1 to skip the entry's
 * subtree, or -errno to stop the walk with it.  A directory or entry
 * that vanishes meanwhile is skipped.  No lock taken; any thread.
 */
typedef int ckpt_walk_fn(const char *abs, const char *rel,
	    const struct stat *st, void *arg);
int	ckpt_walk(char *abs, size_t alen, char *rel, size_t rlen,
	    ckpt_walk_fn *fn, void *arg);

#endif
