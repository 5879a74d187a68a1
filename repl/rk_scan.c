/*
 * rk_scan.c -- cutting a REPL's output into events (rk_scan.h).
 *
 * Three states: plain text; inside a value (until result_close); inside
 * an error (while lines start with its continuation prefix).  The state
 * carries across lines, never across runs: the end marker closes what is
 * open.
 */
#include <stdlib.h>
#include <string.h>

#include "../util/must.h"
#include "../util/utf8.h"
#include "rk_scan.h"

enum state { S_TEXT, S_VALUE, S_ERROR };

struct rk_scan {
	const struct rk_desc	*d;
	bool			 plain;
	size_t			 cap;
	rk_scan_cb		*cb;
	void			*arg;
	char			*line;		/* a partial line */
	size_t			 len;
	enum state		 st;
	char			*val;		/* a value being framed */
	size_t			 vlen, vcap;
	const struct rk_error	*err;		/* an error being gathered */
	char			*evalue;
	json_t			*tb;
};

static void	line_in(struct rk_scan *, const char *, size_t);
static void	emit_text(struct rk_scan *, const char *, size_t);
static void	close_open(struct rk_scan *);

/* A new scanner. */
struct rk_scan *
rk_scan_new(const struct rk_desc *d, bool plain, size_t cap, rk_scan_cb *cb,
    void *arg)
{
	struct rk_scan *s = must(calloc(1, sizeof(*s)));

	s->d = d;
	s->plain = plain;
	s->cap = cap < 64 ? 64 : cap;
	s->cb = cb;
	s->arg = arg;
	s->line = must(malloc(s->cap));
	return s;
}

void
rk_scan_free(struct rk_scan *s)
{
	if (s == NULL)
		return;
	free(s->line);
	free(s->val);
	free(s->evalue);
	json_decref(s->tb);
	free(s);
}

static void
emit_text(struct rk_scan *s, const char *p, size_t n)
{
	struct rk_ev ev = { RK_EV_TEXT, p, n, NULL, NULL, NULL, 0 };

	if (n > 0)
		s->cb(s->arg, &ev);
}

/* Append to the value being framed, within the cap (the rest is cut). */
static void
val_add(struct rk_scan *s, const char *p, size_t n)
{
	if (s->vlen + n > s->cap)
		n = s->cap - s->vlen;
	if (n == 0)
		return;		/* val may still be NULL */
	if (s->vlen + n > s->vcap) {
		s->vcap = s->cap;
		s->val = must(realloc(s->val, s->vcap));
	}
	memcpy(s->val + s->vlen, p, n);
	s->vlen += n;
}

/* p[0..n) as a C string of valid UTF-8: '?' for NULs and bad bytes. */
char *
rk_scan_scrub(const char *p, size_t n)
{
	char *t = must(malloc(n + 1));

	for (size_t i = 0; i < n; i++)
		t[i] = p[i] != '\0' ? p[i] : '?';
	t[n] = '\0';
	utf8_scrub(t);
	return t;
}

/* A line of an error: into its traceback (and its message, if none). */
static void
err_add(struct rk_scan *s, const char *p, size_t n)
{
	char *t;

	if (n > 0 && p[n - 1] == '\n')
		n--;
	if (n > 0 && p[n - 1] == '\r')
		n--;
	if (json_array_size(s->tb) >= 1000 ||
	    (n == 0 && json_array_size(s->tb) == 0))
		return;
	t = rk_scan_scrub(p, n);
	json_array_append_new(s->tb, must(json_string(t)));
	if (s->evalue[0] == '\0' && n > 0) {
		free(s->evalue);
		s->evalue = t;
	} else {
		free(t);
	}
}

/* Emit an open value or error. */
static void
close_open(struct rk_scan *s)
{
	struct rk_ev ev = { RK_EV_RESULT, s->val, s->vlen, NULL, NULL, NULL,
	    0 };

	if (s->st == S_VALUE) {
		s->cb(s->arg, &ev);
		s->vlen = 0;
	} else if (s->st == S_ERROR) {
		ev.type = RK_EV_ERROR;
		ev.p = NULL;
		ev.n = 0;
		ev.ename = s->err->ename;
		ev.evalue = s->evalue;
		ev.traceback = s->tb;
		s->cb(s->arg, &ev);
		free(s->evalue);
		s->evalue = NULL;
		json_decref(s->tb);
		s->tb = NULL;
	}
	s->st = S_TEXT;
}

/* Where needle first occurs in p[0..n), or NULL ("" never does). */
static const char *
find(const char *p, size_t n, const char *needle)
{
	return needle[0] != '\0' ? memmem(p, n, needle, strlen(needle)) :
	    NULL;
}

