/*
 * fuzz_useragent.c -- fuzz target for cmdstream_sdk_keeps(), which reads
 * an OpenSandbox SDK's version out of a User-Agent header.
 *
 * The input (up to a NUL) is the header.  Invariants, any break aborts:
 * a header that keeps names "OpenSandbox-...-SDK/" followed by a digit;
 * another product before it, after a blank, changes nothing; text glued
 * to its front (no blank) makes it no longer the SDK's product, unless the
 * header names the SDK again later; and the SDK's own strings of known
 * versions, appended after a blank, decide as their version says.
 */
#include <string.h>

#include "../../execd/api/opensandbox/cmdstream.h"
#include "fz.h"

static bool
keeps(const char *pre, const char *ua, const char *post)
{
	size_t n = strlen(pre) + strlen(ua) + strlen(post) + 1;
	char *s = malloc(n);
	bool r;

	if (s == NULL)
		abort();
	snprintf(s, n, "%s%s%s", pre, ua, post);
	r = cmdstream_sdk_keeps(s);
	free(s);
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *ua;
	const char *at, *sdk;
	bool k;

	if ((ua = strndup((const char *)data, size)) == NULL)
		abort();
	k = cmdstream_sdk_keeps(ua);
	CHECK(k == cmdstream_sdk_keeps(ua));
	if (k) {
		CHECK((at = strstr(ua, "OpenSandbox-")) != NULL);
		CHECK((sdk = strstr(at, "-SDK/")) != NULL);
	}
	CHECK(keeps("python-httpx/0.27 ", ua, "") == k);
	if (strncmp(ua, "OpenSandbox-", 12) == 0 &&
	    strstr(ua + 1, "OpenSandbox-") == NULL)
		CHECK(!keeps("x", ua, ""));
	/* A later SDK string decides when the header had none. */
	if (strstr(ua, "OpenSandbox-") == NULL) {
		CHECK(keeps(ua, " OpenSandbox-Python-SDK/1.1.1", ""));
		CHECK(!keeps(ua, " OpenSandbox-JS-SDK/0.1.11", ""));
		CHECK(!keeps(ua, " OpenSandbox-Go-SDK/1.1.1-rc.1", ""));
	}
	CHECK(!cmdstream_sdk_keeps(NULL));
	free(ua);
	return 0;
}
