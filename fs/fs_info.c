/*
 * fs_info.c -- file metadata in upstream's forms.
 *
 * Small and pure apart from lstat(2) and the user and group databases.
 * Names are looked up once per id and kept for a few seconds in a tiny
 * per-thread cache, because a directory listing asks for the same owner
 * on every entry while a user created by a command should still show up
 * soon after.  Nothing here opens or changes files.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs_info.h"

#define NAME_CACHE	8	/* ids remembered per kind and thread */
#define NAME_TTL	5	/* seconds an answer is trusted */
#define NAME_BUF_MAX	(1 << 20)	/* getpwuid_r buffer cap */

/* One remembered answer: a name, or "no such id" (name empty). */
struct name_entry {
	bool		 used;
	unsigned	 id;
	time_t		 at;
	char		 name[256];	/* "" if the id has no name */
};

struct name_cache {
	struct name_entry e[NAME_CACHE];
	unsigned	 next;
};

static _Thread_local struct name_cache users, groups;

static time_t	now_coarse(void);
static int	name_lookup(bool, unsigned, char *, size_t);
static const char *name_get(bool, struct name_cache *, unsigned, char *,
		    size_t);

/* Fill *info from st; see fs_info.h. */
void
fs_info_from_stat(const struct stat *st, struct fs_info *info)
{
	if (S_ISREG(st->st_mode))
		info->type = FS_T_FILE;
	else if (S_ISDIR(st->st_mode))
		info->type = FS_T_DIR;
	else if (S_ISLNK(st->st_mode))
		info->type = FS_T_SYMLINK;
	else
		info->type = FS_T_OTHER;
	info->size = st->st_size < 0 ? 0 : (uint64_t)st->st_size;
	info->mtime = st->st_mtim;
	info->ctime = st->st_ctim;
	info->uid = st->st_uid;
	info->gid = st->st_gid;
	info->mode = st->st_mode & 0777;
}

/* lstat path into *info. 0 or -errno. */
int
fs_info_lstat(const char *path, struct fs_info *info)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return -errno;
	fs_info_from_stat(&st, info);
	return 0;
}

/* The wire name of a type. */
const char *
fs_type_name(enum fs_type t)
{
	switch (t) {
	case FS_T_FILE:
		return "file";
	case FS_T_DIR:
		return "directory";
	case FS_T_SYMLINK:
		return "symlink";
	default:
		return "other";
	}
}

/* 0755 -> 755. */
unsigned
fs_mode_decimal(mode_t m)
{
	return ((m >> 6) & 7) * 100 + ((m >> 3) & 7) * 10 + (m & 7);
}

/* RFC 3339 with nanoseconds, Go style; see fs_info.h. */
size_t
fs_time_format(const struct timespec *ts, char *buf, size_t len)
{
	char out[96], frac[11] = "", zone[8] = "Z";
	struct tm tm;
	time_t t = ts->tv_sec;
	long ns = ts->tv_nsec, off;
	size_t n;
	int i;

	if (len == 0)
		return 0;
	if (ns < 0 || ns > 999999999)
		ns = 0;
	if (localtime_r(&t, &tm) == NULL) {
		t = 0;
		ns = 0;
		if (gmtime_r(&t, &tm) == NULL)
			memset(&tm, 0, sizeof(tm));
		tm.tm_gmtoff = 0;
	}
	/* 1. The fraction: nine digits, trailing zeros dropped. */
	if (ns != 0) {
		snprintf(frac, sizeof(frac), ".%09ld", ns);
		for (i = 9; frac[i] == '0'; i--)
			frac[i] = '\0';
	}
	/* 2. The zone: "Z" for a zero offset, else +hh:mm (seconds cut). */
	off = tm.tm_gmtoff;
	if (off != 0) {
		snprintf(zone, sizeof(zone), "%c%02ld:%02ld",
		    off < 0 ? '-' : '+', labs(off) / 3600 % 100,
		    labs(off) / 60 % 60);
	}
	snprintf(out, sizeof(out), "%04d-%02d-%02dT%02d:%02d:%02d%s%s",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, frac, zone);
	n = strlen(out);
	if (n >= len)
		n = len - 1;
	memcpy(buf, out, n);
	buf[n] = '\0';
	return n;
}

/* Seconds on a clock that does not jump. */
static time_t
now_coarse(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) < 0)
		return 0;
	return ts.tv_sec;
}

/*
 * Look a user (group false) or group up by id into name: 1 found, 0 not
 * found (or the database failed, or the name is longer than namelen-1).
 */
static int
name_lookup(bool group, unsigned id, char *name, size_t namelen)
{
	char stackbuf[1024], *b = stackbuf, *nb;
	size_t blen = sizeof(stackbuf);
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	const char *s = NULL;
	int e, found = 0;

	for (;;) {
		if (group) {
			e = getgrgid_r((gid_t)id, &gr, b, blen, &grp);
			if (e == 0 && grp != NULL)
				s = grp->gr_name;
		} else {
			e = getpwuid_r((uid_t)id, &pw, b, blen, &pwp);
			if (e == 0 && pwp != NULL)
				s = pwp->pw_name;
		}
		if (e != ERANGE || blen >= NAME_BUF_MAX)
			break;
		blen *= 2;
		if ((nb = realloc(b == stackbuf ? NULL : b, blen)) == NULL)
			break;
		b = nb;
	}
	if (s != NULL && s[0] != '\0' && strlen(s) < namelen) {
		strcpy(name, s);
		found = 1;
	}
	if (b != stackbuf)
		free(b);
	return found;
}

/* A name from the cache, else the databases, else the id: into buf. */
static const char *
name_get(bool group, struct name_cache *c, unsigned id, char *buf,
    size_t len)
{
	struct name_entry *e = NULL;
	time_t now = now_coarse();
	char name[sizeof(e->name)];

	if (len == 0)
		return buf;
	for (size_t i = 0; i < NAME_CACHE; i++) {
		if (c->e[i].used && c->e[i].id == id &&
		    now - c->e[i].at < NAME_TTL) {
			e = &c->e[i];
			break;
		}
	}
	if (e == NULL) {
		if (!name_lookup(group, id, name, sizeof(name)))
			name[0] = '\0';
		e = &c->e[c->next];
		c->next = (c->next + 1) % NAME_CACHE;
		e->used = true;
		e->id = id;
		e->at = now;
		memcpy(e->name, name, sizeof(e->name));
	}
	if (e->name[0] != '\0' && strlen(e->name) < len)
		memcpy(buf, e->name, strlen(e->name) + 1);
	else
		snprintf(buf, len, "%u", id);
	return buf;
}

/* User name for uid, else its number. */
const char *
fs_user_name(uid_t uid, char *buf, size_t len)
{
	return name_get(false, &users, (unsigned)uid, buf, len);
}

/* Group name for gid, else its number. */
const char *
fs_group_name(gid_t gid, char *buf, size_t len)
{
	return name_get(true, &groups, (unsigned)gid, buf, len);
}
