/*
 * isoreq.h -- an isolated session's create request (POST
 * /v1/isolated/session), both shapes: the older one with "workspace"
 * that the published TypeScript SDK sends, and 1.1's with "overlays",
 * "binds", "persist" and the rest.  Checked here for what needs no
 * filesystem (shapes, enums, absolute paths, upstream's messages);
 * isolated.c checks the paths themselves, on a worker.
 */
#ifndef EXECD_ISOREQ_H
#define EXECD_ISOREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#define ISOREQ_MAX	16	/* overlays, binds, extra_writable, keys */

enum isoreq_mode { ISOREQ_RW, ISOREQ_OVERLAY, ISOREQ_RO };

struct isoreq_overlay {
	char		*path;
	enum isoreq_mode mode;
	int		 persist;	/* -1 not given (true), 0, 1 */
};

struct isoreq_bind {
	char		*source;
	char		*dest;
	bool		 readonly;
};

struct isoreq {
	bool			 strict;	/* profile: strict or balanced */
	bool			 has_profile;
	bool			 has_workspace;	/* overlay[0] is it */
	size_t			 noverlay;
	struct isoreq_overlay	 overlay[ISOREQ_MAX];
	size_t			 nbind;
	struct isoreq_bind	 bind[ISOREQ_MAX];
	size_t			 nwritable;
	char			*writable[ISOREQ_MAX];
	int			 share_net;	/* -1 not given (true) */
	int			 env_allow;	/* -1 not given (deny) */
	size_t			 nkeys;
	char			*keys[ISOREQ_MAX];
	bool			 has_uid, has_gid;
	uid_t			 uid;
	gid_t			 gid;
	int			 uid_userns;	/* -1 not given (setpriv) */
	unsigned		 idle_s;	/* 0: never idle out */
};

/*
 * Parse body into r (zeroed first).  0, or -1 with upstream's message
 * in err (a 400 INVALID_REQUEST_BODY).  isoreq_free() r either way.
 */
int	isoreq_parse(const json_t *body, struct isoreq *r, char *err,
	    size_t errlen);
void	isoreq_free(struct isoreq *);
/* The creation echoes of SessionState (11.3), added to o. */
void	isoreq_echo(const struct isoreq *, json_t *o);
const char *isoreq_mode_name(enum isoreq_mode);

#endif
