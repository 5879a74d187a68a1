/*
 * gateway.h -- what the two halves of the MCP gateway share: a server's
 * state, kept by gateway.c (its start, initialize, tools/list, death and
 * restart), and the calls relayed to it, gwcall.c's.  Private to this
 * front end; mcp.h has the gateway's entry points.  Loop thread.
 */
#ifndef EXECD_MCP_GATEWAY_H
#define EXECD_MCP_GATEWAY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "../../../util/buf.h"

struct conf_mcp_server;
struct gwhttp;
struct job;
struct mcp_call;

#define GW_LINE_MAX	(8 << 20)	/* one message from a server, at most */
#define GW_ERR_TAIL	2048		/* stderr kept, its last bytes */
#define GW_START_MS	30000		/* to answer initialize and tools/list */
#define GW_PAGES	64		/* tools/list pages followed, at most */
#define GW_SEP		"__"

enum gw_state { GW_IDLE, GW_STARTING, GW_RUNNING, GW_DEAD };

enum gw_kind { P_INIT, P_LIST, P_CALL };

/* A request sent to a server, not answered yet. */
struct gw_pending {
	long long		 id;		/* execd's, on the server's wire */
	enum gw_kind		 kind;
	struct mcp_call		*call;		/* P_CALL; NULL: nobody waits */
	struct gw_server	*srv;
	struct gw_pending	*next;
};

/* A POST to a url server, in flight. */
struct gw_xchg {
	struct gw_server	*srv;
	struct gwhttp		*h;
	long long		 id;		/* a request's, or 0 */
	struct gw_xchg		*next;
};

/* A call waiting for its server to finish starting. */
struct gw_wait {
	struct mcp_call		*call;
	struct gw_server	*srv;
	char			*tool;		/* the server's name for it */
	json_t			*params;	/* the client's, copied */
	struct gw_wait		*next;
};

struct gw_server {
	const struct conf_mcp_server *cf;
	enum gw_state		 state;
	struct job		*job;
	pid_t			 pid;
	uint64_t		 t_start;	/* GW_START_MS, while starting */
	struct buf		 in;		/* stdout not yet a whole line */
	struct buf		 err;		/* stderr's tail */
	bool			 flooded;	/* stopped, its output ignored */
	char			 why[160];	/* why execd stopped it, or "" */
	char			 ended[320];	/* how it ended last, or "" */
	unsigned		 restarts;
	unsigned		 pages;
	long long		 next_id;
	json_t			*tools;		/* as listed last, or NULL */
	json_t			*listing;	/* pages being read */
	struct gw_pending	*pending;
	struct gw_wait		*waiting;
	char			*session;	/* url: Mcp-Session-Id */
	struct gw_xchg		*xchgs;		/* url: POSTs in flight */
};

/* The servers of the conf in force, made on the first call. */
void	 gw_init(struct mcp_call *);
/* Whether the conf names any server. */
bool	 gw_any(void);
/* The server a prefixed name names, and the tool's name after it. */
struct gw_server *gw_server_of(const char *name, const char **tool);
/* Start a server that is idle or dead; false (calls failed) if it cannot. */
bool	 gw_srv_wake(struct gw_server *);
/*
 * One message to the server (msg taken): on a stdio server's stdin as a
 * line, to a url server as a POST.  0, or -EFBIG for a message over
 * JOB_STDIN_MAX alone (nothing sent).  A server that leaves more than
 * that unread is stopped.
 */
int	 gw_srv_send(struct gw_server *, json_t *msg);
/* A request under a new id of execd's: the id, or -1 when too large. */
long long gw_srv_request(struct gw_server *, enum gw_kind,
	    struct mcp_call *, const char *method, json_t *params);
/* list_mcp_servers: each server's state, without starting any. */
void	 gw_list_servers(struct mcp_call *);

/* gwcall.c: send a call to a running server (later: not deferred yet). */
void	 gw_relay(struct gw_server *, struct mcp_call *, const char *tool,
	    const json_t *params, bool later);
/*
 * gwcall.c: the server's response to call p (taken off its list; the
 * caller frees it): its result, or its error e with message emsg.
 */
void	 gw_call_answered(struct gw_pending *p, const json_t *res,
	    const json_t *e, const char *emsg);
/* gwcall.c: notifications/progress from the server, to its call's client. */
void	 gw_progress(struct gw_server *, const json_t *params);

#endif
