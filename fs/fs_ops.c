/*
 * fs_ops.c -- directory creation, modes and owners.
 *
 * Everything here is a short sequence of system calls with the errno of
 * the one that failed passed back, so the HTTP layer can tell a client's
 * mistake (404, 403, 409) from a fault of ours (500).
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_ops.h"

/* Decimal digits read as octal: 755 -> 0755. */
int
fs_mode_parse(long long v, mode_t *out)
{
	mode_t m = 0;
	unsigned shift = 0;

	if (v < 0)
		return -EINVAL;
	for (; v > 0; v /= 10, shift += 3) {
		if (v % 10 > 7 || shift > 30)
			return -EINVAL;
		m |= (mode_t)(v % 10) << shift;
	}
	*out = m & 0777;
	return 0;
}

static int
parse_id(const char *s, unsigned long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	*out = strtoul(s, &end, 10);
	/* (uid_t)-1 means "unchanged" to chown(2): never a real id here. */
	return *end == '\0' && errno == 0 && *out < (uid_t)-1;
}

/* Names (or numbers) to ids; see fs_ops.h. */
int
fs_owner_lookup(const char *user, const char *group, uid_t *uid, gid_t *gid,
    char *err, size_t errlen)
{
	struct passwd *pw;
	struct group *gr;
	unsigned long id;

	*uid = (uid_t)-1;
	*gid = (gid_t)-1;
	if (user != NULL && user[0] != '\0') {
		if ((pw = getpwnam(user)) != NULL)
			*uid = pw->pw_uid;
		else if (parse_id(user, &id))
			*uid = (uid_t)id;
		else {
			snprintf(err, errlen, "unknown user %s", user);
			return -ENOENT;
		}
	}
	if (group != NULL && group[0] != '\0') {
		if ((gr = getgrnam(group)) != NULL)
			*gid = gr->gr_gid;
		else if (parse_id(group, &id))
			*gid = (gid_t)id;
		else {
			snprintf(err, errlen, "unknown group %s", group);
			return -ENOENT;
		}
	}
	return 0;
}

/* mkdir -p with the leaf's mode and owner; see fs_ops.h. */
int
fs_mkdirs(const char *path, mode_t mode, uid_t uid, gid_t gid, bool *created,
    char *err, size_t errlen)
{
	char buf[PATH_MAX], *p;
	struct stat st;
	size_t len = strlen(path);
	bool made = false;
	char c;
	int e;

	if (len == 0 || len >= sizeof(buf))
		return len == 0 ? -EINVAL : -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	if (len == 1) {		/* "/" exists */
		*created = false;
		return 0;
	}
	/* 1. Create each component in turn, from the root down. */
	for (p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		c = *p;
		*p = '\0';
		made = false;
		if (mkdir(buf, 0777) == 0) {
			made = true;
		} else if (errno != EEXIST) {
			e = errno;
			snprintf(err, errlen, "mkdir %s: %s", buf, strerror(e));
			return -e;
		} else if (stat(buf, &st) < 0 || !S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "%s exists and is not a "
			    "directory", buf);
			return -EEXIST;
		}
		*p = c;
		if (c == '\0')
			break;
	}
	/* 2. Only a directory this call created gets mode and owner. */
	if (made && mode != 0 && chmod(buf, mode) < 0)
		goto sys;
	if (made && (uid != (uid_t)-1 || gid != (gid_t)-1) &&
	    chown(buf, uid, gid) < 0)
		goto sys;
	*created = made;
	return 0;
sys:
	e = errno;
	snprintf(err, errlen, "%s: %s", buf, strerror(e));
	return -e;
}
