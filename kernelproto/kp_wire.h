/*
 * kp_wire.h -- Jupyter multipart frames <-> struct kp_msg.  Pure: no
 * sockets here (xeus keeps protocol apart from transport the same way).
 *
 * Wire layout: [identities...] "<IDS|MSG>" signature header parent_header
 * metadata content [buffers...].  Decoding rejects, before any JSON is
 * parsed: no delimiter, fewer than five frames after it, any frame larger
 * than max_frame, a signature that is not 64 hex digits (when a key is
 * set) or that does not match.  With an empty key the signature frame is
 * not looked at, as jupyter_client does.  Any thread.
 */
#ifndef KP_WIRE_H
#define KP_WIRE_H

#include <stddef.h>

#include "kp_msg.h"
#include "kp_sign.h"

/* Why a message was dropped; kp_wire_decode returns the negation. */
#define KP_WIRE_EDELIM	1	/* no <IDS|MSG> */
#define KP_WIRE_ESHORT	2	/* fewer than 5 frames after it */
#define KP_WIRE_EBIG	3	/* a frame over max_frame */
#define KP_WIRE_ESIG	4	/* signature malformed or wrong */
#define KP_WIRE_EJSON	5	/* a part is not a JSON object */

/*
 * Decode n frames.  0 with *out set, or -KP_WIRE_E* with a short reason
 * in err.  Frames are copied; the caller keeps its own.
 */
int	kp_wire_decode(const struct kp_part *frames, size_t n,
	    const unsigned char *key, size_t keylen, size_t max_frame,
	    struct kp_msg **out, char *err, size_t errlen);

/*
 * Decode a message that kp_wire_decode refused as too big: a kernel that
 * printed more at once than a frame may hold.  Every frame before content
 * must fit max_frame; the signature is checked over all of them.  For a
 * stream message the content is {"name", "text": ""} and the escaped text
 * lies in the content frame from *toff to *tend (no quotes), to be taken
 * with kp_wire_text_piece while the frames live.  For any other message,
 * content over max_frame is {} and, like buffers over it, left out and
 * counted in m->dropped (*toff == *tend).  0, or -KP_WIRE_E*.
 */
int	kp_wire_decode_big(const struct kp_part *frames, size_t n,
	    const unsigned char *key, size_t keylen, size_t max_frame,
	    struct kp_msg **out, size_t *toff, size_t *tend, char *err,
	    size_t errlen);
/*
 * One JSON document p[0..n) as jansson reads it with flags (and
 * JSON_ALLOW_NUL); where jansson refuses it, read again from a copy in
 * which each byte that is not UTF-8 and each lone surrogate escape is
 * U+FFFD (kernels relay whatever bytes user code printed).  NULL, with
 * e set, when it is not JSON even so.
 */
json_t	*kp_wire_json_load(const void *p, size_t n, size_t flags,
	    json_error_t *e);
/*
 * The next piece of the escaped JSON string body p[*off..end): about max
 * bytes of it, cut between characters and escapes, as a new json string
 * (U+FFFD for bytes that are not UTF-8); *off moves past it.  NULL once
 * *off reaches end.
 */
json_t	*kp_wire_text_piece(const void *p, size_t *off, size_t end,
	    size_t max);

/* Encoded frames, owned by the struct; free with kp_wire_frames_free. */
struct kp_frames {
	struct kp_part	*f;
	size_t		 n;
	char		*json[4];	/* storage of header..content */
	char		 sig[KP_SIG_HEXLEN + 1];
};

/*
 * Serialise and sign m (identities, delimiter, signature, the four parts
 * as compact JSON, buffers).  The frames borrow m's identities and
 * buffers, so m must outlive them.  0, -EINVAL if a part is not an
 * object jansson can write, or -EIO if signing failed.
 */
int	kp_wire_encode(const struct kp_msg *m, const unsigned char *key,
	    size_t keylen, struct kp_frames *out);
void	kp_wire_frames_free(struct kp_frames *);

#endif
