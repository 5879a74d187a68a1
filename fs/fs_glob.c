/*
 * fs_glob.c -- glob matching for file search (dialect in fs_glob.h).
 *
 * The pattern is first compiled into a small NFA, which is where every
 * syntax error is found, so that a malformed pattern is malformed for
 * every name.  The NFA is then run over the name one character at a time
 * with a bitset of active nodes (Thompson's construction): no
 * backtracking, hence no exponential cases such as "*a*a*a*a*b" or deeply
 * nested braces.  Braces are SPLIT nodes, not expansions.
 *
 * Epsilon edges always point forward in the node array, so the closure of
 * a set is computed in one ascending scan.
 *
 * "!(a|b)" is the one construct an NFA cannot do directly.  Its
 * alternatives are compiled into a sub-NFA of at most 64 nodes, and each
 * place where the negation starts spawns a "thread": the set of sub-NFA
 * nodes reached so far, in one 64-bit word.  Wherever a thread's set does
 * not hold the sub-NFA's end, the text it consumed matches no
 * alternative, so the node after the negation becomes active there.
 * Threads with equal sets behave alike from then on and are merged;
 * threads die at '/'.  Not for file name collation or locales: bytes and
 * UTF-8 code points only.
 *
 * Each call compiles, runs and frees its own NFA: no state outside the
 * call, so any thread may match at any time.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs_glob.h"

#define GLOB_DEPTH_MAX	32	/* nested {} and !() */
#define GLOB_NEG_MAX	16	/* !() groups in a pattern */
#define GLOB_NEG_NODES	64	/* sub-NFA nodes of one !() group */

enum gtype {
	G_LIT,		/* one character, lit[0..len) -> next */
	G_ANY,		/* one character but '/' -> next */
	G_CLASS,	/* one character in the class, never '/' -> next */
	G_STAR,		/* eps -> next; any character but '/' -> self */
	G_DDIR,		/* "**" "/": eps -> next; '/' -> self; else -> self+1 */
	G_DDIR2,	/* inside a segment of "**" "/": '/' -> self-1 */
	G_DEND,		/* final "**": eps -> next; any character -> self */
	G_OPTSLASH,	/* '/' before a final "**": '/' -> next; eps -> aux */
	G_SPLIT,	/* eps -> next and, unless -1, aux */
	G_JUMP,		/* eps -> next */
	G_NEG,		/* !(...): sub-NFA at self+1; continues at next */
	G_SUBEND,	/* end of a !() sub-NFA */
	G_END		/* the pattern matched */
};

struct gnode {
	unsigned char	 type;
	unsigned char	 neg;		/* G_CLASS: negated */
	unsigned char	 len;		/* G_LIT: bytes in lit */
	unsigned char	 lit[4];
	int		 next;
	int		 aux;		/* see enum gtype; G_CLASS: 1st range */
	int		 naux;		/* G_CLASS: ranges; G_NEG: group */
};

struct gneg {
	int		 node;		/* the G_NEG node */
	int		 base;		/* its first sub-NFA node */
	int		 count;		/* sub-NFA nodes, G_SUBEND last */
	uint64_t	 clo[GLOB_NEG_NODES];	/* epsilon closures */
	uint64_t	*th;		/* live threads, distinct sets */
	size_t		 nth, cap;
};

struct glob {
	const unsigned char *p;		/* the pattern */
	size_t		 len, i;
	struct gnode	*n;
	int		 nn, ncap;
	uint32_t	(*rg)[2];	/* class ranges, code points */
	int		 nrg;
	struct gneg	 neg[GLOB_NEG_MAX];
	int		 nneg;
	int		 depth;
	int		 in_neg;
};

enum { M_TOP, M_BRACE, M_NEG };

static size_t	 u8_decode(const unsigned char *, size_t, uint32_t *);
static int	 emit(struct glob *, int);
static int	 parse_seq(struct glob *, int, int);
static int	 parse_group(struct glob *, int, int);
static int	 parse_class(struct glob *);
static int	 class_char(struct glob *, uint32_t *);
static int	 parse_lit(struct glob *, int *);
static void	 neg_closures(struct glob *, struct gneg *);
static int	 class_has(const struct glob *, const struct gnode *,
		    uint32_t);
