/*
 * t_glob.c -- unit tests for fs_glob.c.
 *
 * A table of (pattern, name, expected result) covers the dialect of
 * fs_glob.h: '*', '?', classes with ranges, negation, escapes and a
 * leading ']', braces (nested, with wildcards, empty alternatives), "**"
 * as a whole segment and elsewhere, "!(...)" negation, UTF-8 characters,
 * and every kind of malformed pattern.  Separate tests pin the caps
 * (length, nesting, "!(" groups), check that a malformed pattern is
 * malformed for every name, and time patterns that make backtracking
 * matchers exponential.  Nothing touches the filesystem.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../fs/fs_glob.h"
#include "../t.h"

struct row {
	const char	*pat;
	const char	*name;
	int		 want;
};

static const struct row rows[] = {
	/* Literals. */
	{ "", "", 1 },
	{ "", "a", 0 },
	{ "abc", "abc", 1 },
	{ "abc", "abd", 0 },
	{ "abc", "ab", 0 },
	{ "abc", "abcd", 0 },
	{ "ABC", "abc", 0 },
	{ "a,b}c)|(", "a,b}c)|(", 1 },
	{ "a]b", "a]b", 1 },
	/* '*'. */
	{ "*", "", 1 },
	{ "*", "anything.at.all", 1 },
	{ "*", "a/b", 0 },
	{ "*.txt", "notes.txt", 1 },
	{ "*.txt", "notes.txt.bak", 0 },
	{ "*.txt", ".txt", 1 },
	{ "a*b*c", "aXXbYYc", 1 },
	{ "a*b*c", "aXXbYY", 0 },
	{ "a*", "a", 1 },
	{ "*a", "bbb", 0 },
	{ "a*/b", "axx/b", 1 },
	{ "a*/b", "a/x/b", 0 },
	{ "***", "abc", 1 },
	/* '?'. */
	{ "?", "a", 1 },
	{ "?", "", 0 },
	{ "?", "ab", 0 },
	{ "?", "/", 0 },
	{ "a?c", "abc", 1 },
	{ "??", "\xc3\xa9", 0 },		/* one UTF-8 character */
	{ "?", "\xc3\xa9", 1 },
	{ "?", "\xe2\x82\xac", 1 },		/* 3 bytes */
	{ "?", "\xf0\x9f\x98\x80", 1 },	/* 4 bytes */
	{ "??", "\xff\xfe", 1 },		/* invalid bytes: one each */
	{ "?", "\xc3", 1 },			/* truncated sequence */
	/* Classes. */
	{ "[abc]", "b", 1 },
	{ "[abc]", "d", 0 },
	{ "[a-z]x", "qx", 1 },
	{ "[a-z]", "Q", 0 },
	{ "[A-Za-z0-9_]", "_", 1 },
	{ "[!a-c]", "d", 1 },
	{ "[!a-c]", "b", 0 },
	{ "[^a-c]", "b", 0 },
	{ "[^a-c]", "z", 1 },
	{ "[!a]", "/", 0 },			/* never a separator */
	{ "[]a]", "]", 1 },
	{ "[]a]", "a", 1 },
	{ "[]]", "]", 1 },
	{ "[!]]", "]", 0 },
	{ "[!]]", "x", 1 },
	{ "[a-]", "-", 1 },
	{ "[-a]", "-", 1 },
	{ "[\\]]", "]", 1 },
	{ "[\\!]", "!", 1 },
	{ "[a\\-z]", "b", 0 },
	{ "[a\\-z]", "-", 1 },
	{ "[z-a]", "m", 0 },			/* backwards: empty range */
	{ "[\xc3\xa0-\xc3\xbf]", "\xc3\xa9", 1 },	/* U+E0..U+FF */
	{ "[\xc3\xa0-\xc3\xbf]", "e", 0 },
	{ "[!\xc3\xa9]", "\xc3\xa9", 0 },
	/* Escapes. */
	{ "\\*", "*", 1 },
	{ "\\*", "a", 0 },
	{ "\\?", "?", 1 },
	{ "\\[x]", "[x]", 1 },
	{ "\\{a,b}", "{a,b}", 1 },
	{ "\\!", "!", 1 },
	{ "\\!(a)", "!(a)", 1 },
	{ "a\\\\b", "a\\b", 1 },
	{ "\\a", "a", 1 },
	/* Braces. */
	{ "{a,b,c}", "b", 1 },
	{ "{a,b,c}", "d", 0 },
	{ "*.{py,txt}", "x.txt", 1 },
	{ "*.{py,txt}", "x.md", 0 },
	{ "{a,b{c,d}}x", "bdx", 1 },
	{ "{a,b{c,d}}x", "bx", 0 },
	{ "{*.py,test_?}", "test_1", 1 },
	{ "{,x}y", "y", 1 },
	{ "{,x}y", "xy", 1 },
	{ "{}", "", 1 },
	{ "a{}b", "ab", 1 },
	{ "{a,[bc]}", "c", 1 },
	{ "{a|b}", "a|b", 1 },			/* '|' is literal here */
	{ "{a,b}{c,d}{e,f}", "bde", 1 },
	{ "{{{{a}}}}", "a", 1 },
	/* "**". */
	{ "**", "", 1 },
	{ "**", "x.py", 1 },
	{ "**", "a/b/c", 1 },
	{ "**/*.py", "x.py", 1 },
	{ "**/*.py", "a/b/x.py", 1 },
	{ "**/*.py", "a/b/x.txt", 0 },
	{ "a/**/b", "a/b", 1 },
	{ "a/**/b", "a/x/y/b", 1 },
	{ "a/**/b", "ab", 0 },
	{ "a/**", "a", 1 },
	{ "a/**", "a/", 1 },
	{ "a/**", "a/x/y", 1 },
	{ "a/**", "ab", 0 },
	{ "**.txt", "a.txt", 1 },		/* not alone: like '*' */
	{ "**.txt", "d/a.txt", 0 },
	{ "x**", "xyz", 1 },
	{ "x**", "x/y", 0 },
	{ "{**/*.py,*.md}", "a/b.py", 1 },
	/* "!(...)". */
	{ "!(*.txt)", "a.md", 1 },
	{ "!(*.txt)", "a.txt", 0 },
	{ "!(a|b)", "c", 1 },
	{ "!(a|b)", "a", 0 },
	{ "!(a|b)", "ab", 1 },
	{ "!(a|b)", "", 1 },
	{ "!(a|b).c", "a.c", 0 },
	{ "!(a|b).c", "ab.c", 1 },
	{ "!()", "", 0 },
	{ "!()", "x", 1 },
	{ "!(x)", "a/b", 0 },			/* one segment only */
	{ "!(*.{py,txt})", "a.txt", 0 },
	{ "!(*.{py,txt})", "a.rs", 1 },
	{ "!([0-9]*)", "1abc", 0 },
	{ "!([0-9]*)", "abc", 1 },
	{ "!(**)", "abc", 0 },			/* "**" is '*' inside */
	{ "**/!(*.o)", "src/a.c", 1 },
	{ "**/!(*.o)", "src/a.o", 0 },
	/* Malformed. */
	{ "[", "x", -EINVAL },
	{ "[]", "x", -EINVAL },
	{ "[!]", "x", -EINVAL },
	{ "[abc", "a", -EINVAL },
	{ "[a\\", "a", -EINVAL },
	{ "{a,b", "a", -EINVAL },
	{ "{a,{b}", "b", -EINVAL },
	{ "x{", "x", -EINVAL },
	{ "\\", "", -EINVAL },
	{ "abc\\", "abc", -EINVAL },
	{ "!foo*", "foo", -EINVAL },
	{ "!foo*", "bar", -EINVAL },
	{ "a!", "a!", -EINVAL },
	{ "{!x,y}", "y", -EINVAL },
	{ "!(a", "b", -EINVAL },
	{ "!(a|b", "c", -EINVAL },
	{ "!(!(a))", "a", -EINVAL },		/* nested negation */
	{ "!({!(a)})", "a", -EINVAL },
	{ "*.txt[", "a.txt", -EINVAL },
};

