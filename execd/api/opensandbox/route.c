/*
 * route.c -- the table of every endpoint execd serves.
 *
 * The order matters only for readability: http.c matches on method and
 * path.  specs/execd-api.yaml must describe exactly these routes; a test
 * compares the two through `execd --routes`.  HTTP_R_OPEN rows need no
 * token and are served while execd waits for POST /internal/init.
 * Every row here speaks
 * OpenSandbox's dialect (its last field NULL; see http.h and dialect.h).
 */
#include "route.h"

/*
 * The fields of each JSON body, checked by http.c before the handler
 * runs (body.h: "obj.name" is a field of the object obj).  Bodies keyed
 * by paths (directories, permissions, moves, replacements) are checked
 * entry by entry in route_fs.c, between the paths they resolve.
 */
static const struct body_field context_fields[] = {
	{ "id", BODY_STRING, 0 },
	{ "language", BODY_STRING, 0 },
	{ "cwd", BODY_STRING, 0 },
	{ "limits", BODY_OBJECT, 0 },
	BODY_END
};

static const struct body_field code_fields[] = {
	{ "code", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
	{ "context", BODY_OBJECT, 0 },
	{ "timeout", BODY_INT, 0 },
	{ "context.id", BODY_STRING, 0 },
	{ "context.language", BODY_STRING, 0 },
	{ "context.cwd", BODY_STRING, 0 },
	{ "context.ephemeral", BODY_BOOL, 0 },
	BODY_END
};

static const struct body_field batch_fields[] = {
	{ "items", BODY_ARRAY, BODY_REQUIRED },	/* each: batch.c */
	{ "concurrency", BODY_INT, 0 },
	BODY_END
};

static const struct body_field command_fields[] = {
	{ "command", BODY_STRING, 0 },	/* or argv: route_cmd.c */
	{ "argv", BODY_ARRAY, 0 },
	{ "cwd", BODY_STRING, 0 },
	{ "background", BODY_BOOL, 0 },
	{ "timeout", BODY_INT, 0 },
	{ "uid", BODY_INT, 0 },
	{ "gid", BODY_INT, 0 },
	{ "envs", BODY_OBJECT, 0 },
	{ "stdin", BODY_BOOL, 0 },
	{ "limits", BODY_OBJECT, 0 },
	BODY_END
};

static const struct body_field session_fields[] = {
	{ "cwd", BODY_STRING, 0 },
	{ "limits", BODY_OBJECT, 0 },
	BODY_END
};

static const struct body_field session_run_fields[] = {
	{ "command", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
	{ "cwd", BODY_STRING, 0 },
	{ "timeout", BODY_INT, 0 },
	BODY_END
};

static const struct body_field pty_fields[] = {
	{ "cwd", BODY_STRING, 0 },
	{ "command", BODY_STRING, 0 },
	{ "limits", BODY_OBJECT, 0 },
	BODY_END
};

static const struct body_field ckpt_fields[] = {
	{ "path", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
	BODY_END
};

static const struct body_field restore_fields[] = {
	{ "id", BODY_STRING, BODY_REQUIRED | BODY_NONEMPTY },
	BODY_END
};

static const struct body_field mouse_fields[] = {
	{ "action", BODY_STRING, BODY_REQUIRED },
	{ "x", BODY_INT, 0 },
	{ "y", BODY_INT, 0 },
	{ "count", BODY_INT, 0 },	/* button: a name or a number */
	{ "to_x", BODY_INT, 0 },
	{ "to_y", BODY_INT, 0 },
	{ "dx", BODY_INT, 0 },
	{ "dy", BODY_INT, 0 },
	BODY_END
};

static const struct body_field keyboard_fields[] = {
	{ "text", BODY_STRING, 0 },	/* one of the two: route_computer.c */
	{ "keys", BODY_STRING, 0 },
	BODY_END
};

const struct http_route route_table[] = {
	{ "GET", "/ping", HTTP_R_OPEN, route_ping,
	    "health check (no token needed)", NULL, NULL },
	{ "GET", "/ready", HTTP_R_OPEN, route_ready,
	    "whether execd is initialised: its sandbox id and generation "
	    "(no token needed)", NULL, NULL },
	{ "POST", "/internal/init", HTTP_R_RAW | HTTP_R_OPEN, route_init,
	    "bind a sandbox id, generation, token and environment (the "
	    "control plane's; a token once initialised)", NULL, NULL },
	{ "GET", "/metrics", 0, route_metrics, "resource use of the sandbox",
	    NULL, NULL },
	{ "GET", "/metrics/watch", 0, route_metrics_watch,
	    "resource use, streamed once a second", NULL, NULL },
	{ "POST", "/code/context", HTTP_R_BODY, route_context_create,
	    "create a code context (a kernel) for a language",
	    context_fields, NULL },
	{ "GET", "/code/contexts", 0, route_context_list,
	    "list code contexts, optionally of one language", NULL, NULL },
	{ "DELETE", "/code/contexts", 0, route_context_delete_lang,
	    "delete every code context of a language", NULL, NULL },
	{ "GET", "/code/contexts/{contextId}", 0, route_context_get,
	    "get a code context", NULL, NULL },
	{ "DELETE", "/code/contexts/{contextId}", 0, route_context_delete,
	    "delete a code context", NULL, NULL },
	{ "GET", "/code/contexts/{contextId}/connection", 0,
	    route_context_connection,
	    "a context kernel's connection info, to attach Jupyter clients",
	    NULL, NULL },
	{ "POST", "/code", HTTP_R_BODY, route_code_run,
	    "run code in a context, streaming its output", code_fields, NULL },
	{ "POST", "/code/batch", HTTP_R_BODY, route_code_batch,
	    "run many pieces of code, each in a fresh context, answering "
	    "all their outputs at once", batch_fields, NULL },
	{ "DELETE", "/code", 0, route_interrupt,
	    "interrupt what runs in a context (or stop a command)",
	    NULL, NULL },
	{ "POST", "/command", HTTP_R_BODY, route_command_run,
	    "run a shell command, foreground (streamed) or background",
	    command_fields, NULL },
	{ "DELETE", "/command", 0, route_interrupt,
	    "stop a running command (or interrupt a context)", NULL, NULL },
	{ "GET", "/command/status/{id}", 0, route_command_status,
	    "status of a command", NULL, NULL },
	{ "GET", "/command/{id}/logs", 0, route_command_logs,
	    "output of a background command from a byte offset", NULL, NULL },
	{ "GET", "/command/{id}/stream", 0, route_command_stream,
	    "reattach to a command's events, replaying those after a seq",
	    NULL, NULL },
	{ "POST", "/command/{id}/stdin", HTTP_R_RAW, route_command_stdin,
	    "write to a command's stdin (started with stdin: true)",
	    NULL, NULL },
	{ "POST", "/session", HTTP_R_BODY | HTTP_R_BODY_OPT,
	    route_session_create,
	    "create a bash session (a persistent shell)", session_fields,
	    NULL },
	{ "POST", "/session/{sessionId}/run", HTTP_R_BODY, route_session_run,
	    "run a command in a session, streaming its output",
	    session_run_fields, NULL },
	{ "DELETE", "/session/{sessionId}", 0, route_session_delete,
	    "delete a session (its shell's process group is killed)",
	    NULL, NULL },
#define ISO	"/v1/isolated"
	{ "GET", ISO "/capabilities", 0, route_iso_capabilities,
	    "what isolated sessions this host allows, and why not", NULL,
	    NULL },
	{ "POST", ISO "/session", HTTP_R_BODY, route_iso_create,
	    "create an isolated session (overlays, namespaces, a uid)",
	    NULL, NULL },
	{ "GET", ISO "/sessions", 0, route_iso_list,
	    "list isolated sessions", NULL, NULL },
	{ "GET", ISO "/session/{sessionId}", 0, route_iso_get,
	    "an isolated session's state", NULL, NULL },
	{ "DELETE", ISO "/session/{sessionId}", 0, route_iso_delete,
	    "tear an isolated session down (processes, mounts, uppers)",
	    NULL, NULL },
	{ "POST", ISO "/session/{sessionId}/run", HTTP_R_BODY, route_iso_run,
	    "run code in an isolated session, streamed or in the background",
	    NULL, NULL },
	{ "GET", ISO "/session/{sessionId}/runs/{runId}", 0,
	    route_iso_run_get, "status of a background run", NULL, NULL },
	{ "GET", ISO "/session/{sessionId}/runs/{runId}/logs", 0,
	    route_iso_logs, "a background run's output from a byte cursor",
	    NULL, NULL },
	{ "GET", ISO "/session/{sessionId}/diff", 0, route_iso_diff,
	    "an isolated session's changes, or one path's with contents",
	    NULL, NULL },
	{ "POST", ISO "/session/{sessionId}/commit",
	    HTTP_R_BODY | HTTP_R_BODY_OPT, route_iso_commit,
	    "apply an isolated session's changes to the real workspace",
	    NULL, NULL },
	/* The file routes on an isolated session's view (route_isolated.c). */
	{ "GET", ISO "/session/{sessionId}/files/info", 0,
	    route_files_info_iso,
	    "describe files (lstat) in an isolated session's view", NULL, NULL },
	{ "DELETE", ISO "/session/{sessionId}/files", 0,
	    route_files_delete_iso,
	    "delete files in an isolated session's view", NULL, NULL },
	{ "POST", ISO "/session/{sessionId}/files/permissions", HTTP_R_BODY,
	    route_files_perms_iso,
	    "change modes and owners in an isolated session's view", NULL, NULL },
	{ "POST", ISO "/session/{sessionId}/files/mv", HTTP_R_BODY,
	    route_files_move_iso,
	    "move files in an isolated session's view", NULL, NULL },
	{ "GET", ISO "/session/{sessionId}/files/search", 0,
	    route_files_search_iso,
	    "find files by glob in an isolated session's view", NULL, NULL },
	{ "POST", ISO "/session/{sessionId}/files/replace", HTTP_R_BODY,
	    route_files_replace_iso,
	    "replace text in files of an isolated session's view", NULL, NULL },
	{ "POST", ISO "/session/{sessionId}/files/upload", HTTP_R_STREAM,
	    route_files_upload_iso,
	    "upload files into an isolated session's view", NULL, NULL },
	{ "GET", ISO "/session/{sessionId}/files/download", 0,
	    route_files_download_iso,
	    "download a file of an isolated session's view", NULL, NULL },
	{ "GET", ISO "/session/{sessionId}/directories/list", 0,
	    route_dirs_list_iso,
	    "list a directory tree of an isolated session's view", NULL, NULL },
	{ "POST", ISO "/session/{sessionId}/directories", HTTP_R_BODY,
	    route_dirs_make_iso,
	    "create directories in an isolated session's view", NULL, NULL },
	{ "DELETE", ISO "/session/{sessionId}/directories", 0,
	    route_dirs_delete_iso,
	    "remove directories in an isolated session's view", NULL, NULL },
#undef ISO
	{ "POST", "/pty", HTTP_R_BODY | HTTP_R_BODY_OPT | HTTP_R_PARSE_LEAD,
	    route_pty_create,
	    "create an interactive terminal session (no shell yet)",
	    pty_fields, NULL },
	{ "GET", "/pty/{sessionId}", 0, route_pty_get,
	    "status of a terminal: running, output offset", NULL, NULL },
	{ "DELETE", "/pty/{sessionId}", 0, route_pty_delete,
	    "delete a terminal (its shell is killed)", NULL, NULL },
	{ "GET", "/pty/{sessionId}/ws", 0, route_pty_ws,
	    "the terminal over WebSocket: drive it, or watch with viewer=1",
	    NULL, NULL },
	{ "POST", "/directories", HTTP_R_BODY, route_dirs_make,
	    "create directories (mkdir -p) with mode and owner", NULL, NULL },
	{ "DELETE", "/directories", 0, route_dirs_delete,
	    "remove directories recursively, never following links",
	    NULL, NULL },
	{ "GET", "/directories/list", 0, route_dirs_list,
	    "list a directory tree to a depth", NULL, NULL },
	{ "GET", "/files/info", 0, route_files_info,
	    "describe files (lstat)", NULL, NULL },
	{ "DELETE", "/files", 0, route_files_delete, "delete files",
	    NULL, NULL },
	{ "POST", "/files/permissions", HTTP_R_BODY, route_files_perms,
	    "change modes and owners", NULL, NULL },
	{ "POST", "/files/mv", HTTP_R_BODY, route_files_move,
	    "move files, never overwriting", NULL, NULL },
	{ "GET", "/files/search", 0, route_files_search,
	    "find files whose names match a glob", NULL, NULL },
	{ "POST", "/files/replace", HTTP_R_BODY, route_files_replace,
	    "replace text in files, each rewritten whole", NULL, NULL },
	{ "POST", "/files/upload", HTTP_R_STREAM, route_files_upload,
	    "upload files (multipart, streamed, put in place whole)",
	    NULL, NULL },
	{ "GET", "/files/download", 0, route_files_download,
	    "download a file, a byte range or a window of lines", NULL, NULL },
	{ "GET", "/files/archive", 0, route_files_archive,
	    "download a directory as a tar stream", NULL, NULL },
	{ "GET", "/files/grep", 0, route_files_grep,
	    "find lines matching a regular expression", NULL, NULL },
	{ "GET", "/files/watch", 0, route_files_watch,
	    "stream filesystem events under a path", NULL, NULL },
	{ "POST", "/files/checkpoint", HTTP_R_BODY, route_files_checkpoint,
	    "record a directory tree's state (a checkpoint)", ckpt_fields,
	    NULL },
	{ "GET", "/files/checkpoint", 0, route_files_checkpoint_list,
	    "list the checkpoints kept", NULL, NULL },
	{ "DELETE", "/files/checkpoint/{id}", 0,
	    route_files_checkpoint_delete, "delete a checkpoint", NULL, NULL },
	{ "POST", "/files/restore", HTTP_R_BODY, route_files_restore,
	    "put a checkpoint's tree back (runs that start meanwhile wait)",
	    restore_fields, NULL },
#define AS	"/v1/filesystem/{uid}/{gid}"
	{ "GET", AS "/files/info", 0, route_files_info_as,
	    "describe files (lstat), as user uid, group gid", NULL, NULL },
	{ "DELETE", AS "/files", 0, route_files_delete_as,
	    "delete files, as user uid", NULL, NULL },
	{ "POST", AS "/files/permissions", HTTP_R_BODY,
	    route_files_perms_as, "change modes and owners, as user uid",
	    NULL, NULL },
	{ "POST", AS "/files/mv", HTTP_R_BODY, route_files_move_as,
	    "move files, never overwriting, as user uid", NULL, NULL },
	{ "GET", AS "/files/search", 0, route_files_search_as,
	    "find files whose names match a glob, as user uid", NULL, NULL },
	{ "POST", AS "/files/replace", HTTP_R_BODY, route_files_replace_as,
	    "replace text in files, as user uid", NULL, NULL },
	{ "POST", AS "/files/upload", HTTP_R_STREAM, route_files_upload_as,
	    "upload files (multipart, streamed), as user uid", NULL, NULL },
	{ "GET", AS "/files/download", 0, route_files_download_as,
	    "download a file, a byte range or a window of lines, as user uid",
	    NULL, NULL },
	{ "GET", AS "/directories/list", 0, route_dirs_list_as,
	    "list a directory tree to a depth, as user uid", NULL, NULL },
	{ "POST", AS "/directories", HTTP_R_BODY, route_dirs_make_as,
	    "create directories (mkdir -p), as user uid", NULL, NULL },
	{ "DELETE", AS "/directories", 0, route_dirs_delete_as,
	    "remove directories recursively, as user uid", NULL, NULL },
#undef AS
	{ "GET", "/computer/screen", 0, route_computer_screen,
	    "the X display's size and the pointer's position", NULL, NULL },
	{ "GET", "/computer/screenshot", 0, route_computer_screenshot,
	    "a PNG of the screen or a region, optionally scaled down",
	    NULL, NULL },
	{ "POST", "/computer/mouse", HTTP_R_BODY, route_computer_mouse,
	    "move, click, drag or scroll the pointer", mouse_fields, NULL },
	{ "POST", "/computer/keyboard", HTTP_R_BODY, route_computer_keyboard,
	    "type text or press key combinations", keyboard_fields, NULL },
	{ "GET", "/computer/windows", 0, route_computer_windows,
	    "the top-level windows: id, title, class, geometry", NULL, NULL },
	{ "POST", "/computer/windows/{id}/focus", 0, route_computer_focus,
	    "raise and focus a window", NULL, NULL },
	{ "GET", "/services", 0, route_services,
	    "the policy file's services: state, pid, restarts, last exit",
	    NULL, NULL },
	{ "*", "/proxy/{port}/{path}", HTTP_R_STREAM | HTTP_R_PREFIX,
	    route_proxy, "any method: forward to 127.0.0.1:{port}/{path}, "
	    "streamed, WebSockets tunnelled", NULL, &dialect_proxy },
};

const size_t route_count = sizeof(route_table) / sizeof(route_table[0]);
