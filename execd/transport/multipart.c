/*
 * multipart.c -- streaming multipart/form-data parsing (see multipart.h).
 *
 * A state machine fed bytes: preamble, delimiter line, header block,
 * body, and so on until the close delimiter, then an ignored epilogue.
 * It only parses: what the parts mean (upload metadata, files) is the
 * caller's business, in its callbacks.
 *
 * The body scan looks for CR with memchr() and hands everything before it
 * to the data callback in one run.  From a CR it matches the delimiter
 * "\r\n--boundary" byte by byte, then one more byte decides: "--" closes,
 * padding or a line end delimits, anything else means it was data after
 * all.  A match cut by the end of a feed keeps only a count: the bytes
 * held back are a prefix of the delimiter (and maybe one '-'), so if the
 * match then fails they are given back from the delimiter itself.  The
 * boundary has no CR, so the only place a new match can start within a
 * failed one is the byte that failed it.
 *
 * In the preamble a "--boundary" line with something else after the
 * padding is preamble too, as with Go's reader; later it is an error.
 *
 * The header block is the only thing copied, into a fixed 16 KiB buffer;
 * names and values are decoded into a second one.  libc only, no
 * logging; one thread per parser.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "multipart.h"

enum mp_state {
	S_PREAMBLE,	/* before the first delimiter */
	S_PAD,		/* after a delimiter: padding, then CRLF */
	S_PAD_CR,	/* after the CR of that CRLF */
	S_HEADERS,	/* a part's header block */
	S_BODY,		/* a part's body */
	S_EPILOGUE	/* after the close delimiter */
};

/* What one byte does to a delimiter match. */
enum { R_MORE, R_FAIL, R_DELIM, R_CLOSE };

struct mp {
	struct mp_cbs	 cbs;
	void		*arg;
	enum mp_state	 state;
	int		 err;		/* sticky error, or 0 */
	int		 parts;		/* delimiters seen (not the close) */
	char		 delim[4 + MP_BOUNDARY_MAX + 1]; /* "\r\n--" B "-" */
	size_t		 dlen;		/* of "\r\n--" B */
	size_t		 m;		/* delimiter bytes matched */
	size_t		 vstart;	/* 2: the match began with no CRLF */
	size_t		 hlen;		/* header block bytes so far */
	size_t		 lstart;	/* start of the current header line */
	char		 msg[64];
	char		 hbuf[MP_HDR_MAX];
	char		 sbuf[MP_HDR_MAX + 8];	/* decoded names, values */
};

static int	 fail(struct mp *, int, const char *);
static int	 cb_fail(struct mp *, int);
static int	 emit(struct mp *, const char *, size_t);
static int	 match_byte(struct mp *, unsigned char);
static int	 ieq(const char *, size_t, const char *);
static size_t	 param_value(const char *, size_t, size_t, char *, size_t,
		    size_t *);
static void	 cd_parse(struct mp *, const char *, size_t, size_t *,
		    const char **, const char **);
static int	 headers_done(struct mp *, size_t);
static int	 feed_preamble(struct mp *, const char *, size_t, size_t *);
static int	 feed_pad(struct mp *, const char *, size_t, size_t *);
static int	 feed_headers(struct mp *, const char *, size_t, size_t *);
static int	 feed_body(struct mp *, const char *, size_t, size_t *);

#define IS_WS(c)	((c) == ' ' || (c) == '\t')

/* Record the first error (rc < 0) and its message; return the error. */
static int
fail(struct mp *mp, int rc, const char *msg)
{
	if (mp->err == 0) {
		mp->err = rc;
		strncpy(mp->msg, msg, sizeof(mp->msg) - 1);
	}
	return mp->err;
}

/* A callback said stop: its value, or -ECANCELED if it was positive. */
static int
cb_fail(struct mp *mp, int rc)
{
	return fail(mp, rc < 0 ? rc : -ECANCELED, "stopped by a callback");
}

/* Body bytes to the data callback; 0 or its error. */
static int
emit(struct mp *mp, const char *p, size_t n)
{
	int rc;

	if (n == 0 || mp->cbs.data == NULL)
		return 0;
	if ((rc = mp->cbs.data(p, n, mp->arg)) != 0)
		return cb_fail(mp, rc);
	return 0;
}

/* Feed one byte to a delimiter match in progress (mp->m > 0). */
static int
match_byte(struct mp *mp, unsigned char c)
{
	if (mp->m < mp->dlen) {
		if (c != (unsigned char)mp->delim[mp->m])
			return R_FAIL;
		mp->m++;
		return R_MORE;
	}
	if (mp->m == mp->dlen) {
		if (IS_WS(c) || c == '\r' || c == '\n')
			return R_DELIM;
		if (c != '-')
			return R_FAIL;
		mp->m++;
		return R_MORE;
	}
	return c == '-' ? R_CLOSE : R_FAIL;
}

