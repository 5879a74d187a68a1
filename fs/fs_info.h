/*
 * fs_info.h -- what the file endpoints say about one file.
 *
 * The pieces of upstream's FileInfo object: type from lstat, size, times
 * in Go's RFC 3339 form, owner and group names, and the permission bits
 * in upstream's "octal digits as a decimal number" form.  No JSON here:
 * the route builds the object.  POSIX only, no logging; any thread (the
 * name cache is per thread).
 */
#ifndef FS_INFO_H
#define FS_INFO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

enum fs_type { FS_T_FILE, FS_T_DIR, FS_T_SYMLINK, FS_T_OTHER };

struct fs_info {
	enum fs_type	type;
	uint64_t	size;		/* lstat size */
	struct timespec	mtime;
	struct timespec	ctime;		/* change: upstream's created_at */
	uid_t		uid;
	gid_t		gid;
	mode_t		mode;		/* permission bits only, 0..0777 */
};

/* Fill *info from a stat (normally an lstat) result. */
void	fs_info_from_stat(const struct stat *, struct fs_info *);

/* lstat(2) path into *info (written only on success).  0 or -errno. */
int	fs_info_lstat(const char *path, struct fs_info *);

/* "file" "directory" "symlink" "other" (also for values out of range). */
const char *fs_type_name(enum fs_type);

/*
 * 0755 -> 755: the octal digits read as a decimal number (upstream's wire
 * form).  Bits above 0777 are ignored.
 */
unsigned fs_mode_decimal(mode_t);

/*
 * Go's time.RFC3339Nano in the local time zone: "2026-01-02T03:04:05.5Z"
 * or "...05.123456789+02:00"; trailing zeros of the fraction dropped, no
 * fraction when it is zero; "Z" whenever the offset is zero, as Go does.
 * Returns the length written (buf always NUL-terminated when len > 0; 40
 * bytes are always enough for years 0 to 9999, and a longer result is cut
 * to fit).  A time localtime_r() cannot represent gives the Unix epoch.
 */
size_t	fs_time_format(const struct timespec *, char *buf, size_t len);

/*
 * User / group name for an id, else the id in decimal (upstream's rule);
 * a name that does not fit in buf also gives the id.  buf >= 32 bytes;
 * returns buf.  getpwuid_r/getgrgid_r behind a small per-thread cache
 * whose entries (misses too) live a few seconds.
 */
const char *fs_user_name(uid_t, char *buf, size_t len);
const char *fs_group_name(gid_t, char *buf, size_t len);

#endif
