/*
 * fs_regex.c -- extended regular expressions in linear time (Thompson's
 * construction, simulated as a set of states).
 *
 * A pattern is parsed by recursive descent into a small tree (groups
 * nest at most FS_REGEX_MAX_DEPTH deep; sequences and alternatives are
 * sibling lists, so long patterns do not recurse), the size of its
 * program is computed with saturation, and only a program that fits in
 * FS_REGEX_MAX_PROG instructions is emitted.  Matching keeps the set of
 * live instructions for every text position (a sparse set per step, each
 * instruction at most once), so it reads every byte once and never
 * backtracks: glibc's regexec can spend seconds on one line for patterns
 * such as (a|aa)*c, this cannot.
 *
 * Not for: submatch positions, backreferences, multibyte locales (bytes
 * are characters, as in the C locale).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_regex.h"

enum { N_SET, N_CAT, N_ALT, N_REP, N_ASSERT };
enum { A_BOL, A_EOL, A_WORDB, A_NWORDB, A_WBEG, A_WEND };
enum { I_SET, I_SPLIT, I_JMP, I_ASSERT, I_MATCH };

#define NONE	UINT32_MAX
/* Group and quantifier nesting both deepen the tree (and the recursion). */
#define MAX_HEIGHT	(4 * FS_REGEX_MAX_DEPTH)
#define INF	(-1)

struct node {
	int		 type;
	int		 a, b;		/* set or assert; REP: min, max */
	uint32_t	 kid, next;	/* first child, next sibling */
	size_t		 size;		/* instructions, saturated */
	int		 height;	/* of the subtree: recursion depth */
};

struct inst {
	int		 op;
	uint32_t	 x, y;		/* set, assert, or targets */
};

/* A set of instruction numbers with O(1) clear (Briggs and Torczon). */
struct sset {
	uint32_t	*dense, *sparse;
	size_t		 n;
};

struct fs_regex {
	struct inst	*prog;
	size_t		 len;
	uint32_t	(*sets)[8];
	size_t		 nsets;
	struct sset	 l[2];
	uint32_t	*stack;
};

struct parse {
	const char	*p, *end;
	unsigned	 flags;
	struct node	*nodes;
	size_t		 nnodes, cap;
	uint32_t	(*sets)[8];
	size_t		 nsets, setcap;
	int		 depth;
	char		*err;
	size_t		 errlen;
};

static int	 fail(struct parse *, const char *);
static uint32_t	 node_new(struct parse *, int);
static int	 set_new(struct parse *);
static void	 set_add(struct parse *, int, unsigned);
static int	 set_class(struct parse *, int, const char *, size_t);
static uint32_t	 parse_alt(struct parse *);
static uint32_t	 parse_cat(struct parse *);
static uint32_t	 parse_atom(struct parse *);
static int	 parse_bracket(struct parse *, int);
static int	 parse_interval(struct parse *, int *, int *);
static size_t	 size_of(struct parse *, uint32_t);
static void	 emit(struct fs_regex *, const struct parse *, uint32_t);
static uint32_t	 put(struct fs_regex *, int, uint32_t, uint32_t);
static bool	 is_word(int);
static bool	 holds(uint32_t, const unsigned char *, size_t, size_t);
static int	 add(struct fs_regex *, struct sset *, uint32_t,
		    const unsigned char *, size_t, size_t);

/* Note a syntax error; always -1. */
static int
fail(struct parse *ps, const char *msg)
{
	if (ps->err[0] == '\0')
		snprintf(ps->err, ps->errlen, "%s", msg);
	return -1;
}

/* A new tree node of type, or NONE (out of room: a message is set). */
static uint32_t
node_new(struct parse *ps, int type)
{
	struct node *n;

	if (ps->nnodes == ps->cap) {
		fail(ps, "pattern is too large");
		return NONE;
	}
	n = &ps->nodes[ps->nnodes];
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->kid = n->next = NONE;
	return (uint32_t)ps->nnodes++;
}

/* A new empty byte set, or -1. */
static int
set_new(struct parse *ps)
{
	if (ps->nsets == ps->setcap)
		return fail(ps, "pattern is too large");
	memset(ps->sets[ps->nsets], 0, sizeof(ps->sets[0]));
	return (int)ps->nsets++;
}

