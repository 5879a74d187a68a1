/*
 * t_envfile.c -- unit tests for envfile.c: the EXECD_ENVS dotenv format,
 * overlays, environment arrays and the expansion of a working directory.
 *
 * Each parse case is a file's text and the variables it must give, in
 * order, compared byte for byte (values may hold any bytes).  Covered:
 * comments and blank lines, names (trimmed, "export " dropped, bad ones
 * skipped), unquoted values (trimmed, '#' and quotes kept, '=' inside),
 * empty values, single quotes (literal, over lines), double quotes
 * (escapes, expansion, over lines), text after a closing quote and
 * unterminated quotes (the entry skipped, the next one read), CRLF,
 * Unicode blanks, bytes that are not UTF-8, Go's expansion rules, the
 * entries the 1.1 SDKs' setEnv appends, a later entry winning, the file
 * read through a path with a variable in it, the environment array, and
 * path expansion with its undefined-variable error.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../execd/process/envfile.h"
#include "../../util/buf.h"
#include "../t.h"
#include "../t_tmp.h"

/*
 * text (n bytes; 0: strlen) must give exactly the name/value pairs that
 * follow, in that order, ended by NULL.
 */
static void
expect_n(const char *text, size_t n, ...)
{
	json_t *got = envfile_parse(text, n != 0 ? n : strlen(text)), *v;
	const char *k, *name, *want;
	size_t count = 0;
	void *it = json_object_iter(got);
	va_list ap;

	va_start(ap, n);
	while ((name = va_arg(ap, const char *)) != NULL) {
		want = va_arg(ap, const char *);
		count++;
		if (it == NULL) {
			fprintf(stderr, "  %s: missing from %s\n", name, text);
			T_OK(it != NULL);
			break;
		}
		k = json_object_iter_key(it);
		v = json_object_iter_value(it);
		if (strcmp(k, name) != 0 || json_string_length(v) !=
		    strlen(want) || memcmp(json_string_value(v), want,
		    strlen(want)) != 0) {
			fprintf(stderr, "  text [%s]: got %s=[%s], expected "
			    "%s=[%s]\n", text, k, json_string_value(v), name,
			    want);
			T_OK(0);
		}
		it = json_object_iter_next(got, it);
	}
	va_end(ap);
	if (json_object_size(got) != count) {
		fprintf(stderr, "  text [%s]: %zu variables, expected %zu\n",
		    text, json_object_size(got), count);
		T_OK(0);
	}
	json_decref(got);
}

#define expect(text, ...)	expect_n((text), 0, __VA_ARGS__)

/* Comments and blank lines are skipped; '#' starts one only first. */
static void
test_comments(void)
{
	expect("# a comment\n\n   \n\t# indented too\nA=1\n#B=2\n",
	    "A", "1", NULL);
	expect("", NULL);
	expect("\n\n", NULL);
	expect("C=x # kept\n", "C", "x # kept", NULL);
}

/* Names: trimmed, "export " dropped, anything else not a name skipped. */
static void
test_names(void)
{
	expect("  A  = 1\n", "A", "1", NULL);
	expect("export B=2\nexport\tC='3'\nexport   D = 4\n",
	    "B", "2", "C", "3", "D", "4", NULL);
	expect("exportE=5\n", "exportE", "5", NULL);
	expect("1A=x\nA-B=y\n=z\n  =z\nnoeq\nexport=w\nA B=v\n", "export",
	    "w", NULL);
	expect("_ok9=1\n", "_ok9", "1", NULL);
}

/* Unquoted values: trimmed, the rest of the line as it is. */
static void
test_unquoted(void)
{
	expect("A=  x  y  \n", "A", "x  y", NULL);
	expect("B=a=b=c\n", "B", "a=b=c", NULL);
	expect("C=it's \"so\"\n", "C", "it's \"so\"", NULL);
	expect("D=\nE=   \nF", "D", "", "E", "", NULL);
	expect("G=no newline at the end", "G", "no newline at the end", NULL);
	expect("H=a\\nb\n", "H", "a\\nb", NULL);
}

