/*
 * wsmsg.h -- Jupyter messages on a kernel's channels WebSocket (JSON
 * text frames with "channel", or Jupyter Server's binary form with
 * offsets for a message with buffers), into and out of struct kp_msg.
 * Pure; any thread.
 */
#ifndef EXECD_WSMSG_H
#define EXECD_WSMSG_H

#include <stdbool.h>
#include <stddef.h>

#include "../../../kernelproto/kp_connfile.h"
#include "../../../kernelproto/kp_msg.h"
#include "../../../util/buf.h"

/* "shell", "iopub", "stdin", "control"; "" for any other. */
const char	*wsmsg_channel_name(enum kp_chan_id);

/*
 * Parse a client's frame (binary: the offsets form): an object whose
 * channel is shell, control or stdin, whose header is an object with a
 * msg_id (1 to 256 bytes) and a msg_type, and whose parent_header,
 * metadata and content are objects or absent.  0 with *out (free with
 * kp_msg_free) and *chan set, or -1 with why in err.
 */
int	 wsmsg_parse(const char *p, size_t n, bool binary,
	    struct kp_msg **out, enum kp_chan_id *chan, char *err,
	    size_t errlen);
/*
 * Append m as sent on channel c: a JSON object with header, msg_id,
 * msg_type, parent_header, metadata, content, buffers and channel; in
 * the binary form when m has buffers.  Whether it is binary.
 */
bool	 wsmsg_format(struct buf *out, const struct kp_msg *m,
	    enum kp_chan_id c);

/* The subprotocol of wsmsg_parse_v1() and wsmsg_format_v1(). */
#define WSMSG_V1	"v1.kernel.websocket.jupyter.org"

/*
 * Parse a client's frame in the v1 subprotocol (the channel's name, then
 * header, parent_header, metadata and content as JSON objects, then
 * buffers, by 64-bit little-endian offsets), with wsmsg_parse()'s checks.
 * 0 with *out and *chan set, or -1 with why in err.
 */
int	 wsmsg_parse_v1(const char *p, size_t n, struct kp_msg **out,
	    enum kp_chan_id *chan, char *err, size_t errlen);
/* Append m as a v1 frame (always binary) for channel c. */
void	 wsmsg_format_v1(struct buf *out, const struct kp_msg *m,
	    enum kp_chan_id c);
/*
 * m for channel c in a client's form (v1, or the form without a
 * subprotocol) appended to b unless b holds it already (b->len > 0, from
 * an earlier call for the same m and form); the WebSocket opcode it goes
 * in: 1 text, 2 binary.
 */
int	 wsmsg_form(struct buf *b, bool v1, const struct kp_msg *m,
	    enum kp_chan_id c);

#endif