static void	 test_table(void);
static void	 test_caps(void);
static void	 test_malformed_any_name(void);
static void	 test_slow_patterns(void);
static double	 now(void);

/* Every row of the table. */
static void
test_table(void)
{
	int rc;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		rc = fs_glob_match(rows[i].pat, rows[i].name);
		if (rc != rows[i].want) {
			t_fail_ = 1;
			fprintf(stderr, "  row %zu: \"%s\" vs \"%s\": %d, "
			    "expected %d\n", i, rows[i].pat, rows[i].name, rc,
			    rows[i].want);
		}
	}
	T_OK(sizeof(rows) / sizeof(rows[0]) >= 60);
}

/* Length, nesting depth and "!(" group count limits, at the boundary. */
static void
test_caps(void)
{
	char *p = malloc(FS_GLOB_PAT_MAX + 2), *name;
	size_t k;

	if (p == NULL)
		abort();
	/* Length: 4096 bytes is fine, 4097 is not. */
	memset(p, 'a', FS_GLOB_PAT_MAX);
	p[FS_GLOB_PAT_MAX] = '\0';
	name = strdup(p);
	T_EQ_INT(fs_glob_match(p, name), 1);
	p[FS_GLOB_PAT_MAX - 1] = '*';
	T_EQ_INT(fs_glob_match(p, name), 1);
	p[FS_GLOB_PAT_MAX] = 'a';
	p[FS_GLOB_PAT_MAX + 1] = '\0';
	T_EQ_INT(fs_glob_match(p, name), -EINVAL);
	free(name);

	/* Nesting: 32 levels of braces match, 33 are refused. */
	for (k = 0; k < 32; k++)
		p[k] = '{';
	p[32] = 'x';
	for (k = 0; k < 32; k++)
		p[33 + k] = '}';
	p[65] = '\0';
	T_EQ_INT(fs_glob_match(p, "x"), 1);
	memmove(p + 1, p, 66);
	p[0] = '{';
	strcat(p, "}");
	T_EQ_INT(fs_glob_match(p, "x"), -EINVAL);

	/* 16 "!(" groups are fine, a 17th is refused. */
	p[0] = '\0';
	for (k = 0; k < 16; k++)
		strcat(p, "!(z)");
	T_EQ_INT(fs_glob_match(p, "abc"), 1);
	strcat(p, "!(z)");
	T_EQ_INT(fs_glob_match(p, "abc"), -EINVAL);

	/* A "!(" group has room for 60-odd characters, not 100. */
	strcpy(p, "!(");
	for (k = 0; k < 20; k++)
		strcat(p, "ab|");
	strcat(p, "c)");
	T_EQ_INT(fs_glob_match(p, "ab"), -EINVAL);
	strcpy(p, "!(");
	for (k = 0; k < 40; k++)
		strcat(p, "x");
	strcat(p, ")");
	T_EQ_INT(fs_glob_match(p, "ab"), 1);
	free(p);
}