/* Add byte c to set s, both cases of a letter when ignoring case. */
static void
set_add(struct parse *ps, int s, unsigned c)
{
	ps->sets[s][c >> 5] |= 1u << (c & 31);
	if (!(ps->flags & FS_REGEX_ICASE))
		return;
	if (c >= 'a' && c <= 'z')
		c -= 'a' - 'A';
	else if (c >= 'A' && c <= 'Z')
		c += 'a' - 'A';
	ps->sets[s][c >> 5] |= 1u << (c & 31);
}

/* Add the bytes of the [:name:] class to set s; -1 if unknown. */
static int
set_class(struct parse *ps, int s, const char *name, size_t n)
{
	static const char *names[] = { "alpha", "digit", "alnum", "upper",
	    "lower", "space", "blank", "punct", "print", "graph", "cntrl",
	    "xdigit" };
	size_t k;
	bool in;

	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (strlen(names[k]) == n && memcmp(names[k], name, n) == 0)
			break;
	if (k == sizeof(names) / sizeof(names[0]))
		return fail(ps, "invalid character class name");
	for (unsigned c = 0; c < 128; c++) {
		bool up = c >= 'A' && c <= 'Z', lo = c >= 'a' && c <= 'z',
		    dig = c >= '0' && c <= '9', gr = c > 0x20 && c < 0x7f;

		switch (k) {
		case 0: in = up || lo; break;
		case 1: in = dig; break;
		case 2: in = up || lo || dig; break;
		case 3: in = up; break;
		case 4: in = lo; break;
		case 5: in = c == ' ' || (c >= '\t' && c <= '\r'); break;
		case 6: in = c == ' ' || c == '\t'; break;
		case 7: in = gr && !up && !lo && !dig; break;
		case 8: in = gr || c == ' '; break;
		case 9: in = gr; break;
		case 10: in = c < 0x20 || c == 0x7f; break;
		default: in = dig || (c >= 'a' && c <= 'f') ||
			    (c >= 'A' && c <= 'F'); break;
		}
		/* [:upper:] and [:lower:] take both cases when ignoring it. */
		if (in)
			set_add(ps, s, c);
	}
	return 0;
}

/* alt := cat ('|' cat)* */
static uint32_t
parse_alt(struct parse *ps)
{
	uint32_t first, alt, last, c;

	if ((first = parse_cat(ps)) == NONE)
		return NONE;
	if (ps->p == ps->end || *ps->p != '|')
		return first;
	if ((alt = node_new(ps, N_ALT)) == NONE)
		return NONE;
	ps->nodes[alt].kid = last = first;
	while (ps->p < ps->end && *ps->p == '|') {
		ps->p++;
		if ((c = parse_cat(ps)) == NONE)
			return NONE;
		ps->nodes[last].next = c;
		last = c;
	}
	for (c = first; c != NONE; c = ps->nodes[c].next)
		if (ps->nodes[c].height >= ps->nodes[alt].height)
			ps->nodes[alt].height = ps->nodes[c].height + 1;
	return alt;
}

/* cat := (atom quantifier*)*, up to '|', a closing ')' or the end. */
static uint32_t
parse_cat(struct parse *ps)
{
	uint32_t cat, last = NONE, atom, rep;
	int min, max;
	char c;

	if ((cat = node_new(ps, N_CAT)) == NONE)
		return NONE;
	while (ps->p < ps->end && *ps->p != '|' &&
	    !(*ps->p == ')' && ps->depth > 0)) {
		if ((atom = parse_atom(ps)) == NONE)
			return NONE;
		while (ps->p < ps->end && ((c = *ps->p) == '*' || c == '+' ||
		    c == '?' || c == '{')) {
			if (ps->nodes[atom].type == N_ASSERT &&
			    ps->nodes[atom].a == A_BOL) {
				fail(ps, "invalid preceding regular "
				    "expression");
				return NONE;
			}
			ps->p++;
			min = c == '+' ? 1 : 0;
			max = c == '?' ? 1 : INF;
			if (c == '{' && parse_interval(ps, &min, &max) < 0)
				return NONE;
			if ((rep = node_new(ps, N_REP)) == NONE)
				return NONE;
			ps->nodes[rep].kid = atom;
			ps->nodes[rep].a = min;
			ps->nodes[rep].b = max;
			ps->nodes[rep].height = ps->nodes[atom].height + 1;
			if (ps->nodes[rep].height > MAX_HEIGHT) {
				fail(ps, "pattern nests too deep");
				return NONE;
			}
			atom = rep;
		}
		if (ps->nodes[atom].height >= ps->nodes[cat].height)
			ps->nodes[cat].height = ps->nodes[atom].height + 1;
		if (last == NONE)
			ps->nodes[cat].kid = atom;
		else
			ps->nodes[last].next = atom;
		last = atom;
	}
	return cat;
}

