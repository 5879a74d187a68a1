/*
 * idem.h -- the Idempotency-Key store: requests a client may retry
 * without the work being done twice.
 *
 * A request that names a key (the Idempotency-Key header, or
 * X-EXECD-OPERATION-ID, its synonym) is remembered with a fingerprint of
 * its method, target and body, and its outcome.  A repeat with the same
 * key within the window gets that outcome and starts nothing: a whole
 * answer (JSON, an error, an empty 200) again byte for byte; a stream
 * replayed from its start and then followed live, either by the route
 * (idem_stream_replay: a command's history) or from the bytes the route
 * recorded (idem_stream_record: a tape, capped; past the cap a replay
 * ends with the overflow event).  A repeat that comes while the first has no
 * outcome yet waits for it.  The same key with another fingerprint is
 * 422.  A first request that ends with no outcome (its client left
 * before any answer, or its stream was not one the store can replay)
 * leaves the key free: a repeat does the work.
 *
 * Memory is bounded: at most max_keys keys (the oldest is forgotten
 * first), each for window seconds after its first request, and recorded
 * stream bytes within a cap per stream and one for all.  The store is
 * any front end's (routes call idem_front first).  Loop thread only.
 */
#ifndef EXECD_IDEM_H
#define EXECD_IDEM_H

#include <stdbool.h>
#include <stddef.h>

struct http_req;
struct tape;

#define IDEM_KEY_MAX		255		/* bytes of a key */

/*
 * Start the store: keys kept window_s seconds, max_keys at most; each
 * recorded stream keeps max_record bytes at most.
 */
void	idem_init(unsigned window_s, unsigned max_keys, size_t max_record);
/* Forget every key (shutdown); waiting repeats must be gone already. */
void	idem_shutdown(void);

/*
 * A key's header value into out (IDEM_KEY_MAX + 1 bytes): 1 to
 * IDEM_KEY_MAX visible ASCII characters, or the same in double quotes
 * (the draft's sf-string, whose \" and \\ are taken as the characters
 * they escape).  0, or -EINVAL with out untouched.
 */
int	idem_key_parse(const char *value, char *out);

/*
 * Before a route's work: false when req names no key or a new one (the
 * route goes on; its outcome is remembered), true when req has been
 * answered or will be (a bad key 400, another body 422, a repeat).
 */
bool	idem_front(struct http_req *req);

/*
 * The route answered req with a stream that fn can give again from its
 * start, given id (copied): a repeat is answered fn(req, id), which must
 * answer req.  No-op for a request without a new key.
 */
typedef void	idem_replay_fn(struct http_req *req, const char *id);
void	idem_stream_replay(struct http_req *req, idem_replay_fn *fn,
	    const char *id);
/*
 * The route answers req with a stream whose bytes it records on the
 * tape given (tape.h: add the bytes as they go out, end it once the
 * stream has ended or gone): a repeat is played it.  NULL for a request
 * without a new key.
 */
struct tape	*idem_stream_record(struct http_req *req);

#endif
