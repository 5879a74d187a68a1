/*
 * range.h -- the Range header of GET /files/download.
 *
 * Upstream's rules: "bytes=" then comma-separated specs "a-b", "a-" or
 * "-n" (the last n bytes), blanks around specs and around '-' allowed,
 * empty specs skipped.  Only the first satisfiable range is served (never
 * multipart/byteranges).  Whether a header is malformed does not depend
 * on the file's size: every spec is checked before any is measured.
 * Pure; any thread.
 */
#ifndef RANGE_H
#define RANGE_H

#include <stdint.h>

/*
 * Parse a Range header value against a file of size bytes.
 * 0: satisfiable; *start and *len are the first satisfiable range, its
 * end clamped to the file (*len >= 1).  -EINVAL: malformed (no "bytes=",
 * no spec, a spec without '-', a non-digit, a number over 2^63 - 1,
 * b < a).  -ERANGE: well formed but no range overlaps the file (each
 * starts at or after EOF, is "-0", or the file is empty).  The
 * out-params are written only on success.
 */
int	range_parse(const char *hdr, uint64_t size, uint64_t *start,
	    uint64_t *len);

#endif
