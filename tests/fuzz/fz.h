/*
 * fz.h -- what the fuzz targets share: CHECK, which aborts on a broken
 * invariant naming it, and a whole-string UTF-8 test.  Header only.
 */
#ifndef FZ_H
#define FZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../util/utf8.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)
#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Whether s[0..n) is all valid UTF-8. */
static inline bool
fz_utf8(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k;

	for (size_t i = 0; i < n; i += k)
		if ((k = utf8_len(p + i, n - i)) == 0)
			return false;
	return true;
}

#endif
