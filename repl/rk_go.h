/*
 * rk_go.h -- Go cells as top-level declarations, for a "program" kernel
 * (docs/kernels.md, Go): each run re-runs one assembled file.
 *
 * A cell is cut into its top-level items by a small scanner that knows
 * Go's comments, strings, raw strings, runes, brackets and where Go puts
 * its automatic semicolons.  Items are kept by name: funcs ("f"),
 * methods ("T.f"), types, vars and consts (every name of a group), and
 * imports (by their spec).  `package` lines are dropped; `func main` is
 * the cell's own and never kept; anything else is a statement, and the
 * statements of a cell become the body of its main.  Pure; one thread.
 */
#ifndef RK_GO_H
#define RK_GO_H

#include <stdbool.h>
#include <stddef.h>

struct rk_go_decl {
	char	*keys;		/* " a b ": its names, space-separated */
	char	*text;		/* the declaration, as written */
};

/* The declarations kept from earlier cells, or one cell's. */
struct rk_go {
	struct rk_go_decl *v;
	size_t		   n;
	char		  *main;	/* a cell's func main, whole; or NULL */
	char		  *stmts;	/* a cell's other statements ("") */
	size_t		   slen;
};

/*
 * Cut code[0..n) into cell (zeroed by the caller, or rk_go_clear'ed).
 * 0, or -1 when a bracket, string or comment is left open (the cell
 * still holds what was read).
 */
int	rk_go_parse(const char *code, size_t n, struct rk_go *cell);
/*
 * The program for cell after kept: `package main`, kept's declarations
 * that cell does not replace, cell's, then cell's main, or a main whose
 * body is cell's statements (an empty one for a cell of declarations).
 * A new string; *len its length.
 */
char	*rk_go_program(const struct rk_go *kept, const struct rk_go *cell,
	    size_t *len);
/* Move cell's declarations into kept, replacing those of the same
 * names; cell is cleared. */
void	rk_go_keep(struct rk_go *kept, struct rk_go *cell);
void	rk_go_clear(struct rk_go *);

#endif
