/*
 * rfc3339.h -- a time as RFC 3339 text in UTC with its nanoseconds,
 * trailing zeros trimmed ("2026-12-03T15:04:05.12Z"), header-only, for
 * every module (util/'s rules: see utf8.h).
 */
#ifndef RFC3339_H
#define RFC3339_H

#include <stdio.h>
#include <string.h>
#include <time.h>

#define RFC3339_LEN	64	/* room for any year a time_t holds */

/* ts as RFC 3339 into out. */
static inline void
rfc3339_ns(const struct timespec *ts, char out[RFC3339_LEN])
{
	char frac[16];
	struct tm tm;
	size_t n;

	gmtime_r(&ts->tv_sec, &tm);
	n = strftime(out, RFC3339_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(frac, sizeof(frac), ".%09ld", ts->tv_nsec);
	for (size_t k = strlen(frac); k > 1 && frac[k - 1] == '0'; k--)
		frac[k - 1] = '\0';
	snprintf(out + n, RFC3339_LEN - n, "%sZ", frac[1] != '\0' ? frac :
	    "");
}

#endif
