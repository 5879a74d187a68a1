/*
 * t_fs_info.c -- unit tests for fs_info.c.
 *
 * Files of each type are made in a fresh temporary directory (in $TMPDIR,
 * else /tmp) with fixed times and modes, and their fs_info compared field
 * by field.  Times are formatted from fixed timespecs under TZ=UTC, a
 * zero-offset zone with another name, and fixed offsets east and west
 * (POSIX TZ strings count west as positive: "UTC-2" is +02:00).  Names:
 * uid and gid 0, our own ids, an id with no name, a buffer too small.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../fs/fs_info.h"
#include "../t.h"
#include "../t_tmp.h"

static void	 tz_set(const char *);
static const char *fmt(time_t, long);

/* Switch the local time zone. */
static void
tz_set(const char *tz)
{
	setenv("TZ", tz, 1);
	tzset();
}

/* fs_time_format of a fixed time, into a static buffer. */
static const char *
fmt(time_t sec, long ns)
{
	static char buf[40];
	struct timespec ts = { .tv_sec = sec, .tv_nsec = ns };
	size_t n;

	memset(buf, 'x', sizeof(buf));
	n = fs_time_format(&ts, buf, sizeof(buf));
	if (n != strlen(buf))
		return "(bad length)";
	return buf;
}

/* Regular file, directory, link, fifo: type, size, mode, owner, times. */
static void
test_info_types(void)
{
	static const struct timespec times[2] = {
		{ 1700000000, 1 }, { 1767225600, 500000000 },
	};
	char *d = t_tmpdir();
	struct fs_info fi;
	int fd;

	fd = open(t_path(d, "f"), O_WRONLY | O_CREAT, 0600);
	T_OK(fd >= 0);
	T_EQ_INT(write(fd, "hello world\n", 12), 12);
	T_EQ_INT(fchmod(fd, 04640), 0);
	close(fd);
	T_EQ_INT(utimensat(AT_FDCWD, t_path(d, "f"), times, 0), 0);
	memset(&fi, 0xa5, sizeof(fi));
	T_EQ_INT(fs_info_lstat(t_path(d, "f"), &fi), 0);
	T_EQ_INT(fi.type, FS_T_FILE);
	T_EQ_INT(fi.size, 12);
	T_EQ_INT(fi.mode, 0640);
	T_EQ_INT(fi.uid, geteuid());
	T_EQ_INT(fi.gid, getegid());
	T_EQ_INT(fi.mtime.tv_sec, 1767225600);
	T_EQ_INT(fi.mtime.tv_nsec, 500000000);
	/*
	 * ctime is "now": not long ago, and not in the future, give or take
	 * a second: the kernel stamps files with a finer clock than time()
	 * reads, which can lag it across a second boundary.
	 */
	T_OK(fi.ctime.tv_sec > 1767225600 - 86400 * 365 * 5);
	T_OK(fi.ctime.tv_sec <= time(NULL) + 1);

	T_EQ_INT(mkdir(t_path(d, "dir"), 0), 0);
	T_EQ_INT(chmod(t_path(d, "dir"), 01755), 0);
	T_EQ_INT(fs_info_lstat(t_path(d, "dir"), &fi), 0);
	T_EQ_INT(fi.type, FS_T_DIR);
	T_EQ_INT(fi.mode, 0755);

	T_EQ_INT(symlink("f-target-17", t_path(d, "ln")), 0);
	T_EQ_INT(fs_info_lstat(t_path(d, "ln"), &fi), 0);
	T_EQ_INT(fi.type, FS_T_SYMLINK);
	T_EQ_INT(fi.size, 11);
	T_EQ_INT(fi.mode, 0777);

	T_EQ_INT(mkfifo(t_path(d, "fifo"), 0620), 0);
	T_EQ_INT(chmod(t_path(d, "fifo"), 0620), 0);
	T_EQ_INT(fs_info_lstat(t_path(d, "fifo"), &fi), 0);
	T_EQ_INT(fi.type, FS_T_OTHER);
	T_EQ_INT(fi.size, 0);
	T_EQ_INT(fi.mode, 0620);

	/* Missing: -ENOENT and *info left alone. */
	memset(&fi, 0x5a, sizeof(fi));
	T_EQ_INT(fs_info_lstat(t_path(d, "none"), &fi), -ENOENT);
	T_EQ_INT(fi.mode, (mode_t)0x5a5a5a5a);
	T_EQ_INT(fs_info_lstat(t_path(d, "f/x"), &fi), -ENOTDIR);

	unlink(t_path(d, "f"));
	unlink(t_path(d, "ln"));
	unlink(t_path(d, "fifo"));
	rmdir(t_path(d, "dir"));
	T_EQ_INT(rmdir(d), 0);
	free(d);
}

