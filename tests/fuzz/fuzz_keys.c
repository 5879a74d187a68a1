/*
 * fuzz_keys.c -- the computer-use API's input parsers (computer.c): the
 * xdotool-style key names of POST /computer/keyboard {"keys"} and the
 * text of {"text"} turned into keysyms.
 *
 * Input: up to the first NUL, a key string; all of it, a text.
 * Invariants, any break aborts:
 * - keys: the result is -EINVAL with a message, or 1 to
 *   COMPUTER_COMBOS_MAX combinations of 1 to COMPUTER_COMBO_MAX keysyms,
 *   none of them 0; the number of combinations is the number of runs of
 *   non-space bytes; a string of spaces only is refused;
 * - text: -EINVAL with a message exactly when the bytes are not UTF-8 or
 *   hold a control character other than tab, newline and carriage return;
 *   else one keysym per character (CRLF counting as one), none 0, and a
 *   capacity one short of that is refused.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../execd/domain/computer.h"
#include "fz.h"

static size_t
runs(const char *s)
{
	size_t n = 0;

	for (size_t i = 0; s[i] != '\0'; i++)
		if (s[i] != ' ' && (i == 0 || s[i - 1] == ' '))
			n++;
	return n;
}

/* Characters, CRLF as one; -1 when not typable text. */
static long
chars(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	long count = 0;
	size_t k;

	if (!fz_utf8(s, n))
		return -1;
	for (size_t i = 0; i < n; i += k) {
		k = utf8_len(p + i, n - i);
		if (k == 1 && (p[i] < 0x20 || p[i] == 0x7f) && p[i] != '\t' &&
		    p[i] != '\n' && p[i] != '\r')
			return -1;
		if (k == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0)
			return -1;	/* C1 controls */
		if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
			continue;
		count++;
	}
	return count;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct computer_combo c[COMPUTER_COMBOS_MAX];
	char err[COMPUTER_ERRLEN], *s;
	uint32_t *syms;
	long want;
	int n;

	if (size > 4096)
		return 0;
	s = malloc(size + 1);
	CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';

	err[0] = '\0';
	n = computer_keys_parse(s, c, COMPUTER_COMBOS_MAX, err, sizeof(err));
	if (n < 0) {
		CHECK(n == -EINVAL && err[0] != '\0');
	} else {
		CHECK(n >= 1 && n <= COMPUTER_COMBOS_MAX);
		CHECK((size_t)n == runs(s));
		for (int i = 0; i < n; i++) {
			CHECK(c[i].n >= 1 && c[i].n <= COMPUTER_COMBO_MAX);
			for (int j = 0; j < c[i].n; j++)
				CHECK(c[i].sym[j] != 0);
		}
	}
	if (runs(s) == 0)
		CHECK(n == -EINVAL);

	syms = malloc(sizeof(*syms) * (size + 1));
	CHECK(syms != NULL);
	want = chars((const char *)data, size);
	err[0] = '\0';
	n = computer_text_keysyms((const char *)data, size, syms, size + 1,
	    err, sizeof(err));
	if (want < 0) {
		CHECK(n == -EINVAL && err[0] != '\0');
	} else {
		CHECK(n == want);
		for (int i = 0; i < n; i++)
			CHECK(syms[i] != 0);
		if (n > 0)
			CHECK(computer_text_keysyms((const char *)data, size,
			    syms, (size_t)n - 1, err, sizeof(err)) ==
			    -EINVAL);
	}
	free(syms);
	free(s);
	return 0;
}
