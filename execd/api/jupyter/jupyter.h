/*
 * jupyter.h -- the Jupyter Server REST and WebSocket API, served by execd
 * over its own kernels: the route table, the handlers, and what the
 * files of this front end share.
 *
 * A Jupyter kernel is a code context that a kernel serves (context.h):
 * the same id in /api/kernels and /code/contexts, made and deleted
 * through either.  This front end owns only what the Jupyter API itself
 * has beyond that: its sessions (a notebook path bound to a kernel,
 * sessions.c) and its channel clients (channels.c).  Every route speaks
 * dialect_jupyter.  Loop thread only.
 */
#ifndef EXECD_JUPYTER_H
#define EXECD_JUPYTER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../../transport/http.h"

struct context;

/* The API version GET /api reports: the Jupyter Server whose shapes we
   follow. */
#define JUPYTER_VERSION		"2.20.0"

extern const struct http_route	jupyter_routes[];
extern const size_t		jupyter_route_count;

/* Record the start time (GET /api/status); free the sessions at the end. */
void	jupyter_start(void);
void	jupyter_shutdown(void);

/* rest.c: the server, kernelspecs and kernels. */
void	jupyter_api(struct http_req *);
void	jupyter_status(struct http_req *);
void	jupyter_kernelspecs(struct http_req *);
void	jupyter_kernelspec(struct http_req *);
void	jupyter_kernelspec_file(struct http_req *);
void	jupyter_kernels(struct http_req *);
void	jupyter_kernel_start(struct http_req *);
void	jupyter_kernel_get(struct http_req *);
void	jupyter_kernel_delete(struct http_req *);
void	jupyter_kernel_interrupt(struct http_req *);
void	jupyter_kernel_restart(struct http_req *);

/* sessions.c: sessions, in memory. */
void	jupyter_sessions(struct http_req *);
void	jupyter_session_create(struct http_req *);
void	jupyter_session_get(struct http_req *);
void	jupyter_session_patch(struct http_req *);
void	jupyter_session_delete(struct http_req *);

/* channels.c: /api/kernels/{kernel_id}/channels. */
void	jupyter_channels(struct http_req *);
/* The WebSocket clients of kernel id now (the model's connections). */
unsigned jupyter_connections(const char *id);

/* Shared by the files above (rest.c). */
/* The context a kernel id names, if a kernel serves it; or NULL. */
struct context	*jupyter_kernel_find(const char *id);
/* The kernel model of c: id, name, last_activity, execution_state,
   connections. */
json_t		*jupyter_kernel_model(struct context *c);
/* The default kernel name: python's kernelspec, else the first; or "". */
const char	*jupyter_default_name(void);
/* Unix ms as Jupyter's ISO 8601 UTC time with microseconds and a Z. */
void		 jupyter_iso(int64_t ms, char out[32]);
/* v as a JSON reply with status and a Location header (v is taken). */
void		 jupyter_reply_located(struct http_req *, unsigned status,
		    json_t *v, const char *location);
/* 204, no body. */
void		 jupyter_reply_none(struct http_req *);
/*
 * Start a kernel named name and call done with it once ready (c NULL
 * and why set when it could not start), or answer req 404 or 500 and
 * return -1 when it cannot even be started.  done must answer req.
 */
typedef void	 jupyter_started_cb(struct http_req *, struct context *c,
		    const char *why, void *arg);
int		 jupyter_kernel_new(struct http_req *, const char *name,
		    jupyter_started_cb *done, void *arg);

#endif
