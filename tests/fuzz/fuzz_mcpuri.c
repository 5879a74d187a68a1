/*
 * fuzz_mcpuri.c -- what the MCP front end makes of a resource URI and a
 * file's name and bytes (resource.c's static uri_path and guess, taken
 * by including the file).
 *
 * Input: a mode byte, then the bytes.  Mode even: the bytes are a URI.
 * Mode odd: up to the first NUL a file name, the rest its contents.
 * Invariants, any break aborts:
 * - an accepted URI started "file://" and gives an absolute path, no
 *   longer than the URI's own; a URI with a %00, a query or a fragment
 *   is refused;
 * - a guessed type is never empty, and a name without a known extension
 *   is text/plain exactly when the bytes are UTF-8 without a NUL.
 */
#include <string.h>

#include "../../execd/api/mcp/resource.c"
#include "fz.h"

static void
one_uri(const char *p, size_t n)
{
	char *uri = strndup(p, n), out[PATH_MAX];

	if (uri == NULL)
		return;
	if (uri_path(uri, out, sizeof(out)) == 0) {
		CHECK(strncmp(uri, "file://", 7) == 0);
		CHECK(out[0] == '/');
		CHECK(strstr(uri, "%00") == NULL);
		/* only %XX with two hex digits decodes */
		for (const char *q = uri; (q = strchr(q, '%')) != NULL; q++)
			if (!isxdigit((unsigned char)q[1]) ||
			    !isxdigit((unsigned char)q[2]))
				CHECK(strchr(out, '%') != NULL);
		CHECK(strpbrk(uri, "?#") == NULL);
		/* decoding only shrinks: %XX is one byte */
		CHECK(strlen(out) <= strlen(uri) - 7);
	}
	free(uri);
}

static void
one_file(const char *p, size_t n)
{
	const char *nul = memchr(p, '\0', n);
	size_t k = nul != NULL ? (size_t)(nul - p) : n;
	char *name = strndup(p, k);
	const char *data = p + (k < n ? k + 1 : n), *t;
	size_t dn = n - (size_t)(data - p);
	bool plain = memchr(data, '\0', dn) == NULL && fz_utf8(data, dn);

	if (name == NULL)
		return;
	t = guess(name, data, dn);
	CHECK(t != NULL && t[0] != '\0');
	t = guess("noext", data, dn);
	CHECK((strcmp(t, "text/plain") == 0) == plain);
	CHECK(plain || strcmp(t, "application/octet-stream") == 0);
	(void)textual(t);
	free(name);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	if (n == 0)
		return 0;
	if (data[0] % 2 == 0)
		one_uri((const char *)data + 1, n - 1);
	else
		one_file((const char *)data + 1, n - 1);
	return 0;
}
