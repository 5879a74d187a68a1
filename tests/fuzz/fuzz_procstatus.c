/*
 * fuzz_procstatus.c -- cred_parse_status(), the reading of a process's
 * /proc/<pid>/status for its identity, on any bytes.
 *
 * Input: the text (not NUL-terminated).  Invariants:
 * - the answer is 0, -EINVAL or -E2BIG, and out is untouched unless 0;
 * - on 0 the text has a Uid, a Gid and a Groups line, the ids are the
 *   last (filesystem) fields of the last Uid and Gid lines, and there
 *   are at most CRED_NGROUPS groups, none of them (gid_t)-1;
 * - nothing is read past the end (ASan).
 */
#include <errno.h>
#include <string.h>

#include "../../execd/core/cred.h"
#include "fz.h"

static struct cred c;

/* Whether text has a line starting with key. */
static bool
has_line(const char *p, size_t n, const char *key)
{
	size_t k = strlen(key);

	for (size_t i = 0; i + k <= n; i++)
		if ((i == 0 || p[i - 1] == '\n') && memcmp(p + i, key, k) == 0)
			return true;
	return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	char *copy;
	int rc;

	if (size > 1 << 16)
		return 0;
	/* An exact-size heap copy: a read past the end is ASan's. */
	copy = malloc(size > 0 ? size : 1);
	if (copy == NULL)
		abort();
	memcpy(copy, p, size);
	c.uid = 12345;
	c.gid = 54321;
	c.ngroups = 7;
	rc = cred_parse_status(copy, size, &c);
	CHECK(rc == 0 || rc == -EINVAL || rc == -E2BIG);
	if (rc < 0)
		CHECK(c.uid == 12345 && c.gid == 54321 && c.ngroups == 7);
	else {
		CHECK(has_line(copy, size, "Uid:"));
		CHECK(has_line(copy, size, "Gid:"));
		CHECK(has_line(copy, size, "Groups:"));
		CHECK(c.ngroups <= CRED_NGROUPS);
		CHECK(c.uid != (uid_t)-1 && c.gid != (gid_t)-1);
		for (size_t i = 0; i < c.ngroups; i++)
			CHECK(c.groups[i] != (gid_t)-1);
	}
	free(copy);
	return 0;
}
