/*
 * xferhdr.c -- the HTTP fields of a file transfer (see xferhdr.h):
 * Content-Disposition, HTTP dates, the If-Modified-Since test and the
 * line-window numbers.  It only formats and parses text; which header
 * carries what, and when, is the routes' business.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "../../util/buf.h"
#include "http.h"
#include "xferhdr.h"

/*
 * Content-Disposition for a download.  An ASCII name goes quoted as it
 * is (quotes and backslashes escaped); any other name, or one with
 * control characters, also goes percent-encoded in filename* (RFC 6266).
 */
void
xferhdr_disposition(struct buf *b, const char *name)
{
	static const char keep[] = "!#$&+-.^_`|~";
	const unsigned char *p;
	bool plain = true;

	for (p = (const unsigned char *)name; *p != '\0'; p++)
		if (*p < 0x20 || *p >= 0x7f)
			plain = false;
	if (plain) {
		buf_adds(b, "attachment; filename=\"");
		for (p = (const unsigned char *)name; *p != '\0'; p++) {
			if (*p == '"' || *p == '\\')
				buf_add(b, "\\", 1);
			buf_add(b, p, 1);
		}
		buf_adds(b, "\"");
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		buf_adds(b, pass == 0 ? "attachment; filename=\"" :
		    "\"; filename*=UTF-8''");
		for (p = (const unsigned char *)name; *p != '\0'; p++) {
			if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' &&
			    *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			    (*p != 0 && strchr(keep, *p) != NULL))
				buf_add(b, p, 1);
			else
				buf_addf(b, "%%%02X", *p);
		}
	}
}

/* An HTTP date, as Last-Modified carries it. */
void
xferhdr_date(time_t t, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* Whether If-Modified-Since (ims) says the client's copy is current. */
bool
xferhdr_not_modified(const char *ims, time_t mtime)
{
	struct tm tm;
	const char *end;

	if (ims == NULL)
		return false;
	memset(&tm, 0, sizeof(tm));
	end = strptime(ims, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	return end != NULL && *end == '\0' && mtime <= timegm(&tm);
}

/* Parse a line-window parameter (1 or more); 0 absent, -1 malformed. */
long long
xferhdr_window_arg(const char *s)
{
	uint64_t v;

	if (s == NULL)
		return 0;
	if (http_parse_uint(s, INT64_MAX, &v) < 0 || v < 1)
		return -1;
	return (long long)v;
}