/* Whether s[0..n) is lit, ignoring ASCII case. */
static int
ieq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

/*
 * A parameter value at v[i] (of n): a quoted-string, backslash escapes
 * undone, or a token up to ';' or whitespace.  Writes at most cap bytes
 * to out, sets *len to the full decoded length; returns the index after.
 */
static size_t
param_value(const char *v, size_t n, size_t i, char *out, size_t cap,
    size_t *len)
{
	size_t o = 0;

	if (i < n && v[i] == '"') {
		for (i++; i < n && v[i] != '"'; i++, o++) {
			if (v[i] == '\\' && i + 1 < n)
				i++;
			if (o < cap)
				out[o] = v[i];
		}
		if (i < n)
			i++;	/* the closing quote; an open one runs out */
	} else {
		for (; i < n && v[i] != ';' && !IS_WS(v[i]); i++, o++)
			if (o < cap)
				out[o] = v[i];
	}
	*len = o;
	return i;
}

/*
 * The name and filename parameters of a Content-Disposition value v[0..n)
 * into mp->sbuf from *w on; the first of each counts.  Lenient: a
 * parameter without '=' is skipped, an unclosed quote runs to the end.
 */
static void
cd_parse(struct mp *mp, const char *v, size_t n, size_t *w,
    const char **name, const char **filename)
{
	size_t i = 0, ns, ne, at, len, cap;

	while (i < n && v[i] != ';')
		i++;			/* the disposition type */
	while (i < n) {
		for (i++; i < n && IS_WS(v[i]); i++)
			;
		for (ns = i; i < n && v[i] != '=' && v[i] != ';' &&
		    !IS_WS(v[i]); i++)
			;
		for (ne = i; i < n && IS_WS(v[i]); i++)
			;
		if (i < n && v[i] == '=') {
			for (i++; i < n && IS_WS(v[i]); i++)
				;
			at = *w;
			cap = sizeof(mp->sbuf) - 1 - at;
			i = param_value(v, n, i, mp->sbuf + at, cap, &len);
			if (len > cap)
				len = cap;	/* cannot happen: see hbuf */
			mp->sbuf[at + len] = '\0';
			if (*name == NULL && ieq(v + ns, ne - ns, "name")) {
				*name = mp->sbuf + at;
				*w = at + len + 1;
			} else if (*filename == NULL &&
			    ieq(v + ns, ne - ns, "filename")) {
				*filename = mp->sbuf + at;
				*w = at + len + 1;
			}
		}
		while (i < n && v[i] != ';')
			i++;
	}
}

/*
 * The header block mp->hbuf[0..blen) is complete (blen excludes the empty
 * line): unfold it, pick Content-Disposition and Content-Type, and call
 * the part callback.  0, -EINVAL for a malformed line, or its error.
 */
static int
headers_done(struct mp *mp, size_t blen)
{
	struct mp_part part;
	const char *name = NULL, *filename = NULL, *type = NULL;
	char *h = mp->hbuf;
	size_t i, ls, le, e, c, vs, w = 0;
	int seen_cd = 0, rc;

	/* 1. A line starting with a blank continues the one before. */
	for (i = 0; i + 1 < blen; i++)
		if (h[i] == '\n' && IS_WS(h[i + 1])) {
			h[i] = ' ';
			if (i > 0 && h[i - 1] == '\r')
				h[i - 1] = ' ';
		}
	/* 2. "Name: value" lines, each ending in LF (CR stripped). */
	for (ls = 0; ls < blen; ls = le + 1) {
		le = (size_t)((char *)memchr(h + ls, '\n', blen - ls) - h);
		e = le > ls && h[le - 1] == '\r' ? le - 1 : le;
		for (c = ls; c < e && h[c] != ':'; c++)
			if ((unsigned char)h[c] <= ' ' || h[c] == 0x7f)
				break;
		if (c == ls || c == e || h[c] != ':')
			return fail(mp, -EINVAL, "malformed MIME header line");
		for (vs = c + 1; vs < e && IS_WS(h[vs]); vs++)
			;
		while (e > vs && IS_WS(h[e - 1]))
			e--;
		if (ieq(h + ls, c - ls, "content-disposition")) {
			if (!seen_cd)
				cd_parse(mp, h + vs, e - vs, &w, &name,
				    &filename);
			seen_cd = 1;
		} else if (type == NULL && ieq(h + ls, c - ls,
		    "content-type")) {
			memcpy(mp->sbuf + w, h + vs, e - vs);
			mp->sbuf[w + e - vs] = '\0';
			type = mp->sbuf + w;
			w += e - vs + 1;
		}
	}
	/* 3. Report. */
	part.name = name != NULL ? name : "";
	part.filename = filename;
	part.type = type;
	if (mp->cbs.part != NULL && (rc = mp->cbs.part(&part, mp->arg)) != 0)
		return cb_fail(mp, rc);
	return 0;
}

