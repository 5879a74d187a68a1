/*
 * fuzz_grep.c -- fuzz target for the grep matcher (fs_regex) and the text
 * form of file names (fs_path_escape).
 *
 * The input is split at its first NUL into a pattern and a text (no NUL:
 * all pattern, empty text).  Invariants checked, any break aborts:
 *  - compiling gives 0 or -EINVAL, and -EINVAL comes with a message;
 *  - a pattern holding a backreference \1..\9 outside a bracket is never
 *    compiled;
 *  - a compiled program has at most FS_REGEX_MAX_PROG instructions, and
 *    matching, with and without case folding, gives 0 or 1 the same way
 *    twice (the scratch space is reset);
 *  - matching is bounded: a check callback, called every FS_REGEX_CHECK
 *    bytes, is called at most text/FS_REGEX_CHECK times, and when it
 *    asks to stop the match stops with its error;
 *  - when the pattern is a plain word (letters and digits), it matches
 *    exactly when the text contains it (memmem);
 *  - the text form of the input's bytes (as a name) is valid UTF-8 and
 *    unescapes to the same bytes.
 * Time is bounded by construction (no backtracking); libFuzzer's
 * -timeout catches a regression.  Inputs over 2 KiB are skipped.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fs/fs_path.h"
#include "../../fs/fs_regex.h"
#include "../../util/utf8.h"

#define CHECK(e) do { if (!(e)) { fprintf(stderr, "%s:%d: invariant " \
	"broken: %s\n", __FILE__, __LINE__, #e); abort(); } } while (0)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int	 count(void *);
static int	 has_backref(const char *);
static int	 is_word(const char *);
static void	 check_text_form(const char *);

struct calls {
	int	n, stop_at;
};

static int
count(void *arg)
{
	struct calls *c = arg;

	return ++c->n == c->stop_at ? -ECANCELED : 0;
}

/* A backslash and a digit 1-9 outside brackets (a rough, safe test). */
static int
has_backref(const char *p)
{
	for (; *p != '\0'; p++) {
		if (*p == '[')
			return 0;	/* brackets: do not guess */
		if (*p == '\\') {
			if (p[1] >= '1' && p[1] <= '9')
				return 1;
			if (p[1] == '\0')
				return 0;
			p++;
		}
	}
	return 0;
}

static int
is_word(const char *p)
{
	if (*p == '\0')
		return 0;
	for (; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
			return 0;
	return 1;
}

static void
check_text_form(const char *raw)
{
	char *t = fs_path_escape(raw);
	size_t n, k;

	CHECK(t != NULL);
	n = strlen(t);
	for (size_t i = 0; i < n; i += k)
		CHECK((k = utf8_len((const unsigned char *)t + i, n - i)) > 0);
	CHECK(fs_path_is_plain(raw) == (strcmp(raw, t) == 0));
	fs_path_unescape(t);
	CHECK(strcmp(t, raw) == 0);
	free(t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *pat, *text, err[256];
	const char *nul;
	struct fs_regex *re;
	struct calls c;
	size_t tlen;
	int rc, m;

	/*
	 * Matching costs the program's size times the text's: past a few
	 * KiB an input takes seconds under the sanitizers, and finds
	 * nothing that a shorter one would not.
	 */
	if (buf == NULL || size > 2048) {
		free(buf);
		return 0;
	}
	memcpy(buf, data, size);
	buf[size] = '\0';
	pat = buf;
	nul = memchr(buf, '\0', size);
	text = nul != NULL ? buf + (nul - buf) + 1 : buf + size;
	tlen = nul != NULL ? size - (size_t)(text - buf) : 0;
	check_text_form(pat);
	for (unsigned fl = 0; fl < 2; fl++) {
		err[0] = '\0';
		rc = fs_regex_compile(pat, fl ? FS_REGEX_ICASE : 0, &re, err,
		    sizeof(err));
		CHECK(rc == 0 || rc == -EINVAL);
		if (rc < 0) {
			CHECK(err[0] != '\0');
			continue;
		}
		CHECK(!has_backref(pat));
		CHECK(fs_regex_size(re) <= FS_REGEX_MAX_PROG);
		c = (struct calls){ 0, 0 };
		m = fs_regex_match(re, text, tlen, count, &c);
		CHECK(m == 0 || m == 1);
		CHECK((size_t)c.n <= tlen / FS_REGEX_CHECK);
		CHECK(fs_regex_match(re, text, tlen, NULL, NULL) == m);
		if (fl == 0 && is_word(pat))
			CHECK(m == (memmem(text, strnlen(text, tlen), pat,
			    strlen(pat)) != NULL));
		if (c.n > 0) {
			struct calls s = { 0, 1 };

			rc = fs_regex_match(re, text, tlen, count, &s);
			CHECK(rc == -ECANCELED || rc == 1);
		}
		fs_regex_free(re);
	}
	free(buf);
	return 0;
}
