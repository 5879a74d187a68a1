/*
 * cmdstream.h -- a command's events as the answer to a request: a
 * command reader (command.h) fed to the client at its pace (feed.h).
 *
 * What POST /command, GET /command/{id}/stream and POST /code without a
 * language answer with, so no route keeps a reader of its own.  Loop
 * thread only.
 */
#ifndef EXECD_CMDSTREAM_H
#define EXECD_CMDSTREAM_H

#include <stdint.h>

struct command;
struct http_req;

/*
 * Answer req with a stream of c's events numbered above after.  0 once
 * answered (a stream that could not be made got 500), or -errno with req
 * not answered (a background command's output cannot be read).
 */
int	cmdstream_reply(struct http_req *req, struct command *c,
	    uint64_t after);

#endif
