/*
 * utf8.h -- UTF-8 validation, header-only, for every module.
 *
 * util/ holds small pure helpers that more than one library needs and
 * that belong to none of them: static inline functions over libc only,
 * with no state and no .c file, so that kernelproto/, sse/ and fs/ may
 * include them and still never include each other.
 */
#ifndef UTF8_H
#define UTF8_H

#include <stddef.h>

/*
 * Length (1 to 4) of the valid UTF-8 sequence at s, n > 0 bytes left, or
 * 0 if the bytes there are not one: a stray continuation byte, a cut-off
 * sequence, an overlong form, a surrogate or a value past U+10FFFF.
 */
static inline size_t
utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], cp;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/*
 * Make the C string s valid UTF-8 in place: every byte that does not
 * start a valid sequence becomes '?'.  For messages built from text a
 * client sent, cut short, or quoted by a parser.
 */
static inline void
utf8_scrub(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t n = 0, k;

	while (p[n] != '\0')
		n++;
	for (size_t i = 0; i < n; i += k)
		if ((k = utf8_len(p + i, n - i)) == 0) {
			p[i] = '?';
			k = 1;
		}
}

#endif
