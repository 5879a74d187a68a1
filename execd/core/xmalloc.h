/*
 * xmalloc.h -- allocation that cannot fail: out of memory aborts (tmux).
 *
 * Sizes a client controls are capped before they reach these functions.
 * Any thread may call them.
 */
#ifndef EXECD_XMALLOC_H
#define EXECD_XMALLOC_H

#include <stddef.h>

void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xrealloc(void *, size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
char	*xstrndup(const char *, size_t);
char	*xasprintf(const char *, ...) __attribute__((format(printf, 1, 2)));

#endif