/* Single quotes: literal, lines and all; empty. */
static void
test_single(void)
{
	expect("A='$HOME \\n \\\\ \"x\"'\n", "A", "$HOME \\n \\\\ \"x\"",
	    NULL);
	expect("B='line1\nline2'\nC=after\n", "B", "line1\nline2",
	    "C", "after", NULL);
	expect("D=''\nE=   '  padded  '   \n", "D", "", "E", "  padded  ",
	    NULL);
	expect("F='a # b'\n", "F", "a # b", NULL);
}

/* Double quotes: \n \r \t \\ \" decoded, others kept, then expanded. */
static void
test_double(void)
{
	setenv("T_ENV_X", "vx", 1);
	expect("A=\"a\\tb\\\\c\\\"d\\ne\\rf\\q\\$\"\n", "A",
	    "a\tb\\c\"d\ne\rf\\q\\$", NULL);
	expect("B=\"$T_ENV_X ${T_ENV_X} x\"\n", "B", "vx vx x", NULL);
	expect("C=\"l1\nl2\"\nD=2\n", "C", "l1\nl2", "D", "2", NULL);
	expect("E=\"\"\n", "E", "", NULL);
	expect("F=\"it's\"\n", "F", "it's", NULL);
	/* An escaped quote does not end it. */
	expect("G=\"a\\\"b\"\n", "G", "a\"b", NULL);
}

/* Text after a closing quote, and quotes never closed, skip the entry. */
static void
test_broken(void)
{
	expect("A='v' junk\nB=ok\n", "B", "ok", NULL);
	expect("A=\"v\" junk\nB=ok\n", "B", "ok", NULL);
	/* Reading goes on at the entry's second line. */
	expect("A='l1\nC=2' junk\nB=3\n", "C", "2' junk", "B", "3", NULL);
	expect("A='open\nB=1\n", "B", "1", NULL);
	expect("A=\"open\nB=1\n", "B", "1", NULL);
	/* The quote found is the next line's: that entry, skipped as a
	 * whole, and then that line read on its own. */
	expect("A='open\nB='x'\n", "B", "x", NULL);
	expect("A='v'   \t\nB=1\n", "A", "v", "B", "1", NULL);
}

/* CRLF files, Unicode blanks, bytes that are not UTF-8. */
static void
test_bytes(void)
{
	json_t *o;

	expect("A=v\r\nB='q'\r\nC=\"d\"\r\n", "A", "v", "B", "q", "C", "d",
	    NULL);
	expect("N=\xc2\xa0v\xe2\x80\x83\n", "N", "v", NULL);
	expect("L='\xe9t\xe9'\nM=x\xc2\n", "L", "\xe9t\xe9", "M", "x\xc2",
	    NULL);
	/* A NUL is kept in the value (the environment ends it there). */
	o = envfile_parse("Z=a\0b\nY=1\n", 10);
	T_EQ_INT(json_string_length(json_object_get(o, "Z")), 3);
	T_EQ_STR(json_string_value(json_object_get(o, "Y")), "1");
	json_decref(o);
}

/* Expansion, as Go's os.ExpandEnv does it. */
static void
test_expansion(void)
{
	setenv("T_ENV_X", "vx", 1);
	setenv("T_ENV_E", "", 1);
	unsetenv("T_ENV_U");
	expect("A=$T_ENV_X/${T_ENV_X}y/$T_ENV_Xy\n", "A", "vx/vxy/", NULL);
	expect("B=$T_ENV_U|${T_ENV_U}|$T_ENV_E|$1x|${}|$$|${T_ENV_X|$|a$\n",
	    "B", "|||x|||T_ENV_X|$|a$", NULL);
	expect("C=${T_ENV_X\n", "C", "T_ENV_X", NULL);
	expect("D=$ x\n", "D", "$ x", NULL);
	/* Values are not expanded twice, nor by what came before. */
	setenv("T_ENV_R", "$T_ENV_X", 1);
	unsetenv("T_ENV_A");
	expect("T_ENV_A=1\nF=$T_ENV_A$T_ENV_R\n", "T_ENV_A", "1",
	    "F", "$T_ENV_X", NULL);
}

