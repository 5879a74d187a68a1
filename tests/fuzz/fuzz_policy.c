/*
 * fuzz_policy.c -- fuzz target for the YAML policy file (execd/policy.c).
 *
 * The input is the file, read by policy_parse over the built-in defaults
 * (no variable, no argument).  Invariants, any break aborts: the result
 * is 0 or -EINVAL; an error names the file, a line and a column, each a
 * number from 1, and the line is within the input (counting YAML's
 * Unicode line breaks); and a file that loads
 * prints (policy_print) to a text that loads again and prints to the
 * very same text -- the round trip --print-config promises.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../execd/config/conf.h"
#include "../../execd/config/policy.h"
#include "fz.h"

static char	*argv0[] = { NULL, NULL };

/* The defaults, as execd with no option has them. */
static void
defaults(struct conf *c)
{
	static char name[] = "execd";
	char err[256];

	argv0[0] = name;
	if (conf_parse(c, 1, argv0, err, sizeof(err)) != 0)
		abort();
}

/* "NAME:LINE:COL: ..." with LINE within the n bytes of input. */
static void
check_err(const char *err, const char *data, size_t n)
{
	const char *p = err + strlen("fuzz.yaml:");
	unsigned long line, col, lines = 1;
	char *end;

	CHECK(strncmp(err, "fuzz.yaml:", 10) == 0);
	CHECK(isdigit((unsigned char)*p));
	line = strtoul(p, &end, 10);
	CHECK(*end == ':' && isdigit((unsigned char)end[1]));
	col = strtoul(end + 1, &end, 10);
	CHECK(strncmp(end, ": ", 2) == 0 && end[2] != '\0');
	/* libyaml's line breaks: CR, LF, and NEL, LS, PS in UTF-8. */
	for (size_t i = 0; i < n; i++)
		lines += data[i] == '\n' || data[i] == '\r' ||
		    (i + 1 < n && memcmp(data + i, "\xc2\x85", 2) == 0) ||
		    (i + 2 < n && (memcmp(data + i, "\xe2\x80\xa8", 3) == 0 ||
		    memcmp(data + i, "\xe2\x80\xa9", 3) == 0));
	CHECK(line >= 1 && col >= 1 && line <= lines + 1);
}

/* c printed, into a new string. */
static char *
print(const struct conf *c, size_t *n)
{
	char *out = NULL;
	FILE *f = open_memstream(&out, n);

	if (f == NULL)
		abort();
	policy_print(c, f);
	if (fclose(f) != 0)
		abort();
	return out;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf c;
	char err[512], *one, *two;
	size_t n1, n2;
	int rc;

	if (size > 64 << 10)
		return 0;
	unsetenv("EXECD_CONFIG");
	defaults(&c);
	err[0] = '\0';
	rc = policy_parse(&c, "fuzz.yaml", (const char *)data, size, err,
	    sizeof(err));
	CHECK(rc == 0 || rc == -EINVAL);
	if (rc < 0) {
		check_err(err, (const char *)data, size);
		conf_reset(&c);
		return 0;
	}
	one = print(&c, &n1);
	conf_reset(&c);
	defaults(&c);
	rc = policy_parse(&c, "fuzz.yaml", one, n1, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "printed file refused: %s\n%s", err, one);
	CHECK(rc == 0);
	two = print(&c, &n2);
	CHECK(n1 == n2 && memcmp(one, two, n1) == 0);
	conf_reset(&c);
	free(one);
	free(two);
	return 0;
}
