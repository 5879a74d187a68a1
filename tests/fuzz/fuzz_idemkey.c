/*
 * fuzz_idemkey.c -- an Idempotency-Key header value (idem_key_parse).
 *
 * The input is the value (cut at its first NUL, as a header is).
 * Invariants: an accepted key is 1 to IDEM_KEY_MAX visible ASCII
 * characters; a bare value is accepted as itself; a value in quotes
 * gives a key no longer than what is between them; a refused value
 * leaves out alone.
 */
#include <string.h>

#include "../../execd/api/idem.h"
#include "fz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[1024], out[IDEM_KEY_MAX + 1], before[sizeof(out)];
	size_t n = size < sizeof(in) - 1 ? size : sizeof(in) - 1, k, i;

	memcpy(in, data, n);
	in[n] = '\0';
	memset(out, 'X', sizeof(out));
	memcpy(before, out, sizeof(out));
	if (idem_key_parse(in, out) < 0) {
		CHECK(memcmp(before, out, sizeof(out)) == 0);
		return 0;
	}
	k = strlen(out);
	CHECK(k >= 1 && k <= IDEM_KEY_MAX);
	for (i = 0; i < k; i++)
		CHECK(out[i] >= 0x21 && out[i] <= 0x7e);
	if (in[0] != '"')
		CHECK(strcmp(in, out) == 0);
	else
		CHECK(k <= strlen(in) - 2);
	return 0;
}
