/*
 * wsmsg.c -- Jupyter messages on a kernel's channels WebSocket, in the
 * forms Jupyter Server speaks.  Without a subprotocol: one JSON object
 * per text frame, with "channel"; and, for a message with binary
 * buffers, a binary frame of offsets (a count n of parts, n offsets from
 * the frame's start, all 32-bit big-endian; the JSON first, then each
 * buffer).  With v1.kernel.websocket.jupyter.org: every message a binary
 * frame, a count n of offsets and n offsets (64-bit little-endian) from
 * the frame's start, then the channel's name, the header, parent_header,
 * metadata and content as JSON, then the buffers.  Pure: no loop, no
 * kernel; fuzzed by tests/fuzz/fuzz_wsmsg.c.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../sse/sse_fmt.h"
#include "../../core/xmalloc.h"
#include "wsmsg.h"

#define MAX_PARTS	1024

static const char *const channels[] = {
	[KP_SHELL] = "shell", [KP_IOPUB] = "iopub", [KP_STDIN] = "stdin",
	[KP_CONTROL] = "control",
};

const char *
wsmsg_channel_name(enum kp_chan_id c)
{
	return c < KP_HB ? channels[c] : "";
}

/* An object member, or a new empty object when absent or null. */
static int
part(json_t *o, const char *key, json_t **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v)) {
		*out = json_object();
		return 0;
	}
	if (!json_is_object(v)) {
		snprintf(err, errlen, "%s is not an object", key);
		return -1;
	}
	*out = json_incref(v);
	return 0;
}

static uint32_t
be32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* Split the binary form into its JSON and buffers; 0 or -1. */
static int
split(const unsigned char *p, size_t n, const char **js, size_t *jn,
    struct kp_msg *m, char *err, size_t errlen)
{
	uint32_t nparts, off, end;

	if (n < 8 || (nparts = be32(p)) == 0 || nparts > MAX_PARTS ||
	    (size_t)(nparts + 1) * 4 > n) {
		snprintf(err, errlen, "bad binary message header");
		return -1;
	}
	m->buffers = xcalloc(nparts, sizeof(*m->buffers));
	for (uint32_t i = 0; i < nparts; i++) {
		off = be32(p + 4 + 4 * i);
		end = i + 1 < nparts ? be32(p + 8 + 4 * i) : (uint32_t)n;
		if (off < (nparts + 1) * 4 || off > end || end > n) {
			snprintf(err, errlen, "bad binary message offsets");
			return -1;
		}
		if (i == 0) {
			*js = (const char *)p + off;
			*jn = end - off;
			continue;
		}
		m->buffers[m->nbuffers].n = end - off;
		m->buffers[m->nbuffers].p = xmalloc(end - off + 1);
		memcpy(m->buffers[m->nbuffers++].p, p + off, end - off);
	}
	return 0;
}

/* The channel a client may send on, by name; or -1. */
static int
client_channel(const char *name, size_t n)
{
	for (int c = 0; c < KP_HB; c++)
		if (c != KP_IOPUB && strlen(channels[c]) == n &&
		    memcmp(name, channels[c], n) == 0)
			return c;
	return -1;
}

/* Whether the header has a msg_id (1 to 256 bytes) and a msg_type. */
static bool
header_ok(const json_t *h)
{
	return json_is_object(h) &&
	    json_is_string(json_object_get(h, "msg_id")) &&
	    json_string_length(json_object_get(h, "msg_id")) > 0 &&
	    json_string_length(json_object_get(h, "msg_id")) <= 256 &&
	    json_is_string(json_object_get(h, "msg_type")) &&
	    json_string_length(json_object_get(h, "msg_type")) > 0;
}

static uint64_t
le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
add_le64(struct buf *b, uint64_t v)
{
	unsigned char p[8];

	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
	buf_add(b, p, 8);
}

/* One JSON object part of a v1 frame, or NULL with err set. */
static json_t *
v1_part(const unsigned char *p, size_t n, const char *what, char *err,
    size_t errlen)
{
	json_error_t je;
	json_t *v = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES,
	    &je);

	if (v == NULL || !json_is_object(v)) {
		snprintf(err, errlen, "%s is not a JSON object", what);
		json_decref(v);
		return NULL;
	}
	return v;
}

