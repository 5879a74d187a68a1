/*
 * rk_go.c -- cutting Go cells into top-level declarations, keeping them
 * by name, and assembling the program a run runs (rk_go.h).
 *
 * The scanner reads tokens only as far as it must: comments, the three
 * kinds of literal, brackets, semicolons and identifiers.  An item ends
 * at a semicolon or at a newline outside brackets where Go would insert
 * one (after an identifier, a literal, a closing bracket, ++ or --), so
 * a call split after its comma or an expression split after its operator
 * stays one item, as the compiler reads it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/must.h"
#include "rk_go.h"

enum tk {
	T_END,		/* no more input */
	T_NL,		/* a newline, or a comment holding one */
	T_SPACE,	/* blanks, or a comment on one line */
	T_IDENT,	/* identifier, keyword or number */
	T_LIT,		/* string, raw string or rune */
	T_OPEN, T_CLOSE, T_SEMI,
	T_INCDEC,	/* ++ -- */
	T_OP,		/* any other operator or punctuation */
	T_BAD,		/* a literal or comment left open */
};

static int
ident_char(unsigned char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c >= 0x80;
}

/* The token at p[*i] (up to n): its kind; *i moves past it. */
static enum tk
tok(const char *p, size_t n, size_t *i)
{
	size_t j = *i;
	char q;

	if (j >= n)
		return T_END;
	switch (p[j]) {
	case '\n':
		*i = j + 1;
		return T_NL;
	case ' ': case '\t': case '\r': case '\f': case '\v':
		while (j < n && (p[j] == ' ' || p[j] == '\t' || p[j] == '\r' ||
		    p[j] == '\f' || p[j] == '\v'))
			j++;
		*i = j;
		return T_SPACE;
	case '(': case '[': case '{':
		*i = j + 1;
		return T_OPEN;
	case ')': case ']': case '}':
		*i = j + 1;
		return T_CLOSE;
	case ';':
		*i = j + 1;
		return T_SEMI;
	case '`':
		for (j++; j < n && p[j] != '`'; j++)
			;
		*i = j < n ? j + 1 : n;
		return j < n ? T_LIT : T_BAD;
	case '"': case '\'':
		q = p[j];
		for (j++; j < n && p[j] != q && p[j] != '\n'; j++)
			if (p[j] == '\\' && j + 1 < n && p[j + 1] != '\n')
				j++;
		*i = j < n && p[j] == q ? j + 1 : j;
		return j < n && p[j] == q ? T_LIT : T_BAD;
	case '/':
		if (j + 1 < n && p[j + 1] == '/') {
			while (j < n && p[j] != '\n')
				j++;
			*i = j;		/* the newline is a token of its own */
			return T_SPACE;
		}
		if (j + 1 < n && p[j + 1] == '*') {
			const char *e = memmem(p + j + 2, n - j - 2, "*/", 2);

			if (e == NULL) {
				*i = n;
				return T_BAD;
			}
			*i = (size_t)(e - p) + 2;
			return memchr(p + j, '\n', (size_t)(e - (p + j))) ?
			    T_NL : T_SPACE;
		}
		break;
	case '+': case '-':
		if (j + 1 < n && p[j + 1] == p[j]) {
			*i = j + 2;
			return T_INCDEC;
		}
		break;
	default:
		if (ident_char((unsigned char)p[j])) {
			while (j < n && ident_char((unsigned char)p[j]))
				j++;
			*i = j;
			return T_IDENT;
		}
	}
	*i = j + 1;
	return T_OP;
}

/* Whether the identifier p[0..n) lets a newline after it end a line. */
static int
ends_line(const char *p, size_t n)
{
	static const char *const kw[] = { "break", "case", "chan", "const",
	    "continue", "default", "defer", "else", "fallthrough", "for",
	    "func", "go", "goto", "if", "import", "interface", "map",
	    "package", "range", "return", "select", "struct", "switch",
	    "type", "var" };

	for (size_t k = 0; k < sizeof(kw) / sizeof(kw[0]); k++)
		if (strlen(kw[k]) == n && memcmp(kw[k], p, n) == 0)
			return strcmp(kw[k], "break") == 0 ||
			    strcmp(kw[k], "continue") == 0 ||
			    strcmp(kw[k], "fallthrough") == 0 ||
			    strcmp(kw[k], "return") == 0;
	return 1;
}