static int	 node_eats(const struct glob *, const struct gnode *,
		    const unsigned char *, size_t, uint32_t);
static void	 closure(struct glob *, uint64_t *);
static void	 thread_add(struct gneg *, uint64_t);
static void	 threads_step(struct glob *, struct gneg *,
		    const unsigned char *, size_t, uint32_t);
static int	 cmp_u64(const void *, const void *);
static int	 run(struct glob *, const unsigned char *, size_t);

#define BIT_SET(v, k)	((v)[(k) / 64] |= (uint64_t)1 << ((k) % 64))
#define BIT_HAS(v, k)	(((v)[(k) / 64] >> ((k) % 64)) & 1)

/*
 * One UTF-8 character at s (n > 0 bytes there): its length, and its code
 * point in *cp.  A byte that does not start a valid, shortest, non-
 * surrogate sequence is one character, 0xDC00 + byte (as Python's
 * surrogateescape), which no valid character can equal.
 */
static size_t
u8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len, k;
	uint32_t v, lo = 0x80, hi = 0xbf;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		v = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		v = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		goto bad;
	if (len > n)
		goto bad;
	for (k = 1; k < len; k++) {
		if (s[k] < lo || s[k] > hi)
			goto bad;
		lo = 0x80;
		hi = 0xbf;
		v = v << 6 | (s[k] & 0x3f);
	}
	*cp = v;
	return len;
bad:
	*cp = 0xdc00 + c;
	return 1;
}

/* Append a node of type t; its index.  Capacity was sized by the caller. */
static int
emit(struct glob *g, int t)
{
	struct gnode *nd;

	if (g->nn >= g->ncap)
		abort();	/* the bound in fs_glob_match() is wrong */
	nd = &g->n[g->nn];
	memset(nd, 0, sizeof(*nd));
	nd->type = (unsigned char)t;
	nd->next = g->nn + 1;
	nd->aux = -1;
	return g->nn++;
}

/* A literal character at g->i (escape already skipped); *slash if '/'. */
static int
parse_lit(struct glob *g, int *slash)
{
	uint32_t cp;
	size_t l = u8_decode(g->p + g->i, g->len - g->i, &cp);
	int k = emit(g, G_LIT);

	memcpy(g->n[k].lit, g->p + g->i, l);
	g->n[k].len = (unsigned char)l;
	g->i += l;
	*slash = cp == '/';
	return k;
}

/*
 * A sequence up to the end of the pattern (M_TOP), or up to the ',' or
 * '}' (M_BRACE) or '|' or ')' (M_NEG) that ends it, left unconsumed.
 * seg_start: the sequence begins a path segment.  0 or -EINVAL.
 */
static int
parse_seq(struct glob *g, int mode, int seg_start)
{
	int last_slash = -1, k, rc, slash;
	size_t run_len;
	unsigned char c;

	while (g->i < g->len) {
		c = g->p[g->i];
		if (mode == M_BRACE && (c == ',' || c == '}'))
			return 0;
		if (mode == M_NEG && (c == '|' || c == ')'))
			return 0;
		switch (c) {
		case '*':
			for (run_len = 0; g->i + run_len < g->len &&
			    g->p[g->i + run_len] == '*'; run_len++)
				;
			g->i += run_len;
			if (run_len == 2 && seg_start && !g->in_neg) {
				/* 1. "**" "/": zero or more whole segments. */
				if (g->i < g->len && g->p[g->i] == '/') {
					g->i++;
					k = emit(g, G_DDIR);
					g->n[k].next = k + 2;
					(void)emit(g, G_DDIR2);
					last_slash = -1;
					continue;	/* still seg_start */
				}
				/* 2. A final "**": everything left. */
				if (g->i == g->len && mode == M_TOP) {
					if (last_slash >= 0) {
						g->n[last_slash].type =
						    G_OPTSLASH;
						g->n[last_slash].aux =
						    g->nn + 1;
					}
					(void)emit(g, G_DEND);
					continue;
				}
			}
			/* 3. Anything else is one star. */
			(void)emit(g, G_STAR);
			seg_start = 0;
			last_slash = -1;
			continue;
		case '?':
			(void)emit(g, G_ANY);
			g->i++;
			break;
		case '[':
			if ((rc = parse_class(g)) < 0)
				return rc;
			break;
		case '{':
			if ((rc = parse_group(g, 0, seg_start)) < 0)
				return rc;
			break;
		case '!':
			if (g->i + 1 >= g->len || g->p[g->i + 1] != '(')
				return -EINVAL;
			if ((rc = parse_group(g, 1, 0)) < 0)
				return rc;
			break;
		case '\\':
			if (++g->i >= g->len)
				return -EINVAL;
			/* FALLTHROUGH */
		default:
			k = parse_lit(g, &slash);
			seg_start = slash;
			last_slash = slash ? k : -1;
			continue;
		}
		seg_start = 0;
		last_slash = -1;
	}
	return mode == M_TOP ? 0 : -EINVAL;	/* unclosed group */
}