/* What the 1.1 SDKs' setEnv appends comes back byte for byte. */
static void
test_set_env(void)
{
	setenv("HOME", "/home/t", 1);
	expect("K1='bar-1'\nK2='cost $5 ${HOME} tail'\nK3='line1\nline2'\n"
	    "K4='a=b=c'\nK5=\"it's fine\"\nK6='\"\"'\n"
	    "K7=\"q\\\\ \\\"x\\\" \\n\\t $HOME\"\n",
	    "K1", "bar-1", "K2", "cost $5 ${HOME} tail", "K3", "line1\nline2",
	    "K4", "a=b=c", "K5", "it's fine", "K6", "\"\"",
	    "K7", "q\\ \"x\" \n\t /home/t", NULL);
}

/* A later entry wins, in the place of the first. */
static void
test_later_wins(void)
{
	expect("A=1\nB=2\nA='3'\n", "A", "3", "B", "2", NULL);
}

/* The file itself: a variable in its path, missing files, overlays. */
static void
test_read(void)
{
	char *dir = t_tmpdir();
	json_t *o, *over;

	t_mkfile(dir, "env", "A=1\nB='two'\n");
	setenv("T_ENV_DIR", dir, 1);
	o = envfile_read("$T_ENV_DIR/env");
	T_EQ_INT(json_object_size(o), 2);
	T_EQ_STR(json_string_value(json_object_get(o, "B")), "two");
	json_decref(o);
	o = envfile_read("${T_ENV_UNDEFINED}/env");
	T_EQ_INT(json_object_size(o), 0);
	json_decref(o);
	o = envfile_read(t_path(dir, "missing"));
	T_EQ_INT(json_object_size(o), 0);
	json_decref(o);
	o = envfile_read(NULL);
	T_EQ_INT(json_object_size(o), 0);
	json_decref(o);
	/* The overlay: the file under what is given. */
	setenv("EXECD_ENVS", t_path(dir, "env"), 1);
	over = json_pack("{s:s, s:s}", "B", "mine", "C", "3");
	o = envfile_overlay(over);
	T_EQ_INT(json_object_size(o), 3);
	T_EQ_STR(json_string_value(json_object_get(o, "A")), "1");
	T_EQ_STR(json_string_value(json_object_get(o, "B")), "mine");
	T_EQ_STR(json_string_value(json_object_get(o, "C")), "3");
	json_decref(o);
	json_decref(over);
	unsetenv("EXECD_ENVS");
	o = envfile_overlay(NULL);
	T_EQ_INT(json_object_size(o), 0);
	json_decref(o);
	t_tmpdir_free(dir);
}

/* How many entries of env are for name, and the value of the last. */
static int
count(char **env, const char *name, const char **value)
{
	size_t n = strlen(name);
	int k = 0;

	for (; *env != NULL; env++) {
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=') {
			k++;
			*value = *env + n + 1;
		}
	}
	return k;
}

