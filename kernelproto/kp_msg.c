/*
 * kp_msg.c -- building, reading and freeing struct kp_msg.
 *
 * A message is its four JSON objects plus the raw routing identities and
 * binary buffers that travel beside them.  This file makes new outgoing
 * messages (fresh msg_id, UTC timestamp, protocol version) and reads the
 * few header fields callers route on.  It does not serialise, sign or
 * validate incoming messages: kp_wire.c does that.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../util/id.h"
#include "../util/must.h"
#include "kp_msg.h"

static void		 now_iso(char *, size_t);
static const char	*field(const json_t *, const char *);

/* The current UTC time as 2026-11-30T09:08:57.123456Z. */
static void
now_iso(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0 ||
	    gmtime_r(&ts.tv_sec, &tm) == NULL)
		abort();	/* cannot happen with CLOCK_REALTIME */
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
}

/* String member key of object o, borrowed; "" when absent or no string. */
static const char *
field(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

/* A fresh random id: a version 4 UUID as 32 lowercase hex digits. */
void
kp_msg_new_id(char out[33])
{
	id_hex(out);
}

/*
 * A new outgoing message; steals content, copies parent.  NULL with errno
 * EINVAL when content or parent is not an object or a string is not
 * UTF-8 (content is released all the same).
 */
struct kp_msg *
kp_msg_new(const char *msg_type, const char *session, const char *username,
    json_t *content, const json_t *parent)
{
	struct kp_msg *m;
	char id[33], date[64];

	if ((content != NULL && !json_is_object(content)) ||
	    (parent != NULL && !json_is_object(parent))) {
		json_decref(content);
		errno = EINVAL;
		return NULL;
	}
	m = must(calloc(1, sizeof(*m)));
	kp_msg_new_id(id);
	now_iso(date, sizeof(date));
	m->header = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
	    "msg_id", id,
	    "session", session != NULL ? session : "",
	    "username", username != NULL ? username : "",
	    "date", date,
	    "msg_type", msg_type != NULL ? msg_type : "",
	    "version", KP_PROTOCOL_VERSION);
	m->parent = parent != NULL ? json_deep_copy(parent) : json_object();
	m->metadata = json_object();
	m->content = content != NULL ? content : json_object();
	if (m->header == NULL) {
		/* json_pack refuses strings that are not valid UTF-8. */
		kp_msg_free(m);
		errno = EINVAL;
		return NULL;
	}
	if (m->parent == NULL || m->metadata == NULL || m->content == NULL)
		abort();	/* jansson fails here only when out of memory */
	return m;
}

/* Release the message, its JSON and its copied frames; NULL is fine. */
void
kp_msg_free(struct kp_msg *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->nidents; i++)
		free(m->idents[i].p);
	free(m->idents);
	for (size_t i = 0; i < m->nbuffers; i++)
		free(m->buffers[i].p);
	free(m->buffers);
	json_decref(m->header);
	json_decref(m->parent);
	json_decref(m->metadata);
	json_decref(m->content);
	free(m);
}

/* header.msg_type, borrowed; "" if absent. */
const char *
kp_msg_type(const struct kp_msg *m)
{
	return field(m->header, "msg_type");
}

/* header.msg_id, borrowed; "" if absent. */
const char *
kp_msg_id(const struct kp_msg *m)
{
	return field(m->header, "msg_id");
}

/* parent_header.msg_id, borrowed; "" if absent (e.g. parent is {}). */
const char *
kp_msg_parent_id(const struct kp_msg *m)
{
	return field(m->parent, "msg_id");
}

/* header.session, borrowed; "" if absent. */
const char *
kp_msg_session(const struct kp_msg *m)
{
	return field(m->header, "session");
}

#define USERNAME "execd"

/* A request whose content json_pack may refuse (invalid UTF-8). */
static struct kp_msg *
request(const char *type, const char *session, json_t *content)
{
	if (content == NULL) {
		errno = EINVAL;
		return NULL;
	}
	return kp_msg_new(type, session, USERNAME, content, NULL);
}

/*
 * execute_request; store_history unless silent.  stop_on_error is false:
 * each request stands alone, so one that fails must not make the kernel
 * abort the requests queued behind it.
 */
struct kp_msg *
kp_msg_execute_request(const char *session, const char *code, bool silent,
    bool allow_stdin)
{
	return request("execute_request", session, json_pack(
	    "{s:s, s:b, s:b, s:{}, s:b, s:b}", "code", code, "silent",
	    silent, "store_history", !silent, "user_expressions",
	    "allow_stdin", allow_stdin, "stop_on_error", 0));
}

/* complete_request at cursor_pos (in unicode code points). */
struct kp_msg *
kp_msg_complete_request(const char *session, const char *code,
    int cursor_pos)
{
	return request("complete_request", session, json_pack("{s:s, s:i}",
	    "code", code, "cursor_pos", cursor_pos));
}

/* inspect_request; detail_level 0 or 1. */
struct kp_msg *
kp_msg_inspect_request(const char *session, const char *code, int cursor_pos,
    int detail_level)
{
	return request("inspect_request", session, json_pack(
	    "{s:s, s:i, s:i}", "code", code, "cursor_pos", cursor_pos,
	    "detail_level", detail_level));
}

/* kernel_info_request (empty content). */
struct kp_msg *
kp_msg_kernel_info_request(const char *session)
{
	return request("kernel_info_request", session, json_object());
}

/* shutdown_request, for the control channel. */
struct kp_msg *
kp_msg_shutdown_request(const char *session, bool restart)
{
	return request("shutdown_request", session, json_pack("{s:b}",
	    "restart", restart));
}

/* interrupt_request, for kernels whose interrupt_mode is "message". */
struct kp_msg *
kp_msg_interrupt_request(const char *session)
{
	return request("interrupt_request", session, json_object());
}
