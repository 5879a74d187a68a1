/*
 * exec.h -- a run_code or foreground run_command call being read
 * (tool_run.c, tool_cmd.c): its text gathered under caps, displayed
 * images, progress sent on, its end answered.  Private to this front
 * end.  Loop thread.
 */
#ifndef EXECD_MCP_EXEC_H
#define EXECD_MCP_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "../../../util/buf.h"
#include "../../domain/run.h"
#include "mcp.h"

struct loop;
struct command_reader;

/* One run_code or foreground run_command call. */
struct exec {
	struct mcp_call		*call;
	struct loop		*loop;
	uint64_t		 timer;		/* a drain pending */
	struct context		*ctx;		/* run_code */
	char			*code;
	struct run_opts		 o;
	struct run		*run;
	char			 cmd_id[33];	/* run_command */
	struct command_reader	*rd;
	struct buf		 raw;		/* pulled, not yet parsed */
	struct mcp_text		 out, err, res;	/* stdout, stderr, results */
	json_t			*images;	/* image content items */
	bool			 failed;	/* an error event */
};

/* A new exec for call, which it hears cancellation and departure of. */
struct exec	*exec_new(struct mcp_call *);
/* Answer with what was gathered (note, NULL: none, ends the text), free. */
void		 exec_done(struct exec *, const char *note);
/* More to read: read it on a later turn of the loop (a notify callback). */
void		 exec_kick(void *);
/* stdout or stderr text: kept, and sent on as progress. */
void		 exec_text(struct exec *, const char *type, const char *p,
		    size_t n);
/* tool_cmd.c: the command's events read; true once it is over. */
bool		 exec_cmd_pull(struct exec *);

#endif