/* {m}, {m,}, {m,n} or {,n}, the '{' already read: 0 or -1. */
static int
parse_interval(struct parse *ps, int *min, int *max)
{
	int v[2] = { -1, -1 }, k = 0;

	for (;;) {
		if (ps->p == ps->end)
			return fail(ps, "unmatched {");
		if (*ps->p >= '0' && *ps->p <= '9') {
			if (v[k] < 0)
				v[k] = 0;
			v[k] = v[k] * 10 + (*ps->p - '0');
			if (v[k] > FS_REGEX_DUP_MAX)
				return fail(ps, "repetition count too large "
				    "(at most 255)");
		} else if (*ps->p == ',' && k == 0) {
			k = 1;
		} else if (*ps->p == '}') {
			break;
		} else {
			return fail(ps, "unmatched {");
		}
		ps->p++;
	}
	ps->p++;
	if (k == 0 && v[0] < 0)
		return fail(ps, "invalid content of {}");
	*min = v[0] < 0 ? 0 : v[0];
	*max = k == 0 ? *min : v[1];
	if (*max != INF && *max < *min)
		return fail(ps, "invalid content of {}");
	return 0;
}

/* One atom: a group, a bracket, '.', an anchor, an escape or a byte. */
static uint32_t
parse_atom(struct parse *ps)
{
	uint32_t n;
	int s, a = -1;
	unsigned char c = (unsigned char)*ps->p;
	bool esc = false;

	switch (c) {
	case '*': case '+': case '?': case '{':
		fail(ps, "invalid preceding regular expression");
		return NONE;
	case '(':
		if (++ps->depth > FS_REGEX_MAX_DEPTH) {
			fail(ps, "groups nest too deep");
			return NONE;
		}
		ps->p++;
		if ((n = parse_alt(ps)) == NONE)
			return NONE;
		if (ps->p == ps->end) {
			fail(ps, "unmatched ( or \\(");
			return NONE;
		}
		ps->p++;
		ps->depth--;
		return n;
	case '^':
		a = A_BOL;
		break;
	case '$':
		a = A_EOL;
		break;
	case '\\':
		if (ps->p + 1 == ps->end) {
			fail(ps, "trailing backslash");
			return NONE;
		}
		c = (unsigned char)*++ps->p;
		esc = true;
		if (c >= '1' && c <= '9') {
			fail(ps, "backreferences (\\1 to \\9) are not "
			    "supported");
			return NONE;
		}
		switch (c) {
		case 'b': a = A_WORDB; break;
		case 'B': a = A_NWORDB; break;
		case '<': a = A_WBEG; break;
		case '>': a = A_WEND; break;
		case '`': a = A_BOL; break;
		case '\'': a = A_EOL; break;
		}
		break;
	}
	if (a >= 0) {
		ps->p++;
		if ((n = node_new(ps, N_ASSERT)) != NONE)
			ps->nodes[n].a = a;
		return n;
	}
	if ((s = set_new(ps)) < 0 || (n = node_new(ps, N_SET)) == NONE)
		return NONE;
	ps->nodes[n].a = s;
	if (c == '[' && !esc) {
		ps->p++;
		if (parse_bracket(ps, s) < 0)
			return NONE;
		return n;
	}
	ps->p++;
	if (c == '.' && !esc) {
		for (unsigned b = 0; b < 256; b++)
			if (b != '\n')
				set_add(ps, s, b);
	} else if (esc && (c == 'w' || c == 'W' || c == 's' || c == 'S')) {
		bool word = c == 'w' || c == 'W', pos = c == 'w' || c == 's';

		for (unsigned b = 0; b < 256; b++) {
			bool in = word ? is_word((int)b) : (b == ' ' ||
			    (b >= '\t' && b <= '\r'));

			if (in == pos && b != '\n')
				ps->sets[s][b >> 5] |= 1u << (b & 31);
		}
	} else {
		set_add(ps, s, c);
	}
	return n;
}

