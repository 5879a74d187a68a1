/*
 * tape.h -- a recorded stream: the bytes of whole events as a stream
 * first sent them, kept so that other clients can be played them from
 * the start and then follow live until the recording ends.
 *
 * What one tape keeps is capped (cap bytes), and so is what all tapes
 * keep at once (TAPE_TOTAL): past either the recording stops, and a
 * player, once it has given all that was kept, ends its stream with the
 * overflow event (evstream.h).  A tape lives as long as its recorder,
 * its players and whoever else holds a reference.  Loop thread only.
 */
#ifndef EXECD_TAPE_H
#define EXECD_TAPE_H

#include <stdbool.h>
#include <stddef.h>

struct http_req;
struct tape;

#define TAPE_TOTAL	(64u << 20)	/* bytes kept by all tapes */

/* A new tape, with one reference: the recorder's. */
struct tape	*tape_new(size_t cap);
struct tape	*tape_ref(struct tape *);
void		 tape_unref(struct tape *);		/* NULL ok */
/* Record bytes of whole events (NULL ok). */
void		 tape_add(struct tape *, const void *p, size_t n);
/*
 * The recorded stream has ended (whole: all of it was added; else its
 * end is missing); gives up the recorder's reference.  NULL ok.
 */
void		 tape_end(struct tape *, bool whole);
/* Answer req with a stream: what was recorded, then what comes. */
void		 tape_play(struct tape *, struct http_req *req);

#endif
