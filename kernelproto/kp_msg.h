/*
 * kp_msg.h -- a Jupyter message in memory (protocol 5.3).
 *
 * The one JSON ownership rule for kernelproto (as jq's jv.h states its
 * own): functions named *_new or taking a "stolen" argument take over the
 * caller's reference; getters borrow; a json_t * returned to the caller is
 * the caller's to json_decref.  Pure; any thread, one message per thread.
 */
#ifndef KP_MSG_H
#define KP_MSG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define KP_PROTOCOL_VERSION	"5.3"
#define KP_DELIM		"<IDS|MSG>"

struct kp_blob {
	void	*p;
	size_t	 n;
};

struct kp_msg {
	struct kp_blob	*idents;	/* routing prefix before <IDS|MSG> */
	size_t		 nidents;
	json_t		*header;	/* each an object, owned */
	json_t		*parent;
	json_t		*metadata;
	json_t		*content;
	struct kp_blob	*buffers;	/* raw frames after content, owned */
	size_t		 nbuffers;
	/* Bytes received but left out: content or buffers over the cap. */
	size_t		 dropped;
};

/*
 * A new message: header with a fresh msg_id (kp_msg_new_id), msg_type,
 * session, username, an ISO 8601 UTC date with microseconds and version
 * 5.3.  content is stolen (NULL: {}); parent is copied (NULL: {}).
 * NULL with errno EINVAL if content or parent is not an object or a
 * string is not UTF-8; content is released even then.
 */
struct kp_msg	*kp_msg_new(const char *msg_type, const char *session,
		    const char *username, json_t *content,
		    const json_t *parent);
void		 kp_msg_free(struct kp_msg *);	/* NULL ok */

/*
 * Requests execd sends, as the protocol defines them (username "execd").
 * NULL with errno EINVAL when code is not valid UTF-8.
 */
struct kp_msg	*kp_msg_execute_request(const char *session, const char *code,
		    bool silent, bool allow_stdin);
struct kp_msg	*kp_msg_complete_request(const char *session, const char *code,
		    int cursor_pos);
struct kp_msg	*kp_msg_inspect_request(const char *session, const char *code,
		    int cursor_pos, int detail_level);
struct kp_msg	*kp_msg_kernel_info_request(const char *session);
struct kp_msg	*kp_msg_shutdown_request(const char *session, bool restart);
struct kp_msg	*kp_msg_interrupt_request(const char *session);

/* Header fields, borrowed; "" when absent or not a string. */
const char	*kp_msg_type(const struct kp_msg *);
const char	*kp_msg_id(const struct kp_msg *);
const char	*kp_msg_parent_id(const struct kp_msg *);
const char	*kp_msg_session(const struct kp_msg *);

/*
 * A fresh random id: a version 4 UUID as 32 lowercase hex digits,
 * NUL-terminated (util/id.h's id_hex, which execd uses for its own ids).
 */
void		 kp_msg_new_id(char out[33]);

#endif
