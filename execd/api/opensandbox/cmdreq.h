/*
 * cmdreq.h -- the body of POST /command, checked into what a command
 * needs: a shell string or an argv list (exactly one), the environment
 * overlay (EXECD_ENVS's variables and the request's envs, read once), the
 * cwd with its variables expanded, the user and groups, the limits, the
 * timeout, background and stdin.  Every refusal is a 400 in upstream's
 * words.  What asks the system (the user database, the cwd's directory:
 * either may hang on a network service or mount) is cmdreq_resolve's, for
 * a worker.  Loop thread only, but for cmdreq_resolve().
 */
#ifndef EXECD_CMDREQ_H
#define EXECD_CMDREQ_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

#include "../../process/limits.h"

struct http_req;

#define CMDREQ_MAX_GROUPS	256

/* A POST /command body, checked. */
struct cmd_req {
	const char	*command;	/* or argv */
	json_t		*argv;		/* borrowed; NULL: command */
	json_t		*overlay;	/* owned: EXECD_ENVS's and envs */
	char		 cwd[PATH_MAX];
	char		 cwd_text[PATH_MAX];	/* as the client wrote it */
	bool		 has_cwd;
	bool		 background;
	long long	 timeout_ms;
	bool		 set_ids;
	uid_t		 uid;
	gid_t		 gid;		/* the user's own, unless given */
	bool		 gid_given;
	gid_t		 groups[CMDREQ_MAX_GROUPS];
	int		 ngroups;
	bool		 stdin_pipe;
	struct limits	 limits;	/* the defaults, the request's over */
};

/*
 * Check body into r; on failure reply 400 and return -1.  r->overlay may
 * be set either way: the caller drops it (json_decref).
 */
int	cmdreq_check(struct http_req *, json_t *body, struct cmd_req *r);
/*
 * On any thread: look up the user's group and groups (with set_ids) and
 * check that the cwd (with has_cwd) is a directory.  0, or -1 with err
 * saying why, in upstream's words (a 400).
 */
int	cmdreq_resolve(struct cmd_req *r, char *err, size_t errlen);

#endif