/*
 * The rest of a bracket expression after '[' into set s: 0 or -1.
 * Steps: 1. '^' negates and ']' first is a literal; 2. classes, [=c=],
 * [.c.], ranges and bytes up to ']'; 3. negate, never matching newline.
 */
static int
parse_bracket(struct parse *ps, int s)
{
	bool neg = false, first = true;
	unsigned lo, hi;
	const char *close;
	char kind;

	/* 1. */
	if (ps->p < ps->end && *ps->p == '^') {
		neg = true;
		ps->p++;
	}
	/* 2. */
	for (;;) {
		if (ps->p == ps->end)
			return fail(ps, "unmatched [, [^, [:, [., or [=");
		if (*ps->p == ']' && !first)
			break;
		first = false;
		if (*ps->p == '[' && ps->p + 1 < ps->end && (ps->p[1] == ':' ||
		    ps->p[1] == '=' || ps->p[1] == '.')) {
			kind = ps->p[1];
			close = NULL;
			for (const char *q = ps->p + 2; q + 1 < ps->end; q++)
				if (q[0] == kind && q[1] == ']') {
					close = q;
					break;
				}
			if (close == NULL)
				return fail(ps, "unmatched [, [^, [:, [., "
				    "or [=");
			if (kind == ':') {
				if (set_class(ps, s, ps->p + 2,
				    (size_t)(close - ps->p - 2)) < 0)
					return -1;
				ps->p = close + 2;
				continue;
			}
			if (close - ps->p != 3)
				return fail(ps, "invalid collation character");
			lo = (unsigned char)ps->p[2];
			ps->p = close + 2;
		} else {
			lo = (unsigned char)*ps->p++;
		}
		hi = lo;
		if (ps->p + 1 < ps->end && ps->p[0] == '-' && ps->p[1] != ']') {
			ps->p++;
			if (*ps->p == '[' && ps->p + 3 < ps->end &&
			    (ps->p[1] == '.' || ps->p[1] == '=') &&
			    ps->p[3] == ps->p[1] && ps->p[4] == ']') {
				hi = (unsigned char)ps->p[2];
				ps->p += 5;
			} else {
				hi = (unsigned char)*ps->p++;
			}
			if (hi < lo)
				return fail(ps, "invalid range end");
		}
		for (unsigned c = lo; c <= hi; c++)
			set_add(ps, s, c);
	}
	ps->p++;
	/* 3. */
	if (neg) {
		for (int i = 0; i < 8; i++)
			ps->sets[s][i] = ~ps->sets[s][i];
		ps->sets[s]['\n' >> 5] &= ~(1u << ('\n' & 31));
	}
	return 0;
}

/* Instructions node n emits, saturated past FS_REGEX_MAX_PROG. */
static size_t
size_of(struct parse *ps, uint32_t n)
{
	struct node *nd = &ps->nodes[n];
	size_t sum = 0, k, kids = 0, cap = FS_REGEX_MAX_PROG + 1;

	switch (nd->type) {
	case N_SET:
	case N_ASSERT:
		sum = 1;
		break;
	case N_CAT:
	case N_ALT:
		for (uint32_t c = nd->kid; c != NONE; c = ps->nodes[c].next) {
			sum += size_of(ps, c);
			kids++;
			if (sum > cap)
				sum = cap;
		}
		if (nd->type == N_ALT)
			sum += 2 * (kids - 1);
		break;
	case N_REP:
		if ((k = size_of(ps, nd->kid)) == 0)
			break;
		if (nd->b == INF)
			sum = nd->a == 0 ? k + 2 : (size_t)nd->a * k + 1;
		else
			sum = (size_t)nd->a * k + (size_t)(nd->b - nd->a) *
			    (k + 1);
		break;
	}
	if (sum > cap)
		sum = cap;
	ps->nodes[n].size = sum;
	return sum;
}

/* Append an instruction; the program was sized, so it fits. */
static uint32_t
put(struct fs_regex *re, int op, uint32_t x, uint32_t y)
{
	re->prog[re->len].op = op;
	re->prog[re->len].x = x;
	re->prog[re->len].y = y;
	return (uint32_t)re->len++;
}

