/*
 * t_buf.c -- unit tests for util/buf.h.
 *
 * Appends of every kind keep the bytes NUL-terminated and in order;
 * draining moves the front without moving bytes, and a buffer used as a
 * queue keeps its allocation near what it holds; the cap refuses what
 * would pass it, whole, and says so.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/buf.h"
#include "../../util/rfc3339.h"
#include "../t.h"

/* init, add, adds, addf, drain and reset keep p NUL-terminated. */
static void
test_buf_basics(void)
{
	struct buf b;

	buf_init(&b);
	T_OK(b.p == NULL);
	T_EQ_INT(b.len, 0);
	buf_add(&b, "", 0);
	T_OK(b.p != NULL);
	T_EQ_STR(b.p, "");
	buf_add(&b, "ab\0cd", 5);
	T_EQ_INT(b.len, 5);
	T_OK(memcmp(b.p, "ab\0cd", 6) == 0);
	buf_adds(&b, "ef");
	buf_addf(&b, "-%d-%s-", 42, "x");
	T_EQ_INT(b.len, 13);
	T_OK(memcmp(b.p, "ab\0cdef-42-x-", 14) == 0);
	buf_drain(&b, 3);
	T_EQ_STR(b.p, "cdef-42-x-");
	T_EQ_INT(b.len, 10);
	buf_drain(&b, 0);
	T_EQ_INT(b.len, 10);
	buf_drain(&b, 100);
	T_EQ_INT(b.len, 0);
	T_EQ_STR(b.p, "");
	buf_adds(&b, "again");
	T_EQ_STR(b.p, "again");
	buf_reset(&b);
	T_OK(b.p == NULL);
	T_EQ_INT(b.len, 0);
	T_EQ_INT(buf_cost(&b), 0);
	buf_drain(&b, 1);		/* on an empty buffer: no effect */
	T_EQ_INT(b.len, 0);
	buf_adds(&b, "reused");
	T_EQ_STR(b.p, "reused");
	buf_reset(&b);
}

/* Integers in decimal, as printf's %lld and %llu write them. */
static void
test_buf_integers(void)
{
	static const long long iv[] = { 0, 1, -1, 9, 10, -10, 99, 100,
	    1796049233898LL, -1796049233898LL, LLONG_MAX, LLONG_MIN,
	    LLONG_MIN + 1 };
	static const unsigned long long uv[] = { 0, 1, 10, 18446744073709ULL,
	    ULLONG_MAX, ULLONG_MAX - 1 };
	char want[32];
	struct buf b;

	buf_init(&b);
	for (size_t i = 0; i < sizeof(iv) / sizeof(iv[0]); i++) {
		buf_drain(&b, b.len);
		buf_addi(&b, iv[i]);
		snprintf(want, sizeof(want), "%lld", iv[i]);
		T_EQ_STR(b.p, want);
		T_EQ_INT(b.len, strlen(want));
	}
	for (size_t i = 0; i < sizeof(uv) / sizeof(uv[0]); i++) {
		buf_drain(&b, b.len);
		buf_addu(&b, uv[i]);
		snprintf(want, sizeof(want), "%llu", uv[i]);
		T_EQ_STR(b.p, want);
	}
	buf_drain(&b, b.len);
	buf_adds(&b, "a");
	buf_addi(&b, -5);
	buf_adds(&b, "b");
	T_EQ_STR(b.p, "a-5b");
	buf_reset(&b);
}

/* Growth across many reallocations keeps every byte in order. */
static void
test_buf_growth(void)
{
	struct buf b;
	char chunk[97];
	size_t total = 0, bad = 0;

	buf_init(&b);
	for (int i = 0; i < 20000; i++) {
		memset(chunk, 'a' + i % 26, sizeof(chunk));
		buf_add(&b, chunk, (size_t)i % sizeof(chunk));
		total += (size_t)i % sizeof(chunk);
	}
	T_EQ_INT(b.len, total);
	T_OK(buf_cost(&b) > b.len);
	T_EQ_INT(b.p[b.len], '\0');
	total = 0;
	for (int i = 0; i < 20000; i++) {
		for (size_t j = 0; j < (size_t)i % sizeof(chunk); j++)
			bad += b.p[total + j] != 'a' + i % 26;
		total += (size_t)i % sizeof(chunk);
	}
	T_EQ_INT(bad, 0);
	buf_addf(&b, "%s", "");
	T_EQ_INT(b.len, total);
	buf_reset(&b);
}

/* Draining moves p, not the bytes: the front is where the drain left it. */
static void
test_buf_drain_by_offset(void)
{
	struct buf b;
	const char *before;

	buf_init(&b);
	buf_adds(&b, "0123456789");
	before = b.p;
	buf_drain(&b, 4);
	T_OK(b.p == before + 4);
	T_EQ_STR(b.p, "456789");
	buf_adds(&b, "ab");	/* room at the back: no move */
	T_OK(b.p == before + 4);
	T_EQ_STR(b.p, "456789ab");
	buf_drain(&b, b.len);	/* empty: back to the start */
	T_OK(b.p == b.base);
	T_EQ_STR(b.p, "");
	buf_reset(&b);
}

