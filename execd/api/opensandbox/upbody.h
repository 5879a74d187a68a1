/*
 * upbody.h -- the body of POST /files/upload made into files, with no
 * HTTP: multipart pairs of a "metadata" part (JSON: path, mode, owner,
 * group) and a "file" part, paired by order, each file written to a
 * temporary beside its target (fs_atomic) as its bytes come, and every
 * target put in place only once the whole body has checked out, so an
 * upload cut off midway leaves the old files as they were and no debris.
 *
 * The calls touch the file system (a hung mount waits for ever): a route
 * makes them on a worker, one thread at a time per body.  A failure is
 * recorded (the first one) in upstream's words, with the HTTP status and
 * code to answer it with, and the temporaries are removed at once.
 * Paths starting with ~ are the calling thread's user's (cred.h).
 */
#ifndef EXECD_UPBODY_H
#define EXECD_UPBODY_H

#include <stddef.h>
#include <sys/types.h>

struct upbody;

/* A body with this multipart boundary; files created with newmode. */
struct upbody	*upbody_new(const char *boundary, mode_t newmode);
/* The next n bytes of the body.  0, or -1 with the failure recorded. */
int		 upbody_feed(struct upbody *, const char *p, size_t n);
/*
 * The body is over: the parser's last word and the pairs checked, then
 * every file synced, owned and renamed into place, in order.  0, or -1
 * with the failure recorded (nothing more is put in place).
 */
int		 upbody_commit(struct upbody *);
/* Remove the temporaries not committed yet (a client gone, a timeout). */
void		 upbody_drop(struct upbody *);
/*
 * The failure recorded: its -errno (0: none) and, to answer it, the
 * status (0: from the -errno), the error code and the message.
 */
int		 upbody_error(const struct upbody *, unsigned *status,
		    const char **code, const char **msg);
/* Free it; temporaries not committed are removed.  NULL is fine. */
void		 upbody_free(struct upbody *);

#endif