/*
 * Emit node n.  Jumps still to be aimed are chained through their x (or
 * y) fields, then aimed at the instruction that follows.
 */
static void
emit(struct fs_regex *re, const struct parse *ps, uint32_t n)
{
	const struct node *nd = &ps->nodes[n];
	uint32_t c, at, chain = NONE, next;

	if (nd->size == 0)
		return;
	switch (nd->type) {
	case N_SET:
		put(re, I_SET, (uint32_t)nd->a, 0);
		break;
	case N_ASSERT:
		put(re, I_ASSERT, (uint32_t)nd->a, 0);
		break;
	case N_CAT:
		for (c = nd->kid; c != NONE; c = ps->nodes[c].next)
			emit(re, ps, c);
		break;
	case N_ALT:
		for (c = nd->kid; c != NONE; c = ps->nodes[c].next) {
			if (ps->nodes[c].next == NONE) {
				emit(re, ps, c);
				break;
			}
			at = put(re, I_SPLIT, (uint32_t)re->len + 1, 0);
			emit(re, ps, c);
			chain = put(re, I_JMP, chain, 0);
			re->prog[at].y = (uint32_t)re->len;
		}
		for (; chain != NONE; chain = next) {
			next = re->prog[chain].x;
			re->prog[chain].x = (uint32_t)re->len;
		}
		break;
	case N_REP:
		for (int i = 0; i < nd->a - (nd->b == INF ? 1 : 0); i++)
			emit(re, ps, nd->kid);
		if (nd->b == INF && nd->a > 0) {
			/* e{m,}: the last copy loops. */
			at = (uint32_t)re->len;
			emit(re, ps, nd->kid);
			put(re, I_SPLIT, at, (uint32_t)re->len + 1);
		} else if (nd->b == INF) {
			at = put(re, I_SPLIT, (uint32_t)re->len + 1, 0);
			emit(re, ps, nd->kid);
			put(re, I_JMP, at, 0);
			re->prog[at].y = (uint32_t)re->len;
		} else {
			for (int i = nd->a; i < nd->b; i++) {
				at = put(re, I_SPLIT, (uint32_t)re->len + 1,
				    chain);
				chain = at;
				emit(re, ps, nd->kid);
			}
			for (; chain != NONE; chain = next) {
				next = re->prog[chain].y;
				re->prog[chain].y = (uint32_t)re->len;
			}
		}
		break;
	}
}

/* Compile a pattern; see fs_regex.h. */
int
fs_regex_compile(const char *pattern, unsigned flags, struct fs_regex **out,
    char *err, size_t errlen)
{
	struct parse ps;
	struct fs_regex *re = NULL;
	size_t plen = strlen(pattern);
	uint32_t root;
	char dummy[1];
	int rc = -EINVAL;

	if (err == NULL || errlen == 0) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	memset(&ps, 0, sizeof(ps));
	ps.err = err;
	ps.errlen = errlen;
	if (plen > FS_REGEX_MAX_LEN) {
		snprintf(err, errlen, "pattern is too long (at most %d bytes)",
		    FS_REGEX_MAX_LEN);
		return -EINVAL;
	}
	ps.p = pattern;
	ps.end = pattern + plen;
	ps.flags = flags;
	/* Every byte makes at most two nodes and one set. */
	ps.cap = 2 * plen + 2;
	ps.setcap = plen + 1;
	if ((ps.nodes = calloc(ps.cap, sizeof(*ps.nodes))) == NULL ||
	    (ps.sets = calloc(ps.setcap, sizeof(*ps.sets))) == NULL)
		goto nomem;
	if ((root = parse_alt(&ps)) == NONE)
		goto out;
	if (ps.p != ps.end) {		/* cannot happen: ')' ends depth 0 */
		snprintf(err, errlen, "unmatched ) or \\)");
		goto out;
	}
	if (size_of(&ps, root) + 1 > FS_REGEX_MAX_PROG) {
		snprintf(err, errlen, "pattern is too large once its "
		    "repetitions are expanded (at most %d instructions)",
		    FS_REGEX_MAX_PROG);
		goto out;
	}
	if ((re = calloc(1, sizeof(*re))) == NULL ||
	    (re->prog = calloc(ps.nodes[root].size + 1,
	    sizeof(*re->prog))) == NULL)
		goto nomem;
	emit(re, &ps, root);
	put(re, I_MATCH, 0, 0);
	re->sets = (uint32_t (*)[8])ps.sets;
	re->nsets = ps.nsets;
	ps.sets = NULL;
	for (int i = 0; i < 2; i++)
		if ((re->l[i].dense = calloc(re->len,
		    sizeof(uint32_t))) == NULL ||
		    (re->l[i].sparse = calloc(re->len,
		    sizeof(uint32_t))) == NULL)
			goto nomem;
	/* Each instruction is visited once per step and pushes two. */
	if ((re->stack = calloc(2 * re->len + 1, sizeof(uint32_t))) == NULL)
		goto nomem;
	*out = re;
	re = NULL;
	rc = 0;
	goto out;
nomem:
	snprintf(err, errlen, "out of memory");
	rc = -ENOMEM;
out:
	fs_regex_free(re);
	free(ps.sets);
	free(ps.nodes);
	return rc;
}