/*
 * As a queue (append at the back, drain at the front, pieces of every
 * size, some bytes always held), every byte comes out in order and the
 * allocation stays a small multiple of the most ever held.
 */
static void
test_buf_queue(void)
{
	struct buf b;
	uint32_t in = 0, out = 0, seed = 12345;
	size_t most = 0, bad = 0;
	char piece[300];

	buf_init(&b);
	for (int i = 0; i < 200000; i++) {
		size_t n, k;

		seed = seed * 1103515245u + 12345u;
		n = (seed >> 8) % sizeof(piece);
		for (k = 0; k < n; k++)
			piece[k] = (char)(in++ % 251);
		T_EQ_INT(buf_add(&b, piece, n), 0);
		if (b.len > most)
			most = b.len;
		seed = seed * 1103515245u + 12345u;
		n = (seed >> 8) % sizeof(piece);
		if (n > b.len)
			n = b.len;
		if (b.len - n < 100)	/* keep some bytes held */
			n = b.len > 100 ? b.len - 100 : 0;
		for (k = 0; k < n; k++)
			bad += (unsigned char)b.p[k] != out++ % 251;
		buf_drain(&b, n);
		T_EQ_INT(b.p[b.len], '\0');
	}
	T_EQ_INT(bad, 0);
	T_OK(b.p >= b.base && b.p + b.len < b.base + buf_cost(&b));
	T_OK(buf_cost(&b) <= 4 * (most + 1) + 256);
	buf_reset(&b);
}

/* An append past the cap adds nothing, returns -ENOBUFS, sets full. */
static void
test_buf_cap(void)
{
	struct buf b;

	buf_init_max(&b, 8);
	T_EQ_INT(buf_adds(&b, "12345"), 0);
	T_EQ_INT(buf_adds(&b, "6789"), -ENOBUFS);
	T_OK(b.full);
	T_EQ_STR(b.p, "12345");
	T_EQ_INT(buf_addf(&b, "%d", 1234), -ENOBUFS);
	T_EQ_INT(buf_addu(&b, 1234), -ENOBUFS);
	T_EQ_INT(buf_addi(&b, -123), -ENOBUFS);
	T_EQ_STR(b.p, "12345");
	T_EQ_INT(buf_adds(&b, "678"), 0);	/* exactly the cap */
	T_EQ_INT(b.len, 8);
	T_OK(b.full);				/* stays set */
	buf_drain(&b, 4);
	T_EQ_INT(buf_adds(&b, "abcd"), 0);	/* drained room counts */
	T_EQ_STR(b.p, "5678abcd");
	T_EQ_INT(buf_add(&b, "x", 1), -ENOBUFS);
	buf_reset(&b);
	T_OK(!b.full);
	T_EQ_INT(b.max, 8);			/* reset keeps the cap */
	T_EQ_INT(buf_add(&b, "123456789", 9), -ENOBUFS);
	T_EQ_INT(b.len, 0);
	buf_reset(&b);

	buf_init(&b);
	T_EQ_INT(b.max, BUF_MAX);
	T_EQ_INT(buf_reserve(&b, BUF_MAX + 1), -ENOBUFS);
	T_EQ_INT(buf_reserve(&b, SIZE_MAX), -ENOBUFS);
	T_EQ_INT(b.len, 0);
	buf_reset(&b);
}

/* Shell quoting and RFC 3339 times, the text helpers of util/. */
static void
test_buf_shquoted_and_rfc3339(void)
{
	struct buf b;
	char t[RFC3339_LEN];
	struct timespec ts = { 1764774245, 120000000 };

	buf_init(&b);
	T_EQ_INT(buf_add_shquoted(&b, "it's $HOME"), 0);
	T_EQ_STR(b.p, "'it'\\''s $HOME'");
	buf_reset(&b);
	T_EQ_INT(buf_add_shquoted(&b, ""), 0);
	T_EQ_STR(b.p, "''");
	buf_reset(&b);
	rfc3339_ns(&ts, t);
	T_EQ_STR(t, "2025-12-03T15:04:05.12Z");
	ts.tv_nsec = 0;
	rfc3339_ns(&ts, t);
	T_EQ_STR(t, "2025-12-03T15:04:05Z");
	ts.tv_nsec = 1;
	rfc3339_ns(&ts, t);
	T_EQ_STR(t, "2025-12-03T15:04:05.000000001Z");
}

static const struct t_case cases[] = {
	{ "basics", test_buf_basics },
	{ "growth", test_buf_growth },
	{ "integers", test_buf_integers },
	{ "drain by offset", test_buf_drain_by_offset },
	{ "queue", test_buf_queue },
	{ "cap", test_buf_cap },
	{ "shquoted and rfc3339", test_buf_shquoted_and_rfc3339 },
};

int
main(void)
{
	return T_RUN(cases);
}
