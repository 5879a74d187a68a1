/*
 * sse_fmt.h -- pure encoding of stream events and of JSON as clients
 * expect it.  No I/O, no HTTP; any thread.
 *
 * The wire framing is the one every OpenSandbox SDK parses: one compact
 * JSON object per event on one line, then a blank line ("\n\n"), no
 * "data:" prefix.  JSON is written the way the upstream daemon's encoder
 * writes it, so bytes match: object keys sorted, '<' '>' '&' U+2028 U+2029
 * escaped, invalid UTF-8 replaced by U+FFFD, floats in their shortest
 * round-trip form.
 *
 * JSON ownership rule (jansson): functions here only borrow json_t values.
 */
#ifndef SSE_FMT_H
#define SSE_FMT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../util/buf.h"

/*
 * One event.  Fields that are NULL or 0 are left out, as upstream leaves
 * them out, except type and timestamp which are always written.
 * Field order on the wire: type, text, execution_count, execution_time,
 * timestamp, results, error, then our additions (seq).
 */
struct sse_event {
	const char	*type;
	const char	*text;		/* may hold any bytes; see text_len */
	size_t		 text_len;	/* 0: strlen(text) */
	long long	 execution_count;
	long long	 execution_time;	/* ms */
	int64_t		 timestamp;	/* Unix ms */
	const json_t	*results;	/* MIME map, already renamed */
	const json_t	*error;		/* {ename, evalue, traceback} */
	uint64_t	 seq;		/* resume sequence number, 0: none */
};

/* Append the event and its "\n\n" terminator. */
void	sse_fmt_event(struct buf *, const struct sse_event *);

/* Append v as compact JSON; 0, or -EINVAL for a value that has no JSON. */
int	sse_fmt_json(struct buf *, const json_t *v);

/* Append s[0..n) as a quoted JSON string. */
void	sse_fmt_string(struct buf *, const char *s, size_t n);

/* Append a double in its shortest round-trip decimal form. */
void	sse_fmt_double(struct buf *, double);

#endif
