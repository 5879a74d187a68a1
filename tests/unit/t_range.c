/*
 * t_range.c -- unit tests for range.c.
 *
 * A table of (header, file size, result, start, length): the three spec
 * forms, clamping to the file, several specs (only the first that fits
 * counts), blanks and empty specs, ranges past EOF, empty files, "-0",
 * every malformed form (also when the size would have dropped the spec),
 * and numbers at the 2^63 limit.  A separate test checks that the
 * out-params are left alone on failure.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "../../execd/transport/range.h"
#include "../t.h"

#define BIG	UINT64_C(9223372036854775807)	/* 2^63 - 1 */

struct row {
	const char	*hdr;
	uint64_t	 size;
	int		 rc;
	uint64_t	 start, len;
};

static const struct row rows[] = {
	/* The three forms. */
	{ "bytes=0-9", 20, 0, 0, 10 },
	{ "bytes=5-5", 20, 0, 5, 1 },
	{ "bytes=10-", 20, 0, 10, 10 },
	{ "bytes=0-", 20, 0, 0, 20 },
	{ "bytes=-5", 10, 0, 5, 5 },
	{ "bytes=-1", 10, 0, 9, 1 },
	{ "bytes=19-19", 20, 0, 19, 1 },
	/* Clamped to the file. */
	{ "bytes=5-100", 20, 0, 5, 15 },
	{ "bytes=0-18446744073", 3, 0, 0, 3 },
	{ "bytes=-100", 20, 0, 0, 20 },
	{ "bytes=-20", 20, 0, 0, 20 },
	{ "bytes=-9223372036854775807", 7, 0, 0, 7 },
	/* Several: the first that overlaps. */
	{ "bytes=0-1,5-6", 20, 0, 0, 2 },
	{ "bytes=30-40,5-6", 20, 0, 5, 2 },
	{ "bytes=20-,-0,2-3", 20, 0, 2, 2 },
	{ "bytes=-0,-3", 20, 0, 17, 3 },
	/* Blanks and empty specs. */
	{ "bytes= 1-2 ", 20, 0, 1, 2 },
	{ "bytes=\t1 - 2\t", 20, 0, 1, 2 },
	{ "bytes=,,1-2,", 20, 0, 1, 2 },
	{ "bytes= , 3-", 20, 0, 3, 17 },
	{ "bytes=- 4", 20, 0, 16, 4 },
	/* Nothing overlaps. */
	{ "bytes=100-", 20, -ERANGE, 0, 0 },
	{ "bytes=20-20", 20, -ERANGE, 0, 0 },
	{ "bytes=20-", 20, -ERANGE, 0, 0 },
	{ "bytes=-0", 20, -ERANGE, 0, 0 },
	{ "bytes=0-0", 0, -ERANGE, 0, 0 },
	{ "bytes=-5", 0, -ERANGE, 0, 0 },
	{ "bytes=0-", 0, -ERANGE, 0, 0 },
	{ "bytes=30-40,50-", 20, -ERANGE, 0, 0 },
	{ "bytes=9223372036854775807-", 20, -ERANGE, 0, 0 },
	/* Malformed. */
	{ "", 20, -EINVAL, 0, 0 },
	{ "bytes", 20, -EINVAL, 0, 0 },
	{ "bytes=", 20, -EINVAL, 0, 0 },
	{ "bytes= , ,", 20, -EINVAL, 0, 0 },
	{ "Bytes=0-1", 20, -EINVAL, 0, 0 },
	{ " bytes=0-1", 20, -EINVAL, 0, 0 },
	{ "items=0-1", 20, -EINVAL, 0, 0 },
	{ "bytes=foo", 20, -EINVAL, 0, 0 },
	{ "bytes=5", 20, -EINVAL, 0, 0 },
	{ "bytes=-", 20, -EINVAL, 0, 0 },
	{ "bytes=--5", 20, -EINVAL, 0, 0 },
	{ "bytes=-5-", 20, -EINVAL, 0, 0 },
	{ "bytes=5-4", 20, -EINVAL, 0, 0 },
	{ "bytes=+5-6", 20, -EINVAL, 0, 0 },
	{ "bytes=5-+6", 20, -EINVAL, 0, 0 },
	{ "bytes=0x5-6", 20, -EINVAL, 0, 0 },
	{ "bytes=1 2-3", 20, -EINVAL, 0, 0 },
	{ "bytes=1-2;3", 20, -EINVAL, 0, 0 },
	{ "bytes=0-1,x", 20, -EINVAL, 0, 0 },
	{ "bytes=0-1,,5-2", 20, -EINVAL, 0, 0 },
	/* Malformed whatever the size: upstream dropped these. */
	{ "bytes=100-abc", 20, -EINVAL, 0, 0 },
	{ "bytes=100-50", 20, -EINVAL, 0, 0 },
	{ "bytes=5-4", 0, -EINVAL, 0, 0 },
	/* The 2^63 limit. */
	{ "bytes=9223372036854775808-", 20, -EINVAL, 0, 0 },
	{ "bytes=0-9223372036854775808", 20, -EINVAL, 0, 0 },
	{ "bytes=-9223372036854775808", 20, -EINVAL, 0, 0 },
	{ "bytes=0-99999999999999999999999", 20, -EINVAL, 0, 0 },
	/* Upstream 1.1.1 (#2089): an end past EOF is clamped first. */
	{ "bytes=0-9223372036854775807", 20, 0, 0, 20 },
	{ "bytes=5-9223372036854775807", 20, 0, 5, 15 },
	{ "bytes=0-9223372036854775807", BIG, 0, 0, BIG },
	{ "bytes=9223372036854775806-", BIG, 0, BIG - 1, 1 },
	{ "bytes=-9223372036854775807", UINT64_MAX, 0,
	    UINT64_MAX - BIG, BIG },
	{ "bytes=00000000000000000000000000007-8", 20, 0, 7, 2 },
};

/* Every row of the table. */
static void
test_table(void)
{
	uint64_t start, len;
	int rc;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		start = len = 777;
		rc = range_parse(rows[i].hdr, rows[i].size, &start, &len);
		if (rc != rows[i].rc || (rc == 0 && (start != rows[i].start ||
		    len != rows[i].len))) {
			t_fail_ = 1;
			fprintf(stderr, "  row %zu: \"%s\" of %llu: %d "
			    "%llu+%llu, expected %d %llu+%llu\n", i,
			    rows[i].hdr, (unsigned long long)rows[i].size, rc,
			    (unsigned long long)start,
			    (unsigned long long)len, rows[i].rc,
			    (unsigned long long)rows[i].start,
			    (unsigned long long)rows[i].len);
		}
		if (rc != 0)
			T_OK(start == 777 && len == 777);
	}
	T_OK(sizeof(rows) / sizeof(rows[0]) >= 40);
}

/* NULL is malformed, and the outputs stay untouched. */
static void
test_null(void)
{
	uint64_t start = 1, len = 2;

	T_EQ_INT(range_parse(NULL, 10, &start, &len), -EINVAL);
	T_EQ_INT(start, 1);
	T_EQ_INT(len, 2);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "range_table", test_table },
		{ "range_null", test_null },
	};

	return T_RUN(cases);
}