/*
 * The end of the item that starts at p[i] (up to n): after its
 * semicolon, or at the newline that ends it, or n.  *bad is set when a
 * literal, comment or bracket is left open.
 */
static size_t
item_end(const char *p, size_t n, size_t i, int *bad)
{
	int depth = 0, semi = 0;
	size_t s;

	for (;;) {
		s = i;
		switch (tok(p, n, &i)) {
		case T_END:
			if (depth != 0)
				*bad = 1;
			return n;
		case T_BAD:
			*bad = 1;
			return n;
		case T_NL:
			if (depth == 0 && semi)
				return s;
			break;
		case T_SPACE:
			break;
		case T_SEMI:
			if (depth == 0)
				return i;
			semi = 0;
			break;
		case T_OPEN:
			depth++;
			semi = 0;
			break;
		case T_CLOSE:
			if (depth > 0)
				depth--;
			semi = 1;
			break;
		case T_IDENT:
			semi = ends_line(p + s, i - s);
			break;
		case T_LIT:
		case T_INCDEC:
			semi = 1;
			break;
		case T_OP:
			semi = 0;
			break;
		}
	}
}

/* Past blanks, newlines and comments from p[i]. */
static size_t
skip_space(const char *p, size_t n, size_t i)
{
	size_t j = i;
	enum tk t;

	while ((t = tok(p, n, &j)) == T_SPACE || t == T_NL)
		i = j;
	return i;
}

/* The identifier at p[i] (after blanks): its length, *at its start. */
static size_t
ident_at(const char *p, size_t n, size_t i, size_t *at)
{
	size_t j;

	i = skip_space(p, n, i);
	*at = j = i;
	if (tok(p, n, &j) != T_IDENT || (p[i] >= '0' && p[i] <= '9'))
		return 0;
	return j - i;
}

/* Append " name" to *keys (not the blank identifier). */
static void
key_add(char **keys, const char *name, size_t len)
{
	size_t k = strlen(*keys);

	if (len == 0 || (len == 1 && name[0] == '_'))
		return;
	*keys = must(realloc(*keys, k + len + 2));
	memcpy(*keys + k, name, len);
	(*keys)[k + len] = ' ';
	(*keys)[k + len + 1] = '\0';
}

/* The index past the bracket that closes the one at p[i], or n. */
static size_t
close_of(const char *p, size_t n, size_t i)
{
	int depth = 0;
	enum tk t;

	do {
		t = tok(p, n, &i);
		if (t == T_OPEN)
			depth++;
		else if (t == T_CLOSE)
			depth--;
	} while (depth > 0 && t != T_END && t != T_BAD);
	return i;
}

/*
 * The names one spec of a var, const or type declares, from p[i] up to
 * n: the identifiers of its leading list (var, const) or its first one.
 */
static void
spec_keys(const char *p, size_t n, size_t i, int list, char **keys)
{
	size_t at, len, j;

	while ((len = ident_at(p, n, i, &at)) > 0) {
		key_add(keys, p + at, len);
		i = j = skip_space(p, n, at + len);
		if (!list || tok(p, n, &j) != T_OP || p[i] != ',')
			return;
		i = j;
	}
}

/* The names a group "( spec; spec )" from p[i] declares. */
static void
group_keys(const char *p, size_t n, size_t i, int list, char **keys)
{
	size_t e = close_of(p, n, i), s;
	int bad = 0;

	/* Between the brackets, specs are items of their own. */
	if (e > i + 1 && p[e - 1] == ')')
		e--;
	for (i++; (i = skip_space(p, e, i)) < e; i = s) {
		s = item_end(p, e, i, &bad);
		if (s == i)
			s = i + 1;
		spec_keys(p, s, i, list, keys);
	}
}

