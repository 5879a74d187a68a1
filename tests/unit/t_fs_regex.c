/*
 * t_fs_regex.c -- unit tests for fs_regex.c.
 *
 * The dialect is checked against glibc's regcomp/regexec (REG_EXTENDED |
 * REG_NEWLINE | REG_NOSUB, C locale): a table of patterns, each run over a
 * table of texts, must give the same answer both ways, and the patterns
 * glibc refuses must be refused here too.  Then what differs on purpose:
 * backreferences refused, sizes capped, and the patterns that make glibc
 * slow answered at once (a bound on steps, not on time: with the program
 * size and the text length fixed, the work is fixed).
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fs/fs_regex.h"
#include "../t.h"

static int	 ours(const char *, unsigned, const char *);
static int	 count_check(void *);

static int
count_check(void *arg)
{
	int *calls = arg;

	return ++*calls >= 3 ? -ECANCELED : 0;
}

static const char *patterns[] = {
	"a", "abc", "a|b", "ab|cd|", "(ab)+c", "a*", "a+b", "a?b", "^ab",
	"ab$", "^$", "^a|b$", "a{2}", "a{2,}", "a{1,3}b", "a{,2}b", "x{0}y",
	"(a|ab)(c|bcd)(d*)", "[abc]+", "[^abc]", "[a-c]x", "[]a]", "[^]a]",
	"[a-]", "[[:digit:]]+", "[[:alpha:][:digit:]]", "[[:space:]]",
	"[[:upper:]]", "[[:punct:]]", "[[:xdigit:]]{2}", "[[.a.]-c]",
	"[[=b=]]", ".", "a.c", "\\.", "\\w+", "\\W", "\\s", "\\S+",
	"\\bfoo\\b", "\\Bo", "\\<bar", "foo\\>", "()", "(|a)", "a||b",
	"((a))", "(a*)*", "(a|aa)*c", "a**", "a{1}{2}", "\\{", "a)", "x\\",
	"*a", "+a", "a{", "a{x", "a{1", "a{2,1}", "[b-a]", "[", "(a",
	"[[:nope:]]", "^*a", "(*a)", "x|*", "\\[a", "[\\]", "a\\|b",
};

static const char *texts[] = {
	"", "a", "b", "ab", "abc", "aab", "xaaab", "cd", "abcd", "abbcdd",
	"a)", "a{", "{", "foo bar", "foobar", "barfoo", "x.y", "1234", "A1",
	" \t", "[a", "\\", "a|b", "]", "-", "aaaaaaaaac", "y", "xy", "ZZ",
	"ab ab", "a]", "*a", "_", "AB", "ff", "x\\",
};

/* Our answer: 1, 0, or -1 when the pattern is refused. */
static int
ours(const char *p, unsigned flags, const char *s)
{
	struct fs_regex *re;
	char err[128];
	int m;

	if (fs_regex_compile(p, flags, &re, err, sizeof(err)) < 0) {
		T_OK(err[0] != '\0');
		return -1;
	}
	m = fs_regex_match(re, s, strlen(s), NULL, NULL);
	fs_regex_free(re);
	return m;
}

/* Every pattern over every text, with and without ignoring case. */
static void
test_same_as_glibc(void)
{
	regex_t re;
	int want, got, bad = 0;

	for (int ic = 0; ic < 2; ic++)
		for (size_t i = 0; i < sizeof(patterns) / sizeof(*patterns);
		    i++) {
			const char *p = patterns[i];
			int crc = regcomp(&re, p, REG_EXTENDED | REG_NEWLINE |
			    REG_NOSUB | (ic ? REG_ICASE : 0));

			for (size_t k = 0; k < sizeof(texts) / sizeof(*texts);
			    k++) {
				want = crc != 0 ? -1 : regexec(&re, texts[k],
				    0, NULL, 0) == 0;
				got = ours(p, ic ? FS_REGEX_ICASE : 0,
				    texts[k]);
				if (got != want && bad++ < 20)
					fprintf(stderr, "  /%s/%s on \"%s\": "
					    "%d, glibc %d\n", p, ic ? "i" :
					    "", texts[k], got, want);
				if (crc != 0)
					break;
			}
			if (crc == 0)
				regfree(&re);
		}
	T_EQ_INT(bad, 0);
}