/* fs_info_from_stat on a made-up stat. */
static void
test_info_from_stat(void)
{
	struct stat st;
	struct fs_info fi;

	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFSOCK | 02751;
	st.st_size = 1234567890123LL;
	st.st_uid = 4242;
	st.st_gid = 4343;
	st.st_mtim.tv_sec = 11;
	st.st_mtim.tv_nsec = 12;
	st.st_ctim.tv_sec = 21;
	st.st_ctim.tv_nsec = 22;
	fs_info_from_stat(&st, &fi);
	T_EQ_INT(fi.type, FS_T_OTHER);
	T_EQ_INT(fi.size, 1234567890123LL);
	T_EQ_INT(fi.uid, 4242);
	T_EQ_INT(fi.gid, 4343);
	T_EQ_INT(fi.mode, 0751);
	T_EQ_INT(fi.mtime.tv_sec, 11);
	T_EQ_INT(fi.mtime.tv_nsec, 12);
	T_EQ_INT(fi.ctime.tv_sec, 21);
	T_EQ_INT(fi.ctime.tv_nsec, 22);
	st.st_mode = S_IFBLK | 0600;
	fs_info_from_stat(&st, &fi);
	T_EQ_INT(fi.type, FS_T_OTHER);
	st.st_mode = S_IFCHR | 0600;
	fs_info_from_stat(&st, &fi);
	T_EQ_INT(fi.type, FS_T_OTHER);
}

/* Type names, and the mode as decimal digits. */
static void
test_names_modes(void)
{
	static const struct {
		mode_t		 m;
		unsigned	 want;
	} v[] = {
		{ 0755, 755 }, { 0644, 644 }, { 0600, 600 }, { 0, 0 },
		{ 0777, 777 }, { 07, 7 }, { 010, 10 }, { 0100, 100 },
		{ 04755, 755 }, { 07777, 777 }, { 0640, 640 }, { 0501, 501 },
		{ S_IFREG | 0644, 644 },
	};

	T_EQ_STR(fs_type_name(FS_T_FILE), "file");
	T_EQ_STR(fs_type_name(FS_T_DIR), "directory");
	T_EQ_STR(fs_type_name(FS_T_SYMLINK), "symlink");
	T_EQ_STR(fs_type_name(FS_T_OTHER), "other");
	T_EQ_STR(fs_type_name((enum fs_type)42), "other");
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		T_EQ_INT(fs_mode_decimal(v[i].m), v[i].want);
}

/* RFC 3339 with trimmed nanoseconds, under UTC and fixed offsets. */
static void
test_time_format(void)
{
	const char *saved = getenv("TZ");
	char *keep = saved != NULL ? strdup(saved) : NULL;

	/* 1767225600 is 2026-01-01T00:00:00Z. */
	tz_set("UTC");
	T_EQ_STR(fmt(0, 0), "1970-01-01T00:00:00Z");
	T_EQ_STR(fmt(1767225600, 0), "2026-01-01T00:00:00Z");
	T_EQ_STR(fmt(1767225600, 500000000), "2026-01-01T00:00:00.5Z");
	T_EQ_STR(fmt(1767225600, 123456789),
	    "2026-01-01T00:00:00.123456789Z");
	T_EQ_STR(fmt(1767225600, 120000000), "2026-01-01T00:00:00.12Z");
	T_EQ_STR(fmt(1767225600, 1), "2026-01-01T00:00:00.000000001Z");
	T_EQ_STR(fmt(1767225600, 999999999),
	    "2026-01-01T00:00:00.999999999Z");
	T_EQ_STR(fmt(1767225600 + 86399, 10),
	    "2026-01-01T23:59:59.00000001Z");
	T_EQ_STR(fmt(951782400, 0), "2000-02-29T00:00:00Z");
	T_EQ_STR(fmt(-1, 0), "1969-12-31T23:59:59Z");
	/* Another zone with offset zero is still "Z", as in Go. */
	tz_set("GMT0");
	T_EQ_STR(fmt(1767225600, 500000000), "2026-01-01T00:00:00.5Z");
	/* POSIX: "UTC-2" is two hours east of Greenwich. */
	tz_set("UTC-2");
	T_EQ_STR(fmt(1767225600, 0), "2026-01-01T02:00:00+02:00");
	T_EQ_STR(fmt(1767225600, 500000000),
	    "2026-01-01T02:00:00.5+02:00");
	T_EQ_STR(fmt(1767225600, 123456789),
	    "2026-01-01T02:00:00.123456789+02:00");
	tz_set("XYZ+5:30");
	T_EQ_STR(fmt(1767225600, 0), "2025-12-31T18:30:00-05:30");
	T_EQ_STR(fmt(1767225600, 500000000),
	    "2025-12-31T18:30:00.5-05:30");
	T_EQ_STR(fmt(1767225600, 123456789),
	    "2025-12-31T18:30:00.123456789-05:30");
	tz_set("ABC-14");
	T_EQ_STR(fmt(1767225600, 0), "2026-01-01T14:00:00+14:00");
	if (keep != NULL)
		tz_set(keep);
	else {
		unsetenv("TZ");
		tzset();
	}
	free(keep);
}