static char *
copy(const char *p, size_t n)
{
	char *s = must(malloc(n + 1));

	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static void
decl_add(struct rk_go *g, char *keys, char *text)
{
	g->v = must(realloc(g->v, (g->n + 1) * sizeof(*g->v)));
	g->v[g->n].keys = keys;
	g->v[g->n].text = text;
	g->n++;
}

static void
stmts_add(struct rk_go *g, const char *p, size_t n)
{
	g->stmts = must(realloc(g->stmts, g->slen + n + 2));
	memcpy(g->stmts + g->slen, p, n);
	g->slen += n;
	g->stmts[g->slen++] = '\n';
	g->stmts[g->slen] = '\0';
}

/* One import spec p[0..n) as a declaration keyed by its text. */
static void
import_add(struct rk_go *g, const char *p, size_t n)
{
	char *keys = must(calloc(1, 2)), *text;
	size_t k = 0;

	while (n > 0 && (p[n - 1] == ';' || p[n - 1] == ' ' ||
	    p[n - 1] == '\t' || p[n - 1] == '\r' || p[n - 1] == '\n'))
		n--;
	if (n == 0) {
		free(keys);
		return;
	}
	keys[0] = ' ';
	keys = must(realloc(keys, n + 10));
	memcpy(keys + 1, "import:", 7);
	k = 8;
	/* Its key: without blanks, or a comment after it. */
	for (size_t i = 0; i < n && !(p[i] == '/' && i + 1 < n &&
	    (p[i + 1] == '/' || p[i + 1] == '*')); i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			keys[k++] = p[i];
	keys[k++] = ' ';
	keys[k] = '\0';
	text = must(malloc(n + 8));
	memcpy(text, "import ", 7);
	memcpy(text + 7, p, n);
	text[n + 7] = '\0';
	decl_add(g, keys, text);
}

/* An import declaration p[i..e): each of its specs. */
static void
imports(struct rk_go *g, const char *p, size_t e, size_t i)
{
	size_t s, c;
	int bad = 0;

	i = skip_space(p, e, i);
	if (i < e && p[i] == '(') {
		c = close_of(p, e, i);
		if (c > i + 1 && p[c - 1] == ')')
			c--;
		for (i++; (i = skip_space(p, c, i)) < c; i = s) {
			s = item_end(p, c, i, &bad);
			if (s == i)
				s = i + 1;
			import_add(g, p + i, s - i);
		}
		return;
	}
	import_add(g, p + i, e - i);
}

/*
 * A func declaration p[s..e), "func" ending at i: 1, or 0 when it is a
 * func literal (a statement).
 */
static int
func_decl(struct rk_go *g, const char *p, size_t s, size_t e, size_t i)
{
	char *keys = must(calloc(1, 2));
	size_t at, len, rat = 0, rlen = 0, j, c;
	int depth = 0;
	enum tk t;

	keys[0] = ' ';
	i = skip_space(p, e, i);
	if (i < e && p[i] == '(') {
		/* A method: its receiver's type is the last name at depth 1. */
		c = close_of(p, e, i);
		for (j = i; j < c; ) {
			at = j;
			t = tok(p, c, &j);
			if (t == T_OPEN)
				depth++;
			else if (t == T_CLOSE)
				depth--;
			else if (t == T_IDENT && depth == 1) {
				rat = at;
				rlen = j - at;
			}
		}
		i = c;
	}
	if ((len = ident_at(p, e, i, &at)) == 0) {
		free(keys);
		return 0;
	}
	if (rlen > 0) {
		char *k = must(malloc(rlen + len + 2));

		memcpy(k, p + rat, rlen);
		k[rlen] = '.';
		memcpy(k + rlen + 1, p + at, len);
		key_add(&keys, k, rlen + len + 1);
		free(k);
	} else if (len == 4 && memcmp(p + at, "main", 4) == 0) {
		free(keys);
		free(g->main);
		g->main = copy(p + s, e - s);
		return 1;
	} else {
		key_add(&keys, p + at, len);
	}
	decl_add(g, keys, copy(p + s, e - s));
	return 1;
}

int
rk_go_parse(const char *code, size_t n, struct rk_go *g)
{
	size_t i = 0, e, at, len;
	int bad = 0;
	char *keys;

	if (g->stmts == NULL)
		g->stmts = must(calloc(1, 1));
	while ((i = skip_space(code, n, i)) < n) {
		if (code[i] == ';') {
			i++;
			continue;
		}
		e = item_end(code, n, i, &bad);
		if (e <= i)
			e = i + 1;
		len = ident_at(code, e, i, &at);
#define IS(w)	(len == sizeof(w) - 1 && memcmp(code + at, w, len) == 0)
		if (IS("package")) {
			/* The program says its own. */
		} else if (IS("import")) {
			imports(g, code, e, at + len);
		} else if (IS("func") && func_decl(g, code, i, e, at + len)) {
			/* kept as a declaration, or the cell's main */
		} else if (IS("type") || IS("var") || IS("const")) {
			int list = !IS("type");
			size_t j = skip_space(code, e, at + len);

			keys = must(calloc(1, 2));
			keys[0] = ' ';
			if (j < e && code[j] == '(')
				group_keys(code, e, j, list, &keys);
			else
				spec_keys(code, e, j, list, &keys);
			decl_add(g, keys, copy(code + i, e - i));
		} else {
			stmts_add(g, code + i, e - i);
		}
#undef IS
		i = e;
	}
	return bad ? -1 : 0;
}

/* Whether decl d shares a name with one of g's declarations. */
static int
replaced(const struct rk_go_decl *d, const struct rk_go *g)
{
	const char *k = d->keys + 1, *sp;
	char name[512];
	size_t len;

	for (; (sp = strchr(k, ' ')) != NULL; k = sp + 1) {
		len = (size_t)(sp - k);
		if (len == 0 || len > sizeof(name) - 3)
			continue;
		name[0] = ' ';
		memcpy(name + 1, k, len);
		name[len + 1] = ' ';
		name[len + 2] = '\0';
		for (size_t i = 0; i < g->n; i++)
			if (strstr(g->v[i].keys, name) != NULL)
				return 1;
	}
	return 0;
}

static int
is_import(const struct rk_go_decl *d)
{
	return strncmp(d->keys, " import:", 8) == 0;
}

struct buf {
	char	*p;
	size_t	 n;
};

static void
put(struct buf *b, const char *s, size_t n)
{
	b->p = must(realloc(b->p, b->n + n + 1));
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void
puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

char *
rk_go_program(const struct rk_go *kept, const struct rk_go *cell,
    size_t *len)
{
	struct buf b = { NULL, 0 };

	puts_(&b, "package main\n\n");
	/* Go wants the imports first. */
	for (int imp = 1; imp >= 0; imp--) {
		for (size_t i = 0; i < kept->n; i++)
			if (is_import(&kept->v[i]) == imp &&
			    !replaced(&kept->v[i], cell)) {
				puts_(&b, kept->v[i].text);
				puts_(&b, "\n\n");
			}
		for (size_t i = 0; i < cell->n; i++)
			if (is_import(&cell->v[i]) == imp) {
				puts_(&b, cell->v[i].text);
				puts_(&b, "\n\n");
			}
	}
	if (cell->main != NULL) {
		puts_(&b, cell->main);
		puts_(&b, "\n");
		/* Statements beside a main: the compiler says what is wrong. */
		if (cell->stmts != NULL)
			puts_(&b, cell->stmts);
	} else {
		puts_(&b, "func main() {\n");
		if (cell->stmts != NULL)
			puts_(&b, cell->stmts);
		puts_(&b, "}\n");
	}
	*len = b.n;
	return b.p;
}

void
rk_go_keep(struct rk_go *kept, struct rk_go *cell)
{
	/* One at a time: of a name declared twice in a cell, the last. */
	for (size_t c = 0; c < cell->n; c++) {
		struct rk_go one = { .v = &cell->v[c], .n = 1 };
		size_t k = 0;

		for (size_t i = 0; i < kept->n; i++) {
			if (replaced(&kept->v[i], &one)) {
				free(kept->v[i].keys);
				free(kept->v[i].text);
			} else {
				kept->v[k++] = kept->v[i];
			}
		}
		kept->n = k;
		decl_add(kept, cell->v[c].keys, cell->v[c].text);
	}
	free(cell->v);
	cell->v = NULL;
	cell->n = 0;
	rk_go_clear(cell);
}

void
rk_go_clear(struct rk_go *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->v[i].keys);
		free(g->v[i].text);
	}
	free(g->v);
	free(g->main);
	free(g->stmts);
	memset(g, 0, sizeof(*g));
}
