/*
 * must.h -- allocations that do not return failure, for the libraries.
 *
 * Out of memory is fatal in execd: a daemon that cannot allocate cannot
 * keep its promises, and unwinding every caller for it would hide the
 * real error paths.  execd's own xmalloc.h logs before it exits; the
 * libraries (kernelproto/, sse/, fs/) never log, so they abort.  Sizes a
 * client controls are capped before they get here.
 */
#ifndef MUST_H
#define MUST_H

#include <stdlib.h>
#include <string.h>

/* p, or abort() if the allocation that made it failed. */
static inline void *
must(void *p)
{
	if (p == NULL)
		abort();
	return p;
}

/* strdup(s) that cannot fail. */
static inline char *
must_strdup(const char *s)
{
	return must(strdup(s));
}

#endif
