/*
 * lines.h -- split a byte stream into lines as clients of upstream expect:
 * "\n", "\r" and "\r\n" end a line (a "\r\n" split across two reads still
 * counts once), the terminator is dropped, and a line longer than
 * LINES_MAX is passed on in pieces so memory stays bounded.  Any thread;
 * one splitter per stream.
 * A splitter made by lines_init_keep() cuts at the same places but keeps
 * each terminator at the end of its line, so that the lines put together
 * are the input byte for byte (as upstream 1.1.1 frames a command's
 * output): "\r\n" is one terminator when both come in one read; a "\r"
 * that ends a read ends its line at once, and a "\n" that begins the next
 * read is then a line of its own.
 */
#ifndef EXECD_LINES_H
#define EXECD_LINES_H

#include <stdbool.h>
#include <stddef.h>

#include "../../sse/sse_fmt.h"

#define LINES_MAX	(1 << 20)

struct lines {
	struct buf	 part;	/* the unterminated rest */
	bool		 cr;	/* the last byte seen was "\r" */
	bool		 keep;	/* lines keep their terminators */
};

/*
 * Called for each line: p[0..n), no terminator, no NUL; n may be 0.  For
 * a keeping splitter, with its terminator, if any, and n > 0.
 */
typedef void lines_cb(const char *p, size_t n, void *arg);

void	lines_init(struct lines *);
void	lines_init_keep(struct lines *);
void	lines_feed(struct lines *l, const char *p, size_t n, lines_cb *cb,
	    void *arg);
/* Pass on an unterminated rest, if any, as a last line. */
void	lines_flush(struct lines *l, lines_cb *cb, void *arg);
void	lines_reset(struct lines *);	/* free; reusable */

#endif