/* What glibc runs and we refuse, each with a message saying why. */
static void
test_refused(void)
{
	struct fs_regex *re;
	char err[256], big[FS_REGEX_MAX_LEN + 2];

	T_EQ_INT(fs_regex_compile("(.*)(.*)(.*)(.*)(.*)\\5\\4\\3\\2\\1x", 0,
	    &re, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "backreference") != NULL);
	T_EQ_INT(fs_regex_compile("(a)\\1", 0, &re, err, sizeof(err)),
	    -EINVAL);
	T_EQ_INT(fs_regex_compile("((a{1,100}){1,100}){1,100}", 0, &re, err,
	    sizeof(err)), -EINVAL);
	T_OK(strstr(err, "too large") != NULL);
	T_EQ_INT(fs_regex_compile("(.{1,200}){1,200}z", 0, &re, err,
	    sizeof(err)), -EINVAL);
	T_EQ_INT(fs_regex_compile("a{256}", 0, &re, err, sizeof(err)),
	    -EINVAL);
	T_OK(strstr(err, "255") != NULL);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	T_EQ_INT(fs_regex_compile(big, 0, &re, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "too long") != NULL);
	/* Deep nesting is refused, not a deep recursion. */
	memset(big, '(', 100);
	memset(big + 100, ')', 100);
	big[200] = '\0';
	T_EQ_INT(fs_regex_compile(big, 0, &re, err, sizeof(err)), -EINVAL);
	memset(big, '*', 1000);
	big[0] = 'a';
	big[1000] = '\0';
	T_EQ_INT(fs_regex_compile(big, 0, &re, err, sizeof(err)), -EINVAL);
	T_OK(strstr(err, "deep") != NULL);
	/* Empty repetitions expand to nothing, however many. */
	T_EQ_INT(fs_regex_compile("((((){255}){255}){255}){255}x", 0, &re,
	    err, sizeof(err)), 0);
	T_EQ_INT(fs_regex_size(re), 2);
	fs_regex_free(re);
	fs_regex_free(NULL);
}

/* Patterns that make backtracking slow, on a 64 KiB line, all answered. */
static void
test_linear(void)
{
	static const char *slow[] = { "(a|aa)*c", "(a*)*b", "(x+x+)+y",
	    "(.*)(.*)(.*)(.*)(.*)x", "(a|a?)+b", "([a-z]+)*[0-9]" };
	size_t n = 64 * 1024;
	char *s = malloc(n + 1), err[128];
	struct fs_regex *re;

	T_OK(s != NULL);
	memset(s, 'a', n);
	s[n] = '\0';
	for (size_t i = 0; i < sizeof(slow) / sizeof(*slow); i++) {
		T_EQ_INT(fs_regex_compile(slow[i], 0, &re, err, sizeof(err)),
		    0);
		T_OK(fs_regex_size(re) < 64);
		T_EQ_INT(fs_regex_match(re, s, n, NULL, NULL), 0);
		fs_regex_free(re);
	}
	/* The check runs every FS_REGEX_CHECK bytes and can stop it. */
	T_EQ_INT(fs_regex_compile("(a|aa)*c", 0, &re, err, sizeof(err)), 0);
	{
		int calls = 0;

		T_EQ_INT(fs_regex_match(re, s, n, count_check, &calls),
		    -ECANCELED);
		T_EQ_INT(calls, 3);
		calls = -1000;
		T_EQ_INT(fs_regex_match(re, s, n, count_check, &calls), 0);
		T_EQ_INT(calls, -1000 + (int)(n / FS_REGEX_CHECK));
	}
	fs_regex_free(re);
	/* A NUL ends the text; the length given is an upper bound. */
	T_EQ_INT(fs_regex_compile("b", 0, &re, err, sizeof(err)), 0);
	T_EQ_INT(fs_regex_match(re, "a\0b", 3, NULL, NULL), 0);
	T_EQ_INT(fs_regex_match(re, "ab", 1, NULL, NULL), 0);
	T_EQ_INT(fs_regex_match(re, "ab", 2, NULL, NULL), 1);
	fs_regex_free(re);
	free(s);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "same_as_glibc", test_same_as_glibc },
		{ "refused", test_refused },
		{ "linear", test_linear },
	};

	return T_RUN(cases);
}
