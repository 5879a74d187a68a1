/*
 * t_ring.c -- the replay ring: offsets, wraparound, clamping of reads
 * before the oldest byte kept and past the newest.
 */
#include <stdint.h>
#include <string.h>

#include "../../execd/domain/ring.h"
#include "../t.h"

/* A read of the whole window as a string (up to 63 bytes). */
static const char *
all(const struct ring *r, uint64_t from, uint64_t *at)
{
	static char buf[64];
	size_t n = ring_read(r, from, buf, sizeof(buf) - 1, at);

	buf[n] = '\0';
	return buf;
}

static void
t_empty(void)
{
	struct ring r;
	uint64_t at = 99;
	char b[4];

	ring_init(&r, 8);
	T_EQ_INT(ring_start(&r), 0);
	T_EQ_INT(ring_end(&r), 0);
	T_EQ_INT(ring_read(&r, 0, b, sizeof(b), &at), 0);
	T_EQ_INT(at, 0);
	T_EQ_INT(ring_read(&r, 5, b, sizeof(b), &at), 0);
	T_EQ_INT(at, 0);
	T_EQ_INT(ring_avail(&r, 0), 0);
	ring_write(&r, "", 0);
	T_OK(r.buf == NULL);	/* no memory before the first byte */
	ring_reset(&r);
}

static void
t_offsets(void)
{
	struct ring r;
	uint64_t at;

	ring_init(&r, 8);
	ring_write(&r, "abc", 3);
	ring_write(&r, "de", 2);
	T_EQ_INT(ring_start(&r), 0);
	T_EQ_INT(ring_end(&r), 5);
	T_EQ_STR(all(&r, 0, &at), "abcde");
	T_EQ_INT(at, 0);
	T_EQ_STR(all(&r, 3, &at), "de");
	T_EQ_INT(at, 3);
	T_EQ_INT(ring_avail(&r, 3), 2);
	T_EQ_STR(all(&r, 5, &at), "");
	T_EQ_INT(at, 5);
	ring_reset(&r);
	T_EQ_INT(ring_end(&r), 0);
}

static void
t_wrap(void)
{
	struct ring r;
	uint64_t at;

	ring_init(&r, 8);
	ring_write(&r, "abcdef", 6);
	ring_write(&r, "ghij", 4);	/* wraps: keeps cdefghij */
	T_EQ_INT(ring_start(&r), 2);
	T_EQ_INT(ring_end(&r), 10);
	T_EQ_STR(all(&r, 2, &at), "cdefghij");
	T_EQ_INT(at, 2);
	T_EQ_STR(all(&r, 7, &at), "hij");	/* across the seam */
	T_EQ_INT(at, 7);
	ring_write(&r, "klmnopqrstu", 11);	/* more than the cap at once */
	T_EQ_INT(ring_end(&r), 21);
	T_EQ_INT(ring_start(&r), 13);
	T_EQ_STR(all(&r, 0, &at), "nopqrstu");
	T_EQ_INT(at, 13);
	for (int i = 0; i < 100; i++)
		ring_write(&r, "xyz", 3);
	T_EQ_INT(ring_end(&r), 321);
	T_EQ_STR(all(&r, 0, &at), "yzxyzxyz");
	T_EQ_INT(at, 313);
	T_EQ_STR(all(&r, 318, &at), "xyz");
	T_EQ_INT(at, 318);
	ring_reset(&r);
}

static void
t_clamp(void)
{
	struct ring r;
	uint64_t at;
	char b[3];

	ring_init(&r, 4);
	ring_write(&r, "0123456789", 10);	/* keeps 6789 */
	T_EQ_STR(all(&r, 1, &at), "6789");	/* before the window */
	T_EQ_INT(at, 6);
	T_EQ_STR(all(&r, 1000, &at), "");	/* past the end */
	T_EQ_INT(at, 10);
	T_EQ_INT(ring_avail(&r, 1000), 0);
	T_EQ_INT(ring_avail(&r, 0), 4);
	T_EQ_INT(ring_avail(&r, 8), 2);
	/* max bounds the copy; the offset still names its first byte. */
	T_EQ_INT(ring_read(&r, 7, b, sizeof(b), &at), 3);
	T_EQ_INT(at, 7);
	T_OK(memcmp(b, "789", 3) == 0);
	T_EQ_INT(ring_read(&r, 0, b, 2, &at), 2);
	T_EQ_INT(at, 6);
	T_OK(memcmp(b, "67", 2) == 0);
	ring_reset(&r);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "empty ring", t_empty },
		{ "offsets before the ring fills", t_offsets },
		{ "wraparound, and writes larger than the cap", t_wrap },
		{ "reads clamped to the retained window", t_clamp },
	};

	return T_RUN(cases);
}
