/*
 * fuzz_glob.c -- fuzz target for fs_glob_match().
 *
 * The input is split at its first NUL into a pattern and a name (no NUL:
 * all pattern, empty name).  Invariants checked, any break aborts:
 *  - the result is -EINVAL, 0 or 1;
 *  - whether the pattern is malformed does not depend on the name;
 *  - a pattern with no special character matches exactly the equal name;
 *  - "*" matches every name without '/', "**" every name;
 *  - the name with its special characters escaped matches the name;
 *  - on ASCII, a pattern of literals, '*' and '?' (no "**") agrees with a
 *    plain dynamic-programming matcher;
 *  - for a name without '/', "!(p)" matches exactly when p does not, for
 *    a p with no '/', '|', ')' or '!' that fits in a "!(" group.
 * Time is bounded by construction (an NFA, fs_glob.c); libFuzzer's
 * -timeout catches a regression.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fs/fs_glob.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int	 ref_match(const char *, const char *);
static int	 is_simple(const char *, const char *);

/* '*' and '?' (neither crosses '/') and literal bytes, by DP. */
static int
ref_match(const char *p, const char *s)
{
	size_t m = strlen(p), n = strlen(s), i, j;
	unsigned char *cur = calloc(n + 1, 1), *nxt = calloc(n + 1, 1);
	int rc;

	if (cur == NULL || nxt == NULL)
		abort();
	cur[0] = 1;		/* the empty pattern prefix matches "" */
	for (i = 0; i < m; i++) {
		memset(nxt, 0, n + 1);
		for (j = 0; j <= n; j++) {
			if (p[i] == '*') {
				/* nxt[j]: cur[j], or nxt[j-1] and s[j-1]. */
				nxt[j] = cur[j] || (j > 0 && nxt[j - 1] &&
				    s[j - 1] != '/');
			} else if (j > 0) {
				nxt[j] = cur[j - 1] && (p[i] == '?' ?
				    s[j - 1] != '/' : p[i] == s[j - 1]);
			}
		}
		memcpy(cur, nxt, n + 1);
	}
	rc = cur[n];
	free(cur);
	free(nxt);
	return rc;
}

/* Pattern and name fit ref_match(): ASCII, no "**", no other syntax. */
static int
is_simple(const char *p, const char *s)
{
	if (strstr(p, "**") != NULL || strlen(p) * strlen(s) > 1000000)
		return 0;
	for (; *p != '\0'; p++)
		if ((unsigned char)*p >= 0x80 || strchr("[{\\!", *p) != NULL)
			return 0;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s >= 0x80)
			return 0;
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t plen = nul != NULL ? (size_t)(nul - data) : size;
	char *pat, *name, *esc, *neg;
	size_t k, e;
	int rc, rc2, has_slash;

	pat = strndup((const char *)data, plen);
	name = nul != NULL ? strndup((const char *)nul + 1,
	    size - plen - 1) : strdup("");
	if (pat == NULL || name == NULL)
		abort();
	esc = malloc(2 * strlen(name) + 1);
	neg = malloc(plen + 4);
	if (esc == NULL || neg == NULL)
		abort();
	has_slash = strchr(name, '/') != NULL;

	rc = fs_glob_match(pat, name);
	CHECK(rc == -EINVAL || rc == 0 || rc == 1);
	/* Malformed or not, whatever the name. */
	rc2 = fs_glob_match(pat, "");
	CHECK((rc == -EINVAL) == (rc2 == -EINVAL));
	rc2 = fs_glob_match(pat, "x/y\xff");
	CHECK((rc == -EINVAL) == (rc2 == -EINVAL));
	/* No special character: plain equality. */
	if (strpbrk(pat, "*?[{\\!") == NULL)
		CHECK(rc == (strcmp(pat, name) == 0));
	CHECK(fs_glob_match("*", name) == !has_slash);
	CHECK(fs_glob_match("**", name) == 1);
	/* The name, escaped, matches itself. */
	for (k = 0, e = 0; name[k] != '\0'; k++) {
		if (strchr("*?[]{}()!\\,|", name[k]) != NULL)
			esc[e++] = '\\';
		esc[e++] = name[k];
	}
	esc[e] = '\0';
	if (e <= FS_GLOB_PAT_MAX)
		CHECK(fs_glob_match(esc, name) == 1);
	/* A plain matcher agrees on the simple cases. */
	if (rc != -EINVAL && is_simple(pat, name))
		CHECK(rc == ref_match(pat, name));
	/* Negation is the complement within one segment. */
	if (rc != -EINVAL && !has_slash &&
	    strpbrk(pat, "/|)!") == NULL) {
		snprintf(neg, plen + 4, "!(%s)", pat);
		rc2 = fs_glob_match(neg, name);
		if (rc2 != -EINVAL)	/* group too big, or too deep */
			CHECK(rc2 == !rc);
	}
	free(neg);
	free(esc);
	free(name);
	free(pat);
	return 0;
}