static bool
is_word(int c)
{
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z');
}

/* Whether assertion a holds at position i of the n bytes at s. */
static bool
holds(uint32_t a, const unsigned char *s, size_t n, size_t i)
{
	bool wp = i > 0 && is_word(s[i - 1]), wn = i < n && is_word(s[i]);

	switch (a) {
	case A_BOL: return i == 0;
	case A_EOL: return i == n;
	case A_WORDB: return wp != wn;
	case A_NWORDB: return wp == wn;
	case A_WBEG: return !wp && wn;
	default: return wp && !wn;
	}
}

/*
 * Add instruction pc to the set l for position i, following jumps,
 * splits and assertions that hold; 1 if that reaches the match.
 */
static int
add(struct fs_regex *re, struct sset *l, uint32_t pc,
    const unsigned char *s, size_t n, size_t i)
{
	size_t top = 0;
	const struct inst *in;

	re->stack[top++] = pc;
	while (top > 0) {
		pc = re->stack[--top];
		if (l->sparse[pc] < l->n && l->dense[l->sparse[pc]] == pc)
			continue;
		l->sparse[pc] = (uint32_t)l->n;
		l->dense[l->n++] = pc;
		in = &re->prog[pc];
		switch (in->op) {
		case I_MATCH:
			return 1;
		case I_JMP:
			re->stack[top++] = in->x;
			break;
		case I_SPLIT:
			re->stack[top++] = in->y;
			re->stack[top++] = in->x;
			break;
		case I_ASSERT:
			if (holds(in->x, s, n, i))
				re->stack[top++] = pc + 1;
			break;
		}
	}
	return 0;
}

/* Search the text for a match; see fs_regex.h. */
int
fs_regex_match(struct fs_regex *re, const char *text, size_t n,
    fs_regex_check_cb *check, void *arg)
{
	const unsigned char *s = (const unsigned char *)text;
	struct sset *cur = &re->l[0], *nxt = &re->l[1], *t;
	const struct inst *in;
	unsigned c;
	int rc;

	n = strnlen(text, n);
	cur->n = 0;
	for (size_t i = 0;; i++) {
		/* A match may start at every position. */
		if (add(re, cur, 0, s, n, i))
			return 1;
		if (i == n)
			return 0;
		if (check != NULL && i % FS_REGEX_CHECK == FS_REGEX_CHECK - 1 &&
		    (rc = check(arg)) < 0)
			return rc;
		c = s[i];
		nxt->n = 0;
		for (size_t k = 0; k < cur->n; k++) {
			in = &re->prog[cur->dense[k]];
			if (in->op == I_SET &&
			    (re->sets[in->x][c >> 5] >> (c & 31) & 1) &&
			    add(re, nxt, cur->dense[k] + 1, s, n, i + 1))
				return 1;
		}
		t = cur;
		cur = nxt;
		nxt = t;
	}
}

size_t
fs_regex_size(const struct fs_regex *re)
{
	return re->len;
}

void
fs_regex_free(struct fs_regex *re)
{
	if (re == NULL)
		return;
	for (int i = 0; i < 2; i++) {
		free(re->l[i].dense);
		free(re->l[i].sparse);
	}
	free(re->stack);
	free(re->sets);
	free(re->prog);
	free(re);
}
