/*
 * fuzz_range.c -- fuzz target for range_parse().
 *
 * The first 8 bytes are a file size (little-endian), the rest the header
 * (up to a NUL).  It is parsed against that size and a few derived ones
 * (0, 1, the size modulo 1000, the largest).  Invariants, any break
 * aborts: the result is 0, -EINVAL or -ERANGE; on success len >= 1 and
 * start + len <= size, without overflow; on failure the out-params are
 * untouched; malformed for one size means malformed for all; an empty
 * file is never satisfiable; and a header satisfiable for a file is
 * satisfiable for the largest one.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../execd/transport/range.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t fsize = 0, sizes[5], start[5], len[5];
	int rc[5];
	char *hdr;

	if (size < 8)
		return 0;
	for (int i = 7; i >= 0; i--)
		fsize = fsize << 8 | data[i];
	if ((hdr = strndup((const char *)data + 8, size - 8)) == NULL)
		abort();
	sizes[0] = fsize;
	sizes[1] = 0;
	sizes[2] = 1;
	sizes[3] = fsize % 1000;
	sizes[4] = UINT64_MAX;
	for (int k = 0; k < 5; k++) {
		start[k] = len[k] = 0xdeadbeef;
		rc[k] = range_parse(hdr, sizes[k], &start[k], &len[k]);
		CHECK(rc[k] == 0 || rc[k] == -EINVAL || rc[k] == -ERANGE);
		CHECK((rc[k] == -EINVAL) == (rc[0] == -EINVAL));
		if (rc[k] != 0) {
			CHECK(start[k] == 0xdeadbeef && len[k] == 0xdeadbeef);
			continue;
		}
		CHECK(len[k] >= 1);
		CHECK(start[k] < sizes[k]);
		CHECK(len[k] <= sizes[k] - start[k]);
	}
	CHECK(rc[1] != 0);
	/* What fits a file fits the largest one too. */
	for (int k = 0; k < 4; k++)
		if (rc[k] == 0 && sizes[k] <= sizes[4])
			CHECK(rc[4] == 0);
	free(hdr);
	return 0;
}