/* Short buffers are cut, always NUL-terminated; the length is returned. */
static void
test_time_format_short(void)
{
	struct timespec ts = { 1767225600, 123456789 };
	char buf[40];

	tz_set("UTC-2");
	T_EQ_INT(fs_time_format(&ts, buf, sizeof(buf)), 35);
	T_EQ_INT(strlen(buf), 35);
	T_EQ_INT(fs_time_format(&ts, buf, 10), 9);
	T_EQ_STR(buf, "2026-01-0");
	T_EQ_INT(fs_time_format(&ts, buf, 1), 0);
	T_EQ_STR(buf, "");
	buf[0] = 'k';
	T_EQ_INT(fs_time_format(&ts, buf, 0), 0);
	T_EQ_INT(buf[0], 'k');
	tz_set("UTC");
}

/* Names for ids, or the id when there is no name. */
static void
test_user_group_names(void)
{
	char buf[32], want[32];
	struct passwd *pw;
	struct group *gr;
	const uid_t nobody_id = 3999999999u;

	T_OK(fs_user_name(0, buf, sizeof(buf)) == buf);
	T_EQ_STR(buf, "root");
	T_OK(fs_group_name(0, buf, sizeof(buf)) == buf);
	T_EQ_STR(buf, "root");
	/* Twice: the cached answer is the same. */
	T_EQ_STR(fs_user_name(0, buf, sizeof(buf)), "root");
	T_EQ_STR(fs_group_name(0, buf, sizeof(buf)), "root");
	/* An id nobody has. */
	T_OK(getpwuid(nobody_id) == NULL);
	T_EQ_STR(fs_user_name(nobody_id, buf, sizeof(buf)), "3999999999");
	T_EQ_STR(fs_user_name(nobody_id, buf, sizeof(buf)), "3999999999");
	T_OK(getgrgid(nobody_id) == NULL);
	T_EQ_STR(fs_group_name(nobody_id, buf, sizeof(buf)), "3999999999");
	/* Our own ids, as the databases say. */
	if ((pw = getpwuid(geteuid())) != NULL)
		T_EQ_STR(fs_user_name(geteuid(), buf, sizeof(buf)),
		    pw->pw_name);
	if ((gr = getgrgid(getegid())) != NULL)
		T_EQ_STR(fs_group_name(getegid(), buf, sizeof(buf)),
		    gr->gr_name);
	/* More ids than the cache holds, then the first again. */
	for (unsigned i = 0; i < 20; i++) {
		snprintf(want, sizeof(want), "%u", 3900000000u + i);
		T_EQ_STR(fs_user_name(3900000000u + i, buf, sizeof(buf)),
		    want);
	}
	T_EQ_STR(fs_user_name(0, buf, sizeof(buf)), "root");
	/* A name that does not fit gives the id. */
	T_EQ_STR(fs_user_name(0, buf, 4), "0");
	T_EQ_STR(fs_user_name(0, buf, 5), "root");
	T_EQ_STR(fs_group_name(nobody_id, buf, 5), "3999");
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "info_types", test_info_types },
		{ "info_from_stat", test_info_from_stat },
		{ "info_names_modes", test_names_modes },
		{ "info_time_format", test_time_format },
		{ "info_time_format_short", test_time_format_short },
		{ "info_user_group_names", test_user_group_names },
	};

	return T_RUN(cases);
}
