/*
 * gwhttp.h -- one POST of a JSON-RPC message to an MCP server over
 * loopback HTTP (the Streamable HTTP transport, client side), for the
 * gateway.  Private to this front end.  Loop thread.
 */
#ifndef EXECD_MCP_GWHTTP_H
#define EXECD_MCP_GWHTTP_H

#include <stddef.h>

#define GWHTTP_MSG_MAX	(8 << 20)	/* one message of an answer */

struct loop;
struct gwhttp;

/*
 * Each message the answer carries (a JSON body, or an event's data),
 * with the answer's Mcp-Session-Id or NULL.  It may gwhttp_abort().
 */
typedef void	gwhttp_msg_fn(void *arg, const char *session, const char *p,
		    size_t n);
/*
 * The exchange is over, once: the HTTP status (0: no answer) and why it
 * failed (NULL: the answer ended as it should).  h is freed after.
 */
typedef void	gwhttp_end_fn(void *arg, int status, const char *why);

/*
 * POST the n bytes at body to url (http://127.0.0.1|localhost|[::1]:PORT
 * /path) with session (NULL: none) and protocol version proto.  Never
 * NULL; a failure to start is reported through end, from the loop.
 */
struct gwhttp	*gwhttp_post(struct loop *, const char *url,
		    const char *session, const char *proto, const char *body,
		    size_t n, gwhttp_msg_fn *msg, gwhttp_end_fn *end,
		    void *arg);
/*
 * One line of an event stream in the n bytes at p (pure, for the
 * fuzzer too): its bytes, newline included, in *used; a data line's
 * value appended to data (after a newline when data holds some).  1 at
 * the blank line that ends an event with data (data holds it; the
 * caller empties it), 0 for another line (comments, id, event, retry
 * are skipped), -1 with *used 0 when no newline has come yet.
 */
struct buf;
int		 gwhttp_sse_line(const char *p, size_t n, struct buf *data,
		    size_t *used);
/* Abandon an exchange: no callback of it runs again.  NULL ok. */
void		 gwhttp_abort(struct gwhttp *);

#endif
