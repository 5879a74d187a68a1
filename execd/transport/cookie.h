/*
 * cookie.h -- the Cookie request header (RFC 6265 section 4.2): its
 * name=value pairs, walked one at a time, and the header rewritten
 * without the pairs of one name.  Pure: any thread.
 *
 * Browsers send "a=1; b=2"; this reads more loosely, as servers do: pairs
 * end at ';', blanks around names and values are dropped, a value in
 * double quotes loses them, a pair without '=' or with an empty name is
 * skipped (and kept, as it was, by cookie_strip).
 */
#ifndef EXECD_COOKIE_H
#define EXECD_COOKIE_H

#include <stdbool.h>
#include <stddef.h>

#include "../../util/buf.h"

/* One pair: name and value point into the header. */
struct cookie_pair {
	const char	*name, *value;
	size_t		 nlen, vlen;
	const char	*start;		/* the pair's raw text ... */
	size_t		 len;		/* ... without the ';' after it */
};

/*
 * The next well-formed pair of the header from *at on, *at moved past
 * it: true, or false at the end.  Start with *at at the header.
 */
bool	cookie_next(const char **at, struct cookie_pair *);
/*
 * Append the header to out without the pairs called name (compared
 * exactly: cookie names are case-sensitive), the others as they were,
 * joined by "; ".  The number of pairs left out.
 */
size_t	cookie_strip(const char *hdr, const char *name, struct buf *out);

#endif