/*
 * A "{...}" (neg 0) or "!(...)" (neg 1) group at g->i.  Each alternative
 * is SPLIT, its nodes, JUMP to the end; each SPLIT's aux is the next
 * SPLIT.  A !() group ends in G_SUBEND, where its JUMPs go.
 */
static int
parse_group(struct glob *g, int neg, int seg_start)
{
	int jumps = -1, s, j, target, gi = -1, rc;
	struct gneg *ng;
	unsigned char c;

	if (++g->depth > GLOB_DEPTH_MAX)
		return -EINVAL;
	if (neg) {
		if (g->in_neg || g->nneg >= GLOB_NEG_MAX)
			return -EINVAL;
		gi = emit(g, G_NEG);
		g->in_neg = 1;
		g->i += 2;
	} else
		g->i++;
	for (;;) {
		s = emit(g, G_SPLIT);
		rc = parse_seq(g, neg ? M_NEG : M_BRACE, seg_start);
		if (rc < 0)
			return rc;
		j = emit(g, G_JUMP);
		g->n[j].next = jumps;	/* a list, patched below */
		jumps = j;
		c = g->p[g->i++];
		if (c == '}' || c == ')')
			break;
		g->n[s].aux = g->nn;
	}
	target = neg ? emit(g, G_SUBEND) : g->nn;
	for (j = jumps; j >= 0; j = s) {
		s = g->n[j].next;
		g->n[j].next = target;
	}
	if (neg) {
		ng = &g->neg[g->nneg];
		ng->node = gi;
		ng->base = gi + 1;
		ng->count = g->nn - ng->base;
		if (ng->count > GLOB_NEG_NODES)
			return -EINVAL;
		g->n[gi].next = g->nn;
		g->n[gi].naux = g->nneg++;
		g->in_neg = 0;
	}
	g->depth--;
	return 0;
}

/* One class member at g->i, escape and UTF-8 aware, into *cp. */
static int
class_char(struct glob *g, uint32_t *cp)
{
	if (g->p[g->i] == '\\' && ++g->i >= g->len)
		return -EINVAL;
	g->i += u8_decode(g->p + g->i, g->len - g->i, cp);
	return 0;
}

/* A character class at g->i (the '['). */
static int
parse_class(struct glob *g)
{
	int k = emit(g, G_CLASS), items = 0;
	uint32_t lo, hi;

	g->n[k].aux = g->nrg;
	g->i++;
	if (g->i < g->len && (g->p[g->i] == '!' || g->p[g->i] == '^')) {
		g->n[k].neg = 1;
		g->i++;
	}
	for (;;) {
		if (g->i >= g->len)
			return -EINVAL;		/* unclosed, or "[]" */
		if (g->p[g->i] == ']' && items > 0) {
			g->i++;
			break;
		}
		if (class_char(g, &lo) < 0)
			return -EINVAL;
		hi = lo;
		if (g->i + 1 < g->len && g->p[g->i] == '-' &&
		    g->p[g->i + 1] != ']') {
			g->i++;
			if (class_char(g, &hi) < 0)
				return -EINVAL;
		}
		g->rg[g->nrg][0] = lo;
		g->rg[g->nrg][1] = hi;
		g->nrg++;
		items++;
	}
	g->n[k].naux = items;
	return 0;
}

