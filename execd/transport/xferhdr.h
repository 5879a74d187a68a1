/*
 * xferhdr.h -- what a file transfer says in HTTP besides its bytes: the
 * Content-Disposition of a file sent, its Last-Modified date and the
 * If-Modified-Since test against it, and the numbers of a download's
 * line window (offset, limit).
 *
 * Shared by the download and archive routes, so that neither calls the
 * other, and fuzzed by tests/fuzz/fuzz_xfer.c.  Pure text, no request:
 * any thread.
 */
#ifndef EXECD_XFERHDR_H
#define EXECD_XFERHDR_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct buf;

/*
 * Append to b the Content-Disposition of a file called name: an ASCII
 * name quoted as it is, any other also percent-encoded in filename*
 * (RFC 6266).
 */
void	 xferhdr_disposition(struct buf *b, const char *name);
/* t as an HTTP date (as Last-Modified carries it) into buf. */
void	 xferhdr_date(time_t t, char *buf, size_t len);
/*
 * Whether ims, an If-Modified-Since value (NULL: none), says that a copy
 * of a file last modified at mtime is current.
 */
bool	 xferhdr_not_modified(const char *ims, time_t mtime);
/* A line-window parameter (1 or more); 0 when s is NULL, -1 malformed. */
long long xferhdr_window_arg(const char *s);

#endif
