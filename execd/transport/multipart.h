/*
 * multipart.h -- streaming multipart/form-data parser (RFC 7578, 2046),
 * for POST /files/upload.
 *
 * A push parser: the body is fed in pieces of any size, and callbacks
 * report each part's headers, its body bytes and its end.  It never holds
 * a whole part: at most the delimiter's length plus 4 bytes of body are
 * kept back between feeds (they might start the next delimiter), plus one
 * part's header block, capped at 16 KiB.  Large pieces in give large runs
 * out.  libc only, no logging.
 *
 * Accepted: a preamble before the first delimiter (which may come first
 * with no CRLF before it), transport padding (spaces, tabs) after a
 * delimiter, a part whose body starts with the next delimiter at once,
 * header lines ending in CRLF or a bare LF, folded header lines, and
 * anything after the close delimiter.  In a body only CRLF--boundary
 * followed by "--", padding or a line end is a delimiter; other bytes,
 * "--boundary" without the CRLF included, are data.
 *
 * One parser belongs to one thread; the callbacks run on it, inside
 * mp_feed(), and must not free the parser.
 */
#ifndef MULTIPART_H
#define MULTIPART_H

#include <stddef.h>

#define MP_HDR_MAX	16384	/* one part's header block, bytes */
#define MP_BOUNDARY_MAX	70	/* RFC 2046 */

struct mp;

/* One part's headers; the strings live until the callback returns. */
struct mp_part {
	const char	*name;		/* disposition name; "" if none */
	const char	*filename;	/* NULL if no filename attribute */
	const char	*type;		/* Content-Type; NULL if absent */
};

/*
 * Callbacks return 0 to go on or a negative errno to stop: mp_feed() then
 * returns it.  part: a part's headers were read; data: bytes of the
 * current part's body (never empty); end: the current part's body ended.
 */
typedef int	mp_part_cb(const struct mp_part *, void *arg);
typedef int	mp_data_cb(const char *p, size_t n, void *arg);
typedef int	mp_end_cb(void *arg);
struct mp_cbs {
	mp_part_cb	*part;
	mp_data_cb	*data;
	mp_end_cb	*end;
};

/*
 * The boundary from a Content-Type value "multipart/form-data;
 * boundary=..." (quoted or not, case-insensitive media type and parameter
 * name, other parameters ignored) into out, NUL-terminated.  0, or
 * -EINVAL: not multipart/form-data, no boundary, a boundary empty, over
 * 70 bytes or with a control character, or out too short (71 bytes always
 * do).  out is written only on success.
 */
int	 mp_boundary(const char *content_type, char *out, size_t outlen);

/*
 * A parser for boundary (1 to 70 bytes, no CR, LF); NULL with errno
 * EINVAL or ENOMEM.  *cbs is copied; NULL or a NULL member: no callback.
 */
struct mp *mp_new(const char *boundary, const struct mp_cbs *cbs, void *arg);

/*
 * Feed n more bytes of the body, split anywhere.  0; -EINVAL malformed
 * (message in mp_error()); -E2BIG a part's header block over 16 KiB; or a
 * callback's value (a positive one becomes -ECANCELED).  After an error
 * every later call returns the same error.  Bytes after the close
 * delimiter are ignored.
 */
int	 mp_feed(struct mp *, const char *p, size_t n);

/*
 * The body ended: 0 if the close delimiter was seen, else -EINVAL
 * ("multipart body is truncated"), or the earlier error.
 */
int	 mp_finish(struct mp *);

const char *mp_error(const struct mp *);	/* last error; "" if none */
void	 mp_free(struct mp *);			/* NULL ok */

#endif