/* execd's environment with an overlay and PWD. */
static void
test_env(void)
{
	json_t *over = json_pack("{s:s, s:s}", "T_ENV_X", "over", "T_ENV_N",
	    "new");
	const char *v = NULL;
	char **env;

	setenv("T_ENV_X", "old", 1);
	setenv("PWD", "/somewhere", 1);
	env = envfile_env(over, "/w");
	T_EQ_INT(count(env, "T_ENV_X", &v), 1);
	T_EQ_STR(v, "over");
	T_EQ_INT(count(env, "T_ENV_N", &v), 1);
	T_EQ_STR(v, "new");
	T_EQ_INT(count(env, "PWD", &v), 1);
	T_EQ_STR(v, "/w");
	T_EQ_INT(count(env, "HOME", &v), 1);
	envfile_env_free(env);
	/* The request's PWD is over the cwd's; no overlay, no PWD. */
	json_object_set_new(over, "PWD", json_string("/req"));
	env = envfile_env(over, "/w");
	T_EQ_INT(count(env, "PWD", &v), 1);
	T_EQ_STR(v, "/req");
	envfile_env_free(env);
	env = envfile_env(NULL, NULL);
	T_EQ_INT(count(env, "PWD", &v), 1);
	T_EQ_STR(v, "/somewhere");
	T_EQ_INT(count(env, "T_ENV_X", &v), 1);
	T_EQ_STR(v, "old");
	envfile_env_free(env);
	json_decref(over);
}

/* path expanded; its result, or NULL with the error in err. */
static char *
expand(const char *path, const json_t *over, char *err, size_t errlen)
{
	static char out[256];
	struct buf b;
	int rc;

	buf_init_max(&b, sizeof(out) - 1);
	err[0] = '\0';
	rc = envfile_expand_path(path, over, &b, err, errlen);
	if (rc == 0 && !b.full)
		snprintf(out, sizeof(out), "%s", b.p);
	buf_reset(&b);
	return rc == 0 ? out : NULL;
}

/* A working directory: variables from the overlay, then execd's. */
static void
test_expand_path(void)
{
	json_t *over = json_pack("{s:s, s:s}", "T_ENV_O", "/o", "T_ENV_X",
	    "from-over");
	char err[256];

	setenv("T_ENV_X", "vx", 1);
	setenv("T_ENV_E", "", 1);
	unsetenv("T_ENV_U");
	unsetenv("T_ENV_V");
	T_EQ_STR(expand("$T_ENV_O/${T_ENV_X}/x", over, err, sizeof(err)),
	    "/o/from-over/x");
	T_EQ_STR(expand("/a/$T_ENV_X", NULL, err, sizeof(err)), "/a/vx");
	T_EQ_STR(expand("~/$T_ENV_X", NULL, err, sizeof(err)), "~/vx");
	T_EQ_STR(expand("$T_ENV_E/a", NULL, err, sizeof(err)), "/a");
	T_EQ_STR(expand("/p$1/q$", NULL, err, sizeof(err)), "/p/q$");
	T_EQ_STR(expand("/no/vars", NULL, err, sizeof(err)), "/no/vars");
	T_EQ_STR(expand("", NULL, err, sizeof(err)), "");
	/* Undefined: each named once, sorted. */
	T_OK(expand("$T_ENV_V/${T_ENV_U}/$T_ENV_V/$T_ENV_X", over, err,
	    sizeof(err)) == NULL);
	T_EQ_STR(err, "path references undefined environment variables: "
	    "T_ENV_U,T_ENV_V");
	T_OK(expand("/a/${T_ENV_U}b", NULL, err, sizeof(err)) == NULL);
	T_EQ_STR(err, "path references undefined environment variables: "
	    "T_ENV_U");
	/* Not a reference upstream checks: expanded to nothing. */
	T_EQ_STR(expand("/a/${T_ENV_U", NULL, err, sizeof(err)),
	    "/a/T_ENV_U");
	json_decref(over);
}

static const struct t_case cases[] = {
	{ "comments", test_comments },
	{ "names", test_names },
	{ "unquoted", test_unquoted },
	{ "single", test_single },
	{ "double", test_double },
	{ "broken", test_broken },
	{ "bytes", test_bytes },
	{ "expansion", test_expansion },
	{ "set_env", test_set_env },
	{ "later_wins", test_later_wins },
	{ "read", test_read },
	{ "env", test_env },
	{ "expand_path", test_expand_path },
};

int
main(void)
{
	return T_RUN(cases);
}
