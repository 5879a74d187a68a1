/*
 * fuzz_fs_path.c -- fuzz target for fs_path_resolve().
 *
 * The input is a client's path, NUL bytes and all.  It is resolved with
 * fixed homes into output buffers of several sizes, each allocated to the
 * byte so that a sanitizer sees any overrun, and the result is compared
 * with a model of fs_path.h: absolute paths come back as they are, "~"
 * and "~/rest" as the home followed by the rest, anything else (empty,
 * relative, "~user", a NUL anywhere) is -EINVAL, and a result that does
 * not fit is -ENAMETOOLONG.  Success always means an absolute,
 * NUL-terminated path with no NUL inside.  A broken invariant aborts.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fs/fs_path.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void	 check_one(const char *, size_t, const char *, size_t);

/* Resolve in[0..len) with home into a buffer of outlen bytes. */
static void
check_one(const char *in, size_t len, const char *home, size_t outlen)
{
	char *out = malloc(outlen), *want = NULL;
	size_t hl = strlen(home), wantlen = 0;
	int rc, wantrc;

	if (out == NULL)
		abort();
	memset(out, 0xa5, outlen);
	/* The model. */
	if (len == 0 || memchr(in, '\0', len) != NULL) {
		wantrc = -EINVAL;
	} else if (in[0] == '/') {
		want = malloc(len + 1);
		memcpy(want, in, len);
		wantlen = len;
		wantrc = 0;
	} else if (in[0] == '~' && (len == 1 || in[1] == '/')) {
		want = malloc(hl + len);
		memcpy(want, home, hl);
		memcpy(want + hl, in + 1, len - 1);
		wantlen = hl + len - 1;
		wantrc = 0;
	} else {
		wantrc = -EINVAL;
	}
	if (want == NULL && wantrc == 0)
		abort();
	rc = fs_path_resolve(in, len, home, out, outlen);
	if (wantrc == 0 && wantlen + 1 > outlen) {
		CHECK(rc == -ENAMETOOLONG);
	} else if (wantrc == 0 && rc == -ENAMETOOLONG) {
		/*
		 * A "~" path that fills out exactly, NUL included, is
		 * refused too; t_fs.c pins that boundary, not this target.
		 */
		CHECK(in[0] == '~' && wantlen + 1 == outlen);
	} else {
		CHECK(rc == wantrc);
	}
	if (rc == 0) {
		CHECK(out[0] == '/');
		CHECK(memchr(out, '\0', outlen) == out + wantlen);
		CHECK(memcmp(out, want, wantlen) == 0);
	}
	free(want);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const homes[] = { "/home/fuzz", "/", "/h/" };
	static const size_t sizes[] = { 1, 2, 12, 16, 64, PATH_MAX };
	const char *in = (const char *)data;

	for (size_t h = 0; h < sizeof(homes) / sizeof(homes[0]); h++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			check_one(in, size, homes[h], sizes[s]);
	return 0;
}
