/*
 * route.c -- the Jupyter Server API's routes, each in dialect_jupyter:
 * tokens as Authorization "token T" or "Bearer T" or ?token=T, errors as
 * {"message","reason"}.  The group row last answers every other /api
 * path (404, 405, 403) in the same dialect.  specs/execd-api.yaml
 * describes these rows with OpenSandbox's.
 */
#include "jupyter.h"

#define J	(&dialect_jupyter)

static const struct body_field kernel_fields[] = {
	{ "name", BODY_STRING, 0 },
	{ "path", BODY_STRING, 0 },
	{ "env", BODY_OBJECT, 0 },
	BODY_END
};

static const struct body_field session_fields[] = {
	{ "path", BODY_STRING, 0 },
	{ "name", BODY_STRING, 0 },
	{ "type", BODY_STRING, 0 },
	{ "kernel", BODY_OBJECT, 0 },
	{ "notebook", BODY_OBJECT, 0 },
	{ "kernel.id", BODY_STRING, 0 },
	{ "kernel.name", BODY_STRING, 0 },
	{ "notebook.path", BODY_STRING, 0 },
	{ "notebook.name", BODY_STRING, 0 },
	BODY_END
};

const struct http_route jupyter_routes[] = {
	{ "GET", "/api", 0, jupyter_api,
	    "Jupyter Server API: its version", NULL, J },
	{ "GET", "/api/status", 0, jupyter_status,
	    "Jupyter Server API: started, last activity, kernels, "
	    "connections", NULL, J },
	{ "GET", "/api/kernelspecs", 0, jupyter_kernelspecs,
	    "Jupyter Server API: the installed kernelspecs", NULL, J },
	{ "GET", "/api/kernelspecs/{kernel_name}", 0, jupyter_kernelspec,
	    "Jupyter Server API: one kernelspec", NULL, J },
	{ "GET", "/kernelspecs/{kernel_name}/{file}", 0,
	    jupyter_kernelspec_file,
	    "Jupyter Server API: a kernelspec's resource file (logo, "
	    "kernel.js)", NULL, J },
	{ "GET", "/api/kernels", 0, jupyter_kernels,
	    "Jupyter Server API: the kernels (code contexts that are kernels)",
	    NULL, J },
	{ "POST", "/api/kernels", HTTP_R_BODY | HTTP_R_BODY_OPT,
	    jupyter_kernel_start,
	    "Jupyter Server API: start a kernel (a code context)",
	    kernel_fields, J },
	{ "GET", "/api/kernels/{kernel_id}", 0, jupyter_kernel_get,
	    "Jupyter Server API: a kernel's model", NULL, J },
	{ "DELETE", "/api/kernels/{kernel_id}", 0, jupyter_kernel_delete,
	    "Jupyter Server API: shut a kernel down (its context goes)",
	    NULL, J },
	{ "POST", "/api/kernels/{kernel_id}/interrupt",
	    HTTP_R_BODY | HTTP_R_BODY_OPT, jupyter_kernel_interrupt,
	    "Jupyter Server API: interrupt a kernel", NULL, J },
	{ "POST", "/api/kernels/{kernel_id}/restart",
	    HTTP_R_BODY | HTTP_R_BODY_OPT, jupyter_kernel_restart,
	    "Jupyter Server API: restart a kernel, answered once ready",
	    NULL, J },
	{ "GET", "/api/kernels/{kernel_id}/channels", 0, jupyter_channels,
	    "Jupyter Server API: a kernel's channels over WebSocket", NULL,
	    J },
	{ "GET", "/api/sessions", 0, jupyter_sessions,
	    "Jupyter Server API: the sessions (notebook paths and kernels)",
	    NULL, J },
	{ "POST", "/api/sessions", HTTP_R_BODY, jupyter_session_create,
	    "Jupyter Server API: bind a path to a kernel (new or running)",
	    session_fields, J },
	{ "GET", "/api/sessions/{session_id}", 0, jupyter_session_get,
	    "Jupyter Server API: a session", NULL, J },
	{ "PATCH", "/api/sessions/{session_id}", HTTP_R_BODY,
	    jupyter_session_patch,
	    "Jupyter Server API: rename a session or change its kernel",
	    session_fields, J },
	{ "DELETE", "/api/sessions/{session_id}", 0, jupyter_session_delete,
	    "Jupyter Server API: end a session and its kernel", NULL, J },
	{ "*", "/api/{any}", HTTP_R_PREFIX, NULL, NULL, NULL, J },
};

const size_t jupyter_route_count =
    sizeof(jupyter_routes) / sizeof(jupyter_routes[0]);
