/*
 * fs_ops.h -- filesystem operations behind the file endpoints.
 *
 * POSIX only, no HTTP and no logging: functions return 0 or -errno and,
 * where useful, a message in err.  Paths are already resolved (fs_path.h).
 * Any thread.
 */
#ifndef FS_OPS_H
#define FS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Upstream's mode convention: the decimal digits of v are octal digits
 * (755 means 0755).  0 means "leave the mode alone" (*out = 0).  Only the
 * permission bits are kept.  -EINVAL for negative values or digits 8, 9.
 */
int	fs_mode_parse(long long v, mode_t *out);

/*
 * Look up a user and a group by name (NULL or "" leaves the id at -1).
 * A numeric name is taken as an id.  -ENOENT with a message when unknown.
 */
int	fs_owner_lookup(const char *user, const char *group, uid_t *uid,
	    gid_t *gid, char *err, size_t errlen);

/*
 * mkdir -p.  Components are created with 0777 less the umask; the last
 * one, only if this call created it, then gets mode (unless 0) and
 * uid/gid (unless -1).  *created tells whether it did.  -EEXIST when a
 * component exists and is not a directory; else -errno from the system.
 */
int	fs_mkdirs(const char *path, mode_t mode, uid_t uid, gid_t gid,
	    bool *created, char *err, size_t errlen);

#endif