/* The error whose prefix comes first in p[0..n) (*at), or -1. */
static int
first_error(const struct rk_scan *s, const char *p, size_t n,
    const char **at)
{
	const char *q;
	int best = -1;

	for (size_t i = 0; !s->plain && i < s->d->nerrors; i++) {
		q = find(p, n, s->d->errors[i].prefix);
		if (q != NULL && (best < 0 || q < *at)) {
			best = (int)i;
			*at = q;
		}
	}
	return best;
}

/* One line (with its newline, unless cut), in the current state. */
static void
line_in(struct rk_scan *s, const char *p, size_t n)
{
	const struct rk_desc *d = s->d;
	struct rk_ev endev = { RK_EV_END, NULL, 0, NULL, NULL, NULL, 0 };
	const char *end, *open, *close, *ep = NULL;
	size_t k;
	int i;

	while (n > 0) {
		end = find(p, n, d->marker);
		if (s->st == S_VALUE) {
			close = find(p, n, d->result_close);
			if (close != NULL && (end == NULL || close < end)) {
				val_add(s, p, (size_t)(close - p));
				close_open(s);
				k = (size_t)(close - p) +
				    strlen(d->result_close);
				p += k;
				n -= k;
				/* A value that ended its line leaves none. */
				if ((n == 1 && p[0] == '\n') || (n == 2 &&
				    p[0] == '\r' && p[1] == '\n'))
					return;
				continue;
			}
			if (end == NULL) {
				val_add(s, p, n);
				return;
			}
		}
		if (s->st == S_ERROR) {
			/* An error that takes the rest of its stream. */
			if (end == NULL && s->err->rest) {
				err_add(s, p, n);
				return;
			}
			k = strlen(s->err->cont);
			if (end == NULL && k > 0 && n >= k &&
			    memcmp(p, s->err->cont, k) == 0 &&
			    !(n >= strlen(s->err->prefix) && memcmp(p,
			    s->err->prefix, strlen(s->err->prefix)) == 0)) {
				err_add(s, p + k, n - k);
				return;
			}
			close_open(s);
		}
		open = s->plain || s->st != S_TEXT ? NULL :
		    find(p, n, d->result_open);
		i = s->st == S_TEXT ? first_error(s, p, n, &ep) : -1;
		/* Whichever of the three comes first in the line. */
		if (i >= 0 && (end == NULL || ep < end) &&
		    (open == NULL || ep < open)) {
			emit_text(s, p, (size_t)(ep - p));
			k = (size_t)(ep - p) + strlen(d->errors[i].prefix);
			s->st = S_ERROR;
			s->err = &d->errors[i];
			s->evalue = must_strdup("");
			s->tb = must(json_array());
			err_add(s, p + k, n - k);
			return;
		}
		if (end != NULL && (open == NULL || end < open)) {
			if (s->st == S_VALUE)
				val_add(s, p, (size_t)(end - p));
			else
				emit_text(s, p, (size_t)(end - p));
			close_open(s);
			/* The sequence number (capped: it is a run count). */
			for (k = (size_t)(end - p) + strlen(d->marker);
			    k < n && p[k] >= '0' && p[k] <= '9' &&
			    endev.seq < 100000000000UL; k++)
				endev.seq = endev.seq * 10 + (unsigned long)(p[k] -
				    '0');
			s->cb(s->arg, &endev);
			return;		/* the rest of the marker's line */
		}
		if (open != NULL) {
			emit_text(s, p, (size_t)(open - p));
			s->st = S_VALUE;
			k = (size_t)(open - p) + strlen(d->result_open);
			p += k;
			n -= k;
			continue;
		}
		emit_text(s, p, n);
		return;
	}
}

/* Scan bytes: each whole line, and a line that reached the cap. */
void
rk_scan_feed(struct rk_scan *s, const char *p, size_t n)
{
	const char *nl;
	size_t k;

	while (n > 0) {
		nl = memchr(p, '\n', n);
		k = nl != NULL ? (size_t)(nl - p) + 1 : n;
		if (s->len + k > s->cap)
			k = s->cap - s->len;
		memcpy(s->line + s->len, p, k);
		s->len += k;
		p += k;
		n -= k;
		if (s->line[s->len - 1] == '\n' || s->len == s->cap) {
			line_in(s, s->line, s->len);
			s->len = 0;
		}
	}
}

/* The partial line as it is, then whatever is open. */
void
rk_scan_flush(struct rk_scan *s)
{
	if (s->len > 0) {
		line_in(s, s->line, s->len);
		s->len = 0;
	}
	close_open(s);
}