/*
 * Preamble: discard bytes until a line (the first one may have no line
 * end before it) starting with the delimiter.  Bare LF lines count too.
 */
static int
feed_preamble(struct mp *mp, const char *p, size_t n, size_t *ip)
{
	size_t i = *ip;
	int r;

	while (i < n) {
		if (mp->m == 0) {
			if (p[i] == '\r')
				mp->m = 1;
			else if (p[i] == '\n')
				mp->m = 2;
			i++;
			continue;
		}
		if ((r = match_byte(mp, (unsigned char)p[i])) == R_MORE) {
			i++;
			continue;
		}
		mp->m = 0;
		if (r == R_FAIL)
			continue;	/* this byte may start a new match */
		if (r == R_CLOSE) {
			i++;
			mp->state = S_EPILOGUE;
		} else
			mp->state = S_PAD;
		break;
	}
	*ip = i;
	return 0;
}

/* After a delimiter: spaces and tabs, then CRLF or LF, then headers. */
static int
feed_pad(struct mp *mp, const char *p, size_t n, size_t *ip)
{
	size_t i = *ip;

	while (i < n) {
		if (mp->state == S_PAD && IS_WS(p[i])) {
			i++;
			continue;
		}
		if (mp->state == S_PAD && p[i] == '\r') {
			mp->state = S_PAD_CR;
			i++;
			continue;
		}
		if (p[i] != '\n' && mp->parts == 0) {
			mp->state = S_PREAMBLE;	/* a preamble line */
			mp->m = 0;
			break;
		}
		if (p[i] != '\n')
			return fail(mp, -EINVAL,
			    "malformed multipart delimiter line");
		mp->parts++;
		mp->state = S_HEADERS;
		mp->hlen = mp->lstart = 0;
		i++;
		break;
	}
	*ip = i;
	return 0;
}

/* A part's header block, line by line, up to an empty line. */
static int
feed_headers(struct mp *mp, const char *p, size_t n, size_t *ip)
{
	const char *q;
	size_t i = *ip, end, take, ll;
	int rc;

	while (i < n) {
		q = memchr(p + i, '\n', n - i);
		end = q != NULL ? (size_t)(q - p) + 1 : n;
		take = end - i;
		if (take > MP_HDR_MAX - mp->hlen)
			return fail(mp, -E2BIG,
			    "multipart header block over 16 KiB");
		memcpy(mp->hbuf + mp->hlen, p + i, take);
		mp->hlen += take;
		i = end;
		if (q == NULL)
			break;
		ll = mp->hlen - mp->lstart;
		if (ll == 1 || (ll == 2 && mp->hbuf[mp->lstart] == '\r')) {
			if ((rc = headers_done(mp, mp->lstart)) != 0)
				return rc;
			/* The body may start with "--boundary" at once. */
			mp->state = S_BODY;
			mp->m = mp->vstart = 2;
			break;
		}
		mp->lstart = mp->hlen;
	}
	*ip = i;
	return 0;
}

/* A part's body: data runs up to the next delimiter. */
static int
feed_body(struct mp *mp, const char *p, size_t n, size_t *ip)
{
	const char *q;
	size_t i = *ip, run = i, mb = i;
	int held = mp->m > mp->vstart;	/* matched in earlier feeds */
	int r, rc;

	while (i < n) {
		if (mp->m == 0) {
			if ((q = memchr(p + i, '\r', n - i)) == NULL) {
				i = n;
				break;
			}
			mb = (size_t)(q - p);
			i = mb + 1;
			mp->m = 1;
			mp->vstart = 0;
			held = 0;
			continue;
		}
		if ((r = match_byte(mp, (unsigned char)p[i])) == R_MORE) {
			i++;
			continue;
		}
		if (r == R_FAIL) {
			/*
			 * Data after all.  Bytes held from earlier feeds are
			 * given back from the delimiter, together with the
			 * ones of this feed that continued the match.
			 */
			if (held) {
				rc = emit(mp, mp->delim + mp->vstart,
				    mp->m - mp->vstart);
				if (rc != 0)
					return rc;
				run = i;
				held = 0;
			}
			mp->m = mp->vstart = 0;
			continue;	/* this byte may start a new match */
		}
		/* A delimiter ends the part. */
		if (!held && (rc = emit(mp, p + run, mb - run)) != 0)
			return rc;
		mp->m = mp->vstart = 0;
		if (mp->cbs.end != NULL && (rc = mp->cbs.end(mp->arg)) != 0)
			return cb_fail(mp, rc);
		if (r == R_CLOSE) {
			i++;
			mp->state = S_EPILOGUE;
		} else
			mp->state = S_PAD;
		*ip = i;
		return 0;
	}
	/* Out of input: hand over all but a partial delimiter. */
	if (!held && (rc = emit(mp, p + run, (mp->m > 0 ? mb : n) - run)) != 0)
		return rc;
	*ip = n;
	return 0;
}

