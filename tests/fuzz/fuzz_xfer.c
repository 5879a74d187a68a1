/*
 * fuzz_xfer.c -- fuzz target for the HTTP fields of a file transfer
 * (xferhdr.h): the Content-Disposition builder, the If-Modified-Since
 * test and the offset/limit line-window numbers.
 *
 * Input: 8 bytes of mtime (little-endian, signed), then text cut at the
 * first NUL into a file name and a header value (also tried as a window
 * number).  Invariants, any break aborts: the disposition is one header
 * value -- printable ASCII, no CR, LF or NUL -- that starts with
 * `attachment; filename="`, and both of its forms decode back to the name
 * (the quoted one for an ASCII name, the percent-encoded filename* for any
 * other); If-Modified-Since is honoured only for an exact HTTP date at or
 * after mtime, so the date written for mtime is always honoured and one a
 * second earlier never; a window number is -1, 0 (absent) or the decimal
 * value, 1 or more, and parses iff it is all digits without overflow.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <time.h>

#include "../../execd/transport/xferhdr.h"
#include "../../util/buf.h"
#include "fz.h"

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode and compare both forms of the disposition of name. */
static void
check_disposition(const char *name)
{
	static const char pre[] = "attachment; filename=\"";
	static const char star[] = "\"; filename*=UTF-8''";
	struct buf b, d;
	const char *p, *q;
	bool plain = true;

	for (p = name; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			plain = false;
	buf_init(&b);
	buf_init(&d);
	xferhdr_disposition(&b, name);
	CHECK(b.len >= sizeof(pre) - 1 && memcmp(b.p, pre, sizeof(pre) - 1)
	    == 0);
	for (size_t i = 0; i < b.len; i++)
		CHECK(b.p[i] >= 0x20 && b.p[i] < 0x7f);
	p = b.p + sizeof(pre) - 1;
	if (plain) {
		/* A quoted-string: \" and \\ are the only escapes. */
		for (; *p != '"'; p++) {
			CHECK(*p != '\0');
			if (*p == '\\') {
				p++;
				CHECK(*p == '"' || *p == '\\');
			}
			buf_add(&d, p, 1);
		}
		CHECK(strcmp(p, "\"") == 0);
	} else {
		CHECK((q = strstr(p, star)) != NULL);
		CHECK(memchr(p, '"', (size_t)(q - p)) == NULL);
		for (p = q + sizeof(star) - 1; *p != '\0'; p++) {
			if (*p == '%') {
				CHECK(hexval(p[1]) >= 0 && hexval(p[2]) >= 0);
				buf_addf(&d, "%c", hexval(p[1]) << 4 |
				    hexval(p[2]));
				p += 2;
				continue;
			}
			CHECK(strchr("\"'\\;, ", *p) == NULL);
			buf_add(&d, p, 1);
		}
	}
	CHECK(d.len == strlen(name) && (d.len == 0 ||
	    memcmp(d.p, name, d.len) == 0));
	buf_reset(&b);
	buf_reset(&d);
}

static void
check_window(const char *s)
{
	long long v = xferhdr_window_arg(s), want = 0;
	bool digits = s[0] != '\0', over = false;

	for (const char *p = s; *p != '\0'; p++) {
		if (*p < '0' || *p > '9') {
			digits = false;
			break;
		}
		if (want > (LLONG_MAX - (*p - '0')) / 10)
			over = true;
		else
			want = want * 10 + (*p - '0');
	}
	if (!digits || over || want < 1)
		CHECK(v == -1);
	else
		CHECK(v == want);
	CHECK(xferhdr_window_arg(NULL) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text, *val, date[64];
	uint64_t u = 0;
	time_t mtime;
	struct tm tm;

	if (size < 8)
		return 0;
	for (int i = 7; i >= 0; i--)
		u = u << 8 | data[i];
	/* Years gmtime_r and timegm can both represent. */
	mtime = (time_t)(u % (253402300800ull));
	if ((text = strndup((const char *)data + 8, size - 8)) == NULL)
		abort();
	val = text + strlen(text);
	if ((size_t)(val - text) < size - 8)	/* a NUL: the header follows */
		val = strndup((const char *)data + 8 + (val - text) + 1,
		    size - 8 - (size_t)(val - text) - 1);
	else
		val = strdup(text);
	if (val == NULL)
		abort();
	check_disposition(text);
	check_window(val);

	CHECK(!xferhdr_not_modified(NULL, mtime));
	if (xferhdr_not_modified(val, mtime)) {
		memset(&tm, 0, sizeof(tm));
		CHECK(strptime(val, "%a, %d %b %Y %H:%M:%S GMT", &tm) != NULL);
		CHECK(timegm(&tm) >= mtime);
	}
	xferhdr_date(mtime, date, sizeof(date));
	CHECK(xferhdr_not_modified(date, mtime));
	CHECK(!xferhdr_not_modified(date, mtime + 1));
	free(text);
	free(val);
	return 0;
}
