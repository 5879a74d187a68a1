/*
 * rk_scan.h -- what a REPL prints, cut into a run's events.
 *
 * Bytes from the REPL's stdout (or stderr) come in as they arrive; whole
 * lines come out as events: text, a value framed by the description's
 * result_open and result_close, an error (from one of its
 * prefixes, and the lines that continue it), and the end of the run (the
 * marker, wherever it appears in a line; text before it is output, and
 * the decimal digits right after it are the run's sequence number).  A
 * partial line waits for its newline, the end marker, or rk_scan_flush;
 * a line longer than the cap comes out as text in pieces.  A value that
 * ends its line takes the newline with it; an error's traceback starts
 * at its first non-empty line, which is also its message; an error
 * whose description says "rest" takes every later line of its stream,
 * up to the end marker or the flush, into its traceback.  A "plain"
 * scanner (stderr) knows only text and the end marker.  Pure; one thread.
 */
#ifndef RK_SCAN_H
#define RK_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "rk_desc.h"

enum rk_ev_type { RK_EV_TEXT, RK_EV_RESULT, RK_EV_ERROR, RK_EV_END };

struct rk_ev {
	enum rk_ev_type	 type;
	const char	*p;		/* text or value (not NUL-ended) */
	size_t		 n;
	const char	*ename;		/* RK_EV_ERROR: its name */
	const char	*evalue;	/* its message, NUL-ended */
	json_t		*traceback;	/* its lines, borrowed */
	unsigned long	 seq;		/* RK_EV_END: digits after the marker */
};

/* Called from rk_scan_feed/_flush, once per event; ev is borrowed. */
typedef void rk_scan_cb(void *arg, const struct rk_ev *ev);

struct rk_scan;

/* A scanner over d (borrowed); lines are capped at cap bytes (>= 64). */
struct rk_scan	*rk_scan_new(const struct rk_desc *d, bool plain, size_t cap,
		    rk_scan_cb *cb, void *arg);
void		 rk_scan_free(struct rk_scan *);	/* NULL ok */
/* Scan n more bytes. */
void		 rk_scan_feed(struct rk_scan *, const char *p, size_t n);
/* p[0..n) as a new C string of valid UTF-8 ('?' for NULs, bad bytes). */
char		*rk_scan_scrub(const char *p, size_t n);
/* Emit what is held: a partial line as text, an open value or error. */
void		 rk_scan_flush(struct rk_scan *);

#endif
