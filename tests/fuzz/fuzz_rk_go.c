/*
 * fuzz_rk_go.c -- fuzz target for the Go cell scanner of
 * execd-repl-kernel (rk_go_parse, rk_go_program, rk_go_keep).
 *
 * The input is a series of cells separated by NULs, run one after
 * another as a context would: each is parsed (twice, with the same
 * answer), its program assembled, and its declarations kept.  Every
 * declaration's text must be a piece of its cell, its keys " a b " with
 * no empty name, the program must begin with its package line and be as
 * long as it says, and what is kept must never hold two declarations
 * sharing a name.
 */
#include <string.h>

#include "../../repl/rk_go.c"
#include "fz.h"

static void
check_keys(const char *k)
{
	size_t n = strlen(k);

	CHECK(n >= 1 && k[0] == ' ' && k[n - 1] == ' ');
	CHECK(strstr(k, "  ") == NULL || n == 1);
}

/* No two of g's declarations share a name. */
static void
check_unique(const struct rk_go *g)
{
	for (size_t i = 0; i < g->n; i++) {
		struct rk_go one = { .v = &g->v[i], .n = 1 };

		for (size_t j = i + 1; j < g->n; j++)
			CHECK(!replaced(&g->v[j], &one));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *nul;
	struct rk_go kept = { 0 }, cell, again;
	char *prog;
	size_t n, len;
	int rc;

	for (int cells = 0; p <= end && cells < 16; cells++, p = nul + 1) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (nul == NULL)
			nul = end;
		n = (size_t)(nul - p);
		memset(&cell, 0, sizeof(cell));
		memset(&again, 0, sizeof(again));
		rc = rk_go_parse(p, n, &cell);
		CHECK(rc == 0 || rc == -1);
		CHECK(rk_go_parse(p, n, &again) == rc && again.n == cell.n);
		rk_go_clear(&again);
		CHECK(cell.stmts != NULL && strlen(cell.stmts) == cell.slen);
		for (size_t i = 0; i < cell.n; i++) {
			check_keys(cell.v[i].keys);
			CHECK(cell.v[i].text[0] != '\0');
			CHECK(memmem(p, n, cell.v[i].text,
			    strlen(cell.v[i].text)) != NULL ||
			    strncmp(cell.v[i].text, "import ", 7) == 0);
		}
		prog = rk_go_program(&kept, &cell, &len);
		CHECK(strlen(prog) == len && strncmp(prog,
		    "package main\n\n", 14) == 0);
		free(prog);
		if (rc == 0)
			rk_go_keep(&kept, &cell);
		rk_go_clear(&cell);
		check_unique(&kept);
		if (nul == end)
			break;
	}
	rk_go_clear(&kept);
	return 0;
}