/* See multipart.h. */
int
mp_boundary(const char *ct, char *out, size_t outlen)
{
	char val[MP_BOUNDARY_MAX + 1], bnd[MP_BOUNDARY_MAX + 1];
	size_t n = strlen(ct), i = 0, s, ns, ne, vlen, blen = 0;
	int found = 0;

	while (i < n && IS_WS(ct[i]))
		i++;
	for (s = i; i < n && ct[i] != ';' && !IS_WS(ct[i]); i++)
		;
	if (!ieq(ct + s, i - s, "multipart/form-data"))
		return -EINVAL;
	for (;;) {
		while (i < n && IS_WS(ct[i]))
			i++;
		if (i >= n)
			break;
		if (ct[i] != ';')
			return -EINVAL;
		for (i++; i < n && IS_WS(ct[i]); i++)
			;
		for (ns = i; i < n && ct[i] != '=' && ct[i] != ';' &&
		    !IS_WS(ct[i]); i++)
			;
		for (ne = i; i < n && IS_WS(ct[i]); i++)
			;
		if (i >= n || ct[i] != '=')
			continue;	/* "; x" with no value: skipped */
		for (i++; i < n && IS_WS(ct[i]); i++)
			;
		i = param_value(ct, n, i, val, sizeof(val), &vlen);
		if (!found && ieq(ct + ns, ne - ns, "boundary")) {
			found = 1;
			if ((blen = vlen) > MP_BOUNDARY_MAX)
				return -EINVAL;
			memcpy(bnd, val, blen);
		}
	}
	if (!found || blen == 0 || blen + 1 > outlen)
		return -EINVAL;
	for (i = 0; i < blen; i++)
		if ((unsigned char)bnd[i] < ' ' || bnd[i] == 0x7f)
			return -EINVAL;
	memcpy(out, bnd, blen);
	out[blen] = '\0';
	return 0;
}

/* See multipart.h. */
struct mp *
mp_new(const char *boundary, const struct mp_cbs *cbs, void *arg)
{
	size_t blen = strnlen(boundary, MP_BOUNDARY_MAX + 1);
	struct mp *mp;

	if (blen == 0 || blen > MP_BOUNDARY_MAX ||
	    strpbrk(boundary, "\r\n") != NULL) {
		errno = EINVAL;
		return NULL;
	}
	if ((mp = calloc(1, sizeof(*mp))) == NULL)
		return NULL;
	if (cbs != NULL)
		mp->cbs = *cbs;
	mp->arg = arg;
	memcpy(mp->delim, "\r\n--", 4);
	memcpy(mp->delim + 4, boundary, blen);
	mp->delim[4 + blen] = '-';
	mp->dlen = 4 + blen;
	mp->state = S_PREAMBLE;
	mp->m = 2;		/* the first delimiter needs no CRLF */
	return mp;
}

/* See multipart.h. */
int
mp_feed(struct mp *mp, const char *p, size_t n)
{
	size_t i = 0;
	int rc = 0;

	if (mp->err != 0)
		return mp->err;
	while (i < n && rc == 0) {
		switch (mp->state) {
		case S_PREAMBLE:
			rc = feed_preamble(mp, p, n, &i);
			break;
		case S_PAD:
		case S_PAD_CR:
			rc = feed_pad(mp, p, n, &i);
			break;
		case S_HEADERS:
			rc = feed_headers(mp, p, n, &i);
			break;
		case S_BODY:
			rc = feed_body(mp, p, n, &i);
			break;
		case S_EPILOGUE:
			return 0;
		}
	}
	return rc;
}

/* See multipart.h. */
int
mp_finish(struct mp *mp)
{
	if (mp->err != 0)
		return mp->err;
	if (mp->state != S_EPILOGUE)
		return fail(mp, -EINVAL, "multipart body is truncated");
	return 0;
}

/* See multipart.h. */
const char *
mp_error(const struct mp *mp)
{
	return mp->msg;
}

/* See multipart.h. */
void
mp_free(struct mp *mp)
{
	free(mp);
}
