/*
 * fuzz_mountinfo.c -- cred_proc_mounts(), the reading of a mount
 * namespace's /proc/<pid>/mountinfo for its procfs mounts, on any bytes.
 *
 * Input: the text (not NUL-terminated).  Invariants:
 * - the answer is the number of mount points given to the callback, or
 *   -EINVAL (then the callback saw those before the bad line only);
 * - each mount point is absolute, shorter than PATH_MAX and has no NUL;
 * - nothing is read past the end (ASan: an exact-size copy).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "../../execd/core/cred.h"
#include "fz.h"

static int calls;

static void
seen(const char *path, void *arg)
{
	(void)arg;
	CHECK(path[0] == '/');
	CHECK(strlen(path) < PATH_MAX);
	calls++;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy;
	int rc;

	if (size > 1 << 16)
		return 0;
	copy = malloc(size > 0 ? size : 1);
	if (copy == NULL)
		abort();
	memcpy(copy, data, size);
	calls = 0;
	rc = cred_proc_mounts(copy, size, seen, NULL);
	CHECK(rc == -EINVAL || (rc >= 0 && rc == calls));
	/* Without a callback, the same count. */
	if (rc >= 0)
		CHECK(cred_proc_mounts(copy, size, NULL, NULL) == rc);
	free(copy);
	return 0;
}