/* Parse a v1 frame; see wsmsg.h. */
int
wsmsg_parse_v1(const char *data, size_t n, struct kp_msg **out,
    enum kp_chan_id *chan, char *err, size_t errlen)
{
	static const char *const what[] = { "header", "parent_header",
	    "metadata", "content" };
	const unsigned char *p = (const unsigned char *)data;
	struct kp_msg *m = xcalloc(1, sizeof(*m));
	uint64_t noff, off[MAX_PARTS + 6];
	json_t **parts[] = { &m->header, &m->parent, &m->metadata,
	    &m->content };
	int c;

	if (n < 8 || (noff = le64(p)) < 6 || noff > MAX_PARTS + 6 ||
	    (noff + 1) * 8 > n) {
		snprintf(err, errlen, "bad v1 message header");
		goto bad;
	}
	for (uint64_t i = 0; i < noff; i++) {
		off[i] = le64(p + 8 * (i + 1));
		if ((i == 0 && off[0] != (noff + 1) * 8) || off[i] > n ||
		    (i > 0 && off[i] < off[i - 1])) {
			snprintf(err, errlen, "bad v1 message offsets");
			goto bad;
		}
	}
	if ((c = client_channel(data + off[0], off[1] - off[0])) < 0) {
		snprintf(err, errlen, "no channel a client may send on");
		goto bad;
	}
	for (int i = 0; i < 4; i++)
		if ((*parts[i] = v1_part(p + off[1 + i], off[2 + i] -
		    off[1 + i], what[i], err, errlen)) == NULL)
			goto bad;
	if (!header_ok(m->header)) {
		snprintf(err, errlen, "header without msg_id or msg_type");
		goto bad;
	}
	if (noff > 6)
		m->buffers = xcalloc(noff - 6, sizeof(*m->buffers));
	for (uint64_t i = 5; i + 1 < noff; i++) {
		size_t len = off[i + 1] - off[i];

		m->buffers[m->nbuffers].n = len;
		m->buffers[m->nbuffers].p = xmalloc(len + 1);
		memcpy(m->buffers[m->nbuffers++].p, p + off[i], len);
	}
	*chan = (enum kp_chan_id)c;
	*out = m;
	return 0;
bad:
	kp_msg_free(m);
	return -1;
}

/* Format m as a v1 frame; see wsmsg.h. */
void
wsmsg_format_v1(struct buf *b, const struct kp_msg *m, enum kp_chan_id c)
{
	const char *name = wsmsg_channel_name(c);
	const json_t *parts[] = { m->header, m->parent, m->metadata,
	    m->content };
	size_t noff = m->nbuffers + 6, at = (noff + 1) * 8;
	struct buf js[4];

	for (int i = 0; i < 4; i++) {
		buf_init(&js[i]);
		sse_fmt_json(&js[i], parts[i]);
	}
	add_le64(b, noff);
	add_le64(b, at);
	at += strlen(name);
	add_le64(b, at);
	for (int i = 0; i < 4; i++) {
		at += js[i].len;
		add_le64(b, at);
	}
	for (size_t i = 0; i < m->nbuffers; i++) {
		at += m->buffers[i].n;
		add_le64(b, at);
	}
	buf_adds(b, name);
	for (int i = 0; i < 4; i++) {
		buf_add(b, js[i].p, js[i].len);
		buf_reset(&js[i]);
	}
	for (size_t i = 0; i < m->nbuffers; i++)
		buf_add(b, m->buffers[i].p, m->buffers[i].n);
}

/* Parse one client frame; see wsmsg.h. */
int
wsmsg_parse(const char *p, size_t n, bool binary, struct kp_msg **out,
    enum kp_chan_id *chan, char *err, size_t errlen)
{
	struct kp_msg *m = xcalloc(1, sizeof(*m));
	const char *js = p, *name;
	size_t jn = n;
	json_error_t je;
	json_t *o = NULL, *h;
	int c;

