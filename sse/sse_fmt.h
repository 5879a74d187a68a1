/*
 * sse_fmt.h -- pure encoding of stream events and of JSON as clients
 * expect it.  No I/O, no HTTP; any thread.
 *
 * An event is one compact JSON object; how it is put on the wire is a
 * framing, chosen by the front end that serves the stream (struct
 * sse_framing).  OpenSandbox's, the one every OpenSandbox SDK parses, is
 * the object on one line, then a blank line ("\n\n"), no "data:" prefix;
 * standard SSE (the WHATWG event-stream format that EventSource and SSE
 * libraries read, MCP's among them) puts it in a data field after its id
 * and event fields.  JSON is written the way the upstream daemon's encoder
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

/*
 * A framing: what goes around an event's JSON object.  head writes what
 * comes before it, given the event's type (NULL: none) and sequence
 * number (0: none); tail comes after it.  keepalive, when not NULL, is
 * what a ping is in this framing (a comment: no event); NULL means pings
 * are events like the others.
 */
struct sse_framing {
	const char	*name;
	int		(*head)(struct buf *, const char *type, uint64_t seq);
	const char	*tail;
	const char	*keepalive;
};

/* OpenSandbox's: "{...}\n\n". */
extern const struct sse_framing sse_framing_opensandbox;
/* Standard SSE: "id: N\nevent: TYPE\ndata: {...}\n\n"; pings ": ping". */
extern const struct sse_framing sse_framing_standard;

/*
 * Append the event in OpenSandbox's framing.  0, or -ENOBUFS past the
 * buffer's cap, with nothing appended.
 */
int	sse_fmt_event(struct buf *, const struct sse_event *);
/* Append the event in framing f (NULL: OpenSandbox's); as sse_fmt_event. */
int	sse_fmt_event_framed(struct buf *, const struct sse_framing *f,
	    const struct sse_event *);
/*
 * Append v, an object, as one event in framing f (NULL: OpenSandbox's);
 * its "type" member names the event.  0, -EINVAL for a value that has no
 * JSON (nothing appended), or -ENOBUFS as sse_fmt_event.
 */
int	sse_fmt_json_event(struct buf *, const struct sse_framing *f,
	    const json_t *v);
/*
 * Append whole events p[0..n), each in OpenSandbox's framing (an object
 * that starts with its "type" and, when numbered, ends with its "seq"),
 * in framing f instead.  0, or -ENOBUFS with nothing appended.
 */
int	sse_fmt_reframe(struct buf *, const struct sse_framing *f,
	    const char *p, size_t n);

/* Append v as compact JSON; 0, or -EINVAL for a value that has no JSON. */
int	sse_fmt_json(struct buf *, const json_t *v);

/* Append s[0..n) as a quoted JSON string. */
void	sse_fmt_string(struct buf *, const char *s, size_t n);

/* Append a double in its shortest round-trip decimal form. */
void	sse_fmt_double(struct buf *, double);

#endif