/* Epsilon closures of a !() sub-NFA; edges point forward, so backwards. */
static void
neg_closures(struct glob *g, struct gneg *ng)
{
	const struct gnode *nd;
	uint64_t m;

	for (int r = ng->count - 1; r >= 0; r--) {
		nd = &g->n[ng->base + r];
		m = (uint64_t)1 << r;
		switch (nd->type) {
		case G_SPLIT:
			if (nd->aux >= 0)
				m |= ng->clo[nd->aux - ng->base];
			/* FALLTHROUGH */
		case G_STAR:
		case G_JUMP:
			m |= ng->clo[nd->next - ng->base];
			break;
		default:
			break;
		}
		ng->clo[r] = m;
	}
}

/* Whether code point cp is in the class node nd, negation applied. */
static int
class_has(const struct glob *g, const struct gnode *nd, uint32_t cp)
{
	int in = 0;

	for (int k = 0; k < nd->naux && !in; k++)
		in = g->rg[nd->aux + k][0] <= cp && cp <= g->rg[nd->aux + k][1];
	return in != nd->neg;
}

/*
 * Whether the one-character node nd (G_LIT, G_ANY, G_CLASS) consumes the
 * character c[0..l), code point cp.
 */
static int
node_eats(const struct glob *g, const struct gnode *nd,
    const unsigned char *c, size_t l, uint32_t cp)
{
	switch (nd->type) {
	case G_LIT:
		return nd->len == l && memcmp(nd->lit, c, l) == 0;
	case G_ANY:
		return cp != '/';
	case G_CLASS:
		return cp != '/' && class_has(g, nd, cp);
	default:
		return 0;
	}
}

/* Add set to a group's threads unless it is there already. */
static void
thread_add(struct gneg *ng, uint64_t set)
{
	for (size_t k = 0; k < ng->nth; k++)
		if (ng->th[k] == set)
			return;
	if (ng->nth == ng->cap) {
		ng->cap = ng->cap ? ng->cap * 2 : 8;
		ng->th = realloc(ng->th, ng->cap * sizeof(*ng->th));
		if (ng->th == NULL)
			abort();
	}
	ng->th[ng->nth++] = set;
}

/*
 * Close the active set v under epsilon edges, in one ascending scan
 * (edges point forward).  An active G_NEG spawns a thread here.
 */
static void
closure(struct glob *g, uint64_t *v)
{
	const struct gnode *nd;
	struct gneg *ng;
	uint64_t done, m, init;
	int w, words = (g->nn + 63) / 64, k;

	for (w = 0; w < words; w++) {
		done = 0;
		while ((m = v[w] & ~done) != 0) {
			k = w * 64 + __builtin_ctzll(m);
			done |= m & -m;
			nd = &g->n[k];
			switch (nd->type) {
			case G_SPLIT:
				if (nd->aux >= 0)
					BIT_SET(v, nd->aux);
				/* FALLTHROUGH */
			case G_STAR:
			case G_DDIR:
			case G_DEND:
			case G_JUMP:
				BIT_SET(v, nd->next);
				break;
			case G_OPTSLASH:
				BIT_SET(v, nd->aux);
				break;
			case G_NEG:
				ng = &g->neg[nd->naux];
				init = ng->clo[0];
				thread_add(ng, init);
				if (!(init >> (ng->count - 1) & 1))
					BIT_SET(v, nd->next);
				break;
			default:
				break;
			}
		}
	}
}

/* qsort() order of 64-bit sets. */
static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Move a group's threads over the character c[0..l); '/' ends them. */
static void
threads_step(struct glob *g, struct gneg *ng, const unsigned char *c,
    size_t l, uint32_t cp)
{
	const struct gnode *nd;
	uint64_t set, out;
	size_t k, kept;
	int r;

	if (cp == '/') {
		ng->nth = 0;
		return;
	}
	for (k = 0; k < ng->nth; k++) {
		set = ng->th[k];
		out = 0;
		while (set != 0) {
			r = __builtin_ctzll(set);
			set &= set - 1;
			nd = &g->n[ng->base + r];
			if (nd->type == G_STAR)
				out |= ng->clo[r];
			else if (node_eats(g, nd, c, l, cp))
				out |= ng->clo[nd->next - ng->base];
		}
		ng->th[k] = out;
	}
	if (ng->nth < 2)
		return;
	qsort(ng->th, ng->nth, sizeof(*ng->th), cmp_u64);
	for (k = 1, kept = 1; k < ng->nth; k++)
		if (ng->th[k] != ng->th[kept - 1])
			ng->th[kept++] = ng->th[k];
	ng->nth = kept;
}

