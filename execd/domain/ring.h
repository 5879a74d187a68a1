/*
 * ring.h -- a bounded byte ring with absolute offsets: the replay buffer
 * of a terminal.
 *
 * Every byte ever written has an offset (0 for the first); the ring keeps
 * the last cap bytes, so a reader names where it wants to start and gets
 * what is still retained from there, clamped up to the oldest byte kept.
 * Memory is taken on the first write.  Pure; any one thread at a time.
 */
#ifndef EXECD_RING_H
#define EXECD_RING_H

#include <stddef.h>
#include <stdint.h>

struct ring {			/* fields private to ring.c */
	char		*buf;
	size_t		 cap;
	size_t		 len;	/* bytes retained, <= cap */
	uint64_t	 end;	/* offset one past the newest byte */
};

/* An empty ring keeping at most cap (> 0) bytes. */
void		 ring_init(struct ring *, size_t cap);
/* Free the memory; the ring is empty again (its offsets restart). */
void		 ring_reset(struct ring *);
/* Append n bytes, dropping the oldest beyond the cap. */
void		 ring_write(struct ring *, const void *p, size_t n);
/* Offset of the oldest byte retained (== ring_end() when empty). */
uint64_t	 ring_start(const struct ring *);
/* Offset one past the newest byte: how many bytes were ever written. */
uint64_t	 ring_end(const struct ring *);
/*
 * Copy up to max bytes starting at offset from, clamped into
 * [ring_start(), ring_end()], to out.  Returns how many were copied and
 * sets *at to the offset of the first of them (the clamped from).
 */
size_t		 ring_read(const struct ring *, uint64_t from, void *out,
		    size_t max, uint64_t *at);
/* How many bytes ring_read() would give from offset from, unbounded. */
size_t		 ring_avail(const struct ring *, uint64_t from);

#endif
