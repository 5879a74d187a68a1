/*
 * cmdstream.h -- a command's events as the answer to a request: a
 * command reader (command.h) fed to the client at its pace (feed.h).
 *
 * What POST /command, GET /command/{id}/stream and POST /code without a
 * language answer with, so no route keeps a reader of its own.
 * A foreground command's history keeps each output line's terminator in
 * its text (upstream 1.1.1); a client that parses upstream 1.0's lines
 * gets them stripped (outstream_strip).  Which a request gets: its
 * "line_endings" ("keep" or "strip", a body field, or a query parameter
 * on GET), else --line-endings, else (auto) keep for an OpenSandbox SDK
 * of 1.1.1 or later by its User-Agent, strip for any other client.
 * Loop thread only.
 */
#ifndef EXECD_CMDSTREAM_H
#define EXECD_CMDSTREAM_H

#include <stdbool.h>
#include <stdint.h>

struct command;
struct http_req;

/*
 * Whether req's client gets the terminators: 0 with *keep set, or
 * -EINVAL for a "line_endings" that is neither "keep" nor "strip" (then
 * req has been answered 400).
 */
int	cmdstream_line_endings(struct http_req *req, bool *keep);
/*
 * Whether a User-Agent names an OpenSandbox SDK ("OpenSandbox-<name>-SDK/"
 * and a version X.Y.Z, as every SDK sends its own) of 1.1.1 or later, a
 * pre-release of 1.1.1 not included.  NULL: false.
 */
bool	cmdstream_sdk_keeps(const char *user_agent);
/*
 * Answer req with a stream of c's events numbered above after.  0 once
 * answered (a stream that could not be made got 500), or -errno with req
 * not answered (a background command's output cannot be read; a bad
 * "line_endings" was answered 400 by cmdstream_line_endings first, so
 * call that before starting anything).
 */
int	cmdstream_reply(struct http_req *req, struct command *c,
	    uint64_t after);
/*
 * Answer req with the stream of the command of this id from its start
 * (a repeat of the request that started it: idem.h), or an error when
 * the command is no longer kept.
 */
void	cmdstream_replay(struct http_req *req, const char *id);

#endif