/* Run the compiled pattern over s[0..n); 1 if it matches, else 0. */
static int
run(struct glob *g, const unsigned char *s, size_t n)
{
	int words = (g->nn + 63) / 64, k, w, alive, rc;
	uint64_t *cur, *nxt, *tmp, m;
	const struct gnode *nd;
	struct gneg *ng;
	size_t pos = 0, l;
	uint32_t cp;

	if ((cur = calloc(2 * (size_t)words, sizeof(*cur))) == NULL)
		abort();
	nxt = cur + words;
	BIT_SET(cur, 0);
	for (;;) {
		/* 1. A thread that matches no alternative lets text go on. */
		for (int q = 0; q < g->nneg; q++) {
			ng = &g->neg[q];
			for (size_t t = 0; t < ng->nth; t++)
				if (!(ng->th[t] >> (ng->count - 1) & 1)) {
					BIT_SET(cur, g->n[ng->node].next);
					break;
				}
		}
		/* 2. Epsilon closure, spawning threads. */
		closure(g, cur);
		if (pos == n)
			break;
		/* 3. Consume one character. */
		l = u8_decode(s + pos, n - pos, &cp);
		memset(nxt, 0, (size_t)words * sizeof(*nxt));
		for (w = 0; w < words; w++) {
			for (m = cur[w]; m != 0; m &= m - 1) {
				k = w * 64 + __builtin_ctzll(m);
				nd = &g->n[k];
				switch (nd->type) {
				case G_STAR:
					if (cp != '/')
						BIT_SET(nxt, k);
					break;
				case G_DDIR:
					BIT_SET(nxt, cp == '/' ? k : k + 1);
					break;
				case G_DDIR2:
					BIT_SET(nxt, cp == '/' ? k - 1 : k);
					break;
				case G_DEND:
					BIT_SET(nxt, k);
					break;
				case G_OPTSLASH:
					if (cp == '/')
						BIT_SET(nxt, nd->next);
					break;
				default:
					if (node_eats(g, nd, s + pos, l, cp))
						BIT_SET(nxt, nd->next);
					break;
				}
			}
		}
		alive = 0;
		for (int q = 0; q < g->nneg; q++) {
			threads_step(g, &g->neg[q], s + pos, l, cp);
			alive |= g->neg[q].nth > 0;
		}
		for (w = 0; w < words && !alive; w++)
			alive = nxt[w] != 0;
		tmp = cur;
		cur = nxt;
		nxt = tmp;
		pos += l;
		if (!alive)
			break;		/* nothing can match any more */
	}
	rc = pos == n && BIT_HAS(cur, g->nn - 1);
	free(cur < nxt ? cur : nxt);
	return rc;
}

/* See fs_glob.h. */
int
fs_glob_match(const char *pat, const char *name)
{
	struct glob g;
	size_t len = strnlen(pat, FS_GLOB_PAT_MAX + 1);
	int rc;

	if (len > FS_GLOB_PAT_MAX)
		return -EINVAL;
	memset(&g, 0, sizeof(g));
	g.p = (const unsigned char *)pat;
	g.len = len;
	/* At most two nodes per pattern byte (",": JUMP, SPLIT), plus END. */
	g.ncap = 2 * (int)len + 2;
	g.n = malloc((size_t)g.ncap * sizeof(*g.n));
	g.rg = malloc((len + 1) * sizeof(*g.rg));
	if (g.n == NULL || g.rg == NULL)
		abort();
	if ((rc = parse_seq(&g, M_TOP, 1)) == 0) {
		(void)emit(&g, G_END);
		for (int q = 0; q < g.nneg; q++)
			neg_closures(&g, &g.neg[q]);
		rc = run(&g, (const unsigned char *)name, strlen(name));
	}
	for (int q = 0; q < g.nneg; q++)
		free(g.neg[q].th);
	free(g.rg);
	free(g.n);
	return rc;
}
