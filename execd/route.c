/*
 * route.c -- the table of every endpoint execd serves.
 *
 * The order matters only for readability: http.c matches on method and
 * path.  specs/execd-api.yaml must describe exactly these routes; a test
 * compares the two through `execd --routes`.
 */
#include "route.h"

const struct http_route route_table[] = {
	{ "GET", "/ping", 0, route_ping, "health check" },
	{ "GET", "/metrics", 0, route_metrics, "resource use of the sandbox" },
	{ "GET", "/metrics/watch", 0, route_metrics_watch,
	    "resource use, streamed once a second" },
	{ "POST", "/code/context", HTTP_R_BODY, route_context_create,
	    "create a code context (a kernel) for a language" },
	{ "GET", "/code/contexts", 0, route_context_list,
	    "list code contexts, optionally of one language" },
	{ "DELETE", "/code/contexts", 0, route_context_delete_lang,
	    "delete every code context of a language" },
	{ "GET", "/code/contexts/{contextId}", 0, route_context_get,
	    "get a code context" },
	{ "DELETE", "/code/contexts/{contextId}", 0, route_context_delete,
	    "delete a code context" },
	{ "GET", "/code/contexts/{contextId}/connection", 0,
	    route_context_connection,
	    "a context kernel's connection info, to attach Jupyter clients" },
	{ "POST", "/code", HTTP_R_BODY, route_code_run,
	    "run code in a context, streaming its output" },
	{ "DELETE", "/code", 0, route_interrupt,
	    "interrupt what runs in a context (or stop a command)" },
	{ "POST", "/command", HTTP_R_BODY, route_command_run,
	    "run a shell command, foreground (streamed) or background" },
	{ "DELETE", "/command", 0, route_interrupt,
	    "stop a running command (or interrupt a context)" },
	{ "GET", "/command/status/{id}", 0, route_command_status,
	    "status of a command" },
	{ "GET", "/command/{id}/logs", 0, route_command_logs,
	    "output of a background command from a byte offset" },
	{ "GET", "/command/{id}/stream", 0, route_command_stream,
	    "reattach to a command's events, replaying those after a seq" },
	{ "POST", "/command/{id}/stdin", HTTP_R_RAW, route_command_stdin,
	    "write to a command's stdin (started with stdin: true)" },
	{ "POST", "/session", HTTP_R_BODY | HTTP_R_BODY_OPT,
	    route_session_create,
	    "create a bash session (a persistent shell)" },
	{ "POST", "/session/{sessionId}/run", HTTP_R_BODY, route_session_run,
	    "run a command in a session, streaming its output" },
	{ "DELETE", "/session/{sessionId}", 0, route_session_delete,
	    "delete a session (its shell's process group is killed)" },
	{ "POST", "/directories", HTTP_R_BODY, route_dirs_make,
	    "create directories (mkdir -p) with mode and owner" },
};

const size_t route_count = sizeof(route_table) / sizeof(route_table[0]);