/* A malformed pattern is malformed whatever the name, even "" or one
 * that the part before the error would already refuse. */
static void
test_malformed_any_name(void)
{
	static const char *const bad[] = {
		"[", "x[", "a{b", "!x", "z\\", "q*[]", "{!(a)", "!(a|",
	};
	static const char *const names[] = {
		"", "x", "zzz", "a/b", "qq", "\xff",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++)
			T_EQ_INT(fs_glob_match(bad[i], names[j]), -EINVAL);
}

/* Monotonic seconds. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Patterns that make a backtracking matcher exponential finish at once:
 * many stars against a long near-miss, many nested braces, and a
 * negation of many stars.  The bound is loose enough for sanitizers.
 */
static void
test_slow_patterns(void)
{
	char name[4097], pat[4097];
	double t0 = now();
	size_t k;

	memset(name, 'a', 4000);
	name[4000] = '\0';
	strcpy(pat, "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b");
	T_EQ_INT(fs_glob_match(pat, name), 0);
	name[3999] = 'b';
	T_EQ_INT(fs_glob_match(pat, name), 1);
	name[3999] = 'a';

	pat[0] = '\0';
	for (k = 0; k < 30; k++)
		strcat(pat, "{a,{a,a*}}");
	strcat(pat, "b");
	T_EQ_INT(fs_glob_match(pat, name), 0);

	T_EQ_INT(fs_glob_match("!(*a*a*a*a*a*a*a*a*a*a*b)", name), 1);
	T_EQ_INT(fs_glob_match("*!(*a*a*a*a*a*b)*!(*a*b)", name), 1);
	T_EQ_INT(fs_glob_match("!(*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a)",
	    name), 0);

	for (k = 0; k < 2000; k++)
		memcpy(name + 2 * k, "a/", 2);
	name[4000] = '\0';
	T_EQ_INT(fs_glob_match("**/**/**/**/**/**/**/**/b", name), 0);
	T_OK(now() - t0 < 3.0);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "glob_table", test_table },
		{ "glob_caps", test_caps },
		{ "glob_malformed_any_name", test_malformed_any_name },
		{ "glob_slow_patterns", test_slow_patterns },
	};

	return T_RUN(cases);
}