	if (binary && split((const unsigned char *)p, n, &js, &jn, m, err,
	    errlen) < 0)
		goto bad;
	if ((o = json_loadb(js, jn, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		snprintf(err, errlen, "not JSON: %s", je.text);
		goto bad;
	}
	if (!json_is_object(o)) {
		snprintf(err, errlen, "not a JSON object");
		goto bad;
	}
	name = json_string_value(json_object_get(o, "channel"));
	for (c = 0; name != NULL && c < KP_HB; c++)
		if (strcmp(name, channels[c]) == 0)
			break;
	if (name == NULL || c == KP_HB || c == KP_IOPUB) {
		snprintf(err, errlen, "no channel a client may send on");
		goto bad;
	}
	h = json_object_get(o, "header");
	if (!json_is_object(h) ||
	    !json_is_string(json_object_get(h, "msg_id")) ||
	    json_string_length(json_object_get(h, "msg_id")) == 0 ||
	    json_string_length(json_object_get(h, "msg_id")) > 256 ||
	    !json_is_string(json_object_get(h, "msg_type")) ||
	    json_string_length(json_object_get(h, "msg_type")) == 0) {
		snprintf(err, errlen, "header without msg_id or msg_type");
		goto bad;
	}
	m->header = json_incref(h);
	if (part(o, "parent_header", &m->parent, err, errlen) < 0 ||
	    part(o, "metadata", &m->metadata, err, errlen) < 0 ||
	    part(o, "content", &m->content, err, errlen) < 0)
		goto bad;
	json_decref(o);
	*chan = (enum kp_chan_id)c;
	*out = m;
	return 0;
bad:
	json_decref(o);
	kp_msg_free(m);
	return -1;
}

/* Append the message as one JSON object with channel. */
static void
fmt_json(struct buf *b, const struct kp_msg *m, const char *channel)
{
	const char *id = kp_msg_id(m), *type = kp_msg_type(m);

	buf_adds(b, "{\"header\":");
	sse_fmt_json(b, m->header);
	buf_adds(b, ",\"msg_id\":");
	sse_fmt_string(b, id, strlen(id));
	buf_adds(b, ",\"msg_type\":");
	sse_fmt_string(b, type, strlen(type));
	buf_adds(b, ",\"parent_header\":");
	sse_fmt_json(b, m->parent);
	buf_adds(b, ",\"metadata\":");
	sse_fmt_json(b, m->metadata);
	buf_adds(b, ",\"content\":");
	sse_fmt_json(b, m->content);
	buf_adds(b, ",\"buffers\":[],\"channel\":");
	sse_fmt_string(b, channel, strlen(channel));
	buf_adds(b, "}");
}

/* Format one message for a client; see wsmsg.h. */
bool
wsmsg_format(struct buf *b, const struct kp_msg *m, enum kp_chan_id c)
{
	struct buf js;
	size_t nparts = m->nbuffers + 1, off;
	uint32_t v;

	if (m->nbuffers == 0) {
		fmt_json(b, m, wsmsg_channel_name(c));
		return false;
	}
	buf_init(&js);
	fmt_json(&js, m, wsmsg_channel_name(c));
	v = htonl((uint32_t)nparts);
	buf_add(b, &v, 4);
	off = (nparts + 1) * 4;
	v = htonl((uint32_t)off);
	buf_add(b, &v, 4);
	off += js.len;
	for (size_t i = 0; i < m->nbuffers; i++) {
		v = htonl((uint32_t)off);
		buf_add(b, &v, 4);
		off += m->buffers[i].n;
	}
	buf_add(b, js.p, js.len);
	for (size_t i = 0; i < m->nbuffers; i++)
		buf_add(b, m->buffers[i].p, m->buffers[i].n);
	buf_reset(&js);
	return true;
}

/* m in a client's form into b, once; see wsmsg.h. */
int
wsmsg_form(struct buf *b, bool v1, const struct kp_msg *m,
    enum kp_chan_id c)
{
	if (v1) {
		if (b->len == 0)
			wsmsg_format_v1(b, m, c);
		return 2;
	}
	if (b->len == 0)
		return wsmsg_format(b, m, c) ? 2 : 1;
	return m->nbuffers > 0 ? 2 : 1;
}
