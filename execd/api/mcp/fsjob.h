/*
 * fsjob.h -- a file tool's job (tool_fs.c, tool_file.c): its arguments
 * resolved on the loop, its work on a worker, its answer made back on
 * the loop, text and a structured result, or a message.  Private to
 * this front end.
 */
#ifndef EXECD_MCP_FSJOB_H
#define EXECD_MCP_FSJOB_H

#include <limits.h>
#include <stdatomic.h>

#include "../../domain/fileops.h"
#include "mcp.h"

struct fsjob {
	void		(*fn)(struct fsjob *);
	const atomic_int *cancel;
	char		 path[PATH_MAX], path2[PATH_MAX];
	char		*key, *key2;	/* as the client wrote them */
	char		*s1, *s2;	/* content, pattern, old, new */
	size_t		 n1, n2;
	long long	 a, b;
	bool		 flag;
	/* the answer */
	int		 rc;
	char		 err[FILEOPS_ERRLEN];
	json_t		*out;		/* structuredContent */
	struct buf	 text;
};

/*
 * A job for the path arguments k1 (and k2 unless NULL), resolved; NULL
 * with the call answered when one is refused.
 */
struct fsjob	*fsjob_new(struct mcp_call *, const json_t *args,
		    const char *k1, const char *k2);
/* Run fn(j) on a worker, then answer the call from j and free j. */
void		 fsjob_start(struct mcp_call *, struct fsjob *,
		    void (*fn)(struct fsjob *));
/* Fail j with rc and a message; returns rc. */
int		 fsjob_fail(struct fsjob *, int rc, const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));

#endif
